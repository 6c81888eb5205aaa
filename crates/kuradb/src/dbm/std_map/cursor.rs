//! The cursors of StdHashDbm (a snapshot of the keys, each looked up as the
//! cursor reaches it) and StdTreeDbm (the ordered cursor of the on-memory
//! databases over the ordered set).

use std::ops::Bound;

use super::packed::{Key, Packed};
use super::set::StdSet;
use super::store::decode_value;
use super::{StdHashDbm, StdTreeDbm};
use crate::dbm::ordered_cursor::{change_at, no_record_to_jump_to, Ordered, OrderedCursor, Spot};
use crate::dbm::Cursor;
use crate::error::Result;

impl StdHashDbm {
    /// A cursor, not yet positioned. It visits the keys present when it is
    /// moved to the first record (a snapshot of keys), skipping those removed since.
    pub fn cursor(&self) -> StdHashCursor<'_> {
        StdHashCursor {
            db: self,
            keys: Vec::new(),
            pos: 0,
            after_jump: false,
            seen: Spot::default(),
            valid: false,
        }
    }
}

/// A cursor of a [`StdHashDbm`]: the keys to visit and the position among them.
pub struct StdHashCursor<'a> {
    db: &'a StdHashDbm,
    keys: Vec<Vec<u8>>,
    pos: usize,
    /// The cursor stands on the key jumped to (`seen.key`), outside `keys`:
    /// the walk on from it needs a snapshot.
    after_jump: bool,
    /// The record at the position as last read, in buffers kept from move to
    /// move, with the set's version then.
    seen: Spot<u64>,
    /// Whether `seen` holds a record (else the cursor has none).
    valid: bool,
}

impl StdHashCursor<'_> {
    fn snapshot(&self) -> Vec<Vec<u8>> {
        self.db.store.read().set.iter().map(|r| r.key().to_vec()).collect()
    }

    fn fill(&mut self, record: &Packed, version: u64) {
        let (key, value) = record.parts();
        self.seen.refill(key, decode_value(value), version);
        self.valid = true;
    }

    /// The key of the record at the position, moving past keys removed meanwhile.
    fn current(&mut self) -> Option<&[u8]> {
        if self.valid && self.seen.place == self.db.store.version() {
            // Nothing changed since the record was read: it is there as it was.
            return Some(self.seen.key());
        }
        let db = self.db;
        let store = &db.store;
        let records = store.read();
        let version = store.version();
        if self.after_jump {
            // The key stays in `seen` even when its record is gone: `next` walks on from it.
            self.valid = false;
            if let Some(r) = records.set.find(self.seen.key()) {
                self.fill(r, version);
            }
        } else {
            self.valid = false;
            while let Some(key) = self.keys.get(self.pos) {
                if let Some(r) = records.set.find(key) {
                    self.fill(r, version);
                    break;
                }
                self.pos += 1;
            }
        }
        self.valid.then_some(self.seen.key())
    }
}

impl Cursor for StdHashCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.valid = false;
        self.keys = self.snapshot();
        self.pos = 0;
        self.after_jump = false;
        Ok(())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let db = self.db;
        let records = db.store.read();
        match records.set.find(key) {
            Some(r) => {
                self.fill(r, db.store.version());
                self.after_jump = true;
                Ok(())
            }
            None => {
                self.valid = false;
                self.after_jump = false;
                self.keys.clear();
                self.pos = 0;
                Err(no_record_to_jump_to(key))
            }
        }
    }

    fn next(&mut self) -> Result<()> {
        self.valid = false;
        if self.after_jump {
            self.after_jump = false;
            self.keys = self.snapshot();
            self.pos =
                self.keys.iter().position(|k| k.as_slice() == self.seen.key()).unwrap_or(self.keys.len());
        }
        self.pos = (self.pos + 1).min(self.keys.len());
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.current();
        Ok(self.valid.then(|| (self.seen.key().to_vec(), self.seen.value().to_vec())))
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        let db = self.db;
        change_at(db, self.current(), Some(value))
    }

    fn remove(&mut self) -> Result<()> {
        let db = self.db;
        change_at(db, self.current(), None)
    }
}

/// A position in a [`StdTreeDbm`]: the key of its record. Each move looks
/// its key up afresh unless the set is unchanged since, so concurrent
/// updates never invalidate it.
pub type StdTreeCursor<'a> = OrderedCursor<'a, StdTreeDbm>;

impl StdTreeDbm {
    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> StdTreeCursor<'_> {
        OrderedCursor::new(self)
    }
}

fn bound(key: &[u8], inclusive: bool) -> Bound<&Key> {
    if inclusive {
        Bound::Included(Key::of(key))
    } else {
        Bound::Excluded(Key::of(key))
    }
}

impl Ordered for StdTreeDbm {
    /// The set's version when the record was seen.
    type Place = u64;

    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot<u64>>,
    ) -> Result<Option<Spot<u64>>> {
        let records = self.store.read();
        let set = &records.set;
        let exact = key.filter(|_| inclusive).and_then(|k| set.get(Key::of(k)));
        let found = match (forward, key) {
            // A key that is there is found in one descent; a range walks both of its edges.
            _ if exact.is_some() => exact,
            (true, None) => set.first(),
            (false, None) => set.last(),
            (true, Some(k)) => set.range::<Key, _>((bound(k, inclusive), Bound::Unbounded)).next(),
            (false, Some(k)) => set.range::<Key, _>((Bound::Unbounded, bound(k, inclusive))).next_back(),
        };
        let Some(record) = found else { return Ok(None) };
        let (key, value) = record.parts();
        Ok(Some(Spot::fill(recycled, key, decode_value(value), self.store.version())))
    }

    fn holds(&self, spot: &Spot<u64>) -> bool {
        spot.place == self.store.version()
    }
}

#[cfg(test)]
mod tests {
    use super::super::StdOptions;
    use super::*;
    use crate::dbm::Dbm;
    use crate::dbm::Edge;
    use crate::error::ErrorKind;

    #[test]
    fn a_tree_cursor_walks_both_ways_and_survives_removal() {
        let db = StdTreeDbm::new(&StdOptions::default());
        for k in [b"b", b"d", b"f"] {
            db.set(k, b"v").unwrap();
        }
        let mut c = db.cursor();
        c.jump(b"c").unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"d");
        c.remove().unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"f");
        c.previous().unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"b");
        c.jump_lower(b"b", Edge::Exclusive).unwrap();
        assert_eq!(c.get().unwrap(), None);
    }

    #[test]
    fn a_hash_cursor_visits_every_record_once() {
        let db = StdHashDbm::new(&StdOptions::default().num_buckets(10));
        for i in 0..100u32 {
            db.set(&i.to_be_bytes(), b"v").unwrap();
        }
        let mut c = db.cursor();
        c.jump(&5u32.to_be_bytes()).unwrap();
        c.next().unwrap();
        c.first().unwrap();
        let mut seen = std::collections::BTreeSet::new();
        while let Some((k, _)) = c.get().unwrap() {
            assert!(seen.insert(k));
            c.next().unwrap();
        }
        assert_eq!(seen.len(), 100);
        assert_eq!(c.jump(b"none").unwrap_err().kind(), ErrorKind::NotFound);
    }
}
