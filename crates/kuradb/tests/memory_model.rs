//! The on-memory databases against a model: random sequences of single and
//! multi-record updates, process_each, clear, rebuild, synchronize and
//! reopen through the flat file, and file copies, compared step by step with
//! an ordered map. The ordered ones (BabyDbm on tiny pages, so leaves and
//! inner nodes split and merge all the time, with every comparator; and
//! StdTreeDbm) also take every cursor move and range scan; the hash ones a
//! full walk that must meet every record once. CacheDbm is checked against
//! a model with LRU eviction by count.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::path::Path;

use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::cache::{CacheDbm, CacheOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use kuradb::dbm::tiny::{TinyDbm, TinyOptions};
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Action, Dbm};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Op {
    Set(u8, usize),
    Remove(u8),
    Get(u8),
    Append(u8, usize),
    SetMulti(Vec<(u8, usize)>),
    RemoveMulti(Vec<u8>),
    /// Removes every record whose key's first byte is even, doubles the others' values.
    Each,
    Clear,
    Rebuild,
    Reopen,
    Copy,
    /// Cursor moves from a start, checked against the model's order.
    Walk(Start, Vec<Move>),
    /// A range scan with these bounds (0: unbounded, 1: included, 2: excluded).
    Range(u8, u8, u8, u8),
}

#[derive(Clone, Debug)]
enum Start {
    First,
    Last,
    Jump(u8),
    Lower(u8, bool),
    Upper(u8, bool),
}

#[derive(Clone, Debug)]
enum Move {
    Next,
    Previous,
    SetHere(usize),
    RemoveHere,
}

/// The key of index `k`: short strings and numbers in a few spellings, so
/// that every comparator sees ties and the empty key.
fn key(k: u8, cmp: KeyComparator) -> Vec<u8> {
    match cmp {
        KeyComparator::Lexical | KeyComparator::LexicalReverse => {
            let n = usize::from(k % 40);
            let alphabet = b"ab\x00z";
            (0..n % 5)
                .map(|i| alphabet[(n / (i + 1) + i) % 4])
                .chain(format!("{n}").bytes().take(n % 2))
                .collect()
        }
        _ => match k % 4 {
            0 => format!("{}", i32::from(k % 40) - 20),
            1 => format!("{:03}", k % 40),
            2 => format!("{}x", k % 40),
            _ => format!("{:+}", i32::from(k % 40) - 10),
        }
        .into_bytes(),
    }
}

fn value(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 + n) as u8).collect()
}

fn start() -> impl Strategy<Value = Start> {
    prop_oneof![
        Just(Start::First),
        Just(Start::Last),
        any::<u8>().prop_map(Start::Jump),
        (any::<u8>(), any::<bool>()).prop_map(|(k, i)| Start::Lower(k, i)),
        (any::<u8>(), any::<bool>()).prop_map(|(k, i)| Start::Upper(k, i)),
    ]
}

fn moves() -> impl Strategy<Value = Move> {
    prop_oneof![
        4 => Just(Move::Next),
        3 => Just(Move::Previous),
        1 => (0..40usize).prop_map(Move::SetHere),
        1 => Just(Move::RemoveHere),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (any::<u8>(), 0..60usize).prop_map(|(k, n)| Op::Set(k, n)),
        8 => any::<u8>().prop_map(Op::Remove),
        4 => any::<u8>().prop_map(Op::Get),
        2 => (any::<u8>(), 0..20usize).prop_map(|(k, n)| Op::Append(k, n)),
        2 => proptest::collection::vec((any::<u8>(), 0..30usize), 0..5).prop_map(Op::SetMulti),
        2 => proptest::collection::vec(any::<u8>(), 0..5).prop_map(Op::RemoveMulti),
        1 => Just(Op::Each),
        1 => Just(Op::Clear),
        1 => Just(Op::Rebuild),
        1 => Just(Op::Reopen),
        1 => Just(Op::Copy),
        4 => (start(), proptest::collection::vec(moves(), 0..12)).prop_map(|(s, m)| Op::Walk(s, m)),
        2 => (any::<u8>(), any::<u8>(), 0..3u8, 0..3u8).prop_map(|(a, b, x, y)| Op::Range(a, b, x, y)),
    ]
}

/// Which database, and how it opens.
#[derive(Clone, Copy, Debug)]
enum Kind {
    StdHash,
    StdTree,
    Tiny,
    Baby(KeyComparator),
}

