//! The node cache: nodes in sharded segmented LRUs ([`Segments`]) holding
//! at most `max_cached_pages` in all, at most three quarters of them leaves
//! (but for nodes in use, which stay),
//! loaded from the store on a miss and written back when evicted (if
//! changed), at synchronize and at close. A node enters on probation and a
//! second load by a lookup protects it, up to the protected share; loads in
//! a scan (a cursor's walk, `process_each`, a rebuild) promote nothing, so
//! a walk over every leaf leaves the nodes random lookups use. A load reads
//! the store without its shard's lock (see [`Tree::load`]): only lookups of
//! the same node wait for it.

use std::collections::{HashMap, HashSet};
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::page::{node_key, FIGURES_KEY};
use super::state::Tree;
use crate::caching::{count_node, in_scan, IdHasher, Segment, Segments, NIL};
use crate::dbm::tree_node::{is_leaf_id, Node};
use crate::dbm::Dbm;
use crate::error::Result;

/// The most shards of the node cache, each with its own lock.
const SHARDS: usize = 16;

/// One shard: `table` holds each cached node's cell and the slot `order`
/// knows it by, and `ids[slot]` is the node in `slot`. A lookup finds the
/// cell in the table's entry itself, one line of memory fewer to wait for
/// than a slot's.
struct Shard {
    table: HashMap<u64, (u32, Arc<Cell>), IdHasher>,
    ids: Vec<Option<u64>>,
    /// Nodes not cached that a thread is reading from the store, outside
    /// this lock: no other thread reads or caches them meanwhile. Few (at
    /// most one per thread), so a list.
    loading: Vec<u64>,
    /// Slots emptied by a discard or an eviction, reused before growing.
    free: Vec<u32>,
    order: Segments,
    /// This shard's part of `max_cached_pages`.
    capacity: usize,
    /// How many of the cached nodes are leaves.
    leaves: usize,
    /// The most leaves the shard keeps: a quarter of its capacity is kept
    /// for inner nodes, which every lookup passes through and which a run
    /// of leaf loads would otherwise push out.
    leaf_capacity: usize,
}

/// The ids of a shard's changed nodes, which a flush writes: it visits
/// them alone rather than every cached node, so that a synchronization
/// costs what changed, not what the cache holds. An id is in the set while
/// its cached node is changed: it joins at the change that makes the node
/// differ from the store and leaves at the write that makes them equal, both
/// under the node's lock. Locked last, under any other lock.
type ChangedIds = Mutex<HashSet<u64, IdHasher>>;

/// A shard behind its lock, and the signal that a node of it finished
/// loading (waking the threads that wanted it).
struct ShardLock {
    shard: Mutex<Shard>,
    loaded: Condvar,
    /// The shard's capacity, readable without the lock.
    capacity: usize,
    changed: Arc<ChangedIds>,
}

impl ShardLock {
    fn lock(&self) -> MutexGuard<'_, Shard> {
        self.shard.lock()
    }
}

pub(super) struct NodeCache {
    shards: Vec<ShardLock>,
    /// The source of [`Cell`]s' versions.
    versions: AtomicU64,
}

/// A cached node.
pub(super) struct Cell {
    slot: RwLock<Slot>,
    /// Changes with every change of the node, made while its slot is
    /// written, and is never the same for two loads of it, so a cursor that
    /// saw this version may trust what it saw. Readable without the slot's
    /// lock, so that a cursor checks the record it copied still holds with
    /// one load (see [`super::cursor`]).
    version: AtomicU64,
    id: u64,
    /// The set of the node's shard that a change joins ([`ChangedIds`]).
    changed: Arc<ChangedIds>,
}

pub(super) struct Slot {
    pub node: Node,
    /// The node differs from the store.
    pub dirty: bool,
}

impl Cell {
    /// The node, held shared.
    pub(super) fn read(&self) -> RwLockReadGuard<'_, Slot> {
        self.slot.read()
    }

    /// The node, held exclusively: a change made through it is marked by
    /// [`SlotWrite::changed`].
    pub(super) fn write(&self) -> SlotWrite<'_> {
        SlotWrite { slot: self.slot.write(), cell: self }
    }

    /// The node's version (see [`Cell::version`](Cell#structfield.version)).
    /// Read while the slot is held, it is the version of what the holder
    /// sees; read without, it tells whether the node changed since a
    /// version was seen.
    pub(super) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

