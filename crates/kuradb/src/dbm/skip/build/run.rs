//! Updates waiting in memory for the next synchronization, and their spill
//! to a sort file.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::prefix_of;
use super::sort_file::write_item;
use crate::error::{Error, Result};

/// An update waiting for the next synchronization.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    /// The first eight bytes of the key, big-endian: most comparisons end here.
    prefix: u64,
    at: usize,
    key_len: u32,
    /// The value's length, or `REMOVE`.
    value_len: u32,
}

const REMOVE: u32 = u32::MAX;

/// The largest key or value an update may carry.
pub(crate) const MAX_ITEM: usize = (u32::MAX - 1) as usize;

/// Updates in memory, in arrival order until sorted.
#[derive(Default)]
pub(crate) struct MemoryRun {
    pub(super) ops: Vec<Op>,
    bytes: Vec<u8>,
}

impl MemoryRun {
    /// Adds a record (`Some` value) or the removal of every record of `key`.
    pub(crate) fn push(&mut self, key: &[u8], value: Option<&[u8]>) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(key);
        if let Some(value) = value {
            self.bytes.extend_from_slice(value);
        }
        self.ops.push(Op {
            prefix: prefix_of(key),
            at,
            key_len: key.len() as u32,
            value_len: value.map_or(REMOVE, |v| v.len() as u32),
        });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Adds `later`'s updates after these.
    pub(crate) fn append(&mut self, later: MemoryRun) {
        for op in &later.ops {
            let value = later.value(op);
            self.push(later.key(op), value);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    /// Bytes in memory.
    pub(crate) fn memory(&self) -> usize {
        self.bytes.len() + self.ops.len() * std::mem::size_of::<Op>()
    }

    pub(crate) fn last_key(&self) -> Option<&[u8]> {
        self.ops.last().map(|op| self.key(op))
    }

    pub(super) fn key(&self, op: &Op) -> &[u8] {
        &self.bytes[op.at..op.at + op.key_len as usize]
    }

    pub(super) fn value(&self, op: &Op) -> Option<&[u8]> {
        if op.value_len == REMOVE {
            return None;
        }
        let at = op.at + op.key_len as usize;
        Some(&self.bytes[at..at + op.value_len as usize])
    }

    /// Sorts by key, keeping the arrival order of equal keys.
    pub(crate) fn sort(&mut self) {
        let bytes = &self.bytes;
        let key = |op: &Op| &bytes[op.at..op.at + op.key_len as usize];
        self.ops.sort_by(|a, b| a.prefix.cmp(&b.prefix).then_with(|| key(a).cmp(key(b))));
    }

    /// Writes the (sorted) updates to a spill file at `path`.
    pub(crate) fn spill(&self, path: &Path) -> Result<()> {
        let file = fs::File::create(path).map_err(|e| Error::io("creation of a sort file", path, e))?;
        let mut out = BufWriter::with_capacity(1 << 18, file);
        let mut head = Vec::with_capacity(32);
        for op in &self.ops {
            write_item(&mut out, &mut head, self.key(op), self.value(op), path)?;
        }
        out.flush().map_err(|e| Error::io("writing a sort file", path, e))
    }
}
