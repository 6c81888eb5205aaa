//! A process killed at any moment leaves a hash database that opens (restored
//! automatically) holding every value synchronized before the kill, or a
//! value written after it, and nothing that was never written; the restored
//! database then keeps working across a reopen.
//!
//! The writer is this test binary run again for the ignored test
//! [`crash_writer`]: it applies numbered batches of sets, overwrites and
//! removals (and now and then a rebuild or a clear), each value determined by
//! (key, batch, position), and reports each batch after `synchronize(Durability::Hard)`
//! returned. The shared loop of `common::crash` kills it with SIGKILL after
//! a random 5 to 200 ms, and checks the restored file against what each key
//! may hold, as worked out here: its value as of the last reported batch, or
//! any value the next batch wrote it to.

mod common;

use std::ops::RangeInclusive;
use std::path::Path;

use common::crash::{self, Crash};
use common::hash::{self as h, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCompMode, RestoreMode, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FileKind, FileSpec};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Set to reproduce a run: the seed of the plan and of the kill delays.
const ENV_REPLAY: &str = "KURADB_CRASH_SEED";

/// Kills per configuration; six configurations make 54 per run.
const KILLS: usize = 9;
/// Keys the writer touches; few, so that most writes overwrite.
const KEYS: usize = 48;

/// A configuration: a file spec and the tuning of the database on it.
fn config(index: usize) -> (&'static str, HashOptions) {
    let base = |kind: FileKind| h::options(&FileSpec::new(kind)).num_buckets(7);
    match index {
        0 => ("mmap-para, in-place", base(FileKind::MmapParallel)),
        1 => (
            "pos-para, appending, unaligned",
            base(FileKind::PositionalParallel).align_pow(0).update_mode(UpdateMode::Appending),
        ),
        2 => (
            "pos-atom block 512 page cache, in-place, bucket cache, 512-byte alignment",
            base(FileKind::PositionalAtomic)
                .file(common::spec(FileKind::PositionalAtomic, |s| {
                    s.block_size = 512;
                    s.pagecache = true;
                }))
                .align_pow(9)
                .cache_buckets(true),
        ),
        3 => (
            "pos-para block 4096 padding, in-place, unaligned",
            base(FileKind::PositionalParallel)
                .file(common::spec(FileKind::PositionalParallel, |s| {
                    s.block_size = 4096;
                    s.padding = true;
                }))
                .align_pow(0),
        ),
        // The two compressed set-ups (this and the next): alone the values
        // barely compress (their byte run repeats only past 256 bytes), so
        // they are stored raw, flagged, until one of the plan's rebuilds
        // trains a dictionary from the live values (a record of its own),
        // with which they shrink to about a tenth: both stored forms and the
        // dictionary record go through the kills.
        4 => {
            ("mmap-para zstd, in-place", base(FileKind::MmapParallel).record_comp_mode(RecordCompMode::Zstd))
        }
        _ => (
            "pos-para lz4 and encrypted, appending",
            base(FileKind::PositionalParallel)
                .record_comp_mode(RecordCompMode::Lz4)
                .cipher_key("crash test key")
                .update_mode(UpdateMode::Appending),
        ),
    }
}

/// One step of a batch.
#[derive(Clone, Debug)]
enum Step {
    Set(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    /// Rewrites the file: changes no record.
    Rebuild,
    /// Removes every record.
    Clear,
}

fn key(k: usize) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

/// The steps of batch `batch`: 1 to 24 sets and removals of random keys, some
/// keys set twice in a row (the second write may go in place), values 0 to
/// 300 bytes after a prefix naming key, batch and position; about one batch
/// in 15 also rebuilds the database, and one in 60 clears it.
fn plan(seed: u64, batch: u64) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut steps = Vec::new();
    for _ in 0..rng.gen_range(1..=24) {
        if rng.gen_ratio(1, 15 * 12) {
            steps.push(Step::Rebuild);
        }
        if rng.gen_ratio(1, 60 * 12) {
            steps.push(Step::Clear);
        }
        let k = key(rng.gen_range(0..KEYS));
        let writes = if rng.gen_ratio(1, 4) { 0 } else { rng.gen_range(1..=2) };
        if writes == 0 {
            steps.push(Step::Remove(k));
            continue;
        }
        for _ in 0..writes {
            let mut v = format!("{}:b{batch}:s{}:", String::from_utf8_lossy(&k), steps.len()).into_bytes();
            let len = rng.gen_range(0..=300);
            v.extend((0..len).map(|i| (i as u64 * 7 + batch) as u8));
            steps.push(Step::Set(k.clone(), v));
        }
    }
    steps
}

