//! The tree's batched lookups (`get_multi`, `contains_multi`, and the
//! reads behind `set_multi` and `remove_multi`, which load the leaves a
//! call needs together) against lone lookups and a model: random trees of
//! several levels (tiny pages), a node cache so small that batches miss
//! and must be cut into runs, duplicate keys in a batch, every kind of
//! comparator, on memory mapping, positional calls and direct I/O through
//! a page cache; a writer changing the tree while readers batch; and the
//! count of store reads a batch of cold leaves costs.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use common::hash::{show, Model};
use kuradb::caching::ThreadCacheCounts;
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn specs() -> Vec<(&'static str, FileSpec)> {
    common::hash::specs()
        .into_iter()
        .filter(|(n, _)| ["mmap-para", "pos-para", "pos-para-direct512-pagecache"].contains(n))
        .collect()
}

/// Key `n` of the pool, spelled so that `cmp` orders it (numbers for the
/// numeric comparators).
fn key(cmp: KeyComparator, n: u16) -> Vec<u8> {
    match cmp {
        KeyComparator::Lexical | KeyComparator::LexicalReverse => {
            format!("k{:05}", n.wrapping_mul(7919)).into_bytes()
        }
        _ => format!("{n}").into_bytes(),
    }
}

fn inspected(db: &TreeDbm, name: &str) -> u64 {
    let found = db.inspect().unwrap().into_iter().find(|(k, _)| k == name);
    found.unwrap_or_else(|| panic!("inspect has no {name}")).1.parse().unwrap()
}

/// One step of a case: a batch of pool keys, read or changed.
#[derive(Clone, Debug)]
enum Step {
    Get(Vec<u16>),
    Set(Vec<u16>, u8),
    Remove(Vec<u16>),
    Reopen,
}

fn step() -> impl Strategy<Value = Step> {
    let keys = || prop::collection::vec(0u16..300, 0..40);
    prop_oneof![
        6 => keys().prop_map(Step::Get),
        2 => (keys(), any::<u8>()).prop_map(|(k, v)| Step::Set(k, v)),
        2 => keys().prop_map(Step::Remove),
        1 => Just(Step::Reopen),
    ]
}

/// A case: the tree's tuning, its records, then the steps.
#[derive(Clone, Debug)]
struct Case {
    cmp: usize,
    max_cached_pages: usize,
    records: Vec<(u16, u8)>,
    steps: Vec<Step>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0usize..4,
        1usize..8,
        prop::collection::vec((0u16..300, any::<u8>()), 0..250),
        prop::collection::vec(step(), 1..12),
    )
        .prop_map(|(cmp, max_cached_pages, records, steps)| Case {
            cmp,
            max_cached_pages,
            records,
            steps,
        })
}

fn value(v: u8, n: u16) -> Vec<u8> {
    // Values of several sizes, so that leaves split at different counts.
    vec![b'a' + v % 26; 1 + (usize::from(v) + usize::from(n)) % 40]
}

