//! A small in-process cache of file blocks with scan-resistant eviction.
//!
//! The cache is split into shards, each with its own lock, hash table and
//! segmented LRU ([`Segments`]): a block enters on probation and a second
//! lookup protects it, up to the protected share of the shard; blocks read
//! in a [`ScanScope`](crate::caching::ScanScope) stay on probation. So a
//! pass over the whole file evicts blocks used once, not the working set
//! of random lookups. Dirty blocks are written back when evicted, on
//! [`PageCache::flush`] and before the file closes. Every operation on a
//! block is O(1): a hash lookup and a few link updates.
//!
//! A read inside one block that misses it reads the aligned group of blocks
//! around it (4 KiB by default) in the same device call and caches the
//! neighbours that were missing too (ahead.rs): a device answers a 4 KiB
//! read as fast as a 512-byte one, and records written together are read
//! together.

mod ahead;
mod batch;
mod settle;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::block::{AlignedBuf, Device};
use crate::caching::{count_page, in_scan, IdHasher, Segment, Segments, NIL};
use crate::error::Result;

/// Counters of a page cache since the file was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCacheStats {
    /// Accesses of a block that was in the cache.
    pub hits: u64,
    /// Accesses of a block that was not (read from the device or made new).
    pub misses: u64,
    /// Blocks read from the device because an access missed them.
    pub device_reads: u64,
    /// Blocks read from the device beside a missed one, in the same call,
    /// and cached before any access asked for them (read-ahead).
    pub read_ahead: u64,
    /// Blocks written to the device (evictions and flushes).
    pub device_writes: u64,
    /// Blocks the cache can hold.
    pub capacity: u64,
    /// Blocks it holds now.
    pub used: u64,
    /// Of those, the blocks in its protected segment (used again by lookups).
    pub protected: u64,
}

/// Reads longer than this many blocks bypass the cache.
const LARGE_READ_BLOCKS: usize = 16;
const MAX_SHARDS: usize = 16;
/// The fewest blocks a shard holds (but for a smaller cache).
const MIN_SHARD_BLOCKS: usize = 128;

struct Node {
    block: u64,
    dirty: bool,
}

const EMPTY: Node = Node { block: u64::MAX, dirty: false };

/// One shard: `nodes[i]` describes the block held in slot i of `arena`.
struct Shard {
    table: HashMap<u64, u32, IdHasher>,
    nodes: Vec<Node>,
    arena: AlignedBuf,
    capacity: usize,
    /// The order of the slots holding blocks: which to evict next.
    order: Segments,
    /// Slots emptied by truncation, reused before growing.
    free: Vec<u32>,
    stats: PageCacheStats,
    /// Where an evicted block's dirty neighbours are gathered to be written
    /// with it in one call (allocated at the first such eviction).
    cluster: Option<AlignedBuf>,
    align: usize,
    /// Counts the events that may make the device's copy of one of the
    /// shard's blocks newer than a copy read without the shard's lock held
    /// (a write-back, a removal, a write past the cache): a reader that read
    /// a block so checks that none happened before caching it (settle.rs).
    epoch: u64,
}

/// An eviction writes a dirty block's dirty neighbours with it (the blocks an
/// append filled one after another, above all) within aligned groups of
/// 2^GROUP_BITS blocks.
const GROUP_BITS: u32 = 4;
/// The most blocks one eviction writes.
const MAX_CLUSTER: u64 = 1 << GROUP_BITS;
/// Consecutive blocks map to the same shard in aligned runs of
/// 2^SHARD_RUN_BITS: whole write-back groups, and long enough that a read of
/// a few blocks (a tree node, say) seldom straddles two shards, which would
/// cost it a device call in each.
const SHARD_RUN_BITS: u32 = 6;

/// The page cache of one file.
pub(crate) struct PageCache {
    shards: Box<[Mutex<Shard>]>,
    /// No byte at or past this offset has held data since the file was opened
    /// or last truncated, so a block starting there is zeros without a read.
    extent: AtomicU64,
    shard_bits: u32,
    block_size: usize,
    /// How many blocks a miss reads together (a power of two; 1: only the
    /// block missed): the aligned group holding the missed block.
    ahead_blocks: u64,
    /// The first block the cache serves: those before it are the head
    /// buffer's, whose device copy may be older, so never read ahead.
    floor: u64,
}

