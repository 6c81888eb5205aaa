//! The open tree behind a [`TreeDbm`](super::TreeDbm): its node store, node
//! cache and figures, and how it opens and closes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::batch::NodeReads;
use super::cache::NodeCache;
use super::meta::{decode_meta, Meta};
use super::page::FIGURES_KEY;
use super::{KeyComparator, TreeOptions};
use crate::dbm::hash::{HashDbm, Kind};
use crate::dbm::tree_node::{Leaf, Node};
use crate::dbm::{Access, Dbm};
use crate::error::{Error, ErrorKind, Result};

pub(super) struct Tree {
    pub store: HashDbm,
    pub writable: bool,
    pub cmp: KeyComparator,
    pub max_page_size: usize,
    pub max_branches: usize,
    /// Changed only while the tree is held exclusively.
    pub meta: Mutex<Meta>,
    /// Changed only by [`Tree::commit`].
    pub count: AtomicU64,
    pub cache: NodeCache,
    pub node_reads: NodeReads,
    pub healthy: AtomicBool,
}

impl Tree {
    pub(super) fn open(path: &Path, access: Access, o: &TreeOptions) -> Result<Tree> {
        let store = HashDbm::open_kind(path.to_path_buf(), access.is_writable(), &o.hash, Kind::TreeNodes)?;
        // A store not closed cleanly and opened with restore_mode read_only
        // takes no writes, and so neither does the tree.
        let writable = store.takes_writes();
        let mut tree = Tree {
            store,
            writable,
            cmp: o.comparator.unwrap_or(KeyComparator::Lexical),
            max_page_size: o.max_page_size,
            max_branches: o.max_branches,
            meta: Mutex::new(Meta::empty()),
            count: AtomicU64::new(0),
            cache: NodeCache::new(o.max_cached_pages, o.cached_pages_protected_percent),
            node_reads: NodeReads::default(),
            healthy: AtomicBool::new(true),
        };
        match tree.read_page(FIGURES_KEY, |bytes| decode_meta(bytes, path))? {
            Some(stored) => {
                let s = stored?;
                // The keys are stored in the file's order: another one would
                // misplace every lookup, and ignoring the request would hide
                // that the caller's order is not the one in force.
                if let Some(asked) = o.comparator.filter(|asked| *asked != s.cmp) {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "{} orders its keys by key_comparator={}; it cannot be reopened with \
                             key_comparator={}: leave key_comparator out or give the file's",
                            path.display(),
                            s.cmp.name(),
                            asked.name()
                        ),
                    ));
                }
                tree.cmp = s.cmp;
                tree.max_page_size = s.max_page_size;
                tree.max_branches = s.max_branches;
                *tree.meta.get_mut() = s.meta;
                tree.count = AtomicU64::new(s.count);
            }
            None if tree.store.count()? > 0 => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("{} has nodes but not the tree's figures", path.display()),
                ))
            }
            None => {
                // A new tree: one empty leaf, written at the first synchronization.
                tree.insert(1, Node::Leaf(Leaf::default()), writable);
            }
        }
        tree.read_pages_whole(o.hash.min_read_size);
        Ok(tree)
    }

    /// Writes every changed node and closes the store cleanly; if a node
    /// cannot be written, the store is closed as a crash would close it, so
    /// that the next open restores the last hard synchronization rather than
    /// finding half of the nodes written.
    pub(super) fn close(self) -> Result<()> {
        match if self.writable { self.flush() } else { Ok(()) } {
            Ok(()) => self.store.close(),
            Err(e) => {
                let _ = self.store.abandon();
                Err(e)
            }
        }
    }

    /// Closes the tree writing nothing more: for a tree whose file has no
    /// name any more (a rebuild's old one), where what a close would write
    /// is lost with the file.
    pub(super) fn abandon(self) -> Result<()> {
        self.store.abandon()
    }

    /// Marks the tree unhealthy and says what is broken.
    pub(super) fn broken(&self, what: String) -> Error {
        self.healthy.store(false, Ordering::Release);
        let path = self.store.path().map(|p| p.display().to_string()).unwrap_or_default();
        Error::new(ErrorKind::BrokenData, format!("{path} is broken: {what}"))
    }

    pub(super) fn read_only(&self) -> Error {
        let path = self.store.path().map(|p| p.display().to_string()).unwrap_or_default();
        Error::new(ErrorKind::ReadOnly, format!("{path} is open for reading only"))
    }
}
