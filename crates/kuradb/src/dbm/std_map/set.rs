//! The standard sets behind StdHashDbm and StdTreeDbm, with what the
//! databases need of each.

use std::collections::{BTreeSet, HashSet};
use std::hash::Hasher;

use super::packed::{Key, Packed};

/// The standard set type behind a database, with what the databases need of it.
pub(super) trait StdSet: Default + Send + Sync {
    const CLASS: &'static str;
    fn find(&self, key: &[u8]) -> Option<&Packed>;
    /// Stores `record`, answering the one it replaced.
    fn put(&mut self, record: Packed) -> Option<Packed>;
    /// Removes `key`'s record, answering it.
    fn take(&mut self, key: &[u8]) -> Option<Packed>;
    fn count(&self) -> usize;
    fn each(&self) -> Box<dyn Iterator<Item = &Packed> + '_>;
    fn wipe(&mut self);
    fn compact(&mut self);
    /// Bytes the container itself takes, besides the records' own.
    fn overhead(&self) -> usize;
}

/// Hashes a key in one call: `[u8]`'s `Hash` writes the length then the bytes.
#[derive(Clone, Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = self.0.wrapping_add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type KeyHashBuilder = std::hash::BuildHasherDefault<KeyHasher>;

/// The `StdSet` methods both sets answer alike, by methods of the same
/// names: written once, expanded in each one's impl.
macro_rules! set_methods {
    () => {
        fn find(&self, key: &[u8]) -> Option<&Packed> {
            self.get(Key::of(key))
        }
        fn put(&mut self, record: Packed) -> Option<Packed> {
            self.replace(record)
        }
        fn take(&mut self, key: &[u8]) -> Option<Packed> {
            self.take(Key::of(key))
        }
        fn count(&self) -> usize {
            self.len()
        }
        fn each(&self) -> Box<dyn Iterator<Item = &Packed> + '_> {
            Box::new(self.iter())
        }
    };
}

impl StdSet for HashSet<Packed, KeyHashBuilder> {
    const CLASS: &'static str = "StdHashDbm";
    set_methods!();
    fn wipe(&mut self) {
        *self = HashSet::default();
    }
    fn compact(&mut self) {
        self.shrink_to_fit();
    }
    fn overhead(&self) -> usize {
        // hashbrown: a slot and a control byte per bucket, buckets a power of two above 8/7 of capacity.
        let buckets = (self.capacity() * 8 / 7).next_power_of_two();
        buckets * (std::mem::size_of::<Packed>() + 1)
    }
}

impl StdSet for BTreeSet<Packed> {
    const CLASS: &'static str = "StdTreeDbm";
    set_methods!();
    fn wipe(&mut self) {
        self.clear();
    }
    fn compact(&mut self) {}
    fn overhead(&self) -> usize {
        // Nodes of 11 slots, two thirds full on average, with their header and edges.
        std::mem::size_of::<Self>() + self.len() * (std::mem::size_of::<Packed>() * 3 / 2 + 8)
    }
}

pub(super) trait Reserve {
    fn reserve_for(&mut self, n: usize);
}

impl Reserve for HashSet<Packed, KeyHashBuilder> {
    fn reserve_for(&mut self, n: usize) {
        self.reserve(n);
    }
}

impl Reserve for BTreeSet<Packed> {
    fn reserve_for(&mut self, _: usize) {}
}
