//! The bucket array and the links of the chains: where a key's chain starts,
//! and how an offset is stored in a bucket or a record's `next` field.

use std::sync::atomic::{AtomicU8, Ordering};

use super::header;
use super::state::State;
use crate::error::Result;

/// The bytes of the cached bucket array read or written per call at open and
/// synchronize. Below glibc's smallest mmap threshold (128 KiB) on purpose: a
/// larger buffer lands on the heap once an earlier, larger free has raised
/// that threshold, and its pages then stay resident after it is freed.
const TRANSFER_CHUNK: usize = 64 << 10;

/// Where the offset of a chain's record is stored.
#[derive(Clone, Copy)]
pub(super) enum Link {
    Bucket(u64),
    Record(u64),
}

/// The bucket of `key`'s chain.
pub(super) fn bucket_of(key: &[u8], num_buckets: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key) % num_buckets
}

impl State {
    /// The same state keeping the bucket array in memory, read from the file.
    pub(super) fn with_cached_buckets(mut self) -> Result<State> {
        let len = (self.num_buckets as usize) * self.width;
        let cached: Box<[AtomicU8]> = (0..len).map(|_| AtomicU8::new(0)).collect();
        // In pieces, so no second copy of the whole array is ever allocated.
        let mut piece = vec![0u8; len.min(TRANSFER_CHUNK)];
        for (i, cells) in cached.chunks(piece.len()).enumerate() {
            let bytes = &mut piece[..cells.len()];
            self.file.read(header::SIZE as u64 + (i * TRANSFER_CHUNK) as u64, bytes)?;
            cells.iter().zip(bytes.iter()).for_each(|(cell, &b)| cell.store(b, Ordering::Relaxed));
        }
        self.buckets = Some(cached);
        Ok(self)
    }

    pub(super) fn decode_offset(&self, bytes: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b[..self.width].copy_from_slice(bytes);
        u64::from_le_bytes(b) << self.align_pow
    }

    fn encode_offset(&self, offset: u64) -> [u8; 8] {
        (offset >> self.align_pow).to_le_bytes()
    }

    pub(super) fn bucket_offset(&self, index: u64) -> u64 {
        header::SIZE as u64 + index * self.width as u64
    }

    /// The offset of the first record of bucket `index`'s chain (0: none).
    pub(super) fn read_bucket(&self, index: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        if let Some(cached) = &self.buckets {
            let at = index as usize * self.width;
            for (byte, cell) in b.iter_mut().zip(&cached[at..at + self.width]) {
                *byte = cell.load(Ordering::Relaxed);
            }
            return Ok(self.decode_offset(&b[..self.width]));
        }
        self.file.read(self.bucket_offset(index), &mut b[..self.width])?;
        Ok(self.decode_offset(&b[..self.width]))
    }

    /// Points `link` at the record at `target` (0: the chain ends there).
    pub(super) fn write_link(&self, link: Link, target: u64) -> Result<()> {
        let bytes = self.encode_offset(target);
        match link {
            Link::Bucket(index) => match &self.buckets {
                Some(cached) => {
                    let at = index as usize * self.width;
                    for (cell, &byte) in cached[at..at + self.width].iter().zip(&bytes) {
                        cell.store(byte, Ordering::Relaxed);
                    }
                    self.buckets_dirty.store(true, Ordering::Release);
                    Ok(())
                }
                None => self.file.write(self.bucket_offset(index), &bytes[..self.width]),
            },
            Link::Record(offset) => self.file.write(offset + 1, &bytes[..self.width]),
        }
    }

    /// Writes the cached bucket array to the file if it changed.
    pub(super) fn flush_buckets(&self) -> Result<()> {
        let Some(cached) = &self.buckets else { return Ok(()) };
        if !self.buckets_dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(TRANSFER_CHUNK);
        for (i, chunk) in cached.chunks(TRANSFER_CHUNK).enumerate() {
            bytes.clear();
            bytes.extend(chunk.iter().map(|b| b.load(Ordering::Relaxed)));
            let at = header::SIZE as u64 + (i * TRANSFER_CHUNK) as u64;
            if let Err(e) = self.file.write(at, &bytes) {
                self.buckets_dirty.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }
}