fn run_case(spec: &FileSpec, case: &Case) -> Result<(), TestCaseError> {
    let cmp = [
        KeyComparator::Lexical,
        KeyComparator::LexicalReverse,
        KeyComparator::Decimal,
        KeyComparator::DecimalReverse,
    ][case.cmp];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    let options = common::tree::options(spec, cmp, 256, 4, case.max_cached_pages, 31);
    let open = || TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
    let mut db = open();
    let mut model = Model::new();
    for &(n, v) in &case.records {
        db.set(&key(cmp, n), &value(v, n)).unwrap();
        model.insert(key(cmp, n), value(v, n));
    }
    for step in &case.steps {
        match step {
            Step::Get(ns) => {
                let keys: Vec<Vec<u8>> = ns.iter().map(|&n| key(cmp, n)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let batched = db.get_multi(&refs).unwrap();
                let found = db.contains_multi(&refs).unwrap();
                for (i, k) in keys.iter().enumerate() {
                    let lone = db.get(k).unwrap();
                    let expected = model.get(k).cloned();
                    prop_assert_eq!(&batched[i], &expected, "get_multi of {}", show(k));
                    prop_assert_eq!(&lone, &expected, "get of {}", show(k));
                    prop_assert_eq!(found[i], expected.is_some(), "contains_multi of {}", show(k));
                }
            }
            Step::Set(ns, v) => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> =
                    ns.iter().map(|&n| (key(cmp, n), value(*v, n))).collect();
                let refs: Vec<(&[u8], &[u8])> =
                    pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
                db.set_multi(&refs).unwrap();
                model.extend(pairs);
            }
            Step::Remove(ns) => {
                let keys: Vec<Vec<u8>> = ns.iter().map(|&n| key(cmp, n)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let present: std::collections::BTreeSet<&Vec<u8>> =
                    keys.iter().filter(|k| model.contains_key(*k)).collect();
                let removed = db.remove_multi(&refs).unwrap();
                prop_assert_eq!(removed, present.len(), "remove_multi of {} keys", keys.len());
                keys.iter().for_each(|k| drop(model.remove(k)));
            }
            Step::Reopen => {
                db.close().unwrap();
                db = open();
            }
        }
        let cached = inspected(&db, "cached_pages");
        prop_assert!(
            cached <= case.max_cached_pages as u64,
            "{cached} nodes cached past {}",
            case.max_cached_pages
        );
    }
    let all = common::hash::records(&db).map_err(TestCaseError::fail)?;
    prop_assert_eq!(all, model);
    db.close().unwrap();
    Ok(())
}

#[test]
fn batched_and_lone_lookups_agree() {
    for (name, spec) in specs() {
        let mut runner =
            TestRunner::new(Config { cases: 16, failure_persistence: None, ..Config::default() });
        runner.run(&case(), |case| run_case(&spec, &case)).unwrap_or_else(|e| panic!("[{name}] {e}"));
    }
}

/// A batch of keys in N leaves none of which is cached costs one
/// multi-key read of the store for the N leaves, and no other read; the
/// same batch again, none. A cache smaller than the batch's leaves cuts it
/// into runs, and keeps its cap.
#[test]
fn cold_leaves_load_in_one_multi_key_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    for max_cached_pages in [1000, 8] {
        let options = TreeOptions::default().max_page_size(1024).max_cached_pages(max_cached_pages);
        let db = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
        for i in 0..400u32 {
            db.set(format!("{i:05}").as_bytes(), &[b'v'; 100]).unwrap();
        }
        db.close().unwrap();
        let db = TreeDbm::open(&path, Access::ReadOnly, &options).unwrap();
        assert_eq!(inspected(&db, "tree_level"), 2);
        // The root, and one leaf: the batch then needs no inner node.
        assert!(db.get(b"00000").unwrap().is_some());
        let keys: Vec<Vec<u8>> = (1..50u32).map(|i| format!("{:05}", i * 8).into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let before = (
            inspected(&db, "node_reads"),
            inspected(&db, "node_read_batches"),
            inspected(&db, "node_batch_reads"),
        );
        ThreadCacheCounts::take();
        assert!(db.contains_multi(&refs).unwrap().iter().all(|&f| f));
        let misses = ThreadCacheCounts::take().node_misses;
        let reads = inspected(&db, "node_reads") - before.0;
        let batches = inspected(&db, "node_read_batches") - before.1;
        let batched = inspected(&db, "node_batch_reads") - before.2;
        assert!(misses >= 40, "{misses} leaves missed: the keys span fewer leaves than meant");
        if max_cached_pages == 1000 {
            assert_eq!(reads, 0, "leaves read one by one");
            assert_eq!(batched, misses, "leaves read by batches");
            assert_eq!(batches, 1, "multi-key reads for {misses} cold leaves");
            ThreadCacheCounts::take();
            assert_eq!(db.get_multi(&refs).unwrap().iter().flatten().count(), keys.len());
            assert_eq!(ThreadCacheCounts::take().node_misses, 0, "misses of cached leaves");
        } else {
            // Runs of at most one leaf per cache shard (8 shards of one):
            // a run of one leaf reads it as a lone load does.
            assert_eq!(reads + batched, misses, "leaves read");
            assert!(
                batches >= 1 && batches + reads >= misses.div_ceil(8),
                "{batches} multi-key reads for {misses} leaves"
            );
            assert!(inspected(&db, "cached_pages") <= 8);
        }
        db.close().unwrap();
    }
}

/// Readers' batches while a writer sets pairs of keys together and removes
/// them together, on tiny pages and a tiny cache (so splits, merges and
/// evictions run between the batches): each batch sees both keys of a pair
/// alike (it is atomic), values the writer wrote, and the untouched keys as
/// they were; at the end the tree equals the writer's model.
#[test]
fn batches_with_a_concurrent_writer() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().unwrap();
        let options = common::tree::options(&spec, KeyComparator::Lexical, 256, 4, 6, 31);
        let db = TreeDbm::open(dir.path().join("casket.kt"), Access::ReadWrite, &options).unwrap();
        let stable = |i: u32| format!("s{i:04}").into_bytes();
        let pair = |i: u32, half: u8| format!("p{i:03}{}", half as char).into_bytes();
        for i in 0..300 {
            db.set(&stable(i), &stable(i)).unwrap();
        }
        let done = AtomicBool::new(false);
        let model = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut rng = SmallRng::seed_from_u64(7);
                let mut model: BTreeMap<u32, u32> = BTreeMap::new();
                // Fewer on direct I/O, where each of the readers' misses waits on the device.
                for round in 0..if spec.direct { 60 } else { 400u32 } {
                    let i = rng.gen_range(0..100);
                    if rng.gen_bool(0.3) {
                        let (a, b) = (pair(i, b'a'), pair(i, b'b'));
                        if db.remove_multi(&[&a, &b]).is_ok() {
                            model.remove(&i);
                        }
                    } else {
                        let v = format!("{round:08}{}", "x".repeat(round as usize % 30)).into_bytes();
                        db.set_multi(&[(&pair(i, b'a'), &v), (&pair(i, b'b'), &v)]).unwrap();
                        model.insert(i, round);
                    }
                }
                done.store(true, Ordering::Release);
                model
            });
            for seed in 0..2u64 {
                let (db, done) = (&db, &done);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed);
                    while !done.load(Ordering::Acquire) {
                        let mut keys = Vec::new();
                        for _ in 0..16 {
                            let i = rng.gen_range(0..100);
                            keys.extend([pair(i, b'a'), pair(i, b'b'), stable(rng.gen_range(0..300))]);
                        }
                        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                        let got = db.get_multi(&refs).unwrap();
                        for t in got.chunks(3).zip(keys.chunks(3)) {
                            let ([a, b, s], [ka, _, ks]) = (t.0, t.1) else { unreachable!() };
                            assert_eq!(a, b, "[{name}] pair {} seen half changed", show(ka));
                            assert!(
                                a.as_ref().is_none_or(|v| v.len() >= 8),
                                "[{name}] {} is {a:?}",
                                show(ka)
                            );
                            assert_eq!(s.as_deref(), Some(ks.as_slice()), "[{name}] stable key");
                        }
                    }
                });
            }
            writer.join().unwrap()
        });
        let mut expected: Model = (0..300).map(|i| (stable(i), stable(i))).collect();
        for (i, round) in model {
            let v = format!("{round:08}{}", "x".repeat(round as usize % 30)).into_bytes();
            expected.insert(pair(i, b'a'), v.clone());
            expected.insert(pair(i, b'b'), v);
        }
        assert_eq!(common::hash::records(&db).unwrap(), expected, "[{name}]");
        db.close().unwrap();
    }
}

