//! TreeDbm: a B+ tree whose nodes are records of a [`HashDbm`].
//!
//! Leaves hold sorted records and links to their neighbours; inner nodes hold
//! separator keys and child ids. Nodes live in an LRU cache of
//! `max_cached_pages` and go to the node store when evicted (if changed), at
//! synchronize and at close. A record in the store under the empty key holds
//! the tree's own figures (root, ends, count, tuning).
//!
//! # Concurrency
//! An operation on one record holds the tree shared and locks only its leaf,
//! so operations on different leaves run in parallel; inner nodes change only
//! while the tree is held exclusively (splits, merges, synchronize). An
//! operation that leaves its leaf too large or too small releases everything
//! and rebalances the tree exclusively.
//!
//! # Crash safety
//! The node store is a hash database of the kind whose restore goes back to
//! the last completed hard synchronization, and a hard synchronization first
//! writes every changed node and the tree's figures: a crash leaves, after
//! the automatic restore, exactly the tree as it was synchronized last.

mod options;
mod params;

use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use lru::LruCache;
use parking_lot::{MappedRwLockReadGuard, Mutex, RwLock, RwLockReadGuard};

pub use super::comparator::KeyComparator;
pub use options::TreeOptions;

use super::hash::{HashDbm, Kind};
use super::tree_node::{record_size, Inner, Leaf, Node, Probe, Separators, INNER_BASE};
use super::{Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::dbm::varint::{put_varint, Reader};
use crate::error::{Error, ErrorKind, Result};
use crate::file::Owner;

/// Shards of the node cache, each an LRU with its own lock.
const SHARDS: usize = 16;
const META_MAGIC: &[u8; 8] = b"KuraTDB\n";
/// The largest record, and the largest max_page_size: a leaf, at most one
/// of each, stays under 4 GiB, as the offsets within it need.
const MAX_RECORD: usize = (1 << 31) - 1;
/// What a node's record takes besides its page: the record's header and key
/// and the node's own header.
const NODE_READ_SLACK: usize = 64;
/// Deeper than any tree of 2^64 records: a path longer than this loops.
const MAX_DEPTH: usize = 64;

/// A B+ tree database in a file, thread-safe, with keys in the order of its
/// [`KeyComparator`].
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::tree::{TreeDbm, TreeOptions};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let db = TreeDbm::open(dir.path().join("casket.kt"), true, &TreeOptions::default())?;
/// for (k, v) in [("tokyo", "13"), ("osaka", "27"), ("kyoto", "26")] {
///     db.set(k.as_bytes(), v.as_bytes(), true)?;
/// }
/// let keys: Vec<Vec<u8>> = db.range(&b"k"[..]..&b"p"[..])?.map(|r| r.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"kyoto".to_vec(), b"osaka".to_vec()]);
/// db.close()?;
/// # Ok(())
/// # }
/// ```
pub struct TreeDbm {
    path: PathBuf,
    options: TreeOptions,
    /// `None` once closed. Operations on records hold it shared; those that
    /// change the tree's shape or need it quiet hold it exclusively.
    tree: RwLock<Option<Tree>>,
    /// The process that opened the database, outside which it works not at all.
    owner: Owner,
}

struct Tree {
    store: HashDbm,
    writable: bool,
    cmp: KeyComparator,
    max_page_size: usize,
    max_branches: usize,
    /// Changed only while the tree is held exclusively.
    meta: Mutex<Meta>,
    count: AtomicU64,
    cache: Vec<Mutex<LruCache<u64, Arc<Cell>>>>,
    per_shard: usize,
    healthy: AtomicBool,
    /// The source of [`Slot::version`]s.
    versions: AtomicU64,
}

#[derive(Clone, Copy, Debug)]
struct Meta {
    root: u64,
    first: u64,
    last: u64,
    next_leaf: u64,
    next_inner: u64,
    level: u32,
}

/// A record as a seek found it, and where: record `index` of leaf `leaf`
/// at `version`.
struct Spot {
    key: Vec<u8>,
    value: Vec<u8>,
    leaf: u64,
    version: u64,
    index: usize,
}

impl Spot {
    /// Record `index` of leaf `id`, written into `spare`'s buffers if given
    /// (a cursor moving from record to record allocates nothing then).
    fn of(leaf: &Leaf, id: u64, version: u64, index: usize, spare: Option<Spot>) -> Spot {
        let (key, value) = leaf.record(index);
        let mut spot =
            spare.unwrap_or(Spot { key: Vec::new(), value: Vec::new(), leaf: 0, version: 0, index: 0 });
        spot.hold(key, value);
        Spot { leaf: id, version, index, ..spot }
    }

    /// Copies `key` and `value` into the spot's own buffers.
    fn hold(&mut self, key: &[u8], value: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
        self.value.clear();
        self.value.extend_from_slice(value);
    }
}

/// A cached node.
struct Cell {
    slot: RwLock<Slot>,
}

struct Slot {
    node: Node,
    /// The node differs from the store.
    dirty: bool,
    /// Changes with every change of the node and is never the same for two
    /// loads of it, so a cursor that saw this version may trust what it saw.
    version: u64,
}

impl Slot {
    fn changed(&mut self) {
        self.dirty = true;
        self.version += 1;
    }
}

fn node_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

impl TreeDbm {
    /// Opens or creates the tree database at `path`. The tuning of `options`
    /// applies to a new file; an existing one keeps its own. A file not closed
    /// cleanly is restored to its last hard synchronization first, if
    /// `options.hash.restore` allows.
    pub fn open(path: impl AsRef<Path>, writable: bool, options: &TreeOptions) -> Result<TreeDbm> {
        let path = path.as_ref().to_path_buf();
        check_options(options)?;
        let tree = Tree::open(&path, writable, options)?;
        Ok(TreeDbm {
            path,
            options: options.clone(),
            tree: RwLock::new(Some(tree)),
            owner: Owner::unclaimed(),
        })
    }

    /// Writes everything back, marks the file closed cleanly and closes it.
    pub fn close(self) -> Result<()> {
        let taken = self.tree.write().take();
        taken.map_or(Ok(()), Tree::close)
    }

    /// Restores the tree database at `src`, which was not closed cleanly, into a
    /// new one at `dest`, as of its last hard synchronization. Answers the
    /// number of records.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, options: &TreeOptions) -> Result<u64> {
        HashDbm::restore(src, dest.as_ref(), &options.hash)?;
        let db = TreeDbm::open(dest.as_ref(), false, options)?;
        let count = db.count()?;
        db.close()?;
        Ok(count)
    }

    /// The records whose keys fall in `range`, in order. Each step moves
    /// within its leaf if the leaf is unchanged and looks its key up afresh
    /// otherwise, so concurrent updates never invalidate the iterator.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<TreeRange<'_>> {
        drop(self.shared()?);
        let owned = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Ok(TreeRange {
            cursor: self.cursor(),
            start: Some(owned(range.start_bound())),
            end: owned(range.end_bound()),
            last: None,
            done: false,
        })
    }

    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> TreeCursor<'_> {
        TreeCursor { db: self, at: None, spare: None }
    }

    /// The open tree, held shared; an error once the database is closed.
    fn shared(&self) -> Result<MappedRwLockReadGuard<'_, Tree>> {
        self.owner.check(&self.path)?;
        RwLockReadGuard::try_map(self.tree.read(), Option::as_ref).map_err(|_| self.closed())
    }

    fn closed(&self) -> Error {
        Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display()))
    }

    /// Runs `f` on the tree held exclusively.
    fn exclusive<R>(&self, f: impl FnOnce(&Tree) -> Result<R>) -> Result<R> {
        self.owner.check(&self.path)?;
        let guard = self.tree.write();
        match guard.as_ref() {
            Some(tree) => f(tree),
            None => Err(self.closed()),
        }
    }

    fn rebalance_after(&self, key: &[u8]) -> Result<()> {
        self.exclusive(|t| t.rebalance(key))
    }
}

