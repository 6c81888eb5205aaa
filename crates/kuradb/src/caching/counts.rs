//! Each thread's own count of cache hits and misses, over every cache it
//! uses, so a benchmark can tell one group of threads' hit rate from
//! another's.

use std::cell::Cell;

thread_local! {
    static COUNTS: Cell<ThreadCacheCounts> = const { Cell::new(ThreadCacheCounts::ZERO) };
}

/// The hits and misses of the calling thread in every page cache and tree
/// node cache, since the thread started or last called [`take`](Self::take).
///
/// ```
/// use kuradb::caching::ThreadCacheCounts;
/// let before = ThreadCacheCounts::take();
/// // ... lookups ...
/// let counts = ThreadCacheCounts::take();
/// assert_eq!(counts.page_hit_rate(), None); // no page-cache access in between
/// # let _ = before;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadCacheCounts {
    /// Accesses of a page-cache block that was cached.
    pub page_hits: u64,
    /// Accesses of a page-cache block that was not.
    pub page_misses: u64,
    /// Loads of a tree node that was cached.
    pub node_hits: u64,
    /// Loads of a tree node that was not.
    pub node_misses: u64,
}

impl ThreadCacheCounts {
    const ZERO: ThreadCacheCounts =
        ThreadCacheCounts { page_hits: 0, page_misses: 0, node_hits: 0, node_misses: 0 };

    /// This thread's counts so far.
    pub fn current() -> ThreadCacheCounts {
        COUNTS.with(Cell::get)
    }

    /// This thread's counts so far, resetting them to zero.
    pub fn take() -> ThreadCacheCounts {
        COUNTS.with(|c| c.replace(ThreadCacheCounts::ZERO))
    }

    /// The counts of both, added.
    pub fn sum(self, other: ThreadCacheCounts) -> ThreadCacheCounts {
        ThreadCacheCounts {
            page_hits: self.page_hits + other.page_hits,
            page_misses: self.page_misses + other.page_misses,
            node_hits: self.node_hits + other.node_hits,
            node_misses: self.node_misses + other.node_misses,
        }
    }

    /// The share of page-cache accesses that hit, if there were any.
    pub fn page_hit_rate(&self) -> Option<f64> {
        rate(self.page_hits, self.page_misses)
    }

    /// The share of node loads that hit, if there were any.
    pub fn node_hit_rate(&self) -> Option<f64> {
        rate(self.node_hits, self.node_misses)
    }
}

fn rate(hits: u64, misses: u64) -> Option<f64> {
    let all = hits + misses;
    (all > 0).then(|| hits as f64 / all as f64)
}

/// Counts `n` page-cache accesses of this thread, hits or misses.
pub(crate) fn count_page(hit: bool, n: u64) {
    COUNTS.with(|c| {
        let mut v = c.get();
        if hit {
            v.page_hits += n;
        } else {
            v.page_misses += n;
        }
        c.set(v);
    });
}

/// Counts one node load of this thread, a hit or a miss.
pub(crate) fn count_node(hit: bool) {
    COUNTS.with(|c| {
        let mut v = c.get();
        if hit {
            v.node_hits += 1;
        } else {
            v.node_misses += 1;
        }
        c.set(v);
    });
}
