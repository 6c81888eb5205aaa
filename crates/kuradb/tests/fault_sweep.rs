//! The fault sweep: one fixed workload replayed on every file database with
//! the fault-injecting file failing its N-th operation, for every N (EIO at
//! any operation; ENOSPC and a short write at any changing one), each fault
//! followed either by a clean close or by a power cut; and with a power cut
//! just before and just after every synchronization.
//!
//! After each, the database must reopen (restoring where needed) and hold
//! every record synchronized before the fault and no value never written
//! (after a power cut: exactly a state a synchronization made durable), and
//! take writes again; the call the fault hit must have answered an error,
//! never panicked, and no call may fail without a fault.
//!
//! `cargo test -p kuradb --test fault_sweep` tries a sample of the points
//! (every `STRIDE`-th and the first few of every file, where it is
//! created, on one file spec per database); with
//! `KURA_FAULT_SWEEP=full` it tries every point on three file specs each
//! (memory map, plain positional, atomic block I/O with a page cache).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

use common::hash::{self as h, Model};
use common::power_cut as cut;
use common::sweep::{points, Class, Expect, Point, Switchboard};
use common::tree as t;
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FileSpec, FileWrapper};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Set to `full` for every fault point on every spec.
const ENV_FULL: &str = "KURA_FAULT_SWEEP";
/// The sampled run tries every STRIDE-th fault point.
const STRIDE: u64 = 7;

#[derive(Clone, Copy, Debug)]
enum Step {
    Set(u16, usize),
    Remove(u16),
    Sync(bool),
    Close,
}

/// The workload: sets of values of many sizes (so records move and grow),
/// removals, hard and soft synchronizations, and a close.
fn workload() -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(17);
    let mut steps: Vec<Step> = (0..150)
        .map(|_| match rng.gen_range(0..20) {
            0..=13 => Step::Set(rng.gen_range(0..40), rng.gen_range(0..200)),
            14..=16 => Step::Remove(rng.gen_range(0..40)),
            17..=18 => Step::Sync(true),
            _ => Step::Sync(false),
        })
        .collect();
    steps.push(Step::Close);
    steps
}

fn key(k: u16) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

/// A value no other step writes.
fn value(k: u16, len: usize, step: usize) -> Vec<u8> {
    let mut v = format!("{k}:{step}:").into_bytes();
    v.resize(len.max(v.len()), b'a' + (step % 26) as u8);
    v
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Hash(UpdateMode),
    Tree,
    Skip,
}

/// A database class on a file spec.
struct Subject {
    kind: Kind,
    spec: FileSpec,
}

impl Subject {
    fn name(&self) -> String {
        format!("{:?} on {}", self.kind, self.spec)
    }

    fn hash_options(&self, wrap: Option<FileWrapper>) -> HashOptions {
        let mode = if let Kind::Hash(mode) = self.kind { mode } else { UpdateMode::InPlace };
        HashOptions::default()
            .file(self.spec.clone())
            .num_buckets(31)
            .update_mode(mode)
            .align_pow(3)
            .wrap_file(wrap)
    }

    fn open(&self, path: &Path, wrap: Option<FileWrapper>) -> kuradb::Result<Box<dyn Dbm>> {
        Ok(match self.kind {
            Kind::Hash(_) => Box::new(HashDbm::open(path, Access::ReadWrite, &self.hash_options(wrap))?),
            Kind::Tree => Box::new(TreeDbm::open(path, Access::ReadWrite, &self.tree_options(wrap))?),
            Kind::Skip => {
                let options = SkipOptions::default()
                    .file(self.spec.clone())
                    .sort_mem_size(512)
                    .step_unit(3)
                    .max_level(5)
                    .max_cached_records(4)
                    .reducer(Reducer::Last)
                    .wrap_file(wrap);
                Box::new(SkipDbm::open(path, Access::ReadWrite, &options)?)
            }
        })
    }

    /// Reopens the database without faults and reads every record, checking
    /// a tree's structure on the way.
    fn reopen(&self, path: &Path) -> Result<(Box<dyn Dbm>, Model), String> {
        if self.kind == Kind::Tree {
            let tree = TreeDbm::open(path, Access::ReadWrite, &self.tree_options(None))
                .map_err(|e| format!("reopen: {e}"))?;
            let found = t::self_consistent(&tree, KeyComparator::Lexical)?.into_iter().collect();
            return Ok((Box::new(tree), found));
        }
        let db = self.open(path, None).map_err(|e| format!("reopen: {e}"))?;
        let found = h::records(db.as_ref())?;
        Ok((db, found))
    }

