//! The master's side of a link: after REPLSYNC is answered, the connection
//! becomes a feed. A thread of the blocking pool reads the database (for a
//! snapshot) and the log, and hands batches of frames to the connection's
//! task, which writes them; the bounded channel between them makes a slow
//! replica slow its reader, never grow the master's memory.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use kuradb::dbm::expiry::EXPIRY_MARKER;
use kuradb::dbm::Dbm;
use kuradb::ulog::{now_ms, UpdateEntry, UpdateOp};
use kuradb::Result;
use redis_protocol::resp2::decode::decode_bytes_mut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::frames;
use super::plan::Start;
use super::FeedState;
use crate::clients::Client;
use crate::state::Server;

/// How long the log may be idle before a heartbeat is sent.
const HEARTBEAT: Duration = Duration::from_millis(500);
/// How soon a heartbeat follows entries that the last one did not cover
/// (they were written in the millisecond it was sent), so that a replica
/// can acknowledge them, and a WAIT return, without waiting a whole
/// [`HEARTBEAT`].
const CATCH_UP: Duration = Duration::from_millis(3);
/// Frames are handed over in batches of about this many bytes.
const BATCH_BYTES: usize = 64 * 1024;
/// Batches in flight between the reader and the writer.
const IN_FLIGHT: usize = 8;

/// What REPLSYNC decided: which database, from where.
#[derive(Clone, Debug)]
pub struct FeedPlan {
    /// The database fed.
    pub db: usize,
    /// Where the feed starts.
    pub start: Start,
    /// The port the replica serves its clients on (REPLCONF listening-port).
    pub listening_port: Option<u16>,
}

/// Feeds database `plan.db`'s log to the replica at the other end of
/// `stream` until it leaves, the link fails, or the server shuts down.
pub async fn feed<S>(server: Arc<Server>, stream: S, peer: String, plan: FeedPlan, client: &Client)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let replication = &server.replication;
    let state = match plan.start {
        Start::Full { .. } => "snapshot",
        Start::Continue { .. } => "online",
    };
    let id = replication.add_feed(FeedState {
        peer: peer.clone(),
        db: plan.db,
        state,
        sent: 0,
        listening_port: plan.listening_port,
        through: 0,
        last_ack: None,
    });
    log::info!("replica {peer}: feeding database {} ({plan:?})", plan.db);
    let (tx, mut rx) = mpsc::channel::<BytesMut>(IN_FLIGHT);
    let reader = {
        let server = Arc::clone(&server);
        tokio::task::spawn_blocking(move || produce(&server, id, &plan, &tx))
    };
    let (mut input, mut output) = tokio::io::split(stream);
    let mut shutdown = server.shutdown_signal();
    let mut received = BytesMut::with_capacity(512);
    let ended = loop {
        tokio::select! {
            batch = rx.recv() => match batch {
                Some(batch) => {
                    if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
                        break "the replica stopped reading".to_string();
                    }
                    server.stats.add_output(batch.len());
                }
                None => break "the feed ended".to_string(),
            },
            // A replica sends only its acknowledgements; a read that ends
            // means it left.
            read = input.read_buf(&mut received) => {
                if matches!(read, Ok(0) | Err(_)) {
                    break "the replica left".to_string();
                }
                if let Err(why) = take_acks(&server, id, &mut received) {
                    break why;
                }
            },
            _ = shutdown.changed() => break "shutting down".to_string(),
            () = client.kill_requested() => break "killed by CLIENT KILL".to_string(),
        }
    };
    drop(rx);
    let outcome = reader.await;
    replication.feeds.lock().remove(&id);
    match outcome {
        Ok(Err(e)) => {
            log::error!("replica {peer}: the feed failed: {e}");
            let mut out = BytesMut::new();
            crate::reply::Reply::error(format!("ERR replication feed failed: {e}")).encode(2, &mut out);
            let _ = output.write_all(&out).await;
        }
        _ => log::info!("replica {peer}: link closed ({ended})"),
    }
    let _ = output.shutdown().await;
}

/// Notes the acknowledgements in `received` (consumed); an error if the
/// replica sent something else than a request, or too much of one.
fn take_acks(server: &Server, id: u64, received: &mut BytesMut) -> std::result::Result<(), String> {
    loop {
        match decode_bytes_mut(received) {
            Ok(Some((frame, _, _))) => {
                if let Some(through) = frames::parse_ack(&frame) {
                    let replication = &server.replication;
                    if let Some(state) = replication.feeds.lock().get_mut(&id) {
                        state.through = state.through.max(through);
                        state.last_ack = Some(Instant::now());
                    }
                    replication.acked.notify_all();
                }
            }
            Ok(None) if received.len() > 64 * 1024 => {
                return Err("the replica sent an oversized frame".into())
            }
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("the replica sent no RESP: {}", e.details())),
        }
    }
}

