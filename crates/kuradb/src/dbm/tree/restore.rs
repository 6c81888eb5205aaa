//! Restoring a tree database that was not closed cleanly or is damaged.
//!
//! The node store is restored first, as of the tree's last completed hard
//! synchronization (the hash database's restore: every page whose checksum
//! holds, in its latest version up to that epoch). That tree is then checked
//! whole: every node reachable from the root loads, and the leaves, walked
//! from the root and along their links, hold as many records as the figures
//! count. A tree that is not whole lost a page to a failed checksum; it is
//! salvaged: each surviving leaf gives its records to a new tree, so the
//! records of the damaged page are all that is lost. A key that two leaves
//! hold (an older version of a damaged leaf, beside the leaf that took its
//! keys over) keeps one of its values, either of which was once written.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::meta::decode_meta;
use super::page::FIGURES_KEY;
use super::state::Tree;
use super::{TreeDbm, TreeOptions};
use crate::dbm::hash::{HashDbm, Kind};
use crate::dbm::tree_node::{is_leaf_id, Node};
use crate::dbm::{Access, Action, Dbm};
use crate::error::{Error, Result};
use crate::file::{temp_beside, OpenOptions};

impl TreeDbm {
    /// Restores the tree database at `src`, which was not closed cleanly (or
    /// is damaged), into a new one at `dest`, as of its last hard
    /// synchronization; a page that fails its checksum is skipped, and with
    /// it only the records it held. Answers the number of records.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, options: &TreeOptions) -> Result<u64> {
        let dest = dest.as_ref();
        HashDbm::restore_kind(src.as_ref(), dest, &options.hash, Kind::TreeNodes)?;
        match whole_count(dest, options) {
            Ok(count) => Ok(count),
            Err(_) => salvage(dest, options),
        }
    }
}

/// The record count of the tree at `path` if it is whole; an error saying
/// what is missing otherwise.
fn whole_count(path: &Path, options: &TreeOptions) -> Result<u64> {
    let db = TreeDbm::open(path, Access::ReadOnly, options)?;
    let checked = db.exclusive(Tree::check_whole);
    let closed = db.close();
    let count = checked?;
    closed.map(|_| count)
}

impl Tree {
    /// Checks the tree whole (see [`Tree::each_leaf_below_root`]), and that
    /// the links join exactly those leaves in the same order, both ways,
    /// and that they hold what the figures count; answers the count.
    pub(super) fn check_whole(&self) -> Result<u64> {
        let mut below_root = 0u64;
        let leaves = self.each_leaf_below_root(|slot| {
            if let Node::Leaf(leaf) = &slot.node {
                below_root += leaf.len() as u64;
            }
            Ok(())
        })?;
        let meta = *self.meta.lock();
        let (mut id, mut prev) = (meta.first, 0);
        for &expected in &leaves {
            if id != expected {
                return Err(
                    self.broken(format!("the links reach leaf {id} where the tree has leaf {expected}"))
                );
            }
            let cell = self.load(id)?;
            let slot = cell.read();
            let Node::Leaf(leaf) = &slot.node else {
                return Err(self.broken("a leaf link is an inner node".into()));
            };
            if leaf.prev != prev {
                return Err(self.broken(format!("leaf {id} links back to {}, not {prev}", leaf.prev)));
            }
            (prev, id) = (id, leaf.next);
        }
        if id != 0 || meta.last != prev {
            return Err(self.broken("the links do not end at the last leaf".into()));
        }
        let count = self.count.load(Ordering::Acquire);
        if below_root != count {
            return Err(
                self.broken(format!("its figures count {count} records, its leaves hold {below_root}"))
            );
        }
        Ok(count)
    }
}

/// Rewrites the restored node store at `path` as a new tree of the records
/// of every leaf that decodes; answers how many records it holds.
fn salvage(path: &Path, options: &TreeOptions) -> Result<u64> {
    let mut reader = options.hash.clone();
    reader.open = OpenOptions::reader();
    let store = HashDbm::open_kind(path.to_path_buf(), false, &reader, Kind::TreeNodes)?;
    let mut o = options.clone();
    o.hash.record_crc_mode = store.record_crc_mode()?;
    o.hash.record_comp_mode = store.record_comp_mode()?;
    // The tuning the figures name, where they survive; the options' otherwise.
    if let Some(Ok(figures)) = store.get(FIGURES_KEY)?.map(|bytes| decode_meta(&bytes, path)) {
        o.comparator = Some(figures.cmp);
        o.max_page_size = figures.max_page_size;
        o.max_branches = figures.max_branches;
    }
    o.hash.open = OpenOptions::writer().truncating();
    let temp = temp_beside(path, "salvage");
    let copy = TreeDbm::open(&temp, Access::ReadWrite, &o)?;
    let mut written = Ok(());
    let walked = store.process_each(Access::ReadOnly, &mut |key, page| {
        let id = <[u8; 8]>::try_from(key).map_or(0, u64::from_be_bytes);
        if written.is_ok() && id != 0 && is_leaf_id(id) {
            // Any order: each record is set again.
            if let Ok(Node::Leaf(leaf)) = Node::decode(id, page, path, None) {
                written = leaf.records().try_for_each(|(k, v)| copy.set(k, v));
            }
        }
        Action::Keep
    });
    let count = copy.count();
    let filled = walked.and(written).and(count).and_then(|count| copy.close().map(|_| count));
    let closed = store.close();
    let count = filled.and_then(|count| closed.map(|_| count));
    match count {
        Ok(count) => {
            std::fs::rename(&temp, path).map_err(|e| Error::io("rename of the salvaged tree", path, e))?;
            Ok(count)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}
