//! Rebuilding: the tree rewritten into a compact new file.

use std::sync::atomic::Ordering;

use super::state::Tree;
use super::TreeDbm;
use crate::dbm::tree_node::Node;
use crate::dbm::Dbm;
use crate::error::{Error, Result};
use crate::file::temp_beside;

impl TreeDbm {
    /// Rewrites the tree into a compact new file (leaves filled whole, a fresh
    /// node store sized for them) and replaces the old file atomically.
    pub(super) fn rebuild_tree(&self) -> Result<()> {
        self.owner.check(&self.path)?;
        let mut guard = self.tree.write();
        let tree = guard.take().ok_or_else(|| self.closed())?;
        if !tree.writable {
            let err = tree.read_only();
            *guard = Some(tree);
            return Err(err);
        }
        let temp_path = temp_beside(&self.path, "rebuild");
        let _ = std::fs::remove_file(&temp_path);
        let mut options = self.options.clone();
        options.comparator = tree.cmp;
        options.max_page_size = tree.max_page_size;
        options.max_branches = tree.max_branches;
        let nodes = tree.count.load(Ordering::Acquire).saturating_mul(64) / tree.max_page_size as u64;
        options.hash.num_buckets = nodes.saturating_mul(2).saturating_add(1).max(1021);
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
        // The old tree is closed whole (its changed nodes written back)
        // whether or not the copy was built: merely dropped, its store would
        // be marked clean without them, and reopen as a broken tree.
        let result = match built {
            Ok(()) => tree.close().and_then(|_| {
                std::fs::rename(&temp_path, &self.path)
                    .map_err(|e| Error::io("rename of the rebuilt file", &self.path, e))
            }),
            Err(e) => {
                let _ = tree.close();
                let _ = std::fs::remove_file(&temp_path);
                Err(e)
            }
        };
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
