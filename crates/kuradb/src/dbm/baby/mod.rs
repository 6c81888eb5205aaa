//! BabyDbm: an on-memory B+ tree whose leaves pack their records in one
//! buffer each (the tree database's leaf format: lengths, key, value), with
//! each key's first eight bytes as an integer beside it, in leaves and inner
//! nodes alike, so that searches compare integers and read keys only on ties.
//!
//! # Concurrency
//! The tree's shape (inner nodes and which leaves hang where) is behind one
//! reader-writer lock, each leaf behind its own. An operation on a record
//! holds the shape shared and locks only its leaf, so operations on
//! different leaves run in parallel; one that leaves its leaf too large or
//! too small then takes the shape exclusively and splits or merges.
//! Inner nodes change only under the exclusive lock, so they need no lock
//! of their own: plain owned nodes, read through the shared guard.
//!
//! Every change to a leaf bumps its version: a cursor that saw a leaf at a
//! version may step inside it while the version holds, and looks its key up
//! afresh otherwise.

mod options;
mod params;

use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

pub use options::BabyOptions;

use super::comparator::KeyComparator;
use super::flat::{self, refused_change, FlatWriter, Persistence};
use super::tree_node::{record_size, Leaf, Probe, Separators};
use super::{Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

/// Rebalancing steps after one change: more than any tree's depth needs.
const MAX_FIXES: usize = 64;

enum Node {
    Leaf(Arc<LeafCell>),
    Inner(Box<Inner>),
}

/// `keys[i]` is at or below the least key of `children[i + 1]`'s subtree
/// and above every key of `children[i]`'s.
struct Inner {
    keys: Separators<Box<[u8]>>,
    children: Vec<Node>,
}

#[derive(Default)]
struct LeafCell {
    slot: RwLock<Slot>,
}

#[derive(Default)]
struct Slot {
    leaf: Leaf,
    /// Bumped by every change of the leaf.
    version: u64,
}

impl Slot {
    fn changed(&mut self) {
        self.version += 1;
    }
}

/// A record as a seek found it, and where.
struct Spot {
    key: Vec<u8>,
    value: Vec<u8>,
    leaf: Arc<LeafCell>,
    version: u64,
    index: usize,
}

impl Spot {
    /// Record `index` of the leaf, in the buffers of `recycled` if given.
    fn of(slot: &Slot, cell: &Arc<LeafCell>, index: usize, recycled: Option<Spot>) -> Spot {
        let (key, value) = slot.leaf.record(index);
        let (mut k, mut v) = recycled.map_or_else(Default::default, |s| (s.key, s.value));
        k.clear();
        k.extend_from_slice(key);
        v.clear();
        v.extend_from_slice(value);
        Spot { key: k, value: v, leaf: cell.clone(), version: slot.version, index }
    }
}

/// An on-memory B+ tree database, thread-safe, with keys in the order of its
/// [`KeyComparator`]: the least memory of the on-memory databases.
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::baby::{BabyDbm, BabyOptions};
/// # fn main() -> kuradb::Result<()> {
/// let db = BabyDbm::new(&BabyOptions::default())?;
/// for (k, v) in [("tokyo", "13"), ("osaka", "27"), ("kyoto", "26")] {
///     db.set(k.as_bytes(), v.as_bytes(), true)?;
/// }
/// let keys: Vec<Vec<u8>> = db.range(&b"k"[..]..&b"p"[..])?.map(|r| r.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"kyoto".to_vec(), b"osaka".to_vec()]);
/// # Ok(())
/// # }
/// ```
pub struct BabyDbm {
    root: RwLock<Node>,
    count: AtomicU64,
    cmp: KeyComparator,
    max_page_size: usize,
    max_branches: usize,
    persistence: Persistence,
    closed: bool,
}

fn check_options(o: &BabyOptions) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if o.max_page_size < 32 || o.max_page_size > u32::MAX as usize / 2 {
        return bad(format!("max_page_size must be from 32 to {}, not {}", u32::MAX / 2, o.max_page_size));
    }
    if o.max_branches < 3 {
        return bad(format!("max_branches must be at least 3, not {}", o.max_branches));
    }
    Ok(())
}

