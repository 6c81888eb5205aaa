//! The on-memory databases' own properties, beyond the conformance suite
//! (tests/dbm_conformance.rs) every class passes: BabyDbm's range scans in
//! every key order, on tiny pages filled unevenly; and CacheDbm against a
//! model with LRU eviction by count, and its eviction by memory.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::cache::{CacheDbm, CacheOptions};
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Access, Action, Dbm};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

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

/// The model's keys in the database's order.
fn ordered(model: &Model, cmp: KeyComparator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    v.sort_by(|a, b| cmp.compare(&a.0, &b.0));
    v
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

fn config() -> ProptestConfig {
    ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    /// A range scan of a tree of tiny pages, filled from the last key back
    /// so that it splits unevenly, gives the model's records within the
    /// bounds, in every order and with every kind of bound.
    #[test]
    fn baby_range_scans_follow_the_model(
        sets in proptest::collection::vec((any::<u8>(), 0..60usize), 0..60),
        c in 0..8usize,
        (a, b, x, y) in (any::<u8>(), any::<u8>(), 0..3u8, 0..3u8),
    ) {
        let cmp = KeyComparator::all()[c];
        let model: Model = sets.iter().map(|(k, n)| (key(*k, cmp), value(*n))).collect();
        let o = BabyOptions::default().max_page_size(40).max_branches(3).comparator(cmp).truncate(false);
        let baby = BabyDbm::new(&o).unwrap();
        for (k, v) in model.iter().rev() {
            baby.set(k, v).unwrap();
        }
        range_scan(&baby, &model, cmp, a, b, x, y)?;
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
        let options = CacheOptions::default().cap_rec_num(cap as u64);
        let mut db = CacheDbm::open(&path, Access::ReadWrite, &options).unwrap();
        let mut model = LruModel { map: Model::new(), order: VecDeque::new(), cap };
        let k = |i: u8| format!("key{i}").into_bytes();
        for op in &ops {
            match op {
                CacheOp::Set(i, n) => {
                    db.set(&k(*i), &value(*n)).unwrap();
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
                    db = CacheDbm::open(&path, Access::ReadWrite, &options).unwrap();
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
            db.process_each(Access::ReadOnly, &mut |key, v| { held.insert(key.to_vec(), v.to_vec()); Action::Keep }).unwrap();
            prop_assert_eq!(&held, &model.map);
        }
    }
}

#[test]
fn a_cache_evicts_by_memory() {
    let options = CacheOptions::default().cap_rec_num(1000).cap_mem_size(10_000);
    let db = CacheDbm::new(&options).unwrap();
    for i in 0..100u32 {
        db.set(&i.to_be_bytes(), &[0u8; 1000]).unwrap();
    }
    let count = db.count().unwrap();
    assert!((5..=10).contains(&count), "{count} records of 1000 bytes under a cap of 10000");
    assert!(db.get(&99u32.to_be_bytes()).unwrap().is_some(), "the newest stays");
    assert!(db.get(&0u32.to_be_bytes()).unwrap().is_none(), "the oldest goes");
}
