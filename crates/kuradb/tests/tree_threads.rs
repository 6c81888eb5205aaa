//! The tree database under threads: writers on disjoint and shared keys with
//! tiny pages (so splits and merges race with other leaves' updates), then a
//! check against each thread's last writes and of the tree's consistency;
//! and readers scanning ranges and walking cursors while writers write.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};

use common::hash::{show, Model};
use common::tree::{self as t, Record};
use kuradb::dbm::tree::{KeyComparator, TreeDbm};
use kuradb::dbm::{Access, Cursor, Dbm, Durability, Edge};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 4;

fn specs() -> Vec<(&'static str, kuradb::file::FileSpec)> {
    common::hash::specs()
        .into_iter()
        .filter(|(n, _)| ["mmap-para", "pos-para", "pos-atom-block512-pagecache"].contains(n))
        .collect()
}

/// A key of thread `th` (its own) or shared (`th == None`), spelled for `cmp`.
fn key(cmp: KeyComparator, th: Option<usize>, i: u32) -> Vec<u8> {
    let numeric = !matches!(cmp, KeyComparator::Lexical | KeyComparator::LexicalReverse);
    match (th, numeric) {
        (Some(th), false) => format!("t{th}-{i:04}").into_bytes(),
        (None, false) => format!("shared-{i:03}").into_bytes(),
        // Numbers: thread th owns th*10000+i, shared keys are negative.
        (Some(th), true) => format!("{}", th as u32 * 10_000 + i).into_bytes(),
        (None, true) => format!("-{i}").into_bytes(),
    }
}

