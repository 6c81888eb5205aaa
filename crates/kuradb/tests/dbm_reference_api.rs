//! The reference's remaining DBM methods on every class, through `PolyDbm`:
//! set_and_get, remove_and_get and compare_exchange_and_get against a model,
//! process_first and pop_first in each class's order, push_last's queue
//! across threads (nothing lost or doubled, a waiting pop woken by a push),
//! search against brute force, and the flat record exports.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use kuradb::dbm::flat_records::{export_keys_as_lines, export_to_flat_records, import_from_flat_records};
use kuradb::dbm::{Access, Dbm, Desired, Durability, Expected, SearchMode};
use kuradb::{Params, PolyDbm};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Every class (and two shard sets) as its params string. The hash
/// databases have few buckets: finding their first record walks the buckets.
const CLASSES: [&str; 10] = [
    "dbm=hash,num_buckets=1000",
    "dbm=tree",
    "dbm=skip",
    "dbm=tiny",
    "dbm=baby",
    "dbm=cache",
    "dbm=stdhash",
    "dbm=stdtree",
    "dbm=hash,num_buckets=1000,num_shards=3",
    "dbm=tree,num_shards=2",
];

fn open(dir: &tempfile::TempDir, params: &str) -> PolyDbm {
    let name = params.replace([',', '='], "_");
    PolyDbm::open(dir.path().join(name), Access::ReadWrite, &Params::parse(params).unwrap()).unwrap()
}

/// Skip databases show changes only once synchronized.
fn settle(db: &PolyDbm, params: &str) {
    if params.contains("skip") {
        db.synchronize(Durability::Soft).unwrap();
    }
}

fn bytes(n: u64) -> Vec<u8> {
    format!("{n}").into_bytes()
}

#[test]
fn the_get_forms_agree_with_a_model_on_every_class() {
    for params in CLASSES {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir, params);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(20);
        for step in 0..400 {
            let key = bytes(rng.gen_range(0..12));
            let value = bytes(rng.gen_range(0..4));
            let old = model.get(&key).cloned();
            let what = format!("{params} step {step}");
            match rng.gen_range(0..4) {
                0 => {
                    let overwrite = rng.gen_bool(0.5);
                    let got = if overwrite {
                        db.set_and_get(&key, &value)
                    } else {
                        db.insert_and_get(&key, &value)
                    };
                    assert_eq!(got.unwrap(), old, "{what}");
                    if overwrite || old.is_none() {
                        model.insert(key, value);
                    }
                }
                1 => {
                    assert_eq!(db.remove_and_get(&key).unwrap(), old, "{what}");
                    model.remove(&key);
                }
                _ => {
                    let expected_value =
                        if rng.gen_bool(0.5) { old.clone().unwrap_or_default() } else { value.clone() };
                    let expected = match rng.gen_range(0..3) {
                        0 => Expected::Absent,
                        1 => Expected::Any,
                        _ => Expected::Value(&expected_value),
                    };
                    let desired = match rng.gen_range(0..3) {
                        0 => Desired::Remove,
                        1 => Desired::Keep,
                        _ => Desired::Value(&value),
                    };
                    let holds = expected.holds(old.as_deref());
                    let got = db.compare_exchange_and_get(&key, expected, desired).unwrap();
                    assert_eq!(got, (holds, old), "{what}: {expected:?} {desired:?}");
                    match desired {
                        Desired::Remove if holds => drop(model.remove(&key)),
                        Desired::Value(v) if holds => drop(model.insert(key, v.to_vec())),
                        _ => {}
                    }
                }
            }
            settle(&db, params);
        }
        let mut all = BTreeMap::new();
        db.process_each(Access::ReadOnly, &mut |k, v| {
            all.insert(k.to_vec(), v.to_vec());
            kuradb::dbm::Action::Keep
        })
        .unwrap();
        assert_eq!(all, model, "{params}");
        db.close().unwrap();
    }
}