/// A batch that must evict a changed node to cache its leaves, on a device
/// that refuses writes, answers the write's error (no panic), and the
/// reopened tree (restored, since a write failed) holds every record of
/// the last hard synchronization, as it was then or as changed since.
#[test]
fn a_failed_write_back_in_a_batch_loses_nothing_synchronized() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    let controls = common::power_cut::Controls::default();
    let mut options = TreeOptions::default().max_page_size(256).max_cached_pages(8);
    options.hash.wrap_file = Some(controls.wrapper());
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
    let key = |i: u32| format!("{i:04}").into_bytes();
    let mut synchronized = Model::new();
    for round in 0..2u8 {
        for i in 0..300 {
            db.set(&key(i), &[b'a' + round; 20]).unwrap();
            if round == 0 {
                synchronized.insert(key(i), vec![b'a'; 20]);
            }
        }
        if round == 0 {
            db.synchronize(Durability::Hard).unwrap();
        }
    }
    // The last leaves changed are cached and changed: evicting them writes.
    let keys: Vec<Vec<u8>> = (0..300).step_by(7).map(key).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let control = controls.last_at(&path);
    control.fail_writes_from(1, kuradb::file::FaultKind::Io);
    let failed = db.get_multi(&refs).expect_err("a batch that could not write back a node");
    assert!(failed.to_string().contains("casket.kt"), "{failed}");
    control.heal();
    drop(db);
    let db = TreeDbm::open(&path, Access::ReadOnly, &TreeOptions::default()).unwrap();
    // Every record synchronized is there, as synchronized or as changed
    // since (written back before the failure; lone lookups leave the same).
    let records = common::hash::records(&db).unwrap();
    assert_eq!(records.len(), synchronized.len());
    for (k, v) in &synchronized {
        let found = records.get(k).unwrap_or_else(|| panic!("{} lost", show(k)));
        assert!(found == v || found == &vec![b'b'; 20], "{} is {}", show(k), show(found));
    }
    db.close().unwrap();
}

