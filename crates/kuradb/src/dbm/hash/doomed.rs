//! The doomed records: records no chain reaches that still look live on
//! disk, to be marked void at the next hard synchronization.
//!
//! The set gains one record a removal or replacement until then, so for a
//! workload that seldom synchronizes hard it is most of what a writer holds
//! beyond the bucket array. It is kept as compressed bitmaps of offsets in
//! units of the records' alignment (roaring bitmaps: a bit a unit where
//! records are dense, two bytes a record where they are sparse), rather than
//! as a list of 16-byte (offset, size) pairs, which grew by 16 bytes a
//! removal where the bitmaps grow by a bit or two bytes
//! (bench/results/2026-11-29-memory.md). A record's size is kept only where it will be
//! used: for a record whose space goes back to the pool after the marking,
//! and only as many as the pool can take.

use std::collections::HashMap;

use roaring::RoaringTreemap;

/// The flag on a doomed record's size saying it is of the current epoch (its
/// space was reusable at once, unless the file appends).
pub(super) const REUSABLE: u64 = 1 << 63;
/// The flag on a doomed record's size saying it was removed, not replaced:
/// no newer version of its key needs to be durable before its void mark.
pub(super) const REMOVED: u64 = 1 << 62;

/// Doomed records, by offset.
pub(super) struct Doomed {
    align_pow: u32,
    /// Records of the current epoch (whose space went to the pool at once,
    /// unless the file appends).
    reusable: RoaringTreemap,
    /// Records whose space goes to the pool once their void mark is durable.
    later: RoaringTreemap,
    /// Records of `reusable` or `later` that were removed rather than replaced.
    removed: RoaringTreemap,
    /// The sizes of records of `later`, as many as the pool holds at most:
    /// the pool takes no more after the marking.
    sizes: HashMap<u64, u64>,
    max_sizes: usize,
    /// Records at an offset that is no multiple of the alignment, as
    /// (offset, size): none are expected, but nothing is lost if one comes.
    odd: Vec<(u64, u64)>,
}

impl Doomed {
    /// No doomed records, of a database whose records are aligned to
    /// 2^`align_pow` bytes and whose pool takes at most `max_sizes` regions.
    pub(super) fn new(align_pow: u32, max_sizes: usize) -> Doomed {
        Doomed {
            align_pow,
            reusable: RoaringTreemap::new(),
            later: RoaringTreemap::new(),
            removed: RoaringTreemap::new(),
            sizes: HashMap::new(),
            max_sizes,
            odd: Vec::new(),
        }
    }

    /// Dooms the record at `offset` of `size` bytes, with [`REUSABLE`] set
    /// if its space went to the pool at once, else [`REMOVED`] if it was
    /// removed; a record doomed again counts once, as the last call says.
    pub(super) fn insert(&mut self, offset: u64, size: u64) {
        let Some(unit) = self.unit(offset) else {
            self.odd.retain(|&(o, _)| o != offset);
            self.odd.push((offset, size));
            return;
        };
        if size & REUSABLE != 0 {
            self.forget_unit(unit, offset);
            self.reusable.insert(unit);
            if size & REMOVED != 0 {
                self.removed.insert(unit);
            }
            return;
        }
        self.reusable.remove(unit);
        self.later.insert(unit);
        if size & REMOVED != 0 {
            self.removed.insert(unit);
        } else {
            self.removed.remove(unit);
        }
        let size = size & !REMOVED;
        if size > 0 && (self.sizes.len() < self.max_sizes || self.sizes.contains_key(&offset)) {
            self.sizes.insert(offset, size);
        }
    }

    /// The record at `offset` is doomed no more: its space holds a new record.
    pub(super) fn forget(&mut self, offset: u64) {
        match self.unit(offset) {
            Some(unit) => self.forget_unit(unit, offset),
            None => self.odd.retain(|&(o, _)| o != offset),
        }
    }

    fn forget_unit(&mut self, unit: u64, offset: u64) {
        self.reusable.remove(unit);
        self.removed.remove(unit);
        if self.later.remove(unit) {
            self.sizes.remove(&offset);
        }
    }

    /// Takes every doomed record, in offset order: (offset, size), the size
    /// [`REUSABLE`] for a record whose space went to the pool at once, and 0
    /// for one whose size was not kept (the pool would not take it), with
    /// [`REMOVED`] set on a removed one's.
    pub(super) fn take(&mut self) -> Vec<(u64, u64)> {
        let ap = self.align_pow;
        let reusable = std::mem::take(&mut self.reusable);
        let later = std::mem::take(&mut self.later);
        let removed = std::mem::take(&mut self.removed);
        let mut sizes = std::mem::take(&mut self.sizes);
        let mut all = std::mem::take(&mut self.odd);
        all.reserve((reusable.len() + later.len()) as usize);
        let flag = |unit| if removed.contains(unit) { REMOVED } else { 0 };
        all.extend(reusable.iter().map(|unit| (unit << ap, REUSABLE | flag(unit))));
        all.extend(
            later.iter().map(|unit| (unit << ap, sizes.remove(&(unit << ap)).unwrap_or(0) | flag(unit))),
        );
        all.sort_unstable_by_key(|&(offset, _)| offset);
        all
    }

    pub(super) fn is_empty(&self) -> bool {
        self.reusable.is_empty() && self.later.is_empty() && self.odd.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.take();
    }

    /// `offset` in units of the alignment, if it is a multiple of it.
    fn unit(&self, offset: u64) -> Option<u64> {
        (offset & ((1 << self.align_pow) - 1) == 0).then_some(offset >> self.align_pow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records come back in offset order, once each, with the size of each
    /// record whose space returns to the pool (as many as it takes) and the
    /// flag of the others; forgotten ones do not come back.
    #[test]
    fn doomed_records_come_back_once_in_order() {
        let mut doomed = Doomed::new(7, 2);
        doomed.insert(1 << 20, 256);
        doomed.insert(128, 128 | REUSABLE);
        doomed.insert(640, 384);
        doomed.insert(1 << 40, 128);
        doomed.insert(1000, 24); // not aligned: kept whole
        doomed.insert(256, 128 | REUSABLE);
        doomed.forget(256);
        doomed.insert(384, 128 | REUSABLE);
        doomed.insert(384, 512); // doomed again, as the last call says
        doomed.insert(512, 128 | REMOVED);
        doomed.insert(512, 128); // replaced after all
        doomed.insert(640, 384 | REMOVED);
        doomed.insert(768, 128 | REUSABLE | REMOVED);
        let want = vec![
            (128, REUSABLE),
            (384, 0), // the pool's two sizes were taken by then
            (512, 0),
            (640, 384 | REMOVED),
            (768, REUSABLE | REMOVED),
            (1000, 24),
            (1 << 20, 256),
            (1 << 40, 0),
        ];
        assert_eq!(doomed.take(), want);
        assert_eq!(doomed.take(), vec![]);
    }
}
