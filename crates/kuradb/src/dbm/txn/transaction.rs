//! Transactions and batches: what a commit gathers before the one commit path.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::log::{Change, CommitDurability};
use super::pending::key_hash;
use super::versions::Versions;
use super::{check_view, SnapshotIter, TransactionalDbm};
use crate::caching::IdHasher;
use crate::dbm::{incremented, show_key, Dbm, INCREMENT_UNCHANGED};
use crate::error::{Error, ErrorKind, Result};

/// A range of keys read: lower bound (inclusive) and upper (exclusive), open when `None`.
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A point in a transaction's writes to roll back to, from [`Transaction::savepoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint(usize);

/// A serializable transaction, from [`TransactionalDbm::begin`].
///
/// It reads the database as of its start plus its own writes, and keeps
/// what it read: each key, each range, or everything for a scan of an
/// unordered database. [`Transaction::commit`] applies its writes as one
/// unit only if no commit since its start changed anything it read, and
/// else fails with [`ErrorKind::Conflict`], so committed transactions have
/// the effect of running one at a time. Dropping it unfinished aborts it.
pub struct Transaction<'db, D: Dbm + 'static> {
    db: &'db TransactionalDbm<D>,
    at: u64,
    durability: CommitDurability,
    started: Instant,
    /// Writes in order, for savepoints: a key and its new value (`None` removes).
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Each written key's latest write, an index into `writes`.
    latest: HashMap<Vec<u8>, usize>,
    reads: HashSet<Vec<u8>>,
    ranges: Vec<KeyRange>,
    /// Whether it read everything (a scan without a key order).
    read_all: bool,
    /// The index keys it read: (the index's number, index key).
    index_reads: HashSet<(u64, Vec<u8>)>,
    finished: bool,
}