impl Kind {
    fn open(self, path: &Path, writable: bool) -> Box<dyn Dbm> {
        match self {
            Kind::StdHash => Box::new(StdHashDbm::open(path, writable, &StdOptions::default()).unwrap()),
            Kind::StdTree => Box::new(StdTreeDbm::open(path, writable, &StdOptions::default()).unwrap()),
            // Four buckets a shard at most: chains are long and shards resize constantly.
            Kind::Tiny => Box::new(
                TinyDbm::open(path, writable, &TinyOptions { num_buckets: 1, truncate: false }).unwrap(),
            ),
            Kind::Baby(comparator) => {
                let o = BabyOptions { max_page_size: 40, max_branches: 3, comparator, truncate: false };
                Box::new(BabyDbm::open(path, writable, &o).unwrap())
            }
        }
    }

    fn cmp(self) -> KeyComparator {
        match self {
            Kind::Baby(c) => c,
            _ => KeyComparator::Lexical,
        }
    }

    fn ordered(self) -> bool {
        matches!(self, Kind::StdTree | Kind::Baby(_))
    }
}

/// The model's keys in the database's order.
fn ordered(model: &Model, cmp: KeyComparator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    v.sort_by(|a, b| cmp.compare(&a.0, &b.0));
    v
}

fn check_all(db: &dyn Dbm, model: &Model, kind: Kind) -> Result<(), TestCaseError> {
    prop_assert_eq!(db.count().unwrap(), model.len() as u64);
    let mut walked = Vec::new();
    db.process_each(false, &mut |k, v| {
        walked.push((k.to_vec(), v.to_vec()));
        Action::Keep
    })
    .unwrap();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    let mut by_cursor = Vec::new();
    while let Some(record) = cursor.get().unwrap() {
        by_cursor.push(record);
        cursor.next().unwrap();
        prop_assert!(by_cursor.len() <= model.len(), "the cursor walks too far");
    }
    if kind.ordered() {
        let expected = ordered(model, kind.cmp());
        prop_assert_eq!(&walked, &expected);
        prop_assert_eq!(&by_cursor, &expected);
    } else {
        let as_model = |v: Vec<(Vec<u8>, Vec<u8>)>| v.into_iter().collect::<Model>();
        prop_assert_eq!(walked.len(), model.len());
        prop_assert_eq!(by_cursor.len(), model.len());
        prop_assert_eq!(&as_model(walked), model);
        prop_assert_eq!(&as_model(by_cursor), model);
    }
    Ok(())
}

/// Where a start puts a cursor in `order`: an index, or `order.len()` for none.
fn start_index(
    order: &[(Vec<u8>, Vec<u8>)],
    start: &Start,
    cmp: KeyComparator,
    key_of: impl Fn(u8) -> Vec<u8>,
) -> usize {
    let n = order.len();
    let first_where = |f: &dyn Fn(&[u8]) -> bool| order.iter().position(|(k, _)| f(k)).unwrap_or(n);
    let last_where = |f: &dyn Fn(&[u8]) -> bool| order.iter().rposition(|(k, _)| f(k)).unwrap_or(n);
    match start {
        Start::First => 0,
        Start::Last => n.checked_sub(1).unwrap_or(n),
        Start::Jump(k) => {
            let key = key_of(*k);
            first_where(&|r| cmp.compare(r, &key).is_ge())
        }
        Start::Upper(k, inclusive) => {
            let key = key_of(*k);
            first_where(&|r| {
                if *inclusive {
                    cmp.compare(r, &key).is_ge()
                } else {
                    cmp.compare(r, &key).is_gt()
                }
            })
        }
        Start::Lower(k, inclusive) => {
            let key = key_of(*k);
            last_where(&|r| {
                if *inclusive {
                    cmp.compare(r, &key).is_le()
                } else {
                    cmp.compare(r, &key).is_lt()
                }
            })
        }
    }
}

