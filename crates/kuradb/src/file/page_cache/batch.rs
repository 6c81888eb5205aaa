//! Batched reads through the page cache: the blocks it holds are copied at
//! once, and the blocks missing anywhere in the batch are read from the
//! device together, each once, then cached and copied.
//!
//! The missing blocks are read with no shard locked, so that other
//! threads' hits go on during the device's latency, and are cached as a
//! single read's are (ahead.rs), but without read-ahead.

use std::cell::Cell;

use super::ahead::{read_groups_batched, Group};
use super::{PageCache, LARGE_READ_BLOCKS};
use crate::error::Result;
use crate::file::block::{AlignedBuf, Device};
use crate::sys::BatchRead;

thread_local! {
    /// The buffer a thread's batches read their missing blocks into, kept
    /// for its next batch: zeroing a fresh allocation per batch was a visible
    /// share of a batched lookup's cost. Taken out while in use, so a batch
    /// never shares it.
    static ARENA: Cell<Option<AlignedBuf>> = const { Cell::new(None) };
}

/// The least arena made: a batch of 32 lookups of a 512-byte block each,
/// so that small batches do not grow it step by step.
const MIN_ARENA: usize = 32 * 512;
/// The largest arena a thread keeps between batches; a larger batch's goes
/// (a batch of 32 lookups of a 4 KiB block each fits).
const MAX_KEPT_ARENA: usize = 128 << 10;

/// A piece of a request whose block was not cached when the batch looked.
struct Miss {
    block: u64,
    /// The request's position in the batch.
    read: usize,
    /// Where the piece starts in the block.
    skip: usize,
    len: usize,
    /// Where the piece starts in the request's buffer.
    at: usize,
}

impl PageCache {
    /// Reads every request of `reads` (each inside the file's logical size)
    /// through the cache. A request of many blocks goes past the cache, as
    /// in [`PageCache::read`].
    pub(crate) fn read_many(&self, device: &Device, reads: &mut [BatchRead<'_>]) -> Result<()> {
        let bs = self.block_size;
        let mut missing: Vec<Miss> = Vec::new();
        for (r, read) in reads.iter_mut().enumerate() {
            if read.buf.len() > LARGE_READ_BLOCKS * bs {
                self.read_through(device, read.offset, read.buf)?;
                continue;
            }
            for (block, skip, len, at) in self.pieces(read.offset, read.buf.len()) {
                let mut shard = self.shard(block).lock();
                let load = self.below_extent(block);
                if load && !shard.table.contains_key(&block) {
                    missing.push(Miss { block, read: r, skip, len, at });
                    continue;
                }
                // Cached, or past every byte written: zeros, no device read.
                let slot = shard.get(device, block, load, bs)?;
                read.buf[at..at + len].copy_from_slice(&shard.data(slot, bs)[skip..skip + len]);
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        // By block, then as found: each block's pieces together.
        missing.sort_by_key(|m| m.block);
        // Each block alone, without read-ahead: the batch's misses keep the
        // device busy already, and caching a group's neighbours is work on
        // the batch's critical path: with 4 KiB groups batches missed less
        // and ran slower (bench/results/2026-11-29-caches.md).
        let mut groups = Vec::new();
        self.gather_groups(missing.iter().map(|m| m.block), 1, &mut groups);
        let len = groups.iter().map(|g| g.len as usize).sum::<usize>() * bs;
        let mut arena = ARENA
            .take()
            .filter(|a| {
                a.as_slice().len() >= len && (a.as_slice().as_ptr() as usize).is_multiple_of(device.align())
            })
            .unwrap_or_else(|| AlignedBuf::new(len.max(MIN_ARENA), device.align()));
        let done = read_groups_batched(device, &groups, bs, &mut arena.as_mut_slice()[..len])
            .and_then(|()| self.install(device, &groups, &missing, &arena.as_slice()[..len], reads));
        if arena.as_slice().len() <= MAX_KEPT_ARENA {
            ARENA.set(Some(arena));
        }
        done
    }

    /// Caches each group of `groups` from `arena` (see
    /// [`PageCache::install_group`]) and copies the pieces of `missing`
    /// (sorted by block) out of it.
    fn install(
        &self,
        device: &Device,
        groups: &[Group],
        missing: &[Miss],
        arena: &[u8],
        reads: &mut [BatchRead<'_>],
    ) -> Result<()> {
        let bs = self.block_size;
        let mut pieces = missing.iter().peekable();
        let mut at = 0;
        for group in groups {
            let data = &arena[at..at + group.len as usize * bs];
            at += data.len();
            self.install_group(device, group, data, |block, shard, slot| {
                while let Some(m) = pieces.next_if(|m| m.block == block) {
                    let data = &shard.data(slot, bs)[m.skip..m.skip + m.len];
                    reads[m.read].buf[m.at..m.at + m.len].copy_from_slice(data);
                }
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Engine;

    const BS: usize = 512;

    /// Where this thread's kept arena starts, if it keeps one.
    fn kept_arena() -> Option<usize> {
        let arena = ARENA.take();
        let at = arena.as_ref().map(|a| a.as_slice().as_ptr() as usize);
        ARENA.set(arena);
        at
    }

    #[test]
    fn batches_of_a_thread_read_into_one_kept_arena() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..64u8).flat_map(|i| vec![i; BS]).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let device = Device::new(file, path, BS as u64, false, bytes.len() as u64, Engine::Serial);
        let cache = PageCache::new(8, 80, BS as u64, 4096, bytes.len() as u64, 0);
        let batch = |blocks: [u64; 3]| {
            let mut bufs = [[0u8; 10]; 3];
            let mut reads: Vec<BatchRead<'_>> = blocks
                .iter()
                .zip(bufs.iter_mut())
                .map(|(&b, buf)| BatchRead { offset: b * BS as u64 + 7, buf: &mut buf[..] })
                .collect();
            cache.read_many(&device, &mut reads).unwrap();
            for (&b, buf) in blocks.iter().zip(&bufs) {
                assert_eq!(buf, &[b as u8; 10], "block {b}");
            }
        };
        assert_eq!(kept_arena(), None);
        batch([3, 40, 9]);
        let first = kept_arena().expect("a batch with misses keeps its arena");
        // Other blocks, all missing: read into the same memory, not a new allocation.
        batch([50, 20, 33]);
        assert_eq!(kept_arena(), Some(first));
        assert_eq!(cache.stats().device_reads, 6);
    }
}