impl<'db, D: Dbm + 'static> Transaction<'db, D> {
    pub(super) fn new(
        db: &'db TransactionalDbm<D>,
        at: u64,
        durability: CommitDurability,
    ) -> Transaction<'db, D> {
        Transaction {
            db,
            at,
            durability,
            started: Instant::now(),
            writes: Vec::new(),
            latest: HashMap::new(),
            reads: HashSet::new(),
            ranges: Vec::new(),
            read_all: false,
            index_reads: HashSet::new(),
            finished: false,
        }
    }

    /// The value of `key` as this transaction sees it.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(&i) = self.latest.get(key) {
            return Ok(self.writes[i].1.clone());
        }
        self.reads.insert(key.to_vec());
        self.db.read_at(key, self.at)
    }

    /// Whether `key` is present as this transaction sees it.
    pub fn contains(&mut self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn set(&mut self, key: &[u8], value: &[u8]) {
        self.write(key, Some(value.to_vec()));
    }

    /// Removes `key` when the transaction commits; answers whether it was
    /// present (which counts as a read of it).
    pub fn remove(&mut self, key: &[u8]) -> Result<bool> {
        let present = self.contains(key)?;
        self.write(key, None);
        Ok(present)
    }

    /// Appends `value` to the value of `key`, with `delimiter` between them
    /// if it is present (a read of it).
    pub fn append(&mut self, key: &[u8], value: &[u8], delimiter: &[u8]) -> Result<()> {
        let next = match self.get(key)? {
            None => value.to_vec(),
            Some(old) => [&old[..], delimiter, value].concat(),
        };
        self.write(key, Some(next));
        Ok(())
    }

    /// Adds `delta` to the 8-byte number under `key` (from `initial` when
    /// absent), as [`Dbm::increment`] does, and answers the result.
    pub fn increment(&mut self, key: &[u8], delta: i64, initial: i64) -> Result<i64> {
        let old = self.get(key)?;
        let next = incremented(key, old.as_deref(), delta, initial)?;
        if delta != INCREMENT_UNCHANGED {
            self.write(key, Some(next.to_be_bytes().to_vec()));
        }
        Ok(next)
    }

    fn write(&mut self, key: &[u8], value: Option<Vec<u8>>) {
        self.latest.insert(key.to_vec(), self.writes.len());
        self.writes.push((key.to_vec(), value));
    }

    /// Every record as this transaction sees it, in key order where the
    /// database has one. The whole key space counts as read.
    pub fn items(&mut self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        // The transaction's own view keeps the old values the walk needs.
        let items = self.collect(super::snapshot::iter_at(self.db, self.at, None, None)?);
        match &self.db.options.key_order {
            Some(_) if self.db.inner.is_ordered() => self.ranges.push((None, None)),
            _ => self.read_all = true,
        }
        items
    }

    /// The records with keys from `lower` (inclusive) to `upper`
    /// (exclusive) as this transaction sees them, in key order; the range
    /// counts as read, so a commit that adds a key inside it conflicts.
    /// Needs a database with a key order.
    pub fn range(&mut self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let iter =
            super::snapshot::iter_at(self.db, self.at, lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec))?;
        let items = self.collect(iter);
        self.ranges.push((lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec)));
        let order = self.db.options.key_order.expect("a range has a key order");
        items.map(|items| {
            items
                .into_iter()
                .filter(|(key, _)| {
                    lower.is_none_or(|l| order.compare(key, l) != Ordering::Less)
                        && upper.is_none_or(|u| order.compare(key, u) == Ordering::Less)
                })
                .collect()
        })
    }

    /// The view's records with this transaction's writes laid over them.
    fn collect(&self, iter: SnapshotIter<'_, D>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut items = Vec::new();
        for item in iter {
            let (key, value) = item?;
            if !self.latest.contains_key(&key) {
                items.push((key, value));
            }
        }
        for (key, &i) in &self.latest {
            if let Some(value) = &self.writes[i].1 {
                items.push((key.clone(), value.clone()));
            }
        }
        if let (Some(order), true) = (self.db.options.key_order, self.db.inner.is_ordered()) {
            items.sort_by(|a, b| order.compare(&a.0, &b.0));
        }
        Ok(items)
    }

    /// The keys of the records under `index_key` in the attached index
    /// `name` (see [`TransactionalDbm::attach_index`]) as this transaction
    /// sees them (its own writes included), in byte order. The index key
    /// counts as read: a commit since this transaction began that put a
    /// record under it or took one away makes this one conflict.
    pub fn index_values(&mut self, name: &str, index_key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let (writes, latest) = (&self.writes, &self.latest);
        let (id, keys) = self.db.index_values_at(name, index_key, self.at, |index, keys| {
            for (key, &i) in latest {
                if index.holds(key, writes[i].1.as_deref(), index_key) {
                    keys.insert(key.clone());
                } else {
                    keys.remove(key);
                }
            }
        })?;
        self.index_reads.insert((id, index_key.to_vec()));
        Ok(keys)
    }

    /// A point to roll back to: the writes made so far.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.writes.len())
    }

    /// Undoes the writes made since `savepoint`. What was read stays read.
    pub fn rollback_to(&mut self, savepoint: Savepoint) -> Result<()> {
        if savepoint.0 > self.writes.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "the savepoint is past this transaction's writes (already rolled back past it)",
            ));
        }
        self.writes.truncate(savepoint.0);
        self.latest = self.writes.iter().enumerate().map(|(i, (key, _))| (key.clone(), i)).collect();
        Ok(())
    }

    /// Applies the writes as one unit if nothing this transaction read was
    /// changed since it began; else fails with [`ErrorKind::Conflict`] and
    /// applies nothing. Answers the commit's sequence number: commits (and,
    /// while views are open, plain writes) take effect in the order of
    /// these numbers, so replaying committed transactions in it gives what
    /// each read. A transaction that wrote nothing takes a number too.
    pub fn commit(self) -> Result<u64> {
        self.commit_with(|_| Ok(()))
    }

    fn commit_with(mut self, guard: impl FnOnce(&Versions) -> Result<()>) -> Result<u64> {
        if let Some(limit) = self.db.options.timeout {
            if self.started.elapsed() > limit {
                return Err(Error::new(
                    ErrorKind::Infeasible,
                    format!("the transaction was open longer than its timeout ({limit:?}) and is aborted"),
                ));
            }
        }
        let mut order: Vec<usize> = self.latest.values().copied().collect();
        order.sort_unstable();
        let changes: Vec<Change> = order
            .into_iter()
            .map(|i| match &self.writes[i] {
                (key, Some(value)) => Change::Set(key.clone(), value.clone()),
                (key, None) => Change::Remove(key.clone()),
            })
            .collect();
        let result = self.db.commit_changes(
            self.durability,
            |versions| guard(versions).and_then(|()| self.validate(versions)),
            |_| Ok(changes),
        );
        self.finish();
        result
    }

    /// Commits as [`Transaction::commit`] does, unless a commit or plain
    /// write since each of `watches` began changed one of its keys: then
    /// applies nothing and answers `Ok(false)` (the transaction ends). The
    /// watches are checked under the commit lock with the transaction's own
    /// reads, so no commit comes between the check and this one. A conflict
    /// of the transaction's own reads is still [`ErrorKind::Conflict`], to
    /// run it again. Every watch must be of this transaction's database.
    pub fn commit_unless_changed(mut self, watches: &[&super::Watch<D>]) -> Result<bool> {
        for watch in watches {
            if !std::ptr::eq(&**watch.database(), self.db) {
                self.finish();
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "a watch of another database cannot guard this transaction's commit",
                ));
            }
        }
        let changed = std::cell::Cell::new(false);
        let outcome = self.commit_with(|versions| {
            if watches.iter().any(|w| w.changed_in(versions)) {
                changed.set(true);
                return Err(Error::new(ErrorKind::Conflict, "a watched key changed"));
            }
            Ok(())
        });
        match outcome {
            Err(_) if changed.get() => Ok(false),
            other => other.map(|_| true),
        }
    }

    fn validate(&self, versions: &Versions) -> Result<()> {
        check_view(versions, self.at)?;
        if self.read_all && versions.changed_keys_since(self.at).next().is_some() {
            return Err(conflict("it read every record, and another commit changed some since it began"));
        }
        for key in &self.reads {
            if versions.changed_since(key, self.at) {
                return Err(conflict(&format!("another commit changed {} after it read it", show_key(key))));
            }
        }
        for (index, index_key) in &self.index_reads {
            if versions.index_key_changed_since(*index, index_key, self.at) {
                return Err(conflict(&format!(
                    "another commit changed the records under {} in an index it read",
                    show_key(index_key)
                )));
            }
        }
        if !self.ranges.is_empty() {
            let order = self.db.options.key_order.expect("ranges are read only with a key order");
            for (key, _) in versions.changed_keys_since(self.at) {
                let inside = self.ranges.iter().any(|(lower, upper)| {
                    lower.as_ref().is_none_or(|l| order.compare(key, l) != Ordering::Less)
                        && upper.as_ref().is_none_or(|u| order.compare(key, u) == Ordering::Less)
                });
                if inside {
                    return Err(conflict(&format!(
                        "another commit changed {} inside a range it read",
                        show_key(key)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Drops the writes and ends the transaction.
    pub fn abort(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.db.close_view(self.at);
        }
    }
}

impl<D: Dbm + 'static> Drop for Transaction<'_, D> {
    fn drop(&mut self) {
        self.finish();
    }
}

fn conflict(why: &str) -> Error {
    Error::new(ErrorKind::Conflict, format!("transaction conflict: {why}; run it again"))
}

/// One change of a batch.
enum Step {
    Set(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Append(Vec<u8>, Vec<u8>, Vec<u8>),
    Increment(Vec<u8>, i64, i64),
}

/// Writes applied together as one unit, from [`TransactionalDbm::batch`]:
/// nothing is read, nothing conflicts. Appends and increments apply to the
/// values the records hold when the batch commits. Dropping it uncommitted
/// discards it.
pub struct Batch<'db, D: Dbm + 'static> {
    db: &'db TransactionalDbm<D>,
    durability: CommitDurability,
    steps: Vec<Step>,
}

impl<'db, D: Dbm + 'static> Batch<'db, D> {
    pub(super) fn new(db: &'db TransactionalDbm<D>, durability: CommitDurability) -> Batch<'db, D> {
        Batch { db, durability, steps: Vec::new() }
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        self.steps.push(Step::Set(key.to_vec(), value.to_vec()));
        self
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &[u8]) -> &mut Self {
        self.steps.push(Step::Remove(key.to_vec()));
        self
    }

    /// Appends `value` to the value of `key` as [`Dbm::append`] does.
    pub fn append(&mut self, key: &[u8], value: &[u8], delimiter: &[u8]) -> &mut Self {
        self.steps.push(Step::Append(key.to_vec(), value.to_vec(), delimiter.to_vec()));
        self
    }

    /// Adds `delta` to the number under `key` as [`Dbm::increment`] does.
    pub fn increment(&mut self, key: &[u8], delta: i64, initial: i64) -> &mut Self {
        self.steps.push(Step::Increment(key.to_vec(), delta, initial));
        self
    }

    /// How many changes the batch holds.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the batch holds no change.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Applies every change as one unit. An increment of a value that is
    /// not a number fails the whole batch, and nothing is applied. Answers
    /// the commit's sequence number, as [`Transaction::commit`] does.
    pub fn commit(self) -> Result<u64> {
        let steps = self.steps;
        self.db.commit_changes(self.durability, |_| Ok(()), |read| final_changes(read, steps))
    }
}

/// Works the steps out against the records' current values, as `read`
/// gives them, into one final change per key, in the order the keys were
/// first touched.
fn final_changes(read: &super::ReadNewest<'_>, steps: Vec<Step>) -> Result<Vec<Change>> {
    // Each key's final value, in the order keys were first touched. Keys
    // and values move from the steps, uncopied.
    let mut finals: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(steps.len());
    // The last key of each hash, and for each key the one of the same hash
    // before it: found by hash, keys need no copies.
    let mut last_of_hash: HashMap<u64, usize, IdHasher> =
        HashMap::with_capacity_and_hasher(steps.len(), IdHasher::default());
    let mut same_hash_before: Vec<Option<usize>> = Vec::with_capacity(steps.len());
    // The place of `key`, made (with its current value read when `needed`) if new.
    let mut place =
        |key: Vec<u8>, finals: &mut Vec<(Vec<u8>, Option<Vec<u8>>)>, needed: bool| -> Result<usize> {
            let hash = key_hash(&key);
            let mut candidate = last_of_hash.get(&hash).copied();
            while let Some(i) = candidate {
                if finals[i].0 == key {
                    return Ok(i);
                }
                candidate = same_hash_before[i];
            }
            let current = if needed { read(&key)? } else { None };
            same_hash_before.push(last_of_hash.insert(hash, finals.len()));
            finals.push((key, current));
            Ok(finals.len() - 1)
        };
    for step in steps {
        match step {
            Step::Set(key, value) => {
                let i = place(key, &mut finals, false)?;
                finals[i].1 = Some(value);
            }
            Step::Remove(key) => {
                let i = place(key, &mut finals, false)?;
                finals[i].1 = None;
            }
            Step::Append(key, value, delimiter) => {
                let i = place(key, &mut finals, true)?;
                let slot = &mut finals[i].1;
                *slot = Some(match slot.take() {
                    None => value,
                    Some(old) => [old, delimiter, value].concat(),
                });
            }
            Step::Increment(key, delta, initial) => {
                let i = place(key, &mut finals, true)?;
                let (key, slot) = &mut finals[i];
                let next = incremented(key, slot.as_deref(), delta, initial)?;
                if delta != INCREMENT_UNCHANGED {
                    *slot = Some(next.to_be_bytes().to_vec());
                }
            }
        }
    }
    Ok(finals
        .into_iter()
        .map(|(key, value)| match value {
            Some(value) => Change::Set(key, value),
            None => Change::Remove(key),
        })
        .collect())
}
