//! What travels on a replication link, as RESP2 frames so that the link
//! is an ordinary connection (redis-cli can open one to look):
//!
//! - the replica asks `REPLSYNC db FULL` or `REPLSYNC db TIMESTAMP SKIP`;
//! - the master answers `[CONTINUE, TIMESTAMP]` (the log follows from the
//!   replica's position) or `[FULLRESYNC, TIMESTAMP]` (a snapshot follows,
//!   then the log from that timestamp);
//! - then `[snapshot, ENTRY]` for each record of a snapshot and
//!   `[snapshotend, TIMESTAMP]` after the last, `[entry, TIMESTAMP, ENTRY]`
//!   for each log entry, and `[ping, NEWEST, THROUGH]` when the log is idle
//!   (the master's newest timestamp, from which the replica's lag is
//!   counted, and the time up to which every entry has been sent: see
//!   `Frame::Ping`); an error line ends the link with the master's reason;
//! - the replica tells the master, before REPLSYNC, the port it serves
//!   clients on (`REPLCONF listening-port PORT`, answered `+OK`), and
//!   afterwards acknowledges what it applied with `REPLCONF ACK THROUGH`.
//!
//! ENTRY is an update-log message (`UpdateEntry::encode`): the link carries
//! the log's own bytes.

use bytes::{Bytes, BytesMut};
use kuradb::ulog::UpdateEntry;
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;

use crate::reply::Reply;

/// One frame of a link, decoded.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// The log follows from the replica's position.
    Continue,
    /// A snapshot follows, then the log from this timestamp.
    FullResync(u64),
    /// A record of the snapshot.
    Snapshot(UpdateEntry),
    /// The snapshot is whole.
    SnapshotEnd(u64),
    /// An entry of the log and its timestamp.
    Entry(u64, UpdateEntry),
    /// The log is idle: the master's newest timestamp, and a time (in
    /// milliseconds) such that every entry of that time or earlier has been
    /// sent before this frame.
    Ping(u64, u64),
    /// `+OK`: the answer to REPLCONF.
    Ok,
    /// The master ends the link, saying why.
    Error(String),
}

fn word(name: &'static str) -> Reply {
    Reply::Bulk(Bytes::from_static(name.as_bytes()))
}

