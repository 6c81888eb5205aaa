//! The free-block pool: space of records no chain reaches any more, which
//! later records may reuse, and the records still to be marked void before
//! their space may be.

use std::collections::BTreeMap;

use super::doomed::Doomed;

pub(super) use super::doomed::REUSABLE;

/// Space that later records may reuse.
pub(super) struct FreePool {
    /// Reusable now: size -> offsets.
    ready: BTreeMap<u64, Vec<u64>>,
    ready_len: usize,
    /// Records no chain reaches that still look live on disk, each as its
    /// offset and its size (with [`REUSABLE`] set if it went to `ready` at
    /// once). Each is marked void at the next hard synchronization, after the
    /// data that replaced it is durable (a restore would otherwise take it for
    /// the latest version of its key), unless reused first.
    doomed: Doomed,
    cap: usize,
}

impl FreePool {
    /// An empty pool remembering at most `cap` reusable regions, of a
    /// database whose records are aligned to 2^`align_pow` bytes.
    pub(super) fn new(cap: usize, align_pow: u32) -> FreePool {
        FreePool { ready: BTreeMap::new(), ready_len: 0, doomed: Doomed::new(align_pow, cap), cap }
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
        // It holds a new record now, which a void mark would destroy.
        self.doomed.forget(offset);
        Some((offset, found))
    }

    pub(super) fn doom(&mut self, offset: u64, size: u64, reusable: bool) {
        self.doomed.insert(offset, if reusable { size | REUSABLE } else { size });
    }

    /// Takes back doomed records, as [`FreePool::take_doomed`] gave them,
    /// whose marking failed, for the next try.
    pub(super) fn doom_again(&mut self, doomed: &[(u64, u64)]) {
        doomed.iter().for_each(|&(offset, size)| self.doomed.insert(offset, size));
    }

    /// The doomed records still to be marked, in file order, each once (see
    /// [`Doomed::take`] for their sizes).
    pub(super) fn take_doomed(&mut self) -> Vec<(u64, u64)> {
        self.doomed.take()
    }

    pub(super) fn clear(&mut self) {
        self.ready.clear();
        self.ready_len = 0;
        self.doomed.clear();
    }
}
