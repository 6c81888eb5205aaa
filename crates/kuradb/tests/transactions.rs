//! Transactions against a model, on every class and on sets of shards.
//!
//! `model_*`: on every class but the skip database (which is refused:
//! `skip_is_refused`), random interleavings (driven by proptest, on one thread) of
//! transactions in three slots (reads, writes, appends, increments, range
//! and whole reads, savepoints and rollbacks, commits, aborts and drops),
//! batches, plain writes, snapshots in two slots and checkpoints, checked
//! step by step against a model: a `BTreeMap`, a copy of it per snapshot
//! and per transaction, and the optimistic rule: a transaction commits iff
//! no key it read, and no key inside a range it read, was changed by a
//! commit after it began. "Changed" is as the library counts it: every key
//! a batch or transaction writes (even to the value it held), and every key
//! a plain write gives a different value. At the end the database is closed,
//! reopened and compared with the model.
//!
//! `history_*`: threads run random transactions over a few keys with `run`,
//! each noting what it read and the sequence number of its commit; the
//! committed transactions replayed in that order on a model must read the
//! same values (the history is serializable in commit order).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};

use kuradb::dbm::txn::{
    CommitDurability, Savepoint, Snapshot, Transaction, TransactionOptions, TransactionalDbm,
};
use kuradb::dbm::{Access, Durability};
use kuradb::{
    BabyDbm, BabyOptions, CacheDbm, CacheOptions, Dbm, ErrorKind, HashDbm, HashOptions, KeyComparator,
    Params, PolyDbm, SkipDbm, SkipOptions, StdHashDbm, StdOptions, StdTreeDbm, TinyDbm, TinyOptions, TreeDbm,
    TreeOptions,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Key = Vec<u8>;
type Value = Vec<u8>;
type Map = BTreeMap<Key, Value>;

const KEYS: u8 = 6;
const TX_SLOTS: u8 = 3;
const SNAP_SLOTS: u8 = 2;

fn key(k: u8) -> Key {
    format!("k{k}").into_bytes()
}

fn value(v: u8) -> Value {
    format!("v{v}").into_bytes()
}

/// A bound of a range: a key, or open past the key space.
fn bound(b: u8) -> Option<Key> {
    (b < KEYS).then(|| key(b))
}

#[derive(Clone, Debug)]
enum Step {
    Set(u8, u8),
    Remove(u8),
    Append(u8, u8),
    Increment(u8, i8),
}

#[derive(Clone, Debug)]
enum Op {
    /// Transaction ops: on an empty slot, a transaction begins first.
    Get(u8, u8),
    Set(u8, u8, u8),
    Remove(u8, u8),
    Append(u8, u8, u8),
    Increment(u8, u8, i8),
    Range(u8, u8, u8),
    Items(u8),
    Savepoint(u8),
    Rollback(u8, u8),
    Commit(u8),
    Abort(u8),
    Drop(u8),
    Batch(Vec<Step>),
    Plain(Step),
    PlainGet(u8),
    Snapshot(u8),
    SnapshotRead(u8),
    SnapshotClose(u8),
    Checkpoint,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..KEYS, 0u8..4).prop_map(|(k, v)| Step::Set(k, v)),
        2 => (0..KEYS).prop_map(Step::Remove),
        1 => (0..KEYS, 0u8..4).prop_map(|(k, v)| Step::Append(k, v)),
        2 => (0..KEYS, -2i8..=2).prop_map(|(k, d)| Step::Increment(k, d)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..TX_SLOTS;
    prop_oneof![
        6 => (slot.clone(), 0..KEYS).prop_map(|(s, k)| Op::Get(s, k)),
        6 => (slot.clone(), 0..KEYS, 0u8..4).prop_map(|(s, k, v)| Op::Set(s, k, v)),
        2 => (slot.clone(), 0..KEYS).prop_map(|(s, k)| Op::Remove(s, k)),
        1 => (slot.clone(), 0..KEYS, 0u8..4).prop_map(|(s, k, v)| Op::Append(s, k, v)),
        2 => (slot.clone(), 0..KEYS, -2i8..=2).prop_map(|(s, k, d)| Op::Increment(s, k, d)),
        2 => (slot.clone(), 0..=KEYS, 0..=KEYS).prop_map(|(s, a, b)| Op::Range(s, a.min(b), a.max(b))),
        1 => slot.clone().prop_map(Op::Items),
        2 => slot.clone().prop_map(Op::Savepoint),
        1 => (slot.clone(), 0u8..3).prop_map(|(s, i)| Op::Rollback(s, i)),
        4 => slot.clone().prop_map(Op::Commit),
        1 => slot.clone().prop_map(Op::Abort),
        1 => slot.prop_map(Op::Drop),
        3 => proptest::collection::vec(step(), 0..5).prop_map(Op::Batch),
        5 => step().prop_map(Op::Plain),
        2 => (0..KEYS).prop_map(Op::PlainGet),
        1 => (0..SNAP_SLOTS).prop_map(Op::Snapshot),
        2 => (0..SNAP_SLOTS).prop_map(Op::SnapshotRead),
        1 => (0..SNAP_SLOTS).prop_map(Op::SnapshotClose),
        1 => Just(Op::Checkpoint),
    ]
}

/// The library's increment: an absent value counts as `initial` (0 here),
/// anything but 8 bytes is refused.
fn incremented(old: Option<&Value>, delta: i64) -> Result<Value, ()> {
    let current = match old {
        None => 0,
        Some(v) => i64::from_be_bytes(<[u8; 8]>::try_from(v.as_slice()).map_err(|_| ())?),
    };
    Ok(current.wrapping_add(delta).to_be_bytes().to_vec())
}

fn appended(old: Option<&Value>, v: &[u8]) -> Value {
    match old {
        None => v.to_vec(),
        Some(old) => [old.as_slice(), b",", v].concat(),
    }
}

/// A transaction of the model.
#[derive(Default)]
struct ModelTx {
    began: u64,
    snap: Map,
    writes: Vec<(Key, Option<Value>)>,
    reads: BTreeSet<Key>,
    ranges: Vec<(Option<Key>, Option<Key>)>,
    read_all: bool,
    savepoints: Vec<usize>,
}

impl ModelTx {
    fn latest(&self, k: &[u8]) -> Option<&Option<Value>> {
        self.writes.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    /// A read of `k` as the transaction sees it, noted as read unless it wrote it.
    fn get(&mut self, k: &[u8]) -> Option<Value> {
        if let Some(v) = self.latest(k) {
            return v.clone();
        }
        self.reads.insert(k.to_vec());
        self.snap.get(k).cloned()
    }

    fn view(&self) -> Map {
        let mut view = self.snap.clone();
        for (k, v) in &self.writes {
            match v {
                Some(v) => view.insert(k.clone(), v.clone()),
                None => view.remove(k),
            };
        }
        view
    }
}

/// The whole model: the records, a clock of commits, and when each key last changed.
#[derive(Default)]
struct Model {
    data: Map,
    clock: u64,
    changed: BTreeMap<Key, u64>,
}

impl Model {
    fn change(&mut self, keys: impl IntoIterator<Item = Key>) {
        self.clock += 1;
        for k in keys {
            self.changed.insert(k, self.clock);
        }
    }

    fn conflicts(&self, tx: &ModelTx) -> bool {
        self.changed.iter().filter(|(_, &at)| at > tx.began).any(|(k, _)| {
            tx.read_all
                || tx.reads.contains(k)
                || tx.ranges.iter().any(|(lo, hi)| {
                    lo.as_ref().is_none_or(|lo| k >= lo) && hi.as_ref().is_none_or(|hi| k < hi)
                })
        })
    }

    /// Applies `steps` as a batch: the final values, or `Err` if an increment fails.
    fn batch(&self, steps: &[Step]) -> Result<Vec<(Key, Option<Value>)>, ()> {
        let mut values: BTreeMap<Key, Option<Value>> = BTreeMap::new();
        for s in steps {
            let (k, next) = match s {
                Step::Set(k, v) => (key(*k), Some(value(*v))),
                Step::Remove(k) => (key(*k), None),
                Step::Append(k, v) => {
                    let k = key(*k);
                    let old = values.get(&k).cloned().unwrap_or_else(|| self.data.get(&k).cloned());
                    let next = appended(old.as_ref(), &value(*v));
                    (k, Some(next))
                }
                Step::Increment(k, d) => {
                    let k = key(*k);
                    let old = values.get(&k).cloned().unwrap_or_else(|| self.data.get(&k).cloned());
                    (k, Some(incremented(old.as_ref(), i64::from(*d))?))
                }
            };
            values.insert(k, next);
        }
        Ok(values.into_iter().collect())
    }
}

/// How a subject opens its database at a path.
type Opener<D> = Box<dyn Fn(&Path) -> TransactionalDbm<D>>;

/// A database under test, as each case opens it.
struct Subject<D: Dbm + 'static> {
    name: String,
    ordered: bool,
    open: Opener<D>,
}

fn options(ordered: bool) -> TransactionOptions {
    TransactionOptions {
        key_order: ordered.then_some(KeyComparator::Lexical),
        ..TransactionOptions::default()
    }
}

fn subject<D: Dbm + 'static>(
    name: &str,
    ordered: bool,
    open: impl Fn(&Path) -> kuradb::Result<D> + 'static,
) -> Subject<D> {
    Subject {
        name: name.to_string(),
        ordered,
        open: Box::new(move |path| {
            let db = open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
            TransactionalDbm::open(db, options(ordered)).expect("wrap")
        }),
    }
}

