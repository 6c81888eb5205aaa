//! One update-log entry as the reference serializes it in a message:
//! an operation byte (`a1` set, `a2` remove, `a3` clear), then the server id
//! and the database index, then for a set the key's and the value's sizes
//! and the key and value, for a remove the key's size and the key, each
//! number in the reference's variable-length form ([`base128`]).
//!
//! kuradb adds one operation the reference does not have and cannot read:
//! `a4`, a unit (a committed transaction's changes, to apply together).
//! After the server id and the database index come the unit's id, its
//! number of parts, this part's index, the number of changes, and each
//! change as its operation byte (`a1` or `a2`) and then what a set or a
//! remove entry holds after its database index.

use crate::dbm::{FinalChange, UnitPart};
use crate::error::{Error, ErrorKind, Result};
use crate::varint::base128;

const OP_SET: u8 = 0xa1;
const OP_REMOVE: u8 = 0xa2;
const OP_CLEAR: u8 = 0xa3;
const OP_UNIT: u8 = 0xa4;

/// What one entry of an update log did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpdateOp {
    /// The key was set to the value.
    Set {
        /// The key.
        key: Vec<u8>,
        /// Its new value.
        value: Vec<u8>,
    },
    /// The key was removed.
    Remove {
        /// The key.
        key: Vec<u8>,
    },
    /// Every record was removed.
    Clear,
    /// The changes of one commit, to apply together (kuradb's own entry;
    /// the reference cannot read it). A shard set writes a commit spanning
    /// shards as one part per shard, each with that shard's index, written
    /// one after the other and sharing an id.
    Unit {
        /// The id the parts of the unit share; 0 for a unit of one part.
        id: u64,
        /// This part's place among the unit's parts, from 0.
        part: u32,
        /// How many parts the unit has.
        parts: u32,
        /// The changes of this part in commit order: each a key and the
        /// value it is set to, or `None` for its removal.
        changes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    },
}

/// One update-log entry: what changed, and which server and which database
/// of it changed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateEntry {
    /// The server that wrote the entry (`ulog_server_id`).
    pub server_id: u32,
    /// The database of that server (`ulog_dbm_index`; a shard's index).
    pub dbm_index: u32,
    /// The change.
    pub op: UpdateOp,
}

impl UpdateEntry {
    /// The message bytes of the entry.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match &self.op {
            UpdateOp::Unit { id, part, parts, changes } => {
                let changes: Vec<FinalChange<'_>> = changes
                    .iter()
                    .map(|(key, value)| match value {
                        Some(value) => FinalChange::Set(key, value),
                        None => FinalChange::Remove(key),
                    })
                    .collect();
                let unit = UnitPart { id: *id, index: *part, count: *parts };
                encode_unit_into(&mut out, self.server_id, self.dbm_index, unit, &changes);
            }
            op => encode_into(&mut out, self.server_id, self.dbm_index, &op.as_ref()),
        }
        out
    }

    /// Parses a message; a malformed one is a [`ErrorKind::BrokenData`] error
    /// that says what is wrong with it.
    pub fn decode(message: &[u8]) -> Result<UpdateEntry> {
        let broken = |what: &str| Error::new(ErrorKind::BrokenData, format!("update log entry: {what}"));
        let (&op, rest) = message.split_first().ok_or_else(|| broken("empty message"))?;
        let mut pos = 0;
        let mut number = |what: &str| base128::decode(rest, &mut pos).map_err(|_| broken(what));
        let server_id = number("no valid server id")?;
        let dbm_index = number("no valid database index")?;
        let (server_id, dbm_index) = match (u32::try_from(server_id), u32::try_from(dbm_index)) {
            (Ok(s), Ok(d)) => (s, d),
            _ => return Err(broken("server id or database index out of range")),
        };
        let op = match op {
            OP_SET => {
                let key_size = number("no valid key size")?;
                let value_size = number("no valid value size")?;
                let body = &rest[pos..];
                if Some(body.len() as u64) != key_size.checked_add(value_size) {
                    return Err(broken("sizes inconsistent with the message's length"));
                }
                let (key, value) = body.split_at(key_size as usize);
                UpdateOp::Set { key: key.to_vec(), value: value.to_vec() }
            }
            OP_REMOVE => {
                let key_size = number("no valid key size")?;
                let body = &rest[pos..];
                if body.len() as u64 != key_size {
                    return Err(broken("key size inconsistent with the message's length"));
                }
                UpdateOp::Remove { key: body.to_vec() }
            }
            OP_CLEAR if pos == rest.len() => UpdateOp::Clear,
            OP_CLEAR => return Err(broken("bytes after a clear")),
            OP_UNIT => decode_unit(&rest[pos..])?,
            other => return Err(broken(&format!("unknown operation byte {other:#04x}"))),
        };
        Ok(UpdateEntry { server_id, dbm_index, op })
    }
}

