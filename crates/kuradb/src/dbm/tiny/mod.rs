//! TinyDbm: an on-memory hash table whose every record is one heap block
//! holding its chain link, key and value.
//!
//! The table is split into shards by the top bits of the key's hash, each
//! with its own lock and its own buckets: operations on different shards run
//! in parallel, and a shard that grows past two records a bucket doubles its
//! buckets alone, holding up only the operations on that shard. The shards
//! (`shard`) also carry [`CacheDbm`](crate::dbm::cache::CacheDbm)'s records.

mod params;
pub(crate) mod shard;

use std::path::Path;

use parking_lot::RwLock;

use self::shard::{key_hash, Found, Outcome, Shard};
use super::flat::{self, refused_change, FlatWriter, Persistence};
use super::{show_key, Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

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
    fn read_versioned(&self, hash: u64, key: &[u8]) -> (Option<Vec<u8>>, u64) {
        let shard = self.lock(hash).read();
        (shard.get(hash, key).map(<[u8]>::to_vec), shard.version())
    }

    fn version(&self, hash: u64) -> u64 {
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

    pub(crate) fn clear(&self) {
        let mut guards: Vec<_> = self.shards.iter().map(|s| s.0.write()).collect();
        guards.iter_mut().for_each(|g| g.clear());
    }

    /// Sizes every shard's buckets to its records, at least `min_buckets` in all.
    pub(crate) fn fit(&self, min_buckets: u64) {
        let floor = (min_buckets >> self.shard_bits).max(1);
        for s in self.shards.iter() {
            let mut g = s.0.write();
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

/// The tuning of a [`TinyDbm`].
#[derive(Clone, Debug)]
pub struct TinyOptions {
    /// Buckets at first, across all shards (rounded to a power of two per
    /// shard); a shard doubles its own once it holds two records a bucket.
    pub num_buckets: u64,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
}

impl Default for TinyOptions {
    fn default() -> TinyOptions {
        TinyOptions { num_buckets: 1_048_583, truncate: false }
    }
}

/// Shards of a TinyDbm: enough that ten threads rarely meet on one lock.
const TINY_SHARD_BITS: u32 = 8;

/// An on-memory hash database: the least memory per record of the hash
/// databases, and updates that scale with threads (one lock per shard).
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::tiny::{TinyDbm, TinyOptions};
/// # fn main() -> kuradb::Result<()> {
/// let db = TinyDbm::new(&TinyOptions::default());
/// db.set(b"japan", b"tokyo", true)?;
/// db.append(b"japan", b"kyoto", b",")?;
/// assert_eq!(db.get(b"japan")?.as_deref(), Some(&b"tokyo,kyoto"[..]));
///
/// // With a path, the records live in a flat file between runs.
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.flat");
/// let db = TinyDbm::open(&path, true, &TinyOptions::default())?;
/// db.set(b"france", b"paris", true)?;
/// db.close()?;
/// let db = TinyDbm::open(&path, false, &TinyOptions::default())?;
/// assert_eq!(db.count()?, 1);
/// # Ok(())
/// # }
/// ```
pub struct TinyDbm {
    table: Table<1>,
    num_buckets: u64,
    persistence: Persistence,
    closed: bool,
}

impl TinyDbm {
    /// A database purely in memory.
    pub fn new(options: &TinyOptions) -> TinyDbm {
        TinyDbm {
            table: Table::new(TINY_SHARD_BITS, options.num_buckets),
            num_buckets: options.num_buckets,
            persistence: Persistence::none(),
            closed: false,
        }
    }

    /// Opens the database kept in the flat file at `path`, reading it unless
    /// `options.truncate`. A missing file is an empty database for a writer
    /// and an error for a reader.
    pub fn open(path: impl AsRef<Path>, writable: bool, options: &TinyOptions) -> Result<TinyDbm> {
        let mut db = TinyDbm::new(options);
        let table = &db.table;
        db.persistence = Persistence::open(path.as_ref(), writable, options.truncate, |k, v| {
            table.write(k, |_| Action::set(v), |_| {}).map(|_| ())
        })?;
        Ok(db)
    }

    /// Writes the flat file (if the database has one and is writable) and closes.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.persistence.save(false, |w| self.table.put_all(w))
    }

    /// A cursor, not yet positioned. It walks the records in the order of
    /// their keys' hashes, which no resize changes, and finds its place
    /// afresh at each move, so concurrent updates never invalidate it.
    pub fn cursor(&self) -> HashCursor<'_, 1> {
        HashCursor::new(&self.table, self)
    }
}

impl Drop for TinyDbm {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.persistence.save(false, |w| self.table.put_all(w));
        }
    }
}

