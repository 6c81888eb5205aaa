//! The tuning of an on-memory B+ tree database.

use crate::dbm::comparator::KeyComparator;

/// Everything [`BabyDbm::new`](super::BabyDbm::new) and
/// [`BabyDbm::open`](super::BabyDbm::open) take.
#[derive(Clone, Debug)]
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
}

impl Default for BabyOptions {
    fn default() -> BabyOptions {
        BabyOptions {
            max_page_size: 4096,
            max_branches: 128,
            comparator: KeyComparator::Lexical,
            truncate: false,
        }
    }
}
