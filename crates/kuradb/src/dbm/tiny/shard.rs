//! One shard of an on-memory hash table: its records ([`Records`]) placed
//! in buckets by their keys' hashes, and what reads and changes them.
//!
//! Records are ordered by (hash, key), and a bucket holds a contiguous
//! range of hashes (its index is the top bits of the hash below the shard's
//! bits), so the order survives resizing: cursors step through it.
//!
//! Every change of a shard's records passes through [`Shard::change`]; a
//! stored value reaches a caller only through [`decode_value`], and a
//! caller's value is stored only through [`encode_value`].

use super::record::{Entry, Records};
use crate::dbm::Action;
use crate::error::Result;

/// The hash of a key; its top bits pick the shard, the next ones the bucket.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// A caller's value as a shard stores it: the one place a value codec
/// (compression, encryption) would encode. The identity for now.
#[inline(always)]
fn encode_value(value: &[u8]) -> &[u8] {
    value
}

/// A stored value as a caller sees it: the one place a value codec would
/// decode. The identity for now.
#[inline(always)]
fn decode_value(stored: &[u8]) -> &[u8] {
    stored
}

/// How hashes map to a shard's buckets.
#[derive(Clone, Copy)]
struct Buckets {
    /// `2^bits` buckets.
    bits: u32,
    /// Bits of the hash above the bucket's, which pick the shard.
    shard_bits: u32,
}

impl Buckets {
    /// The hash's bits below the shard's: what orders and places records here.
    fn local(self, hash: u64) -> u64 {
        if self.shard_bits == 0 {
            hash
        } else {
            hash << self.shard_bits
        }
    }

    fn of(self, hash: u64) -> usize {
        if self.bits == 0 {
            0
        } else {
            (self.local(hash) >> (64 - self.bits)) as usize
        }
    }
}

/// What a write did to a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Kept,
    Added,
    Replaced,
    Removed,
    Cleared,
}

/// A record as a cursor sees it: its hash, key and value.
pub(crate) type Found = (u64, Vec<u8>, Vec<u8>);