impl Drop for TreeDbm {
    fn drop(&mut self) {
        if let Some(tree) = self.tree.get_mut().take() {
            let _ = tree.close();
        }
    }
}

fn check_options(o: &TreeOptions) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if o.max_page_size < 64 || o.max_page_size > MAX_RECORD {
        return bad(format!("max_page_size must be from 64 to {MAX_RECORD}, not {}", o.max_page_size));
    }
    if o.max_branches < 3 {
        return bad(format!("max_branches must be at least 3, not {}", o.max_branches));
    }
    if o.max_cached_pages == 0 {
        return bad("max_cached_pages must be at least 1".to_string());
    }
    Ok(())
}

impl Meta {
    fn encode(&self, t: &Tree) -> Vec<u8> {
        let mut out = META_MAGIC.to_vec();
        out.push(t.cmp.code());
        for n in [
            t.max_page_size as u64,
            t.max_branches as u64,
            self.root,
            self.first,
            self.last,
            self.next_leaf,
            self.next_inner,
            u64::from(self.level),
            t.count.load(Ordering::Acquire),
        ] {
            put_varint(&mut out, n);
        }
        out
    }
}

/// The tree's figures as stored: tuning, shape and count.
struct Stored {
    cmp: KeyComparator,
    max_page_size: usize,
    max_branches: usize,
    meta: Meta,
    count: u64,
}