fn walk(
    db: &dyn Dbm,
    model: &mut Model,
    kind: Kind,
    start: &Start,
    moves: &[Move],
) -> Result<(), TestCaseError> {
    let cmp = kind.cmp();
    let key_of = |k: u8| key(k, cmp);
    let mut cursor = db.iter().unwrap();
    match start {
        Start::First => cursor.first().unwrap(),
        Start::Last => cursor.last().unwrap(),
        Start::Jump(k) => cursor.jump(&key_of(*k)).unwrap(),
        Start::Lower(k, i) => cursor.jump_lower(&key_of(*k), *i).unwrap(),
        Start::Upper(k, i) => cursor.jump_upper(&key_of(*k), *i).unwrap(),
    }
    let order = ordered(model, cmp);
    // The position as a key (None: past either end).
    let mut at: Option<Vec<u8>> = order.get(start_index(&order, start, cmp, key_of)).map(|(k, _)| k.clone());
    for m in moves {
        let order = ordered(model, cmp);
        let index = at
            .as_ref()
            .map(|k| order.iter().position(|(o, _)| cmp.compare(o, k).is_ge()).unwrap_or(order.len()));
        // A cursor on a removed key stands on the next record.
        let here = index.and_then(|i| order.get(i));
        let got = cursor.get().unwrap();
        prop_assert_eq!(got.as_ref(), here, "get at {:?}", at);
        at = here.map(|(k, _)| k.clone());
        // A get past the end leaves the cursor there, with no way back.
        let index = index.filter(|_| here.is_some());
        match m {
            Move::Next => {
                cursor.next().unwrap();
                at = index.and_then(|i| order.get(i + 1)).map(|(k, _)| k.clone());
            }
            Move::Previous => {
                cursor.previous().unwrap();
                at = index.and_then(|i| i.checked_sub(1)).and_then(|i| order.get(i)).map(|(k, _)| k.clone());
            }
            Move::SetHere(n) => match &at {
                Some(k) => {
                    cursor.set(&value(*n)).unwrap();
                    model.insert(k.clone(), value(*n));
                }
                None => prop_assert!(cursor.set(b"x").is_err()),
            },
            Move::RemoveHere => match &at {
                Some(k) => {
                    cursor.remove().unwrap();
                    model.remove(k);
                }
                None => prop_assert!(cursor.remove().is_err()),
            },
        }
    }
    Ok(())
}

fn range_scan(
    db: &BabyDbm,
    model: &Model,
    cmp: KeyComparator,
    a: u8,
    b: u8,
    x: u8,
    y: u8,
) -> Result<(), TestCaseError> {
    let (ka, kb) = (key(a, cmp), key(b, cmp));
    let bound = |k: &Vec<u8>, how: u8| match how {
        0 => Bound::Unbounded,
        1 => Bound::Included(k.clone()),
        _ => Bound::Excluded(k.clone()),
    };
    let (lo, hi) = (bound(&ka, x), bound(&kb, y));
    let got: Vec<(Vec<u8>, Vec<u8>)> =
        db.range((lo.clone(), hi.clone())).unwrap().map(|r| r.unwrap()).collect();
    let within = |k: &[u8]| {
        let above = match &lo {
            Bound::Unbounded => true,
            Bound::Included(l) => cmp.compare(k, l).is_ge(),
            Bound::Excluded(l) => cmp.compare(k, l).is_gt(),
        };
        let below = match &hi {
            Bound::Unbounded => true,
            Bound::Included(h) => cmp.compare(k, h).is_le(),
            Bound::Excluded(h) => cmp.compare(k, h).is_lt(),
        };
        above && below
    };
    // The keys within bounds are contiguous in the database's order.
    let expected: Vec<_> = ordered(model, cmp).into_iter().filter(|(k, _)| within(k)).collect();
    prop_assert_eq!(got, expected);
    Ok(())
}

