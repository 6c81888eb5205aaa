//! The stores of the comparison table, each behind [`Store`]: the calls a
//! user of an embedded key-value store makes (commit pairs durably or not,
//! read, range, count, remove, compact), in each store's own idiom and with
//! the settings a user would pick (see [`StoreName::settings`]).

use std::path::Path;

use crate::engine::BoxError;

/// One key/value pair to write.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Reads of one thread: each store's read transaction, snapshot or handle.
pub trait Reader {
    /// The length of `key`'s value, `None` when it is absent.
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError>;

    /// Reads up to `count` records in key order from the first key at or
    /// after `start`, returning the bytes of keys and values read; `None`
    /// for a store without key order.
    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError>;
}

/// One store under test, opened on a fresh folder.
pub trait Store: Sync {
    /// Sets every pair in one commit (or, for a store without commits, one
    /// series of sets followed by one synchronization), on the device when
    /// it returns if `durable`, else handed to the store only.
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError>;

    /// Removes every key in one commit, as [`Store::write`] does.
    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError>;

    /// Sets every pair in one durable transactional commit, for a store
    /// whose durable writes have a second way (kuradb's `TransactionalDbm`
    /// beside its plain set-then-synchronize); `None` for the others.
    fn write_transactional(
        &mut self,
        _pairs: &mut dyn Iterator<Item = Pair>,
    ) -> Option<Result<(), BoxError>> {
        None
    }

    /// Goes back from the transactional way of [`Store::write_transactional`]
    /// to the plain one, for the rows after it.
    fn end_transactional(&mut self) -> Result<(), BoxError> {
        Ok(())
    }

    /// Hands the store's files what it holds of its records only in
    /// memory, without waiting for the device, so that a file size counts
    /// every record. A store whose commits reach its files or its log does
    /// nothing; kuradb's tree keeps changed nodes in its cache until then.
    fn write_out(&self) -> Result<(), BoxError> {
        Ok(())
    }

    /// Makes a reader for the calling thread.
    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError>;

    /// The number of records, exact.
    fn len(&self) -> Result<u64, BoxError>;

    /// Visits every record in the store's order, returning how many.
    fn iterate(&self) -> Result<u64, BoxError>;

    /// Runs the store's compaction; `false` for a store without one.
    fn compact(&mut self) -> Result<bool, BoxError>;

    /// Makes everything durable and closes.
    fn close(self: Box<Self>) -> Result<(), BoxError>;
}

/// The stores by name, in the order of the table's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreName {
    /// kuradb's hash database (`.kh`).
    KuraHash,
    /// kuradb's tree database (`.kt`).
    KuraTree,
    /// redb.
    #[cfg(feature = "redb")]
    Redb,
    /// LMDB through heed.
    #[cfg(feature = "lmdb")]
    Lmdb,
    /// RocksDB through rust-rocksdb.
    #[cfg(feature = "rocksdb")]
    Rocksdb,
    /// fjall.
    #[cfg(feature = "fjall")]
    Fjall,
    /// SQLite through rusqlite, bundled.
    #[cfg(feature = "sqlite")]
    Sqlite,
    /// sled.
    #[cfg(feature = "sled")]
    Sled,
    /// The reference's hash database, through its C library.
    #[cfg(tkrzw_lib)]
    TkrzwHash,
    /// The reference's tree database, through its C library.
    #[cfg(tkrzw_lib)]
    TkrzwTree,
}

impl StoreName {
    /// Every store this build has.
    pub fn all() -> Vec<StoreName> {
        vec![
            StoreName::KuraHash,
            StoreName::KuraTree,
            #[cfg(feature = "redb")]
            StoreName::Redb,
            #[cfg(feature = "lmdb")]
            StoreName::Lmdb,
            #[cfg(feature = "rocksdb")]
            StoreName::Rocksdb,
            #[cfg(feature = "fjall")]
            StoreName::Fjall,
            #[cfg(feature = "sqlite")]
            StoreName::Sqlite,
            #[cfg(feature = "sled")]
            StoreName::Sled,
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwHash,
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwTree,
        ]
    }

    /// Whether the store keeps its keys in order (ranges read in it).
    #[cfg(test)]
    pub fn is_ordered(self) -> bool {
        match self {
            StoreName::KuraHash => false,
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwHash => false,
            _ => true,
        }
    }

