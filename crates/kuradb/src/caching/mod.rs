//! What the page cache and the tree's node cache share: their scan-resistant
//! replacement policy (`Segments`, a segmented LRU), the mark a thread puts on its reads
//! while it walks a whole database ([`ScanScope`]), and each thread's own
//! counts of hits and misses ([`ThreadCacheCounts`]).
//!
//! Both caches are segmented LRUs. A new entry enters the *probationary*
//! segment; only a second use, by a read that is not part of a scan, moves
//! it to the *protected* segment, which holds at most a set share of the
//! cache. Evictions take the least recently used probationary entry first.
//! A walk over the whole database (a cursor's moves, `process_each`,
//! `export`, a rebuild) marks its reads as scans: they may fill the
//! probationary segment, but never promote an entry nor reorder one, so the
//! working set of random lookups, protected by its second use, stays.

mod counts;
mod scan;
mod segments;

pub use counts::ThreadCacheCounts;
pub(crate) use counts::{count_node, count_page};
pub(crate) use scan::in_scan;
pub use scan::ScanScope;
pub(crate) use segments::{Segment, Segments, NIL};

/// What the caches' tables (block indexes and node ids to slots) hash
/// with: numbers already well spread, for which SipHash (the standard
/// default, made to resist chosen keys from outside) costs more than the
/// rest of a lookup. FxHash multiplies by an odd constant, which also
/// spreads an id's bits to the top of the hash, where the table takes each
/// entry's tag from: an identity hash would give every small id the same
/// tag and make each probe compare every entry of its group.
pub(crate) type IdHasher = rustc_hash::FxBuildHasher;

/// The default share of a cache, in percent, its protected segment may hold.
pub const DEFAULT_PROTECTED_PERCENT: u8 = 80;
