//! TinyDbm: an on-memory hash table whose every record is one heap block
//! holding its chain link, key and value.
//!
//! The table (`table`) is split into shards by the top bits of the key's
//! hash, each with its own lock and its own buckets (`shard`), whose
//! records (`record`, the only unsafe code of the on-memory databases) are
//! single heap blocks. The table and its housekeeping (`store`) and its
//! cursor (`cursor`) also serve [`CacheDbm`](crate::dbm::cache::CacheDbm).
//!
//! Every change to the records (process, process_multi, process_each,
//! cursor set and remove, clear, the load of the flat file, a cache's
//! eviction) goes through one function, `Shard::change`: an update log, an
//! index or a statistics counter attaches there. A caller's value is stored
//! only through `shard::encode_value` and handed back only through
//! `shard::decode_value`: a value codec attaches there.

mod cursor;
mod params;
mod record;
pub(crate) mod shard;
pub(crate) mod store;
pub(crate) mod table;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::persistence::FlatLock;

pub use self::cursor::HashCursor;
use self::store::{dbm_methods_of_store, Store};
use self::table::Table;
use super::{Dbm, MultiProcessor, Processor};
use crate::dbm::params::{Params, Taker};
use crate::dbm::Access;
use crate::error::Result;

/// The tuning of a [`TinyDbm`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TinyOptions {
    /// Buckets at first, across all shards (rounded to a power of two per
    /// shard); a shard doubles its own once it holds two records a bucket.
    pub num_buckets: u64,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
    /// How a writer locks the flat file against writers in other processes.
    pub lock: FlatLock,
}

impl TinyOptions {
    /// Sets the buckets at first, across all shards.
    pub fn num_buckets(mut self, num_buckets: u64) -> TinyOptions {
        self.num_buckets = num_buckets;
        self
    }

    /// Starts empty instead of reading an existing flat file, or not.
    pub fn truncate(mut self, truncate: bool) -> TinyOptions {
        self.truncate = truncate;
        self
    }

    /// Sets how a writer locks the flat file against writers in other processes.
    pub fn lock(mut self, lock: FlatLock) -> TinyOptions {
        self.lock = lock;
        self
    }
}

impl Default for TinyOptions {
    fn default() -> TinyOptions {
        TinyOptions { num_buckets: 1_048_583, truncate: false, lock: FlatLock::default() }
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
/// db.set(b"japan", b"tokyo")?;
/// db.append(b"japan", b"kyoto", b",")?;
/// assert_eq!(db.get(b"japan")?.as_deref(), Some(&b"tokyo,kyoto"[..]));
///
/// // With a path, the records live in a flat file between runs.
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.flat");
/// let db = TinyDbm::builder().open(&path)?;
/// db.set(b"france", b"paris")?;
/// db.close()?;
/// let db = TinyDbm::builder().open_read_only(&path)?;
/// assert_eq!(db.count()?, 1);
/// # Ok(())
/// # }
/// ```
pub struct TinyDbm {
    store: Store<1>,
    /// The fewest buckets a rebuild leaves: the options', or the last
    /// rebuild's `num_buckets`.
    num_buckets: AtomicU64,
}

crate::dbm::builder::options_builder!(TinyDbm, TinyOptions);

impl TinyDbm {
    /// A database purely in memory.
    pub fn new(options: &TinyOptions) -> TinyDbm {
        TinyDbm {
            store: Store::new(Table::new(TINY_SHARD_BITS, options.num_buckets)),
            num_buckets: AtomicU64::new(options.num_buckets),
        }
    }

    /// Opens the database kept in the flat file at `path`, reading it unless
    /// `options.truncate`. A missing file is an empty database for a writer
    /// and an error for a reader.
    pub fn open(path: impl AsRef<Path>, access: Access, options: &TinyOptions) -> Result<TinyDbm> {
        let mut db = TinyDbm::new(options);
        db.store.load(path.as_ref(), access.is_writable(), options.truncate, &options.lock, |_| {})?;
        Ok(db)
    }

    /// Writes the flat file (if the database has one and is writable) and closes.
    pub fn close(mut self) -> Result<()> {
        self.store.close()
    }

    /// A cursor, not yet positioned. It walks the records in the order of
    /// their keys' hashes, which no resize changes, and finds its place
    /// afresh at each move, so concurrent updates never invalidate it.
    pub fn cursor(&self) -> HashCursor<'_, 1> {
        self.store.cursor(self)
    }
}

impl Dbm for TinyDbm {
    dbm_methods_of_store!();

    fn close(self: Box<Self>) -> Result<()> {
        TinyDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        if !access.is_writable() {
            return self.store.read(key, f);
        }
        self.store.write(key, true, f, |_| {})
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.store.process_multi(keys, access, f, |_| {})
    }

    fn rebuild(&self) -> Result<()> {
        self.store.rebuild(self.num_buckets.load(Ordering::Relaxed), |_| {})
    }

    /// Takes `num_buckets` (or `buckets`): the table is rehashed to at least
    /// that many buckets, the floor of later rebuilds too.
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        let mut t = Taker::new(params, "rebuilding a tiny database");
        let wanted = t.number::<u64>(&["num_buckets", "buckets"])?;
        t.finish()?;
        let Some(n) = wanted else { return self.rebuild() };
        self.store.rebuild(n, |_| {})?;
        self.num_buckets.store(n, Ordering::Relaxed);
        Ok(())
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        // Growth is automatic; only buckets far beyond the records are worth a rebuild.
        let buckets = self.store.table.num_buckets();
        Ok(buckets > self.num_buckets.load(Ordering::Relaxed) && self.store.table.count() * 8 < buckets)
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        Ok(self.store.inspect("TinyDbm", &[]))
    }
}
