//! A skip database shared by threads: readers running while another thread
//! queues batches and synchronizes see only whole synchronized states;
//! writers setting and removing keys of their own and shared keys, with
//! synchronizations from several threads, end in the state their updates
//! determine (each thread's records of a shared key in its order); and a
//! cursor held across synchronizations finds its key again in each new file.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
use kuradb::dbm::{Access, Action, Cursor, Dbm, Durability};
use kuradb::file::FileSpec;

fn specs() -> Vec<(&'static str, FileSpec)> {
    vec![("mmap", FileSpec::default()), ("pos-para", FileSpec::parse("pos-para").expect("spec"))]
}

const BATCHES: u64 = 40;
const PER_BATCH: u64 = 250;
const COUNTER: &[u8] = b"counter";

/// The keys of batch `b` spread among the keys of the others, so that every
/// new file puts records between the ones a walking cursor has passed.
fn batch_key(batch: u64, i: u64) -> Vec<u8> {
    format!("k{i:04}-b{batch:03}").into_bytes()
}

fn batch_of(key: &[u8]) -> u64 {
    let text = std::str::from_utf8(key).expect("text");
    text.rsplit_once("-b").expect("a batch key").1.parse().expect("a number")
}

fn counter(db: &SkipDbm) -> u64 {
    let value = db.get(COUNTER).expect("get the counter").expect("the counter exists");
    String::from_utf8(value).expect("text").parse().expect("a number")
}

/// Checks one walk of one snapshot: batches 0 to N whole, N the counter.
fn check_state(records: &[(Vec<u8>, Vec<u8>)], what: &str) -> u64 {
    let n = records
        .iter()
        .find(|(k, _)| k == COUNTER)
        .map(|(_, v)| std::str::from_utf8(v).expect("text").parse::<u64>().expect("a number"))
        .unwrap_or_else(|| panic!("{what}: no counter"));
    assert_eq!(records.len() as u64, (n + 1) * PER_BATCH + 1, "{what}: records of a state with counter {n}");
    for (key, value) in records.iter().filter(|(k, _)| k != COUNTER) {
        let batch = batch_of(key);
        assert!(batch <= n, "{what}: {} of a batch after the counter's {n}", String::from_utf8_lossy(key));
        assert_eq!(value, key, "{what}: a value");
    }
    n
}

/// Readers (gets, walks of one snapshot, cursor walks, counts) while a
/// writer adds batch after batch: each batch's keys and the counter saying
/// its number become visible together, at its synchronization.
#[test]
fn readers_see_whole_synchronized_states_during_builds() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = SkipOptions::default()
            .file(spec)
            .reducer(Reducer::Last)
            .sort_mem_size(2048)
            .step_unit(3)
            .max_level(6)
            .max_cached_records(8);
        let db = SkipDbm::open(dir.path().join("threads.skip"), Access::ReadWrite, &options).expect("open");
        let write_batch = |batch: u64| {
            for i in 0..PER_BATCH {
                db.set(&batch_key(batch, i), &batch_key(batch, i)).expect("set");
            }
            db.set(COUNTER, batch.to_string().as_bytes()).expect("set the counter");
            db.synchronize(Durability::Soft).expect("synchronize");
        };
        write_batch(0);
        let done = AtomicBool::new(false);
        let start = Barrier::new(4);
        std::thread::scope(|s| {
            s.spawn(|| {
                start.wait();
                for batch in 1..=BATCHES {
                    write_batch(batch);
                }
                done.store(true, Ordering::SeqCst);
            });
            // Whole walks of one snapshot, and counts.
            s.spawn(|| {
                start.wait();
                let mut last = 0;
                let mut rounds = 0;
                while !done.load(Ordering::SeqCst) || rounds < 3 {
                    let mut records = Vec::new();
                    db.process_each(Access::ReadOnly, &mut |k, v| {
                        records.push((k.to_vec(), v.to_vec()));
                        Action::Keep
                    })
                    .expect("walk");
                    let n = check_state(&records, &format!("[{name}] a walk"));
                    assert!(n >= last, "[{name}] a walk went back from state {last} to {n}");
                    last = n;
                    let count = db.count().expect("count");
                    assert_eq!((count - 1) % PER_BATCH, 0, "[{name}] a count of no state: {count}");
                    rounds += 1;
                }
                eprintln!("[{name}] {rounds} walks of one snapshot");
            });
            // Gets: once the counter says N, every key of batches up to N is
            // there; a key of a later batch means the counter moved on.
            s.spawn(|| {
                start.wait();
                let mut i = 0;
                let mut rounds = 0;
                while !done.load(Ordering::SeqCst) || rounds < 3 {
                    let n = counter(&db);
                    for batch in 0..=n {
                        let key = batch_key(batch, (i + batch) % PER_BATCH);
                        assert_eq!(db.get(&key).expect("get"), Some(key.clone()), "[{name}] counter {n}");
                    }
                    let later = batch_key(n + 1, i % PER_BATCH);
                    if db.get(&later).expect("get").is_some() {
                        assert!(counter(&db) > n, "[{name}] a key of batch {} before its counter", n + 1);
                    }
                    i += 1;
                    rounds += 1;
                }
                eprintln!("[{name}] {rounds} rounds of gets");
            });
            // Cursor walks, which move to each newer file as they go: keys in
            // order, every key of the batches the counter showed at the
            // start, none of a batch the counter had not shown at the end.
            s.spawn(|| {
                start.wait();
                let mut rounds = 0;
                while !done.load(Ordering::SeqCst) || rounds < 3 {
                    let before = counter(&db);
                    let mut cursor = db.cursor();
                    cursor.first().expect("first");
                    let mut seen = Vec::new();
                    while let Some((key, value)) = cursor.get().expect("get") {
                        if key != COUNTER {
                            assert_eq!(value, key, "[{name}] a value");
                            seen.push(key);
                        }
                        cursor.next().expect("next");
                    }
                    let after = counter(&db);
                    assert!(seen.windows(2).all(|w| w[0] < w[1]), "[{name}] a cursor walk out of order");
                    let mut per_batch = BTreeMap::new();
                    for key in &seen {
                        *per_batch.entry(batch_of(key)).or_insert(0u64) += 1;
                    }
                    for batch in 0..=before {
                        assert_eq!(
                            per_batch.get(&batch).copied(),
                            Some(PER_BATCH),
                            "[{name}] a cursor walk missed keys of batch {batch} (counter {before} to {after})"
                        );
                    }
                    assert!(
                        per_batch.keys().all(|&b| b <= after),
                        "[{name}] a cursor walk saw a batch after the counter's {after}"
                    );
                    rounds += 1;
                }
                eprintln!("[{name}] {rounds} cursor walks");
            });
        });
        assert_eq!(counter(&db), BATCHES);
        db.close().expect("close");
    }
}

