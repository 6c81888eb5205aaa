//! The allocation strategy: how far ahead of the logical size the file's space
//! on disk is reserved.

/// Reserves space geometrically so that a growing file changes its length on
/// disk O(log n) times rather than on every write past its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allocation {
    /// The first reservation.
    pub init: u64,
    /// Each later reservation is at least the previous one times this.
    pub inc: f64,
    /// Reservations are multiples of this (the block size, or 1).
    pub unit: u64,
}

impl Allocation {
    /// The length to reserve so that `needed` bytes fit, given `reserved` now.
    pub(crate) fn next(&self, reserved: u64, needed: u64) -> u64 {
        let grown = (reserved as f64 * self.inc).min(u64::MAX as f64 / 2.0) as u64;
        let target = needed.max(grown).max(self.init);
        target.div_ceil(self.unit).saturating_mul(self.unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_grow_geometrically_in_whole_units() {
        let a = Allocation { init: 1000, inc: 2.0, unit: 512 };
        assert_eq!(a.next(0, 1), 1024);
        assert_eq!(a.next(1024, 1025), 2048);
        assert_eq!(a.next(2048, 100_000), 100_352);
        let flat = Allocation { init: 0, inc: 1.0, unit: 1 };
        assert_eq!(flat.next(10, 11), 11);
    }
}
