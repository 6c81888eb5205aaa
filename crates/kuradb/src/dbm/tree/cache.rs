//! The node cache: nodes in sharded LRUs holding `max_cached_pages` in all,
//! loaded from the store on a miss and written back when evicted (if
//! changed), at synchronize and at close.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lru::LruCache;
use parking_lot::{Mutex, RwLock};

use super::page::{node_key, FIGURES_KEY};
use super::state::Tree;
use crate::dbm::tree_node::Node;
use crate::dbm::Dbm;
use crate::error::Result;

/// Shards of the node cache, each an LRU with its own lock.
const SHARDS: usize = 16;

type Shard = Mutex<LruCache<u64, Arc<Cell>>>;

pub(super) struct NodeCache {
    shards: Vec<Shard>,
    /// Each shard's share of `max_cached_pages`.
    per_shard: usize,
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

impl NodeCache {
    pub(super) fn new(max_cached_pages: usize) -> NodeCache {
        NodeCache {
            shards: (0..SHARDS).map(|_| Mutex::new(LruCache::unbounded())).collect(),
            per_shard: max_cached_pages.div_ceil(SHARDS).max(1),
            versions: AtomicU64::new(1),
        }
    }

    fn shard(&self, id: u64) -> &Shard {
        &self.shards[(id % SHARDS as u64) as usize]
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
        self.shards.iter().map(|s| s.lock().len()).sum()
    }

    /// Forgets every node, changed or not (their store was cleared).
    pub(super) fn forget_all(&self) {
        self.shards.iter().for_each(|s| s.lock().clear());
    }
}

impl Tree {
    /// The node `id` if it is cached.
    pub(super) fn cached(&self, id: u64) -> Option<Arc<Cell>> {
        self.cache.shard(id).lock().get(&id).cloned()
    }

    /// The node `id`, from the cache or the store.
    pub(super) fn load(&self, id: u64) -> Result<Arc<Cell>> {
        let mut shard = self.cache.shard(id).lock();
        if let Some(cell) = shard.get(&id) {
            return Ok(cell.clone());
        }
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

    /// Evicts the nodes every shard holds beyond its share.
    pub(super) fn trim(&self) -> Result<()> {
        self.cache.shards.iter().try_for_each(|shard| self.evict(&mut shard.lock()))
    }

    /// Drops the least recently used nodes beyond the shard's share, writing
    /// back the changed ones. A node someone holds stays (it may be changing).
    fn evict(&self, shard: &mut LruCache<u64, Arc<Cell>>) -> Result<()> {
        let mut tries = shard.len();
        while shard.len() > self.cache.per_shard && tries > 0 {
            tries -= 1;
            let Some((id, cell)) = shard.pop_lru() else { break };
            if Arc::strong_count(&cell) > 1 {
                shard.put(id, cell);
                continue;
            }
            if let Err(e) = self.write_back(id, &cell) {
                shard.put(id, cell);
                return Err(e);
            }
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
        self.cache.shard(id).lock().pop(&id);
        self.store.remove(&node_key(id)).map(|_| ())
    }

    /// Writes every changed node and the tree's figures to the store.
    pub(super) fn flush(&self) -> Result<()> {
        for shard in &self.cache.shards {
            let cells: Vec<(u64, Arc<Cell>)> = shard.lock().iter().map(|(&id, c)| (id, c.clone())).collect();
            for (id, cell) in cells {
                self.write_back(id, &cell)?;
            }
        }
        let meta = *self.meta.lock();
        self.write_page(FIGURES_KEY, |page| meta.encode(self, page))
    }
}
