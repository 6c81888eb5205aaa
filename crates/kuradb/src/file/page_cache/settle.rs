//! Device reads with no shard locked: how a block read while its shard was
//! free of the reader's lock gets into the cache without ever caching bytes
//! older than the device's.
//!
//! A reader finds the block missing under its shard's lock and notes the
//! shard's epoch, reads the device with no lock held, and locks the shard
//! again to cache what it read. Meanwhile other threads' hits and misses of
//! the shard go on: T threads keep up to T device reads in flight. What may
//! have made the reader's copy stale raises the epoch while holding the
//! lock: a write-back (the block was cached, written and evicted meanwhile),
//! a drop (a write past the cache, a truncation). So an unchanged epoch
//! says the copy is current; a changed one makes the reader read the block
//! again under the lock, as a rare slow path.

use parking_lot::MutexGuard;

use super::ahead::read_groups;
use super::{PageCache, Shard, LARGE_READ_BLOCKS};
use crate::caching::count_page;
use crate::error::Result;
use crate::file::block::Device;

impl Shard {
    /// The slot of `block`, locked in this shard, given `data`, the block as
    /// read from the device with no lock held: cached if `current` (nothing
    /// since the block was found missing may have made the read stale) and
    /// the block is still missing; else the cached copy serves, or a new
    /// read under the lock. The device read is counted either way.
    pub(super) fn settle_read(
        &mut self,
        device: &Device,
        block: u64,
        data: &[u8],
        current: bool,
        bs: usize,
    ) -> Result<u32> {
        self.stats.device_reads += 1;
        if current && !self.table.contains_key(&block) {
            self.stats.misses += 1;
            count_page(false, 1);
            // Its write-back of a dirty victim cannot make `data` stale:
            // the victim is cached, so it is not `block`.
            let slot = self.vacant_slot(device, bs)?;
            self.data_mut(slot, bs).copy_from_slice(data);
            self.install(slot, block);
            return Ok(slot);
        }
        // Cached meanwhile (that copy is the latest), or the read may be
        // stale: the read was in vain, counted all the same.
        self.get(device, block, true, bs)
    }
}

impl PageCache {
    /// The shard of `block`, locked, and the slot holding `block`. `data` is
    /// the block as read from the device with no shard locked, after the
    /// block was found missing at the shard's epoch `seen`: it is cached if
    /// the block is still missing and nothing since may have made it stale;
    /// else the cached copy serves, or a new read under the lock.
    ///
    /// The reader's own evictions count too: one that wrote back a block
    /// the reader is still to settle made the reader's copy of it stale
    /// (the block was cached and written after the reader found it missing).
    pub(super) fn settle(
        &self,
        device: &Device,
        block: u64,
        seen: u64,
        data: &[u8],
    ) -> Result<(MutexGuard<'_, Shard>, u32)> {
        let mut shard = self.shard(block).lock();
        let current = shard.epoch == seen;
        let slot = shard.settle_read(device, block, data, current, self.block_size)?;
        Ok((shard, slot))
    }

    /// Copies `buf.len()` bytes at `offset` out of the cache: the cached
    /// blocks under their shard's lock, the missing ones read from the
    /// device with no lock held (each in its read-ahead group, consecutive
    /// groups in one call), then cached. A read of many blocks goes to the
    /// device in one call instead (it would evict the whole cache for
    /// blocks read once).
    pub(crate) fn read(&self, device: &Device, offset: u64, buf: &mut [u8]) -> Result<()> {
        let bs = self.block_size;
        if buf.len() > LARGE_READ_BLOCKS * bs {
            return self.read_through(device, offset, buf);
        }
        // A read of at most LARGE_READ_BLOCKS blocks' bytes spans one more at most.
        let mut missing = [0u64; LARGE_READ_BLOCKS + 1];
        let mut count = 0;
        for (block, skip, n, done) in self.pieces(offset, buf.len()) {
            let mut shard = self.shard(block).lock();
            let load = self.below_extent(block);
            if load && !shard.table.contains_key(&block) {
                missing[count] = block;
                count += 1;
                continue;
            }
            // Cached, or past every byte written: zeros, no device read.
            let slot = shard.get(device, block, load, bs)?;
            buf[done..done + n].copy_from_slice(&shard.data(slot, bs)[skip..skip + n]);
        }
        if count == 0 {
            return Ok(());
        }
        // Only a read inside one block reads ahead: a small record's
        // neighbours are other records, often wanted soon; a read of several
        // blocks is a structure of its own (a tree node, a long record),
        // and a skip database's lookups read ahead found nothing
        // (docs/caches.md).
        let bs64 = bs as u64;
        let within_one = offset / bs64 == (offset + buf.len() as u64 - 1) / bs64;
        let ahead = if within_one { self.ahead_blocks } else { 1 };
        let mut groups = Vec::new();
        self.gather_groups(missing[..count].iter().copied(), ahead, &mut groups);
        let len = groups.iter().map(|g| g.len as usize).sum::<usize>() * bs;
        device.with_scratch(len, |scratch| {
            read_groups(device, &groups, bs, scratch)?;
            let mut at = 0;
            for group in &groups {
                let data = &scratch[at..at + group.len as usize * bs];
                at += data.len();
                self.install_group(device, group, data, |block, shard, slot| {
                    // The piece of the caller's range that lies in this block.
                    let start = (block * bs as u64).max(offset);
                    let end = ((block + 1) * bs as u64).min(offset + buf.len() as u64);
                    let skip = (start - block * bs as u64) as usize;
                    let (at, len) = ((start - offset) as usize, (end - start) as usize);
                    buf[at..at + len].copy_from_slice(&shard.data(slot, bs)[skip..skip + len]);
                })?;
            }
            Ok(())
        })
    }

    /// The slot of `block` in its locked shard, for a write of part of it:
    /// a block missing from the cache is read from the device with no lock
    /// held first, as [`PageCache::read`] does, so a writer's read does not
    /// stall the shard's readers.
    pub(super) fn slot_for_partial_write(
        &self,
        device: &Device,
        block: u64,
    ) -> Result<(MutexGuard<'_, Shard>, u32)> {
        let bs = self.block_size;
        let mut shard = self.shard(block).lock();
        let load = self.below_extent(block);
        if !load || shard.table.contains_key(&block) {
            let slot = shard.get(device, block, load, bs)?;
            return Ok((shard, slot));
        }
        let seen = shard.epoch;
        drop(shard);
        device.with_scratch(bs, |scratch| {
            device.read_blocks(block * bs as u64, scratch)?;
            self.settle(device, block, seen, scratch)
        })
    }
}
