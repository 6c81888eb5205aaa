//! Databases: the [`Dbm`] trait every database implements, and the databases.
//!
//! A database is a thread-safe map of byte strings to byte strings. Every
//! operation is built on one primitive, [`Dbm::process`]: it calls a function
//! with the record's current value (or `None`) while the record is locked, and
//! the function answers what to do with it ([`Action`]). The trait's provided
//! methods (get, set, remove, append, compare_exchange, increment and the
//! `*_multi` forms) are written once on top of it and [`Dbm::process_multi`].
//!
//! # Where to start
//! [`poly::PolyDbm`] opens whatever database a path names (one database of
//! any class, or a [`shard`] set), choosing the class and reading its
//! parameters through the class registry, [`class::DbmClass`]: a new class
//! is its own module plus one entry there.
//!
//! # Wrappers, not hooks
//! No database calls out while it changes a record (the hash database, for
//! one, changes records only in its private `State::apply`, and nothing
//! attaches there). What must see every change wraps the whole
//! database instead, as another [`Dbm`] that forwards each call to it: the
//! update log is such a wrapper, [`crate::ulog::LoggedDbm`], which tells its
//! logger each change as the `process` call that makes it, under the
//! record's lock and before the change is made. `ulog_prefix` makes
//! [`poly::PolyDbm`] wrap the database it opens (each shard of a set) so;
//! a program wraps any database itself with [`crate::ulog::LoggedDbm::new`].

pub mod async_dbm;
pub mod baby;
pub mod builder;
pub mod cache;
pub mod class;
pub mod comparator;
pub mod exchange;
pub mod expiry;
pub mod flat;
pub mod flat_records;
mod forward;
pub mod hash;
pub mod mode;
pub(crate) mod ordered_cursor;
pub mod pair;
pub mod params;
pub mod persistence;
pub mod poly;
pub mod published;
mod queue;
mod reader;
pub(crate) mod retire;
pub mod search;
pub mod shard;
pub mod skip;
pub mod std_map;
pub mod tiny;
pub mod tkrzw;
pub mod tree;
pub(crate) mod tree_node;
pub mod txn;
mod unit;

use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
pub use exchange::{Desired, Expected};
pub(crate) use forward::{forward_cursor_moves, forward_dbm};
pub use mode::{Access, Durability, Edge, OnDuplicate, Rekey};
use params::{Params, Taker};
pub use search::SearchMode;
pub use unit::{FinalChange, UnitPart};

/// The delta of [`Dbm::increment`] that reads the number without changing it.
pub const INCREMENT_UNCHANGED: i64 = i64::MIN;

/// What a record processor decides to do with the record it was shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// Leave the record as it is (absent stays absent).
    Keep,
    /// Remove the record (nothing happens if it is absent).
    Remove,
    /// Store this value, creating the record if it is absent.
    Set(Cow<'a, [u8]>),
}

impl<'a> Action<'a> {
    /// Store `value`, borrowed.
    pub fn set(value: &'a [u8]) -> Action<'a> {
        Action::Set(Cow::Borrowed(value))
    }
}

/// A function shown one record's current value under its lock.
pub type Processor<'a> = dyn FnMut(Option<&[u8]>) -> Action<'a> + 'a;

/// A function shown several records' values under their locks: it gets the
/// index of the key in the caller's list, the key and its value.
pub type MultiProcessor<'a> = dyn FnMut(usize, &[u8], Option<&[u8]>) -> Action<'a> + 'a;

/// A function shown every record in turn.
pub type EachProcessor<'a> = dyn FnMut(&[u8], &[u8]) -> Action<'a> + 'a;

/// A thread-safe map of byte strings, persistent or in memory.
///
/// Implementations provide [`Dbm::process`], [`Dbm::process_multi`] and
/// [`Dbm::process_each`] and the housekeeping methods; everything else is
/// provided. A missing key is never an error: lookups answer `Ok(None)`.
pub trait Dbm: Send + Sync {
    /// Shows `key`'s current value to `f` under the record's lock and carries out
    /// its answer. With [`Access::ReadOnly`] the answer must be [`Action::Keep`]
    /// (anything else is an error) and readers of the same record run together.
    ///
    /// `f` must not call back into the same database (nor `process_multi`'s
    /// and `process_each`'s functions): it runs under the record's lock, and
    /// for some classes under the database's, which such a call waits for,
    /// for ever. Another database may be used. The bindings refuse such a
    /// call with an error instead of hanging.
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()>;