impl PageCache {
    /// A cache of `capacity` blocks of `block_size` bytes aligned to `align`,
    /// `protected_percent` of them at most protected, for a file now
    /// `file_len` bytes long on disk; a miss reads the aligned `read_ahead`
    /// bytes around the block (see [`ahead_blocks`]).
    pub(crate) fn new(
        capacity: usize,
        protected_percent: u8,
        block_size: u64,
        align: usize,
        file_len: u64,
        read_ahead: u64,
    ) -> PageCache {
        // Each shard is an LRU of its own: shards too small would evict hot
        // blocks (the tail that appends fill) that one large LRU keeps.
        let count = (capacity / MIN_SHARD_BLOCKS).clamp(1, MAX_SHARDS);
        let count = if count.is_power_of_two() { count } else { count.next_power_of_two() / 2 };
        let ahead_blocks = ahead_blocks(read_ahead, block_size, capacity / count);
        let shards = (0..count)
            .map(|i| {
                let cap = capacity / count + usize::from(i < capacity % count);
                // Read-ahead's share comes out of the protected share, so that
                // probation keeps its room for blocks asked for once.
                let ahead = if ahead_blocks > 1 { ahead_share(cap) } else { 0 };
                let protected = Segments::protected_share(cap, protected_percent).saturating_sub(ahead);
                Mutex::new(Shard {
                    table: HashMap::with_capacity_and_hasher(cap, Default::default()),
                    nodes: Vec::with_capacity(cap),
                    arena: AlignedBuf::new(cap * block_size as usize, align),
                    capacity: cap,
                    order: Segments::new(cap, protected).with_ahead_cap(ahead),
                    free: Vec::new(),
                    stats: PageCacheStats { capacity: cap as u64, ..Default::default() },
                    cluster: None,
                    align,
                    epoch: 0,
                })
            })
            .collect();
        PageCache {
            shards,
            extent: AtomicU64::new(file_len),
            shard_bits: count.trailing_zeros(),
            block_size: block_size as usize,
            ahead_blocks,
            floor: 0,
        }
    }

    /// The cache of a file whose first `offset` bytes (whole blocks) another
    /// layer serves: read-ahead never reads them.
    pub(crate) fn serving_from(mut self, offset: u64) -> PageCache {
        self.floor = offset / self.block_size as u64;
        self
    }

    fn shard(&self, block: u64) -> &Mutex<Shard> {
        &self.shards[self.shard_index(block)]
    }