/// A cell's node held exclusively.
pub(super) struct SlotWrite<'a> {
    slot: RwLockWriteGuard<'a, Slot>,
    cell: &'a Cell,
}

impl SlotWrite<'_> {
    /// Marks the node changed: to be written back, and no longer as any
    /// cursor saw it.
    pub(super) fn changed(&mut self) {
        if !self.slot.dirty {
            self.slot.dirty = true;
            self.cell.changed.lock().insert(self.cell.id);
        }
        self.cell.version.fetch_add(1, Ordering::AcqRel);
    }
}

impl Deref for SlotWrite<'_> {
    type Target = Slot;

    fn deref(&self) -> &Slot {
        &self.slot
    }
}

impl DerefMut for SlotWrite<'_> {
    fn deref_mut(&mut self) -> &mut Slot {
        &mut self.slot
    }
}

/// Marks a cell that leaves the cache as changed, so that a cursor holding
/// it (see [`super::cursor::LeafPlace`]) trusts it no more: the node's next
/// load is another cell. Eviction drops only cells nobody holds, and so
/// needs no mark. Marked with the slot held, so that a cursor stepping
/// within the leaf (which holds it shared) sees the cell whole before the
/// mark or not at all after.
fn retire(cell: &Arc<Cell>) {
    if Arc::strong_count(cell) > 1 {
        let _held = cell.slot.write();
        cell.version.fetch_add(1, Ordering::AcqRel);
    }
}

impl Shard {
    fn get(&self, id: u64) -> Option<(u32, &Arc<Cell>)> {
        self.table.get(&id).map(|(slot, cell)| (*slot, cell))
    }

    /// Puts `cell` in as node `id`, replacing the node's old cell if any.
    fn put(&mut self, id: u64, cell: Arc<Cell>) {
        if let Some((slot, old)) = self.table.get_mut(&id) {
            let slot = *slot;
            retire(&std::mem::replace(old, cell));
            self.order.touch(slot, in_scan());
            return;
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.ids.push(None);
            (self.ids.len() - 1) as u32
        });
        self.ids[slot as usize] = Some(id);
        self.table.insert(id, (slot, cell));
        self.order.insert(slot);
        self.leaves += usize::from(is_leaf_id(id));
    }

    fn remove(&mut self, id: u64) {
        if let Some((slot, old)) = self.table.remove(&id) {
            self.leaves -= usize::from(is_leaf_id(id));
            self.order.remove(slot);
            self.ids[slot as usize] = None;
            retire(&old);
            self.free.push(slot);
        }
    }

    /// Whether the shard holds more than it may: more nodes than its
    /// capacity, or more leaves than its leaf share.
    fn over(&self) -> bool {
        self.order.len() > self.capacity || self.leaves > self.leaf_capacity
    }

    fn clear(&mut self) {
        let ids: Vec<u64> = self.table.keys().copied().collect();
        ids.into_iter().for_each(|id| self.remove(id));
    }
}

impl Drop for NodeCache {
    /// The cells cursors still hold leave with the cache: their tree was
    /// closed. A cursor checks its cell without the tree's lock, so the cell
    /// itself must say it no longer holds.
    fn drop(&mut self) {
        self.retire_all();
    }
}

