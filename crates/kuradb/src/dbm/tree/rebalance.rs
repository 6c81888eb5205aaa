//! Rebalancing: a leaf grown past `max_page_size` splits, one shrunk below a
//! quarter of it merges with a neighbour, and inner nodes split, merge and
//! collapse as their children come and go. All of it runs with the tree
//! held exclusively: inner nodes change nowhere else.
//!
//! A step loads every node it will change before it changes any (a loaded
//! node held here stays cached), and new nodes enter the cache without
//! evicting others; so a failed read or write-back leaves the tree as it was
//! before the step, never half split or half merged. Evictions wait until
//! the tree is whole again.

use std::cmp::Ordering;
use std::sync::Arc;

use super::cache::Cell;
use super::state::Tree;
use super::MAX_DEPTH;
use crate::dbm::tree_node::{record_size, Inner, Leaf, Node, PackedSeparators};
use crate::error::Result;

impl Tree {
    /// Whether `leaf` is too large or too small, so that the tree must be
    /// rebalanced around it.
    pub(super) fn unbalanced(&self, leaf: &Leaf) -> bool {
        self.oversized(leaf) || self.undersized(leaf)
    }

    /// Whether `leaf` must split: a single record stays whole, however large.
    fn oversized(&self, leaf: &Leaf) -> bool {
        leaf.size() > self.max_page_size && leaf.len() > 1
    }

    /// Whether `leaf` should merge with a neighbour.
    fn undersized(&self, leaf: &Leaf) -> bool {
        leaf.size() < self.max_page_size / 4
    }

    /// Splits or merges the leaf of `key` (and its ancestors) as its size
    /// asks. The caller holds the tree exclusively.
    pub(super) fn rebalance(&self, key: &[u8]) -> Result<()> {
        let balanced = self.rebalance_steps(key);
        // Evicted only now: the tree is whole whatever the steps did.
        balanced.and(self.trim())
    }

