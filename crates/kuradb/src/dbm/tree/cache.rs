//! The node cache: nodes in sharded segmented LRUs ([`Segments`]) holding
//! at most `max_cached_pages` in all (but for nodes in use, which stay),
//! loaded from the store on a miss and written back when evicted (if
//! changed), at synchronize and at close. A node enters on probation and a
//! second load by a lookup protects it, up to the protected share; loads in
//! a scan (a cursor's walk, `process_each`, a rebuild) promote nothing, so
//! a walk over every leaf leaves the nodes random lookups use.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::page::{node_key, FIGURES_KEY};
use super::state::Tree;
use crate::caching::{count_node, in_scan, IdHasher, Segment, Segments, NIL};
use crate::dbm::tree_node::Node;
use crate::dbm::Dbm;
use crate::error::Result;

/// The most shards of the node cache, each with its own lock.
const SHARDS: usize = 16;

/// One shard: `cells[slot]` is the node `order` knows as `slot`.
struct Shard {
    table: HashMap<u64, u32, IdHasher>,
    cells: Vec<Option<(u64, Arc<Cell>)>>,
    /// Slots emptied by a discard or an eviction, reused before growing.
    free: Vec<u32>,
    order: Segments,
    /// This shard's part of `max_cached_pages`.
    capacity: usize,
}

pub(super) struct NodeCache {
    shards: Vec<Mutex<Shard>>,
    /// The source of [`Slot::version`]s.
    versions: AtomicU64,
}

/// A cached node.
pub(super) struct Cell {
    pub slot: RwLock<Slot>,
}

pub(super) struct Slot {
    pub node: Node,
    /// The node differs from the store.
    pub dirty: bool,
    /// Changes with every change of the node and is never the same for two
    /// loads of it, so a cursor that saw this version may trust what it saw.
    pub version: u64,
}

impl Slot {
    pub(super) fn changed(&mut self) {
        self.dirty = true;
        self.version += 1;
    }
}

impl Shard {
    fn get(&self, id: u64) -> Option<(u32, &Arc<Cell>)> {
        let &slot = self.table.get(&id)?;
        self.cells[slot as usize].as_ref().map(|(_, cell)| (slot, cell))
    }

    /// Puts `cell` in as node `id`, replacing the node's old cell if any.
    fn put(&mut self, id: u64, cell: Arc<Cell>) {
        if let Some(&slot) = self.table.get(&id) {
            self.cells[slot as usize] = Some((id, cell));
            self.order.touch(slot, in_scan());
            return;
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.cells.push(None);
            (self.cells.len() - 1) as u32
        });
        self.cells[slot as usize] = Some((id, cell));
        self.table.insert(id, slot);
        self.order.insert(slot);
    }

    fn remove(&mut self, id: u64) {
        if let Some(slot) = self.table.remove(&id) {
            self.order.remove(slot);
            self.cells[slot as usize] = None;
            self.free.push(slot);
        }
    }

    fn clear(&mut self) {
        let ids: Vec<u64> = self.table.keys().copied().collect();
        ids.into_iter().for_each(|id| self.remove(id));
    }
}

impl NodeCache {
    /// A cache of `max_cached_pages` nodes in all, `protected_percent` of
    /// each shard's share at most protected. Fewer nodes than shards make
    /// fewer shards, so that every shard holds one and the sum is the cap.
    pub(super) fn new(max_cached_pages: usize, protected_percent: u8) -> NodeCache {
        let count = SHARDS.min(max_cached_pages).max(1);
        let shards = (0..count)
            .map(|i| {
                let capacity = max_cached_pages / count + usize::from(i < max_cached_pages % count);
                let protected = Segments::protected_share(capacity, protected_percent);
                Mutex::new(Shard {
                    table: HashMap::with_capacity_and_hasher(capacity, Default::default()),
                    cells: Vec::with_capacity(capacity),
                    free: Vec::new(),
                    order: Segments::new(capacity, protected),
                    capacity,
                })
            })
            .collect();
        NodeCache { shards, versions: AtomicU64::new(1) }
    }

    fn shard(&self, id: u64) -> &Mutex<Shard> {
        &self.shards[(id % self.shards.len() as u64) as usize]
    }

    /// A version no node has had: each load starts a new range of 2^32.
    fn fresh_version(&self) -> u64 {
        self.versions.fetch_add(1, Ordering::Relaxed) << 32
    }

