//! Finding nodes: the descent from the root to a key's leaf, and the walk
//! along the leaves' links.

use std::cmp::Ordering;
use std::sync::Arc;

use super::cache::{Cell, Slot};
use super::state::Tree;
use super::MAX_DEPTH;
use crate::dbm::tree_node::{Inner, Node, Probe};
use crate::error::Result;

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
            let next = match &cell.slot.read().node {
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
    pub(super) fn each_leaf(&self, mut f: impl FnMut(&mut Slot) -> Result<()>) -> Result<()> {
        let mut id = self.meta.lock().first;
        let mut steps = 0u64;
        let mut last: Option<Vec<u8>> = None;
        while id != 0 {
            let cell = self.load(id)?;
            let mut slot = cell.slot.write();
            if let Node::Leaf(leaf) = &slot.node {
                for i in 0..leaf.len() {
                    let key = leaf.record(i).0;
                    let before = if i == 0 { last.as_deref() } else { Some(leaf.record(i - 1).0) };
                    if before.is_some_and(|before| self.cmp.compare(before, key) != Ordering::Less) {
                        return Err(self.broken(format!("the keys of leaf {id} are out of order")));
                    }
                }
                if leaf.len() > 0 {
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
}
