//! The cursor of TinyDbm and CacheDbm: a position in the order of the
//! keys' hashes, found afresh at each move unless its shard is unchanged.

use super::shard::key_hash;
use super::table::Table;
use crate::dbm::ordered_cursor::{change_at, no_record_to_jump_to};
use crate::dbm::{Cursor, Dbm};
use crate::error::Result;

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
            return Err(no_record_to_jump_to(key));
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
        let at = self.step(true);
        change_at(self.db, at.as_ref().map(|(key, _)| key.as_slice()), Some(value))
    }

    fn remove(&mut self) -> Result<()> {
        let at = self.step(true);
        change_at(self.db, at.as_ref().map(|(key, _)| key.as_slice()), None)
    }
}