fn poly_subject(name: &str, params: &str) -> Subject<PolyDbm> {
    let params = Params::parse(params).expect("parameters");
    let probe = tempfile::tempdir().expect("tempdir");
    let ordered = PolyDbm::open(probe.path().join("probe"), Access::ReadWrite, &params)
        .unwrap()
        .key_order()
        .unwrap()
        .is_some();
    Subject {
        name: name.to_string(),
        ordered,
        open: Box::new(move |path| {
            let db = PolyDbm::open(path, Access::ReadWrite, &params).expect("open");
            let options = TransactionOptions::for_poly(&db).expect("options");
            TransactionalDbm::open(db, options).expect("wrap")
        }),
    }
}

/// Everything `db` holds, read plainly (not through a view).
fn contents<D: Dbm + 'static>(db: &D) -> Map {
    let mut all = Map::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        all.insert(k.to_vec(), v.to_vec());
        kuradb::Action::Keep
    })
    .expect("walk");
    all
}

fn sorted(mut items: Vec<(Key, Value)>, ordered: bool) -> Vec<(Key, Value)> {
    if !ordered {
        items.sort();
    }
    items
}

fn in_range(map: &Map, lo: &Option<Key>, hi: &Option<Key>) -> Vec<(Key, Value)> {
    let lo = lo.as_ref().map_or(Bound::Unbounded, |k| Bound::Included(k.clone()));
    let hi = hi.as_ref().map_or(Bound::Unbounded, |k| Bound::Excluded(k.clone()));
    if let (Bound::Included(l), Bound::Excluded(h)) = (&lo, &hi) {
        if l >= h {
            return Vec::new();
        }
    }
    map.range((lo, hi)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// An open transaction, its savepoints, and the model's twin of it.
type OpenTx<'db, D> = (Transaction<'db, D>, Vec<Savepoint>, ModelTx);

struct Slots<'db, D: Dbm + 'static> {
    txs: Vec<Option<OpenTx<'db, D>>>,
    snaps: Vec<Option<(Snapshot<'db, D>, Map)>>,
}

fn run_case<D: Dbm + 'static>(subject: &Subject<D>, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("casket");
    let db = (subject.open)(&path);
    let mut model = Model::default();
    let outcome = run_ops(subject, &db, &mut model, ops);
    outcome?;
    prop_assert_eq!(contents(&db), model.data.clone(), "[{}] at the end", subject.name);
    db.close().map_err(|e| TestCaseError::fail(format!("[{}] close: {e}", subject.name)))?;
    let db = (subject.open)(&path);
    prop_assert_eq!(contents(&db), model.data, "[{}] reopened", subject.name);
    db.close().map_err(|e| TestCaseError::fail(format!("[{}] close again: {e}", subject.name)))?;
    Ok(())
}

fn run_ops<D: Dbm + 'static>(
    subject: &Subject<D>,
    db: &TransactionalDbm<D>,
    model: &mut Model,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let name = &subject.name;
    let mut slots: Slots<'_, D> =
        Slots { txs: (0..TX_SLOTS).map(|_| None).collect(), snaps: (0..SNAP_SLOTS).map(|_| None).collect() };
    let durability = |i: usize| [CommitDurability::Memory, CommitDurability::Os][i % 2];
    for (i, op) in ops.iter().enumerate() {
        let at = format!("[{name}] step {i} {op:?}");
        // Transaction ops begin a transaction in an empty slot first.
        let slot = match op {
            Op::Get(s, _)
            | Op::Set(s, _, _)
            | Op::Remove(s, _)
            | Op::Append(s, _, _)
            | Op::Increment(s, _, _)
            | Op::Range(s, _, _)
            | Op::Items(s)
            | Op::Savepoint(s)
            | Op::Rollback(s, _) => Some(*s as usize),
            _ => None,
        };
        if let Some(s) = slot {
            if slots.txs[s].is_none() {
                let tx = db.begin(durability(i));
                let mtx = ModelTx { began: model.clock, snap: model.data.clone(), ..ModelTx::default() };
                slots.txs[s] = Some((tx, Vec::new(), mtx));
            }
        }
        match op {
            Op::Get(s, k) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                let got = tx.get(&key(*k)).map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                prop_assert_eq!(got, m.get(&key(*k)), "{}", at);
            }
            Op::Set(s, k, v) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                tx.set(&key(*k), &value(*v));
                m.writes.push((key(*k), Some(value(*v))));
            }
            Op::Remove(s, k) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                let present = tx.remove(&key(*k)).map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                prop_assert_eq!(present, m.get(&key(*k)).is_some(), "{}", at);
                m.writes.push((key(*k), None));
            }
            Op::Append(s, k, v) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                tx.append(&key(*k), &value(*v), b",")
                    .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                let next = appended(m.get(&key(*k)).as_ref(), &value(*v));
                m.writes.push((key(*k), Some(next)));
            }
            Op::Increment(s, k, d) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                let got = tx.increment(&key(*k), i64::from(*d), 0);
                match incremented(m.get(&key(*k)).as_ref(), i64::from(*d)) {
                    Ok(next) => {
                        let got = got.map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                        prop_assert_eq!(got.to_be_bytes().to_vec(), next.clone(), "{}", at);
                        m.writes.push((key(*k), Some(next)));
                    }
                    Err(()) => {
                        let e = got
                            .err()
                            .ok_or_else(|| TestCaseError::fail(format!("{at}: incremented text")))?;
                        prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", at);
                    }
                }
            }
            Op::Range(s, a, b) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                if subject.ordered {
                    let (lo, hi) = (bound(*a), bound(*b));
                    let got = tx
                        .range(lo.as_deref(), hi.as_deref())
                        .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                    prop_assert_eq!(got, in_range(&m.view(), &lo, &hi), "{}", at);
                    m.ranges.push((lo, hi));
                } else {
                    let got = tx.items().map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                    prop_assert_eq!(sorted(got, false), in_range(&m.view(), &None, &None), "{}", at);
                    m.read_all = true;
                }
            }
            Op::Items(s) => {
                let (tx, _, m) = slots.txs[*s as usize].as_mut().unwrap();
                let got = tx.items().map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                prop_assert_eq!(sorted(got, subject.ordered), in_range(&m.view(), &None, &None), "{}", at);
                m.read_all = true;
            }
            Op::Savepoint(s) => {
                let (tx, points, m) = slots.txs[*s as usize].as_mut().unwrap();
                points.push(tx.savepoint());
                m.savepoints.push(m.writes.len());
            }
            Op::Rollback(s, i) => {
                let (tx, points, m) = slots.txs[*s as usize].as_mut().unwrap();
                if !points.is_empty() {
                    let i = *i as usize % points.len();
                    tx.rollback_to(points[i]).map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                    m.writes.truncate(m.savepoints[i]);
                    // Savepoints past the one rolled back to are gone.
                    points.truncate(i + 1);
                    m.savepoints.truncate(i + 1);
                }
            }
            Op::Commit(s) => {
                if let Some((tx, _, m)) = slots.txs[*s as usize].take() {
                    let result = tx.commit();
                    if model.conflicts(&m) {
                        let e =
                            result.err().ok_or_else(|| TestCaseError::fail(format!("{at}: committed")))?;
                        prop_assert_eq!(e.kind(), ErrorKind::Conflict, "{}: {}", at, e);
                    } else {
                        result.map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                        let mut finals: BTreeMap<Key, Option<Value>> = BTreeMap::new();
                        for (k, v) in &m.writes {
                            finals.insert(k.clone(), v.clone());
                        }
                        apply(model, finals);
                    }
                }
            }
            Op::Abort(s) => {
                if let Some((tx, _, _)) = slots.txs[*s as usize].take() {
                    tx.abort();
                }
            }
            Op::Drop(s) => drop(slots.txs[*s as usize].take()),
            Op::Batch(steps) => {
                let mut batch = db.batch(durability(i));
                for s in steps {
                    match s {
                        Step::Set(k, v) => batch.set(&key(*k), &value(*v)),
                        Step::Remove(k) => batch.remove(&key(*k)),
                        Step::Append(k, v) => batch.append(&key(*k), &value(*v), b","),
                        Step::Increment(k, d) => batch.increment(&key(*k), i64::from(*d), 0),
                    };
                }
                prop_assert_eq!(batch.len(), steps.len());
                let result = batch.commit();
                match model.batch(steps) {
                    Ok(finals) => {
                        result.map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                        apply(model, finals.into_iter().collect());
                    }
                    Err(()) => {
                        let e =
                            result.err().ok_or_else(|| TestCaseError::fail(format!("{at}: committed")))?;
                        prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", at);
                    }
                }
            }
            Op::Plain(s) => plain(db, model, s, &at)?,
            Op::PlainGet(k) => {
                let got = db.get(&key(*k)).map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                prop_assert_eq!(got, model.data.get(&key(*k)).cloned(), "{}", at);
            }
            Op::Snapshot(s) => {
                let view = db.snapshot().map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                slots.snaps[*s as usize] = Some((view, model.data.clone()));
            }
            Op::SnapshotRead(s) => {
                if let Some((view, seen)) = &slots.snaps[*s as usize] {
                    for k in 0..KEYS {
                        let got = view.get(&key(k)).map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                        prop_assert_eq!(got, seen.get(&key(k)).cloned(), "{} key {}", at, k);
                    }
                    let all: Vec<_> = view
                        .iter()
                        .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?
                        .collect::<kuradb::Result<_>>()
                        .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                    prop_assert_eq!(sorted(all, subject.ordered), in_range(seen, &None, &None), "{}", at);
                    prop_assert_eq!(view.count().unwrap(), seen.len() as u64, "{}", at);
                    if subject.ordered {
                        let (lo, hi) = (bound(1), bound(4));
                        let part: Vec<_> = view
                            .range(lo.as_deref(), hi.as_deref())
                            .unwrap()
                            .collect::<kuradb::Result<_>>()
                            .map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
                        prop_assert_eq!(part, in_range(seen, &lo, &hi), "{}", at);
                    }
                }
            }
            Op::SnapshotClose(s) => drop(slots.snaps[*s as usize].take()),
            Op::Checkpoint => {
                db.synchronize(Durability::Hard).map_err(|e| TestCaseError::fail(format!("{at}: {e}")))?;
            }
        }
        // Plain reads see every commit, and nothing uncommitted.
        if i % 4 == 0 {
            prop_assert_eq!(contents(db), model.data.clone(), "{} contents", at);
            prop_assert_eq!(db.count().unwrap(), model.data.len() as u64, "{} count", at);
        }
    }
    Ok(())
}

