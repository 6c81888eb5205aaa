//! Ordered cursors: [`TreeCursor`], and the positions (spots) it keeps
//! between moves.

use std::cmp::Ordering;

use super::state::Tree;
use super::TreeDbm;
use crate::dbm::tree_node::{Leaf, Node};
use crate::dbm::{Cursor, Dbm};
use crate::error::{Error, ErrorKind, Result};

/// A record as a seek found it, and where: record `index` of leaf `leaf`
/// at `version`.
struct Spot {
    key: Vec<u8>,
    value: Vec<u8>,
    leaf: u64,
    version: u64,
    index: usize,
}

impl Spot {
    /// Record `index` of leaf `id`, written into `spare`'s buffers if given
    /// (a cursor moving from record to record allocates nothing then).
    fn of(leaf: &Leaf, id: u64, version: u64, index: usize, spare: Option<Spot>) -> Spot {
        let (key, value) = leaf.record(index);
        let mut spot =
            spare.unwrap_or(Spot { key: Vec::new(), value: Vec::new(), leaf: 0, version: 0, index: 0 });
        spot.hold(key, value);
        Spot { leaf: id, version, index, ..spot }
    }

    /// Copies `key` and `value` into the spot's own buffers.
    fn hold(&mut self, key: &[u8], value: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
        self.value.clear();
        self.value.extend_from_slice(value);
    }
}

impl Tree {
    /// Forward: the first record at or after `key` (after it only, unless
    /// `inclusive`), from the start without a key. Backward: the last record
    /// before `key` (or at it, if `inclusive`), from the end without a key.
    /// The answer is written into `spare`'s buffers, if given.
    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        spare: Option<Spot>,
    ) -> Result<Option<Spot>> {
        let (mut id, mut found_leaf) = match key {
            Some(k) => {
                let (id, cell) = self.descend(k, None)?;
                (id, Some(cell))
            }
            None if forward => (self.meta.lock().first, None),
            None => (self.meta.lock().last, None),
        };
        for _ in 0..self.leaf_bound() {
            let cell = match found_leaf.take() {
                Some(cell) => cell,
                None => self.load(id)?,
            };
            let slot = cell.slot.read();
            let Node::Leaf(leaf) = &slot.node else {
                return Err(self.broken("a leaf link is an inner node".into()));
            };
            if let Some(index) = leaf.seek_index(key, self.cmp, forward, inclusive) {
                // In a leaf whose keys are out of order (a damaged file) the
                // search may land on the wrong side of the key, and a walk
                // would go round for ever between two records.
                if let Some(key) = key {
                    let ordering = self.cmp.compare(leaf.record(index).0, key);
                    let wanted = if forward { Ordering::Greater } else { Ordering::Less };
                    if ordering != wanted && !(inclusive && ordering == Ordering::Equal) {
                        return Err(self.broken(format!("the keys of leaf {id} are out of order")));
                    }
                }
                return Ok(Some(Spot::of(leaf, id, slot.version, index, spare)));
            }
            id = if forward { leaf.next } else { leaf.prev };
            if id == 0 {
                return Ok(None);
            }
        }
        Err(self.broken("the leaves' links loop".into()))
    }

    /// Whether `spot`'s leaf is cached and unchanged since, so that the
    /// record it saw is still there, as it saw it.
    fn unchanged(&self, spot: &Spot) -> bool {
        self.cached(spot.leaf).is_some_and(|cell| cell.slot.read().version == spot.version)
    }

    /// Moves `spot` `step` places (-1 or 1) within its leaf, if the leaf is
    /// cached and unchanged since and the record is in it; false when only a
    /// seek can tell.
    fn step_in_leaf(&self, spot: &mut Spot, step: isize) -> bool {
        let Some(cell) = self.cached(spot.leaf) else { return false };
        let slot = cell.slot.read();
        let Node::Leaf(leaf) = &slot.node else { return false };
        if slot.version != spot.version {
            return false;
        }
        let Some(index) = spot.index.checked_add_signed(step).filter(|&i| i < leaf.len()) else {
            return false;
        };
        // Only in order: a broken leaf must not send a walk round in a loop.
        let wanted = if step > 0 { Ordering::Greater } else { Ordering::Less };
        let (key, value) = leaf.record(index);
        if self.cmp.compare(key, &spot.key) != wanted {
            return false;
        }
        spot.hold(key, value);
        spot.index = index;
        true
    }
}

/// A position in a tree database: the key of its record. Every move looks the
/// key up afresh, unless the record's leaf is unchanged since it was seen, so
/// concurrent updates never invalidate it; a record removed under it leaves
/// the position at the next one.
pub struct TreeCursor<'a> {
    db: &'a TreeDbm,
    at: Option<Spot>,
    /// The buffers of a position left behind, for the next seek to fill.
    spare: Option<Spot>,
}

impl<'a> TreeCursor<'a> {
    /// A cursor on `db`, not yet positioned.
    pub(super) fn new(db: &'a TreeDbm) -> TreeCursor<'a> {
        TreeCursor { db, at: None, spare: None }
    }

    /// The database the cursor moves in.
    pub(super) fn db(&self) -> &'a TreeDbm {
        self.db
    }

    fn seek(&mut self, forward: bool, key: Option<&[u8]>, inclusive: bool) -> Result<()> {
        let t = self.db.shared()?;
        // On an error the cursor stays where it was.
        let found = t.seek(forward, key, inclusive, self.spare.take())?;
        self.spare = std::mem::replace(&mut self.at, found);
        Ok(())
    }

    /// Moves from the current record: `step` 1 to the next, -1 to the
    /// previous, 0 to the record itself or, if it is gone, the next one.
    /// Within an unchanged leaf it needs no search.
    fn step(&mut self, step: isize) -> Result<()> {
        let t = self.db.shared()?;
        let Some(at) = &mut self.at else { return Ok(()) };
        let moved = if step == 0 { t.unchanged(at) } else { t.step_in_leaf(at, step) };
        if moved {
            return Ok(());
        }
        let found = t.seek(step >= 0, Some(&at.key), step == 0, self.spare.take())?;
        self.spare = std::mem::replace(&mut self.at, found);
        Ok(())
    }

    fn past_end() -> Error {
        Error::new(ErrorKind::NotFound, "the cursor is past the last record")
    }
}

impl Cursor for TreeCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.seek(true, None, true)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek(true, Some(key), true)
    }

    fn next(&mut self) -> Result<()> {
        self.step(1)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.step(0)?;
        Ok(self.at.as_ref().map(|at| (at.key.clone(), at.value.clone())))
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.get()? {
            Some((key, _)) => self.db.set(&key, value, true),
            None => Err(Self::past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                self.db.remove(&key)?;
                // The position stays on the removed key: the next get finds the record after it.
                Ok(())
            }
            None => Err(Self::past_end()),
        }
    }

    fn last(&mut self) -> Result<()> {
        self.seek(false, None, true)
    }

    fn jump_lower(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(false, Some(key), inclusive)
    }

    fn jump_upper(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(true, Some(key), inclusive)
    }

    fn previous(&mut self) -> Result<()> {
        self.step(-1)
    }
}