fn decode_meta(bytes: &[u8], path: &Path) -> Result<Stored> {
    let parse = || -> std::result::Result<Stored, &'static str> {
        let mut r = Reader::new(bytes);
        if r.bytes(8)? != META_MAGIC {
            return Err("bad magic");
        }
        let cmp = KeyComparator::from_code(r.byte()?).ok_or("unknown key comparator")?;
        let mut n = [0u64; 9];
        for slot in &mut n {
            *slot = r.varint()?;
        }
        let [page, branches, root, first, last, next_leaf, next_inner, level, count] = n;
        if page < 64 || branches < 3 || first == 0 || last == 0 || root == 0 || !r.done() {
            return Err("impossible figures");
        }
        let meta = Meta { root, first, last, next_leaf, next_inner, level: level as u32 };
        Ok(Stored { cmp, max_page_size: page as usize, max_branches: branches as usize, meta, count })
    };
    parse().map_err(|why| {
        Error::new(
            ErrorKind::BrokenData,
            format!("{} is not a kuradb tree database: its figures are broken: {why}", path.display()),
        )
    })
}

impl Tree {
    fn open(path: &Path, writable: bool, o: &TreeOptions) -> Result<Tree> {
        let store = HashDbm::open_kind(path.to_path_buf(), writable, &o.hash, Kind::TreeNodes)?;
        let stored = match store.get(b"")? {
            Some(bytes) => Some(decode_meta(&bytes, path)?),
            None if store.count()? > 0 => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("{} has nodes but not the tree's figures", path.display()),
                ))
            }
            None => None,
        };
        let per_shard = o.max_cached_pages.div_ceil(SHARDS).max(1);
        let mut tree = Tree {
            store,
            writable,
            cmp: o.comparator,
            max_page_size: o.max_page_size,
            max_branches: o.max_branches,
            meta: Mutex::new(Meta {
                root: 1,
                first: 1,
                last: 1,
                next_leaf: 2,
                next_inner: INNER_BASE,
                level: 1,
            }),
            count: AtomicU64::new(0),
            cache: (0..SHARDS).map(|_| Mutex::new(LruCache::unbounded())).collect(),
            per_shard,
            healthy: AtomicBool::new(true),
            versions: AtomicU64::new(1),
        };
        match stored {
            Some(s) => {
                tree.cmp = s.cmp;
                tree.max_page_size = s.max_page_size;
                tree.max_branches = s.max_branches;
                *tree.meta.get_mut() = s.meta;
                tree.count = AtomicU64::new(s.count);
            }
            None => {
                // A new tree: one empty leaf, written at the first synchronization.
                tree.insert(1, Node::Leaf(Leaf::default()), writable)?;
            }
        }
        // A node is read in one call: the first read takes a whole page,
        // with room for the record's and the node's headers.
        let page_read = tree.max_page_size + NODE_READ_SLACK;
        tree.store.set_min_read_size(o.hash.min_read_size.max(page_read));
        Ok(tree)
    }

    fn close(self) -> Result<()> {
        let flushed = if self.writable { self.flush() } else { Ok(()) };
        flushed.and(self.store.close())
    }

    fn broken(&self, what: String) -> Error {
        self.healthy.store(false, Ordering::Release);
        let path = self.store.path().map(|p| p.display().to_string()).unwrap_or_default();
        Error::new(ErrorKind::BrokenData, format!("{path} is broken: {what}"))
    }

    fn read_only(&self) -> Error {
        let path = self.store.path().map(|p| p.display().to_string()).unwrap_or_default();
        Error::new(ErrorKind::Infeasible, format!("{path} is open for reading only"))
    }

    fn shard(&self, id: u64) -> &Mutex<LruCache<u64, Arc<Cell>>> {
        &self.cache[(id % SHARDS as u64) as usize]
    }

    /// A version no node has had: each load starts a new range of 2^32.
    fn fresh_version(&self) -> u64 {
        self.versions.fetch_add(1, Ordering::Relaxed) << 32
    }

    /// The node `id` if it is cached.
    fn cached(&self, id: u64) -> Option<Arc<Cell>> {
        self.shard(id).lock().get(&id).cloned()
    }

    /// The node `id`, from the cache or the store.
    fn load(&self, id: u64) -> Result<Arc<Cell>> {
        let mut shard = self.shard(id).lock();
        if let Some(cell) = shard.get(&id) {
            return Ok(cell.clone());
        }
        let path = self.store.path().unwrap_or(Path::new(""));
        let mut decoded = None;
        // Decoded straight from the store's read buffer: no copy of the bytes between.
        self.store.process(&node_key(id), false, &mut |bytes| {
            decoded = bytes.map(|b| Node::decode(id, b, path));
            Action::Keep
        })?;
        let node = decoded
            .ok_or_else(|| self.broken(format!("node {id} is missing")))?
            .inspect_err(|_| self.healthy.store(false, Ordering::Release))?;
        let cell =
            Arc::new(Cell { slot: RwLock::new(Slot { node, dirty: false, version: self.fresh_version() }) });
        shard.put(id, cell.clone());
        self.evict(&mut shard)?;
        Ok(cell)
    }

    /// Puts a new node in the cache.
    fn insert(&self, id: u64, node: Node, dirty: bool) -> Result<Arc<Cell>> {
        let cell = Arc::new(Cell { slot: RwLock::new(Slot { node, dirty, version: self.fresh_version() }) });
        let mut shard = self.shard(id).lock();
        shard.put(id, cell.clone());
        self.evict(&mut shard)?;
        Ok(cell)
    }

    /// Drops the least recently used nodes beyond the shard's share, writing
    /// back the changed ones. A node someone holds stays (it may be changing).
    fn evict(&self, shard: &mut LruCache<u64, Arc<Cell>>) -> Result<()> {
        let mut tries = shard.len();
        while shard.len() > self.per_shard && tries > 0 {
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
            let mut bytes = Vec::new();
            slot.node.encode(&mut bytes);
            self.store.set(&node_key(id), &bytes, true)?;
            slot.dirty = false;
        }
        Ok(())
    }

    /// Forgets node `id` (merged away).
    fn discard(&self, id: u64) -> Result<()> {
        self.shard(id).lock().pop(&id);
        self.store.remove(&node_key(id)).map(|_| ())
    }

    /// Writes every changed node and the tree's figures to the store.
    fn flush(&self) -> Result<()> {
        for shard in &self.cache {
            let cells: Vec<(u64, Arc<Cell>)> = shard.lock().iter().map(|(&id, c)| (id, c.clone())).collect();
            for (id, cell) in cells {
                self.write_back(id, &cell)?;
            }
        }
        let meta = self.meta.lock().encode(self);
        self.store.set(b"", &meta, true)
    }

    fn child_index(&self, inner: &Inner, key: &[u8]) -> usize {
        inner.keys.child_index(&Probe::new(key, self.cmp))
    }

    /// The leaf where `key` belongs, with the inner nodes above it (and the
    /// child taken in each), root first.
    fn descend(&self, key: &[u8], path: Option<&mut Vec<(u64, usize)>>) -> Result<(u64, Arc<Cell>)> {
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

    /// Carries out `f`'s answer for `key` in its leaf; answers whether the leaf
    /// needs rebalancing.
    fn apply(&self, key: &[u8], writable: bool, f: &mut Processor<'_>) -> Result<bool> {
        let (_, cell) = self.descend(key, None)?;
        if !writable {
            let slot = cell.slot.read();
            let Node::Leaf(leaf) = &slot.node else {
                return Err(self.broken("a leaf is an inner node".into()));
            };
            let found = leaf.find_in(key, self.cmp);
            return match f(found.ok().map(|i| leaf.record(i).1)) {
                Action::Keep => Ok(false),
                _ => Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "a read-only process asked to change a record",
                )),
            };
        }
        let mut guard = cell.slot.write();
        let slot = &mut *guard;
        let Node::Leaf(leaf) = &mut slot.node else {
            return Err(self.broken("a leaf is an inner node".into()));
        };
        let found = leaf.find_in(key, self.cmp);
        let action = f(found.ok().map(|i| leaf.record(i).1));
        if let Action::Set(value) = &action {
            if record_size(key, value) > MAX_RECORD {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "a record of {} bytes is too large for a tree database (at most {MAX_RECORD})",
                        record_size(key, value)
                    ),
                ));
            }
        }
        let changed = match (action, found) {
            (Action::Keep, _) | (Action::Remove, Err(_)) => false,
            (Action::Remove, Ok(i)) => {
                leaf.remove(i);
                self.count.fetch_sub(1, Ordering::AcqRel);
                true
            }
            (Action::Set(value), Ok(i)) => {
                leaf.set_value(i, &value);
                true
            }
            (Action::Set(value), Err(i)) => {
                leaf.insert(i, key, &value);
                self.count.fetch_add(1, Ordering::AcqRel);
                true
            }
        };
        let unbalanced = changed && self.unbalanced(leaf);
        if changed {
            slot.changed();
        }
        Ok(unbalanced)
    }

    fn unbalanced(&self, leaf: &Leaf) -> bool {
        (leaf.size() > self.max_page_size && leaf.len() > 1) || leaf.size() < self.max_page_size / 4
    }

    /// Splits or merges the leaf of `key` (and its ancestors) as its size
    /// asks. The caller holds the tree exclusively.
    fn rebalance(&self, key: &[u8]) -> Result<()> {
        for _ in 0..MAX_DEPTH * 4 {
            let mut path = Vec::new();
            let (id, cell) = self.descend(key, Some(&mut path))?;
            let (over, under) = match &cell.slot.read().node {
                Node::Leaf(leaf) => {
                    (leaf.size() > self.max_page_size && leaf.len() > 1, leaf.size() < self.max_page_size / 4)
                }
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

    fn split_leaf(&self, path: &mut Vec<(u64, usize)>, id: u64, key: &[u8]) -> Result<()> {
        let cell = self.load(id)?;
        let mut guard = cell.slot.write();
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
        right.prev = id;
        right.next = leaf.next;
        let old_next = leaf.next;
        leaf.next = new_id;
        slot.changed();
        let separator = right.key(0).to_vec();
        drop(guard);
        if old_next == 0 {
            meta.last = new_id;
        }
        drop(meta);
        if old_next != 0 {
            self.set_link(old_next, |l| l.prev = new_id)?;
        }
        self.insert(new_id, Node::Leaf(right), true)?;
        self.insert_into_parent(path, id, separator, new_id)
    }

    fn set_link(&self, id: u64, f: impl FnOnce(&mut Leaf)) -> Result<()> {
        let cell = self.load(id)?;
        let mut slot = cell.slot.write();
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
                Node::Inner(Inner { keys: Separators::of(vec![key]), children: vec![left, right] }),
                true,
            )?;
            return Ok(());
        };
        let cell = self.load(parent)?;
        let mut guard = cell.slot.write();
        let slot = &mut *guard;
        slot.changed();
        let Node::Inner(inner) = &mut slot.node else { return Err(self.broken("a parent is a leaf".into())) };
        inner.keys.insert(i, key);
        inner.children.insert(i + 1, right);
        if inner.children.len() <= self.max_branches {
            return Ok(());
        }
        let mid = inner.keys.len() / 2;
        let right_keys = inner.keys.split_off(mid + 1);
        let up = inner.keys.pop().unwrap_or_default();
        let right_children = inner.children.split_off(mid + 1);
        drop(guard);
        let mut meta = self.meta.lock();
        let new_id = meta.next_inner;
        meta.next_inner += 1;
        drop(meta);
        self.insert(new_id, Node::Inner(Inner { keys: right_keys, children: right_children }), true)?;
        self.insert_into_parent(path, parent, up, new_id)
    }

    /// Merges a small leaf with a neighbour under the same parent, if the two fit in one.
    fn merge_leaf(&self, path: &mut Vec<(u64, usize)>, id: u64) -> Result<()> {
        let Some(&(parent, i)) = path.last() else { return Ok(()) };
        let parent_cell = self.load(parent)?;
        let (left, right, sep) = {
            let slot = parent_cell.slot.read();
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
        {
            let mut ls = left_cell.slot.write();
            let mut rs = right_cell.slot.write();
            let (Node::Leaf(l), Node::Leaf(r)) = (&mut ls.node, &mut rs.node) else {
                return Err(self.broken("a leaf's neighbour is an inner node".into()));
            };
            if l.size() + r.size() > self.max_page_size {
                return Ok(());
            }
            l.append(r);
            l.next = r.next;
            ls.changed();
        }
        let next = match &right_cell.slot.read().node {
            Node::Leaf(r) => r.next,
            Node::Inner(_) => 0,
        };
        drop((left_cell, right_cell));
        if next == 0 {
            self.meta.lock().last = left;
        } else {
            self.set_link(next, |l| l.prev = left)?;
        }
        self.discard(right)?;
        {
            let mut slot = parent_cell.slot.write();
            if let Node::Inner(inner) = &mut slot.node {
                inner.keys.remove(sep);
                inner.children.remove(sep + 1);
            }
            slot.changed();
        }
        drop(parent_cell);
        path.pop();
        self.shrink_inner(path, parent)
    }

    /// Collapses a root with one child, and merges a small inner node with a
    /// neighbour under the same parent if the two fit in one.
    fn shrink_inner(&self, path: &mut Vec<(u64, usize)>, id: u64) -> Result<()> {
        let cell = self.load(id)?;
        let (children, only) = match &cell.slot.read().node {
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
            let slot = parent_cell.slot.read();
            let Node::Inner(p) = &slot.node else { return Err(self.broken("a parent is a leaf".into())) };
            if i > 0 {
                (p.children[i - 1], id, i - 1, p.keys[i - 1].clone())
            } else if i + 1 < p.children.len() {
                (id, p.children[i + 1], i, p.keys[i].clone())
            } else {
                return Ok(());
            }
        };
        let (left_cell, right_cell) = (self.load(left)?, self.load(right)?);
        {
            let mut ls = left_cell.slot.write();
            let mut rs = right_cell.slot.write();
            let (Node::Inner(l), Node::Inner(r)) = (&mut ls.node, &mut rs.node) else {
                return Err(self.broken("an inner node's neighbour is a leaf".into()));
            };
            if l.children.len() + r.children.len() > self.max_branches {
                return Ok(());
            }
            l.keys.push(sep);
            l.keys.append(&mut r.keys);
            l.children.append(&mut r.children);
            ls.changed();
        }
        drop((left_cell, right_cell));
        self.discard(right)?;
        {
            let mut slot = parent_cell.slot.write();
            if let Node::Inner(p) = &mut slot.node {
                p.keys.remove(sep_at);
                p.children.remove(sep_at + 1);
            }
            slot.changed();
        }
        drop(parent_cell);
        path.pop();
        self.shrink_inner(path, parent)
    }

    /// Forward: the first record at or after `key` (after it only, unless
    /// `inclusive`), from the start without a key. Backward: the last record
    /// before `key` (or at it, if `inclusive`), from the end without a key.
    /// The answer is written into `spare`'s buffers, if given.
    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        spare: Option<Spot>,
    ) -> Result<Option<Spot>> {
        let (mut id, mut found_leaf) = match key {
            Some(k) => {
                let (id, cell) = self.descend(k, None)?;
                (id, Some(cell))
            }
            None if forward => (self.meta.lock().first, None),
            None => (self.meta.lock().last, None),
        };
        for _ in 0..self.leaf_bound() {
            let cell = match found_leaf.take() {
                Some(cell) => cell,
                None => self.load(id)?,
            };
            let slot = cell.slot.read();
            let Node::Leaf(leaf) = &slot.node else {
                return Err(self.broken("a leaf link is an inner node".into()));
            };
            // The records that come before the answer's position.
            let before = match key {
                None if forward => 0,
                None => leaf.len(),
                Some(k) => leaf.records_before(k, self.cmp, forward, inclusive),
            };
            let found = if forward { (before < leaf.len()).then_some(before) } else { before.checked_sub(1) };
            if let Some(index) = found {
                return Ok(Some(Spot::of(leaf, id, slot.version, index, spare)));
            }
            id = if forward { leaf.next } else { leaf.prev };
            if id == 0 {
                return Ok(None);
            }
        }
        Err(self.broken("the leaves' links loop".into()))
    }

    /// Whether `spot`'s leaf is cached and unchanged since, so that the
    /// record it saw is still there, as it saw it.
    fn unchanged(&self, spot: &Spot) -> bool {
        self.cached(spot.leaf).is_some_and(|cell| cell.slot.read().version == spot.version)
    }

    /// Moves `spot` `step` places (-1 or 1) within its leaf, if the leaf is
    /// cached and unchanged since and the record is in it; false when only a
    /// seek can tell.
    fn step_in_leaf(&self, spot: &mut Spot, step: isize) -> bool {
        let Some(cell) = self.cached(spot.leaf) else { return false };
        let slot = cell.slot.read();
        let Node::Leaf(leaf) = &slot.node else { return false };
        if slot.version != spot.version {
            return false;
        }
        let Some(index) = spot.index.checked_add_signed(step).filter(|&i| i < leaf.len()) else {
            return false;
        };
        // Only in order: a broken leaf must not send a walk round in a loop.
        let wanted = if step > 0 { std::cmp::Ordering::Greater } else { std::cmp::Ordering::Less };
        let (key, value) = leaf.record(index);
        if self.cmp.compare(key, &spot.key) != wanted {
            return false;
        }
        spot.hold(key, value);
        spot.index = index;
        true
    }

    /// More steps than there are leaves (every leaf id is below `next_leaf`):
    /// a walk along the links that takes this many loops.
    fn leaf_bound(&self) -> u64 {
        self.meta.lock().next_leaf + 1
    }

    /// Calls `f` with every leaf, first to last. The caller holds the tree exclusively.
    fn each_leaf(&self, mut f: impl FnMut(&mut Slot) -> Result<()>) -> Result<()> {
        let mut id = self.meta.lock().first;
        let mut steps = 0u64;
        while id != 0 {
            let cell = self.load(id)?;
            let mut slot = cell.slot.write();
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

impl TreeDbm {
    /// Rewrites the tree into a compact new file (leaves filled whole, a fresh
    /// node store sized for them) and replaces the old file atomically.
    fn rebuild_tree(&self) -> Result<()> {
        self.owner.check(&self.path)?;
        let mut guard = self.tree.write();
        let tree = guard.take().ok_or_else(|| self.closed())?;
        if !tree.writable {
            let err = tree.read_only();
            *guard = Some(tree);
            return Err(err);
        }
        let mut temp_path = self.path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        temp_path.push(".rebuild-tmp");
        let temp_path = self.path.with_file_name(temp_path);
        let _ = std::fs::remove_file(&temp_path);
        let mut options = self.options.clone();
        options.comparator = tree.cmp;
        options.max_page_size = tree.max_page_size;
        options.max_branches = tree.max_branches;
        let nodes = tree.count.load(Ordering::Acquire) * 64 / tree.max_page_size as u64;
        options.hash.num_buckets = (nodes * 2 + 1).max(1021);
        options.hash.open = crate::file::OpenOptions::writer().truncating();
        let built = TreeDbm::open(&temp_path, true, &options).and_then(|copy| {
            tree.each_leaf(|slot| {
                if let Node::Leaf(leaf) = &slot.node {
                    for (k, v) in leaf.records() {
                        copy.set(k, v, true)?;
                    }
                }
                Ok(())
            })?;
            copy.close()
        });
        let result = built.and_then(|_| tree.close()).and_then(|_| {
            std::fs::rename(&temp_path, &self.path)
                .map_err(|e| Error::io("rename of the rebuilt file", &self.path, e))
        });
        let mut reopen = self.options.clone();
        reopen.hash.open.truncate = false;
        match Tree::open(&self.path, true, &reopen) {
            Ok(tree) => {
                *guard = Some(tree);
                result
            }
            Err(e) => result.and(Err(e)),
        }
    }
}

impl Dbm for TreeDbm {
    fn close(self: Box<Self>) -> Result<()> {
        TreeDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        let t = self.shared()?;
        if writable && !t.writable {
            return Err(t.read_only());
        }
        let unbalanced = t.apply(key, writable, f)?;
        drop(t);
        if unbalanced {
            self.rebalance_after(key)?;
        }
        Ok(())
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        // Exclusive: atomic over the keys, and free to rebalance between them.
        self.exclusive(|t| {
            if writable && !t.writable {
                return Err(t.read_only());
            }
            for (i, key) in keys.iter().enumerate() {
                if t.apply(key, writable, &mut |value| f(i, key, value))? {
                    t.rebalance(key)?;
                }
            }
            Ok(())
        })
    }

    fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        self.exclusive(|t| {
            if writable && !t.writable {
                return Err(t.read_only());
            }
            t.each_leaf(|slot| {
                let Node::Leaf(leaf) = &mut slot.node else { return Ok(()) };
                if !writable {
                    for (key, value) in leaf.records() {
                        if f(key, value) != Action::Keep {
                            return Err(Error::new(
                                ErrorKind::InvalidArgument,
                                "a read-only process asked to change a record",
                            ));
                        }
                    }
                    return Ok(());
                }
                let changed = leaf.rewrite(|key, value| {
                    let action = f(key, value);
                    if matches!(action, Action::Remove) {
                        t.count.fetch_sub(1, Ordering::AcqRel);
                    }
                    action
                });
                if changed {
                    slot.changed();
                }
                Ok(())
            })
        })
    }

    fn count(&self) -> Result<u64> {
        Ok(self.shared()?.count.load(Ordering::Acquire))
    }

    fn file_size(&self) -> Result<u64> {
        self.shared()?.store.file_size()
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn clear(&self) -> Result<()> {
        self.exclusive(|t| {
            if !t.writable {
                return Err(t.read_only());
            }
            t.store.clear()?;
            t.cache.iter().for_each(|s| s.lock().clear());
            *t.meta.lock() =
                Meta { root: 1, first: 1, last: 1, next_leaf: 2, next_inner: INNER_BASE, level: 1 };
            t.count.store(0, Ordering::Release);
            t.insert(1, Node::Leaf(Leaf::default()), true)?;
            // The old nodes are gone from the file: the empty tree is made the
            // synchronized state at once, so a crash cannot find neither.
            t.flush()?;
            t.store.synchronize(true)
        })
    }

    fn rebuild(&self) -> Result<()> {
        self.rebuild_tree()
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        self.shared()?.store.should_be_rebuilt()
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        self.exclusive(|t| {
            if t.writable {
                t.flush()?;
            }
            t.store.synchronize(hard)
        })
    }

    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        self.exclusive(|t| {
            if t.writable {
                t.flush()?;
            }
            t.store.copy_file_data(dest, hard)
        })
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let t = self.shared()?;
        let meta = *t.meta.lock();
        let cached: usize = t.cache.iter().map(|s| s.lock().len()).sum();
        let mut out = vec![
            ("class".to_string(), "TreeDbm".to_string()),
            ("num_records".into(), t.count.load(Ordering::Acquire).to_string()),
            ("tree_level".into(), meta.level.to_string()),
            ("root_id".into(), meta.root.to_string()),
            ("first_id".into(), meta.first.to_string()),
            ("last_id".into(), meta.last.to_string()),
            ("max_page_size".into(), t.max_page_size.to_string()),
            ("max_branches".into(), t.max_branches.to_string()),
            ("key_comparator".into(), t.cmp.name().to_string()),
            ("cached_pages".into(), cached.to_string()),
            ("max_cached_pages".into(), self.options.max_cached_pages.to_string()),
        ];
        out.extend(
            t.store
                .inspect()?
                .into_iter()
                .filter(|(k, _)| k != "class")
                .map(|(k, v)| (format!("store_{k}"), v)),
        );
        Ok(out)
    }

    fn is_healthy(&self) -> bool {
        self.tree.read().as_ref().is_some_and(|t| t.healthy.load(Ordering::Acquire) && t.store.is_healthy())
    }

    fn is_ordered(&self) -> bool {
        true
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        drop(self.shared()?);
        Ok(Box::new(self.cursor()))
    }
}

/// A position in a tree database: the key of its record. Every move looks the
/// key up afresh, unless the record's leaf is unchanged since it was seen, so
/// concurrent updates never invalidate it; a record removed under it leaves
/// the position at the next one.
pub struct TreeCursor<'a> {
    db: &'a TreeDbm,
    at: Option<Spot>,
    /// The buffers of a position left behind, for the next seek to fill.
    spare: Option<Spot>,
}

impl TreeCursor<'_> {
    fn seek(&mut self, forward: bool, key: Option<&[u8]>, inclusive: bool) -> Result<()> {
        let t = self.db.shared()?;
        // On an error the cursor stays where it was.
        let found = t.seek(forward, key, inclusive, self.spare.take())?;
        self.spare = std::mem::replace(&mut self.at, found);
        Ok(())
    }

    /// Moves from the current record: `step` 1 to the next, -1 to the
    /// previous, 0 to the record itself or, if it is gone, the next one.
    /// Within an unchanged leaf it needs no search.
    fn step(&mut self, step: isize) -> Result<()> {
        let t = self.db.shared()?;
        let Some(at) = &mut self.at else { return Ok(()) };
        let moved = if step == 0 { t.unchanged(at) } else { t.step_in_leaf(at, step) };
        if moved {
            return Ok(());
        }
        let found = t.seek(step >= 0, Some(&at.key), step == 0, self.spare.take())?;
        self.spare = std::mem::replace(&mut self.at, found);
        Ok(())
    }

    fn past_end() -> Error {
        Error::new(ErrorKind::NotFound, "the cursor is past the last record")
    }
}

