//! A process killed at any moment leaves the flat file of an on-memory
//! database (tiny, baby, cache, stdhash, stdtree) exactly as one
//! synchronization wrote it whole: the last one the writer reported, or the
//! next one if it completed unreported. Never half of one, never a file that
//! fails to open; the next writer reads it and keeps working across a reopen.
//!
//! The writer is this test binary run again for the ignored test
//! [`memory_crash_writer`]: it applies numbered batches of sets and removals
//! (now and then a clear) to a few thousand keys, each value determined by
//! the seed, the batch and its position, and synchronizes after each batch,
//! which writes the whole flat file under a temporary name and renames it
//! into place. The shared loop of `common::crash` kills it after a random 5
//! to 150 ms, mostly while it writes the file.

mod common;

use std::ops::RangeInclusive;
use std::path::Path;

use common::crash::{self, Crash};
use common::hash::{self as h, Model};
use kuradb::dbm::class::DbmClass;
use kuradb::dbm::params::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Dbm, Durability};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Set to reproduce a run.
const ENV_REPLAY: &str = "KURADB_MEMORY_CRASH_REPLAY";
/// Kills per class; each class is a file DBM of its own.
const KILLS: usize = 8;
/// Keys the writer touches: enough that writing the flat file takes a while.
const KEYS: usize = 3_000;

/// A configuration: the class, and whether its synchronization is hard (the
/// file and the rename reach the device) or soft.
fn config(index: usize) -> (&'static str, DbmClass, bool) {
    match index {
        0 => ("tiny, hard synchronization", DbmClass::Tiny, true),
        1 => ("baby, hard synchronization", DbmClass::Baby, true),
        2 => ("cache, soft synchronization", DbmClass::Cache, false),
        3 => ("stdhash, soft synchronization", DbmClass::StdHash, false),
        _ => ("stdtree, hard synchronization", DbmClass::StdTree, true),
    }
}

#[derive(Clone, Debug)]
enum Step {
    Set(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Clear,
}

/// Batch `batch`: 1 to 200 sets and removals of random keys, values of 0 to
/// 200 bytes after a prefix naming the batch and position; about one batch
/// in 100 also clears the database.
fn plan(seed: u64, batch: u64) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut steps = Vec::new();
    for _ in 0..rng.gen_range(1..=200) {
        if rng.gen_ratio(1, 100 * 100) {
            steps.push(Step::Clear);
        }
        let k = format!("key{:05}", rng.gen_range(0..KEYS)).into_bytes();
        if rng.gen_ratio(1, 4) {
            steps.push(Step::Remove(k));
        } else {
            let mut v = format!("b{batch}:s{}:", steps.len()).into_bytes();
            v.extend((0..rng.gen_range(0..=200)).map(|i| (i as u64 * 3 + batch) as u8));
            steps.push(Step::Set(k, v));
        }
    }
    steps
}

fn apply(model: &mut Model, step: &Step) {
    match step {
        Step::Set(k, v) => drop(model.insert(k.clone(), v.clone())),
        Step::Remove(k) => drop(model.remove(k)),
        Step::Clear => model.clear(),
    }
}

/// A configuration of the database under test.
struct MemoryCrash {
    name: &'static str,
    class: DbmClass,
    hard: bool,
}

impl Crash for MemoryCrash {
    type Db = PolyDbm;
    type State = Model;

    const WRITER: &'static str = "memory_crash_writer";
    const REPLAY: &'static str = ENV_REPLAY;
    const FILE: &'static str = "crash.flat";
    const KILLS: usize = KILLS;
    /// Each class counts as a file DBM of its own.
    const CONFIGS: usize = 1;
    const DELAY_MS: RangeInclusive<u64> = 5..=150;

    fn config(index: usize) -> MemoryCrash {
        let (name, class, hard) = config(index);
        MemoryCrash { name, class, hard }
    }

    fn name(&self) -> &str {
        self.name
    }

    fn open(&self, path: &Path, writable: bool) -> kuradb::Result<PolyDbm> {
        PolyDbm::open_class(
            self.class,
            Some(path),
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &Params::new(),
        )
    }

    fn reopen(&self, path: &Path) -> kuradb::Result<PolyDbm> {
        self.open(path, false)
    }

    fn write(&self, db: &PolyDbm, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            match step {
                Step::Set(k, v) => db.set(&k, &v).expect("set"),
                Step::Remove(k) => drop(db.remove(&k).expect("remove")),
                Step::Clear => db.clear().expect("clear"),
            }
        }
    }

    fn synchronize(&self, db: &PolyDbm) {
        db.synchronize(if self.hard { Durability::Hard } else { Durability::Soft }).expect("synchronize");
    }

    fn empty(&self) -> Model {
        Model::new()
    }

    fn apply(&self, state: &mut Model, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            apply(state, &step);
        }
    }

    fn read(&self, db: &PolyDbm) -> Result<Model, String> {
        h::records(db)
    }

    fn difference(&self, found: &Model, expected: &Model) -> String {
        h::difference(found, expected).unwrap_or_default()
    }

    /// The file is written whole: the last reported state or the next one.
    fn judge(&self, found: &Model, last: &Model, seed: u64, open_batch: u64) -> Result<String, String> {
        if found == last {
            return Ok("the reported state".to_string());
        }
        let mut next = last.clone();
        self.apply(&mut next, seed, open_batch);
        if *found == next {
            return Ok("the next batch synchronized, unreported".to_string());
        }
        Err(format!(
            "the file is neither the reported state ({}) nor batch {open_batch}'s ({})",
            self.difference(found, last),
            self.difference(found, &next)
        ))
    }

    /// The writes show at once; the close writes the file.
    fn write_after(&self, db: &PolyDbm, mut state: Model, kill: usize) -> Result<Model, String> {
        let marker = format!("marker{kill}").into_bytes();
        db.set(&marker, b"still working").map_err(|e| format!("set after the kill: {e}"))?;
        state.insert(marker, b"still working".to_vec());
        h::compare(db, &state)?;
        Ok(state)
    }

    fn compare(&self, db: &PolyDbm, state: &Model) -> Result<(), String> {
        h::compare(db, state)
    }
}

/// Not a test by itself: the writer process (see `common::crash::writer`).
#[test]
#[ignore = "the child process of the memory crash tests"]
fn memory_crash_writer() {
    crash::writer::<MemoryCrash>();
}

/// Killed TinyDbm writers leave a whole synchronized flat file.
#[test]
fn killed_tiny_writer() {
    crash::kill_and_check::<MemoryCrash>(0);
}

/// Killed BabyDbm writers leave a whole synchronized flat file.
#[test]
fn killed_baby_writer() {
    crash::kill_and_check::<MemoryCrash>(1);
}

/// Killed CacheDbm writers leave a whole synchronized flat file.
#[test]
fn killed_cache_writer() {
    crash::kill_and_check::<MemoryCrash>(2);
}

/// Killed StdHashDbm writers leave a whole synchronized flat file.
#[test]
fn killed_stdhash_writer() {
    crash::kill_and_check::<MemoryCrash>(3);
}

/// Killed StdTreeDbm writers leave a whole synchronized flat file.
#[test]
fn killed_stdtree_writer() {
    crash::kill_and_check::<MemoryCrash>(4);
}