    fn shard_index(&self, block: u64) -> usize {
        if self.shard_bits == 0 {
            return 0;
        }
        ((block >> SHARD_RUN_BITS).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.shard_bits)) as usize
    }

    /// Whether `block` starts below every byte written, so must be read
    /// rather than taken as zeros.
    fn below_extent(&self, block: u64) -> bool {
        block * (self.block_size as u64) < self.extent.load(Ordering::Acquire)
    }

    /// The pieces of `len` bytes at `offset`, block by block: (block index,
    /// offset within the block, length, offset within the caller's buffer).
    fn pieces(&self, offset: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
        let bs = self.block_size;
        let mut done = 0usize;
        std::iter::from_fn(move || {
            if done >= len {
                return None;
            }
            let pos = offset + done as u64;
            let skip = (pos % bs as u64) as usize;
            let n = (bs - skip).min(len - done);
            let piece = (pos / bs as u64, skip, n, done);
            done += n;
            Some(piece)
        })
    }

    /// Reads a large range from the device, after writing back the dirty blocks
    /// in it (so that no later eviction can put newer bytes under the read),
    /// and overlays the blocks the cache holds, which are the latest.
    fn read_through(&self, device: &Device, offset: u64, buf: &mut [u8]) -> Result<()> {
        let bs = self.block_size;
        for (block, ..) in self.pieces(offset, buf.len()) {
            let mut shard = self.shard(block).lock();
            if let Some(&slot) = shard.table.get(&block) {
                if shard.nodes[slot as usize].dirty {
                    shard.write_back(device, slot, bs)?;
                }
            }
        }
        device.read(offset, buf)?;
        for (block, skip, n, done) in self.pieces(offset, buf.len()) {
            let mut shard = self.shard(block).lock();
            match shard.table.get(&block) {
                Some(&slot) => buf[done..done + n].copy_from_slice(&shard.data(slot, bs)[skip..skip + n]),
                None => shard.stats.device_reads += 1,
            }
        }
        Ok(())
    }

    /// Copies `data` into the cache at `offset`, marking its blocks dirty. A block
    /// the write covers whole is not read from the device first. A write of many
    /// blocks goes to the device in one call instead, but for its edges.
    pub(crate) fn write(&self, device: &Device, offset: u64, data: &[u8]) -> Result<()> {
        if data.len() > LARGE_READ_BLOCKS * self.block_size {
            return self.write_through(device, offset, data);
        }
        self.write_cached(device, offset, data)
    }

    /// Writes the whole blocks of a large range to the device, dropping the
    /// cache's copies of them first (the write replaces them whole, dirty or
    /// not; dropped after, a write-back of a stale copy could land on top),
    /// and the partly covered blocks at its edges through the cache.
    fn write_through(&self, device: &Device, offset: u64, data: &[u8]) -> Result<()> {
        let bs = self.block_size as u64;
        let end = offset + data.len() as u64;
        let inner_start = offset.div_ceil(bs) * bs;
        let inner_end = end / bs * bs;
        let head = (inner_start - offset) as usize;
        let inner = (inner_end - offset) as usize;
        if head > 0 {
            self.write_cached(device, offset, &data[..head])?;
        }
        if inner < data.len() {
            self.write_cached(device, inner_end, &data[inner..])?;
        }
        for block in inner_start / bs..inner_end / bs {
            self.shard(block).lock().remove(block);
        }
        let written = device.write(inner_start, &data[head..inner]);
        // Dropped again: a read between the first drop and the device write
        // may have cached a block's old bytes, which would outlive the write.
        // The epoch moves even for a block not cached: a read that found it
        // missing before the write may still be on its way to cache it.
        for block in inner_start / bs..inner_end / bs {
            let mut shard = self.shard(block).lock();
            shard.remove(block);
            shard.epoch += 1;
        }
        written?;
        self.extent.fetch_max(inner_end, Ordering::AcqRel);
        Ok(())
    }

    fn write_cached(&self, device: &Device, offset: u64, data: &[u8]) -> Result<()> {
        let bs = self.block_size;
        for (block, skip, n, done) in self.pieces(offset, data.len()) {
            let (mut shard, slot) = if n < bs {
                self.slot_for_partial_write(device, block)?
            } else {
                let mut shard = self.shard(block).lock();
                let slot = shard.get(device, block, false, bs)?;
                (shard, slot)
            };
            shard.data_mut(slot, bs)[skip..skip + n].copy_from_slice(&data[done..done + n]);
            shard.nodes[slot as usize].dirty = true;
            // Raised while the shard is locked: whoever touches this block next
            // holds the same lock and so sees the new extent.
            self.extent.fetch_max(block * (bs as u64) + (skip + n) as u64, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Writes every dirty block back to the device, in offset order, each run
    /// of consecutive blocks in one call.
    pub(crate) fn flush(&self, device: &Device) -> Result<()> {
        /// The most bytes one call writes.
        const MAX_RUN: usize = 1 << 20;
        let bs = self.block_size;
        // Every shard locked (in index order, as nothing else locks two) so
        // that runs can span them: neighbouring blocks live in different shards.
        let mut shards: Vec<_> = self.shards.iter().map(|s| s.lock()).collect();
        let mut dirty: Vec<(u64, usize, u32)> = Vec::new();
        for (s, shard) in shards.iter().enumerate() {
            let nodes = shard.nodes.iter().enumerate();
            dirty.extend(
                nodes.filter(|(_, n)| n.dirty && n.block != u64::MAX).map(|(i, n)| (n.block, s, i as u32)),
            );
        }
        if dirty.is_empty() {
            return Ok(());
        }
        dirty.sort_unstable();
        // No larger than the dirty blocks: a buffer of 1 MiB, allocated at
        // every synchronize, would stay resident once glibc's mmap threshold
        // has risen past it (bench/results/2026-11-29-memory.md).
        let mut run = AlignedBuf::new(MAX_RUN.min(dirty.len() * bs).max(bs), device.align());
        let mut i = 0;
        while i < dirty.len() {
            let first = dirty[i].0;
            let mut j = i;
            let mut len = 0;
            while j < dirty.len() && dirty[j].0 == first + (j - i) as u64 && len + bs <= run.as_slice().len()
            {
                let (_, s, slot) = dirty[j];
                run.as_mut_slice()[len..len + bs].copy_from_slice(shards[s].data(slot, bs));
                len += bs;
                j += 1;
            }
            device.write_blocks(first * bs as u64, &run.as_slice()[..len])?;
            for &(_, s, slot) in &dirty[i..j] {
                shards[s].epoch += 1;
                shards[s].stats.device_writes += 1;
                shards[s].nodes[slot as usize].dirty = false;
            }
            i = j;
        }
        Ok(())
    }

    /// Forgets everything at or past `size`: blocks wholly past it are dropped
    /// (dirty or not), and the tail of the block holding `size` is zeroed.
    pub(crate) fn truncate(&self, size: u64) {
        let bs = self.block_size as u64;
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            // Even with no block cached past `size`: a read on its way to
            // cache one must not.
            shard.epoch += 1;
            let doomed: Vec<u64> = shard.table.keys().copied().filter(|&b| b * bs >= size).collect();
            for block in doomed {
                shard.remove(block);
            }
            if !size.is_multiple_of(bs) {
                if let Some(&slot) = shard.table.get(&(size / bs)) {
                    let skip = (size % bs) as usize;
                    shard.data_mut(slot, self.block_size)[skip..].fill(0);
                }
            }
        }
        self.extent.store(size, Ordering::Release);
    }

    /// The counters, summed over the shards.
    pub(crate) fn stats(&self) -> PageCacheStats {
        let mut total = PageCacheStats::default();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let s = shard.stats;
            total.hits += s.hits;
            total.misses += s.misses;
            total.device_reads += s.device_reads;
            total.read_ahead += s.read_ahead;
            total.device_writes += s.device_writes;
            total.capacity += s.capacity;
            total.used += shard.table.len() as u64;
            total.protected += shard.order.len_of(Segment::Protected) as u64;
        }
        total
    }
}