    /// Like [`Dbm::process`] for several keys at once, atomically: every key's
    /// record is locked before the first is shown, and no other operation sees
    /// a state between two of the answers. Keys may repeat; each occurrence is
    /// shown the value the earlier answers left.
    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()>;

    /// Shows every record to `f`, in the database's order, and carries out each
    /// answer. The database is locked against other writers meanwhile.
    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()>;

    /// The number of records.
    fn count(&self) -> Result<u64>;

    /// The size of the database's file in bytes (its memory use for on-memory ones).
    fn file_size(&self) -> Result<u64>;

    /// The path of the database's file, if it has one.
    fn path(&self) -> Option<&Path>;

    /// Removes every record.
    fn clear(&self) -> Result<()>;

    /// Rewrites the database compactly.
    fn rebuild(&self) -> Result<()>;

    /// Rewrites the database compactly with what `params` change of its
    /// tuning: a hash database's `num_buckets`, `align_pow`, `offset_width`,
    /// `update_mode` and `record_crc_mode`, a tree's `record_crc_mode`, a skip
    /// database's `reducer` and the layout of its new file (`step_unit`,
    /// `max_level`, `offset_width`, with `max_cached_records` and
    /// `sort_mem_size`, kept for later builds), a tiny or stdhash database's
    /// `num_buckets` (the table rehashed to that many), a cache's
    /// `cap_rec_num` and `cap_mem_size` (the records past the new caps
    /// evicted). A parameter the database cannot change is refused by name;
    /// the default takes none.
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        Taker::new(params, "rebuilding this database").finish()?;
        self.rebuild()
    }

    /// Whether fragmentation or load make a rebuild worthwhile.
    fn should_be_rebuilt(&self) -> Result<bool>;

    /// Makes every change so far reach the OS ([`Durability::Soft`]) or the
    /// device ([`Durability::Hard`]).
    fn synchronize(&self, durability: Durability) -> Result<()>;

    /// Writes a consistent copy of the database's file to `dest` while the
    /// database stays open: updates wait while it is taken, and the copy opens
    /// as a cleanly closed database. With [`Durability::Hard`] the copy is on
    /// the device before this returns. Databases without a file refuse.
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()>;

    /// Name/value pairs of internal figures.
    fn inspect(&self) -> Result<Vec<(String, String)>>;

    /// Whether the database is consistent (false after an unrecovered crash or error).
    fn is_healthy(&self) -> bool;

    /// Whether iteration visits keys in order.
    fn is_ordered(&self) -> bool;

    /// Whether a crash takes the database back to its last hard
    /// synchronization, with nothing written after it (true of trees, skip
    /// databases and the on-memory classes). A database that may keep some
    /// of its later writes after a crash, as the hash classes do, answers
    /// false, the default: its changes must be logged ahead to be atomic.
    fn restores_to_last_sync(&self) -> bool {
        false
    }

    /// Whether updates show to readers only at the next synchronization,
    /// not at once (a skip database, which sorts and merges them then).
    fn updates_show_at_sync(&self) -> bool {
        false
    }

    /// An iterator over the records, not yet positioned.
    fn iter(&self) -> Result<Box<dyn Cursor + '_>>;

