//! The cursor of a hash database, which visits the records bucket by bucket
//! (by classes of buckets, once the table has grown).
//! It keeps the values it read with the chains while their slots say they
//! are current, and otherwise reads and writes through the database's own
//! `get`, `set` and `remove`, so its changes take the paths every other
//! operation takes.
//! Its moves and reads are a scan to the caches ([`ScanScope`]); a jump is
//! a lookup.

use std::collections::VecDeque;

use super::buckets::bucket_of;
use super::HashDbm;
use crate::caching::ScanScope;
use crate::dbm::ordered_cursor::{no_record_to_jump_to, past_end};
use crate::dbm::{Cursor, Dbm};
use crate::error::Result;

/// A cursor over a hash database: it holds the records of one *class* of
/// buckets, read under their slots' locks. It hands out a value it kept,
/// once, while its slot's version shows no change since the chain was
/// read, and otherwise looks the key up again, so concurrent updates never
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
    /// The state the records were read from ([`State::serial`]).
    serial: u64,
    /// The current record first, then the rest of the class's chains.
    records: VecDeque<Kept>,
}

/// A record a cursor read.
struct Kept {
    key: Vec<u8>,
    /// The value as read, unless larger than [`KEPT_VALUE_MAX`] or handed
    /// out already.
    value: Option<Vec<u8>>,
    /// The slot the record's bucket is under, and its version when read.
    slot: usize,
    version: u64,
}

/// The largest value a cursor keeps from its walk of a chain: a larger one
/// is read when asked for, so that a class of large records is not all
/// held in memory at once, and one the caller skips is never read.
const KEPT_VALUE_MAX: usize = 16 * 1024;

impl HashCursor<'_> {
    /// A cursor over `db` at no record until it is moved.
    pub(super) fn new(db: &HashDbm) -> HashCursor<'_> {
        HashCursor { db, classes: 0, class: 0, serial: 0, records: VecDeque::new() }
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
        self.serial = s.serial;
        self.records.clear();
        while class < self.classes {
            let mut bucket = class;
            while bucket < s.num_buckets {
                let _slot = s.slot(bucket).read();
                let (slot, version) = s.slot_version(bucket);
                self.records.extend(s.chain_records(bucket, KEPT_VALUE_MAX)?.into_iter().map(|r| Kept {
                    key: r.key.into_plain(),
                    value: r.value,
                    slot,
                    version,
                }));
                bucket += self.classes;
            }
            if !self.records.is_empty() {
                break;
            }
            class += 1;
        }
        self.class = class;
        Ok(())
    }

    /// Whether the value `kept` holds is still the record's: read from the
    /// state in place, and nothing under its slot changed since.
    fn current(&self, kept: &Kept) -> Result<bool> {
        let guard = self.db.state()?;
        Ok(guard
            .as_ref()
            .is_some_and(|s| s.serial == self.serial && s.slot_unchanged(kept.slot, kept.version)))
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
        if self.class != class || !self.records.iter().any(|r| r.key == key) {
            self.records.clear();
            return Err(no_record_to_jump_to(key));
        }
        while self.records.front().is_some_and(|r| r.key != key) {
            self.records.pop_front();
        }
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        if self.records.pop_front().is_some() && self.records.is_empty() {
            self.load_from(self.class + 1)?;
        }
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let _scan = ScanScope::enter();
        loop {
            let Some(kept) = self.records.front() else { return Ok(None) };
            if kept.value.is_some() && self.current(kept)? {
                // Handed over, not copied: a walk reads each record once, and
                // a second read of the same one looks it up.
                let kept = self.records.front_mut().expect("seen above");
                let value = kept.value.take().expect("seen above");
                return Ok(Some((kept.key.clone(), value)));
            }
            let key = kept.key.clone();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbm::Dbm;

    /// A database of one bucket, so that a cursor reads every record at
    /// its first move: each later change is one the cursor must not hide.
    fn one_chain(dir: &tempfile::TempDir, records: usize) -> HashDbm {
        let db = HashDbm::builder().num_buckets(1).auto_grow(false).open(dir.path().join("c.kh")).unwrap();
        for n in 0..records {
            db.set(format!("k{n}").as_bytes(), format!("v{n}").as_bytes()).unwrap();
        }
        db
    }

    fn walk_all(db: &HashDbm) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        walk(&mut *cursor)
    }

    /// The records from where `cursor` stands to the end.
    fn walk(cursor: &mut dyn Cursor) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut seen = Vec::new();
        while let Some(record) = cursor.get().unwrap() {
            seen.push(record);
            cursor.next().unwrap();
        }
        seen
    }

    #[test]
    fn a_change_after_the_chain_was_read_shows() {
        let dir = tempfile::tempdir().unwrap();
        let db = one_chain(&dir, 5);
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        let (first, value) = cursor.get().unwrap().unwrap();
        // The kept value went with the first read: the second looks it up.
        assert_eq!(cursor.get().unwrap(), Some((first.clone(), value)));
        db.set(&first, b"changed").unwrap();
        assert_eq!(cursor.get().unwrap(), Some((first.clone(), b"changed".to_vec())));
        cursor.next().unwrap();
        let (second, _) = cursor.get().unwrap().unwrap();
        // Another record of the chain changes, and this one is removed.
        let rest = walk_all(&db);
        let third = rest.iter().map(|(k, _)| k.clone()).find(|k| *k != first && *k != second).unwrap();
        db.set(&third, b"also changed").unwrap();
        db.remove(&second).unwrap();
        let seen = walk(&mut *cursor);
        assert!(!seen.iter().any(|(k, _)| *k == second), "a removed record was shown");
        assert!(seen.contains(&(third, b"also changed".to_vec())));
        assert_eq!(seen.len(), 3);
    }

    #[test]
    fn large_values_are_read_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let db = one_chain(&dir, 3);
        let large = vec![7u8; KEPT_VALUE_MAX + 1];
        db.set(b"large", &large).unwrap();
        let seen = walk_all(&db);
        assert_eq!(seen.len(), 4);
        assert!(seen.contains(&(b"large".to_vec(), large)));
        assert!(seen.contains(&(b"k1".to_vec(), b"v1".to_vec())));
    }

    #[test]
    fn a_clear_empties_a_walk_under_way() {
        let dir = tempfile::tempdir().unwrap();
        let db = one_chain(&dir, 5);
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        assert!(cursor.get().unwrap().is_some());
        db.clear().unwrap();
        assert_eq!(cursor.get().unwrap(), None);
    }

    #[test]
    fn values_kept_before_a_rebuild_are_not_taken_for_the_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = one_chain(&dir, 5);
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        let (key, _) = cursor.get().unwrap().unwrap();
        let other = if key == b"k0" { b"k1" } else { b"k0" };
        db.remove(other).unwrap();
        // One bucket again, so that the key's slot is the one it was. The
        // copy counts a change for each of the four records, and the set
        // below a fifth: the slot's version is the one the cursor read,
        // and only the state tells the two files apart.
        db.rebuild_with_params(&crate::Params::parse("num_buckets=1").unwrap()).unwrap();
        db.set(&key, b"after the rebuild").unwrap();
        assert_eq!(cursor.get().unwrap(), Some((key, b"after the rebuild".to_vec())));
    }
}