fn apply(model: &mut Model, finals: BTreeMap<Key, Option<Value>>) {
    if finals.is_empty() {
        return;
    }
    for (k, v) in &finals {
        match v {
            Some(v) => model.data.insert(k.clone(), v.clone()),
            None => model.data.remove(k),
        };
    }
    model.change(finals.into_keys());
}

/// A plain write: a change of every key whose value it changes.
fn plain<D: Dbm + 'static>(
    db: &TransactionalDbm<D>,
    model: &mut Model,
    s: &Step,
    at: &str,
) -> Result<(), TestCaseError> {
    let fail = |e: kuradb::Error| TestCaseError::fail(format!("{at}: {e}"));
    let (k, next) = match s {
        Step::Set(k, v) => {
            db.set(&key(*k), &value(*v)).map_err(fail)?;
            (key(*k), Some(value(*v)))
        }
        Step::Remove(k) => {
            let present = db.remove(&key(*k)).map_err(fail)?;
            prop_assert_eq!(present, model.data.contains_key(&key(*k)), "{}", at);
            (key(*k), None)
        }
        Step::Append(k, v) => {
            db.append(&key(*k), &value(*v), b",").map_err(fail)?;
            (key(*k), Some(appended(model.data.get(&key(*k)), &value(*v))))
        }
        Step::Increment(k, d) => {
            let got = db.increment(&key(*k), i64::from(*d), 0);
            match incremented(model.data.get(&key(*k)), i64::from(*d)) {
                Ok(next) => {
                    prop_assert_eq!(got.map_err(fail)?.to_be_bytes().to_vec(), next.clone(), "{}", at);
                    (key(*k), Some(next))
                }
                Err(()) => {
                    prop_assert_eq!(
                        got.map_err(|e| e.kind()).err(),
                        Some(ErrorKind::InvalidArgument),
                        "{}",
                        at
                    );
                    return Ok(());
                }
            }
        }
    };
    if model.data.get(&k) != next.as_ref() {
        match next {
            Some(v) => model.data.insert(k.clone(), v),
            None => model.data.remove(&k),
        };
        model.change([k]);
    }
    Ok(())
}