impl Dbm for TinyDbm {
    fn close(self: Box<Self>) -> Result<()> {
        TinyDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        if !writable {
            self.persistence.check_process()?;
            return self.table.read(key, |v| match f(v) {
                Action::Keep => Ok(()),
                _ => Err(refused_change()),
            });
        }
        self.persistence.check_writable(true)?;
        self.table.write(key, f, |_| {}).map(|_| ())
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        self.table.write_multi(keys, writable, f, |_| {})
    }

    fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        self.table.each(writable, f)
    }

    fn count(&self) -> Result<u64> {
        self.persistence.check_process()?;
        Ok(self.table.count())
    }

    fn file_size(&self) -> Result<u64> {
        Ok(self.table.mem_size())
    }

    fn path(&self) -> Option<&Path> {
        self.persistence.path.as_deref()
    }

    fn clear(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.table.clear();
        Ok(())
    }

    fn rebuild(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.table.fit(self.num_buckets);
        Ok(())
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        // Growth is automatic; only buckets far beyond the records are worth a rebuild.
        let buckets = self.table.num_buckets();
        Ok(buckets > self.num_buckets && self.table.count() * 8 < buckets)
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        self.persistence.save(hard, |w| self.table.put_all(w))
    }

    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        flat::write(dest, hard, |w| self.table.put_all(w))
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        Ok(vec![
            ("class".to_string(), "TinyDbm".to_string()),
            ("num_records".to_string(), self.table.count().to_string()),
            ("num_buckets".to_string(), self.table.num_buckets().to_string()),
            ("mem_size".to_string(), self.table.mem_size().to_string()),
            (
                "path".to_string(),
                self.persistence.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
            ),
        ])
    }

    fn is_healthy(&self) -> bool {
        true
    }

    fn is_ordered(&self) -> bool {
        false
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.persistence.check_process()?;
        Ok(Box::new(self.cursor()))
    }
}

/// A position in a hash table of records: the hash and key of its record.
/// Records are walked in (hash, key) order, which growing or shrinking the
/// buckets keeps, so every record present throughout a walk is met once.
pub struct HashCursor<'a, const L: usize> {
    table: &'a Table<L>,
    db: &'a dyn Dbm,
    at: Option<(u64, Vec<u8>)>,
    /// The value at the position and its shard's version when it was read.
    seen: Option<(Vec<u8>, u64)>,
}

impl<'a, const L: usize> HashCursor<'a, L> {
    pub(crate) fn new(table: &'a Table<L>, db: &'a dyn Dbm) -> HashCursor<'a, L> {
        HashCursor { table, db, at: None, seen: None }
    }

    fn step(&mut self, inclusive: bool) -> Option<(Vec<u8>, Vec<u8>)> {
        let (hash, key) = self.at.take()?;
        if let Some((value, version)) = self.seen.take().filter(|_| inclusive) {
            if version == self.table.version(hash) {
                // The shard is as it was when the record was read: so is the record.
                self.at = Some((hash, key.clone()));
                self.seen = Some((value.clone(), version));
                return Some((key, value));
            }
        }
        let (h, k, v) = self.table.seek(Some((hash, key.as_slice())), inclusive)?;
        self.at = Some((h, k.clone()));
        Some((k, v))
    }

    fn past_end() -> Error {
        Error::new(ErrorKind::NotFound, "the cursor is past the last record")
    }
}

impl<const L: usize> Cursor for HashCursor<'_, L> {
    fn first(&mut self) -> Result<()> {
        self.seen = None;
        self.at = self.table.seek(None, true).map(|(h, k, _)| (h, k));
        Ok(())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let hash = key_hash(key);
        let (value, version) = self.table.read_versioned(hash, key);
        let Some(value) = value else {
            self.at = None;
            self.seen = None;
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no record {} to jump to (a hash database jumps only to existing keys)",
                    show_key(key)
                ),
            ));
        };
        self.at = Some((hash, key.to_vec()));
        self.seen = Some((value, version));
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.step(false);
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.step(true))
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.step(true) {
            Some((key, _)) => self.db.set(&key, value, true),
            None => Err(Self::past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.step(true) {
            Some((key, _)) => self.db.remove(&key).map(|_| ()),
            None => Err(Self::past_end()),
        }
    }
}