    /// The name the command line takes and the table shows.
    pub fn name(self) -> &'static str {
        match self {
            StoreName::KuraHash => "kura-hash",
            StoreName::KuraTree => "kura-tree",
            #[cfg(feature = "redb")]
            StoreName::Redb => "redb",
            #[cfg(feature = "lmdb")]
            StoreName::Lmdb => "lmdb",
            #[cfg(feature = "rocksdb")]
            StoreName::Rocksdb => "rocksdb",
            #[cfg(feature = "fjall")]
            StoreName::Fjall => "fjall",
            #[cfg(feature = "sqlite")]
            StoreName::Sqlite => "sqlite",
            #[cfg(feature = "sled")]
            StoreName::Sled => "sled",
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwHash => "tkrzw-hash",
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwTree => "tkrzw-tree",
        }
    }

    /// The crate and version measured, and the settings used.
    pub fn settings(self) -> String {
        let text = match self {
            StoreName::KuraHash => {
                "kuradb (this commit), `PolyDbm` of a `.kh` file, default parameters; ranges and walks by `Cursor::read`; durable = `synchronize(Durability::Hard)` after the sets; transactional rows: `TransactionalDbm` batch committed with `CommitDurability::Sync`"
            }
            StoreName::KuraTree => {
                "kuradb (this commit), `PolyDbm` of a `.kt` file, parameters `file=pos-para,max_cached_pages=40000`: a node cache that holds the tree's leaves (about 21,000 for 1,000,000 records, more as the rows before the reads add 111,000; leaves take at most three quarters of it), as LMDB's map holds its file, on positional I/O so that the file is not mapped into the process beside the cache; the seeds' size is taken after `synchronize(Durability::Soft)`, which writes the cached nodes out; ranges and walks by `Cursor::read`; durable = `synchronize(Durability::Hard)` after the sets; transactional rows: `TransactionalDbm` batch committed with `CommitDurability::Sync`"
            }
            #[cfg(feature = "redb")]
            StoreName::Redb => {
                "redb 3.1.3, default settings; durable = `Durability::Immediate`, not synced = `Durability::None`; compaction = `Database::compact`"
            }
            #[cfg(feature = "lmdb")]
            StoreName::Lmdb => {
                "LMDB through heed 0.22.0, map size 64 GiB, default flags (synced commits); not synced = `MDB_NOSYNC` for those commits; no compaction in place"
            }
            #[cfg(feature = "rocksdb")]
            StoreName::Rocksdb => {
                "RocksDB through rocksdb 0.25.0 (snappy built in), default options; durable = `WriteBatch` with `set_sync(true)`, not synced = WAL without sync; count = a full iteration; compaction = `compact_range` over all keys"
            }
            #[cfg(feature = "fjall")]
            StoreName::Fjall => {
                "fjall 3.1.13, default settings, one keyspace; durable = batch with `PersistMode::SyncAll`, not synced = batch without persist; no compaction call (it compacts in the background)"
            }
            #[cfg(feature = "sqlite")]
            StoreName::Sqlite => {
                "SQLite through rusqlite 0.38.0 (bundled), one `WITHOUT ROWID` table of BLOB key and value, `journal_mode=WAL`; durable = `synchronous=FULL`, not synced = `synchronous=OFF`; one connection a reading thread; compaction = `wal_checkpoint(TRUNCATE)` and `VACUUM`"
            }
            #[cfg(feature = "sled")]
            StoreName::Sled => {
                "sled 0.34.7, default config; durable = `apply_batch` then `flush`, not synced = `apply_batch`; count = `len` (a full iteration); no compaction call"
            }
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwHash => return tkrzw_settings("HashDBM` of a `.tkh"),
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwTree => return tkrzw_settings("TreeDBM` of a `.tkt"),
        };
        text.to_string()
    }

    /// Parses a name of [`StoreName::name`], naming the feature a store
    /// left out of this build needs.
    pub fn parse(text: &str) -> Result<StoreName, String> {
        if let Some(store) = StoreName::all().into_iter().find(|e| e.name() == text) {
            return Ok(store);
        }
        const FEATURES: [&str; 6] = ["redb", "lmdb", "rocksdb", "fjall", "sqlite", "sled"];
        if FEATURES.contains(&text) {
            return Err(format!("engine {text:?} is not in this build: build with `--features {text}`"));
        }
        let names: Vec<_> = StoreName::all().iter().map(|e| e.name()).collect();
        Err(format!("unknown engine {text:?}: one of {}", names.join(", ")))
    }

    /// Opens a fresh store of this kind in the empty folder `dir`.
    pub fn open(self, dir: &Path) -> Result<Box<dyn Store>, BoxError> {
        Ok(match self {
            StoreName::KuraHash => Box::new(crate::stores::kura::Kura::open(&dir.join("bench.kh"), "")?),
            StoreName::KuraTree => Box::new(crate::stores::kura::Kura::open(
                &dir.join("bench.kt"),
                crate::stores::kura::TREE_PARAMS,
            )?),
            #[cfg(feature = "redb")]
            StoreName::Redb => Box::new(crate::stores::redb::RedbStore::open(dir)?),
            #[cfg(feature = "lmdb")]
            StoreName::Lmdb => Box::new(crate::stores::lmdb::Lmdb::open(dir)?),
            #[cfg(feature = "rocksdb")]
            StoreName::Rocksdb => Box::new(crate::stores::rocks::Rocks::open(dir)?),
            #[cfg(feature = "fjall")]
            StoreName::Fjall => Box::new(crate::stores::fjall::Fjall::open(dir)?),
            #[cfg(feature = "sqlite")]
            StoreName::Sqlite => Box::new(crate::stores::sqlite::Sqlite::open(dir)?),
            #[cfg(feature = "sled")]
            StoreName::Sled => Box::new(crate::stores::sled::Sled::open(dir)?),
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwHash => Box::new(crate::stores::tkrzw::Tkrzw::open(&dir.join("bench.tkh"))?),
            #[cfg(tkrzw_lib)]
            StoreName::TkrzwTree => Box::new(crate::stores::tkrzw::Tkrzw::open(&dir.join("bench.tkt"))?),
        })
    }
}

/// The settings of a reference's column, of the class and file `class`
/// names.
#[cfg(tkrzw_lib)]
fn tkrzw_settings(class: &str) -> String {
    format!(
        "Tkrzw {} through its C library (Debian's `libtkrzw-dev`, the interface of `tkrzw_langc.h`), a `{class}` file with the default tuning (`truncate=true` only); gets by `tkrzw_dbm_get` (a copy, freed); ranges and walks by an iterator's `tkrzw_dbm_iter_process`, with no copy; durable = `tkrzw_dbm_synchronize(hard)` after the sets; compaction = `tkrzw_dbm_rebuild`",
        crate::stores::tkrzw::version()
    )
}

impl std::fmt::Display for StoreName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