impl NodeCache {
    /// A cache of `max_cached_pages` nodes in all, at most three quarters
    /// of them leaves, `protected_percent` of each shard's share at most
    /// protected. Fewer nodes than shards make
    /// fewer shards, so that every shard holds one and the sum is the cap.
    pub(super) fn new(max_cached_pages: usize, protected_percent: u8) -> NodeCache {
        let count = SHARDS.min(max_cached_pages).max(1);
        let shards = (0..count)
            .map(|i| {
                let capacity = max_cached_pages / count + usize::from(i < max_cached_pages % count);
                let leaf_capacity = capacity - capacity / 4;
                // A share of the leaves, so that protected leaves alone never
                // fill the leaf share and leave no room for a leaf on probation.
                let protected = Segments::protected_share(leaf_capacity, protected_percent);
                let shard = Shard {
                    table: HashMap::with_capacity_and_hasher(capacity, Default::default()),
                    ids: Vec::with_capacity(capacity),
                    loading: Vec::new(),
                    free: Vec::new(),
                    order: Segments::new(capacity, protected),
                    capacity,
                    leaves: 0,
                    leaf_capacity,
                };
                ShardLock {
                    shard: Mutex::new(shard),
                    loaded: Condvar::new(),
                    capacity,
                    changed: Default::default(),
                }
            })
            .collect();
        NodeCache { shards, versions: AtomicU64::new(1) }
    }

    fn shard(&self, id: u64) -> &ShardLock {
        &self.shards[self.shard_of(id).0]
    }

    /// How many shards the cache has.
    pub(super) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The index of node `id`'s shard, and the shard's capacity.
    pub(super) fn shard_of(&self, id: u64) -> (usize, usize) {
        let index = (id % self.shards.len() as u64) as usize;
        (index, self.shards[index].capacity)
    }

    /// A version no node has had: each load starts a new range of 2^32.
    fn fresh_version(&self) -> u64 {
        self.versions.fetch_add(1, Ordering::Relaxed) << 32
    }

    /// A new cell holding node `id`, changed if `dirty`.
    fn cell(&self, id: u64, node: Node, dirty: bool) -> Arc<Cell> {
        let changed = self.shard(id).changed.clone();
        if dirty {
            changed.lock().insert(id);
        }
        Arc::new(Cell {
            slot: RwLock::new(Slot { node, dirty }),
            version: AtomicU64::new(self.fresh_version()),
            id,
            changed,
        })
    }

    /// How many nodes are cached.
    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().table.len()).sum()
    }

    /// How many cached nodes are leaves.
    pub(super) fn leaves(&self) -> usize {
        self.shards.iter().map(|s| s.lock().leaves).sum()
    }

    /// How many cached nodes are protected (used again by lookups).
    pub(super) fn protected(&self) -> usize {
        self.shards.iter().map(|s| s.lock().order.len_of(Segment::Protected)).sum()
    }

    /// Tells every cursor holding a cached node that it no longer holds:
    /// for a tree a rebuild replaced, before it lets the new one be used,
    /// since the old one is closed later (see `crate::dbm::retire`) and a
    /// cursor steps within its leaf without the tree's lock.
    pub(super) fn retire_all(&self) {
        for lock in &self.shards {
            lock.lock().table.values().for_each(|(_, cell)| retire(cell));
        }
    }

    /// Forgets every node, changed or not (their store was cleared).
    pub(super) fn forget_all(&self) {
        for lock in &self.shards {
            lock.lock().clear();
            lock.changed.lock().clear();
        }
    }
}

/// What [`Tree::peek_or_claim`] finds of a node.
pub(super) enum Found<'c> {
    /// Cached: its cell, not counted and its order unchanged, as
    /// [`Tree::peek`] leaves it.
    Cached(Arc<Cell>),
    /// Not cached, and now claimed for the caller to read, as [`Tree::load`]
    /// claims a node it reads.
    Claimed(Claim<'c>),
    /// Another thread is reading it.
    Loading,
}

/// A thread's mark on a node it loads: on drop, however the load ended,
/// the node is no longer marked loading and its waiters wake.
pub(super) struct Claim<'c> {
    lock: &'c ShardLock,
    id: u64,
    /// Still on the shard's loading list.
    listed: bool,
}

impl Claim<'_> {
    /// Takes the node off the loading list, under the shard's lock the
    /// caller holds (so that it is cached in the same hold).
    fn unlist(&mut self, shard: &mut Shard) {
        shard.loading.retain(|&id| id != self.id);
        self.listed = false;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.listed {
            let mut shard = self.lock.lock();
            shard.loading.retain(|&id| id != self.id);
        }
        self.lock.loaded.notify_all();
    }
}