    fn tree_options(&self, wrap: Option<FileWrapper>) -> TreeOptions {
        t::options(&self.spec, KeyComparator::Lexical, 256, 4, 6, 31).hash(self.hash_options(wrap))
    }

    /// Whether a power cut may bring back the state of a soft synchronization.
    fn soft_counts(&self) -> bool {
        self.kind == Kind::Skip
    }

    /// Whether a power cut after a failed synchronization keeps a whole state
    /// (the one before or after it), rather than each record's.
    fn whole_states(&self) -> bool {
        !matches!(self.kind, Kind::Hash(_))
    }
}

/// How a run ended.
struct Run {
    db: Option<Box<dyn Dbm>>,
    expect: Expect,
    /// The step the fault hit (`None`: the open), if it fired.
    faulted: Option<Option<usize>>,
}

/// Runs the workload up to (not including) step `until`, stopping at the
/// first error, which must come from a fault the board injected.
fn run(
    subject: &Subject,
    path: &Path,
    board: &Switchboard,
    steps: &[Step],
    until: usize,
) -> Result<Run, String> {
    let mut expect = Expect::new();
    let db = match subject.open(path, Some(board.wrapper())) {
        Ok(db) => db,
        Err(_) if board.fired() => return Ok(Run { db: None, expect, faulted: Some(None) }),
        Err(e) => return Err(format!("the open failed without a fault: {e}")),
    };
    let mut db = Some(db);
    for (i, step) in steps.iter().enumerate().take(until) {
        let live = db.as_ref().expect("open until closed");
        let result = match *step {
            Step::Set(k, len) => {
                let v = value(k, len, i);
                expect.attempt(&key(k), Some(&v));
                live.set(&key(k), &v).map(|()| expect.done(&key(k), Some(&v)))
            }
            Step::Remove(k) => {
                expect.attempt(&key(k), None);
                live.remove(&key(k)).map(|_| expect.done(&key(k), None))
            }
            Step::Sync(hard) => live
                .synchronize(if hard { Durability::Hard } else { Durability::Soft })
                .map(|()| expect.synchronized(hard, subject.soft_counts())),
            Step::Close => db.take().expect("open").close().map(|()| expect.synchronized(true, false)),
        };
        match result {
            Err(_) if board.fired() => return Ok(Run { db, expect, faulted: Some(Some(i)) }),
            Err(e) => return Err(format!("step {i} {step:?} failed without a fault: {e}")),
            Ok(()) if board.fired() => {
                return Err(format!("step {i} {step:?} met the fault and answered Ok"))
            }
            Ok(()) => {}
        }
    }
    Ok(Run { db, expect, faulted: None })
}

/// Checks that the reopened database holds what `check` allows, then takes
/// writes and a hard synchronization.
fn reopen_and_check(
    subject: &Subject,
    path: &Path,
    check: impl FnOnce(&Model) -> Result<(), String>,
) -> Result<(), String> {
    let (db, found) = subject.reopen(path)?;
    check(&found)?;
    db.set(b"after", b"the fault").map_err(|e| format!("a set after reopening: {e}"))?;
    db.synchronize(Durability::Hard).map_err(|e| format!("a hard synchronization after reopening: {e}"))?;
    db.close().map_err(|e| format!("close after reopening: {e}"))
}

/// One fault at `point`, then a clean close or (with `then_cut`) a power cut.
fn fault_case(subject: &Subject, steps: &[Step], point: Point, then_cut: bool) -> Result<(), String> {
    let dir = common::sweep::scratch();
    let path = dir.path().join("sweep.db");
    let board = Switchboard::armed(point);
    let run = run(subject, &path, &board, steps, steps.len())?;
    let Some(faulted) = run.faulted else {
        return Err("the fault never fired: the workload is not deterministic".into());
    };
    if then_cut {
        board.cut();
    }
    if let Some(db) = run.db {
        // After the fault the close may fail (a poisoned handle), but not panic.
        let _ = db.close();
    }
    board.release();
    let expect = run.expect;
    reopen_and_check(subject, &path, |found| {
        if !then_cut {
            return expect.check_values(found);
        }
        if !subject.whole_states() {
            return expect.check_values(found);
        }
        let syncing = faulted.is_some_and(|i| matches!(steps[i], Step::Sync(true) | Step::Close));
        expect.check_whole(found, syncing.then_some(&expect.live))
    })
    .map_err(|e| format!("after the fault at step {faulted:?}: {e}"))
}