/// Runs the random interleavings on `subject`: `PROPTEST_CASES` cases, 24 unless set.
fn check<D: Dbm + 'static>(subject: Subject<D>) {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&proptest::collection::vec(op(), 1..80), |ops| run_case(&subject, &ops));
    if let Err(e) = result {
        panic!("[{}] {e}", subject.name);
    }
}

fn access(writable: bool) -> Access {
    if writable {
        Access::ReadWrite
    } else {
        Access::ReadOnly
    }
}

#[test]
fn model_hash() {
    let o = HashOptions::default().num_buckets(3);
    check(subject("HashDbm", false, move |p| HashDbm::open(p, access(true), &o)));
}

#[test]
fn model_tree() {
    let o = TreeOptions::default().max_page_size(96).max_branches(3);
    check(subject("TreeDbm", true, move |p| TreeDbm::open(p, access(true), &o)));
}

/// A skip database shows its updates only after a synchronization, so a
/// commit would not show to the transactions after it: wrapping one is
/// refused their transactions, batches and snapshots, alone or as shards
/// (the model found committed sets missing); their plain calls still work.
#[test]
fn skip_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |e: kuradb::Error, what: &str| {
        assert_eq!(e.kind(), ErrorKind::Infeasible, "{what}: {e}");
        assert!(e.to_string().contains("skip"), "{what}: {e}");
    };
    let o = SkipOptions::default();
    let db = SkipDbm::open(dir.path().join("s.kks"), access(true), &o).unwrap();
    let db = TransactionalDbm::open(db, options(true)).unwrap();
    db.set(b"plain", b"works").unwrap();
    refused(db.snapshot().err().expect("refused"), "snapshot");
    let mut batch = db.batch(CommitDurability::Os);
    batch.set(b"k", b"v");
    refused(batch.commit().unwrap_err(), "batch");
    let mut tx = db.begin(CommitDurability::Os);
    tx.set(b"k", b"v");
    refused(tx.commit().unwrap_err(), "transaction");
    assert_eq!(db.get_multi(&[b"plain"]).unwrap().len(), 1, "plain reads go on beside a transaction");
    db.close().unwrap();
    for (name, params) in [("one", "dbm=skip"), ("shards", "dbm=skip,num_shards=2")] {
        let params = Params::parse(params).unwrap();
        let db = PolyDbm::open(dir.path().join(name), access(true), &params).unwrap();
        let options = TransactionOptions::for_poly(&db).unwrap();
        let db = TransactionalDbm::open(db, options).unwrap();
        refused(db.snapshot().err().expect("refused"), name);
        db.close().unwrap();
    }
}

