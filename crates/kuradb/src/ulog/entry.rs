//! One update-log entry as the reference serializes it in a message:
//! an operation byte (`a1` set, `a2` remove, `a3` clear), then the server id
//! and the database index, then for a set the key's and the value's sizes
//! and the key and value, for a remove the key's size and the key, each
//! number in the reference's variable-length form ([`base128`]).

use crate::error::{Error, ErrorKind, Result};
use crate::varint::base128;

const OP_SET: u8 = 0xa1;
const OP_REMOVE: u8 = 0xa2;
const OP_CLEAR: u8 = 0xa3;

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
        encode_into(&mut out, self.server_id, self.dbm_index, &self.op.as_ref());
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
    fn as_ref(&self) -> OpRef<'_> {
        match self {
            UpdateOp::Set { key, value } => OpRef::Set(key, value),
            UpdateOp::Remove { key } => OpRef::Remove(key),
            UpdateOp::Clear => OpRef::Clear,
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
