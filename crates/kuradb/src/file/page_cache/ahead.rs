//! Read-ahead: a read inside one block that misses it reads the aligned
//! group around it (`PageCache::ahead_blocks` blocks, 4 KiB by default) in
//! the same device call, and caches the group's other missing blocks too.
//!
//! An SSD answers a 4 KiB read about as fast as a 512-byte one, and the
//! records a database writes together (one after another at the end of
//! its file) are often read together: a replay of the keys one thread set
//! finds most of its records in blocks an earlier miss brought in, so many
//! threads' gets on a hash database with direct I/O hit more often and run
//! faster (bench/results/2026-11-29-caches.md). Groups larger than 4 KiB
//! cost the device more time per read than their extra hits save.
//!
//! The neighbours enter the cache on a list of their own, at most a fifth
//! of the shard, the oldest making room for the newest
//! (`Shard::install_ahead`), so they never push out more than that of what
//! lookups asked for. They are cached only if the shard's epoch shows that
//! nothing made the device's copy stale since they were seen missing (the
//! same check as `PageCache::settle`). Reads of several blocks, and
//! batches, read only what they miss (docs/caches.md says why).

use super::{PageCache, Shard};
use crate::error::Result;
use crate::file::block::Device;
use crate::sys::BatchRead;

/// Blocks of one shard, within one aligned read-ahead group, read from the
/// device in one call because some of them were missing.
#[derive(Clone, Copy, Default)]
pub(super) struct Group {
    pub(super) first: u64,
    pub(super) len: u64,
    /// The shard's epoch when the group was looked at.
    epoch: u64,
    /// Bit i: block `first + i` was missing then.
    absent: u64,
    /// Bit i: a read asked for block `first + i`.
    wanted: u64,
}

impl Group {
    fn end(&self) -> u64 {
        self.first + self.len
    }
}

/// The positions of the set bits of `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = u64> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros();
            mask &= mask - 1;
            u64::from(i)
        })
    })
}

impl PageCache {
    /// Appends to `groups` the groups to read for `missing` (ascending
    /// blocks a read found missing, each below the extent then; a block
    /// given again only joins its group once):
    /// each missing block in one group, which holds it and its neighbours
    /// in its aligned group of `n` blocks (a power of two: 1 or
    /// `self.ahead_blocks`) up to the extent, and no two groups overlapping.
    pub(super) fn gather_groups(
        &self,
        missing: impl IntoIterator<Item = u64>,
        n: u64,
        groups: &mut Vec<Group>,
    ) {
        let bs = self.block_size as u64;
        let limit = self.extent.load(std::sync::atomic::Ordering::Acquire).div_ceil(bs);
        for block in missing {
            if let Some(last) = groups.last_mut().filter(|g| block < g.end()) {
                last.wanted |= 1 << (block - last.first);
                continue;
            }
            let aligned = block & !(n - 1);
            // Not below the floor (the head buffer's blocks are not the
            // cache's), nor before the end of the last group if it lies in
            // the same aligned group (a truncation since may have cut it
            // short of this block).
            let first = groups.last().map_or(aligned, |g| g.end().max(aligned)).max(self.floor.min(block));
            let end = (aligned + n).min(limit.max(block + 1));
            let shard = self.shard(first).lock();
            let absent = (first..end)
                .filter(|b| !shard.table.contains_key(b))
                .fold(0u64, |mask, b| mask | 1 << (b - first));
            groups.push(Group {
                first,
                len: end - first,
                epoch: shard.epoch,
                absent,
                wanted: 1 << (block - first),
            });
        }
    }

    /// Caches the blocks of `group` as read into `data`. Each block the read
    /// wanted is handed to `take` with its shard locked, at once (a later
    /// block of the group may evict it): the copy just read if nothing made
    /// it stale, else the cache's copy or a new read under the lock. Then
    /// its other blocks still missing are cached as read-ahead, if the
    /// shard's epoch has not moved since the group was looked at.
    pub(super) fn install_group(
        &self,
        device: &Device,
        group: &Group,
        data: &[u8],
        mut take: impl FnMut(u64, &Shard, u32),
    ) -> Result<()> {
        let bs = self.block_size;
        let mut shard = self.shard(group.first).lock();
        // Only this thread moves the epoch from here on, by writing back
        // dirty victims: cached blocks, so none of those the group read.
        let current = shard.epoch == group.epoch;
        let copy = |i: u64| &data[i as usize * bs..(i as usize + 1) * bs];
        for i in bits(group.wanted) {
            let block = group.first + i;
            let fresh = current && group.absent & (1 << i) != 0;
            let slot = shard.settle_read(device, block, copy(i), fresh, bs)?;
            take(block, &shard, slot);
        }
        if current {
            for i in bits(group.absent & !group.wanted) {
                let block = group.first + i;
                if !shard.table.contains_key(&block) {
                    shard.install_ahead(device, block, copy(i), bs)?;
                }
            }
        }
        Ok(())
    }
}

/// Reads `groups` (ascending, disjoint) into `scratch`, one after another;
/// groups that follow one another on the device in one call.
pub(super) fn read_groups(device: &Device, groups: &[Group], bs: usize, scratch: &mut [u8]) -> Result<()> {
    for (first, len, at) in runs(groups, bs) {
        device.read_blocks(first * bs as u64, &mut scratch[at..at + len])?;
    }
    Ok(())
}

/// Reads `groups` (ascending, disjoint) into `scratch` as one batch of the
/// device, each run of groups that follow one another one request.
pub(super) fn read_groups_batched(
    device: &Device,
    groups: &[Group],
    bs: usize,
    scratch: &mut [u8],
) -> Result<()> {
    let mut reads = Vec::new();
    let mut rest = scratch;
    for (first, len, _) in runs(groups, bs) {
        let (buf, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        reads.push(BatchRead { offset: first * bs as u64, buf });
    }
    device.read_many(&mut reads)
}

/// The device ranges `groups` make: (first block, bytes, where in the
/// scratch buffer), merging groups that follow one another.
fn runs(groups: &[Group], bs: usize) -> impl Iterator<Item = (u64, usize, usize)> + '_ {
    let mut i = 0;
    let mut at = 0;
    std::iter::from_fn(move || {
        let first = groups.get(i)?.first;
        let mut end = groups[i].end();
        i += 1;
        while groups.get(i).is_some_and(|g| g.first == end) {
            end = groups[i].end();
            i += 1;
        }
        let len = (end - first) as usize * bs;
        let run = (first, len, at);
        at += len;
        Some(run)
    })
}