/// The share of a shard, in percent, that blocks read ahead of any use may
/// hold. As large as probation's default share: smaller shares kept
/// neighbours too briefly to be wanted, and many threads' gets were slower
/// (bench/results/2026-11-29-caches.md).
const AHEAD_PERCENT: usize = 20;

/// The most blocks of a shard of `capacity` that blocks read ahead of any
/// use may hold.
fn ahead_share(capacity: usize) -> usize {
    capacity * AHEAD_PERCENT / 100
}

/// The blocks of `block_size` bytes that a miss reads together, for
/// `read_ahead` bytes in a cache whose shards hold `shard_capacity` blocks:
/// a power of two, within one shard's run of blocks (so one lock covers the
/// group), and at most an eighth of a shard, so that a group's neighbours
/// never evict the block it was read for. 1 turns read-ahead off.
pub(crate) fn ahead_blocks(read_ahead: u64, block_size: u64, shard_capacity: usize) -> u64 {
    let wanted = (read_ahead / block_size.max(1)).max(1);
    let room = (shard_capacity as u64 / 8).max(1);
    let blocks = wanted.min(room).min(1 << SHARD_RUN_BITS);
    // The largest power of two within it.
    1 << (63 - blocks.leading_zeros())
}

impl Shard {
    fn data(&self, slot: u32, bs: usize) -> &[u8] {
        &self.arena.as_slice()[slot as usize * bs..(slot as usize + 1) * bs]
    }

    fn data_mut(&mut self, slot: u32, bs: usize) -> &mut [u8] {
        &mut self.arena.as_mut_slice()[slot as usize * bs..(slot as usize + 1) * bs]
    }

    /// The slot holding `block`, its use recorded; on a miss the block is
    /// read from the device if `load`, else zeroed (the caller overwrites it whole).
    fn get(&mut self, device: &Device, block: u64, load: bool, bs: usize) -> Result<u32> {
        if let Some(&slot) = self.table.get(&block) {
            self.stats.hits += 1;
            count_page(true, 1);
            self.order.touch(slot, in_scan());
            return Ok(slot);
        }
        self.stats.misses += 1;
        count_page(false, 1);
        let slot = self.vacant_slot(device, bs)?;
        let offset = block * bs as u64;
        let loaded = if load {
            self.stats.device_reads += 1;
            let start = slot as usize * bs;
            device.read_blocks(offset, &mut self.arena.as_mut_slice()[start..start + bs])
        } else {
            self.data_mut(slot, bs).fill(0);
            Ok(())
        };
        if let Err(e) = loaded {
            self.nodes[slot as usize] = EMPTY;
            self.free.push(slot);
            return Err(e);
        }
        self.install(slot, block);
        Ok(slot)
    }

