//! A process killed while its hash database grows its bucket array by
//! itself (before the copy, during it, at the swap or after) leaves a
//! database that opens holding every value synchronized before the kill, or
//! a value written after it; a reader of the crashed file sees what the
//! next writer's restore makes of it, and that writer removes the growth's
//! temporary file.
//!
//! The writer is this test binary run again for the ignored test
//! [`growth_writer`]: batches of a few hundred sets and removals over a few
//! thousand keys, each batch reported after `synchronize(Durability::Hard)`
//! returned. Every sixth batch first rebuilds the database down to 61
//! buckets, so that the next writes grow it again: a kill in the loop of
//! `common::crash` finds a growth under way often.

mod common;

use std::ops::RangeInclusive;
use std::path::Path;

use common::crash::{self, Crash, Stats};
use common::hash::{self as h, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, RebuildParams, RestoreMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FileKind, FileSpec};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Set to reproduce a run: the seed of the plan and of the kill delays.
const ENV_REPLAY: &str = "KURADB_GROWTH_CRASH_SEED";

/// Keys the writer touches.
const KEYS: usize = 6_000;
/// The bucket count the rebuilds go back to.
const SMALL: u64 = 61;

enum Step {
    Set(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    /// Rebuilds the database with [`SMALL`] buckets.
    Shrink,
}

fn key(k: usize) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// The steps of batch `batch`: 300 sets and 30 removals of random keys, the
/// values naming key, batch and position; every sixth batch starts with a
/// rebuild to [`SMALL`] buckets.
fn plan(seed: u64, batch: u64) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut steps = Vec::new();
    if batch.is_multiple_of(6) {
        steps.push(Step::Shrink);
    }
    for position in 0..330 {
        let k = key(rng.gen_range(0..KEYS));
        if position % 11 == 0 {
            steps.push(Step::Remove(k));
        } else {
            let mut v = format!("{}:b{batch}:s{position}:", String::from_utf8_lossy(&k)).into_bytes();
            v.extend((0..rng.gen_range(0..=120)).map(|i| (i as u64 * 7 + batch) as u8));
            steps.push(Step::Set(k, v));
        }
    }
    steps
}

/// Applies `step` to `model`; answers the key it may have changed.
fn apply(model: &mut Model, step: &Step) -> Option<Vec<u8>> {
    match step {
        Step::Set(k, v) => {
            model.insert(k.clone(), v.clone());
            Some(k.clone())
        }
        Step::Remove(k) => {
            model.remove(k);
            Some(k.clone())
        }
        Step::Shrink => None,
    }
}

struct GrowthCrash {
    name: &'static str,
    options: HashOptions,
}

impl Crash for GrowthCrash {
    type Db = HashDbm;
    type State = Model;

    const WRITER: &'static str = "growth_writer";
    const REPLAY: &'static str = ENV_REPLAY;
    const FILE: &'static str = "growth.kh";
    const KILLS: usize = 8;
    const CONFIGS: usize = 2;
    const DELAY_MS: RangeInclusive<u64> = 20..=400;

    fn config(index: usize) -> GrowthCrash {
        let base = |kind: FileKind| h::options(&FileSpec::new(kind)).num_buckets(SMALL);
        match index {
            0 => GrowthCrash { name: "mmap-para, growing", options: base(FileKind::MmapParallel) },
            _ => GrowthCrash {
                name: "pos-atom block 512 page cache, bucket cache, growing",
                options: base(FileKind::PositionalAtomic)
                    .file(common::spec(FileKind::PositionalAtomic, |s| {
                        s.block_size = 512;
                        s.pagecache = true;
                    }))
                    .cache_buckets(true),
            },
        }
    }

    fn name(&self) -> &str {
        self.name
    }

    fn open(&self, path: &Path, writable: bool) -> kuradb::Result<HashDbm> {
        HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &self.options)
    }

    /// A clean close leaves nothing to restore: a reopen refusing to is the check.
    fn reopen(&self, path: &Path) -> kuradb::Result<HashDbm> {
        HashDbm::open(path, Access::ReadWrite, &self.options.clone().restore(RestoreMode::Refuse))
    }

    fn write(&self, db: &HashDbm, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            match step {
                Step::Set(k, v) => db.set(&k, &v).expect("the writer sets"),
                Step::Remove(k) => {
                    db.remove(&k).expect("the writer removes");
                }
                Step::Shrink => db
                    .rebuild_with(&RebuildParams { num_buckets: Some(SMALL), ..Default::default() })
                    .expect("the writer rebuilds"),
            }
        }
    }

    fn synchronize(&self, db: &HashDbm) {
        db.synchronize(Durability::Hard).expect("the writer synchronizes");
    }

    fn empty(&self) -> Model {
        Model::new()
    }

    fn apply(&self, state: &mut Model, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            apply(state, &step);
        }
    }

    fn read(&self, db: &HashDbm) -> Result<Model, String> {
        h::records(db)
    }

    fn difference(&self, found: &Model, expected: &Model) -> String {
        h::difference(found, expected).unwrap_or_default()
    }

    fn judge(&self, found: &Model, last: &Model, seed: u64, open_batch: u64) -> Result<String, String> {
        let mut allowed = h::Allowed::new();
        let mut during = last.clone();
        for step in plan(seed, open_batch) {
            if let Some(k) = apply(&mut during, &step) {
                let now = during.get(&k).cloned();
                allowed.entry(k).or_default().insert(now);
            }
        }
        h::judge_batch(found, last, &allowed, open_batch)
    }

    fn write_after(&self, db: &HashDbm, state: Model, kill: usize) -> Result<Model, String> {
        h::write_after_kill(db, state, kill)
    }

    fn compare(&self, db: &HashDbm, state: &Model) -> Result<(), String> {
        h::compare(db, state)
    }

    fn leftovers(&self, dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list the directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".grow-tmp"))
            .collect();
        names.sort();
        names
    }

    fn enough(&self, stats: &Stats) -> Result<(), String> {
        // Past a few batches the records outnumber the buckets: growths ran.
        if stats.next_batch < 8 {
            return Err(format!("the writers synchronized {} batches, too few to grow", stats.next_batch));
        }
        Ok(())
    }
}

/// Not a test by itself: the writer process (see `common::crash::writer`).
#[test]
#[ignore = "the child process of the crash tests"]
fn growth_writer() {
    crash::writer::<GrowthCrash>();
}

/// Killed writers of a memory-mapped database that keeps growing lose
/// nothing synchronized.
#[test]
fn killed_writer_while_growing_on_mmap() {
    crash::kill_and_check::<GrowthCrash>(0);
}

/// Killed writers of a database through block I/O, a page cache and a
/// bucket cache, which keeps growing, lose nothing synchronized.
#[test]
fn killed_writer_while_growing_on_block_io_with_caches() {
    crash::kill_and_check::<GrowthCrash>(1);
}