/// Reads the snapshot and the log into batches of frames for `tx`; returns
/// once the receiver is gone or the server shuts down.
fn produce(server: &Server, id: u64, plan: &FeedPlan, tx: &mpsc::Sender<BytesMut>) -> Result<()> {
    let shutdown = server.shutdown_signal();
    let Some(queue) = server.replication.log(plan.db) else { return Ok(()) };
    let (from, mut skip) = match &plan.start {
        Start::Continue { timestamp, skip } => (*timestamp, *skip),
        Start::Full { timestamp, .. } => {
            if !snapshot(server, plan.db, *timestamp, tx)? {
                return Ok(());
            }
            server.replication.full_resyncs_served.fetch_add(1, Relaxed);
            set_feed(server, id, |f| f.state = "online");
            (*timestamp, 0)
        }
    };
    let mut reader = queue.reader(from);
    let mut out = BytesMut::new();
    let mut last = from;
    let mut behind = false;
    loop {
        if tx.is_closed() || *shutdown.borrow() {
            return Ok(());
        }
        let wait = match (out.is_empty(), behind) {
            (false, _) => Duration::ZERO,
            (true, true) => CATCH_UP,
            (true, false) => HEARTBEAT,
        };
        // Taken before the read: an entry written after it is stamped this
        // time or later (the log's times never go back while the clock does
        // not), so once the read finds nothing, every entry stamped before
        // this time has been read.
        let before = now_ms();
        match reader.read(wait)? {
            Some((timestamp, _)) if skip > 0 && timestamp == from => skip -= 1,
            Some((timestamp, message)) => {
                skip = 0;
                last = timestamp;
                frames::put_entry(&mut out, timestamp, message);
                if out.len() >= BATCH_BYTES {
                    set_feed(server, id, |f| f.sent = f.sent.max(last));
                    if !send(tx, &mut out) {
                        return Ok(());
                    }
                }
            }
            None => {
                let through = before.saturating_sub(1);
                frames::put_ping(&mut out, queue.timestamp(), through);
                behind = through < last;
                set_feed(server, id, |f| f.sent = f.sent.max(last));
                if !send(tx, &mut out) {
                    return Ok(());
                }
            }
        }
    }
}

/// Sends every record of the database as a snapshot, then its end; false
/// if the replica left meanwhile. The expiry layer's marker goes first, so
/// that the replica reads the values after it through the layer.
fn snapshot(server: &Server, db: usize, timestamp: u64, tx: &mpsc::Sender<BytesMut>) -> Result<bool> {
    let database = server.databases[db].db.load();
    let mut out = BytesMut::new();
    let mut records = 0u64;
    let mut put = |out: &mut BytesMut, key: Vec<u8>, value: Vec<u8>| {
        let entry = UpdateEntry { server_id: 0, dbm_index: db as u32, op: UpdateOp::Set { key, value } };
        frames::put_snapshot(out, entry.encode());
        records += 1;
    };
    if let Some(value) = database.get(EXPIRY_MARKER)? {
        put(&mut out, EXPIRY_MARKER.to_vec(), value);
    }
    let mut cursor = database.iter()?;
    cursor.first()?;
    while let Some((key, value)) = cursor.get()? {
        if key != EXPIRY_MARKER {
            put(&mut out, key, value);
        }
        if out.len() >= BATCH_BYTES && !send(tx, &mut out) {
            return Ok(false);
        }
        cursor.next()?;
    }
    frames::put_snapshot_end(&mut out, timestamp);
    log::info!("database {db}: snapshot of {records} record(s) sent; the log follows from {timestamp}");
    Ok(send(tx, &mut out))
}

/// Hands `out` over (leaving it empty); false if the receiver is gone.
fn send(tx: &mpsc::Sender<BytesMut>, out: &mut BytesMut) -> bool {
    tx.blocking_send(std::mem::take(out)).is_ok()
}

fn set_feed(server: &Server, id: u64, change: impl FnOnce(&mut FeedState)) {
    if let Some(state) = server.replication.feeds.lock().get_mut(&id) {
        change(state);
    }
}
