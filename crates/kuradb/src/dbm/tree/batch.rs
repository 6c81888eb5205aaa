//! Batched lookups: [`Tree::apply_multi`], what `process_multi` does with
//! its keys, loads the leaves they need that are not cached through one
//! multi-key read of the node store, so that the store can send their
//! device reads together, and then carries out each key's answer as
//! [`Tree::apply`] would.
//!
//! The keys go in runs. A run's keys are routed first: each descends
//! through the inner nodes (loaded one by one as a single lookup loads
//! them) to its leaf's id. The run's leaves that are cached are held; those
//! that are not are read together, decoded, cached and held. Each key's
//! answer is then carried out in its leaf, in the keys' order. A run ends
//! before a leaf that would make the run hold more nodes of one cache shard
//! than the shard's capacity, so held nodes never keep a shard past its
//! share of `max_cached_pages` (eviction passes by held nodes): however
//! many leaves a call needs, the cap holds.
//!
//! The results and errors are those of one `apply` per key, in order: a
//! read or decode failure in the batch is not reported there; the key whose
//! leaf failed loads it again on its own when its turn comes, after the
//! keys before it, and fails as a lone lookup would. A rebalance (a
//! writable answer leaving a leaf too large or small) may move keys to
//! other leaves, so the run's later keys descend afresh. The hit and miss
//! counts and the cache's order are those of the lone lookups too: a leaf
//! read by the batch counts as a miss at its first key and enters on
//! probation; the next key that uses it counts a hit and protects it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLockReadGuard;

use super::cache::{Cell, Found, Slot};
use super::page::node_key;
use super::state::Tree;
use super::MAX_DEPTH;
use crate::caching::count_node;
use crate::dbm::tree_node::{is_leaf_id, Node, Probe};
use crate::dbm::{Dbm, MultiProcessor};
use crate::error::{Error, Result};

/// How the tree has read nodes from its store, for `inspect` and tests.
#[derive(Default)]
pub(super) struct NodeReads {
    /// Reads of one node (a lookup's miss).
    pub single: AtomicU64,
    /// Multi-key reads of a batch's leaves.
    pub batches: AtomicU64,
    /// Nodes read by those.
    pub batched: AtomicU64,
}

/// A leaf a run needs.
struct RunLeaf {
    id: u64,
    /// Held from routing to the run's end; `None` if it could not be read
    /// by the batch (the keys load it on their own).
    cell: Option<Arc<Cell>>,
    /// How the next key that uses it counts.
    next_use: NextUse,
}

/// How a key's use of its run's leaf counts, so that the hit and miss
/// counts and the cache's order are those of one lookup per key.
#[derive(Clone, Copy, PartialEq)]
enum NextUse {
    /// Cached before the run, or used by an earlier key: a hit.
    Hit,
    /// Read by the batch and not used yet: the miss.
    Miss,
    /// Loaded on its own (by [`Tree::load`], which counted it) and not
    /// used yet.
    Counted,
}

/// A run of keys: `leaf_of[j]` indexes `leaves` for the run's j-th key,
/// `None` where the key could not be routed (it goes through `apply`).
struct Run {
    leaf_of: Vec<Option<usize>>,
    leaves: Vec<RunLeaf>,
    /// An eviction failed while caching the batch's leaves: the run ends
    /// before the first key of the leaf being cached, and the call answers
    /// this error there, as that key's lone load would have.
    failed: Option<Error>,
}

impl Tree {
    /// Carries out `f`'s answers for `keys` in order, loading their leaves
    /// in batches. The caller holds the tree exclusively.
    pub(super) fn apply_multi(
        &self,
        keys: &[&[u8]],
        writable: bool,
        f: &mut MultiProcessor<'_>,
    ) -> Result<()> {
        let mut done = 0;
        while done < keys.len() {
            let mut run = self.route(&keys[done..]);
            self.read_leaves(&mut run);
            let mut reshaped = false;
            for (j, slot) in run.leaf_of.iter().enumerate() {
                let i = done + j;
                let key = keys[i];
                let mut g = |value: Option<&[u8]>| f(i, key, value);
                let leaf = slot.and_then(|l| run.leaves.get_mut(l)).filter(|_| !reshaped);
                let unbalanced = match leaf {
                    Some(RunLeaf { id, cell: Some(cell), next_use }) => {
                        self.count_use(*id, next_use);
                        self.apply_in(cell, key, writable, &mut g)?
                    }
                    _ => self.apply(key, writable, &mut g)?,
                };
                if unbalanced {
                    self.rebalance(key)?;
                    reshaped = true;
                }
            }
            done += run.leaf_of.len();
            let failed = run.failed.take();
            let trimmed = self.let_go(run);
            if let Some(e) = failed {
                return Err(e);
            }
            trimmed?;
        }
        Ok(())
    }