    /// Writes everything back and closes the database, reporting what
    /// closing found; a program holding `Box<dyn Dbm>` closes it this way.
    /// Dropping a database closes it too, but cannot report an error.
    fn close(self: Box<Self>) -> Result<()>;

    /// Whether `key` has a record. Databases that store values apart from
    /// keys answer without reading the value.
    fn contains(&self, key: &[u8]) -> Result<bool> {
        let mut found = false;
        self.process(key, Access::ReadOnly, &mut |value| {
            found = value.is_some();
            Action::Keep
        })?;
        Ok(found)
    }

    /// The value of `key`, or `None`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut found = None;
        self.process(key, Access::ReadOnly, &mut |value| {
            found = value.map(<[u8]>::to_vec);
            Action::Keep
        })?;
        Ok(found)
    }

    /// Like a writable [`Dbm::process`] whose function is shown only whether
    /// the record exists. Databases that store values apart from keys
    /// override it to skip reading the old value; `set` and `remove` use it.
    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> Action<'a>) -> Result<()> {
        self.process(key, Access::ReadWrite, &mut |old| f(old.is_some()))
    }

    /// Stores `value` under `key`, replacing the value it has.
    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        set_by_presence(self, key, value, true)
    }

    /// Stores `value` under `key` if the key has no record. If it has one,
    /// nothing changes and the error has kind [`ErrorKind::Duplication`].
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        set_by_presence(self, key, value, false)
    }

    /// Removes `key`; answers whether it existed.
    fn remove(&self, key: &[u8]) -> Result<bool> {
        remove_by_presence(self, key)
    }

    /// Appends `value` to the value of `key`, with `delimiter` between them if
    /// the key existed; stores `value` if it did not.
    fn append(&self, key: &[u8], value: &[u8], delimiter: &[u8]) -> Result<()> {
        self.process(key, Access::ReadWrite, &mut |old| match old {
            None => Action::set(value),
            Some(old) => Action::Set(Cow::Owned([old, delimiter, value].concat())),
        })
    }

    /// Replaces the value of `key` with `desired` if it is `expected` now;
    /// `None` stands for an absent record on either side. Answers whether it did.
    fn compare_exchange(&self, key: &[u8], expected: Option<&[u8]>, desired: Option<&[u8]>) -> Result<bool> {
        let mut done = false;
        self.process(key, Access::ReadWrite, &mut |old| {
            if old != expected {
                return Action::Keep;
            }
            done = true;
            match desired {
                Some(v) => Action::set(v),
                None => Action::Remove,
            }
        })?;
        Ok(done)
    }

    /// Adds `delta` to the number stored under `key` (8 bytes, big-endian, as the
    /// reference stores it), starting from `initial` if the key is absent, and
    /// answers the result. [`INCREMENT_UNCHANGED`] reads without changing. A
    /// value that is not 8 bytes long is an [`ErrorKind::InvalidArgument`] error.
    fn increment(&self, key: &[u8], delta: i64, initial: i64) -> Result<i64> {
        let mut result = Ok(0);
        self.process(key, Access::ReadWrite, &mut |old| {
            result = incremented(key, old, delta, initial);
            match &result {
                Ok(next) if delta != INCREMENT_UNCHANGED => {
                    Action::Set(Cow::Owned(next.to_be_bytes().to_vec()))
                }
                _ => Action::Keep,
            }
        })?;
        result
    }

    /// The values of `keys`, in the same order, read atomically together.
    fn get_multi(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut values = vec![None; keys.len()];
        self.process_multi(keys, Access::ReadOnly, &mut |i, _, value| {
            values[i] = value.map(<[u8]>::to_vec);
            Action::Keep
        })?;
        Ok(values)
    }

    /// A hint that `keys` will be looked up soon, one by one. A database
    /// whose file is read from memory (a memory map, or buckets kept in
    /// memory) starts loading what the lookups will read (their buckets,
    /// then the first records of their chains) into the CPU's cache, so that
    /// the lookups that follow overlap their cache misses instead of paying
    /// them in turn: what a server answering a pipeline of GETs does. It
    /// shows the program nothing, changes nothing, and never waits (while
    /// a rebuild or a close holds the database it does nothing); the
    /// default does nothing.
    ///
    /// ```
    /// use kuradb::dbm::hash::{HashDbm, HashOptions};
    /// use kuradb::dbm::Dbm;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = HashDbm::builder().open(dir.path().join("casket.kh")).unwrap();
    /// db.set(b"a", b"1").unwrap();
    /// let keys: [&[u8]; 2] = [b"a", b"b"];
    /// db.prefetch(&keys);
    /// assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    /// ```
    fn prefetch(&self, keys: &[&[u8]]) {
        let _ = keys;
    }

    /// Whether each of `keys` has a record, in the same order, looked up
    /// atomically together. A database that batches its reads finds the
    /// keys with one round of device reads rather than one read per key.
    fn contains_multi(&self, keys: &[&[u8]]) -> Result<Vec<bool>> {
        let mut found = vec![false; keys.len()];
        self.process_multi(keys, Access::ReadOnly, &mut |i, _, value| {
            found[i] = value.is_some();
            Action::Keep
        })?;
        Ok(found)
    }

    /// Stores every pair atomically, replacing the values the keys have.
    fn set_multi(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        set_multi_by_process(self, pairs, true)
    }

    /// Stores every pair atomically if none of the keys has a record. If any
    /// has one, nothing changes and the error is a duplication naming it.
    fn insert_multi(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        set_multi_by_process(self, pairs, false)
    }

    /// Stores, atomically, every pair whose key has no record; the keys that
    /// have one keep their values. Answers those keys, in the order of the
    /// pairs. Unlike [`insert_multi`](Dbm::insert_multi), a key that exists
    /// does not stop the others (the reference's `SetMulti` without
    /// overwriting works so).
    fn set_absent_multi(&self, pairs: &[(&[u8], &[u8])]) -> Result<Vec<Vec<u8>>> {
        let keys: Vec<&[u8]> = pairs.iter().map(|p| p.0).collect();
        let mut kept = Vec::new();
        self.process_multi(&keys, Access::ReadWrite, &mut |i, key, old| {
            if old.is_some() {
                kept.push(key.to_vec());
                return Action::Keep;
            }
            Action::set(pairs[i].1)
        })?;
        Ok(kept)
    }

    /// Removes every key atomically; answers how many existed.
    fn remove_multi(&self, keys: &[&[u8]]) -> Result<usize> {
        let mut removed = 0;
        self.process_multi(keys, Access::ReadWrite, &mut |_, _, old| {
            removed += usize::from(old.is_some());
            Action::Remove
        })?;
        Ok(removed)
    }

    /// Makes `changes` (each key's final value or removal) as one unit: no
    /// other operation sees a part of it. `part` says which part of a unit
    /// split among shards it is ([`UnitPart::WHOLE`] but from a shard set).
    /// `seen` is shown each change's index and the value its key held
    /// before. The transactions' commit path hands every commit down so;
    /// the default is one [`Dbm::process_multi`] over the keys. An update
    /// log ([`crate::ulog::LoggedDbm`]) logs the changes as one entry first,
    /// a shard set gives each shard its own part, and a
    /// [`txn::TransactionalDbm`] commits them as a batch.
    fn apply_changes(
        &self,
        changes: &[FinalChange<'_>],
        part: UnitPart,
        seen: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let _ = part;
        unit::apply_changes_by_process(self, changes, seen)
    }

    /// If every `expected` pair holds (value `None`: the key is absent), applies
    /// every `desired` pair (value `None`: remove), all atomically. Answers
    /// whether it did.
    fn compare_exchange_multi(
        &self,
        expected: &[(&[u8], Option<&[u8]>)],
        desired: &[(&[u8], Option<&[u8]>)],
    ) -> Result<bool> {
        let keys: Vec<&[u8]> = expected.iter().chain(desired).map(|p| p.0).collect();
        let mut matched = true;
        self.process_multi(&keys, Access::ReadWrite, &mut |i, _, value| {
            if i < expected.len() {
                matched &= value == expected[i].1;
                return Action::Keep;
            }
            if !matched {
                return Action::Keep;
            }
            match desired[i - expected.len()].1 {
                Some(v) => Action::set(v),
                None => Action::Remove,
            }
        })?;
        Ok(matched)
    }

    /// Moves the record of `old_key` to `new_key` (with [`Rekey::Copy`],
    /// keeping the old one too). Fails with [`ErrorKind::NotFound`] if
    /// `old_key` is absent, and with [`ErrorKind::Duplication`] if `new_key`
    /// has a record and `on_duplicate` is [`OnDuplicate::Fail`].
    fn rekey(&self, old_key: &[u8], new_key: &[u8], rekey: Rekey, on_duplicate: OnDuplicate) -> Result<()> {
        let overwrite = on_duplicate == OnDuplicate::Replace;
        let copying = rekey == Rekey::Copy;
        let mut outcome = Ok(());
        let mut moved: Option<Vec<u8>> = None;
        self.process_multi(&[old_key, new_key, old_key], Access::ReadWrite, &mut |i, key, value| match i {
            0 => {
                match value {
                    None => {
                        outcome = Err(Error::new(ErrorKind::NotFound, format!("no record {}", show_key(key))))
                    }
                    Some(v) => moved = Some(v.to_vec()),
                }
                Action::Keep
            }
            1 => {
                if outcome.is_ok() && value.is_some() && !overwrite && old_key != new_key {
                    outcome = Err(duplication(key));
                }
                match (&outcome, &moved) {
                    (Ok(()), Some(v)) => Action::Set(Cow::Owned(v.clone())),
                    _ => Action::Keep,
                }
            }
            _ => {
                if outcome.is_ok() && !copying && old_key != new_key {
                    Action::Remove
                } else {
                    Action::Keep
                }
            }
        })?;
        outcome
    }

    /// Stores `value` under `key` and answers the value it replaced (`None`:
    /// the key was absent).
    fn set_and_get(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        set_and_get_by_process(self, key, value, true)
    }

    /// Stores `value` under `key` if the key has no record, and answers the
    /// value the key has: `None` if it was absent and now holds `value`, else
    /// the value that stays, unchanged (where [`Dbm::insert`] fails, this
    /// answers; the reference reports a duplication error beside it).
    fn insert_and_get(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        set_and_get_by_process(self, key, value, false)
    }

    /// Removes `key` and answers the value it had (`None`: it was absent).
    fn remove_and_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut old = None;
        self.process(key, Access::ReadWrite, &mut |current| {
            old = current.map(<[u8]>::to_vec);
            if current.is_some() {
                Action::Remove
            } else {
                Action::Keep
            }
        })?;
        Ok(old)
    }

    /// Applies `desired` to `key`'s record if it meets `expected`, atomically,
    /// and answers whether it did and the value the record had before
    /// (whether or not it matched). [`Expected::Any`] and [`Desired::Keep`]
    /// are the reference's `ANY_DATA`.
    fn compare_exchange_and_get(
        &self,
        key: &[u8],
        expected: Expected<'_>,
        desired: Desired<'_>,
    ) -> Result<(bool, Option<Vec<u8>>)> {
        let mut outcome = (false, None);
        let access = if desired == Desired::Keep { Access::ReadOnly } else { Access::ReadWrite };
        self.process(key, access, &mut |current| {
            outcome = (expected.holds(current), current.map(<[u8]>::to_vec));
            match desired {
                _ if !outcome.0 => Action::Keep,
                Desired::Keep => Action::Keep,
                Desired::Remove => Action::Remove,
                Desired::Value(v) => Action::set(v),
            }
        })?;
        Ok(outcome)
    }

    /// Shows the first record, in the order of the database's cursor, to `f`
    /// under the record's lock and carries out its answer; answers whether
    /// there was a record. Ordered databases find it at once, unordered ones
    /// by walking to their first record.
    fn process_first<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<bool> {
        queue::process_first(self, access, f)
    }

    /// Removes the first record (see [`Dbm::process_first`]) and answers it.
    /// With `retry_wait`, an empty database is waited on for up to that long
    /// for a [`Dbm::push_last`] on the same database; `None` or zero answers
    /// `None` at once. A skip database sees its last synchronized state, so
    /// it pops the same record until synchronized.
    fn pop_first(&self, retry_wait: Option<Duration>) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        queue::pop_first(self, retry_wait)
    }

    /// Stores `value` under a new key made from the time `wtime` (seconds
    /// since the Unix epoch; `None` or negative: now): 8 big-endian bytes
    /// counting 10 ns units, the next free one if taken, so records queue in
    /// push order. Wakes the pops waiting on this database; answers the key.
    fn push_last(&self, value: &[u8], wtime: Option<f64>) -> Result<Vec<u8>> {
        queue::push_last(self, value, wtime)
    }

    /// The keys that `mode` matches with `pattern`, at most `capacity` of
    /// them (0: all): see [`SearchMode`] for each mode's order.
    fn search(&self, mode: SearchMode, pattern: &[u8], capacity: usize) -> Result<Vec<Vec<u8>>> {
        search::search(self, mode, pattern, capacity)
    }

    /// Copies every record into `dest` (overwriting what is there).
    fn export(&self, dest: &dyn Dbm) -> Result<()> {
        let mut failure = None;
        self.process_each(Access::ReadOnly, &mut |key, value| {
            if failure.is_none() {
                if let Err(e) = dest.set(key, value) {
                    failure = Some(e);
                }
            }
            Action::Keep
        })?;
        failure.map_or(Ok(()), Err)
    }
}

