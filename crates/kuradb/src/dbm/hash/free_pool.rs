//! The free-block pool: space of records no chain reaches any more, which
//! later records may reuse, and the records still to be marked void before
//! their space may be.

use std::collections::{BTreeMap, HashSet};

/// The flag on a doomed record's size saying its space was reusable at once.
pub(super) const REUSABLE: u64 = 1 << 63;

/// Space that later records may reuse.
#[derive(Default)]
pub(super) struct FreePool {
    /// Reusable now: size -> offsets.
    ready: BTreeMap<u64, Vec<u64>>,
    ready_len: usize,
    /// Records no chain reaches that still look live on disk, each as its
    /// offset and its size (with [`REUSABLE`] set if it went to `ready` at
    /// once). Each is marked void at the next hard synchronization, after the
    /// data that replaced it is durable (a restore would otherwise take it for
    /// the latest version of its key), unless reused first.
    doomed: Vec<(u64, u64)>,
    /// Offsets of doomed records that were reused since the last marking:
    /// they hold new records now, which a void mark would destroy.
    reused: HashSet<u64>,
    cap: usize,
}

impl FreePool {
    /// An empty pool remembering at most `cap` reusable regions.
    pub(super) fn new(cap: usize) -> FreePool {
        FreePool { cap, ..Default::default() }
    }

    pub(super) fn put(&mut self, offset: u64, size: u64) {
        if self.ready_len < self.cap {
            self.ready.entry(size).or_default().push(offset);
            self.ready_len += 1;
        }
    }

    /// A free region of at least `size` bytes and at most twice that.
    pub(super) fn take(&mut self, size: u64) -> Option<(u64, u64)> {
        let (&found, offsets) = self.ready.range_mut(size..=size.saturating_mul(2)).next()?;
        let offset = offsets.pop()?;
        if offsets.is_empty() {
            self.ready.remove(&found);
        }
        self.ready_len -= 1;
        self.reused.insert(offset);
        Some((offset, found))
    }

    pub(super) fn doom(&mut self, offset: u64, size: u64, reusable: bool) {
        // Dead again: whatever reused the space is doomed in its turn.
        self.reused.remove(&offset);
        self.doomed.push((offset, if reusable { size | REUSABLE } else { size }));
    }

    /// Takes back doomed records, as [`FreePool::take_doomed`] gave them,
    /// whose marking failed, for the next try.
    pub(super) fn doom_again(&mut self, doomed: &[(u64, u64)]) {
        self.doomed.extend_from_slice(doomed);
    }

    /// The doomed records still to be marked, in file order, each once.
    pub(super) fn take_doomed(&mut self) -> Vec<(u64, u64)> {
        let mut doomed = std::mem::take(&mut self.doomed);
        let reused = std::mem::take(&mut self.reused);
        doomed.retain(|(offset, _)| !reused.contains(offset));
        doomed.sort_unstable();
        doomed.dedup_by_key(|(offset, _)| *offset);
        doomed
    }

    pub(super) fn clear(&mut self) {
        self.ready.clear();
        self.ready_len = 0;
        self.doomed = Vec::new();
        self.reused = Default::default();
    }
}