#[test]
fn pop_first_takes_every_record_once_in_the_cursor_order() {
    for params in CLASSES {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir, params);
        assert!(!db.process_first(Access::ReadWrite, &mut |_, _| unreachable!()).unwrap(), "{params}: empty");
        assert_eq!(db.pop_first(None).unwrap(), None, "{params}");
        for n in 0..50 {
            db.set(&bytes(n * 7 % 50), &bytes(n)).unwrap();
        }
        settle(&db, params);
        let mut popped = Vec::new();
        loop {
            let mut first = None;
            let mut cursor = db.iter().unwrap();
            cursor.first().unwrap();
            let expected = cursor.get().unwrap().map(|r| r.0);
            drop(cursor);
            db.process_first(Access::ReadOnly, &mut |k, _| {
                first = Some(k.to_vec());
                kuradb::dbm::Action::Keep
            })
            .unwrap();
            assert_eq!(first, expected, "{params}: process_first shows the cursor's first record");
            let Some((key, value)) = db.pop_first(None).unwrap() else { break };
            assert_eq!(Some(&key), first.as_ref(), "{params}");
            assert_eq!(value, bytes((0..50).find(|n| bytes(n * 7 % 50) == key).unwrap()), "{params}");
            popped.push(key);
            settle(&db, params);
        }
        assert_eq!(db.count().unwrap(), 0, "{params}");
        let mut sorted = popped.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 50, "{params}: every record once");
        if db.is_ordered() && !params.contains("shards") {
            assert_eq!(popped, sorted, "{params}: an ordered database pops in key order");
        }
        db.close().unwrap();
    }
}

#[test]
fn push_last_keys_are_the_reference_timestamps() {
    let db = kuradb::StdTreeDbm::new(&Default::default());
    assert_eq!(db.push_last(b"a", Some(1.5)).unwrap(), 150_000_000u64.to_be_bytes());
    assert_eq!(db.push_last(b"b", Some(1.5)).unwrap(), 150_000_001u64.to_be_bytes());
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let key = db.push_last(b"c", None).unwrap();
    let units = u64::from_be_bytes(key.try_into().unwrap());
    assert!(units / 100_000_000 >= before.as_secs() && units / 100_000_000 <= before.as_secs() + 60);
    assert_eq!(db.pop_first(None).unwrap().unwrap().1, b"a");
    assert_eq!(db.pop_first(None).unwrap().unwrap().1, b"b");
    assert_eq!(db.pop_first(None).unwrap().unwrap().1, b"c");
}

#[test]
fn threads_pushing_and_popping_lose_and_double_nothing() {
    for params in ["dbm=baby", "dbm=tree", "dbm=stdhash", "dbm=hash,num_buckets=1000,num_shards=2"] {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(open(&dir, params));
        const PUSHERS: u64 = 3;
        const EACH: u64 = 150;
        let start = Arc::new(Barrier::new(6));
        let pushers: Vec<_> = (0..PUSHERS)
            .map(|t| {
                let (db, start) = (Arc::clone(&db), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    for i in 0..EACH {
                        db.push_last(&bytes(t * 1000 + i), None).unwrap();
                    }
                })
            })
            .collect();
        let poppers: Vec<_> = (0..3)
            .map(|_| {
                let (db, start) = (Arc::clone(&db), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    let mut got = Vec::new();
                    // Stop after a quiet second: every push is done by then.
                    while let Some((_, value)) = db.pop_first(Some(Duration::from_secs(1))).unwrap() {
                        got.push(value);
                    }
                    got
                })
            })
            .collect();
        pushers.into_iter().for_each(|p| p.join().unwrap());
        let mut all: Vec<Vec<u8>> = poppers.into_iter().flat_map(|p| p.join().unwrap()).collect();
        all.sort();
        let mut expected: Vec<Vec<u8>> =
            (0..PUSHERS).flat_map(|t| (0..EACH).map(move |i| bytes(t * 1000 + i))).collect();
        expected.sort();
        assert_eq!(all, expected, "{params}");
        assert_eq!(db.count().unwrap(), 0, "{params}");
    }
}

#[test]
fn a_waiting_pop_is_woken_by_a_push_and_gives_up_at_its_timeout() {
    let db = Arc::new(kuradb::BabyDbm::new(&Default::default()).unwrap());
    let started = Instant::now();
    assert_eq!(db.pop_first(Some(Duration::from_millis(100))).unwrap(), None);
    assert!(started.elapsed() >= Duration::from_millis(100));
    let waiter = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            let started = Instant::now();
            (db.pop_first(Some(Duration::from_secs(30))).unwrap(), started.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(200));
    db.push_last(b"wake", None).unwrap();
    let (got, waited) = waiter.join().unwrap();
    assert_eq!(got.unwrap().1, b"wake");
    assert!(waited < Duration::from_secs(10), "woken by the push, not the timeout: {waited:?}");
}

