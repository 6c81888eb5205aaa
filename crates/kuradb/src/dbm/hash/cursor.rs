//! The cursor of a hash database, which visits the records bucket by bucket
//! (by classes of buckets, once the table has grown).
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

/// A cursor over a hash database: it holds the keys of one *class* of
/// buckets and looks each up again when asked, so concurrent updates never
/// invalidate it.
///
/// The classes are the residues of the bucket count the cursor first saw:
/// while the table keeps that count, a class is one bucket; a growth
/// (`growth.rs`) multiplies the count, and the records of an old bucket are
/// then in the new buckets of its residue, which the class gathers. So a
/// growth in the middle of a walk neither skips a record nor shows one twice.
pub(super) struct HashCursor<'a> {
    db: &'a HashDbm,
    /// The bucket count the classes are residues of; 0 until first read.
    classes: u64,
    class: u64,
    /// The current key first, then the rest of the class's chains.
    keys: VecDeque<Vec<u8>>,
}

impl HashCursor<'_> {
    /// A cursor over `db` at no record until it is moved.
    pub(super) fn new(db: &HashDbm) -> HashCursor<'_> {
        HashCursor { db, classes: 0, class: 0, keys: VecDeque::new() }
    }

    /// Takes the classes of a table of `buckets` buckets, unless the
    /// cursor's are residues of it. A rebuild to an unrelated count leaves
    /// no such order: the walk goes on from the same number in the new one.
    fn fit(&mut self, buckets: u64) {
        if self.classes == 0 || !buckets.is_multiple_of(self.classes) {
            self.classes = buckets;
        }
    }

    /// Loads the first non-empty class at or after `class`.
    fn load_from(&mut self, mut class: u64) -> Result<()> {
        let guard = self.db.state()?;
        let Some(s) = guard.as_ref() else { return Ok(()) };
        self.fit(s.num_buckets);
        self.keys.clear();
        while class < self.classes {
            let mut bucket = class;
            while bucket < s.num_buckets {
                let _slot = s.slot(bucket).read();
                self.keys.extend(s.chain_keys(bucket)?.into_iter().map(|k| k.into_plain()));
                bucket += self.classes;
            }
            if !self.keys.is_empty() {
                break;
            }
            class += 1;
        }
        self.class = class;
        Ok(())
    }
}

impl Cursor for HashCursor<'_> {
    fn first(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        self.load_from(0)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let class = match self.db.state()?.as_ref() {
            Some(s) => {
                self.fit(s.num_buckets);
                bucket_of(&s.codec.seal_key(key)?, s.num_buckets) % self.classes
            }
            None => 0,
        };
        self.load_from(class)?;
        if self.class != class || !self.keys.iter().any(|k| k == key) {
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
            self.load_from(self.class + 1)?;
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
