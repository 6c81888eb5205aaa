//! The shape of BabyDbm's tree: splitting and merging nodes along a key's
//! path after a change, and rebuilding the whole tree compactly. None of it
//! changes a record; it moves records between leaves, each move bumping
//! the leaves' versions so that cursors look their keys up again.

use std::sync::Arc;

use super::{each_leaf, BabyDbm, Inner, LeafCell, Node};
use crate::dbm::tree_node::{record_size, Leaf, Separators};

/// Rebalancing steps after one change: more than any tree's depth needs.
const MAX_FIXES: usize = 64;

impl BabyDbm {
    /// Splits or merges along `key`'s path until every node there is in
    /// bounds (or nothing more can be done). The shape is held exclusively.
    pub(super) fn rebalance(&self, root: &mut Node, key: &[u8]) {
        for _ in 0..MAX_FIXES {
            let mut changed = self.fix(root, key, true);
            if let Some((sep, right)) = self.split(root, key, true) {
                let left = std::mem::replace(
                    root,
                    Node::Inner(Box::new(Inner { keys: Separators::default(), children: vec![] })),
                );
                *root = Node::Inner(Box::new(Inner {
                    keys: Separators::of(vec![sep]),
                    children: vec![left, right],
                }));
                changed = true;
            }
            if let Node::Inner(inner) = root {
                if inner.children.len() == 1 {
                    let only = inner.children.pop();
                    *root = only.unwrap_or_else(|| Node::Leaf(Arc::default()));
                    changed = true;
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// Fixes the child of `node` on `key`'s path (after its own children);
    /// answers whether anything changed.
    fn fix(&self, node: &mut Node, key: &[u8], rightmost: bool) -> bool {
        let Node::Inner(inner) = node else { return false };
        let i = self.child_index(inner, key);
        let last = i + 1 == inner.children.len();
        let mut changed = self.fix(&mut inner.children[i], key, rightmost && last);
        if let Some((sep, right)) = self.split(&mut inner.children[i], key, rightmost && last) {
            inner.keys.insert(i, sep);
            inner.children.insert(i + 1, right);
            return true;
        }
        if self.small(&inner.children[i]) && inner.children.len() > 1 {
            let left = if i > 0 { i - 1 } else { i };
            changed |= self.merge(inner, left);
        }
        changed
    }

    fn small(&self, node: &Node) -> bool {
        match node {
            Node::Leaf(cell) => cell.slot.read().leaf.size() < self.max_page_size / 4,
            Node::Inner(inner) => inner.children.len() < (self.max_branches / 4).max(2),
        }
    }

    /// Splits `node` if it is too large: answers the separator and the new right node.
    fn split(&self, node: &mut Node, key: &[u8], rightmost: bool) -> Option<(Box<[u8]>, Node)> {
        match node {
            Node::Leaf(cell) => {
                let mut slot = cell.slot.write();
                let leaf = &mut slot.leaf;
                let n = leaf.len();
                if leaf.size() <= self.max_page_size || n < 2 {
                    return None;
                }
                // Records arriving in order fill leaves whole: the last leaf,
                // grown at its end, gives up just its last record.
                let at = if rightmost && leaf.key(n - 1) == key {
                    n - 1
                } else {
                    let (mut taken, half) = (0, leaf.size() / 2);
                    leaf.records()
                        .position(|(k, v)| {
                            taken += record_size(k, v);
                            taken > half
                        })
                        .unwrap_or(n - 1)
                };
                let mut right = leaf.split_off(at.clamp(1, n - 1));
                leaf.shrink_to_fit();
                right.shrink_to_fit();
                slot.changed();
                let sep: Box<[u8]> = right.key(0).into();
                Some((sep, LeafCell::node(right)))
            }
            Node::Inner(inner) => {
                if inner.children.len() <= self.max_branches {
                    return None;
                }
                let mid = inner.keys.len() / 2;
                let keys = inner.keys.split_off(mid + 1);
                let up = inner.keys.pop()?;
                let children = inner.children.split_off(mid + 1);
                Some((up, Node::Inner(Box::new(Inner { keys, children }))))
            }
        }
    }

    /// Merges children `i` and `i + 1` of `inner` if they fit in one.
    fn merge(&self, inner: &mut Inner, i: usize) -> bool {
        if i + 1 >= inner.children.len() {
            return false;
        }
        let fits = match (&inner.children[i], &inner.children[i + 1]) {
            (Node::Leaf(l), Node::Leaf(r)) => {
                l.slot.read().leaf.size() + r.slot.read().leaf.size() <= self.max_page_size
            }
            (Node::Inner(l), Node::Inner(r)) => l.children.len() + r.children.len() <= self.max_branches,
            _ => false,
        };
        if !fits {
            return false;
        }
        let sep = inner.keys.remove(i);
        let right = inner.children.remove(i + 1);
        match (&mut inner.children[i], right) {
            (Node::Leaf(l), Node::Leaf(r)) => {
                let mut ls = l.slot.write();
                let mut rs = r.slot.write();
                ls.leaf.append(&mut rs.leaf);
                ls.leaf.shrink_to_fit();
                ls.changed();
                // A cursor that holds the emptied leaf must look its key up again.
                rs.changed();
            }
            (Node::Inner(l), Node::Inner(mut r)) => {
                l.keys.push(sep);
                l.keys.append(&mut r.keys);
                l.children.append(&mut r.children);
            }
            _ => {}
        }
        true
    }

    /// Refills the leaves whole and rebuilds the inner nodes above them.
    pub(super) fn compact(&self, root: &mut Node) {
        let mut leaves: Vec<Leaf> = vec![Leaf::default()];
        each_leaf(root, &mut |cell| {
            let mut slot = cell.slot.write();
            // The old leaves leave the tree: a cursor holding one must look its key up again.
            slot.changed();
            for (k, v) in slot.leaf.records() {
                let last = leaves.last_mut().filter(|l| l.size() + record_size(k, v) <= self.max_page_size);
                match last {
                    Some(l) => l.push(k, v),
                    None => {
                        let mut l = Leaf::default();
                        l.push(k, v);
                        leaves.push(l);
                    }
                }
            }
        });
        if leaves.len() > 1 && leaves[0].len() == 0 {
            leaves.remove(0);
        }
        // Level by level: each node with the least key of its subtree.
        let mut level: Vec<(Box<[u8]>, Node)> = leaves
            .into_iter()
            .map(|mut l| {
                l.shrink_to_fit();
                let first: Box<[u8]> = if l.len() > 0 { l.key(0).into() } else { Box::default() };
                (first, LeafCell::node(l))
            })
            .collect();
        while level.len() > 1 {
            let mut upper = Vec::new();
            let mut rest = level.into_iter().peekable();
            while rest.peek().is_some() {
                let group: Vec<(Box<[u8]>, Node)> = rest.by_ref().take(self.max_branches).collect();
                let mut keys = Vec::with_capacity(group.len());
                let mut children = Vec::with_capacity(group.len());
                for (k, n) in group {
                    keys.push(k);
                    children.push(n);
                }
                let first = keys.remove(0);
                upper.push((first, Node::Inner(Box::new(Inner { keys: Separators::of(keys), children }))));
            }
            level = upper;
        }
        if let Some((_, node)) = level.pop() {
            *root = node;
        }
    }
}