impl BabyDbm {
    /// A database purely in memory.
    pub fn new(options: &BabyOptions) -> Result<BabyDbm> {
        check_options(options)?;
        Ok(BabyDbm {
            root: RwLock::new(Node::Leaf(Arc::default())),
            count: AtomicU64::new(0),
            cmp: options.comparator,
            max_page_size: options.max_page_size,
            max_branches: options.max_branches,
            persistence: Persistence::none(),
            closed: false,
        })
    }

    /// Opens the database kept in the flat file at `path`, reading it unless
    /// `options.truncate`. A missing file is an empty database for a writer
    /// and an error for a reader.
    pub fn open(path: impl AsRef<Path>, writable: bool, options: &BabyOptions) -> Result<BabyDbm> {
        let mut db = BabyDbm::new(options)?;
        let this = &db;
        let persistence = Persistence::open(path.as_ref(), writable, options.truncate, |k, v| {
            this.write(k, &mut |_| Action::set(v))
        })?;
        db.persistence = persistence;
        Ok(db)
    }

    /// Writes the flat file (if the database has one and is writable) and closes.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.save(false)
    }

    fn save(&self, hard: bool) -> Result<()> {
        self.persistence.save(hard, |w| self.put_all(w))
    }

    fn put_all(&self, w: &mut FlatWriter) -> std::io::Result<()> {
        // Exclusive: no record changes while the copy is taken.
        let root = self.root.write();
        let mut result = Ok(());
        each_leaf(&root, &mut |cell| {
            if result.is_ok() {
                let slot = cell.slot.read();
                result = slot.leaf.records().try_for_each(|(k, v)| w.put(k, v));
            }
        });
        result
    }

    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> BabyCursor<'_> {
        BabyCursor { db: self, at: None, spare: None }
    }

    /// The records whose keys fall in `range`, in order. Each step moves
    /// within its leaf if the leaf is unchanged and looks its key up afresh
    /// otherwise, so concurrent updates never invalidate the iterator.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<BabyRange<'_>> {
        let owned = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Ok(BabyRange {
            cursor: self.cursor(),
            start: Some(owned(range.start_bound())),
            end: owned(range.end_bound()),
            done: false,
        })
    }

    fn child_index(&self, inner: &Inner, key: &[u8]) -> usize {
        inner.keys.child_index(&Probe::new(key, self.cmp))
    }

    fn leaf_of<'n>(&self, mut node: &'n Node, key: &[u8]) -> &'n Arc<LeafCell> {
        loop {
            match node {
                Node::Leaf(cell) => return cell,
                Node::Inner(inner) => node = &inner.children[self.child_index(inner, key)],
            }
        }
    }

    /// Whether a leaf just changed needs rebalancing: too large, or too small
    /// after a removal (a leaf small from a split only grows).
    fn unbalanced(&self, leaf: &Leaf, removed: bool) -> bool {
        (leaf.size() > self.max_page_size && leaf.len() > 1)
            || (removed && leaf.size() < self.max_page_size / 4)
    }

    fn read(&self, key: &[u8], f: &mut Processor<'_>) -> Result<()> {
        let root = self.root.read();
        let slot = self.leaf_of(&root, key).slot.read();
        let found = slot.leaf.find_in(key, self.cmp);
        match f(found.ok().map(|i| slot.leaf.record(i).1)) {
            Action::Keep => Ok(()),
            _ => Err(refused_change()),
        }
    }

    fn write(&self, key: &[u8], f: &mut Processor<'_>) -> Result<()> {
        let unbalanced = {
            let root = self.root.read();
            let mut slot = self.leaf_of(&root, key).slot.write();
            self.apply(&mut slot, key, f)
        };
        if unbalanced {
            self.rebalance(&mut self.root.write(), key);
        }
        Ok(())
    }

    /// Carries out `f`'s answer in the leaf; answers whether the leaf needs rebalancing.
    fn apply(&self, slot: &mut Slot, key: &[u8], f: &mut Processor<'_>) -> bool {
        let leaf = &mut slot.leaf;
        let found = leaf.find_in(key, self.cmp);
        let mut removed = false;
        let changed = match (f(found.ok().map(|i| leaf.record(i).1)), found) {
            (Action::Keep, _) | (Action::Remove, Err(_)) => false,
            (Action::Remove, Ok(i)) => {
                leaf.remove(i);
                self.count.fetch_sub(1, Ordering::Relaxed);
                removed = true;
                true
            }
            (Action::Set(value), Ok(i)) => {
                leaf.reserve_gently(value.len().saturating_sub(leaf.record(i).1.len()) + 8);
                leaf.set_value(i, &value);
                true
            }
            (Action::Set(value), Err(i)) => {
                leaf.reserve_gently(record_size(key, &value));
                leaf.insert(i, key, &value);
                self.count.fetch_add(1, Ordering::Relaxed);
                true
            }
        };
        if changed {
            slot.changed();
        }
        changed && self.unbalanced(&slot.leaf, removed)
    }

    /// Splits or merges along `key`'s path until every node there is in
    /// bounds (or nothing more can be done). The shape is held exclusively.
    fn rebalance(&self, root: &mut Node, key: &[u8]) {
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
                Some((
                    sep,
                    Node::Leaf(Arc::new(LeafCell { slot: RwLock::new(Slot { leaf: right, version: 0 }) })),
                ))
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

    /// Forward: the first record at or after `key` (after it only, unless
    /// `inclusive`), from the start without a key. Backward: the last record
    /// before `key` (or at it, if `inclusive`), from the end without a key.
    /// The answer comes in the buffers of `recycled` if given.
    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot>,
    ) -> Option<Spot> {
        let root = self.root.read();
        // The inner nodes above the current leaf and the child taken in each.
        let mut path: Vec<(&Inner, usize)> = Vec::new();
        let edge = |inner: &Inner| if forward { 0 } else { inner.children.len() - 1 };
        let mut node: &Node = &root;
        while let Node::Inner(inner) = node {
            let i = key.map_or_else(|| edge(inner), |k| self.child_index(inner, k));
            path.push((inner, i));
            node = &inner.children[i];
        }
        loop {
            let Node::Leaf(cell) = node else { return None };
            let slot = cell.slot.read();
            let leaf = &slot.leaf;
            // The records that come before the answer's position.
            let before = match key {
                None if forward => 0,
                None => leaf.len(),
                Some(k) => leaf.records_before(k, self.cmp, forward, inclusive),
            };
            let found = if forward { (before < leaf.len()).then_some(before) } else { before.checked_sub(1) };
            if let Some(index) = found {
                return Some(Spot::of(&slot, cell, index, recycled));
            }
            drop(slot);
            // The neighbouring leaf: up to the first ancestor with a child
            // further that way, then down its nearest edge.
            loop {
                let (inner, i) = path.pop()?;
                let next = if forward { i + 1 } else { i.wrapping_sub(1) };
                if next < inner.children.len() {
                    path.push((inner, next));
                    node = &inner.children[next];
                    break;
                }
            }
            while let Node::Inner(inner) = node {
                let i = edge(inner);
                path.push((inner, i));
                node = &inner.children[i];
            }
        }
    }

    /// The record `step` places from `spot` (-1, 0 or 1) if its leaf is
    /// unchanged since and the record is in it; `None` when only a seek can tell.
    fn step_in_leaf(&self, spot: &Spot, step: isize, recycled: &mut Option<Spot>) -> Option<Spot> {
        let slot = spot.leaf.slot.read();
        if slot.version != spot.version {
            return None;
        }
        let index = spot.index.checked_add_signed(step).filter(|&i| i < slot.leaf.len())?;
        Some(Spot::of(&slot, &spot.leaf, index, recycled.take()))
    }

    /// Refills the leaves whole and rebuilds the inner nodes above them.
    fn compact(&self, root: &mut Node) {
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
                (first, Node::Leaf(Arc::new(LeafCell { slot: RwLock::new(Slot { leaf: l, version: 0 }) })))
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

    fn mem_size(&self) -> u64 {
        fn walk(node: &Node) -> usize {
            match node {
                Node::Leaf(cell) => cell.slot.read().leaf.heap_size() + std::mem::size_of::<LeafCell>() + 16,
                Node::Inner(inner) => {
                    let keys = inner.keys.heap_size();
                    let own = std::mem::size_of::<Inner>()
                        + inner.children.capacity() * std::mem::size_of::<Node>();
                    keys + own + inner.children.iter().map(walk).sum::<usize>()
                }
            }
        }
        walk(&self.root.read()) as u64
    }
}