/// Applies `step` to `model`; answers the keys it may have changed.
fn apply(model: &mut Model, step: &Step) -> Vec<Vec<u8>> {
    match step {
        Step::Set(k, v) => {
            model.insert(k.clone(), v.clone());
            vec![k.clone()]
        }
        Step::Remove(k) => {
            model.remove(k);
            vec![k.clone()]
        }
        Step::Rebuild => Vec::new(),
        Step::Clear => std::mem::take(model).into_keys().collect(),
    }
}

/// A configuration of the database under test.
struct HashCrash {
    name: &'static str,
    options: HashOptions,
}

impl Crash for HashCrash {
    type Db = HashDbm;
    type State = Model;

    const WRITER: &'static str = "crash_writer";
    const REPLAY: &'static str = ENV_REPLAY;
    const FILE: &'static str = "crash.kh";
    const KILLS: usize = KILLS;
    const CONFIGS: usize = 6;
    const DELAY_MS: RangeInclusive<u64> = 5..=200;

    fn config(index: usize) -> HashCrash {
        let (name, options) = config(index);
        HashCrash { name, options }
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
                Step::Rebuild => db.rebuild().expect("the writer rebuilds"),
                Step::Clear => db.clear().expect("the writer clears"),
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

    /// Each key holds its value as of the last reported batch, or a value
    /// the next batch wrote it to (or removed it by).
    fn judge(&self, found: &Model, last: &Model, seed: u64, open_batch: u64) -> Result<String, String> {
        let mut allowed = h::Allowed::new();
        let mut during = last.clone();
        for step in plan(seed, open_batch) {
            for k in apply(&mut during, &step) {
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
}

/// Not a test by itself: the writer process (see `common::crash::writer`).
#[test]
#[ignore = "the child process of the crash tests"]
fn crash_writer() {
    crash::writer::<HashCrash>();
}

/// Killed in-place writers on a memory-mapped file (default alignment) lose
/// nothing synchronized.
#[test]
fn killed_in_place_writer_on_mmap() {
    crash::kill_and_check::<HashCrash>(0);
}

/// Killed appending writers on a positional file lose nothing synchronized.
#[test]
fn killed_appending_writer_on_positional_file() {
    crash::kill_and_check::<HashCrash>(1);
}

/// Killed in-place writers through atomic block I/O, a page cache and a
/// bucket cache, records aligned to the block, lose nothing synchronized.
#[test]
fn killed_in_place_writer_on_block_io_with_caches() {
    crash::kill_and_check::<HashCrash>(2);
}

/// Killed in-place writers of unaligned records on parallel 4 KiB block I/O
/// with padding lose nothing synchronized.
#[test]
fn killed_in_place_writer_on_block_io_with_padding() {
    crash::kill_and_check::<HashCrash>(3);
}

/// Killed in-place writers of zstd-compressed values, whose rebuilds write
/// dictionaries, lose nothing synchronized.
#[test]
#[cfg(feature = "zstd")]
fn killed_in_place_writer_of_compressed_values() {
    crash::kill_and_check::<HashCrash>(4);
}

/// Killed appending writers of lz4-compressed, encrypted values lose nothing
/// synchronized.
#[test]
#[cfg(all(feature = "lz4", feature = "cipher"))]
fn killed_appending_writer_of_encrypted_values() {
    crash::kill_and_check::<HashCrash>(5);
}
