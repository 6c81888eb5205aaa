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
    doomed: Doomed,
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
        self.doomed.push(offset, if reusable { size | REUSABLE } else { size });
    }

    /// Takes back doomed records, as [`FreePool::take_doomed`] gave them,
    /// whose marking failed, for the next try.
    pub(super) fn doom_again(&mut self, doomed: &[(u64, u64)]) {
        doomed.iter().for_each(|&(offset, size)| self.doomed.push(offset, size));
    }

    /// The doomed records still to be marked, in file order, each once.
    pub(super) fn take_doomed(&mut self) -> Vec<(u64, u64)> {
        let mut doomed = std::mem::take(&mut self.doomed).into_vec();
        let reused = std::mem::take(&mut self.reused);
        doomed.retain(|(offset, _)| !reused.contains(offset));
        doomed.sort_unstable();
        doomed.dedup_by_key(|(offset, _)| *offset);
        doomed
    }

    pub(super) fn clear(&mut self) {
        self.ready.clear();
        self.ready_len = 0;
        self.doomed = Doomed::default();
        self.reused = Default::default();
    }
}

/// Offsets below this and sizes (with the [`REUSABLE`] flag) below
/// [`PACKED_SIZES`] share one word in [`Doomed`]: 1 TiB and 8 MiB.
const PACKED_OFFSETS: u64 = 1 << 40;
const PACKED_SIZES: u64 = 1 << 23;

/// The doomed records, in as little memory as they fit: the list grows by one
/// entry a removal or replacement until the next hard synchronization, so
/// for a workload that seldom synchronizes it is most of what the pool holds.
/// An entry is one word (offset in the low 40 bits, size above, the flag on
/// top) where it fits, else a pair in `wide`.
#[derive(Default)]
struct Doomed {
    packed: Vec<u64>,
    wide: Vec<(u64, u64)>,
}

impl Doomed {
    fn push(&mut self, offset: u64, size: u64) {
        let flag = size & REUSABLE;
        let bytes = size & !REUSABLE;
        if offset < PACKED_OFFSETS && bytes < PACKED_SIZES {
            self.packed.push(offset | bytes << 40 | flag);
        } else {
            self.wide.push((offset, size));
        }
    }

    /// Every entry as (offset, size with its flag), in no order.
    fn into_vec(self) -> Vec<(u64, u64)> {
        let mut all = self.wide;
        all.reserve(self.packed.len());
        let unpack = |w: u64| (w % PACKED_OFFSETS, (w >> 40) % PACKED_SIZES | w & REUSABLE);
        all.extend(self.packed.into_iter().map(unpack));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries come back as they went in, packed or not.
    #[test]
    fn doomed_entries_round_trip_packed_or_wide() {
        let mut pool = FreePool::new(0);
        let entries = [
            (0, 16),
            (128, 256),
            ((1 << 40) - 8, (1 << 23) - 8),
            (1 << 40, 64),
            (64, 1 << 23),
            (1 << 50, 1 << 30),
        ];
        for (i, &(offset, size)) in entries.iter().enumerate() {
            pool.doom(offset, size, i % 2 == 0);
        }
        assert_eq!(pool.doomed.packed.len(), 3);
        let mut want: Vec<(u64, u64)> = entries
            .iter()
            .enumerate()
            .map(|(i, &(offset, size))| (offset, if i % 2 == 0 { size | REUSABLE } else { size }))
            .collect();
        want.sort_unstable();
        assert_eq!(pool.take_doomed(), want);
    }
}