fn run_writers(name: &str, cmp: KeyComparator, seed: u64) {
    let what = format!("[{name} {} seed {seed}]", cmp.name());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("threads.kt");
    let spec = specs().into_iter().find(|(n, _)| *n == name).expect("spec").1;
    let options = t::options(&spec, cmp, 128, 4, 8, 31);
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let models: Vec<Model> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|th| {
                let db = &db;
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed + th as u64);
                    let mut own = Model::new();
                    for step in 0..3000u32 {
                        let shared = rng.gen_ratio(1, 4);
                        let k = if shared {
                            key(cmp, None, rng.gen_range(0..60))
                        } else {
                            key(cmp, Some(th), rng.gen_range(0..400))
                        };
                        if rng.gen_ratio(1, 3) {
                            db.remove(&k).expect("remove");
                            if !shared {
                                own.remove(&k);
                            }
                        } else {
                            let v = format!("{th}:{step}:{}", "x".repeat(rng.gen_range(0..30))).into_bytes();
                            // set_multi applies its pairs in order: when `other`
                            // is `k`, its value is the one that stays.
                            let also = rng.gen_ratio(1, 10).then(|| {
                                (
                                    key(cmp, Some(th), rng.gen_range(0..400)),
                                    format!("{th}:{step}:m").into_bytes(),
                                )
                            });
                            match &also {
                                Some((other, ov)) => {
                                    db.set_multi(&[(&k, &v), (other, ov)]).expect("set_multi")
                                }
                                None => db.set(&k, &v).expect("set"),
                            }
                            if !shared {
                                own.insert(k, v);
                            }
                            if let Some((other, ov)) = also {
                                own.insert(other, ov);
                            }
                        }
                        if step % 1000 == 999 && th == 0 {
                            db.synchronize(Durability::Soft).expect("synchronize");
                        }
                    }
                    own
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a writer panicked")).collect()
    });
    let check = |db: &TreeDbm, when: &str| {
        let all = t::self_consistent(db, cmp).unwrap_or_else(|e| panic!("{what} {when}: {e}"));
        let found: BTreeMap<Vec<u8>, Vec<u8>> = all.into_iter().collect();
        for (th, own) in models.iter().enumerate() {
            let keys: BTreeSet<Vec<u8>> = (0..400).map(|i| key(cmp, Some(th), i)).collect();
            let mine: Model = found
                .iter()
                .filter(|(k, _)| keys.contains(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if let Some((k, v)) = own.iter().find(|(k, v)| mine.get(*k) != Some(*v)) {
                panic!(
                    "{what} {when}: thread {th} last wrote {} = {}, the tree has {:?}",
                    show(k),
                    show(v),
                    mine.get(k).map(|v| show(v))
                );
            }
            if let Some(k) = mine.keys().find(|k| !own.contains_key(*k)) {
                panic!("{what} {when}: thread {th} removed {} last, the tree has it", show(k));
            }
        }
        // Shared keys hold a value some thread wrote for that key, or nothing.
        for i in 0..60 {
            if let Some(v) = found.get(&key(cmp, None, i)) {
                let th = v.split(|b| *b == b':').next().and_then(|t| std::str::from_utf8(t).ok());
                assert!(
                    th.is_some_and(|t| t.parse::<usize>().is_ok_and(|t| t < THREADS)),
                    "{what} {when}: shared key {i} holds {}",
                    show(v)
                );
            }
        }
        assert!(db.is_healthy(), "{what} {when}: unhealthy");
    };
    check(&db, "after the writers");
    db.close().expect("close");
    let db = TreeDbm::open(&path, Access::ReadOnly, &options).expect("reopen");
    check(&db, "after reopening");
    db.close().expect("close");
}

/// Writers on disjoint and shared keys leave each thread's last writes and
/// a consistent tree, on every spec, in lexical and a numeric order.
#[test]
fn writers_on_disjoint_and_shared_keys() {
    let seed: u64 =
        std::env::var("KURA_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    for (name, _) in specs() {
        for cmp in [KeyComparator::Lexical, KeyComparator::DecimalReverse] {
            run_writers(name, cmp, seed);
        }
    }
}

/// Readers scan random ranges and walk cursors both ways while writers write:
/// every scan is sorted, in its bounds, and never fails.
#[test]
fn readers_scan_while_writers_write() {
    let seed: u64 = rand::random();
    let cmp = KeyComparator::Lexical;
    for (name, spec) in specs() {
        let what = format!("[{name} seed {seed}]");
        let dir = tempfile::tempdir().expect("tempdir");
        let db =
            TreeDbm::open(dir.path().join("rw.kt"), Access::ReadWrite, &t::options(&spec, cmp, 96, 3, 4, 13))
                .expect("open");
        // Some records that are never touched: every scan must see them. The
        // last is above every key the writers touch (k000 to k499), so that
        // a backward walk always has one above its start (see below).
        let fixed: Vec<Vec<u8>> = (0..=20).map(|i| format!("k{:03}~fixed", i * 25).into_bytes()).collect();
        for k in &fixed {
            db.set(k, b"fixed").expect("set");
        }
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..2)
                .map(|th| {
                    let (db, stop) = (&db, &stop);
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(seed ^ th);
                        let mut n = 0u32;
                        while !stop.load(Ordering::Relaxed) && n < 20_000 {
                            n += 1;
                            let k = format!("k{:03}", rng.gen_range(0..500)).into_bytes();
                            if rng.gen_ratio(2, 5) {
                                db.remove(&k).expect("remove");
                            } else {
                                db.set(&k, &vec![b'w'; rng.gen_range(0..40)]).expect("set");
                            }
                        }
                    })
                })
                .collect();
            let readers: Vec<_> = (0..2)
                .map(|th| {
                    let (db, fixed, what) = (&db, &fixed, &what);
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(seed ^ (th + 10));
                        for round in 0..150 {
                            let a = format!("k{:03}", rng.gen_range(0..500)).into_bytes();
                            let b = format!("k{:03}", rng.gen_range(0..500)).into_bytes();
                            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                            let got: Vec<Record> = db
                                .range(lo.clone()..hi.clone())
                                .expect("range")
                                .collect::<kuradb::Result<_>>()
                                .unwrap_or_else(|e| panic!("{what} reader {th} round {round}: scan: {e}"));
                            t::check_sorted("concurrent scan", &got, cmp)
                                .unwrap_or_else(|e| panic!("{what} reader {th}: {e}"));
                            assert!(
                                got.iter().all(|(k, _)| *k >= lo && *k < hi),
                                "{what}: a scan left its bounds"
                            );
                            for f in fixed.iter().filter(|f| **f >= lo && **f < hi) {
                                assert!(got.iter().any(|(k, _)| k == f), "{what}: a scan missed {}", show(f));
                            }
                            // A cursor walk backward from the end of the range. A
                            // record removed between a previous and the get after
                            // it sends the cursor to the next one, so the walk may
                            // stay or step up a little, but never above a key that
                            // is never removed once it has reached it, and it
                            // never skips one of those. The record jump_lower found
                            // may be gone by the first get too, so the walk may
                            // start above `hi`, but not above the first fixed key
                            // at or after it. Without a fixed key above `hi` the
                            // walk could end at once: a removal of its first
                            // record, with none left after it, leaves the cursor
                            // past the last record.
                            let mut c = db.cursor();
                            c.jump_lower(&hi, Edge::Exclusive).expect("jump_lower");
                            let mut ceiling: Vec<u8> = fixed
                                .iter()
                                .find(|f| **f >= hi)
                                .cloned()
                                .expect("a fixed key above every hi");
                            let mut seen_fixed = Vec::new();
                            let mut steps = 0;
                            while let Some((k, _)) = c.get().expect("cursor get") {
                                if k < lo || steps > 5000 {
                                    break;
                                }
                                steps += 1;
                                assert!(
                                    k <= ceiling,
                                    "{what}: a backward walk went from {} up to {}",
                                    show(&ceiling),
                                    show(&k)
                                );
                                if fixed.contains(&k) {
                                    if k < hi && seen_fixed.last() != Some(&k) {
                                        seen_fixed.push(k.clone());
                                    }
                                    ceiling = k;
                                }
                                c.previous().expect("previous");
                            }
                            if steps <= 5000 {
                                let want: Vec<&Vec<u8>> =
                                    fixed.iter().rev().filter(|f| **f >= lo && **f < hi).collect();
                                let seen: Vec<&Vec<u8>> = seen_fixed.iter().collect();
                                assert_eq!(seen, want, "{what}: a backward walk's fixed keys");
                            }
                        }
                    })
                })
                .collect();
            for r in readers {
                r.join().expect("a reader panicked");
            }
            stop.store(true, Ordering::Relaxed);
            for w in writers {
                w.join().expect("a writer panicked");
            }
        });
        let all = t::self_consistent(&db, cmp).unwrap_or_else(|e| panic!("{what} at the end: {e}"));
        for f in &fixed {
            assert!(all.iter().any(|(k, _)| k == f), "{what}: {} lost", show(f));
        }
        db.close().expect("close");
    }
}

/// The checks above catch an inconsistency: the sortedness check refuses
/// records out of order.
#[test]
fn the_checks_catch_disorder() {
    let records: Vec<Record> = vec![(b"b".to_vec(), vec![]), (b"a".to_vec(), vec![])];
    assert!(t::check_sorted("x", &records, KeyComparator::Lexical).is_err());
    assert!(t::check_sorted("x", &records, KeyComparator::LexicalReverse).is_ok());
}