impl Tree {
    /// The node `id` if it is cached, as a use of it by a lookup that
    /// is to come would leave it: not counted, its order unchanged.
    pub(super) fn peek(&self, id: u64) -> Option<Arc<Cell>> {
        self.cache.shard(id).lock().get(id).map(|(_, cell)| cell.clone())
    }

    /// Counts a load of the cached node `id` and records the use, as
    /// [`Tree::load`] does on a hit.
    pub(super) fn touch(&self, id: u64) {
        let mut shard = self.cache.shard(id).lock();
        if let Some((slot, _)) = shard.get(id) {
            shard.order.touch(slot, in_scan());
        }
        count_node(true);
    }

    /// What a batch finds of node `id` before it reads the store. Under
    /// the shared hold a lone load may claim a node between a batch's
    /// routing and its read; claiming keeps the two from caching it twice.
    pub(super) fn peek_or_claim(&self, id: u64) -> Found<'_> {
        let lock = self.cache.shard(id);
        let mut shard = lock.lock();
        if let Some((_, cell)) = shard.get(id) {
            return Found::Cached(cell.clone());
        }
        if shard.loading.contains(&id) {
            return Found::Loading;
        }
        shard.loading.push(id);
        Found::Claimed(Claim { lock, id, listed: true })
    }

    /// Caches `node`, just read from the store for `claim`, and evicts as a
    /// load does. Dropping the claim afterwards wakes the node's waiters.
    pub(super) fn cache_claimed(&self, claim: &mut Claim<'_>, node: Node) -> Result<Arc<Cell>> {
        let cell = self.cache.cell(claim.id, node, false);
        let mut shard = claim.lock.lock();
        claim.unlist(&mut shard);
        shard.put(claim.id, cell.clone());
        self.evict(&mut shard)?;
        Ok(cell)
    }

    /// Evicts what the shards of `ids` hold beyond their capacity.
    pub(super) fn trim_shards_of(&self, ids: impl Iterator<Item = u64>) -> Result<()> {
        let mut done = vec![false; self.cache.shards.len()];
        for id in ids {
            let (index, _) = self.cache.shard_of(id);
            if !std::mem::replace(&mut done[index], true) {
                self.evict(&mut self.cache.shards[index].lock())?;
            }
        }
        Ok(())
    }

    /// The node `id`, from the cache or the store.
    ///
    /// The shard's lock is not held while the store is read: lookups of
    /// other nodes of the shard go on meanwhile, and only those that want
    /// this node wait for it (marked loading, see [`Claim`]).
    ///
    /// Why the copy read from the store is the newest and may be cached:
    /// under the tree's shared hold a node enters the cache only here and
    /// leaves it only by eviction, which writes a changed node back while
    /// holding its shard's lock and drops only a cell no one holds; new
    /// nodes, discards, `forget_all` and flushes happen only under the
    /// exclusive hold, where the holder is the one thread loading. A node
    /// marked loading is, from the check that found it missing until it is
    /// cached, neither cached nor held by anyone (an evicted cell had no
    /// holder), and no one else caches it: so nothing writes it back, and
    /// the stored copy cannot change under the read nor be newer than what
    /// is put in. Nor can it have been discarded: a discard needs the
    /// exclusive hold, which waits for this load's shared hold to end.
    pub(super) fn load(&self, id: u64) -> Result<Arc<Cell>> {
        let lock = self.cache.shard(id);
        let mut shard = lock.lock();
        loop {
            // The table and the order apart, so that one lookup serves both.
            let Shard { table, order, .. } = &mut *shard;
            if let Some((slot, cell)) = table.get(&id) {
                // The cell's lines (seldom in the CPU's cache for a leaf)
                // load while the order is kept, instead of one after another
                // from the reference count's increment on: a locked write,
                // which the loads after it wait behind.
                crate::sys::prefetch_lines(Arc::as_ptr(cell).cast(), std::mem::size_of::<Cell>());
                order.touch(*slot, in_scan());
                let cell = cell.clone();
                count_node(true);
                return Ok(cell);
            }
            if !shard.loading.contains(&id) {
                break;
            }
            // Another thread reads it: wait for its end, then look again
            // (it may have failed, or the node may be gone again).
            lock.loaded.wait(&mut shard);
        }
        count_node(false);
        shard.loading.push(id);
        drop(shard);
        let mut claim = Claim { lock, id, listed: true };
        let node = self.read_node(id)?;
        let cell = self.cache.cell(id, node, false);
        let mut shard = lock.lock();
        claim.unlist(&mut shard);
        shard.put(id, cell.clone());
        self.evict(&mut shard)?;
        Ok(cell)
    }

    /// Node `id` read from the store and decoded.
    fn read_node(&self, id: u64) -> Result<Node> {
        self.node_reads.single.fetch_add(1, Ordering::Relaxed);
        let path = self.store.path().unwrap_or(Path::new(""));
        self.read_page(&node_key(id), |page| Node::decode(id, page, path, Some(self.cmp)))?
            .ok_or_else(|| self.broken(format!("node {id} is missing")))?
            .inspect_err(|_| self.healthy.store(false, Ordering::Release))
    }

    /// Puts a new node in the cache. It evicts nothing, and so cannot fail:
    /// a split puts its new nodes in halfway through changing the tree, where
    /// a failed write-back would leave the tree half changed. The caller
    /// calls [`Tree::trim`] once the tree is whole again.
    pub(super) fn insert(&self, id: u64, node: Node, dirty: bool) -> Arc<Cell> {
        let cell = self.cache.cell(id, node, dirty);
        self.cache.shard(id).lock().put(id, cell.clone());
        cell
    }

    /// Evicts the nodes every shard holds beyond its capacity.
    pub(super) fn trim(&self) -> Result<()> {
        self.cache.shards.iter().try_for_each(|shard| self.evict(&mut shard.lock()))
    }

    /// Drops the nodes the policy evicts first while the shard holds more
    /// than it may ([`Shard::over`]), writing back the changed ones. A node someone
    /// holds stays (it may be changing); the walk passes it by.
    fn evict(&self, shard: &mut Shard) -> Result<()> {
        let mut at = shard.order.victim();
        while shard.over() && at != NIL {
            // Not over the capacity, so over the leaf share only: only leaves
            // go, and a protected one (lookups use it again) stays until the
            // capacity itself is full.
            let leaves_only = shard.order.len() <= shard.capacity;
            if leaves_only && shard.order.segment(at) == Some(Segment::Protected) {
                break;
            }
            let next = shard.order.next_victim(at);
            let id = shard.ids[at as usize].expect("a listed slot holds a node");
            let (_, cell) = &shard.table[&id];
            if (!leaves_only || is_leaf_id(id)) && Arc::strong_count(cell) == 1 {
                self.write_back(id, cell)?;
                shard.remove(id);
            }
            at = next;
        }
        Ok(())
    }

    fn write_back(&self, id: u64, cell: &Cell) -> Result<()> {
        let mut slot = cell.write();
        if slot.dirty {
            self.write_page(&node_key(id), |page| slot.node.encode(page))?;
            slot.dirty = false;
            cell.changed.lock().remove(&id);
        }
        Ok(())
    }

    /// Forgets node `id` (merged away).
    pub(super) fn discard(&self, id: u64) -> Result<()> {
        let lock = self.cache.shard(id);
        lock.lock().remove(id);
        lock.changed.lock().remove(&id);
        self.store.remove(&node_key(id)).map(|_| ())
    }

    /// Writes every changed node and the tree's figures to the store.
    pub(super) fn flush(&self) -> Result<()> {
        for lock in &self.cache.shards {
            let ids: Vec<u64> = lock.changed.lock().iter().copied().collect();
            for id in ids {
                let cell = lock.lock().get(id).map(|(_, cell)| cell.clone());
                match cell {
                    Some(cell) => self.write_back(id, &cell)?,
                    // Not cached: no changed copy of it is left to write.
                    None => {
                        lock.changed.lock().remove(&id);
                    }
                }
            }
        }
        let meta = *self.meta.lock();
        self.write_page(FIGURES_KEY, |page| meta.encode(self, page))
    }
}