/// [`Dbm::set`] on [`Dbm::process_presence`]. Inlined into each caller, so
/// that a database overriding `set` to call it (HashDbm) gets its closure
/// compiled among its own code: a run using one database then touches
/// fewer pages of code (kura perf's `mem` counts them).
#[inline(always)]
pub(crate) fn set_by_presence<D: Dbm + ?Sized>(
    db: &D,
    key: &[u8],
    value: &[u8],
    overwrite: bool,
) -> Result<()> {
    let mut existed = false;
    db.process_presence(key, &mut |exists| {
        existed = exists;
        if existed && !overwrite {
            Action::Keep
        } else {
            Action::set(value)
        }
    })?;
    if existed && !overwrite {
        return Err(duplication(key));
    }
    Ok(())
}

/// [`Dbm::set_multi`] and [`Dbm::insert_multi`] on [`Dbm::process_multi`].
pub(crate) fn set_multi_by_process<D: Dbm + ?Sized>(
    db: &D,
    pairs: &[(&[u8], &[u8])],
    overwrite: bool,
) -> Result<()> {
    // Every key twice: the first pass looks, the second sets if nothing was taken.
    let keys: Vec<&[u8]> = pairs.iter().chain(pairs).map(|p| p.0).collect();
    let mut taken: Option<Vec<u8>> = None;
    db.process_multi(&keys, Access::ReadWrite, &mut |i, key, old| {
        if i < pairs.len() {
            if !overwrite && taken.is_none() && old.is_some() {
                taken = Some(key.to_vec());
            }
            return Action::Keep;
        }
        if taken.is_some() {
            return Action::Keep;
        }
        Action::set(pairs[i - pairs.len()].1)
    })?;
    taken.map_or(Ok(()), |key| Err(duplication(&key)))
}

