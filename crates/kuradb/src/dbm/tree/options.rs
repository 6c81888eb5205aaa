//! The tuning parameters of a tree database.

use super::KeyComparator;
use crate::dbm::hash::{CipherKey, HashOptions};

/// Everything [`TreeDbm::open`](super::TreeDbm::open) takes. `max_page_size`,
/// `max_branches` and `comparator` apply when the file is created; a reopen
/// reads them from the file. The node store's tuning (`hash`) likewise. A
/// reopen refuses a `comparator` other than the file's, since the keys stay
/// in the order the file was made with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TreeOptions {
    /// The file, locking and tuning of the hash database the nodes are stored in.
    pub hash: HashOptions,
    /// A leaf whose records take more bytes than this splits (tuning, at creation).
    pub max_page_size: usize,
    /// An inner node with more children than this splits (tuning, at creation).
    pub max_branches: usize,
    /// Nodes kept in memory; the least recently used beyond this are written
    /// back (if changed) and dropped.
    pub max_cached_pages: usize,
    /// The share of `max_cached_pages`, in percent (0 to 100), that nodes
    /// loaded again by lookups may hold; the rest is for nodes loaded once
    /// and for walks (cursors, `process_each`, export, rebuilds), whose loads
    /// never take a protected place. 0 makes the cache a plain LRU.
    pub cached_pages_protected_percent: u8,
    /// The order of the keys (tuning, at creation). `None`: lexical for a new
    /// file, the file's own on a reopen; given for an existing file, it must
    /// be the file's.
    pub comparator: Option<KeyComparator>,
}

impl TreeOptions {
    /// Replaces the node store's options; the default ones are tuned for nodes, so
    /// change `TreeOptions::default().hash` rather than `HashOptions::default()`.
    pub fn hash(mut self, hash: HashOptions) -> TreeOptions {
        self.hash = hash;
        self
    }

    /// Sets the bytes of records past which a leaf splits (tuning, at creation).
    pub fn max_page_size(mut self, max_page_size: usize) -> TreeOptions {
        self.max_page_size = max_page_size;
        self
    }

    /// Sets the children past which an inner node splits (tuning, at creation).
    pub fn max_branches(mut self, max_branches: usize) -> TreeOptions {
        self.max_branches = max_branches;
        self
    }

    /// Sets the nodes kept in memory.
    pub fn max_cached_pages(mut self, max_cached_pages: usize) -> TreeOptions {
        self.max_cached_pages = max_cached_pages;
        self
    }

    /// Sets the share of the node cache, in percent, for nodes lookups use again.
    pub fn cached_pages_protected_percent(mut self, percent: u8) -> TreeOptions {
        self.cached_pages_protected_percent = percent;
        self
    }

    /// Encrypts every page (and so every key and value) with a key derived
    /// from `key`: the node store's
    /// [`cipher_key`](HashOptions#structfield.cipher_key).
    pub fn cipher_key(mut self, key: impl Into<CipherKey>) -> TreeOptions {
        self.hash.cipher_key = Some(key.into());
        self
    }

    /// Sets the order of the keys (tuning, at creation; a reopen refuses
    /// another than the file's).
    pub fn comparator(mut self, comparator: KeyComparator) -> TreeOptions {
        self.comparator = Some(comparator);
        self
    }
}

impl Default for TreeOptions {
    fn default() -> TreeOptions {
        TreeOptions {
            hash: HashOptions { num_buckets: 131_101, align_pow: 10, ..HashOptions::default() },
            max_page_size: 8130,
            max_branches: 256,
            max_cached_pages: 10_000,
            cached_pages_protected_percent: crate::caching::DEFAULT_PROTECTED_PERCENT,
            comparator: None,
        }
    }
}