/// An operation borrowed, as a logger is given it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OpRef<'a> {
    Set(&'a [u8], &'a [u8]),
    Remove(&'a [u8]),
    Clear,
}

impl UpdateOp {
    /// A unit is encoded by [`encode_unit_into`], never through this.
    fn as_ref(&self) -> OpRef<'_> {
        match self {
            UpdateOp::Set { key, value } => OpRef::Set(key, value),
            UpdateOp::Remove { key } => OpRef::Remove(key),
            UpdateOp::Clear | UpdateOp::Unit { .. } => OpRef::Clear,
        }
    }
}

/// The body of a unit entry after its database index.
fn decode_unit(body: &[u8]) -> Result<UpdateOp> {
    let broken = |what: &str| Error::new(ErrorKind::BrokenData, format!("update log unit entry: {what}"));
    let mut pos = 0;
    let number = |pos: &mut usize, what: &str| base128::decode(body, pos).map_err(|_| broken(what));
    let id = number(&mut pos, "no valid unit id")?;
    let parts = number(&mut pos, "no valid number of parts")?;
    let part = number(&mut pos, "no valid part index")?;
    let count = number(&mut pos, "no valid number of changes")?;
    let (Ok(parts), Ok(part)) = (u32::try_from(parts), u32::try_from(part)) else {
        return Err(broken("part index or number of parts out of range"));
    };
    if parts == 0 || part >= parts {
        return Err(broken(&format!("part {part} of {parts} parts")));
    }
    // Each change takes two bytes at least: no count past that is believed.
    if count > (body.len() - pos) as u64 / 2 {
        return Err(broken("more changes than the entry has bytes for"));
    }
    let mut changes = Vec::with_capacity(count as usize);
    for n in 0..count {
        let Some(&op) = body.get(pos) else {
            return Err(broken(&format!("change {n} of {count} is missing")));
        };
        pos += 1;
        let key_size = number(&mut pos, "no valid key size")?;
        let value_size = match op {
            OP_SET => Some(number(&mut pos, "no valid value size")?),
            OP_REMOVE => None,
            other => return Err(broken(&format!("change {n} has operation byte {other:#04x}"))),
        };
        let size = key_size.checked_add(value_size.unwrap_or(0));
        let end = size.and_then(|s| (pos as u64).checked_add(s)).filter(|&end| end <= body.len() as u64);
        let Some(end) = end else {
            return Err(broken(&format!("change {n}'s sizes pass the end of the entry")));
        };
        let key_end = pos + key_size as usize;
        let key = body[pos..key_end].to_vec();
        changes.push((key, value_size.map(|_| body[key_end..end as usize].to_vec())));
        pos = end as usize;
    }
    if pos != body.len() {
        return Err(broken("bytes after the last change"));
    }
    Ok(UpdateOp::Unit { id, part, parts, changes })
}

