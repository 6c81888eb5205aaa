//! The free-block pool: space of records no chain reaches any more, which
//! later records may reuse, and the records still to be marked void before
//! their space may be.

use std::collections::BTreeMap;

use roaring::RoaringTreemap;

use super::doomed::Doomed;

pub(super) use super::doomed::{REMOVED, REUSABLE};

/// Why a record is doomed, which says when its void mark may be written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Doom {
    /// Of the current epoch, which no hard synchronization covered, replaced:
    /// its mark may go any time, and its space is reusable at once (unless
    /// the file appends).
    Current,
    /// Of the current epoch, removed: as `Current`, but its void mark is the
    /// removal a restore sees. A hash database updated in place has none:
    /// it rewrites such a record as a void record at its removal
    /// (`State::voids_on_removal`).
    CurrentRemoved,
    /// Of an earlier epoch, removed: its mark may be made durable with the
    /// removal.
    Removed,
    /// Of an earlier epoch, replaced: its mark waits until what replaced it
    /// is durable.
    Replaced,
}

/// Space that later records may reuse.
pub(super) struct FreePool {
    /// Reusable now: size -> offsets, each with the epoch its record was
    /// written in where known (see [`FreePool::put`]).
    ready: BTreeMap<u64, Vec<(u64, Option<u32>)>>,
    ready_len: usize,
    /// Records no chain reaches that still look live on disk, each as its
    /// offset and its size (with [`REUSABLE`] set if it went to `ready` at
    /// once). Each is marked void at the next hard synchronization, after the
    /// data that replaced it is durable (a restore would otherwise take it for
    /// the latest version of its key), unless reused first.
    doomed: Doomed,
    /// Records whose void marks were written after the last hard
    /// synchronization and are made durable by the next: their space goes
    /// to `ready` then.
    settling: Doomed,
    /// Some of `settling` may not be marked yet (a write of the marks
    /// failed): the next hard synchronization writes them again first.
    settling_unwritten: bool,
    /// Records that replaced another, in units of the alignment: of the
    /// current epoch, and of the epoch the last hard synchronization covered.
    /// A replaced record's mark waits until its replacement is durable; if
    /// the replacement is removed before that mark is durable, nothing
    /// newer stands in front of the replaced one, and the marks must be made
    /// durable in order (see `State::make_durable`).
    replacers: RoaringTreemap,
    replacers_before: RoaringTreemap,
    /// The next hard synchronization must make the replaced records' marks
    /// durable, in order, rather than defer them.
    ordered: bool,
    align_pow: u32,
    cap: usize,
}

impl FreePool {
    /// An empty pool remembering at most `cap` reusable regions, of a
    /// database whose records are aligned to 2^`align_pow` bytes.
    pub(super) fn new(cap: usize, align_pow: u32) -> FreePool {
        FreePool {
            ready: BTreeMap::new(),
            ready_len: 0,
            doomed: Doomed::new(align_pow, cap),
            settling: Doomed::new(align_pow, cap),
            settling_unwritten: false,
            replacers: RoaringTreemap::new(),
            replacers_before: RoaringTreemap::new(),
            ordered: false,
            align_pow,
            cap,
        }
    }

    /// Makes the region of `size` bytes at `offset` reusable; `written` is
    /// the epoch the record there was written in, if known (a record of the
    /// current epoch), or `None` (one whose void mark a hard
    /// synchronization made durable, or a region a failed write may have
    /// left as it was).
    pub(super) fn put(&mut self, offset: u64, size: u64, written: Option<u32>) {
        if self.ready_len < self.cap {
            self.ready.entry(size).or_default().push((offset, written));
            self.ready_len += 1;
        }
    }

    /// A free region of at least `size` bytes and at most twice that, as
    /// its offset, its size and the epoch [`FreePool::put`] was told. The
    /// caller [`claims`](FreePool::claim) it to write into it; else its
    /// space is not reused, but a void mark still due there is written.
    pub(super) fn take(&mut self, size: u64) -> Option<(u64, u64, Option<u32>)> {
        let (&found, offsets) = self.ready.range_mut(size..=size.saturating_mul(2)).next()?;
        let (offset, written) = offsets.pop()?;
        if offsets.is_empty() {
            self.ready.remove(&found);
        }
        self.ready_len -= 1;
        Some((offset, found, written))
    }

    /// The region at `offset`, [taken](FreePool::take), is to hold a new
    /// record, which a void mark due there would destroy.
    pub(super) fn claim(&mut self, offset: u64) {
        self.doomed.forget(offset);
        self.settling.forget(offset);
    }

    pub(super) fn doom(&mut self, offset: u64, size: u64, doom: Doom) {
        let flagged = match doom {
            Doom::Current => size | REUSABLE,
            Doom::CurrentRemoved => size | REUSABLE | REMOVED,
            Doom::Removed => size | REMOVED,
            Doom::Replaced => size,
        };
        self.doomed.insert(offset, flagged);
    }

    /// Notes that the record at `offset` replaced another.
    pub(super) fn replaced_by(&mut self, offset: u64) {
        self.replacers.insert(offset >> self.align_pow);
    }

    /// Notes the removal of the record at `offset`, written in `epoch`, in
    /// epoch `now`: if it replaced a record whose mark may not be durable
    /// yet, the next hard synchronization is ordered.
    pub(super) fn removed(&mut self, offset: u64, epoch: u32, now: u32) {
        let unit = offset >> self.align_pow;
        let replacer = if epoch == now {
            self.replacers.contains(unit)
        } else {
            epoch.wrapping_add(1) == now && self.replacers_before.contains(unit) && !self.settling.is_empty()
        };
        self.ordered |= replacer;
    }

    /// Whether the next hard synchronization must make every mark durable
    /// in order, after what replaced or removed the records (its first
    /// device sync), and starts the next epoch's record of replacements.
    pub(super) fn take_ordering(&mut self) -> bool {
        let ordered = std::mem::take(&mut self.ordered) || self.settling_unwritten;
        self.replacers_before = std::mem::take(&mut self.replacers);
        ordered
    }

    /// Makes the next hard synchronization ordered: this one failed, and
    /// what it would have made durable is unknown.
    pub(super) fn order_next(&mut self) {
        self.ordered = true;
    }

    /// Keeps records whose marks were just written (or, if `unwritten`,
    /// failed to be), to be made durable by the next hard synchronization.
    pub(super) fn settle(&mut self, marked: &[(u64, u64)], unwritten: bool) {
        marked.iter().for_each(|&(offset, size)| self.settling.insert(offset, size & !REMOVED));
        self.settling_unwritten |= unwritten;
    }

    /// Takes the records of [`FreePool::settle`], and whether some of them
    /// may not be marked yet.
    pub(super) fn take_settling(&mut self) -> (Vec<(u64, u64)>, bool) {
        (self.settling.take(), std::mem::take(&mut self.settling_unwritten))
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
        self.settling.clear();
        self.settling_unwritten = false;
        self.replacers.clear();
        self.replacers_before.clear();
        self.ordered = false;
    }
}