/// A read-only batch holds the tree shared: while one thread's batch is
/// inside its processor, with its leaves read-locked, another thread's
/// batch, a lone lookup and a lone change of a leaf the first does not
/// hold all finish. (Under the exclusive hold, which every batch took
/// before, each of them waited for the first batch.)
#[test]
fn read_batches_of_many_threads_run_together() {
    let dir = tempfile::tempdir().unwrap();
    let options = TreeOptions::default().max_page_size(256).max_cached_pages(64);
    let db = TreeDbm::open(dir.path().join("casket.kt"), Access::ReadWrite, &options).unwrap();
    let key = |i: u32| format!("{i:04}").into_bytes();
    for i in 0..400 {
        db.set(&key(i), &[b'v'; 20]).unwrap();
    }
    assert!(inspected(&db, "tree_level") >= 2, "the keys fill several leaves");
    let (inside_tx, inside_rx) = std::sync::mpsc::channel();
    let (others_tx, others_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let db = &db;
        s.spawn(move || {
            let (first, second) = (key(0), key(1));
            let mut waited = None;
            db.process_multi(&[&first, &second], Access::ReadOnly, &mut |i, _, value| {
                assert!(value.is_some());
                if i == 0 {
                    inside_tx.send(()).unwrap();
                    waited = Some(others_rx.recv_timeout(std::time::Duration::from_secs(20)).is_ok());
                }
                kuradb::dbm::Action::Keep
            })
            .unwrap();
            assert_eq!(waited, Some(true), "the other calls waited for this batch to end");
        });
        inside_rx.recv().unwrap();
        let (far, farther) = (key(390), key(399));
        assert_eq!(db.get_multi(&[&far, &farther]).unwrap(), vec![Some(vec![b'v'; 20]); 2]);
        assert!(db.get(&key(200)).unwrap().is_some());
        db.set(&far, &[b'w'; 20]).unwrap();
        others_tx.send(()).unwrap();
    });
    assert_eq!(db.get(&key(390)).unwrap(), Some(vec![b'w'; 20]));
    db.close().unwrap();
}

