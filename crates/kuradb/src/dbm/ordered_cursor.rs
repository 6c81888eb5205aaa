//! What the cursors share: the ordered cursor of TreeDbm, BabyDbm and
//! StdTreeDbm, written once over what each database tells of its records
//! ([`Ordered`]: a seek, whether a record seen still holds, and a step
//! without a seek where the database can take one), and what `set` and
//! `remove` do at a cursor's record ([`change_at`]).

use super::{show_key, Cursor, Dbm};
use crate::caching::ScanScope;
use crate::dbm::Edge;
use crate::error::{Error, ErrorKind, Result};

/// A record as a cursor saw it: a copy of its key and value
/// ([`SeenRecord`]), in a buffer a later move reuses, and where it was seen
/// (`P`), which tells whether it still holds.
#[derive(Default)]
pub struct Spot<P> {
    pub(crate) record: SeenRecord,
    pub(crate) place: P,
}

/// A copy of a record's key and value, the value right after the key, in a
/// buffer that may hold more: a database that copies a run of records at
/// once (the tree copies a leaf's records ahead of the cursor) points it at
/// each in turn, and a step forward copies nothing.
#[derive(Default)]
pub struct SeenRecord {
    buf: Vec<u8>,
    key_start: usize,
    key_end: usize,
    value_end: usize,
}

impl<P> Spot<P> {
    /// `key` and `value` seen at `place`, in the buffer of `recycled` if given.
    pub(crate) fn fill(recycled: Option<Spot<P>>, key: &[u8], value: &[u8], place: P) -> Spot<P> {
        let mut record = recycled.map(|spot| spot.record).unwrap_or_default();
        record.copy_in(key, value);
        Spot { record, place }
    }

    /// Puts `key` and `value` seen at `place` in this buffer.
    pub(crate) fn refill(&mut self, key: &[u8], value: &[u8], place: P) {
        self.record.copy_in(key, value);
        self.place = place;
    }

    /// The record's key.
    pub(crate) fn key(&self) -> &[u8] {
        self.record.key()
    }

    /// The record's value.
    pub(crate) fn value(&self) -> &[u8] {
        self.record.value()
    }
}

impl SeenRecord {
    /// Puts `key` and `value` in the buffer, in place of what it held.
    pub(crate) fn copy_in(&mut self, key: &[u8], value: &[u8]) {
        self.buf.clear();
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(value);
        (self.key_start, self.key_end, self.value_end) = (0, key.len(), self.buf.len());
    }

    /// The buffer, for the caller to refill and then point into
    /// ([`SeenRecord::point`]); until then the record is empty.
    pub(crate) fn buffer(&mut self) -> &mut Vec<u8> {
        (self.key_start, self.key_end, self.value_end) = (0, 0, 0);
        &mut self.buf
    }

    /// The buffer's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Points at the record whose key is `key_start..key_end` of the buffer
    /// and whose value follows it up to `value_end`.
    pub(crate) fn point(&mut self, key_start: usize, key_end: usize, value_end: usize) {
        assert!(
            key_start <= key_end && key_end <= value_end && value_end <= self.buf.len(),
            "a seen record lies within its buffer"
        );
        (self.key_start, self.key_end, self.value_end) = (key_start, key_end, value_end);
    }

    /// The record's key.
    pub(crate) fn key(&self) -> &[u8] {
        &self.buf[self.key_start..self.key_end]
    }

    /// The record's value.
    pub(crate) fn value(&self) -> &[u8] {
        &self.buf[self.key_end..self.value_end]
    }
}

/// What an ordered cursor needs of its database.
pub trait Ordered: Dbm {
    /// Where a record was seen: what tells whether it still holds.
    type Place: Send;

    /// Forward: the first record at or after `key` (after it only, unless
    /// `inclusive`), from the start without a key. Backward: the last record
    /// before `key` (or at it, if `inclusive`), from the end without a key.
    /// The answer comes in the buffers of `recycled` if given.
    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot<Self::Place>>,
    ) -> Result<Option<Spot<Self::Place>>>;

    /// Whether the record at `spot` is as it was seen: nothing changed there
    /// since. False when the database cannot tell (the seek that follows
    /// then reports why).
    fn holds(&self, spot: &Spot<Self::Place>) -> bool;

    /// Moves `spot` to the record `step` places from it (-1 or 1) when that
    /// can be found without a seek, and answers whether it did; `spot` is
    /// left as it was when only a seek can tell.
    fn step_near(&self, spot: &mut Spot<Self::Place>, step: isize) -> bool {
        let _ = (spot, step);
        false
    }

    /// The record `step` places (-1 or 1) from `spot`, where
    /// [`Ordered::step_near`] could not move: by default a seek past its key.
    /// A database that can tell from the place where the neighbouring
    /// records are (the next leaf, for a walk off a leaf's end) starts
    /// there rather than from the top. The answer comes in the buffers of
    /// `recycled` if given.
    fn step_far(
        &self,
        spot: &Spot<Self::Place>,
        step: isize,
        recycled: Option<Spot<Self::Place>>,
    ) -> Result<Option<Spot<Self::Place>>> {
        self.seek(step > 0, Some(spot.key()), false, recycled)
    }
}

