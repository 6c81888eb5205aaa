//! TreeDbm: a B+ tree whose nodes are records of a [`HashDbm`](super::hash::HashDbm).
//!
//! Leaves hold sorted records and links to their neighbours; inner nodes hold
//! separator keys and child ids. Nodes live in an LRU cache of
//! `max_cached_pages` and go to the node store when evicted (if changed), at
//! synchronize and at close. A record in the store under the empty key holds
//! the tree's own figures (root, ends, count, tuning).
//!
//! The files: `state` the open tree (store, cache, figures) and its opening,
//! `meta` the figures' encoding, `page` the store's records as pages,
//! `cache` the node cache, `batch` multi-key lookups that read their
//! leaves together, `walk` descents and walks along the leaves,
//! `process` the processors' answers carried out, `rebalance` splits and
//! merges, `cursor` and `range` ordered reading, `rebuild` the compaction,
//! `restore` the restore of a crashed or damaged file.
//!
//! # One mutation path
//! Every change to the records goes through `Tree::commit` (in `process`):
//! an update log, an index or a statistics counter attaches there. It sees
//! each record's key, its value before and the answer about to be carried
//! out, under the lock that makes the change atomic, and may refuse it; it
//! sees a clear too. It keeps the record count. The public operations that
//! reach it:
//! - `process`, and every provided method built on it (`set`, `remove`,
//!   `append`, `compare_exchange`, `increment`, ...), and `process_multi`,
//!   through `Tree::apply`;
//! - `process_each` with writable answers, through `Tree::apply_each`;
//! - a cursor's `set` and `remove`, through `process`;
//! - `clear`, through `Tree::clear`;
//! - `rebuild`, which changes no record but writes each one into the new
//!   file through `process` of that file's own tree, and so through its
//!   `commit`.
//!
//! # One page encode point, one decode point
//! Every page, a node or the tree's figures, goes to the node store through
//! `Tree::write_page` and comes from it through `Tree::read_page` (in
//! `page`): nodes at write-back and load, the figures at flush and open. A
//! page codec (compression, encryption of whole pages) attaches there,
//! between the encoding and the store's set, and between the store's read
//! buffer and the decoding.
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

mod batch;
mod bulk;
mod cache;
mod cursor;
mod meta;
mod options;
mod page;
mod params;
mod process;
mod range;
mod rebalance;
mod rebuild;
mod restore;
mod state;
mod walk;
#[cfg(test)]
mod walk_tests;

use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};

pub use super::comparator::KeyComparator;
pub use cursor::TreeCursor;
pub use options::TreeOptions;
pub use range::TreeRange;

use super::hash::{take_cipher_key, take_record_comp_mode, take_record_crc_mode};
use super::params::{Params, Taker};
use super::{Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::dbm::retire::Retirer;
use crate::dbm::{Access, Durability};
use crate::error::{Error, ErrorKind, Result};
use crate::file::Owner;
use state::Tree;

/// The largest record, and the largest max_page_size: a leaf, at most one
/// of each, stays under 4 GiB, as the offsets within it need.
const MAX_RECORD: usize = (1 << 31) - 1;
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
/// let db = TreeDbm::builder().open(dir.path().join("casket.kt"))?;
/// for (k, v) in [("tokyo", "13"), ("osaka", "27"), ("kyoto", "26")] {
///     db.set(k.as_bytes(), v.as_bytes())?;
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
    /// Closes a rebuild's old tree off the caller's time.
    retirer: Retirer,
}

crate::dbm::builder::options_builder!(TreeDbm, TreeOptions);

impl TreeDbm {
    /// Opens or creates the tree database at `path`. The tuning of `options`
    /// applies to a new file; an existing one keeps its own. A file not closed
    /// cleanly is restored to its last hard synchronization first, if
    /// `options.hash.restore` allows.
    pub fn open(path: impl AsRef<Path>, access: Access, options: &TreeOptions) -> Result<TreeDbm> {
        let path = path.as_ref().to_path_buf();
        check_options(options)?;
        let tree = Tree::open(&path, access, options)?;
        Ok(TreeDbm {
            path,
            options: options.clone(),
            tree: RwLock::new(Some(tree)),
            owner: Owner::unclaimed(),
            retirer: Retirer::default(),
        })
    }

    /// Writes everything back, marks the file closed cleanly and closes it,
    /// after the close of a rebuild's old file has ended.
    pub fn close(self) -> Result<()> {
        self.retirer.wait();
        let taken = self.tree.write().take();
        taken.map_or(Ok(()), Tree::close)
    }