fn each_leaf(node: &Node, f: &mut dyn FnMut(&Arc<LeafCell>)) {
    match node {
        Node::Leaf(cell) => f(cell),
        Node::Inner(inner) => inner.children.iter().for_each(|c| each_leaf(c, f)),
    }
}

impl Drop for BabyDbm {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.save(false);
        }
    }
}

impl Dbm for BabyDbm {
    fn close(self: Box<Self>) -> Result<()> {
        BabyDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        if !writable {
            self.persistence.check_process()?;
            return self.read(key, f);
        }
        self.persistence.check_writable(true)?;
        self.write(key, f)
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        // Exclusive: atomic over the keys, and free to rebalance between them.
        let mut root = self.root.write();
        for (i, key) in keys.iter().enumerate() {
            let mut refused = false;
            let unbalanced = {
                let mut slot = self.leaf_of(&root, key).slot.write();
                self.apply(&mut slot, key, &mut |v| {
                    let action = f(i, key, v);
                    if !writable && action != Action::Keep {
                        refused = true;
                        return Action::Keep;
                    }
                    action
                })
            };
            if refused {
                return Err(refused_change());
            }
            if unbalanced {
                self.rebalance(&mut root, key);
            }
        }
        Ok(())
    }

    fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        let mut root = self.root.write();
        let mut result = Ok(());
        let mut removed = 0u64;
        each_leaf(&root, &mut |cell| {
            if result.is_err() {
                return;
            }
            let mut slot = cell.slot.write();
            if !writable {
                if slot.leaf.records().any(|(k, v)| f(k, v) != Action::Keep) {
                    result = Err(refused_change());
                }
                return;
            }
            let changed = slot.leaf.rewrite(|k, v| {
                let action = f(k, v);
                removed += u64::from(matches!(action, Action::Remove));
                action
            });
            if changed {
                slot.changed();
            }
        });
        self.count.fetch_sub(removed, Ordering::Relaxed);
        if removed > 0 {
            // Removals may have left leaves nearly empty anywhere: refill them.
            self.compact(&mut root);
        }
        result
    }

    fn count(&self) -> Result<u64> {
        self.persistence.check_process()?;
        Ok(self.count.load(Ordering::Relaxed))
    }

    fn file_size(&self) -> Result<u64> {
        Ok(self.mem_size())
    }

    fn path(&self) -> Option<&Path> {
        self.persistence.path.as_deref()
    }

    fn clear(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        let mut root = self.root.write();
        each_leaf(&root, &mut |cell| cell.slot.write().changed());
        *root = Node::Leaf(Arc::default());
        self.count.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn rebuild(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.compact(&mut self.root.write());
        Ok(())
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        // Leaves average half full or less: a rebuild would halve them.
        let root = self.root.read();
        let (mut leaves, mut bytes) = (0usize, 0usize);
        each_leaf(&root, &mut |cell| {
            leaves += 1;
            bytes += cell.slot.read().leaf.size();
        });
        Ok(leaves > 1 && bytes < leaves * self.max_page_size / 2)
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        self.save(hard)
    }

    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        flat::write(dest, hard, |w| self.put_all(w))
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let root = self.root.read();
        let (mut leaves, mut level) = (0usize, 1usize);
        each_leaf(&root, &mut |_| leaves += 1);
        let mut node = &*root;
        while let Node::Inner(inner) = node {
            level += 1;
            node = &inner.children[0];
        }
        drop(root);
        Ok(vec![
            ("class".to_string(), "BabyDbm".to_string()),
            ("num_records".to_string(), self.count.load(Ordering::Relaxed).to_string()),
            ("num_leaves".to_string(), leaves.to_string()),
            ("tree_level".to_string(), level.to_string()),
            ("max_page_size".to_string(), self.max_page_size.to_string()),
            ("max_branches".to_string(), self.max_branches.to_string()),
            ("key_comparator".to_string(), self.cmp.name().to_string()),
            ("mem_size".to_string(), self.mem_size().to_string()),
            (
                "path".to_string(),
                self.persistence.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
            ),
        ])
    }

    fn is_healthy(&self) -> bool {
        true
    }

    fn is_ordered(&self) -> bool {
        true
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.persistence.check_process()?;
        Ok(Box::new(self.cursor()))
    }
}