/// A position in an ordered database: the key of its record, as last seen.
/// A move looks the key up afresh unless the database tells the record
/// still holds (or can step from it in place), so concurrent updates never
/// invalidate it; a record removed under it leaves the position at the
/// next. A move that fails leaves the position where it was.
pub struct OrderedCursor<'a, D: Ordered> {
    db: &'a D,
    at: Option<Spot<D::Place>>,
    /// A spot whose buffers the next move fills: a walk allocates nothing.
    spare: Option<Spot<D::Place>>,
}

impl<'a, D: Ordered> OrderedCursor<'a, D> {
    /// A cursor of `db`, not yet positioned.
    pub(crate) fn new(db: &'a D) -> OrderedCursor<'a, D> {
        OrderedCursor { db, at: None, spare: None }
    }

    pub(crate) fn db(&self) -> &'a D {
        self.db
    }

    /// Moves to what [`Ordered::seek`] finds.
    fn seek(&mut self, forward: bool, key: Option<&[u8]>, inclusive: bool) -> Result<()> {
        let found = self.db.seek(forward, key, inclusive, self.spare.take())?;
        self.spare = std::mem::replace(&mut self.at, found);
        Ok(())
    }

    /// Moves from the current record: `step` 1 to the next, -1 to the
    /// previous, 0 to the record itself or, if it is gone, the next one.
    /// What it reads of the database is a scan's read (see [`ScanScope`])
    /// if `scan`; a move in place reads no cache, and so marks nothing.
    fn step(&mut self, step: isize, scan: bool) -> Result<()> {
        let Some(at) = &mut self.at else { return Ok(()) };
        if step == 0 && self.db.holds(at) || step != 0 && self.db.step_near(at, step) {
            return Ok(());
        }
        let _scan = scan.then(ScanScope::enter);
        let found = match step {
            0 => self.db.seek(true, Some(at.key()), true, self.spare.take())?,
            _ => self.db.step_far(at, step, self.spare.take())?,
        };
        self.spare = std::mem::replace(&mut self.at, found);
        Ok(())
    }

    /// The record as the last move saw it, without looking again.
    pub(crate) fn seen(&self) -> Option<(&[u8], &[u8])> {
        self.at.as_ref().map(|at| (at.key(), at.value()))
    }

    /// The key of the record at the position, as it is now.
    fn current_key(&mut self) -> Result<Option<&[u8]>> {
        self.step(0, false)?;
        Ok(self.at.as_ref().map(|at| at.key()))
    }
}

impl<D: Ordered> Cursor for OrderedCursor<'_, D> {
    fn first(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        self.seek(true, None, true)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek(true, Some(key), true)
    }

    fn next(&mut self) -> Result<()> {
        self.step(1, true)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.step(0, true)?;
        Ok(self.seen().map(|(k, v)| (k.to_vec(), v.to_vec())))
    }

    fn read(&mut self, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        self.step(0, true)?;
        Ok(self.seen().map(|(k, v)| f(k, v)).is_some())
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        let db = self.db;
        change_at(db, self.current_key()?, Some(value))
    }

    fn remove(&mut self) -> Result<()> {
        // The position stays on the removed key: the next get finds the record after it.
        let db = self.db;
        change_at(db, self.current_key()?, None)
    }

    fn last(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        self.seek(false, None, true)
    }

    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.seek(false, Some(key), edge.is_inclusive())
    }

    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.seek(true, Some(key), edge.is_inclusive())
    }

    fn previous(&mut self) -> Result<()> {
        self.step(-1, true)
    }
}

/// What a cursor's `set` (`value` given) or `remove` (none) does to its
/// record, whose key is `at` (none past the end).
pub(crate) fn change_at<D: Dbm + ?Sized>(db: &D, at: Option<&[u8]>, value: Option<&[u8]>) -> Result<()> {
    let Some(key) = at else { return Err(past_end()) };
    match value {
        Some(value) => db.set(key, value),
        None => db.remove(key).map(|_| ()),
    }
}

/// The error of a hash database's cursor asked to jump to a key it lacks.
pub(crate) fn no_record_to_jump_to(key: &[u8]) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("no record {} to jump to (a hash database jumps only to existing keys)", show_key(key)),
    )
}

/// The error of a cursor asked to read or change its record past the last one.
pub(crate) fn past_end() -> Error {
    Error::new(ErrorKind::NotFound, "the cursor is past the last record")
}