/// Appends the message of a unit entry to `out`.
pub(crate) fn encode_unit_into(
    out: &mut Vec<u8>,
    server_id: u32,
    dbm_index: u32,
    unit: UnitPart,
    changes: &[FinalChange<'_>],
) {
    out.push(OP_UNIT);
    base128::put(out, server_id.into());
    base128::put(out, dbm_index.into());
    base128::put(out, unit.id);
    base128::put(out, unit.count.into());
    base128::put(out, unit.index.into());
    base128::put(out, changes.len() as u64);
    for change in changes {
        match change {
            FinalChange::Set(key, value) => {
                out.push(OP_SET);
                base128::put(out, key.len() as u64);
                base128::put(out, value.len() as u64);
                out.extend_from_slice(key);
                out.extend_from_slice(value);
            }
            FinalChange::Remove(key) => {
                out.push(OP_REMOVE);
                base128::put(out, key.len() as u64);
                out.extend_from_slice(key);
            }
        }
    }
}

/// Appends the message of an entry to `out`.
pub(crate) fn encode_into(out: &mut Vec<u8>, server_id: u32, dbm_index: u32, op: &OpRef<'_>) {
    out.push(match op {
        OpRef::Set(..) => OP_SET,
        OpRef::Remove(_) => OP_REMOVE,
        OpRef::Clear => OP_CLEAR,
    });
    base128::put(out, server_id.into());
    base128::put(out, dbm_index.into());
    match op {
        OpRef::Set(key, value) => {
            base128::put(out, key.len() as u64);
            base128::put(out, value.len() as u64);
            out.extend_from_slice(key);
            out.extend_from_slice(value);
        }
        OpRef::Remove(key) => {
            base128::put(out, key.len() as u64);
            out.extend_from_slice(key);
        }
        OpRef::Clear => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_match_the_bytes_the_reference_writes() {
        // From `tkrzw_ulog_util writeset --server_id 3 --dbm_index 5 P key1 value1`, etc.
        let set = UpdateEntry {
            server_id: 3,
            dbm_index: 5,
            op: UpdateOp::Set { key: b"key1".to_vec(), value: b"value1".to_vec() },
        };
        assert_eq!(set.encode(), b"\xa1\x03\x05\x04\x06key1value1");
        let remove =
            UpdateEntry { server_id: 0, dbm_index: 0, op: UpdateOp::Remove { key: b"key1".to_vec() } };
        assert_eq!(remove.encode(), b"\xa2\x00\x00\x04key1");
        let clear = UpdateEntry { server_id: 0, dbm_index: 0, op: UpdateOp::Clear };
        assert_eq!(clear.encode(), b"\xa3\x00\x00");
        for entry in [set, remove, clear] {
            assert_eq!(UpdateEntry::decode(&entry.encode()).unwrap(), entry);
        }
    }

    #[test]
    fn units_round_trip_and_their_bytes_are_pinned() {
        let unit = UpdateEntry {
            server_id: 1,
            dbm_index: 2,
            op: UpdateOp::Unit {
                id: 300,
                part: 1,
                parts: 3,
                changes: vec![(b"k1".to_vec(), Some(b"v".to_vec())), (b"k2".to_vec(), None)],
            },
        };
        let bytes = unit.encode();
        assert_eq!(bytes, b"\xa4\x01\x02\x82\x2c\x03\x01\x02\xa1\x02\x01k1v\xa2\x02k2");
        assert_eq!(UpdateEntry::decode(&bytes).unwrap(), unit);
        let empty = UpdateEntry {
            server_id: 0,
            dbm_index: 0,
            op: UpdateOp::Unit { id: 0, part: 0, parts: 1, changes: vec![] },
        };
        assert_eq!(UpdateEntry::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn malformed_units_are_named() {
        for (bytes, says) in [
            (&b"\xa4\x00\x00\x00\x01\x00\x01\xa1\x02\x01k1"[..], "pass the end"),
            (b"\xa4\x00\x00\x00\x01\x00\x01\xa3\x00\x00", "operation byte 0xa3"),
            (b"\xa4\x00\x00\x00\x00\x00\x00", "part 0 of 0"),
            (b"\xa4\x00\x00\x00\x02\x02\x00", "part 2 of 2"),
            (b"\xa4\x00\x00\x00\x01\x00\x7f\xa2\x00", "more changes"),
            (b"\xa4\x00\x00\x00\x01\x00\x01\xa2\x01kx", "bytes after"),
            (b"\xa4\x00\x00\x00\x01\x00\x02\xa2\x00\xa2\x80", "no valid key size"),
            (b"\xa4\x00\x00\x80", "unit id"),
        ] {
            let err = UpdateEntry::decode(bytes).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenData);
            assert!(err.message().contains(says), "{says}: {err}");
        }
    }

    #[test]
    fn malformed_entries_are_named() {
        for (bytes, says) in [
            (&b""[..], "empty"),
            (b"\xa1\x00\x00\x04\x06key1value", "sizes"),
            (b"\xa2\x00\x00\x09key1", "key size"),
            (b"\xa9\x00\x00", "unknown operation"),
            (b"\xa1\x80", "server id"),
        ] {
            let err = UpdateEntry::decode(bytes).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenData);
            assert!(err.message().contains(says), "{err}");
        }
    }
}