const WRITERS: usize = 4;
const OWN_KEYS: usize = 300;
const SHARED_KEYS: usize = 10;

/// Writers with keys of their own (set, some removed, some of those set
/// again) and shared keys each writer adds records to in its order, every
/// writer synchronizing now and then. The end state is determined but for
/// the interleaving of different writers' records of a shared key.
#[test]
fn concurrent_writers_end_in_the_state_their_updates_determine() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("writers.skip");
        let options = SkipOptions::default().file(spec).sort_mem_size(4096).step_unit(4);
        let db = SkipDbm::open(&path, Access::ReadWrite, &options).expect("open");
        let start = Barrier::new(WRITERS);
        std::thread::scope(|s| {
            for t in 0..WRITERS {
                let (db, start) = (&db, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..OWN_KEYS {
                        let key = format!("own{t}-{i:04}").into_bytes();
                        db.set(&key, b"first").expect("set");
                        if i % 4 == 0 {
                            db.remove(&key).expect("remove");
                        }
                        if i % 8 == 0 {
                            db.set(&key, b"again").expect("set");
                        }
                        let shared = format!("shared{:02}", (i + t) % SHARED_KEYS).into_bytes();
                        db.set(&shared, format!("t{t}-{i:04}").as_bytes()).expect("set shared");
                        if i % 50 == 49 {
                            db.synchronize(Durability::Soft).expect("synchronize");
                        }
                    }
                });
            }
        });
        db.close().expect("close");
        let db = SkipDbm::open(&path, Access::ReadOnly, &options).expect("reopen");
        let records: Vec<(Vec<u8>, Vec<u8>)> =
            db.range::<&[u8]>(..).expect("range").map(|r| r.expect("record")).collect();
        let mut own = BTreeMap::new();
        let mut shared: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
        for (key, value) in records {
            if key.starts_with(b"own") {
                own.entry(key).or_insert_with(Vec::new).push(value);
            } else {
                shared.entry(key).or_default().push(value);
            }
        }
        for t in 0..WRITERS {
            for i in 0..OWN_KEYS {
                let key = format!("own{t}-{i:04}").into_bytes();
                let expected: Option<Vec<Vec<u8>>> = match (i % 4 == 0, i % 8 == 0) {
                    (_, true) => Some(vec![b"again".to_vec()]),
                    (true, false) => None,
                    _ => Some(vec![b"first".to_vec()]),
                };
                assert_eq!(own.get(&key), expected.as_ref(), "[{name}] {}", String::from_utf8_lossy(&key));
            }
        }
        let present = (0..OWN_KEYS).filter(|i| i % 4 != 0 || i % 8 == 0).count();
        assert_eq!(own.len(), WRITERS * present, "[{name}] own keys");
        assert_eq!(shared.len(), SHARED_KEYS, "[{name}] shared keys");
        for (key, values) in &shared {
            let k: usize = std::str::from_utf8(&key[6..]).expect("text").parse().expect("a number");
            for t in 0..WRITERS {
                let mine: Vec<&Vec<u8>> =
                    values.iter().filter(|v| v.starts_with(format!("t{t}-").as_bytes())).collect();
                let expected: Vec<Vec<u8>> = (0..OWN_KEYS)
                    .filter(|i| (i + t) % SHARED_KEYS == k)
                    .map(|i| format!("t{t}-{i:04}").into_bytes())
                    .collect();
                assert!(
                    mine.iter().copied().eq(expected.iter()),
                    "[{name}] writer {t}'s records of {} are not its updates in order",
                    String::from_utf8_lossy(key)
                );
            }
            assert_eq!(values.len(), WRITERS * OWN_KEYS / SHARED_KEYS, "[{name}] records of a shared key");
        }
    }
}

