//! The digest of the records a tree's node store writes in one epoch, which
//! lets a hard synchronization make the tree durable with one device sync.
//!
//! A tree's restore needs a whole synchronized tree: the versions of one
//! epoch and every older version they use. Without a digest the header may
//! name an epoch only once its records are durable, which takes a device
//! sync of its own. With one, the header written before the sync names the
//! epoch being synchronized together with its digest (the count of its
//! records and the xor of a hash of each: offset, key and stored value),
//! and a restore takes that epoch only if the records it finds of it match
//! the digest, else the epoch before, which is whole: no version an older
//! epoch uses is marked void, or its space reused, until the header naming
//! the epoch that replaced it is durable (see `State::make_durable`).
//!
//! The records counted are those meant to be on disk when the sync
//! returns: live versions and removal records (void, with no value) of
//! the epoch. A version replaced within the epoch is marked void before
//! the sync and is not counted; if its mark did not reach the device, it
//! reads as live and the digest fails, which sends the restore one epoch
//! back, as a torn record does. Never further than one epoch whose sync
//! returned: records of the epoch after it prove it whole, and a digest
//! that disagrees then is a miscount, taken as the epoch all the same
//! (see `restore::last_whole_epoch`).

#[cfg(debug_assertions)]
use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The hash of one record, as the digest counts it.
pub(super) fn record_hash(offset: u64, key: &[u8], value: &[u8]) -> u64 {
    // Seeded with the offset, so a version found at another place than it
    // was written, or a key's bytes moved into its value, hashes apart.
    xxh3_64_with_seed(value, offset) ^ xxh3_64_with_seed(key, !offset).rotate_left(17)
}

/// Whether a record found by a restore is one a writer counted: a live
/// version, or a removal record (void, with no value).
pub(super) fn counted(live: bool, value_size: usize) -> bool {
    live || value_size == 0
}

/// The count and xor of the hashes of an epoch's records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Digest {
    pub count: u32,
    pub xor: u64,
}

impl Digest {
    pub(super) fn add(&mut self, hash: u64) {
        self.count = self.count.wrapping_add(1);
        self.xor ^= hash;
    }

    fn remove(&mut self, hash: u64) {
        self.count = self.count.wrapping_sub(1);
        self.xor ^= hash;
    }
}

/// The digest of the records of the current epoch a writer wrote and has
/// not given up, kept as it goes: a record taken out is xored out again, so
/// no record is remembered. The caller hands back the hash a record was
/// counted with when it takes it out (read from the record, which is still
/// in place then). Debug builds also keep each counted hash by offset and
/// check that every record taken out was counted with that hash, so that a
/// path that miscounts fails the tests rather than sending a restore one
/// epoch back.
#[derive(Default)]
pub(super) struct EpochRecords {
    digest: Digest,
    #[cfg(debug_assertions)]
    counted: HashMap<u64, u64>,
}

impl EpochRecords {
    /// Counts the record at `offset`, which hashes to `hash`
    /// ([`record_hash`]).
    pub(super) fn put(&mut self, offset: u64, hash: u64) {
        #[cfg(debug_assertions)]
        assert!(self.counted.insert(offset, hash).is_none(), "the record at {offset} is counted twice");
        let _ = offset;
        self.digest.add(hash);
    }

    /// The record at `offset`, counted with `hash`, no longer counts
    /// (replaced within the epoch, or given up).
    pub(super) fn forget(&mut self, offset: u64, hash: u64) {
        #[cfg(debug_assertions)]
        assert_eq!(self.counted.remove(&offset), Some(hash), "the record at {offset} taken out");
        let _ = offset;
        self.digest.remove(hash);
    }

    pub(super) fn digest(&self) -> Digest {
        self.digest
    }

    pub(super) fn clear(&mut self) {
        self.digest = Digest::default();
        #[cfg(debug_assertions)]
        self.counted.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest of what a writer kept is the digest a restore computes of
    /// the same records, whatever order they came in; a record forgotten,
    /// moved or changed changes it.
    #[test]
    fn the_digest_is_of_the_records_kept() {
        let mut records = EpochRecords::default();
        let put = |records: &mut EpochRecords, offset, key: &[u8], value: &[u8]| {
            records.put(offset, record_hash(offset, key, value))
        };
        put(&mut records, 128, b"k1", b"v1");
        put(&mut records, 256, b"k2", b"v2");
        put(&mut records, 384, b"k3", b"v3");
        records.forget(256, record_hash(256, b"k2", b"v2"));
        put(&mut records, 512, b"k4", b"old");
        records.forget(512, record_hash(512, b"k4", b"old"));
        put(&mut records, 512, b"k4", b"new");
        let mut found = Digest::default();
        for (offset, key, value) in [(512, &b"k4"[..], &b"new"[..]), (128, b"k1", b"v1"), (384, b"k3", b"v3")]
        {
            found.add(record_hash(offset, key, value));
        }
        assert_eq!(records.digest(), found);
        assert_eq!(found.count, 3);
        assert_ne!(record_hash(128, b"k1", b"v1"), record_hash(256, b"k1", b"v1"));
        assert_ne!(record_hash(128, b"k1", b"v1"), record_hash(128, b"k1", b"v2"));
        assert_ne!(record_hash(128, b"k", b"1v1"), record_hash(128, b"k1", b"v1"));
        assert!(counted(true, 5) && counted(false, 0) && !counted(false, 5));
    }
}
