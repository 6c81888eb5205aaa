//! Batched reads through the page cache: the blocks it holds are copied at
//! once, and the blocks missing anywhere in the batch are read from the
//! device together, each once, then cached and copied.
//!
//! The missing blocks are read with no shard locked, so that other threads'
//! hits go on during the device's latency, and are cached as a single
//! read's are ([`PageCache::settle`]).

use super::{PageCache, LARGE_READ_BLOCKS};
use crate::error::Result;
use crate::file::block::{AlignedBuf, Device};
use crate::sys::BatchRead;

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
    /// The block's shard's epoch when the batch found the block missing.
    epoch: u64,
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
                    missing.push(Miss { block, read: r, skip, len, at, epoch: shard.epoch });
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
        // By block, then as found: each block's pieces together, and the
        // earliest epoch (the strictest check) first.
        missing.sort_by_key(|m| m.block);
        let mut blocks: Vec<u64> = missing.iter().map(|m| m.block).collect();
        blocks.dedup();
        let mut arena = AlignedBuf::new(blocks.len() * bs, device.align());
        read_runs(device, &blocks, bs, arena.as_mut_slice())?;
        self.install(device, &blocks, &missing, arena.as_slice(), reads)
    }

    /// Caches each block of `blocks` from `arena` (see [`PageCache::settle`])
    /// and copies the pieces of `missing` out of it.
    fn install(
        &self,
        device: &Device,
        blocks: &[u64],
        missing: &[Miss],
        arena: &[u8],
        reads: &mut [BatchRead<'_>],
    ) -> Result<()> {
        let bs = self.block_size;
        let mut pieces = missing.iter().peekable();
        for (k, &block) in blocks.iter().enumerate() {
            let Some(first) = pieces.peek() else { break };
            let data = &arena[k * bs..(k + 1) * bs];
            let (shard, slot) = self.settle(device, block, first.epoch, data)?;
            while let Some(m) = pieces.next_if(|m| m.block == block) {
                let data = &shard.data(slot, bs)[m.skip..m.skip + m.len];
                reads[m.read].buf[m.at..m.at + m.len].copy_from_slice(data);
            }
        }
        Ok(())
    }
}

/// Reads `blocks` (sorted, distinct) into `arena`, one after another; each
/// run of consecutive blocks is one request of one device batch.
fn read_runs(device: &Device, blocks: &[u64], bs: usize, arena: &mut [u8]) -> Result<()> {
    let mut runs = Vec::new();
    let mut rest = arena;
    let mut i = 0;
    while i < blocks.len() {
        let mut j = i + 1;
        while j < blocks.len() && blocks[j] == blocks[j - 1] + 1 {
            j += 1;
        }
        let (buf, tail) = std::mem::take(&mut rest).split_at_mut((j - i) * bs);
        rest = tail;
        runs.push(BatchRead { offset: blocks[i] * bs as u64, buf });
        i = j;
    }
    device.read_many(&mut runs)
}