/// [`Dbm::set_and_get`] and [`Dbm::insert_and_get`] on [`Dbm::process`].
fn set_and_get_by_process<D: Dbm + ?Sized>(
    db: &D,
    key: &[u8],
    value: &[u8],
    overwrite: bool,
) -> Result<Option<Vec<u8>>> {
    let mut old = None;
    db.process(key, Access::ReadWrite, &mut |current| {
        old = current.map(<[u8]>::to_vec);
        if current.is_some() && !overwrite {
            Action::Keep
        } else {
            Action::set(value)
        }
    })?;
    Ok(old)
}

/// [`Dbm::remove`] on [`Dbm::process_presence`]; inlined as
/// [`set_by_presence`] is.
#[inline(always)]
pub(crate) fn remove_by_presence<D: Dbm + ?Sized>(db: &D, key: &[u8]) -> Result<bool> {
    let mut existed = false;
    db.process_presence(key, &mut |exists| {
        existed = exists;
        Action::Remove
    })?;
    Ok(existed)
}

/// The number [`Dbm::increment`] answers for a record holding `old`: the
/// stored number (or `initial`) plus `delta`, or unchanged for
/// [`INCREMENT_UNCHANGED`].
pub(crate) fn incremented(key: &[u8], old: Option<&[u8]>, delta: i64, initial: i64) -> Result<i64> {
    let current = match old {
        None => initial,
        Some(v) => match <[u8; 8]>::try_from(v) {
            Ok(bytes) => i64::from_be_bytes(bytes),
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("the value of {} is not an 8-byte number", show_key(key)),
                ))
            }
        },
    };
    Ok(if delta == INCREMENT_UNCHANGED { current } else { current.wrapping_add(delta) })
}