fn run(kind: Kind, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.flat");
    let cmp = kind.cmp();
    let mut db = kind.open(&path, true);
    let mut model = Model::new();
    for op in ops {
        match op {
            Op::Set(k, n) => {
                db.set(&key(*k, cmp), &value(*n), true).unwrap();
                model.insert(key(*k, cmp), value(*n));
            }
            Op::Remove(k) => {
                let existed = db.remove(&key(*k, cmp)).unwrap();
                prop_assert_eq!(existed, model.remove(&key(*k, cmp)).is_some());
            }
            Op::Get(k) => prop_assert_eq!(db.get(&key(*k, cmp)).unwrap(), model.get(&key(*k, cmp)).cloned()),
            Op::Append(k, n) => {
                db.append(&key(*k, cmp), &value(*n), b"+").unwrap();
                match model.get_mut(&key(*k, cmp)) {
                    Some(v) => {
                        v.extend_from_slice(b"+");
                        v.extend_from_slice(&value(*n));
                    }
                    None => {
                        model.insert(key(*k, cmp), value(*n));
                    }
                }
            }
            Op::SetMulti(pairs) => {
                let owned: Vec<(Vec<u8>, Vec<u8>)> =
                    pairs.iter().map(|(k, n)| (key(*k, cmp), value(*n))).collect();
                let refs: Vec<(&[u8], &[u8])> =
                    owned.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
                db.set_multi(&refs, true).unwrap();
                model.extend(owned);
            }
            Op::RemoveMulti(keys) => {
                let owned: Vec<Vec<u8>> = keys.iter().map(|k| key(*k, cmp)).collect();
                let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
                let mut distinct = owned.clone();
                distinct.sort();
                distinct.dedup();
                let expected = distinct.iter().filter(|k| model.contains_key(*k)).count();
                prop_assert_eq!(db.remove_multi(&refs).unwrap(), expected);
                owned.iter().for_each(|k| {
                    model.remove(k);
                });
            }
            Op::Each => {
                db.process_each(true, &mut |k, v| {
                    if k.first().is_some_and(|b| b % 2 == 0) {
                        Action::Remove
                    } else {
                        Action::Set([v, v].concat().into())
                    }
                })
                .unwrap();
                model.retain(|k, _| k.first().is_none_or(|b| b % 2 != 0));
                model.values_mut().for_each(|v| *v = [v.as_slice(), v.as_slice()].concat());
            }
            Op::Clear => {
                db.clear().unwrap();
                model.clear();
            }
            Op::Rebuild => db.rebuild().unwrap(),
            Op::Reopen => {
                db.synchronize(false).unwrap();
                drop(db);
                let reader = kind.open(&path, false);
                check_all(&*reader, &model, kind)?;
                prop_assert!(reader.set(b"k", b"v", true).is_err(), "a reader refuses writes");
                drop(reader);
                db = kind.open(&path, true);
            }
            Op::Copy => {
                let copy = dir.path().join("copy.flat");
                db.copy_file_data(&copy, false).unwrap();
                check_all(&*kind.open(&copy, false), &model, kind)?;
            }
            Op::Walk(start, moves) => {
                if kind.ordered() {
                    walk(&*db, &mut model, kind, start, moves)?;
                }
            }
            Op::Range(a, b, x, y) => {
                if let Kind::Baby(_) = kind {
                    // On a tree of its own, filled from the walk's end so that it splits unevenly.
                    let o =
                        BabyOptions { max_page_size: 40, max_branches: 3, comparator: cmp, truncate: false };
                    let baby = BabyDbm::new(&o).unwrap();
                    for (k, v) in model.iter().rev() {
                        baby.set(k, v, true).unwrap();
                    }
                    range_scan(&baby, &model, cmp, *a, *b, *x, *y)?;
                }
            }
        }
        check_all(&*db, &model, kind)?;
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn std_hash_follows_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(Kind::StdHash, &ops)?;
    }

    #[test]
    fn std_tree_follows_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(Kind::StdTree, &ops)?;
    }

    #[test]
    fn tiny_follows_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(Kind::Tiny, &ops)?;
    }

    #[test]
    fn baby_follows_the_model(ops in proptest::collection::vec(op(), 1..80), c in 0..8usize) {
        run(Kind::Baby(KeyComparator::all()[c]), &ops)?;
    }
}

/// The LRU model of a cache: keys from most to least recently used.
struct LruModel {
    map: Model,
    order: VecDeque<Vec<u8>>,
    cap: usize,
}

impl LruModel {
    fn touch(&mut self, key: &[u8]) {
        if let Some(i) = self.order.iter().position(|k| k == key) {
            let k = self.order.remove(i).unwrap();
            self.order.push_front(k);
        }
    }

    fn set(&mut self, key: &[u8], value: Vec<u8>) {
        if self.map.insert(key.to_vec(), value).is_some() {
            self.touch(key);
        } else {
            self.order.push_front(key.to_vec());
        }
        while self.map.len() > self.cap {
            let old = self.order.pop_back().unwrap();
            self.map.remove(&old);
        }
    }

    fn remove(&mut self, key: &[u8]) {
        if self.map.remove(key).is_some() {
            self.order.retain(|k| k != key);
        }
    }
}

