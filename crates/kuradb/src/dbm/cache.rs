//! CacheDbm: a TinyDbm-like hash table that keeps its records in least
//! recently used order and evicts the oldest past a cap on records or memory.
//!
//! Each shard keeps its own LRU list under its own lock, and the caps are
//! divided evenly among the shards: eviction is least recently used within
//! a shard. A small cache (fewer than 512 records) has one shard, so its
//! order is exact; larger ones have up to 64 shards, so that threads scale.

use std::path::Path;

use super::flat::{self, refused_change, Persistence};
use super::tiny::shard::Shard;
use super::tiny::{HashCursor, Table};
use super::{Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

/// A record's links: the bucket's chain and both ways of the LRU list.
const LINKS: usize = 3;

/// The caps and file of a [`CacheDbm`].
#[derive(Clone, Debug)]
pub struct CacheOptions {
    /// The most records kept; adding one more evicts the least recently used.
    pub cap_rec_num: u64,
    /// The most bytes of records kept (0: no cap); adding past it evicts the
    /// least recently used. The newest record always stays, however large.
    pub cap_mem_size: u64,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions { cap_rec_num: 1_048_576, cap_mem_size: 0, truncate: false }
    }
}

/// An on-memory cache: a hash database capped by record count and memory,
/// evicting the least recently used records (a read counts as a use).
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::cache::{CacheDbm, CacheOptions};
/// # fn main() -> kuradb::Result<()> {
/// let db = CacheDbm::new(&CacheOptions { cap_rec_num: 2, ..CacheOptions::default() })?;
/// db.set(b"a", b"1", true)?;
/// db.set(b"b", b"2", true)?;
/// db.get(b"a")?; // "a" is now used more recently than "b"
/// db.set(b"c", b"3", true)?;
/// assert_eq!(db.get(b"b")?, None);
/// assert_eq!(db.count()?, 2);
/// # Ok(())
/// # }
/// ```
pub struct CacheDbm {
    table: Table<LINKS>,
    /// Caps of each shard.
    shard_records: usize,
    shard_bytes: usize,
    options: CacheOptions,
    persistence: Persistence,
    closed: bool,
}

impl CacheDbm {
    /// A cache purely in memory.
    pub fn new(options: &CacheOptions) -> Result<CacheDbm> {
        if options.cap_rec_num == 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "cap_rec_num must be at least 1"));
        }
        let mut shard_bits = 0;
        while shard_bits < 6 && options.cap_rec_num >> (shard_bits + 1) >= 256 {
            shard_bits += 1;
        }
        let shards = 1u64 << shard_bits;
        let buckets = options.cap_rec_num.min(1 << 20);
        Ok(CacheDbm {
            table: Table::new(shard_bits, buckets),
            shard_records: options.cap_rec_num.div_ceil(shards) as usize,
            shard_bytes: (options.cap_mem_size / shards) as usize,
            options: options.clone(),
            persistence: Persistence::none(),
            closed: false,
        })
    }

    /// Opens the cache kept in the flat file at `path`, reading it unless
    /// `options.truncate` (the caps apply as it is read). A missing file is an
    /// empty cache for a writer and an error for a reader.
    pub fn open(path: impl AsRef<Path>, writable: bool, options: &CacheOptions) -> Result<CacheDbm> {
        let mut db = CacheDbm::new(options)?;
        let this = &db;
        let persistence = Persistence::open(path.as_ref(), writable, options.truncate, |k, v| {
            this.table.write(k, |_| Action::set(v), |s| this.evict(s)).map(|_| ())
        })?;
        db.persistence = persistence;
        Ok(db)
    }

    /// Writes the flat file (if the cache has one and is writable) and closes.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.persistence.save(false, |w| self.table.put_all(w))
    }

    /// A cursor, not yet positioned, walking the records in hash order as
    /// [`TinyDbm::cursor`](crate::dbm::tiny::TinyDbm::cursor) does. Moving it
    /// does not count as a use.
    pub fn cursor(&self) -> HashCursor<'_, LINKS> {
        HashCursor::new(&self.table, self)
    }

    fn evict(&self, shard: &mut Shard<LINKS>) {
        let over = |s: &Shard<LINKS>| {
            s.count() > self.shard_records || (self.shard_bytes > 0 && s.record_bytes() > self.shard_bytes)
        };
        while over(shard) && shard.count() > 1 && shard.evict() {}
    }
}

impl Drop for CacheDbm {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.persistence.save(false, |w| self.table.put_all(w));
        }
    }
}

impl Dbm for CacheDbm {
    fn close(self: Box<Self>) -> Result<()> {
        CacheDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        // A read is a use: it moves the record in the LRU list, so it too
        // takes the shard's lock exclusively.
        let mut refused = false;
        self.table.write(
            key,
            |v| {
                let action = f(v);
                if !writable && action != Action::Keep {
                    refused = true;
                    return Action::Keep;
                }
                action
            },
            |s| self.evict(s),
        )?;
        if refused {
            return Err(refused_change());
        }
        Ok(())
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        self.table.write_multi(keys, writable, f, |s| self.evict(s))
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
        self.table.fit(1);
        Ok(())
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        Ok(false)
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        self.persistence.save(hard, |w| self.table.put_all(w))
    }

    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        flat::write(dest, hard, |w| self.table.put_all(w))
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        Ok(vec![
            ("class".to_string(), "CacheDbm".to_string()),
            ("num_records".to_string(), self.table.count().to_string()),
            ("num_buckets".to_string(), self.table.num_buckets().to_string()),
            ("mem_size".to_string(), self.table.mem_size().to_string()),
            ("cap_rec_num".to_string(), self.options.cap_rec_num.to_string()),
            ("cap_mem_size".to_string(), self.options.cap_mem_size.to_string()),
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

impl CacheOptions {
    /// `self` with the parameters CacheDbm takes: `truncate`, `cap_rec_num`
    /// and `cap_mem_size`.
    pub(crate) fn take_params(mut self, t: &mut crate::dbm::params::Taker<'_>) -> Result<CacheOptions> {
        self.truncate = t.memory_truncate()?;
        if let Some(n) = t.number(&["cap_rec_num"])? {
            self.cap_rec_num = n;
        }
        if let Some(n) = t.number(&["cap_mem_size"])? {
            self.cap_mem_size = n;
        }
        Ok(self)
    }
}