pub(crate) fn duplication(key: &[u8]) -> Error {
    Error::new(
        ErrorKind::Duplication,
        format!("record {} exists and overwriting was not asked for", show_key(key)),
    )
}

/// Copies every byte of `file` to a new file at `dest`, letting `patch` change
/// each piece (given its offset) before it is written; with `hard` the copy is
/// on the device before this returns.
pub(crate) fn copy_file_to(
    file: &dyn crate::file::File,
    dest: &Path,
    hard: bool,
    mut patch: impl FnMut(u64, &mut [u8]),
) -> Result<()> {
    let mut out = std::fs::File::create(dest).map_err(|e| Error::io("creation of the copy", dest, e))?;
    let size = file.size();
    let mut buf = vec![0u8; (1 << 20).min(size as usize)];
    let mut at = 0u64;
    while at < size {
        let n = (size - at).min(buf.len() as u64) as usize;
        file.read(at, &mut buf[..n])?;
        patch(at, &mut buf[..n]);
        std::io::Write::write_all(&mut out, &buf[..n]).map_err(|e| Error::io("writing the copy", dest, e))?;
        at += n as u64;
    }
    if hard {
        out.sync_all().map_err(|e| Error::io("synchronizing the copy", dest, e))?;
    }
    Ok(())
}