    /// Answers `f` for `keys`, changing nothing, under the tree's shared
    /// hold, so that the batches of many threads and lone lookups go on
    /// together and wait for the device together. The call's leaves are
    /// loaded as a run's are (a leaf another thread is reading is waited
    /// for, as a lone load waits), then read-locked together, in id order,
    /// while every key is answered in turn: the call sees its keys at one
    /// moment, as under the exclusive hold. A lone change takes one leaf's
    /// lock and a reshaping takes the exclusive hold, so none can wait for
    /// this call while it waits for them.
    ///
    /// Answers false, having answered no key, where the call needs more
    /// than one run, or a key's leaf could not be routed or loaded: the
    /// caller then takes the exclusive path ([`Tree::apply_multi`]), which
    /// answers such a key's error in its turn.
    pub(super) fn read_multi_shared(&self, keys: &[&[u8]], f: &mut MultiProcessor<'_>) -> Result<bool> {
        if keys.is_empty() {
            return Ok(true);
        }
        let mut run = self.route(keys);
        if run.leaf_of.len() < keys.len() || run.leaf_of.contains(&None) {
            self.let_go(run)?;
            return Ok(false);
        }
        self.read_leaves(&mut run);
        for l in 0..run.leaves.len() {
            if run.leaves[l].cell.is_some() || !run.leaf_of.contains(&Some(l)) {
                continue;
            }
            match self.load(run.leaves[l].id) {
                Ok(cell) => {
                    run.leaves[l].cell = Some(cell);
                    run.leaves[l].next_use = NextUse::Counted;
                }
                Err(_) => {
                    self.let_go(run)?;
                    return Ok(false);
                }
            }
        }
        // Counted in the keys' order before the leaves are locked, so that
        // no shard lock is taken while they are held.
        for at in &run.leaf_of {
            let leaf = &mut run.leaves[at.expect("every key of the call was routed")];
            self.count_use(leaf.id, &mut leaf.next_use);
        }
        let mut order: Vec<usize> =
            (0..run.leaves.len()).filter(|&l| run.leaf_of.contains(&Some(l))).collect();
        order.sort_unstable_by_key(|&l| run.leaves[l].id);
        let answered = {
            let mut slots: Vec<Option<RwLockReadGuard<'_, Slot>>> = run.leaves.iter().map(|_| None).collect();
            for l in order {
                slots[l] = run.leaves[l].cell.as_ref().map(|cell| cell.read());
            }
            run.leaf_of.iter().enumerate().try_for_each(|(i, at)| {
                let l = at.expect("every key of the call was routed");
                let slot = slots[l].as_ref().expect("every leaf of the call was loaded");
                self.answer_read(&slot.node, keys[i], &mut |value| f(i, keys[i], value))
            })
        };
        let failed = run.failed.take();
        let trimmed = self.let_go(run);
        answered?;
        if let Some(e) = failed {
            return Err(e);
        }
        trimmed.map(|()| true)
    }

    /// Lets the run's leaves go and trims their shards, which held nodes
    /// may have kept past capacity.
    fn let_go(&self, run: Run) -> Result<()> {
        let held: Vec<u64> = run.leaves.iter().map(|l| l.id).collect();
        drop(run);
        self.trim_shards_of(held.into_iter())
    }

