//! The doomed records: records no chain reaches that still look live on
//! disk, to be marked void at the next hard synchronization.
//!
//! The set gains one record a removal or replacement until then, so for a
//! workload that seldom synchronizes hard it is most of what a writer holds
//! beyond the bucket array. It is kept as a compressed bitmap (roaring: a
//! bit a value where values are dense, two bytes a value where they are
//! sparse) rather than as a list of 16-byte (offset, size) pairs, which
//! grew by 16 bytes a removal (bench/results/2026-11-29-memory.md). Each
//! record is one value of it: its offset in units of the records'
//! alignment, times four, plus its state (reusable or not, removed or not).
//!
//! A removal's record lies anywhere in the file, and so does its place in
//! the bitmap, whose containers outgrow the processor's caches: searching
//! them at each removal (three bitmaps then, one a state) took a third of
//! a removal's time (bench/results/2026-12-06-doomed-states.md). So changes
//! wait in a short list and are made a batch at a time in offset order,
//! each search starting where the last one left the caches warm.
//!
//! A record's size is kept only where it will be used: for a record whose
//! space goes back to the pool after the marking, and only as many as the
//! pool can take.

use std::collections::HashMap;

use roaring::RoaringTreemap;

/// The flag on a doomed record's size saying it is of the current epoch (its
/// space was reusable at once, unless the file appends).
pub(super) const REUSABLE: u64 = 1 << 63;
/// The flag on a doomed record's size saying it was removed, not replaced:
/// no newer version of its key needs to be durable before its void mark.
pub(super) const REMOVED: u64 = 1 << 62;

/// The states a doomed record's value adds to its unit times [`STATES`].
const STATE_REMOVED: u64 = 1;
const STATE_REUSABLE: u64 = 2;
const STATES: u64 = 4;
/// A waiting change that forgets its record rather than dooming it.
const FORGOTTEN: u64 = STATES;
/// The bits below a waiting change's unit, holding its state.
const CHANGE_BITS: u32 = 3;
/// The changes that wait before they are made: their list's 32 KiB is all
/// the batching adds to a writer's memory. (Tests make batches mid-way.)
const MAX_WAITING: usize = if cfg!(test) { 64 } else { 4096 };

/// Doomed records, by offset.
pub(super) struct Doomed {
    align_pow: u32,
    /// Each record as its offset in units of the alignment times
    /// [`STATES`], plus [`STATE_REUSABLE`] if its space went to the pool at
    /// once (unless the file appends) and [`STATE_REMOVED`] if it was
    /// removed rather than replaced.
    records: RoaringTreemap,
    /// Changes to `records` not made yet, in the order they came: a unit
    /// shifted up by [`CHANGE_BITS`], with its new state or [`FORGOTTEN`].
    waiting: Vec<u64>,
    /// The sizes of records not reusable at once, as many as the pool holds
    /// at most: the pool takes no more after the marking.
    sizes: HashMap<u64, u64>,
    max_sizes: usize,
    /// Records at an offset that is no multiple of the alignment (or too
    /// far for the bitmap's values), as (offset, size): none are expected,
    /// but nothing is lost if one comes.
    odd: Vec<(u64, u64)>,
}

