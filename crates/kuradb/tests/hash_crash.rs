//! A process killed at any moment leaves a hash database that opens (restored
//! automatically) holding every value synchronized before the kill, or a
//! value written after it, and nothing that was never written; the restored
//! database then keeps working across a reopen.
//!
//! The writer is this test binary run again for the ignored test
//! [`crash_writer`]: it applies numbered batches of sets, overwrites and
//! removals (and now and then a rebuild or a clear), each value determined by
//! (key, batch, position), and reports
//! "synced N" on stderr only after `synchronize(true)` for batch N returned.
//! The parent kills it with SIGKILL after a random 5 to 200 ms, reads every
//! report it made, works out what each key may hold, checks the restored
//! file, and starts the next writer on the same file. Before the restore,
//! two readers open the crashed file: they must see exactly what the
//! restore then makes of it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::child::{last_synced, ChildTest, Killed};
use common::hash::{self as h, show, show_opt, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, RestoreMode, UpdateMode};
use kuradb::dbm::Dbm;
use kuradb::file::{FileKind, FileSpec};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ENV_PATH: &str = "KURADB_CRASH_TEST_PATH";
const ENV_CONFIG: &str = "KURADB_CRASH_TEST_CONFIG";
const ENV_FIRST: &str = "KURADB_CRASH_TEST_FIRST_BATCH";
const ENV_SEED: &str = "KURADB_CRASH_TEST_SEED";
/// Set to reproduce a run: the seed of the plan and of the kill delays.
const ENV_REPLAY: &str = "KURADB_CRASH_SEED";

/// Kills per configuration; four configurations make 36 per run.
const KILLS: usize = 9;
/// Keys the writer touches; few, so that most writes overwrite.
const KEYS: usize = 48;

