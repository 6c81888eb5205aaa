//! What `kura perf wicked` counts as it goes, for a run whose number of
//! operations is not known ahead (`--seconds`): printed as one line that a
//! stress script can read.

use std::sync::atomic::{AtomicU64, Ordering};

/// How many of each kind of operation the threads made, printed at the end.
#[derive(Default)]
pub struct Tally {
    /// Every operation, the rare ones included.
    pub operations: AtomicU64,
    /// Rebuilds.
    pub rebuilds: AtomicU64,
    /// Clears.
    pub clears: AtomicU64,
    /// Synchronizations other than those every run makes.
    pub synchronizations: AtomicU64,
    /// Iterator walks.
    pub iterator_walks: AtomicU64,
}

impl Tally {
    /// Adds one to `counter`.
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// `Tally: operations=N rebuilds=N clears=N synchronizations=N iterator_walks=N`.
    pub fn line(&self) -> String {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        format!(
            "Tally: operations={} rebuilds={} clears={} synchronizations={} iterator_walks={}",
            get(&self.operations),
            get(&self.rebuilds),
            get(&self.clears),
            get(&self.synchronizations),
            get(&self.iterator_walks)
        )
    }
}