/// The keys of `db` in its order that `matches` takes, up to `capacity`.
fn brute(db: &dyn Dbm, capacity: usize, matches: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    db.process_each(Access::ReadOnly, &mut |k, _| {
        keys.push(k.to_vec());
        kuradb::dbm::Action::Keep
    })
    .unwrap();
    keys.into_iter().filter(|k| matches(k)).take(if capacity == 0 { usize::MAX } else { capacity }).collect()
}

fn lev<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    // The textbook full table, independent of the library's one-row version.
    let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in t.iter_mut().enumerate() {
        row[0] = i;
    }
    t[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            t[i][j] = (t[i - 1][j] + 1)
                .min(t[i][j - 1] + 1)
                .min(t[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]));
        }
    }
    t[a.len()][b.len()]
}

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"abAB .\n\xff".to_vec()), 0..6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn search_modes_agree_with_brute_force(
        keys in prop::collection::vec(key_strategy(), 0..20),
        pattern in key_strategy(),
        capacity in 0usize..4,
        ordered in any::<bool>(),
    ) {
        let db: Box<dyn Dbm> = if ordered { Box::new(kuradb::StdTreeDbm::new(&Default::default())) } else { Box::new(kuradb::StdHashDbm::new(&Default::default())) };
        for k in &keys {
            db.set(k, b"").unwrap();
        }
        let lower = |b: &[u8]| b.to_ascii_lowercase();
        let word = |text: &[u8], p: &[u8]| (0..=text.len()).any(|at| text[at..].starts_with(p)
            && (at == 0 || !text[at - 1].is_ascii_alphanumeric())
            && (at + p.len() == text.len() || !text[at + p.len()].is_ascii_alphanumeric()));
        let contains = |text: &[u8], p: &[u8]| text.windows(p.len().max(1)).any(|w| w == p) || p.is_empty();
        let lines: Vec<&[u8]> = pattern.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
            ("contain", brute(&*db, capacity, |k| contains(k, &pattern))),
            ("containcase", brute(&*db, capacity, |k| contains(&lower(k), &lower(&pattern)))),
            ("containword", brute(&*db, capacity, |k| word(k, &pattern))),
            ("containcaseword", brute(&*db, capacity, |k| word(&lower(k), &lower(&pattern)))),
            ("contain*", brute(&*db, capacity, |k| lines.iter().any(|l| contains(k, l)))),
            ("containcaseword*", brute(&*db, capacity, |k| lines.iter().any(|l| word(&lower(k), &lower(l))))),
            ("begin", brute(&*db, capacity, |k| k.starts_with(&pattern))),
            ("end", brute(&*db, capacity, |k| k.ends_with(&pattern))),
        ];
        for (mode, expected) in cases {
            prop_assert_eq!(db.search(mode.parse().unwrap(), &pattern, capacity).unwrap(), expected, "{}", mode);
        }
        // A regex of the pattern's text, escaped, finds what contain finds.
        #[cfg(feature = "regex")]
        if let Ok(text) = std::str::from_utf8(&pattern) {
            let escaped = regex::escape(text);
            prop_assert_eq!(db.search(SearchMode::Regex, escaped.as_bytes(), capacity).unwrap(),
                brute(&*db, capacity, |k| contains(k, &pattern)));
        }
        for (mode, chars) in [(SearchMode::EditBinary, false), (SearchMode::Edit, true)] {
            let mut all = brute(&*db, 0, |_| true);
            let distance = |k: &[u8]| if chars {
                let a: Vec<char> = String::from_utf8_lossy(&pattern).chars().collect();
                let b: Vec<char> = String::from_utf8_lossy(k).chars().collect();
                lev(&a, &b)
            } else { lev(&pattern, k) };
            all.sort_by(|a, b| (distance(a), a).cmp(&(distance(b), b)));
            all.truncate(if capacity == 0 { usize::MAX } else { capacity });
            prop_assert_eq!(db.search(mode, &pattern, capacity).unwrap(), all, "{}", mode);
        }
        if ordered {
            let all = brute(&*db, 0, |_| true);
            for inclusive in [false, true] {
                let mut up: Vec<Vec<u8>> = all.iter().filter(|k| **k > pattern || (inclusive && **k == pattern)).cloned().collect();
                up.truncate(if capacity == 0 { usize::MAX } else { capacity });
                prop_assert_eq!(db.search(SearchMode::Upper { inclusive }, &pattern, capacity).unwrap(), up);
                let mut down: Vec<Vec<u8>> = all.iter().rev().filter(|k| **k < pattern || (inclusive && **k == pattern)).cloned().collect();
                down.truncate(if capacity == 0 { usize::MAX } else { capacity });
                prop_assert_eq!(db.search(SearchMode::Lower { inclusive }, &pattern, capacity).unwrap(), down);
            }
        } else {
            let err = db.search(SearchMode::Upper { inclusive: false }, &pattern, capacity).unwrap_err();
            prop_assert!(err.message().contains("ordered"), "{}", err);
        }
    }
}

