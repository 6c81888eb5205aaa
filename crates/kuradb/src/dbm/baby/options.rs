//! The tuning of an on-memory B+ tree database.

use crate::dbm::comparator::KeyComparator;
use crate::dbm::persistence::FlatLock;

/// Everything [`BabyDbm::new`](super::BabyDbm::new) and
/// [`BabyDbm::open`](super::BabyDbm::open) take.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BabyOptions {
    /// A leaf whose records take more bytes than this splits; one below a
    /// quarter of it merges with a neighbour.
    pub max_page_size: usize,
    /// An inner node with more children than this splits.
    pub max_branches: usize,
    /// The order of the keys.
    pub comparator: KeyComparator,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
    /// How a writer locks the flat file against writers in other processes.
    pub lock: FlatLock,
}

impl BabyOptions {
    /// Sets the bytes of records past which a leaf splits.
    pub fn max_page_size(mut self, max_page_size: usize) -> BabyOptions {
        self.max_page_size = max_page_size;
        self
    }

    /// Sets the children past which an inner node splits.
    pub fn max_branches(mut self, max_branches: usize) -> BabyOptions {
        self.max_branches = max_branches;
        self
    }

    /// Sets the order of the keys.
    pub fn comparator(mut self, comparator: KeyComparator) -> BabyOptions {
        self.comparator = comparator;
        self
    }

    /// Starts empty instead of reading an existing flat file, or not.
    pub fn truncate(mut self, truncate: bool) -> BabyOptions {
        self.truncate = truncate;
        self
    }

    /// Sets how a writer locks the flat file against writers in other processes.
    pub fn lock(mut self, lock: FlatLock) -> BabyOptions {
        self.lock = lock;
        self
    }
}

impl Default for BabyOptions {
    fn default() -> BabyOptions {
        BabyOptions {
            max_page_size: 4096,
            max_branches: 128,
            comparator: KeyComparator::Lexical,
            truncate: false,
            lock: FlatLock::default(),
        }
    }
}