/// A key as a message shows it: quoted text, or hex for binary keys, cut short.
pub(crate) fn show_key(key: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = &key[..key.len().min(MAX)];
    let more = if key.len() > MAX { "…" } else { "" };
    match std::str::from_utf8(cut) {
        Ok(text) if !text.chars().any(char::is_control) => format!("{text:?}{more}"),
        _ => format!("0x{}{more}", cut.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

/// A position among a database's records that survives concurrent updates.
/// A cursor may move to another thread between calls (a Python iterator
/// does), so it keeps no thread-bound state.
pub trait Cursor: Send {
    /// Moves to the first record.
    fn first(&mut self) -> Result<()>;
    /// Moves to the first record whose key is at least `key` (ordered databases;
    /// others move to `key` itself or fail with a clear error).
    fn jump(&mut self, key: &[u8]) -> Result<()>;
    /// Moves to the next record.
    fn next(&mut self) -> Result<()>;
    /// The record at the position, or `None` past the end.
    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
    /// Calls `f` with the key and value of the record at the position, as
    /// [`Cursor::get`] finds it, without copying them out; false (and no
    /// call) past the end. A walk that only looks at its records allocates
    /// nothing a record where the cursor keeps its own copy (the ordered
    /// databases' cursors do).
    ///
    /// ```
    /// use kuradb::dbm::{Access, Cursor, Dbm};
    /// use kuradb::TreeDbm;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let db = TreeDbm::builder().open(dir.path().join("walk.kdbt"))?;
    /// db.set(b"a", b"1")?;
    /// db.set(b"b", b"22")?;
    /// let mut cursor = db.iter()?;
    /// cursor.first()?;
    /// let mut bytes = 0;
    /// while cursor.read(&mut |key, value| bytes += key.len() + value.len())? {
    ///     cursor.next()?;
    /// }
    /// assert_eq!(bytes, 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn read(&mut self, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        Ok(self.get()?.map(|(key, value)| f(&key, &value)).is_some())
    }
    /// Replaces the value of the record at the position.
    fn set(&mut self, value: &[u8]) -> Result<()>;
    /// Removes the record at the position; the position moves to the next record.
    fn remove(&mut self) -> Result<()>;

    /// Moves to the last record (ordered databases only).
    fn last(&mut self) -> Result<()> {
        Err(unordered("last"))
    }
    /// Moves to the last record whose key is below `key`, or equal to it with
    /// [`Edge::Inclusive`] (ordered databases only).
    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        let _ = (key, edge);
        Err(unordered("jump_lower"))
    }
    /// Moves to the first record whose key is above `key`, or equal to it with
    /// [`Edge::Inclusive`] (ordered databases only).
    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        let _ = (key, edge);
        Err(unordered("jump_upper"))
    }
    /// Moves to the previous record (ordered databases only).
    fn previous(&mut self) -> Result<()> {
        Err(unordered("previous"))
    }
}