/// A cursor kept across synchronizations that add records before and after
/// it, remove its neighbours and finally its own key: each move finds its
/// key again in the new file (the first record of the key, or the first
/// after it), walks on correctly, and walks back.
#[test]
fn a_cursor_held_across_synchronizations_finds_its_key_again() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let options = SkipOptions::default().file(spec).step_unit(2).max_level(5).max_cached_records(2);
        let db = SkipDbm::open(dir.path().join("cursor.skip"), Access::ReadWrite, &options).expect("open");
        let key = |n: u32| format!("{n:05}").into_bytes();
        let mut model: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
        for n in (0..1000).step_by(10) {
            db.set(&key(n), b"a").expect("set");
            model.entry(key(n)).or_default().push(b"a".to_vec());
        }
        // Two records of the cursor's key: it stands on the second.
        db.set(&key(500), b"b").expect("set");
        model.entry(key(500)).or_default().push(b"b".to_vec());
        db.synchronize(Durability::Soft).expect("synchronize");
        let mut cursor = db.cursor();
        cursor.jump(&key(500)).expect("jump");
        cursor.next().expect("next");
        assert_eq!(cursor.get().expect("get"), Some((key(500), b"b".to_vec())), "[{name}]");
        let flat = |m: &BTreeMap<Vec<u8>, Vec<Vec<u8>>>| -> Vec<(Vec<u8>, Vec<u8>)> {
            m.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect()
        };
        for round in 0..6u32 {
            let at = cursor.get().expect("get").expect("a record").0;
            // Records on both sides, and the neighbours go.
            for n in [round * 7 + 1, 999 - round, 501 + round, 499 - round] {
                db.set(&key(n), format!("r{round}").as_bytes()).expect("set");
                model.entry(key(n)).or_default().push(format!("r{round}").into_bytes());
            }
            let neighbours: Vec<Vec<u8>> =
                model.range(..at.clone()).rev().take(1).map(|(k, _)| k.clone()).collect();
            for k in &neighbours {
                db.remove(k).expect("remove");
                model.remove(k);
            }
            if round == 4 {
                // The cursor's own key goes: it moves to the first after.
                db.remove(&at).expect("remove");
                model.remove(&at);
            }
            db.synchronize(Durability::Soft).expect("synchronize");
            let records = flat(&model);
            let expect_at = records.iter().position(|(k, _)| *k >= at).expect("a record after");
            let what = format!("[{name}] round {round} at {}", String::from_utf8_lossy(&at));
            assert_eq!(cursor.get().expect("get"), Some(records[expect_at].clone()), "{what}: found again");
            cursor.next().expect("next");
            assert_eq!(cursor.get().expect("get"), records.get(expect_at + 1).cloned(), "{what}: the next");
            cursor.previous().expect("previous");
            cursor.previous().expect("previous");
            let before = expect_at.checked_sub(1).map(|i| records[i].clone());
            assert_eq!(cursor.get().expect("get"), before, "{what}: the previous");
            cursor.next().expect("next");
            // Walk one on, to stand somewhere else next round.
            cursor.next().expect("next");
        }
        // The rest of the walk matches the file.
        let at = cursor.get().expect("get").expect("a record");
        let records = flat(&model);
        let from = records.iter().position(|r| *r == at).expect("the cursor's record");
        let mut rest = Vec::new();
        while let Some(record) = cursor.get().expect("get") {
            rest.push(record);
            cursor.next().expect("next");
        }
        assert_eq!(rest, records[from..], "[{name}] the rest of the walk");
        db.close().expect("close");
    }
}