#[derive(Clone, Debug)]
enum CacheOp {
    Set(u8, usize),
    Get(u8),
    Remove(u8),
    Reopen,
}

fn cache_op() -> impl Strategy<Value = CacheOp> {
    prop_oneof![
        6 => (0..40u8, 0..20usize).prop_map(|(k, n)| CacheOp::Set(k, n)),
        4 => (0..40u8).prop_map(CacheOp::Get),
        2 => (0..40u8).prop_map(CacheOp::Remove),
        1 => Just(CacheOp::Reopen),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// A cache holds the most recently used records up to its cap, evicting
    /// the least recently used (reads count as uses).
    #[test]
    fn cache_follows_an_lru_model(ops in proptest::collection::vec(cache_op(), 1..150), cap in 1..12usize) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.flat");
        let options = CacheOptions { cap_rec_num: cap as u64, ..CacheOptions::default() };
        let mut db = CacheDbm::open(&path, true, &options).unwrap();
        let mut model = LruModel { map: Model::new(), order: VecDeque::new(), cap };
        let k = |i: u8| format!("key{i}").into_bytes();
        for op in &ops {
            match op {
                CacheOp::Set(i, n) => {
                    db.set(&k(*i), &value(*n), true).unwrap();
                    model.set(&k(*i), value(*n));
                }
                CacheOp::Get(i) => {
                    prop_assert_eq!(db.get(&k(*i)).unwrap(), model.map.get(&k(*i)).cloned());
                    model.touch(&k(*i));
                }
                CacheOp::Remove(i) => {
                    db.remove(&k(*i)).unwrap();
                    model.remove(&k(*i));
                }
                CacheOp::Reopen => {
                    db.close().unwrap();
                    db = CacheDbm::open(&path, true, &options).unwrap();
                    // The file keeps the records, not their order of use: reading
                    // each in a known order gives both the same order again.
                    let keys: Vec<Vec<u8>> = model.map.keys().cloned().collect();
                    for key in keys {
                        prop_assert!(db.get(&key).unwrap().is_some());
                        model.touch(&key);
                    }
                }
            }
            prop_assert_eq!(db.count().unwrap(), model.map.len() as u64);
            let mut held = Model::new();
            db.process_each(false, &mut |key, v| { held.insert(key.to_vec(), v.to_vec()); Action::Keep }).unwrap();
            prop_assert_eq!(&held, &model.map);
        }
    }
}

#[test]
fn a_cache_evicts_by_memory() {
    let options = CacheOptions { cap_rec_num: 1000, cap_mem_size: 10_000, ..CacheOptions::default() };
    let db = CacheDbm::new(&options).unwrap();
    for i in 0..100u32 {
        db.set(&i.to_be_bytes(), &[0u8; 1000], true).unwrap();
    }
    let count = db.count().unwrap();
    assert!((5..=10).contains(&count), "{count} records of 1000 bytes under a cap of 10000");
    assert!(db.get(&99u32.to_be_bytes()).unwrap().is_some(), "the newest stays");
    assert!(db.get(&0u32.to_be_bytes()).unwrap().is_none(), "the oldest goes");
}

/// A cursor of a hash database that jumped to a record sees later changes
/// of it: what it read at the jump is trusted only while nothing changed.
#[test]
fn hash_cursors_see_changes_after_a_jump() {
    let dbs: Vec<Box<dyn Dbm>> = vec![
        Box::new(StdHashDbm::new(&StdOptions::default())),
        Box::new(TinyDbm::new(&TinyOptions::default())),
        Box::new(CacheDbm::new(&CacheOptions::default()).unwrap()),
    ];
    for db in dbs {
        db.set(b"a", b"1", true).unwrap();
        db.set(b"b", b"2", true).unwrap();
        let mut c = db.iter().unwrap();
        c.jump(b"a").unwrap();
        assert_eq!(c.get().unwrap(), Some((b"a".to_vec(), b"1".to_vec())));
        db.set(b"a", b"9", true).unwrap();
        assert_eq!(c.get().unwrap(), Some((b"a".to_vec(), b"9".to_vec())));
        c.jump(b"a").unwrap();
        db.remove(b"a").unwrap();
        assert_ne!(c.get().unwrap().map(|(k, _)| k), Some(b"a".to_vec()));
    }
}