/// A power cut just before (or just after) step `at`, a synchronization.
fn cut_case(subject: &Subject, steps: &[Step], at: usize, after: bool) -> Result<(), String> {
    let dir = common::sweep::scratch();
    let path = dir.path().join("sweep.db");
    let board = Switchboard::default();
    let run = run(subject, &path, &board, steps, at + usize::from(after))?;
    board.cut();
    drop(run.db);
    board.release();
    reopen_and_check(subject, &path, |found| run.expect.check_whole(found, None))
}

/// Tries `case`, turning a panic into a failure.
fn attempt(case: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(case)) {
        Ok(result) => result,
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("panicked: {}", text.unwrap_or_default()))
        }
    }
}

/// Sweeps every class of fault and every power cut over `subject`; answers
/// the failures and prints the points tried.
fn sweep(subject: &Subject, stride: u64, classes: &[Class], cuts: bool) -> Vec<String> {
    let steps = workload();
    let started = Instant::now();
    let dir = common::sweep::scratch();
    let board = Switchboard::default();
    let clean = run(subject, &dir.path().join("sweep.db"), &board, &steps, steps.len())
        .unwrap_or_else(|e| panic!("[{}] the run without faults: {e}", subject.name()));
    assert!(clean.faulted.is_none() && clean.db.is_none(), "[{}] the clean run closed", subject.name());
    let mut failures = Vec::new();
    let mut tried = Vec::new();
    for &class in classes {
        let counts = board.counts(class);
        let all = points(&counts, class, stride);
        for then_cut in [false, true] {
            for point in &all {
                if let Err(e) = attempt(|| fault_case(subject, &steps, *point, then_cut)) {
                    failures.push(format!("[{}] {point:?}, then cut {then_cut}: {e}", subject.name()));
                }
            }
        }
        tried.push(format!(
            "{class:?}: {} points of {} (x2: close, cut)",
            all.len(),
            counts.iter().sum::<u64>()
        ));
    }
    let syncs: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Step::Sync(_) | Step::Close))
        .map(|(i, _)| i)
        .collect();
    for &at in syncs.iter().filter(|_| cuts) {
        for after in [false, true] {
            if let Err(e) = attempt(|| cut_case(subject, &steps, at, after)) {
                failures.push(format!(
                    "[{}] power cut {} step {at}: {e}",
                    subject.name(),
                    if after { "after" } else { "before" }
                ));
            }
        }
    }
    if cuts {
        tried.push(format!("power cut: {} points", syncs.len() * 2));
    }
    eprintln!("[{}] {} in {:.1?}", subject.name(), tried.join(", "), started.elapsed());
    failures
}

/// The specs each database is swept on: one (rotated among databases) in the
/// sampled run, all three in the full one.
fn subjects(kind: Kind, index: usize) -> (Vec<Subject>, u64) {
    let specs = cut::specs();
    if std::env::var(ENV_FULL).is_ok_and(|v| v == "full") {
        (specs.into_iter().map(|spec| Subject { kind, spec }).collect(), 1)
    } else {
        (vec![Subject { kind, spec: specs[index % specs.len()].clone() }], STRIDE)
    }
}

fn check(kind: Kind, index: usize, classes: &[Class], cuts: bool) {
    let (subjects, stride) = subjects(kind, index);
    let failures: Vec<String> = subjects.iter().flat_map(|s| sweep(s, stride, classes, cuts)).collect();
    let shown: Vec<&String> = failures.iter().take(20).collect();
    assert!(
        failures.is_empty(),
        "{} failures, the first {}:\n{}",
        failures.len(),
        shown.len(),
        shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn hash_in_place_survives_every_fault() {
    check(Kind::Hash(UpdateMode::InPlace), 0, &Class::ALL, true);
}

#[test]
fn hash_appending_survives_every_fault() {
    check(Kind::Hash(UpdateMode::Appending), 1, &Class::ALL, true);
}

#[test]
fn tree_survives_every_fault() {
    check(Kind::Tree, 2, &Class::ALL, true);
}

#[test]
fn skip_survives_every_fault() {
    check(Kind::Skip, 0, &Class::ALL, true);
}