/// A position in a [`BabyDbm`]: the key of its record, and the leaf where it
/// was seen. A move steps within that leaf while the leaf is unchanged and
/// looks the key up afresh otherwise, so concurrent updates never
/// invalidate it; a record removed under it leaves the position at the next.
pub struct BabyCursor<'a> {
    db: &'a BabyDbm,
    at: Option<Spot>,
    /// A spot whose buffers the next move fills: a walk allocates nothing.
    spare: Option<Spot>,
}

impl BabyCursor<'_> {
    fn seek(&mut self, forward: bool, key: Option<&[u8]>, inclusive: bool) {
        let recycled = self.at.take().or_else(|| self.spare.take());
        self.at = self.db.seek(forward, key, inclusive, recycled);
    }

    /// Moves from the current record: `step` 1 to the next, -1 to the
    /// previous, 0 to the record itself or, if it is gone, the next one.
    fn step(&mut self, step: isize) {
        let Some(at) = self.at.take() else { return };
        if step == 0 && at.leaf.slot.read().version == at.version {
            // The leaf is as it was seen: so is the record.
            self.at = Some(at);
            return;
        }
        self.at = match self.db.step_in_leaf(&at, step, &mut self.spare) {
            Some(spot) => Some(spot),
            None => self.db.seek(step >= 0, Some(at.key.as_slice()), step == 0, self.spare.take()),
        };
        self.spare = Some(at);
    }

    fn past_end() -> Error {
        Error::new(ErrorKind::NotFound, "the cursor is past the last record")
    }
}