impl Doomed {
    /// No doomed records, of a database whose records are aligned to
    /// 2^`align_pow` bytes and whose pool takes at most `max_sizes` regions.
    pub(super) fn new(align_pow: u32, max_sizes: usize) -> Doomed {
        Doomed {
            align_pow,
            records: RoaringTreemap::new(),
            waiting: Vec::new(),
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
        let removed = if size & REMOVED != 0 { STATE_REMOVED } else { 0 };
        let state = if size & REUSABLE != 0 {
            self.sizes.remove(&offset);
            STATE_REUSABLE | removed
        } else {
            let size = size & !REMOVED;
            if size > 0 && (self.sizes.len() < self.max_sizes || self.sizes.contains_key(&offset)) {
                self.sizes.insert(offset, size);
            }
            removed
        };
        self.change(unit, state);
    }

    /// The record at `offset` is doomed no more: its space holds a new record.
    pub(super) fn forget(&mut self, offset: u64) {
        match self.unit(offset) {
            Some(unit) => {
                self.sizes.remove(&offset);
                self.change(unit, FORGOTTEN);
            }
            None => self.odd.retain(|&(o, _)| o != offset),
        }
    }

    /// Takes every doomed record, in offset order: (offset, size), the size
    /// [`REUSABLE`] for a record whose space went to the pool at once, and 0
    /// for one whose size was not kept (the pool would not take it), with
    /// [`REMOVED`] set on a removed one's.
    pub(super) fn take(&mut self) -> Vec<(u64, u64)> {
        self.make_changes();
        let ap = self.align_pow;
        let records = std::mem::take(&mut self.records);
        let mut sizes = std::mem::take(&mut self.sizes);
        let mut all = std::mem::take(&mut self.odd);
        let odd = !all.is_empty();
        all.reserve(records.len() as usize);
        all.extend(records.iter().map(|value| {
            let offset = (value / STATES) << ap;
            let state = value % STATES;
            let removed = if state & STATE_REMOVED != 0 { REMOVED } else { 0 };
            if state & STATE_REUSABLE != 0 {
                (offset, REUSABLE | removed)
            } else {
                (offset, sizes.remove(&offset).unwrap_or(0) | removed)
            }
        }));
        // The bitmap's records come in order; an odd one may not.
        if odd {
            all.sort_unstable_by_key(|&(offset, _)| offset);
        }
        all
    }

    pub(super) fn is_empty(&mut self) -> bool {
        self.make_changes();
        self.records.is_empty() && self.odd.is_empty()
    }

    pub(super) fn clear(&mut self) {
        self.take();
    }

    /// Notes that the record of `unit` is now in `state` (or forgotten).
    fn change(&mut self, unit: u64, state: u64) {
        self.waiting.push(unit << CHANGE_BITS | state);
        if self.waiting.len() >= MAX_WAITING {
            self.make_changes();
        }
    }

    /// Makes the waiting changes, in offset order; of a unit's changes the
    /// last one counts. In that order each search of the bitmap starts
    /// near the last one's, in lines still cached.
    fn make_changes(&mut self) {
        // A stable sort: a unit's changes stay in the order they came.
        self.waiting.sort_by_key(|change| change >> CHANGE_BITS);
        for (i, &change) in self.waiting.iter().enumerate() {
            let unit = change >> CHANGE_BITS;
            if self.waiting.get(i + 1).is_some_and(|next| next >> CHANGE_BITS == unit) {
                continue;
            }
            let base = unit * STATES;
            let state = change & ((1 << CHANGE_BITS) - 1);
            // One value at a time: the bitmap's `remove_range` walks every
            // container, and a count of a range counts a dense container's
            // bits up to it.
            for other in (0..STATES).filter(|&other| other != state) {
                self.records.remove(base + other);
            }
            if state != FORGOTTEN {
                self.records.insert(base + state);
            }
        }
        self.waiting.clear();
    }

    /// `offset` in units of the alignment, if it is a multiple of it and a
    /// waiting change of it fits in 64 bits.
    fn unit(&self, offset: u64) -> Option<u64> {
        if offset & ((1 << self.align_pow) - 1) != 0 {
            return None;
        }
        let unit = offset >> self.align_pow;
        (unit < 1 << (64 - CHANGE_BITS)).then_some(unit)
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

    /// Any sequence of dooms and forgets, at aligned and odd offsets, comes
    /// back as a map of each offset to its last doom would give it.
    #[test]
    fn doomed_records_follow_their_last_doom() {
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        #[derive(Debug, Clone)]
        enum Op {
            Insert(u64, u64),
            Forget(u64),
        }
        let offset = prop_oneof![(0u64..64).prop_map(|n| n << 4), (0u64..4).prop_map(|n| (n << 4) + 3)];
        let flags = prop_oneof![Just(0), Just(REUSABLE), Just(REMOVED), Just(REUSABLE | REMOVED)];
        let op = prop_oneof![
            3 => (offset.clone(), 0u64..3, flags).prop_map(|(o, size, f)| Op::Insert(o, (size * 16) | f)),
            1 => offset.prop_map(Op::Forget),
        ];
        proptest!(|(ops in proptest::collection::vec(op, 0..400))| {
            let mut doomed = Doomed::new(4, usize::MAX);
            // offset -> (flags, the size the last non-reusable doom with one kept)
            let mut model: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
            for op in &ops {
                match *op {
                    Op::Insert(o, size) => {
                        doomed.insert(o, size);
                        let kept = match model.get(&o) {
                            Some(&(flags, kept)) if flags & REUSABLE == 0 => kept,
                            _ => 0,
                        };
                        let plain = size & !(REUSABLE | REMOVED);
                        let entry = if size & REUSABLE != 0 && o % 16 == 0 {
                            (size & (REUSABLE | REMOVED), 0)
                        } else if o % 16 != 0 {
                            // Odd records are kept whole, as the last doom gave them.
                            (size, 0)
                        } else {
                            (size & REMOVED, if plain > 0 { plain } else { kept })
                        };
                        model.insert(o, entry);
                    }
                    Op::Forget(o) => {
                        doomed.forget(o);
                        model.remove(&o);
                    }
                }
            }
            prop_assert_eq!(doomed.is_empty(), model.is_empty());
            let want: Vec<(u64, u64)> = model
                .iter()
                .map(|(&o, &(flags, kept))| (o, if o % 16 != 0 || flags & REUSABLE != 0 { flags } else { flags | kept }))
                .collect();
            prop_assert_eq!(doomed.take(), want);
            prop_assert!(doomed.is_empty());
        });
    }
}