fn unordered(what: &str) -> Error {
    Error::new(
        ErrorKind::NotImplemented,
        format!("{what} needs an ordered database; this one keeps no key order"),
    )
}

#[cfg(test)]
mod model;
#[cfg(test)]
mod tests;

/// A boxed database is a database, so a wrapper generic over [`Dbm`] (as
/// [`txn::TransactionalDbm`] is) takes whatever a front end opened.
impl Dbm for Box<dyn Dbm> {
    fn path(&self) -> Option<&Path> {
        (**self).path()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        (**self).rebuild_with_params(params)
    }
    fn close(self: Box<Self>) -> Result<()> {
        (*self).close()
    }
    forward_dbm!(|this| (**this));
}

/// A shared database is a database, so a wrapper generic over [`Dbm`] (as
/// [`expiry::ExpiringDbm`] is) can hold a handle of it for as long as it
/// needs. Closing a handle closes the database only if it is the last one;
/// closing another closes nothing (the last owner closes it).
impl<T: Dbm> Dbm for std::sync::Arc<T> {
    fn path(&self) -> Option<&Path> {
        (**self).path()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        (**self).rebuild_with_params(params)
    }
    fn close(self: Box<Self>) -> Result<()> {
        match std::sync::Arc::try_unwrap(*self) {
            Ok(db) => Box::new(db).close(),
            Err(_) => Ok(()),
        }
    }
    forward_dbm!(|this| (**this));
}

/// A borrowed database is a database, so a wrapper generic over [`Dbm`]
/// (as [`expiry::ExpiringDbm`] is) can be laid over a database for one
/// request and dropped after it. Closing the borrow closes nothing: the
/// database's owner closes it.
impl<T: Dbm + ?Sized> Dbm for &T {
    fn path(&self) -> Option<&Path> {
        (**self).path()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        (**self).rebuild_with_params(params)
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
    forward_dbm!(|this| (**this));
}