#[test]
fn model_tiny() {
    let o = TinyOptions::default().num_buckets(1);
    check(subject("TinyDbm", false, move |p| TinyDbm::open(p, access(true), &o)));
}

#[test]
fn model_baby() {
    let o = BabyOptions::default().max_page_size(40).max_branches(3);
    check(subject("BabyDbm", true, move |p| BabyDbm::open(p, access(true), &o)));
}

#[test]
fn model_cache_with_large_caps() {
    let o = CacheOptions::default().cap_rec_num(100_000);
    check(subject("CacheDbm", false, move |p| CacheDbm::open(p, access(true), &o)));
}

#[test]
fn model_std_hash() {
    let o = StdOptions::default();
    check(subject("StdHashDbm", false, move |p| StdHashDbm::open(p, access(true), &o)));
}

#[test]
fn model_std_tree() {
    let o = StdOptions::default();
    check(subject("StdTreeDbm", true, move |p| StdTreeDbm::open(p, access(true), &o)));
}

#[test]
fn model_shards_of_hash() {
    check(poly_subject("3 shards of hash", "dbm=hash,num_shards=3,num_buckets=3"));
}

#[test]
fn model_shards_of_tree() {
    check(poly_subject("3 shards of tree", "dbm=tree,num_shards=3,max_page_size=96,max_branches=3"));
}