    /// The records whose keys fall in `range`, in order. Each step moves
    /// within its leaf if the leaf is unchanged and looks its key up afresh
    /// otherwise, so concurrent updates never invalidate the iterator.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<TreeRange<'_>> {
        drop(self.shared()?);
        let owned = |b: Bound<&K>| b.map(|k| k.as_ref().to_vec());
        Ok(TreeRange::new(self.cursor(), owned(range.start_bound()), owned(range.end_bound())))
    }

    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> TreeCursor<'_> {
        crate::dbm::ordered_cursor::OrderedCursor::new(self)
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
    if o.cached_pages_protected_percent > 100 {
        return bad(format!(
            "cached_pages_protected_percent must be at most 100, not {}",
            o.cached_pages_protected_percent
        ));
    }
    Ok(())
}

impl Dbm for TreeDbm {
    fn close(self: Box<Self>) -> Result<()> {
        TreeDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        let t = self.shared()?;
        if access.is_writable() && !t.writable {
            return Err(t.read_only());
        }
        let unbalanced = t.apply(key, access.is_writable(), f)?;
        drop(t);
        if unbalanced {
            self.rebalance_after(key)?;
        }
        Ok(())
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        // Reads go under the shared hold where they can (see
        // `read_multi_shared`), so that threads' batches wait for the device
        // together rather than in turn.
        if !access.is_writable() && self.shared()?.read_multi_shared(keys, f)? {
            return Ok(());
        }
        // Exclusive: atomic over the keys, and free to rebalance between them.
        self.exclusive(|t| {
            if access.is_writable() && !t.writable {
                return Err(t.read_only());
            }
            t.apply_multi(keys, access.is_writable(), f)
        })
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let _scan = crate::caching::ScanScope::enter();
        self.exclusive(|t| {
            if access.is_writable() && !t.writable {
                return Err(t.read_only());
            }
            t.apply_each(access.is_writable(), f)
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
            t.clear()
        })
    }

    fn rebuild(&self) -> Result<()> {
        self.rebuild_tree(None, None, None, rebuild::PageShape::default())
    }

    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        let mut t = Taker::new(params, "rebuilding a tree database");
        let record_crc = take_record_crc_mode(&mut t)?;
        let record_comp = take_record_comp_mode(&mut t)?;
        let cipher_key = take_cipher_key(&mut t);
        // The page sizes may change: records are copied into a new tree.
        let shape = rebuild::PageShape {
            max_page_size: t.number(&["max_page_size"])?,
            max_branches: t.number(&["max_branches"])?,
        };
        t.finish()?;
        self.rebuild_tree(record_crc, record_comp, cipher_key, shape)
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        self.shared()?.store.should_be_rebuilt()
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.exclusive(|t| {
            if t.writable {
                t.flush()?;
            }
            t.store.synchronize(durability)
        })
    }

    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        self.exclusive(|t| {
            if t.writable {
                t.flush()?;
            }
            t.store.copy_file_data(dest, durability)
        })
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let t = self.shared()?;
        let meta = *t.meta.lock();
        let cached = t.cache.len();
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
            ("cached_leaves".into(), t.cache.leaves().to_string()),
            ("cached_pages_protected".into(), t.cache.protected().to_string()),
            ("node_reads".into(), t.node_reads.single.load(Ordering::Relaxed).to_string()),
            ("node_read_batches".into(), t.node_reads.batches.load(Ordering::Relaxed).to_string()),
            ("node_batch_reads".into(), t.node_reads.batched.load(Ordering::Relaxed).to_string()),
            (
                "cached_pages_protected_percent".into(),
                self.options.cached_pages_protected_percent.to_string(),
            ),
        ];
        // The checksums and the compression apply to the tree's pages, so
        // their modes are the tree's own figures; the rest of the store's
        // are named as the store's.
        let store = t.store.inspect()?;
        let own = |k: &str| k == "record_crc_mode" || k == "record_comp_mode" || k == "cipher";
        out.extend(store.iter().filter(|(k, _)| own(k)).cloned());
        out.extend(
            store
                .into_iter()
                .filter(|(k, _)| k != "class" && !own(k))
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

    /// Its restore goes back to the last hard synchronization (see docs/crash-safety.md).
    fn restores_to_last_sync(&self) -> bool {
        true
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        drop(self.shared()?);
        Ok(Box::new(self.cursor()))
    }
}