    /// A slot for a new block: a free one, a new one, or the policy's victim's
    /// (written back first if dirty, so a failed write loses nothing).
    fn vacant_slot(&mut self, device: &Device, bs: usize) -> Result<u32> {
        if let Some(slot) = self.free.pop() {
            return Ok(slot);
        }
        if self.nodes.len() < self.capacity {
            self.nodes.push(EMPTY);
            return Ok((self.nodes.len() - 1) as u32);
        }
        // Every slot holds a block here: none is free and all exist.
        let victim = self.order.victim();
        if self.nodes[victim as usize].dirty {
            self.write_back_cluster(device, victim, bs)?;
        }
        let old = self.nodes[victim as usize].block;
        self.table.remove(&old);
        self.order.remove(victim);
        Ok(victim)
    }

    fn install(&mut self, slot: u32, block: u64) {
        self.nodes[slot as usize] = Node { block, dirty: false };
        self.table.insert(block, slot);
        self.order.insert(slot);
    }

    /// Caches `data` as `block`, read ahead of any use: in a free slot, or
    /// in the slot of the oldest block read ahead once those are at their
    /// cap, so read-ahead never evicts what lookups asked for beyond it.
    fn install_ahead(&mut self, device: &Device, block: u64, data: &[u8], bs: usize) -> Result<()> {
        let slot = if self.order.ahead_full() {
            let slot = self.order.oldest_ahead();
            if slot == NIL {
                return Ok(());
            }
            // Clean: a write's use of a block moves it off the read-ahead list.
            debug_assert!(!self.nodes[slot as usize].dirty);
            let old = self.nodes[slot as usize].block;
            self.table.remove(&old);
            self.order.remove(slot);
            slot
        } else {
            self.vacant_slot(device, bs)?
        };
        self.data_mut(slot, bs).copy_from_slice(data);
        self.nodes[slot as usize] = Node { block, dirty: false };
        self.table.insert(block, slot);
        self.order.insert_ahead(slot);
        self.stats.read_ahead += 1;
        Ok(())
    }

    /// Writes back the dirty block in `slot` together with the dirty blocks
    /// next to it in the same group, in one call.
    fn write_back_cluster(&mut self, device: &Device, slot: u32, bs: usize) -> Result<()> {
        let block = self.nodes[slot as usize].block;
        let group = block >> GROUP_BITS;
        let dirty_at = |shard: &Shard, b: u64| {
            b >> GROUP_BITS == group && shard.table.get(&b).is_some_and(|&s| shard.nodes[s as usize].dirty)
        };
        let mut first = block;
        while first > 0 && dirty_at(self, first - 1) {
            first -= 1;
        }
        let mut end = block + 1;
        while end - first < MAX_CLUSTER && dirty_at(self, end) {
            end += 1;
        }
        if end - first == 1 {
            return self.write_back(device, slot, bs);
        }
        let mut cluster =
            self.cluster.take().unwrap_or_else(|| AlignedBuf::new(MAX_CLUSTER as usize * bs, self.align));
        let len = (end - first) as usize * bs;
        for (i, b) in (first..end).enumerate() {
            let s = self.table[&b];
            cluster.as_mut_slice()[i * bs..(i + 1) * bs].copy_from_slice(self.data(s, bs));
        }
        let written = device.write_blocks(first * bs as u64, &cluster.as_slice()[..len]);
        self.cluster = Some(cluster);
        self.epoch += 1;
        written?;
        for b in first..end {
            let s = self.table[&b];
            self.nodes[s as usize].dirty = false;
            self.stats.device_writes += 1;
        }
        Ok(())
    }

    fn write_back(&mut self, device: &Device, slot: u32, bs: usize) -> Result<()> {
        let offset = self.nodes[slot as usize].block * bs as u64;
        self.epoch += 1;
        device.write_blocks(offset, self.data(slot, bs))?;
        self.stats.device_writes += 1;
        self.nodes[slot as usize].dirty = false;
        Ok(())
    }

    fn remove(&mut self, block: u64) {
        if let Some(slot) = self.table.remove(&block) {
            self.epoch += 1;
            self.order.remove(slot);
            self.nodes[slot as usize] = EMPTY;
            self.free.push(slot);
        }
    }
}