fn int(n: u64) -> Reply {
    Reply::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// REPLSYNC's answer: go on, or a full resync from `timestamp`.
pub fn handshake(full: bool, timestamp: u64) -> Reply {
    Reply::Array(vec![word(if full { "FULLRESYNC" } else { "CONTINUE" }), int(timestamp)])
}

/// Appends a snapshot record.
pub fn put_snapshot(out: &mut BytesMut, message: Vec<u8>) {
    Reply::Array(vec![word("snapshot"), Reply::Bulk(message.into())]).encode(2, out);
}

/// Appends the end of a snapshot taken at `timestamp`.
pub fn put_snapshot_end(out: &mut BytesMut, timestamp: u64) {
    Reply::Array(vec![word("snapshotend"), int(timestamp)]).encode(2, out);
}

/// Appends a log entry.
pub fn put_entry(out: &mut BytesMut, timestamp: u64, message: Vec<u8>) {
    Reply::Array(vec![word("entry"), int(timestamp), Reply::Bulk(message.into())]).encode(2, out);
}

/// Appends a heartbeat with the master's newest timestamp and the time up
/// to which everything has been sent.
pub fn put_ping(out: &mut BytesMut, newest: u64, through: u64) {
    Reply::Array(vec![word("ping"), int(newest), int(through)]).encode(2, out);
}

/// The replica's acknowledgement: every entry of time `through` or earlier is applied.
pub fn ack(through: u64) -> Reply {
    Reply::Array(vec![word("REPLCONF"), word("ACK"), Reply::bulk(through.to_string())])
}

/// The time of a replica's acknowledgement, if `frame` is one.
pub fn parse_ack(frame: &BytesFrame) -> Option<u64> {
    let BytesFrame::Array(items) = frame else { return None };
    let text = |i: usize| match items.get(i) {
        Some(BytesFrame::BulkString(b)) => std::str::from_utf8(b).ok(),
        _ => None,
    };
    if !text(0)?.eq_ignore_ascii_case("replconf") || !text(1)?.eq_ignore_ascii_case("ack") {
        return None;
    }
    text(2)?.parse().ok()
}

/// The next whole frame of `buf` (consumed), `None` until one has arrived,
/// or why the bytes are no frame of a link.
pub fn next(buf: &mut BytesMut) -> Result<Option<Frame>, String> {
    let frame = match decode_bytes_mut(buf) {
        Ok(Some((frame, _, _))) => frame,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("not RESP from the master: {}", e.details())),
    };
    let items = match frame {
        BytesFrame::Error(text) => return Ok(Some(Frame::Error(text.to_string()))),
        BytesFrame::SimpleString(text) if &text[..] == b"OK" => return Ok(Some(Frame::Ok)),
        BytesFrame::Array(items) => items,
        other => return Err(format!("unexpected frame from the master: {other:?}")),
    };
    let bad = || format!("malformed replication frame: {items:?}");
    let number = |i: usize| match items.get(i) {
        Some(BytesFrame::Integer(n)) if *n >= 0 => Ok(*n as u64),
        _ => Err(bad()),
    };
    let entry = |i: usize| match items.get(i) {
        Some(BytesFrame::BulkString(b)) => UpdateEntry::decode(b).map_err(|e| e.to_string()),
        _ => Err(bad()),
    };
    let Some(BytesFrame::BulkString(kind)) = items.first() else { return Err(bad()) };
    let frame = match (&kind[..], items.len()) {
        (b"entry", 3) => Frame::Entry(number(1)?, entry(2)?),
        (b"snapshot", 2) => Frame::Snapshot(entry(1)?),
        (b"snapshotend", 2) => Frame::SnapshotEnd(number(1)?),
        (b"ping", 2) => Frame::Ping(number(1)?, 0),
        (b"ping", 3) => Frame::Ping(number(1)?, number(2)?),
        (b"CONTINUE", 2) => Frame::Continue,
        (b"FULLRESYNC", 2) => Frame::FullResync(number(1)?),
        _ => return Err(bad()),
    };
    Ok(Some(frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::ulog::UpdateOp;

    #[test]
    fn frames_round_trip_and_wait_for_their_last_byte() {
        let set = UpdateEntry {
            server_id: 0,
            dbm_index: 2,
            op: UpdateOp::Set { key: b"k".to_vec(), value: b"v".to_vec() },
        };
        let mut out = BytesMut::new();
        handshake(true, 7).encode(2, &mut out);
        put_snapshot(&mut out, set.encode());
        put_snapshot_end(&mut out, 7);
        put_entry(&mut out, 9, set.encode());
        put_ping(&mut out, 9, 12);
        out.extend_from_slice(b"-ERR gone\r\n");
        let whole = out.clone();
        let mut partial = BytesMut::from(&whole[..whole.len() - 1]);
        let mut frames = Vec::new();
        while let Some(frame) = next(&mut partial).unwrap() {
            frames.push(frame);
        }
        assert_eq!(frames.len(), 5, "the last frame is not whole yet");
        assert_eq!(frames[0], Frame::FullResync(7));
        assert_eq!(frames[1], Frame::Snapshot(set.clone()));
        assert_eq!(frames[3], Frame::Entry(9, set));
        assert_eq!(frames[4], Frame::Ping(9, 12));
        partial.extend_from_slice(&whole[whole.len() - 1..]);
        assert_eq!(next(&mut partial).unwrap(), Some(Frame::Error("ERR gone".into())));
        assert!(next(&mut BytesMut::from(&b"*2\r\n$4\r\nping\r\n$1\r\nx\r\n"[..])).is_err());
        let mut acked = BytesMut::new();
        ack(41).encode(2, &mut acked);
        let (frame, _, _) = decode_bytes_mut(&mut acked).unwrap().unwrap();
        assert_eq!(parse_ack(&frame), Some(41));
    }
}
