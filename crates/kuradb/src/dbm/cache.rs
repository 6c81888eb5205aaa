//! CacheDbm: a TinyDbm-like hash table that keeps its records in least
//! recently used order and evicts the oldest past a cap on records or memory.
//!
//! Each shard keeps its own LRU list under its own lock, and the caps are
//! divided evenly among the shards: eviction is least recently used within
//! a shard. A small cache (fewer than 512 records) has one shard, so its
//! order is exact; larger ones have up to 64 shards, so that threads scale.
//!
//! The cache is TinyDbm's table with three links a record
//! ([`tiny`](crate::dbm::tiny)): every change to the records, an eviction
//! included, goes through `Shard::change` there, where an update log, an
//! index or a statistics counter attaches; values pass the same
//! `encode_value` and `decode_value`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::persistence::FlatLock;

use super::tiny::shard::Shard;
use super::tiny::store::{dbm_methods_of_store, Store};
use super::tiny::table::Table;
use super::tiny::HashCursor;
use super::{Dbm, MultiProcessor, Processor};
use crate::dbm::params::{Params, Taker};
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};

/// A record's links: the bucket's chain and both ways of the LRU list.
const LINKS: usize = 3;

/// The caps and file of a [`CacheDbm`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CacheOptions {
    /// The most records kept; adding one more evicts the least recently used.
    pub cap_rec_num: u64,
    /// The most bytes of records kept (0: no cap); adding past it evicts the
    /// least recently used. The newest record always stays, however large.
    pub cap_mem_size: u64,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
    /// How a writer locks the flat file against writers in other processes.
    pub lock: FlatLock,
}

impl CacheOptions {
    /// Sets the most records kept.
    pub fn cap_rec_num(mut self, cap_rec_num: u64) -> CacheOptions {
        self.cap_rec_num = cap_rec_num;
        self
    }

    /// Sets the most bytes of records kept (0: no cap).
    pub fn cap_mem_size(mut self, cap_mem_size: u64) -> CacheOptions {
        self.cap_mem_size = cap_mem_size;
        self
    }

    /// Starts empty instead of reading an existing flat file, or not.
    pub fn truncate(mut self, truncate: bool) -> CacheOptions {
        self.truncate = truncate;
        self
    }

    /// Sets how a writer locks the flat file against writers in other processes.
    pub fn lock(mut self, lock: FlatLock) -> CacheOptions {
        self.lock = lock;
        self
    }
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions { cap_rec_num: 1_048_576, cap_mem_size: 0, truncate: false, lock: FlatLock::default() }
    }
}

/// An on-memory cache: a hash database capped by record count and memory,
/// evicting the least recently used records (a read counts as a use).
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::cache::{CacheDbm, CacheOptions};
/// # fn main() -> kuradb::Result<()> {
/// let db = CacheDbm::new(&CacheOptions::default().cap_rec_num(2))?;
/// db.set(b"a", b"1")?;
/// db.set(b"b", b"2")?;
/// db.get(b"a")?; // "a" is now used more recently than "b"
/// db.set(b"c", b"3")?;
/// assert_eq!(db.get(b"b")?, None);
/// assert_eq!(db.count()?, 2);
/// # Ok(())
/// # }
/// ```
pub struct CacheDbm {
    store: Store<LINKS>,
    caps: Caps,
}

/// The caps of each shard, and the whole cache's as given; atomics, as a
/// rebuild may change them while writers evict by them.
struct Caps {
    records: AtomicUsize,
    /// 0: none.
    bytes: AtomicUsize,
    shards: u64,
    cap_rec_num: AtomicU64,
    cap_mem_size: AtomicU64,
}

impl Caps {
    fn new(shards: u64, cap_rec_num: u64, cap_mem_size: u64) -> Caps {
        let caps = Caps {
            records: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            shards,
            cap_rec_num: AtomicU64::new(0),
            cap_mem_size: AtomicU64::new(0),
        };
        caps.set(cap_rec_num, cap_mem_size);
        caps
    }

    /// Divides the caps evenly among the shards, whose number stays what the
    /// first caps made it.
    fn set(&self, cap_rec_num: u64, cap_mem_size: u64) {
        self.records.store(cap_rec_num.div_ceil(self.shards) as usize, Ordering::Relaxed);
        self.bytes.store((cap_mem_size / self.shards) as usize, Ordering::Relaxed);
        self.cap_rec_num.store(cap_rec_num, Ordering::Relaxed);
        self.cap_mem_size.store(cap_mem_size, Ordering::Relaxed);
    }

    /// Evicts the least recently used records of `shard` until it is within
    /// the caps, keeping the newest however large.
    fn evict(&self, shard: &mut Shard<LINKS>) {
        let records = self.records.load(Ordering::Relaxed);
        let bytes = self.bytes.load(Ordering::Relaxed);
        let over = |s: &Shard<LINKS>| s.count() > records || (bytes > 0 && s.record_bytes() > bytes);
        while over(shard) && shard.count() > 1 && shard.evict() {}
    }
}

