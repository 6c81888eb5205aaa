//! Rebuilding: the tree rewritten into a compact new file.

use std::sync::atomic::Ordering;

use super::bulk::BulkLoad;
use super::TreeDbm;
use crate::dbm::hash::{CipherKey, RecordCompMode, RecordCrcMode};
use crate::dbm::tree_node::Node;
use crate::dbm::Access;
use crate::error::Result;
use crate::file::temp_beside;

impl TreeDbm {
    /// Rewrites the tree into a compact new file (leaves filled whole, a fresh
    /// node store sized for them) and replaces the old file atomically. The
    /// new file keeps the old one's record checksum mode unless `record_crc`
    /// gives another, its compression mode unless `record_comp` does (a
    /// zstd store trains its dictionary from the pages the copy writes), and
    /// its cipher key unless `cipher_key` gives another (an empty one:
    /// unencrypted).
    /// Rewrites the tree into a new file (with new page sizes where `shape`
    /// says) that then takes the database's name.
    pub(super) fn rebuild_tree(
        &self,
        record_crc: Option<RecordCrcMode>,
        record_comp: Option<RecordCompMode>,
        cipher_key: Option<CipherKey>,
        shape: PageShape,
    ) -> Result<()> {
        self.owner.check(&self.path)?;
        let _scan = crate::caching::ScanScope::enter();
        let mut guard = self.tree.write();
        let tree = guard.take().ok_or_else(|| self.closed())?;
        if !tree.writable {
            let err = tree.read_only();
            *guard = Some(tree);
            return Err(err);
        }
        let temp_path = temp_beside(&self.path, "rebuild");
        let mut options = self.options.clone();
        options.comparator = Some(tree.cmp);
        options.max_page_size = shape.max_page_size.unwrap_or(tree.max_page_size);
        options.max_branches = shape.max_branches.unwrap_or(tree.max_branches);
        if let Err(e) = super::check_options(&options) {
            *guard = Some(tree);
            return Err(e);
        }
        options.hash.record_crc_mode = match record_crc {
            Some(mode) => mode,
            None => match tree.store.record_crc_mode() {
                Ok(mode) => mode,
                Err(e) => {
                    *guard = Some(tree);
                    return Err(e);
                }
            },
        };
        options.hash.record_comp_mode = match record_comp {
            Some(mode) => mode,
            None => match tree.store.record_comp_mode() {
                Ok(mode) => mode,
                Err(e) => {
                    *guard = Some(tree);
                    return Err(e);
                }
            },
        };
        options.hash.cipher_key = match cipher_key {
            Some(key) => Some(key),
            None => match tree.store.cipher_key() {
                Ok(key) => key,
                Err(e) => {
                    *guard = Some(tree);
                    return Err(e);
                }
            },
        };
        // The figures' record count may be damaged: the store's own count,
        // bounded by its file, bounds the nodes a rebuild sizes its table by.
        let stored = match tree.store.plausible_count() {
            Ok(nodes) => nodes,
            Err(e) => {
                *guard = Some(tree);
                return Err(e);
            }
        };
        let nodes =
            (tree.count.load(Ordering::Acquire).saturating_mul(64) / tree.max_page_size as u64).min(stored);
        options.hash.num_buckets = nodes.saturating_mul(2).saturating_add(1).max(1021);
        options.hash.open.create = true;
        options.hash.open.truncate = true;
        // Nobody else knows the temporary file: its lock is free, or
        // something is wrong that waiting would not mend.
        options.hash.open.lock_wait = crate::file::LockWait::Fail;
        let built = TreeDbm::open(&temp_path, Access::ReadWrite, &options).and_then(|copy| {
            copy.exclusive(|target| {
                let mut load = BulkLoad::new(target);
                // As lookups see the tree: a damaged tree whose links reach a
                // leaf the root does not is copied without it, or refused.
                tree.each_leaf_below_root(|slot| {
                    if let Node::Leaf(leaf) = &slot.node {
                        for (k, v) in leaf.records() {
                            load.push(k, v)?;
                        }
                    }
                    Ok(())
                })?;
                load.finish()
            })?;
            // Closed, which makes it durable before it takes the database's
            // name, and opened again: the close also cuts the file to its
            // logical size, giving back the room a memory-mapped store
            // reserves ahead of its end, so that a compaction leaves a
            // compact file on the device. (A synchronization after the
            // reopen would append to the store and reserve that room again.)
            copy.close()?;
            let mut again = options.clone();
            again.hash.open.truncate = false;
            let copy = TreeDbm::open(&temp_path, Access::ReadWrite, &again)?;
            let taken = copy.tree.write().take();
            taken.ok_or_else(|| copy.closed())
        });
        // The new file takes the path while it is open and locked, and the
        // old one stays locked until then: no other process can take the
        // lock of the file at the path in between, and one that waited for
        // the old file's lock finds the path renamed and tries the new one.
        let installed = built.and_then(|mut new| match new.store.rename_file(&self.path) {
            Ok(()) => Ok(new),
            Err(e) => {
                let _ = new.close();
                Err(e)
            }
        });
        match installed {
            Ok(new) => {
                *guard = Some(new);
                // Cursors on the old tree look again, in the new one.
                tree.cache.retire_all();
                // The old file has no name any more: what a close would write
                // is lost with it, so it is closed writing nothing, and what
                // is left of that (freeing) is done off the caller's time.
                self.retirer.retire(tree, |tree| {
                    let _ = tree.abandon();
                });
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp_path);
                *guard = Some(tree);
                Err(e)
            }
        }
    }
}

/// The page sizes a rebuild gives the new tree; `None` keeps the file's.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PageShape {
    /// A leaf whose records take more bytes than this splits.
    pub max_page_size: Option<usize>,
    /// An inner node with more children than this splits.
    pub max_branches: Option<usize>,
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::{TreeDbm, TreeOptions};
    use crate::dbm::{Access, Dbm};

    #[test]
    fn the_old_tree_is_closed_in_a_thread_that_a_close_waits_for() {
        let dir = tempfile::tempdir().unwrap();
        let db = TreeDbm::open(dir.path().join("t.kt"), Access::ReadWrite, &TreeOptions::default()).unwrap();
        db.set(b"key", b"value").unwrap();
        db.rebuild().unwrap();
        let ended = db.retirer.queue_slow_close();
        db.close().unwrap();
        assert!(ended.load(Ordering::SeqCst), "the close did not wait");
    }
}