/// A change to a shard's records, as [`Shard::change`] takes it.
enum Change<'s, 'k, 'a, const L: usize> {
    /// What a processor answered for the record of an entry's key.
    Record(Entry<'s, 'k, L>, Action<'a>),
    /// Every record goes.
    Clear(&'s mut Records<L>),
}

/// Buckets of chained records; `L` links per record (1, or 3 with an LRU list).
pub(crate) struct Shard<const L: usize> {
    records: Records<L>,
    buckets: Buckets,
}

impl<const L: usize> Shard<L> {
    pub(crate) fn new(bits: u32, shard_bits: u32) -> Shard<L> {
        Shard { records: Records::new(1 << bits), buckets: Buckets { bits, shard_bits } }
    }

    /// Bumped by every change of a record, so that a cursor knows when what it saw still holds.
    pub(crate) fn version(&self) -> u64 {
        self.records.version()
    }

    pub(crate) fn count(&self) -> usize {
        self.records.count()
    }

    pub(crate) fn num_buckets(&self) -> usize {
        self.records.num_buckets()
    }

    pub(crate) fn bits(&self) -> u32 {
        self.buckets.bits
    }

    /// Heap bytes of the records.
    pub(crate) fn record_bytes(&self) -> usize {
        self.records.bytes()
    }

    /// Heap bytes of the records and the buckets.
    pub(crate) fn mem_size(&self) -> usize {
        self.records.mem_size()
    }

    /// The value of `key`.
    pub(crate) fn get(&self, hash: u64, key: &[u8]) -> Option<&[u8]> {
        self.records.chain(self.buckets.of(hash)).find(|(k, _)| *k == key).map(|(_, v)| decode_value(v))
    }

    /// Shows `key`'s value to `f` and carries out its answer. A cache's
    /// record moves to the front of the LRU list, as a new one goes there.
    pub(crate) fn process<'a>(
        &mut self,
        hash: u64,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> Action<'a>,
    ) -> Result<Outcome> {
        let entry = self.records.entry(self.buckets.of(hash), key);
        let action = f(entry.value().map(decode_value));
        Shard::change(Change::Record(entry, action))
    }

    /// Carries out a change. Every change of a shard's records passes here
    /// (a process, a rewrite, an eviction, a clear, a load from the flat
    /// file), and nothing else changes them: an update log, an index or a
    /// statistics counter attaches here.
    #[inline(always)]
    fn change(change: Change<'_, '_, '_, L>) -> Result<Outcome> {
        Ok(match change {
            Change::Record(entry, Action::Keep) => {
                entry.touch();
                Outcome::Kept
            }
            Change::Record(entry, Action::Remove) => {
                if entry.remove() {
                    Outcome::Removed
                } else {
                    Outcome::Kept
                }
            }
            Change::Record(entry, Action::Set(value)) => {
                if entry.set(encode_value(&value))? {
                    Outcome::Replaced
                } else {
                    Outcome::Added
                }
            }
            Change::Clear(records) => {
                records.clear();
                Outcome::Cleared
            }
        })
    }

    /// Removes the least recently used record (`L == 3`); answers whether there was one.
    pub(crate) fn evict(&mut self) -> bool {
        let buckets = self.buckets;
        match self.records.oldest(|key| buckets.of(key_hash(key))) {
            Some(entry) => {
                matches!(Shard::change(Change::Record(entry, Action::Remove)), Ok(Outcome::Removed))
            }
            None => false,
        }
    }

    /// Every record, bucket by bucket.
    pub(crate) fn records(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.records.num_buckets())
            .flat_map(move |b| self.records.chain(b).map(|(k, v)| (k, decode_value(v))))
    }

    /// Keeps, changes or drops every record as `f` says. A failed allocation
    /// stops the walk with its error.
    pub(crate) fn rewrite<'a>(&mut self, f: &mut dyn FnMut(&[u8], &[u8]) -> Action<'a>) -> Result<()> {
        for b in 0..self.records.num_buckets() {
            let keys: Vec<Vec<u8>> = self.records.chain(b).map(|(k, _)| k.to_vec()).collect();
            for key in keys {
                let hash = key_hash(&key);
                self.process(hash, &key, |v| f(&key, v.unwrap_or_default()))?;
            }
        }
        Ok(())
    }

    /// The first record from `(hash, key)` on in (hash, key) order — after
    /// it only unless `inclusive` — or the first of all without a start.
    pub(crate) fn seek(&self, from: Option<(u64, &[u8])>, inclusive: bool) -> Option<Found> {
        let place = self.buckets;
        let start = from.map_or(0, |(h, _)| place.of(h));
        for b in start..self.records.num_buckets() {
            let mut best: Option<(u64, &[u8], &[u8])> = None;
            for (k, v) in self.records.chain(b) {
                let h = key_hash(k);
                let ordered = (place.local(h), k);
                if let Some((fh, fk)) = from {
                    let past = ordered.cmp(&(place.local(fh), fk));
                    if past.is_lt() || (past.is_eq() && !inclusive) {
                        continue;
                    }
                }
                if best.is_none_or(|(bh, bk, _)| ordered < (place.local(bh), bk)) {
                    best = Some((h, k, v));
                }
            }
            if let Some((h, k, v)) = best {
                return Some((h, k.to_vec(), decode_value(v).to_vec()));
            }
        }
        None
    }

    /// Moves every record into `2^bits` buckets.
    pub(crate) fn resize(&mut self, bits: u32) {
        self.buckets.bits = bits;
        let place = self.buckets;
        self.records.rehash(1 << bits, |key| place.of(key_hash(key)));
    }

    /// Removes every record.
    pub(crate) fn clear(&mut self) -> Result<()> {
        Shard::change(Change::Clear(&mut self.records)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &mut Shard<3>, key: &[u8], value: &[u8]) -> Outcome {
        s.process(key_hash(key), key, |_| Action::set(value)).unwrap()
    }

    #[test]
    fn records_keep_empty_long_and_binary_parts_across_resizes() {
        let mut s = Shard::<1>::new(0, 4);
        let long = vec![0xa5u8; 70_000];
        let keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0xff; 200], b"k".to_vec()];
        for k in &keys {
            let v: &[u8] = if k.is_empty() { &long } else { k };
            assert_eq!(s.process(key_hash(k), k, |_| Action::set(v)).unwrap(), Outcome::Added);
        }
        for bits in [3, 0, 5] {
            s.resize(bits);
            for k in &keys {
                let v: &[u8] = if k.is_empty() { &long } else { k };
                assert_eq!(s.get(key_hash(k), k), Some(v));
            }
        }
        assert_eq!(s.records().count(), 4);
        assert_eq!(s.process(key_hash(b"k"), b"k", |_| Action::Remove).unwrap(), Outcome::Removed);
        assert_eq!(s.get(key_hash(b"k"), b"k"), None);
    }

    #[test]
    fn the_lru_list_evicts_the_least_recently_used() {
        let mut s = Shard::<3>::new(1, 0);
        for k in [b"a", b"b", b"c"] {
            set(&mut s, k, b"1");
        }
        s.process(key_hash(b"a"), b"a", |_| Action::Keep).unwrap();
        assert_eq!(set(&mut s, b"b", b"22"), Outcome::Replaced);
        assert!(s.evict());
        assert_eq!(s.get(key_hash(b"c"), b"c"), None, "c was used least recently");
        assert!(s.evict());
        assert_eq!(s.get(key_hash(b"a"), b"a"), None);
        assert_eq!(s.get(key_hash(b"b"), b"b"), Some(&b"22"[..]));
        assert!(s.evict());
        assert!(!s.evict());
        assert_eq!((s.count(), s.mem_size()), (0, 2 * 8));
    }

    #[test]
    fn seek_walks_every_record_once_in_hash_order() {
        let mut s = Shard::<1>::new(2, 0);
        for i in 0..200u32 {
            s.process(key_hash(&i.to_le_bytes()), &i.to_le_bytes(), |_| Action::set(b"v")).unwrap();
        }
        let mut seen = Vec::new();
        let mut at = s.seek(None, true);
        while let Some((h, k, _)) = at {
            seen.push((h, k.clone()));
            if seen.len() == 100 {
                s.resize(6);
            }
            at = s.seek(Some((h, k.as_slice())), false);
        }
        assert_eq!(seen.len(), 200);
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
    }
}