/// Refuses a record cap of 0, which would leave a cache that keeps nothing.
fn check_cap_rec_num(cap_rec_num: u64) -> Result<()> {
    if cap_rec_num == 0 {
        return Err(Error::new(ErrorKind::InvalidArgument, "cap_rec_num must be at least 1"));
    }
    Ok(())
}

crate::dbm::builder::options_builder!(CacheDbm, CacheOptions);

impl CacheDbm {
    /// A cache purely in memory.
    pub fn new(options: &CacheOptions) -> Result<CacheDbm> {
        check_cap_rec_num(options.cap_rec_num)?;
        let mut shard_bits = 0;
        while shard_bits < 6 && options.cap_rec_num >> (shard_bits + 1) >= 256 {
            shard_bits += 1;
        }
        let shards = 1u64 << shard_bits;
        let buckets = options.cap_rec_num.min(1 << 20);
        Ok(CacheDbm {
            store: Store::new(Table::new(shard_bits, buckets)),
            caps: Caps::new(shards, options.cap_rec_num, options.cap_mem_size),
        })
    }

    /// Opens the cache kept in the flat file at `path`, reading it unless
    /// `options.truncate` (the caps apply as it is read). A missing file is an
    /// empty cache for a writer and an error for a reader.
    pub fn open(path: impl AsRef<Path>, access: Access, options: &CacheOptions) -> Result<CacheDbm> {
        let mut db = CacheDbm::new(options)?;
        let CacheDbm { store, caps } = &mut db;
        store
            .load(path.as_ref(), access.is_writable(), options.truncate, &options.lock, |s| caps.evict(s))?;
        Ok(db)
    }

    /// Writes the flat file (if the cache has one and is writable) and closes.
    pub fn close(mut self) -> Result<()> {
        self.store.close()
    }

    /// A cursor, not yet positioned, walking the records in hash order as
    /// [`TinyDbm::cursor`](crate::dbm::tiny::TinyDbm::cursor) does. Moving it
    /// does not count as a use.
    pub fn cursor(&self) -> HashCursor<'_, LINKS> {
        self.store.cursor(self)
    }
}

impl Dbm for CacheDbm {
    dbm_methods_of_store!();

    fn close(self: Box<Self>) -> Result<()> {
        CacheDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        // A read is a use: it moves the record in the LRU list, so it too
        // takes the shard's lock exclusively.
        self.store.write(key, access.is_writable(), f, |s| self.caps.evict(s))
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.store.process_multi(keys, access, f, |s| self.caps.evict(s))
    }

    fn rebuild(&self) -> Result<()> {
        self.store.rebuild(1, |_| {})
    }

    /// Takes `cap_rec_num` and `cap_mem_size`: the new caps hold from now
    /// on, and the least recently used records past them are evicted at
    /// once. The shards stay as many as the caps at creation made them, as
    /// rehashing every record into new shards would stop every writer: a
    /// cache made for 512 records or more keeps at least its newest record
    /// in each shard, whatever the new caps.
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        let mut t = Taker::new(params, "rebuilding a cache database");
        let cap_rec_num = t.number::<u64>(&["cap_rec_num"])?;
        let cap_mem_size = t.number::<u64>(&["cap_mem_size"])?;
        t.finish()?;
        if let Some(n) = cap_rec_num {
            check_cap_rec_num(n)?;
        }
        let before =
            (self.caps.cap_rec_num.load(Ordering::Relaxed), self.caps.cap_mem_size.load(Ordering::Relaxed));
        self.caps.set(cap_rec_num.unwrap_or(before.0), cap_mem_size.unwrap_or(before.1));
        let rebuilt = self.store.rebuild(1, |s| self.caps.evict(s));
        if rebuilt.is_err() {
            // A reader's caps stay as they were.
            self.caps.set(before.0, before.1);
        }
        rebuilt
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        Ok(false)
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let caps = [
            ("cap_rec_num", self.caps.cap_rec_num.load(Ordering::Relaxed)),
            ("cap_mem_size", self.caps.cap_mem_size.load(Ordering::Relaxed)),
        ];
        Ok(self.store.inspect("CacheDbm", &caps))
    }
}

impl CacheOptions {
    /// `self` with the parameters CacheDbm takes: `truncate`, `cap_rec_num`
    /// and `cap_mem_size`.
    pub(crate) fn take_params(mut self, t: &mut crate::dbm::params::Taker<'_>) -> Result<CacheOptions> {
        (self.truncate, self.lock) = t.memory_open()?;
        if let Some(n) = t.number(&["cap_rec_num"])? {
            self.cap_rec_num = n;
        }
        if let Some(n) = t.number(&["cap_mem_size"])? {
            self.cap_mem_size = n;
        }
        Ok(self)
    }
}