impl Cursor for TreeCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.seek(true, None, true)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek(true, Some(key), true)
    }

    fn next(&mut self) -> Result<()> {
        self.step(1)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.step(0)?;
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
            Some((key, _)) => {
                self.db.remove(&key)?;
                // The position stays on the removed key: the next get finds the record after it.
                Ok(())
            }
            None => Err(Self::past_end()),
        }
    }

    fn last(&mut self) -> Result<()> {
        self.seek(false, None, true)
    }

    fn jump_lower(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(false, Some(key), inclusive)
    }

    fn jump_upper(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(true, Some(key), inclusive)
    }

    fn previous(&mut self) -> Result<()> {
        self.step(-1)
    }
}

/// The records of a key range, in order (see [`TreeDbm::range`]).
pub struct TreeRange<'a> {
    cursor: TreeCursor<'a>,
    start: Option<Bound<Vec<u8>>>,
    end: Bound<Vec<u8>>,
    /// The key last answered: each must come after it.
    last: Option<Vec<u8>>,
    done: bool,
}

impl Iterator for TreeRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut step = || -> Result<Option<(Vec<u8>, Vec<u8>)>> {
            match self.start.take() {
                Some(Bound::Included(k)) => self.cursor.jump_upper(&k, true)?,
                Some(Bound::Excluded(k)) => self.cursor.jump_upper(&k, false)?,
                Some(Bound::Unbounded) => self.cursor.first()?,
                None => self.cursor.next()?,
            }
            let found = self.cursor.get()?;
            let t = self.cursor.db.shared()?;
            if let (Some((key, _)), Some(last)) = (&found, &self.last) {
                if t.cmp.compare(key, last) != std::cmp::Ordering::Greater {
                    return Err(t.broken("its keys are out of order".into()));
                }
            }
            self.last = found.as_ref().map(|(k, _)| k.clone());
            Ok(found.filter(|(k, _)| match &self.end {
                Bound::Included(end) => t.cmp.compare(k, end) != std::cmp::Ordering::Greater,
                Bound::Excluded(end) => t.cmp.compare(k, end) == std::cmp::Ordering::Less,
                Bound::Unbounded => true,
            }))
        };
        match step() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
