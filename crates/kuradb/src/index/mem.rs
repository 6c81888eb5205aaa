//! MemIndex: an index whose pairs are the records of a BabyDbm in memory.

use super::pair_order;
use super::pairs::Pairs;
use crate::dbm::baby::{BabyDbm, BabyOptions};
use crate::dbm::comparator::KeyComparator;
use crate::dbm::Dbm;
use crate::error::Result;

/// A secondary index in memory: the records of a [`BabyDbm`], encoded as
/// [`FileIndex`](super::FileIndex) encodes them. See the
/// [module](super) for an example.
pub struct MemIndex {
    pairs: Pairs<BabyDbm>,
}

impl MemIndex {
    /// An empty index in the pair lexical order.
    pub fn new() -> Result<MemIndex> {
        MemIndex::with_comparator(KeyComparator::PairLexical)
    }

    /// An empty index in `cmp`'s order, which must be a pair order.
    pub fn with_comparator(cmp: KeyComparator) -> Result<MemIndex> {
        let db = BabyDbm::new(&BabyOptions::default().comparator(pair_order(cmp)?))?;
        Ok(MemIndex { pairs: Pairs { db } })
    }

    /// Rewrites the tree compactly (after many removals).
    pub fn rebuild(&self) -> Result<()> {
        self.pairs.db.rebuild()
    }

    /// The memory the pairs take, in bytes (an estimate).
    pub fn memory_size(&self) -> Result<u64> {
        self.pairs.db.file_size()
    }
}

super::pairs::index_over_pairs!(MemIndex);
