//! The head buffer: the first bytes of a file kept in memory.
//!
//! A hash database's bucket array sits at the start of its file and takes a
//! small write on every update. With block I/O each such write would cost a
//! whole block; the head buffer absorbs them and writes the region back only on
//! synchronize and close.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;

use super::block::{AlignedBuf, Device};
use crate::error::Result;

/// The first `len()` bytes of a file, in memory.
pub(crate) struct HeadBuffer {
    data: RwLock<AlignedBuf>,
    len: u64,
    dirty: AtomicBool,
}

impl HeadBuffer {
    /// Loads the first `size` bytes (rounded up to whole blocks) from `device`.
    pub(crate) fn load(device: &Device, size: u64) -> Result<HeadBuffer> {
        let bs = device.block_size();
        let len = size.div_ceil(bs) * bs;
        let mut data = AlignedBuf::new(len as usize, device.align());
        device.read_blocks(0, data.as_mut_slice())?;
        Ok(HeadBuffer { data: RwLock::new(data), len, dirty: AtomicBool::new(false) })
    }

    /// How many bytes at the file's start the buffer holds.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Copies bytes at `offset` (the range must lie inside the buffer).
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) {
        let data = self.data.read();
        buf.copy_from_slice(&data.as_slice()[offset as usize..offset as usize + buf.len()]);
    }

    /// Stores bytes at `offset` (the range must lie inside the buffer).
    pub(crate) fn write(&self, offset: u64, src: &[u8]) {
        let mut data = self.data.write();
        data.as_mut_slice()[offset as usize..offset as usize + src.len()].copy_from_slice(src);
        self.dirty.store(true, Ordering::Release);
    }

    /// Zeroes everything at or past `size`, so a later growth of the file reads zeros.
    pub(crate) fn truncate(&self, size: u64) {
        if size < self.len {
            self.data.write().as_mut_slice()[size as usize..].fill(0);
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Writes the buffer back if it changed, as far as the file's logical
    /// `size` reaches (rounded up to whole blocks).
    pub(crate) fn flush(&self, device: &Device, size: u64) -> Result<()> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let bs = device.block_size();
        let end = size.div_ceil(bs).saturating_mul(bs).min(self.len) as usize;
        let data = self.data.read();
        let result = device.write_blocks(0, &data.as_slice()[..end]);
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result
    }
}