    /// A new cell holding `node`.
    fn cell(&self, node: Node, dirty: bool) -> Arc<Cell> {
        Arc::new(Cell { slot: RwLock::new(Slot { node, dirty, version: self.fresh_version() }) })
    }

    /// How many nodes are cached.
    pub(super) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().table.len()).sum()
    }

    /// How many cached nodes are protected (used again by lookups).
    pub(super) fn protected(&self) -> usize {
        self.shards.iter().map(|s| s.lock().order.len_of(Segment::Protected)).sum()
    }

    /// Forgets every node, changed or not (their store was cleared).
    pub(super) fn forget_all(&self) {
        self.shards.iter().for_each(|s| s.lock().clear());
    }
}

impl Tree {
    /// The node `id` if it is cached.
    pub(super) fn cached(&self, id: u64) -> Option<Arc<Cell>> {
        let mut shard = self.cache.shard(id).lock();
        let (slot, cell) = shard.get(id)?;
        let cell = cell.clone();
        shard.order.touch(slot, in_scan());
        Some(cell)
    }

    /// The node `id`, from the cache or the store.
    pub(super) fn load(&self, id: u64) -> Result<Arc<Cell>> {
        let mut shard = self.cache.shard(id).lock();
        if let Some((slot, cell)) = shard.get(id) {
            let cell = cell.clone();
            shard.order.touch(slot, in_scan());
            count_node(true);
            return Ok(cell);
        }
        count_node(false);
        let path = self.store.path().unwrap_or(Path::new(""));
        let node = self
            .read_page(&node_key(id), |page| Node::decode(id, page, path, Some(self.cmp)))?
            .ok_or_else(|| self.broken(format!("node {id} is missing")))?
            .inspect_err(|_| self.healthy.store(false, Ordering::Release))?;
        let cell = self.cache.cell(node, false);
        shard.put(id, cell.clone());
        self.evict(&mut shard)?;
        Ok(cell)
    }

    /// Puts a new node in the cache. It evicts nothing, and so cannot fail:
    /// a split puts its new nodes in halfway through changing the tree, where
    /// a failed write-back would leave the tree half changed. The caller
    /// calls [`Tree::trim`] once the tree is whole again.
    pub(super) fn insert(&self, id: u64, node: Node, dirty: bool) -> Arc<Cell> {
        let cell = self.cache.cell(node, dirty);
        self.cache.shard(id).lock().put(id, cell.clone());
        cell
    }

    /// Evicts the nodes every shard holds beyond its capacity.
    pub(super) fn trim(&self) -> Result<()> {
        self.cache.shards.iter().try_for_each(|shard| self.evict(&mut shard.lock()))
    }

    /// Drops the nodes the policy evicts first while the shard holds more
    /// than its capacity, writing back the changed ones. A node someone
    /// holds stays (it may be changing); the walk passes it by.
    fn evict(&self, shard: &mut Shard) -> Result<()> {
        let mut at = shard.order.victim();
        while shard.order.len() > shard.capacity && at != NIL {
            let next = shard.order.next_victim(at);
            let (id, cell) = shard.cells[at as usize].as_ref().expect("a listed slot holds a node");
            if Arc::strong_count(cell) == 1 {
                let id = *id;
                self.write_back(id, cell)?;
                shard.remove(id);
            }
            at = next;
        }
        Ok(())
    }

    fn write_back(&self, id: u64, cell: &Cell) -> Result<()> {
        let mut slot = cell.slot.write();
        if slot.dirty {
            self.write_page(&node_key(id), |page| slot.node.encode(page))?;
            slot.dirty = false;
        }
        Ok(())
    }

    /// Forgets node `id` (merged away).
    pub(super) fn discard(&self, id: u64) -> Result<()> {
        self.cache.shard(id).lock().remove(id);
        self.store.remove(&node_key(id)).map(|_| ())
    }

    /// Writes every changed node and the tree's figures to the store.
    pub(super) fn flush(&self) -> Result<()> {
        for shard in &self.cache.shards {
            let cells: Vec<(u64, Arc<Cell>)> = shard.lock().cells.iter().flatten().cloned().collect();
            for (id, cell) in cells {
                self.write_back(id, &cell)?;
            }
        }
        let meta = *self.meta.lock();
        self.write_page(FIGURES_KEY, |page| meta.encode(self, page))
    }
}