// ------------------------------------------------------------ the history check

/// What one committed transaction did: its commit's sequence number, and
/// its reads and writes in order (a write, a key, the value read or written).
#[derive(Debug, Clone)]
struct Committed {
    seq: u64,
    events: Vec<(bool, Key, Option<Value>)>,
}

/// Threads run random read-write transactions over `keys` keys with `run`;
/// replayed in commit order on a model, every committed transaction reads
/// what it read. Also checks the database ends as the replay does.
fn history<D: Dbm + Send + Sync + 'static>(name: &str, db: TransactionalDbm<D>, threads: usize, per: usize) {
    const HKEYS: u8 = 5;
    let db = Arc::new(db);
    let seed: u64 =
        std::env::var("KURA_HISTORY_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let log = Arc::new(Mutex::new(Vec::<Committed>::new()));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (db, log) = (Arc::clone(&db), Arc::clone(&log));
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed.wrapping_add(t as u64));
                for n in 0..per {
                    // The plan is fixed before the first attempt; each attempt notes afresh.
                    let plan: Vec<(u8, u8)> = (0..rng.gen_range(1..5))
                        .map(|_| (rng.gen_range(0..4u8), rng.gen_range(0..HKEYS)))
                        .collect();
                    let tag = format!("t{t}n{n}");
                    let mut events = Vec::new();
                    let durability = if n % 8 == 0 { CommitDurability::Sync } else { CommitDurability::Os };
                    let result = db.run_committed(durability, 1000, |tx| {
                        events.clear();
                        for (i, &(what, k)) in plan.iter().enumerate() {
                            let k = key(k);
                            match what {
                                0 | 1 => {
                                    let v = tx.get(&k)?;
                                    events.push((false, k, v));
                                }
                                2 => {
                                    let v = format!("{tag}.{i}").into_bytes();
                                    tx.set(&k, &v);
                                    events.push((true, k, Some(v)));
                                }
                                _ => {
                                    // Read-modify-write: appends to what it reads.
                                    let old = tx.get(&k)?;
                                    let next = appended(old.as_ref(), format!("{tag}.{i}").as_bytes());
                                    tx.set(&k, &next);
                                    events.push((false, k.clone(), old));
                                    events.push((true, k, Some(next)));
                                }
                            }
                        }
                        Ok(())
                    });
                    let ((), seq) = result.unwrap_or_else(|e| panic!("{tag}: {e}"));
                    log.lock().unwrap().push(Committed { seq, events });
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let mut log = std::mem::take(&mut *log.lock().unwrap());
    log.sort_by_key(|c| c.seq);
    let seqs: BTreeSet<u64> = log.iter().map(|c| c.seq).collect();
    assert_eq!(seqs.len(), log.len(), "[{name}] (seed {seed}) two commits share a sequence number");
    let mut model = Map::new();
    for c in &log {
        // Events in the transaction's order: a read after its own write of
        // a key sees that write, any other read what the commits before left.
        let mut own: BTreeMap<&Key, &Option<Value>> = BTreeMap::new();
        for (is_write, k, v) in &c.events {
            if *is_write {
                own.insert(k, v);
                continue;
            }
            let expected = own.get(k).map(|v| (*v).clone()).unwrap_or_else(|| model.get(k).cloned());
            assert_eq!(
                v,
                &expected,
                "[{name}] (seed {seed}; KURA_HISTORY_SEED={seed} replays the plans) commit {} read {} \
                 otherwise than the commits before it left it",
                c.seq,
                String::from_utf8_lossy(k)
            );
        }
        for (k, v) in own {
            match v {
                Some(v) => model.insert(k.clone(), v.clone()),
                None => model.remove(k),
            };
        }
    }
    assert_eq!(contents(&*db), model, "[{name}] (seed {seed}) the database after the history");
    eprintln!("[{name}] {} commits checked (seed {seed})", log.len());
    Arc::into_inner(db).expect("the workers are done").close().expect("close");
}

#[test]
fn history_is_serializable_in_commit_order_on_hash() {
    let dir = tempfile::tempdir().unwrap();
    let db = HashDbm::open(dir.path().join("h.kdb"), Access::ReadWrite, &HashOptions::default()).unwrap();
    history("HashDbm", TransactionalDbm::open(db, options(false)).unwrap(), 4, 150);
}

#[test]
fn history_is_serializable_in_commit_order_on_tree_shards() {
    let dir = tempfile::tempdir().unwrap();
    let params = Params::parse("dbm=tree,num_shards=3").unwrap();
    let db = PolyDbm::open(dir.path().join("t"), Access::ReadWrite, &params).unwrap();
    let options = TransactionOptions::for_poly(&db).unwrap();
    history("3 shards of tree", TransactionalDbm::open(db, options).unwrap(), 4, 150);
}