    fn rebalance_steps(&self, key: &[u8]) -> Result<()> {
        for _ in 0..MAX_DEPTH * 4 {
            let mut path = Vec::new();
            let (id, cell) = self.descend(key, Some(&mut path))?;
            let (over, under) = match &cell.read().node {
                Node::Leaf(leaf) => (self.oversized(leaf), self.undersized(leaf)),
                Node::Inner(_) => return Err(self.broken("a leaf is an inner node".into())),
            };
            drop(cell);
            if over {
                self.split_leaf(&mut path, id, key)?;
            } else if under {
                self.merge_leaf(&mut path, id)?;
                return Ok(());
            } else {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The nodes of `path` (the ancestors of a node), loaded and held so
    /// that they stay cached while the tree changes under them.
    fn hold(&self, path: &[(u64, usize)]) -> Result<Vec<Arc<Cell>>> {
        path.iter().map(|&(id, _)| self.load(id)).collect()
    }

    fn split_leaf(&self, path: &mut Vec<(u64, usize)>, id: u64, key: &[u8]) -> Result<()> {
        let cell = self.load(id)?;
        let _ancestors = self.hold(path)?;
        let next = match &cell.read().node {
            Node::Leaf(leaf) => leaf.next,
            Node::Inner(_) => return Err(self.broken("a leaf is an inner node".into())),
        };
        let _next = if next != 0 { Some(self.load(next)?) } else { None };
        let mut guard = cell.write();
        let slot = &mut *guard;
        let Node::Leaf(leaf) = &mut slot.node else {
            return Err(self.broken("a leaf is an inner node".into()));
        };
        let n = leaf.len();
        // Records arriving in order fill leaves whole: the last leaf, grown at
        // its end, gives up just its last record.
        let at = if leaf.next == 0 && leaf.key(n - 1) == key {
            n - 1
        } else {
            let mut taken = 0;
            let half = leaf.size() / 2;
            leaf.records()
                .position(|(k, v)| {
                    taken += record_size(k, v);
                    taken > half
                })
                .unwrap_or(n - 1)
        };
        let at = at.clamp(1, n - 1);
        let mut meta = self.meta.lock();
        let new_id = meta.next_leaf;
        meta.next_leaf += 1;
        let mut right = leaf.split_off(at);
        // The left half keeps the whole leaf's buffers: give back what it
        // no longer fills, which the cache would hold otherwise.
        leaf.shrink_to_fit();
        right.prev = id;
        right.next = leaf.next;
        let old_next = leaf.next;
        leaf.next = new_id;
        guard.changed();
        let separator = right.key(0).to_vec();
        drop(guard);
        if old_next == 0 {
            meta.last = new_id;
        }
        drop(meta);
        if old_next != 0 {
            self.set_link(old_next, |l| l.prev = new_id)?;
        }
        self.insert(new_id, Node::Leaf(right), true);
        self.insert_into_parent(path, id, separator, new_id)
    }

    fn set_link(&self, id: u64, f: impl FnOnce(&mut Leaf)) -> Result<()> {
        let cell = self.load(id)?;
        let mut slot = cell.write();
        match &mut slot.node {
            Node::Leaf(leaf) => f(leaf),
            Node::Inner(_) => return Err(self.broken(format!("leaf link {id} is an inner node"))),
        }
        slot.changed();
        Ok(())
    }

    fn insert_into_parent(
        &self,
        path: &mut Vec<(u64, usize)>,
        left: u64,
        key: Vec<u8>,
        right: u64,
    ) -> Result<()> {
        let Some((parent, i)) = path.pop() else {
            let mut meta = self.meta.lock();
            let id = meta.next_inner;
            meta.next_inner += 1;
            meta.root = id;
            meta.level += 1;
            drop(meta);
            self.insert(
                id,
                Node::Inner(Inner { keys: PackedSeparators::of(&[key]), children: vec![left, right] }),
                true,
            );
            return Ok(());
        };
        let cell = self.load(parent)?;
        let mut guard = cell.write();
        guard.changed();
        let Node::Inner(inner) = &mut guard.node else {
            return Err(self.broken("a parent is a leaf".into()));
        };
        inner.insert(i, &key, right);
        if inner.children.len() <= self.max_branches {
            return Ok(());
        }
        let (up, right) = inner.split_off(inner.keys.len() / 2 + 1);
        drop(guard);
        let mut meta = self.meta.lock();
        let new_id = meta.next_inner;
        meta.next_inner += 1;
        drop(meta);
        self.insert(new_id, Node::Inner(right), true);
        self.insert_into_parent(path, parent, up, new_id)
    }

    /// Merges a small leaf with a neighbour under the same parent, if the two fit in one.
    fn merge_leaf(&self, path: &mut Vec<(u64, usize)>, id: u64) -> Result<()> {
        let Some(&(parent, i)) = path.last() else { return Ok(()) };
        let parent_cell = self.load(parent)?;
        let (left, right, sep) = {
            let slot = parent_cell.read();
            let Node::Inner(inner) = &slot.node else { return Err(self.broken("a parent is a leaf".into())) };
            if i > 0 {
                (inner.children[i - 1], id, i - 1)
            } else if i + 1 < inner.children.len() {
                (id, inner.children[i + 1], i)
            } else {
                return Ok(());
            }
        };
        let (left_cell, right_cell) = (self.load(left)?, self.load(right)?);
        let next = match &right_cell.read().node {
            Node::Leaf(r) => r.next,
            Node::Inner(_) => return Err(self.broken("a leaf's neighbour is an inner node".into())),
        };
        let _next = if next != 0 { Some(self.load(next)?) } else { None };
        {
            let mut ls = left_cell.write();
            let mut rs = right_cell.write();
            let (Node::Leaf(l), Node::Leaf(r)) = (&mut ls.node, &mut rs.node) else {
                return Err(self.broken("a leaf's neighbour is an inner node".into()));
            };
            if l.size() + r.size() > self.max_page_size {
                return Ok(());
            }
            // A damaged file may hold a key outside the range its parent
            // routes to its leaf (a load checks the order within a node
            // only). Merged, the leaf's keys would no longer rise: its
            // searches would miss records, and a cursor, which steps within
            // a leaf trusting the order, could go round for ever.
            if l.len() > 0 && r.len() > 0 && self.cmp.compare(l.key(l.len() - 1), r.key(0)) != Ordering::Less
            {
                return Err(self.broken(format!("the keys of leaves {left} and {right} are out of order")));
            }
            l.append(r);
            l.next = r.next;
            ls.changed();
        }
        drop((left_cell, right_cell));
        if next == 0 {
            self.meta.lock().last = left;
        } else {
            self.set_link(next, |l| l.prev = left)?;
        }
        {
            let mut slot = parent_cell.write();
            if let Node::Inner(inner) = &mut slot.node {
                inner.keys.remove(sep);
                inner.children.remove(sep + 1);
            }
            slot.changed();
        }
        drop(parent_cell);
        // Last: the tree no longer reaches the node if its removal fails.
        self.discard(right)?;
        path.pop();
        self.shrink_inner(path, parent)
    }

    /// Collapses a root with one child, and merges a small inner node with a
    /// neighbour under the same parent if the two fit in one.
    fn shrink_inner(&self, path: &mut Vec<(u64, usize)>, id: u64) -> Result<()> {
        let cell = self.load(id)?;
        let (children, only) = match &cell.read().node {
            Node::Inner(inner) => (inner.children.len(), inner.children[0]),
            Node::Leaf(_) => return Ok(()),
        };
        drop(cell);
        let Some(&(parent, i)) = path.last() else {
            if children == 1 {
                let mut meta = self.meta.lock();
                meta.root = only;
                meta.level -= 1;
                drop(meta);
                self.discard(id)?;
            }
            return Ok(());
        };
        if children >= (self.max_branches / 4).max(2) {
            return Ok(());
        }
        let parent_cell = self.load(parent)?;
        let (left, right, sep_at, sep) = {
            let slot = parent_cell.read();
            let Node::Inner(p) = &slot.node else { return Err(self.broken("a parent is a leaf".into())) };
            if i > 0 {
                (p.children[i - 1], id, i - 1, p.keys[i - 1].to_vec())
            } else if i + 1 < p.children.len() {
                (id, p.children[i + 1], i, p.keys[i].to_vec())
            } else {
                return Ok(());
            }
        };
        let (left_cell, right_cell) = (self.load(left)?, self.load(right)?);
        {
            let mut ls = left_cell.write();
            let mut rs = right_cell.write();
            let (Node::Inner(l), Node::Inner(r)) = (&mut ls.node, &mut rs.node) else {
                return Err(self.broken("an inner node's neighbour is a leaf".into()));
            };
            if l.children.len() + r.children.len() > self.max_branches {
                return Ok(());
            }
            l.merge(&sep, r);
            ls.changed();
        }
        drop((left_cell, right_cell));
        {
            let mut slot = parent_cell.write();
            if let Node::Inner(p) = &mut slot.node {
                p.keys.remove(sep_at);
                p.children.remove(sep_at + 1);
            }
            slot.changed();
        }
        drop(parent_cell);
        // Last: the tree no longer reaches the node if its removal fails.
        self.discard(right)?;
        path.pop();
        self.shrink_inner(path, parent)
    }
}
