//! The sharded hash table of TinyDbm and CacheDbm: shards picked by the top
//! bits of the key's hash, each behind its own lock.
//!
//! Operations on different shards run in parallel, and a shard that grows
//! past two records a bucket doubles its buckets alone, holding up only the
//! operations on that shard.

use parking_lot::RwLock;

use super::shard::{key_hash, Found, Outcome, Shard};
use crate::dbm::flat::{refused_change, FlatWriter};
use crate::dbm::{Action, EachProcessor, MultiProcessor};
use crate::error::Result;

/// A shard on a cache line of its own, so that locks of neighbours do not contend.
#[repr(align(64))]
struct Padded<T>(T);

/// Shards of the hash table, each behind its own lock.
pub(crate) struct Table<const L: usize> {
    shards: Box<[Padded<RwLock<Shard<L>>>]>,
    shard_bits: u32,
}

impl<const L: usize> Table<L> {
    /// `2^shard_bits` shards sharing about `num_buckets` buckets at first.
    pub(crate) fn new(shard_bits: u32, num_buckets: u64) -> Table<L> {
        let per_shard = (num_buckets >> shard_bits).max(1);
        let bits = 63 - per_shard.leading_zeros();
        let shards =
            (0..1usize << shard_bits).map(|_| Padded(RwLock::new(Shard::new(bits, shard_bits)))).collect();
        Table { shards, shard_bits }
    }

    fn shard_of(&self, hash: u64) -> usize {
        if self.shard_bits == 0 {
            0
        } else {
            (hash >> (64 - self.shard_bits)) as usize
        }
    }

    fn lock(&self, hash: u64) -> &RwLock<Shard<L>> {
        &self.shards[self.shard_of(hash)].0
    }

    /// Shows `key`'s value to `f` under the shard's shared lock.
    pub(crate) fn read<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> R {
        let hash = key_hash(key);
        f(self.lock(hash).read().get(hash, key))
    }

    /// The value of `key` and the version of its shard.
    pub(crate) fn read_versioned(&self, hash: u64, key: &[u8]) -> (Option<Vec<u8>>, u64) {
        let shard = self.lock(hash).read();
        (shard.get(hash, key).map(<[u8]>::to_vec), shard.version())
    }

    pub(crate) fn version(&self, hash: u64) -> u64 {
        self.lock(hash).read().version()
    }

    /// Carries out `f`'s answer for `key` under the shard's lock, then lets
    /// `after` see the shard (a cache evicts there).
    pub(crate) fn write<'a>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> Action<'a>,
        after: impl FnOnce(&mut Shard<L>),
    ) -> Result<Outcome> {
        let hash = key_hash(key);
        let mut shard = self.lock(hash).write();
        let outcome = shard.process(hash, key, f)?;
        grow(&mut shard, outcome);
        after(&mut shard);
        Ok(outcome)
    }

    /// Every key's shard locked (in shard order, so two callers cannot
    /// deadlock), then each key processed in turn.
    pub(crate) fn write_multi<'a>(
        &self,
        keys: &[&[u8]],
        writable: bool,
        f: &mut MultiProcessor<'a>,
        mut after: impl FnMut(&mut Shard<L>),
    ) -> Result<()> {
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
        let mut ids: Vec<usize> = hashes.iter().map(|&h| self.shard_of(h)).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut guards: Vec<_> = ids.iter().map(|&i| self.shards[i].0.write()).collect();
        for (i, key) in keys.iter().enumerate() {
            let shard: &mut Shard<L> = &mut guards[ids.partition_point(|&id| id < self.shard_of(hashes[i]))];
            let mut refused = false;
            let outcome = shard.process(hashes[i], key, |v| {
                let action = f(i, key, v);
                if !writable && action != Action::Keep {
                    refused = true;
                    return Action::Keep;
                }
                action
            })?;
            if refused {
                return Err(refused_change());
            }
            grow(shard, outcome);
            after(shard);
        }
        Ok(())
    }

    /// Shows every record to `f` with every shard locked.
    pub(crate) fn each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        if writable {
            let mut guards: Vec<_> = self.shards.iter().map(|s| s.0.write()).collect();
            return guards.iter_mut().try_for_each(|g| g.rewrite(f));
        }
        let guards: Vec<_> = self.shards.iter().map(|s| s.0.read()).collect();
        for g in &guards {
            for (k, v) in g.records() {
                if f(k, v) != Action::Keep {
                    return Err(refused_change());
                }
            }
        }
        Ok(())
    }

    /// Writes every record, all shards held so that the copy is consistent.
    pub(crate) fn put_all(&self, w: &mut FlatWriter) -> std::io::Result<()> {
        let guards: Vec<_> = self.shards.iter().map(|s| s.0.read()).collect();
        for g in &guards {
            for (k, v) in g.records() {
                w.put(k, v)?;
            }
        }
        Ok(())
    }

    pub(crate) fn count(&self) -> u64 {
        self.shards.iter().map(|s| s.0.read().count() as u64).sum()
    }

    pub(crate) fn num_buckets(&self) -> u64 {
        self.shards.iter().map(|s| s.0.read().num_buckets() as u64).sum()
    }

    pub(crate) fn mem_size(&self) -> u64 {
        let own = std::mem::size_of_val(&*self.shards) as u64;
        own + self.shards.iter().map(|s| s.0.read().mem_size() as u64).sum::<u64>()
    }

    pub(crate) fn clear(&self) -> Result<()> {
        let mut guards: Vec<_> = self.shards.iter().map(|s| s.0.write()).collect();
        guards.iter_mut().try_for_each(|g| g.clear())
    }

    /// Sizes every shard's buckets to its records, at least `min_buckets` in
    /// all, after `trim` (a cache's eviction) has had the shard.
    pub(crate) fn fit(&self, min_buckets: u64, trim: impl Fn(&mut Shard<L>)) {
        let floor = (min_buckets >> self.shard_bits).max(1);
        for s in self.shards.iter() {
            let mut g = s.0.write();
            trim(&mut g);
            let want = (g.count() as u64).max(floor);
            let bits = 63 - want.leading_zeros();
            if bits != g.bits() {
                g.resize(bits);
            }
        }
    }

    /// The first record at or after `(hash(key), key)` in the table's order
    /// (after it only unless `inclusive`), or the first of all without a key.
    pub(crate) fn seek(&self, from: Option<(u64, &[u8])>, inclusive: bool) -> Option<Found> {
        let start = from.map_or(0, |(h, _)| self.shard_of(h));
        if let Some(found) = self.shards[start].0.read().seek(from, inclusive) {
            return Some(found);
        }
        self.shards[start + 1..].iter().find_map(|s| s.0.read().seek(None, true))
    }
}

/// Doubles a shard's buckets once it holds more than two records a bucket.
fn grow<const L: usize>(shard: &mut Shard<L>, outcome: Outcome) {
    if outcome == Outcome::Added && shard.count() > 2 * shard.num_buckets() && shard.bits() < 40 {
        shard.resize(shard.bits() + 1);
    }
}