/// Readers' batches under the shared hold while a writer makes lone
/// changes that reshape the tree (tiny pages and cache: splits, merges and
/// evictions between and during the batches) and another sets pairs of
/// keys together: every batch sees both keys of a pair alike, each lone
/// key as absent or as a value the writer wrote, and the untouched keys as
/// they were; nothing waits for ever; at the end the tree is the writers'
/// model and the cache within its cap.
#[test]
fn shared_batches_with_lone_changes_that_reshape_the_tree() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().unwrap();
        let options = common::tree::options(&spec, KeyComparator::Lexical, 256, 4, 48, 31);
        let db = TreeDbm::open(dir.path().join("casket.kt"), Access::ReadWrite, &options).unwrap();
        let stable = |i: u32| format!("s{i:04}").into_bytes();
        let lone = |i: u32| format!("l{i:04}").into_bytes();
        let pair = |i: u32, half: u8| format!("p{i:03}{}", half as char).into_bytes();
        let lone_value = |i: u32, round: u32| format!("{i:04}:{round:06}{}", "y".repeat(round as usize % 40));
        for i in 0..200 {
            db.set(&stable(i), &stable(i)).unwrap();
        }
        let rounds = if spec.direct { 300 } else { 3000u32 };
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let writers_done = std::sync::atomic::AtomicUsize::new(0);
        let (lone_model, pair_model) = std::thread::scope(|s| {
            let (db, writers_done) = (&db, &writers_done);
            let lone_writer = s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(11);
                let mut model = BTreeMap::new();
                for round in 0..rounds {
                    let i = rng.gen_range(0..150);
                    if rng.gen_bool(0.4) {
                        db.remove(&lone(i)).ok();
                        model.remove(&i);
                    } else {
                        db.set(&lone(i), lone_value(i, round).as_bytes()).unwrap();
                        model.insert(i, round);
                    }
                }
                writers_done.fetch_add(1, Ordering::AcqRel);
                model
            });
            let pair_writer = s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(13);
                let mut model = BTreeMap::new();
                for round in 0..rounds / 4 {
                    let i = rng.gen_range(0..50);
                    let v = format!("{round:08}").into_bytes();
                    db.set_multi(&[(&pair(i, b'a'), &v), (&pair(i, b'b'), &v)]).unwrap();
                    model.insert(i, round);
                }
                writers_done.fetch_add(1, Ordering::AcqRel);
                model
            });
            let readers: Vec<_> = (0..3u64)
                .map(|seed| {
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(seed);
                        let mut batches = 0;
                        while writers_done.load(Ordering::Acquire) < 2 || batches < 200 {
                            batches += 1;
                            let mut keys = Vec::new();
                            for _ in 0..3 {
                                let i = rng.gen_range(0..50);
                                keys.extend([pair(i, b'a'), pair(i, b'b'), stable(rng.gen_range(0..200))]);
                                keys.push(lone(rng.gen_range(0..150)));
                            }
                            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                            let got = db.get_multi(&refs).unwrap();
                            for (t, k) in got.chunks(4).zip(keys.chunks(4)) {
                                let ([a, b, st, l], [ka, _, ks, kl]) = (t, k) else { unreachable!() };
                                assert_eq!(a, b, "[{name}] pair {} seen half changed", show(ka));
                                assert_eq!(st.as_deref(), Some(ks.as_slice()), "[{name}] stable key");
                                if let Some(v) = l {
                                    let prefix = format!("{}:", &String::from_utf8_lossy(kl)[1..]);
                                    assert!(
                                        v.starts_with(prefix.as_bytes()),
                                        "[{name}] {} is {}",
                                        show(kl),
                                        show(v)
                                    );
                                }
                            }
                        }
                    })
                })
                .collect();
            // Every call bounds its time: a deadlock fails the test here
            // rather than hanging it.
            let watchdog = s.spawn(move || {
                let finished = done_rx.recv_timeout(std::time::Duration::from_secs(300)).is_ok();
                if !finished {
                    eprintln!("[{name}] the batches and the writers did not finish in 300 s");
                    std::process::abort();
                }
            });
            let models = (lone_writer.join().unwrap(), pair_writer.join().unwrap());
            readers.into_iter().for_each(|r| r.join().unwrap());
            done_tx.send(()).unwrap();
            watchdog.join().unwrap();
            models
        });
        let mut expected: Model = (0..200).map(|i| (stable(i), stable(i))).collect();
        for (i, round) in lone_model {
            expected.insert(lone(i), lone_value(i, round).into_bytes());
        }
        for (i, round) in pair_model {
            expected.insert(pair(i, b'a'), format!("{round:08}").into_bytes());
            expected.insert(pair(i, b'b'), format!("{round:08}").into_bytes());
        }
        assert_eq!(common::hash::records(&db).unwrap(), expected, "[{name}]");
        assert!(inspected(&db, "cached_pages") <= 48, "[{name}] the cache past its cap");
        db.close().unwrap();
    }
}
