//! Finding nodes: the descent from the root to a key's leaf, and the walk
//! along the leaves' links.

use std::cmp::Ordering;
use std::sync::Arc;

use super::cache::{Cell, SlotWrite};
use super::state::Tree;
use super::MAX_DEPTH;
use crate::dbm::tree_node::{Inner, Node, Probe, INNER_BASE};
use crate::error::Result;

/// A node still to check: its id, depth, and the bounds its parents route
/// to it (at or above the first, below the second).
type Pending = (u64, usize, Option<Vec<u8>>, Option<Vec<u8>>);

impl Tree {
    fn child_index(&self, inner: &Inner, key: &[u8]) -> usize {
        inner.keys.child_index(&Probe::new(key, self.cmp))
    }

    /// The leaf where `key` belongs, with the inner nodes above it (and the
    /// child taken in each), root first.
    pub(super) fn descend(
        &self,
        key: &[u8],
        path: Option<&mut Vec<(u64, usize)>>,
    ) -> Result<(u64, Arc<Cell>)> {
        let mut id = self.meta.lock().root;
        let mut path = path;
        for _ in 0..MAX_DEPTH {
            let cell = self.load(id)?;
            let next = match &cell.read().node {
                Node::Leaf(_) => None,
                Node::Inner(inner) => {
                    let i = self.child_index(inner, key);
                    if let Some(p) = path.as_deref_mut() {
                        p.push((id, i));
                    }
                    Some(inner.children[i])
                }
            };
            match next {
                None => return Ok((id, cell)),
                Some(child) => id = child,
            }
        }
        Err(self.broken("the tree is deeper than any tree can be".to_string()))
    }

    /// More steps than there are leaves (every leaf id is below `next_leaf`):
    /// a walk along the links that takes this many loops.
    pub(super) fn leaf_bound(&self) -> u64 {
        self.meta.lock().next_leaf + 1
    }

    /// Calls `f` with every leaf, first to last. The caller holds the tree
    /// exclusively. Keys out of order along the leaves (a damaged file) are
    /// a broken-data error: a rebuild copying them would bring back a
    /// record a lookup had removed, or drop one.
    pub(super) fn each_leaf(&self, mut f: impl FnMut(&mut SlotWrite<'_>) -> Result<()>) -> Result<()> {
        let mut id = self.meta.lock().first;
        let mut steps = 0u64;
        let mut last: Option<Vec<u8>> = None;
        while id != 0 {
            let cell = self.load(id)?;
            let mut slot = cell.write();
            // Within a leaf the keys rise: every load checks that
            // (`Node::decode`), and changes in memory keep it. Only the step
            // from one leaf to the next is left to check.
            if let Node::Leaf(leaf) = &slot.node {
                if leaf.len() > 0 {
                    let first = leaf.record(0).0;
                    if last.as_deref().is_some_and(|before| self.cmp.compare(before, first) != Ordering::Less)
                    {
                        return Err(self.broken(format!("the keys of leaf {id} are out of order")));
                    }
                    last = Some(leaf.record(leaf.len() - 1).0.to_vec());
                }
            }
            f(&mut slot)?;
            id = match &slot.node {
                Node::Leaf(leaf) => leaf.next,
                Node::Inner(_) => return Err(self.broken("a leaf link is an inner node".into())),
            };
            steps += 1;
            if steps > self.leaf_bound() {
                return Err(self.broken("the leaves' links loop".into()));
            }
        }
        Ok(())
    }

    /// Calls `f` with every leaf below the root, first to last, as lookups
    /// reach them (not along the links), and answers their ids in that order.
    /// The caller holds the tree exclusively. A damaged structure is a
    /// broken-data error: a node that does not load, nodes that loop, an
    /// inner node whose children and separators do not match, keys out of
    /// order in a leaf or outside the range its parents route to it (a
    /// lookup would miss them where a copy would take them).
    pub(super) fn each_leaf_below_root(
        &self,
        mut f: impl FnMut(&mut SlotWrite<'_>) -> Result<()>,
    ) -> Result<Vec<u64>> {
        let meta = *self.meta.lock();
        let nodes = meta.next_leaf + meta.next_inner.saturating_sub(INNER_BASE);
        // Children are pushed last first, so the leaves come off in order;
        // each carries the bounds its parents route to it.
        let mut stack: Vec<Pending> = vec![(meta.root, 1, None, None)];
        let (mut leaves, mut visited) = (Vec::new(), 0u64);
        while let Some((id, depth, lower, upper)) = stack.pop() {
            visited += 1;
            if depth > MAX_DEPTH || visited > nodes {
                return Err(self.broken("its nodes loop".into()));
            }
            let cell = self.load(id)?;
            let mut slot = cell.write();
            match &slot.node {
                Node::Leaf(leaf) => {
                    // The keys rise within the leaf (checked at every load),
                    // so its first and last keys bound them all.
                    if leaf.len() > 0 {
                        let (first, last) = (leaf.record(0).0, leaf.record(leaf.len() - 1).0);
                        let below =
                            lower.as_deref().is_some_and(|l| self.cmp.compare(first, l) == Ordering::Less);
                        let above =
                            upper.as_deref().is_some_and(|u| self.cmp.compare(last, u) != Ordering::Less);
                        if below || above {
                            return Err(self.broken(format!(
                                "the keys of leaf {id} are outside the range its parent gives it"
                            )));
                        }
                    }
                    leaves.push(id);
                }
                Node::Inner(inner) => {
                    let keys: Vec<&[u8]> = inner.keys.iter().collect();
                    if inner.children.len() != keys.len() + 1 {
                        return Err(self.broken(format!(
                            "inner node {id} has {} children for {} separators",
                            inner.children.len(),
                            keys.len()
                        )));
                    }
                    for (j, &child) in inner.children.iter().enumerate().rev() {
                        let low = if j == 0 { lower.clone() } else { Some(keys[j - 1].to_vec()) };
                        let high = keys.get(j).map_or_else(|| upper.clone(), |k| Some(k.to_vec()));
                        stack.push((child, depth + 1, low, high));
                    }
                }
            }
            if matches!(slot.node, Node::Leaf(_)) {
                f(&mut slot)?;
            }
        }
        Ok(leaves)
    }
}