    /// Routes a run of `keys` from the first: each key's leaf, the cached
    /// ones held. At least one key.
    fn route(&self, keys: &[&[u8]]) -> Run {
        let mut run = Run { leaf_of: Vec::new(), leaves: Vec::new(), failed: None };
        let mut held = vec![0usize; self.cache.shard_count()];
        for key in keys {
            let Ok(id) = self.leaf_id(key) else {
                // Its lone descent answers the error, after the keys before it.
                if run.leaf_of.is_empty() {
                    run.leaf_of.push(None);
                }
                break;
            };
            let known = run.leaves.iter().position(|l| l.id == id);
            let at = match known {
                Some(at) => at,
                None => {
                    let (shard, capacity) = self.cache.shard_of(id);
                    if held[shard] == capacity && !run.leaf_of.is_empty() {
                        break;
                    }
                    held[shard] += 1;
                    let cell = self.peek(id);
                    run.leaves.push(RunLeaf { id, cell, next_use: NextUse::Hit });
                    run.leaves.len() - 1
                }
            };
            run.leaf_of.push(Some(at));
        }
        run
    }

    /// The id of the leaf where `key` belongs, through the inner nodes.
    fn leaf_id(&self, key: &[u8]) -> Result<u64> {
        let mut id = self.meta.lock().root;
        for _ in 0..MAX_DEPTH {
            // Ids say the kind: a leaf's is below INNER_BASE, and a node
            // whose page says otherwise does not decode.
            if is_leaf_id(id) {
                return Ok(id);
            }
            let cell = self.load(id)?;
            id = match &cell.read().node {
                Node::Inner(inner) => inner.children[inner.keys.child_index(&Probe::new(key, self.cmp))],
                Node::Leaf(_) => return Ok(id),
            };
        }
        Err(self.broken("the tree is deeper than any tree can be".to_string()))
    }

    /// Counts a use of the run's leaf `id` as `next_use` says, which then
    /// says a hit.
    fn count_use(&self, id: u64, next_use: &mut NextUse) {
        match std::mem::replace(next_use, NextUse::Hit) {
            NextUse::Hit => self.touch(id),
            NextUse::Miss => count_node(false),
            NextUse::Counted => {}
        }
    }

    /// Reads the run's leaves that are not cached, together, and caches
    /// those that decode. A leaf another thread is reading meanwhile (under
    /// the shared hold) is left to its keys, which wait for that read.
    fn read_leaves(&self, run: &mut Run) {
        let missing: Vec<usize> = (0..run.leaves.len()).filter(|&l| run.leaves[l].cell.is_none()).collect();
        let mut claims = Vec::with_capacity(missing.len());
        for l in missing {
            match self.peek_or_claim(run.leaves[l].id) {
                Found::Cached(cell) => run.leaves[l].cell = Some(cell),
                Found::Claimed(claim) => claims.push((l, claim)),
                Found::Loading => {}
            }
        }
        if claims.is_empty() {
            return;
        }
        let ids: Vec<u64> = claims.iter().map(|(l, _)| run.leaves[*l].id).collect();
        let Ok(nodes) = self.read_nodes(&ids) else { return };
        for ((l, mut claim), node) in claims.into_iter().zip(nodes) {
            let Some(node) = node else { continue };
            match self.cache_claimed(&mut claim, node) {
                Ok(cell) => {
                    run.leaves[l].cell = Some(cell);
                    run.leaves[l].next_use = NextUse::Miss;
                }
                Err(e) => {
                    let first = run.leaf_of.iter().position(|&at| at == Some(l));
                    run.leaf_of.truncate(first.unwrap_or(run.leaf_of.len()));
                    run.failed = Some(e);
                    return;
                }
            }
        }
    }

    /// Nodes `ids`, read from the store by one multi-key read and decoded;
    /// `None` for each that is missing or does not decode.
    fn read_nodes(&self, ids: &[u64]) -> Result<Vec<Option<Node>>> {
        let path = self.store.path().unwrap_or(std::path::Path::new(""));
        let keys: Vec<[u8; 8]> = ids.iter().map(|&id| node_key(id)).collect();
        let pages =
            self.read_pages(&keys, |i, page| Node::decode(ids[i], page, path, Some(self.cmp)).ok())?;
        if ids.len() == 1 {
            self.node_reads.single.fetch_add(1, Ordering::Relaxed);
        } else {
            self.node_reads.batches.fetch_add(1, Ordering::Relaxed);
            self.node_reads.batched.fetch_add(ids.len() as u64, Ordering::Relaxed);
        }
        Ok(pages.into_iter().map(Option::flatten).collect())
    }
}