/// A configuration: a file spec and the tuning of the database on it.
fn config(index: usize) -> (&'static str, HashOptions) {
    let base = |kind: FileKind| HashOptions { num_buckets: 7, ..h::options(&FileSpec::new(kind)) };
    match index {
        0 => ("mmap-para, in-place", base(FileKind::MmapParallel)),
        1 => (
            "pos-para, appending, unaligned",
            HashOptions {
                align_pow: 0,
                update_mode: UpdateMode::Appending,
                ..base(FileKind::PositionalParallel)
            },
        ),
        2 => (
            "pos-atom block 512 page cache, in-place, bucket cache, 512-byte alignment",
            HashOptions {
                align_pow: 9,
                cache_buckets: true,
                file: common::spec(FileKind::PositionalAtomic, |s| {
                    s.block_size = 512;
                    s.pagecache = true;
                }),
                ..base(FileKind::PositionalAtomic)
            },
        ),
        _ => (
            "pos-para block 4096 padding, in-place, unaligned",
            HashOptions {
                align_pow: 0,
                file: common::spec(FileKind::PositionalParallel, |s| {
                    s.block_size = 4096;
                    s.padding = true;
                }),
                ..base(FileKind::PositionalParallel)
            },
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

/// Not a test by itself: the writer process. Opens the database named in the
/// environment and applies batches from the given one on, reporting each
/// after its hard synchronization, until it is killed. Without the
/// environment (a plain `cargo test -- --ignored`) it does nothing.
#[test]
#[ignore = "the child process of the crash tests"]
fn crash_writer() {
    let Ok(path) = std::env::var(ENV_PATH) else { return };
    let number = |name: &str| -> u64 {
        std::env::var(name).expect("the environment names it").parse().expect("a number")
    };
    let (_, options) = config(number(ENV_CONFIG) as usize);
    let seed = number(ENV_SEED);
    let db = HashDbm::open(&path, true, &options).expect("the writer opens the database");
    let mut report = std::io::stderr().lock();
    for batch in number(ENV_FIRST).. {
        for step in plan(seed, batch) {
            match step {
                Step::Set(k, v) => db.set(&k, &v, true).expect("the writer sets"),
                Step::Remove(k) => {
                    db.remove(&k).expect("the writer removes");
                }
                Step::Rebuild => db.rebuild().expect("the writer rebuilds"),
                Step::Clear => db.clear().expect("the writer clears"),
            }
        }
        db.synchronize(true).expect("the writer synchronizes");
        // One write call, so a kill never leaves half a report.
        report.write_all(format!("synced {batch}\n").as_bytes()).expect("report");
    }
}

/// Starts a writer process on `path`.
fn start_writer(path: &Path, config: usize, first: u64, seed: u64) -> ChildTest {
    ChildTest::start(
        "crash_writer",
        [
            (ENV_PATH, path.as_os_str().to_owned()),
            (ENV_CONFIG, config.to_string().into()),
            (ENV_FIRST, first.to_string().into()),
            (ENV_SEED, seed.to_string().into()),
        ],
    )
}

/// Runs [`KILLS`] writers on one database of configuration `index`, killing
/// each at a random moment and checking the restored file after each.
fn crash_and_check(index: usize) {
    let (name, options) = config(index);
    let seed: u64 = std::env::var(ENV_REPLAY).ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let what = format!("[{name}] (seed {seed}; {ENV_REPLAY}={seed} replays it)");
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let path: PathBuf = dir.path().join("crash.kh");
    HashDbm::open(&path, true, &options).expect("create").close().expect("close");
    let mut rng = SmallRng::seed_from_u64(seed);
    // What the database held when the current writer started, checked.
    let mut base = Model::new();
    let mut first = 0u64;
    let mut cycles_with_syncs = 0;
    for kill in 0..KILLS {
        let what = format!("{what} kill {kill}");
        let writer = start_writer(&path, index, first, seed);
        std::thread::sleep(Duration::from_millis(rng.gen_range(5..=200)));
        // The writer reports on stderr.
        let Killed { running, stderr: output, .. } = writer.kill();
        assert!(running, "{what}: the writer stopped before it was killed:\n{output}");
        let synced = last_synced(&output);
        // After the last report the writer was inside the next batch, at most.
        let mut expected = base.clone();
        for batch in first..synced.map_or(first, |s| s + 1) {
            for step in plan(seed, batch) {
                apply(&mut expected, &step);
            }
        }
        let open_batch = synced.map_or(first, |s| s + 1);
        let mut allowed: BTreeMap<Vec<u8>, BTreeSet<Option<Vec<u8>>>> = BTreeMap::new();
        let mut during = expected.clone();
        for step in plan(seed, open_batch) {
            for k in apply(&mut during, &step) {
                let now = during.get(&k).cloned();
                allowed.entry(k).or_default().insert(now);
            }
        }
        let viewed = h::crash_view(|| HashDbm::open(&path, false, &options))
            .unwrap_or_else(|e| panic!("{what}: read-only after the kill (synced {synced:?}): {e}"));
        let db = HashDbm::open(&path, true, &options)
            .unwrap_or_else(|e| panic!("{what}: open after the kill (synced {synced:?}): {e}"));
        let actual = h::records(&db).unwrap_or_else(|e| panic!("{what}: walk after the kill: {e}"));
        if let Some(diff) = h::difference(&viewed, &actual) {
            panic!("{what}: readers saw the crashed file otherwise than its restore made it: {diff}");
        }
        let keys: BTreeSet<&Vec<u8>> = actual.keys().chain(expected.keys()).collect();
        for k in keys {
            let got = actual.get(k);
            let synced_value = expected.get(k);
            let later = allowed.get(k).is_some_and(|a| a.contains(&got.cloned()));
            assert!(
                got == synced_value || later,
                "{what}: after batch {synced:?} was synchronized, {} holds {}; it was synchronized as {} \
                 and batch {open_batch} wrote {:?}",
                show(k),
                show_opt(got.map(Vec::as_slice)),
                show_opt(synced_value.map(Vec::as_slice)),
                allowed.get(k).map(|a| a.iter().map(|v| show_opt(v.as_deref())).collect::<Vec<_>>()),
            );
        }
        if synced.is_some() {
            cycles_with_syncs += 1;
        }
        // The restored database keeps working, and closes cleanly.
        let marker = format!("after kill {kill}").into_bytes();
        db.set(&marker, b"still working", true)
            .unwrap_or_else(|e| panic!("{what}: set after the restore: {e}"));
        let mut now = actual;
        now.insert(marker, b"still working".to_vec());
        h::compare(&db, &now).unwrap_or_else(|e| panic!("{what}: after the restore: {e}"));
        db.close().unwrap_or_else(|e| panic!("{what}: close after the restore: {e}"));
        let refuse = HashOptions { restore: RestoreMode::Refuse, ..options.clone() };
        let db = HashDbm::open(&path, true, &refuse).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
        h::compare(&db, &now).unwrap_or_else(|e| panic!("{what}: reopened: {e}"));
        db.close().unwrap_or_else(|e| panic!("{what}: close: {e}"));
        base = now;
        first = open_batch + 1;
    }
    assert!(
        cycles_with_syncs * 3 >= KILLS,
        "{what}: only {cycles_with_syncs} of {KILLS} writers synchronized a batch before the kill; \
         the test checked too little"
    );
}

/// Killed in-place writers on a memory-mapped file (default alignment) lose
/// nothing synchronized.
#[test]
fn killed_in_place_writer_on_mmap() {
    crash_and_check(0);
}

/// Killed appending writers on a positional file lose nothing synchronized.
#[test]
fn killed_appending_writer_on_positional_file() {
    crash_and_check(1);
}

/// Killed in-place writers through atomic block I/O, a page cache and a
/// bucket cache, records aligned to the block, lose nothing synchronized.
#[test]
fn killed_in_place_writer_on_block_io_with_caches() {
    crash_and_check(2);
}

/// Killed in-place writers of unaligned records on parallel 4 KiB block I/O
/// with padding lose nothing synchronized.
#[test]
fn killed_in_place_writer_on_block_io_with_padding() {
    crash_and_check(3);
}