impl Cursor for BabyCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.seek(true, None, true);
        Ok(())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek(true, Some(key), true);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.step(1);
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.step(0);
        Ok(self.at.as_ref().map(|at| (at.key.clone(), at.value.clone())))
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.get()? {
            Some((key, _)) => self.db.set(&key, value, true),
            None => Err(Self::past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.get()? {
            // The position stays on the removed key: the next get finds the record after it.
            Some((key, _)) => self.db.remove(&key).map(|_| ()),
            None => Err(Self::past_end()),
        }
    }

    fn last(&mut self) -> Result<()> {
        self.seek(false, None, true);
        Ok(())
    }

    fn jump_lower(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(false, Some(key), inclusive);
        Ok(())
    }

    fn jump_upper(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(true, Some(key), inclusive);
        Ok(())
    }

    fn previous(&mut self) -> Result<()> {
        self.step(-1);
        Ok(())
    }
}

/// The records of a key range, in order (see [`BabyDbm::range`]).
pub struct BabyRange<'a> {
    cursor: BabyCursor<'a>,
    start: Option<Bound<Vec<u8>>>,
    end: Bound<Vec<u8>>,
    done: bool,
}

impl Iterator for BabyRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.start.take() {
            Some(Bound::Included(k)) => self.cursor.seek(true, Some(k.as_slice()), true),
            Some(Bound::Excluded(k)) => self.cursor.seek(true, Some(k.as_slice()), false),
            Some(Bound::Unbounded) => self.cursor.seek(true, None, true),
            None => self.cursor.step(1),
        }
        let cmp = self.cursor.db.cmp;
        let found =
            self.cursor.at.as_ref().map(|at| (at.key.clone(), at.value.clone())).filter(|(k, _)| match &self
                .end
            {
                Bound::Included(end) => cmp.compare(k, end) != std::cmp::Ordering::Greater,
                Bound::Excluded(end) => cmp.compare(k, end) == std::cmp::Ordering::Less,
                Bound::Unbounded => true,
            });
        if found.is_none() {
            self.done = true;
        }
        found.map(Ok)
    }
}
