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
//! Every change to a leaf bumps its version: a cursor (`cursor`) that saw
//! a leaf at a version may step inside it while the version holds, and
//! looks its key up afresh otherwise. Splits and merges live in `shape`.
//!
//! # One mutation path
//! Every change to the records (process, process_multi, process_each,
//! cursor set and remove, clear, the load of the flat file) goes through
//! one function, `BabyDbm::change`: an update log, an index or a
//! statistics counter attaches there. A caller's value is stored only
//! through `encode_value` and handed back only through `decode_value`:
//! a value codec attaches there.

mod cursor;
mod options;
mod params;
mod shape;

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

pub use cursor::{BabyCursor, BabyRange};
pub use options::BabyOptions;

use super::comparator::KeyComparator;
use super::flat::{self, refused_change, FlatWriter};
use super::persistence::Persistence;
use super::tree_node::{record_size, Leaf, Probe, Separators};
use super::{Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::dbm::{Access, Durability};
use crate::error::{Error, ErrorKind, Result};

/// A caller's value as the tree stores it: the one place a value codec
/// (compression, encryption) would encode. The identity for now.
#[inline(always)]
fn encode_value(value: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    value
}

/// A stored value as a caller sees it: the one place a value codec would
/// decode. The identity for now.
#[inline(always)]
fn decode_value(stored: &[u8]) -> &[u8] {
    stored
}

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

impl LeafCell {
    /// A new node of the tree holding `leaf`.
    fn node(leaf: Leaf) -> Node {
        Node::Leaf(Arc::new(LeafCell { slot: RwLock::new(Slot { leaf, version: 0 }) }))
    }
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

/// A change to the tree's records, as [`BabyDbm::change`] takes it.
enum Change<'s, 'a> {
    /// What a processor answered for `key` in its leaf, where the key is
    /// (`Ok`) or would go (`Err`).
    Record { slot: &'s mut Slot, found: std::result::Result<usize, usize>, key: &'s [u8], action: Action<'a> },
    /// Each record of a leaf as `f` answers.
    Rewrite { slot: &'s mut Slot, f: &'s mut EachProcessor<'a> },
    /// Every record goes: the tree under `root` becomes one empty leaf.
    Clear { root: &'s mut Node },
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
///     db.set(k.as_bytes(), v.as_bytes())?;
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

crate::dbm::builder::options_builder!(BabyDbm, BabyOptions);

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
    pub fn open(path: impl AsRef<Path>, access: Access, options: &BabyOptions) -> Result<BabyDbm> {
        let mut db = BabyDbm::new(options)?;
        let this = &db;
        let persistence =
            Persistence::open(path.as_ref(), access, options.truncate, &options.lock, |k, v| {
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
                result = slot.leaf.records().try_for_each(|(k, v)| w.put(k, decode_value(v)));
            }
        });
        result
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
        match f(found.ok().map(|i| decode_value(slot.leaf.record(i).1))) {
            Action::Keep => Ok(()),
            _ => Err(refused_change()),
        }
    }

    fn write(&self, key: &[u8], f: &mut Processor<'_>) -> Result<()> {
        let unbalanced = {
            let root = self.root.read();
            let mut slot = self.leaf_of(&root, key).slot.write();
            self.process_in(&mut slot, key, f)
        };
        if unbalanced {
            self.rebalance(&mut self.root.write(), key);
        }
        Ok(())
    }

    /// Shows `key`'s value in the leaf to `f` and carries out its answer;
    /// answers whether the leaf needs rebalancing.
    fn process_in(&self, slot: &mut Slot, key: &[u8], f: &mut Processor<'_>) -> bool {
        let found = slot.leaf.find_in(key, self.cmp);
        let action = f(found.ok().map(|i| decode_value(slot.leaf.record(i).1)));
        self.change(Change::Record { slot, found, key, action })
    }

    /// Carries out a change; answers whether the tree needs rebalancing
    /// after it. Every change of the records passes here (a process, a
    /// rewrite, a clear, a load from the flat file), and nothing else changes
    /// them: an update log, an index or a statistics counter attaches here.
    fn change(&self, change: Change<'_, '_>) -> bool {
        match change {
            Change::Record { slot, found, key, action } => {
                let leaf = &mut slot.leaf;
                let mut removed = false;
                let changed = match (action, found) {
                    (Action::Keep, _) | (Action::Remove, Err(_)) => false,
                    (Action::Remove, Ok(i)) => {
                        leaf.remove(i);
                        self.count.fetch_sub(1, Ordering::Relaxed);
                        removed = true;
                        true
                    }
                    (Action::Set(value), Ok(i)) => {
                        let value = encode_value(value);
                        leaf.reserve_gently(value.len().saturating_sub(leaf.record(i).1.len()) + 8);
                        leaf.set_value(i, &value);
                        true
                    }
                    (Action::Set(value), Err(i)) => {
                        let value = encode_value(value);
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
            Change::Rewrite { slot, f } => {
                let mut removed = 0u64;
                let changed = slot.leaf.rewrite(|k, v| match f(k, decode_value(v)) {
                    Action::Set(value) => Action::Set(encode_value(value)),
                    Action::Remove => {
                        removed += 1;
                        Action::Remove
                    }
                    Action::Keep => Action::Keep,
                });
                if changed {
                    slot.changed();
                }
                if removed > 0 {
                    self.count.fetch_sub(removed, Ordering::Relaxed);
                }
                // Removals may leave leaves nearly empty anywhere.
                removed > 0
            }
            Change::Clear { root } => {
                // A cursor holding a leaf of the old tree must look its key up again.
                each_leaf(root, &mut |cell| cell.slot.write().changed());
                *root = Node::Leaf(Arc::default());
                self.count.store(0, Ordering::Relaxed);
                false
            }
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

    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        if !access.is_writable() {
            self.persistence.check_process()?;
            return self.read(key, f);
        }
        self.persistence.check_writable(true)?;
        self.write(key, f)
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(access.is_writable())?;
        // Exclusive: atomic over the keys, and free to rebalance between them.
        let mut root = self.root.write();
        for (i, key) in keys.iter().enumerate() {
            let mut refused = false;
            let unbalanced = {
                let mut slot = self.leaf_of(&root, key).slot.write();
                self.process_in(&mut slot, key, &mut |v| {
                    let action = f(i, key, v);
                    if !access.is_writable() && action != Action::Keep {
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

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(access.is_writable())?;
        let mut root = self.root.write();
        let mut result = Ok(());
        let mut unbalanced = false;
        each_leaf(&root, &mut |cell| {
            if result.is_err() {
                return;
            }
            let mut slot = cell.slot.write();
            if !access.is_writable() {
                if slot.leaf.records().any(|(k, v)| f(k, decode_value(v)) != Action::Keep) {
                    result = Err(refused_change());
                }
                return;
            }
            unbalanced |= self.change(Change::Rewrite { slot: &mut slot, f: &mut *f });
        });
        if unbalanced {
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
        self.change(Change::Clear { root: &mut self.root.write() });
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

    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.save(durability.is_hard())
    }

    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        flat::write(dest, durability.is_hard(), |w| self.put_all(w))
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

    /// Its records live in memory; its file, if any, is written whole at a synchronization.
    fn restores_to_last_sync(&self) -> bool {
        true
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.persistence.check_process()?;
        Ok(Box::new(self.cursor()))
    }
}
