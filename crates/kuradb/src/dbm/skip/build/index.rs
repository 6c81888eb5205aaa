//! The cache of the upper levels that a skip file ends with, which opening
//! loads and searches start from.

use std::path::Path;

use crate::dbm::skip::format::{stride, Header, HEADER_SIZE};
use crate::error::{Error, ErrorKind, Result};
use crate::file::File;
use crate::varint::leb128;

/// The cache of the upper levels: the offset and key of every record whose
/// position is a multiple of `stride`, in order (so entry `j` is the record
/// at position `j * stride`).
#[derive(Clone, Debug, Default)]
pub(crate) struct UpperIndex {
    pub level: u8,
    pub stride: u64,
    pub offsets: Vec<u64>,
    /// The first eight bytes of each key, big-endian (see [`prefix_of`]).
    pub prefixes: Vec<u64>,
    key_ends: Vec<usize>,
    keys: Vec<u8>,
}

impl UpperIndex {
    pub(super) fn new(level: u8, step: u64) -> UpperIndex {
        UpperIndex { level, stride: stride(step, level), ..UpperIndex::default() }
    }

    pub(crate) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// The first entry `before` does not hold for (`before` holds for a
    /// prefix of the entries). Every 64th entry is searched first: those
    /// few stay in the processor's caches, so a search touches memory
    /// elsewhere only within one block of 64.
    pub(crate) fn partition_point(&self, before: impl Fn(usize) -> bool) -> usize {
        const BLOCK: usize = 64;
        let blocks = self.len().div_ceil(BLOCK);
        let first_not = partition_point(0, blocks, |j| before(j * BLOCK));
        if first_not == 0 {
            return 0;
        }
        partition_point((first_not - 1) * BLOCK + 1, (first_not * BLOCK).min(self.len()), before)
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    pub(super) fn push(&mut self, offset: u64, key: &[u8]) {
        self.offsets.push(offset);
        self.prefixes.push(prefix_of(key));
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
    }

    /// Keeps every `step`-th entry: the index one level up.
    pub(super) fn raise(&mut self, step: u64) {
        let old = std::mem::take(self);
        *self = UpperIndex::new(old.level + 1, step);
        self.stride = old.stride.saturating_mul(step);
        for i in (0..old.len()).step_by(step.min(usize::MAX as u64) as usize) {
            self.push(old.offsets[i], old.key(i));
        }
    }

    /// Raises the level until at most `cap` entries remain (or the level is
    /// the highest that lists anything but the first record).
    pub(crate) fn fit(&mut self, cap: usize, step: u64, max_level: u8) {
        while self.len() > cap.max(1) && self.level <= max_level {
            self.raise(step);
        }
    }

    /// Bytes in memory.
    pub(crate) fn memory(&self) -> usize {
        self.keys.capacity()
            + (self.offsets.capacity() + self.prefixes.capacity() + self.key_ends.capacity()) * 8
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        for i in 0..self.len() {
            leb128::put(out, self.offsets[i]);
            leb128::put(out, self.key(i).len() as u64);
            out.extend_from_slice(self.key(i));
        }
    }

    /// Reads the index section of a file.
    pub(crate) fn load(file: &dyn File, header: &Header, path: &Path) -> Result<UpperIndex> {
        let size = (header.index_end - header.records_end) as usize;
        let mut bytes = vec![0u8; size];
        file.read(header.records_end, &mut bytes)?;
        let broken = |what: &str| {
            Error::new(ErrorKind::BrokenData, format!("the index of {} {what}: restore it", path.display()))
        };
        if crc32fast::hash(&bytes) != header.index_crc {
            return Err(broken("fails its checksum"));
        }
        let mut index = UpperIndex::new(header.index_level, u64::from(header.step_unit));
        let mut at = 0;
        while at < bytes.len() {
            let offset = leb128::decode(&bytes, &mut at).map_err(|_| broken("is cut short"))?;
            let len = leb128::decode(&bytes, &mut at).map_err(|_| broken("is cut short"))? as usize;
            let key = at
                .checked_add(len)
                .and_then(|end| bytes.get(at..end))
                .ok_or_else(|| broken("is cut short"))?;
            at += len;
            if offset < HEADER_SIZE || offset >= header.records_end {
                return Err(broken("points outside the records"));
            }
            index.push(offset, key);
        }
        let expected = if header.count == 0 { 0 } else { (header.count - 1) / index.stride + 1 };
        if index.len() as u64 != expected {
            return Err(broken("lists a wrong number of records"));
        }
        Ok(index)
    }
}

/// The first `i` in `low..high` for which `pred(i)` is false (`pred` holds
/// for a prefix of the range), or `high`.
pub(crate) fn partition_point(mut low: usize, mut high: usize, pred: impl Fn(usize) -> bool) -> usize {
    while low < high {
        let mid = low + (high - low) / 2;
        if pred(mid) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}

/// The first eight bytes of `key`, big-endian, zeros after a shorter key: a
/// number whose order agrees with the keys' (a smaller number, a smaller
/// key; equal numbers say nothing).
pub(crate) fn prefix_of(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}
