//! The cursor of a hash database, which visits the records bucket by bucket.
//! It reads and writes through the database's own `get`, `set` and `remove`,
//! so its reads and changes take the paths every other operation takes.
//! Its moves and reads are a scan to the caches ([`ScanScope`]); a jump is
//! a lookup.

use std::collections::VecDeque;

use super::buckets::bucket_of;
use super::HashDbm;
use crate::caching::ScanScope;
use crate::dbm::ordered_cursor::{no_record_to_jump_to, past_end};
use crate::dbm::{Cursor, Dbm};
use crate::error::Result;

/// A cursor over a hash database: it holds the keys of one bucket's chain and
/// looks each up again when asked, so concurrent updates never invalidate it.
pub(super) struct HashCursor<'a> {
    db: &'a HashDbm,
    bucket: u64,
    /// The current key first, then the rest of the bucket's chain.
    keys: VecDeque<Vec<u8>>,
}

impl HashCursor<'_> {
    /// A cursor over `db` at no record until it is moved.
    pub(super) fn new(db: &HashDbm) -> HashCursor<'_> {
        HashCursor { db, bucket: 0, keys: VecDeque::new() }
    }

    /// Loads the first non-empty chain at or after `bucket`.
    fn load_from(&mut self, mut bucket: u64) -> Result<()> {
        let guard = self.db.state()?;
        let Some(s) = guard.as_ref() else { return Ok(()) };
        self.keys.clear();
        while bucket < s.num_buckets {
            let _slot = s.slot(bucket).read();
            let keys = s.chain_keys(bucket)?;
            if !keys.is_empty() {
                self.keys.extend(keys.into_iter().map(|k| k.into_plain()));
                break;
            }
            bucket += 1;
        }
        self.bucket = bucket;
        Ok(())
    }
}

impl Cursor for HashCursor<'_> {
    fn first(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        self.load_from(0)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let bucket = match self.db.state()?.as_ref() {
            Some(s) => bucket_of(&s.codec.seal_key(key)?, s.num_buckets),
            None => 0,
        };
        self.load_from(bucket)?;
        if self.bucket != bucket || !self.keys.iter().any(|k| k == key) {
            self.keys.clear();
            return Err(no_record_to_jump_to(key));
        }
        while self.keys.front().is_some_and(|k| k != key) {
            self.keys.pop_front();
        }
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        if self.keys.pop_front().is_some() && self.keys.is_empty() {
            self.load_from(self.bucket + 1)?;
        }
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let _scan = ScanScope::enter();
        loop {
            let Some(key) = self.keys.front().cloned() else { return Ok(None) };
            if let Some(value) = self.db.get(&key)? {
                return Ok(Some((key, value)));
            }
            // Removed since the chain was read: the position moves on.
            self.next()?;
        }
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.get()? {
            Some((key, _)) => self.db.set(&key, value),
            None => Err(past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                self.db.remove(&key)?;
                self.next()
            }
            None => Err(past_end()),
        }
    }
}