#[test]
fn search_works_on_every_class_and_refuses_a_bad_regex() {
    for params in CLASSES {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir, params);
        for key in ["apple", "apricot", "grape", "pineapple", "日本", "日本語"] {
            db.set(key.as_bytes(), b"v").unwrap();
        }
        settle(&db, params);
        let mut found = db.search(SearchMode::CONTAIN, b"apple", 0).unwrap();
        found.sort();
        assert_eq!(found, [b"apple".to_vec(), b"pineapple".to_vec()], "{params}");
        assert_eq!(
            db.search(SearchMode::Edit, "日本X".as_bytes(), 2).unwrap(),
            ["日本".as_bytes(), "日本語".as_bytes()],
            "{params}"
        );
        #[cfg(feature = "regex")]
        {
            let mut found = db.search(SearchMode::Regex, b"^a.*t$|^g", 0).unwrap();
            found.sort();
            assert_eq!(found, [b"apricot".to_vec(), b"grape".to_vec()], "{params}");
            let err = db.search(SearchMode::Regex, b"(", 0).unwrap_err();
            assert!(err.message().contains("invalid regular expression"), "{params}: {err}");
        }
        #[cfg(not(feature = "regex"))]
        {
            let err = db.search(SearchMode::Regex, b"^a", 0).unwrap_err();
            assert!(err.message().contains("Cargo feature `regex`"), "{params}: {err}");
        }
        db.close().unwrap();
    }
}

#[test]
fn flat_records_and_key_lines_carry_every_record_of_every_class() {
    for params in CLASSES {
        let dir = tempfile::tempdir().unwrap();
        let db = open(&dir, params);
        let records: BTreeMap<Vec<u8>, Vec<u8>> =
            (0..40u64).map(|n| (bytes(n), vec![n as u8; (n * 37 % 300) as usize])).collect();
        for (k, v) in &records {
            db.set(k, v).unwrap();
        }
        db.set(b"", b"").unwrap();
        settle(&db, params);
        let mut file = Vec::new();
        export_to_flat_records(&db, &mut file).unwrap();
        let copy = kuradb::StdTreeDbm::new(&Default::default());
        assert_eq!(import_from_flat_records(&copy, &mut &file[..]).unwrap(), 41, "{params}");
        for (k, v) in &records {
            assert_eq!(copy.get(k).unwrap().as_ref(), Some(v), "{params}");
        }
        assert_eq!(copy.get(b"").unwrap(), Some(Vec::new()));
        let mut lines = Vec::new();
        export_keys_as_lines(&db, &mut lines).unwrap();
        let mut keys: Vec<&[u8]> = lines.split(|&b| b == b'\n').collect();
        assert_eq!(keys.pop(), Some(&b""[..]), "{params}: every line ends");
        keys.sort();
        let mut expected: Vec<&[u8]> = records.keys().map(|k| &k[..]).chain([&b""[..]]).collect();
        expected.sort();
        assert_eq!(keys, expected, "{params}");
        // A cut file is refused, naming the problem, after the records before the cut.
        let cut = &file[..file.len() - 1];
        let err = import_from_flat_records(&kuradb::StdHashDbm::new(&Default::default()), &mut &cut[..])
            .unwrap_err();
        assert!(err.message().contains("damaged"), "{params}: {err}");
        db.close().unwrap();
    }
}
