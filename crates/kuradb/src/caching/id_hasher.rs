//! The hasher of the caches' tables, whose keys are block indexes and node
//! ids: numbers already well spread, for which SipHash (the standard
//! default, made to resist chosen keys from outside) costs more than the
//! rest of a lookup.

use std::hash::{BuildHasherDefault, Hasher};

/// One multiplication by an odd constant mixes an id's high bits in.
#[derive(Default)]
pub(crate) struct IdHash(u64);

impl Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// What a `HashMap` keyed by ids is built with.
pub(crate) type IdHasher = BuildHasherDefault<IdHash>;
