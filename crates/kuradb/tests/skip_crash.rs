//! A crash never costs a skip database more than its updates since the last
//! synchronization, and never leaves it unreadable: a writer process killed
//! with SIGKILL at random moments (while it queues updates, spills them to
//! sort files, builds the next file or renames it) leaves exactly the state
//! of the last reported synchronization or of the one in progress, and the
//! next writer removes the temporary files and takes writes. A power cut,
//! simulated by fault-injecting files, keeps the state of the last hard
//! synchronization (or a later one), also when a build failed part-way.
//!
//! The SIGKILL writer is this test binary run again for the ignored test
//! [`skip_crash_writer`]: it applies numbered batches (each determined by
//! the seed and its number) and reports each after `synchronize` returned;
//! the shared loop of `common::crash` kills it. Batches are large and
//! `sort_mem_size` small, so that a writer spends its time spilling and
//! building.

mod common;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::child::last_synced;
use common::crash::{self, Crash, Stats};
use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FaultControl, FaultFile, FaultKind, FileSpec, FileWrapper};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Every record of each key, in order: what a database with duplicates holds.
type Model = BTreeMap<Vec<u8>, Vec<Vec<u8>>>;

/// The records a model stands for, in file order.
fn flat(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect()
}

/// Applies a synchronization with `reducer` to the records of `model`.
fn reduce(model: &mut Model, reducer: &Reducer) {
    model.retain(|_, vs| !vs.is_empty());
    if *reducer == Reducer::Last {
        for vs in model.values_mut() {
            let last = vs.pop().expect("a record");
            *vs = vec![last];
        }
    }
}

/// Every record of `db`, by a walk of one snapshot.
fn records(db: &SkipDbm) -> kuradb::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        kuradb::dbm::Action::Keep
    })?;
    Ok(out)
}

/// Describes how `found` differs from `expected`, briefly.
fn difference(found: &[(Vec<u8>, Vec<u8>)], expected: &[(Vec<u8>, Vec<u8>)]) -> String {
    match found.iter().zip(expected).position(|(a, b)| a != b) {
        Some(i) => format!(
            "{} records vs {}; first difference at {i}: {:?} vs {:?}",
            found.len(),
            expected.len(),
            String::from_utf8_lossy(&found[i].0),
            String::from_utf8_lossy(&expected[i].0)
        ),
        None => format!("{} records vs {}", found.len(), expected.len()),
    }
}

/// The temporary files of builds and spills in `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list the directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".build-tmp") || (n.contains(".spill-") && n.ends_with("-tmp")))
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------- SIGKILL

/// Set to replay a run.
const ENV_REPLAY: &str = "KURADB_SKIP_CRASH_REPLAY";
const KILLS: usize = 10;
const KEYS: usize = 20_000;
const OPS: usize = 3_000;

/// (name, options, hard synchronization).
fn config(index: usize) -> (&'static str, SkipOptions, bool) {
    let options = |spec: &str, reducer| {
        SkipOptions::default()
            .file(FileSpec::parse(spec).expect("spec"))
            .sort_mem_size(64 << 10)
            .step_unit(4)
            .max_level(8)
            .max_cached_records(64)
            .reducer(reducer)
    };
    match index {
        0 => ("mmap, every record kept", options("mmap-para", Reducer::All), false),
        1 => ("pos-para, last record kept", options("pos-para", Reducer::Last), false),
        _ => ("pos-para, hard synchronization", options("pos-para", Reducer::Last), true),
    }
}

/// One update of a batch: a record added (`Some`), or every record of the
/// key removed.
type Step = (Vec<u8>, Option<Vec<u8>>);

fn plan(seed: u64, batch: u64) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (0..OPS)
        .map(|i| {
            let key = format!("key{:05}", rng.gen_range(0..KEYS)).into_bytes();
            if rng.gen_ratio(1, 3) {
                (key, None)
            } else {
                let mut value = format!("b{batch}:{i}:").into_bytes();
                value.resize(value.len() + rng.gen_range(20..150), b'a' + (batch % 26) as u8);
                (key, Some(value))
            }
        })
        .collect()
}

fn apply(model: &mut Model, steps: &[Step], reducer: &Reducer) {
    for (key, value) in steps {
        match value {
            Some(v) => model.entry(key.clone()).or_default().push(v.clone()),
            None => drop(model.remove(key)),
        }
    }
    reduce(model, reducer);
}

/// A child's first report shares the line its test harness began; a later
/// one has a line of its own.
#[test]
fn reports_are_read_wherever_they_are() {
    let output = "\nrunning 1 test\ntest skip_crash_writer ... synced 36\nbatch 36: built\nsynced 37\n";
    assert_eq!(last_synced(output), Some(37));
    assert_eq!(last_synced("\nrunning 1 test\ntest skip_crash_writer ... synced 36\n"), Some(36));
    assert_eq!(last_synced("\nrunning 1 test\ntest skip_crash_writer ... "), None);
}

/// A configuration of the database under test.
struct SkipCrash {
    name: &'static str,
    options: SkipOptions,
    hard: bool,
}

impl Crash for SkipCrash {
    type Db = SkipDbm;
    type State = Model;

    const WRITER: &'static str = "skip_crash_writer";
    const REPLAY: &'static str = ENV_REPLAY;
    const FILE: &'static str = "crash.skip";
    const KILLS: usize = KILLS;
    const CONFIGS: usize = 3;
    const DELAY_MS: RangeInclusive<u64> = 20..=400;

    fn config(index: usize) -> SkipCrash {
        let (name, options, hard) = config(index);
        SkipCrash { name, options, hard }
    }

    fn name(&self) -> &str {
        self.name
    }

    fn open(&self, path: &Path, writable: bool) -> kuradb::Result<SkipDbm> {
        SkipDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &self.options)
    }

    fn reopen(&self, path: &Path) -> kuradb::Result<SkipDbm> {
        SkipDbm::open(path, Access::ReadOnly, &self.options)
    }

    fn write(&self, db: &SkipDbm, seed: u64, batch: u64) {
        for (key, value) in plan(seed, batch) {
            match value {
                Some(v) => db.set(&key, &v).expect("set"),
                None => drop(db.remove(&key).expect("remove")),
            }
        }
    }

    fn synchronize(&self, db: &SkipDbm) {
        db.synchronize(if self.hard { Durability::Hard } else { Durability::Soft }).expect("synchronize");
    }

    fn empty(&self) -> Model {
        Model::new()
    }

    fn apply(&self, state: &mut Model, seed: u64, batch: u64) {
        apply(state, &plan(seed, batch), &self.options.reducer);
    }

    fn read(&self, db: &SkipDbm) -> Result<Model, String> {
        let mut model = Model::new();
        for (k, v) in records(db).map_err(|e| format!("a walk: {e}"))? {
            model.entry(k).or_default().push(v);
        }
        Ok(model)
    }

    fn difference(&self, found: &Model, expected: &Model) -> String {
        difference(&flat(found), &flat(expected))
    }

    /// The state of the last reported synchronization, or of the one in progress.
    fn judge(&self, found: &Model, last: &Model, seed: u64, open_batch: u64) -> Result<String, String> {
        let reducer = &self.options.reducer;
        let mut next = last.clone();
        apply(&mut next, &plan(seed, open_batch), reducer);
        if found == last {
            return Ok("the reported state".to_string());
        }
        if *found == next {
            return Ok("the next batch's state".to_string());
        }
        // Which later batch the file holds, if any, tells a lost report
        // from a torn build.
        let mut later = next.clone();
        let mut matches = None;
        for batch in open_batch + 1..open_batch + 5 {
            apply(&mut later, &plan(seed, batch), reducer);
            if later == *found {
                matches = Some(batch);
                break;
            }
        }
        Err(format!(
            "the database is neither that state ({}) nor the next batch's ({}); it is the state after batch \
             {matches:?}",
            self.difference(found, last),
            self.difference(found, &next)
        ))
    }

    /// The writes show only once the close builds the file.
    fn write_after(&self, db: &SkipDbm, mut state: Model, kill: usize) -> Result<Model, String> {
        let marker = format!("marker{kill}").into_bytes();
        db.set(&marker, b"still working").map_err(|e| format!("set after the kill: {e}"))?;
        db.remove(b"key00000").map_err(|e| format!("remove after the kill: {e}"))?;
        state.insert(marker, vec![b"still working".to_vec()]);
        state.remove(&b"key00000"[..]);
        Ok(state)
    }

    /// Every record by a walk, and each marker by a lookup.
    fn compare(&self, db: &SkipDbm, state: &Model) -> Result<(), String> {
        let found = records(db).map_err(|e| format!("a walk: {e}"))?;
        if found != flat(state) {
            return Err(format!("after the writes: {}", difference(&found, &flat(state))));
        }
        for (key, values) in state.range(b"marker".to_vec()..b"markes".to_vec()) {
            let got = db.get(key).map_err(|e| format!("get: {e}"))?;
            if got.as_ref() != values.first() {
                return Err(format!("get {} answers {got:?}", String::from_utf8_lossy(key)));
            }
        }
        Ok(())
    }

    fn leftovers(&self, dir: &Path) -> Vec<String> {
        leftovers(dir)
    }

    fn enough(&self, stats: &Stats) -> Result<(), String> {
        if stats.next_batch < stats.kills as u64 + 2 {
            return Err("the writers synchronized too few batches to test anything".to_string());
        }
        Ok(())
    }
}

/// Not a test by itself: the writer process of the SIGKILL tests (see
/// `common::crash::writer`).
#[test]
#[ignore = "the child process of the skip crash tests"]
fn skip_crash_writer() {
    crash::writer::<SkipCrash>();
}

/// Killed writers on memory-mapped files, every record of a key kept.
#[test]
fn killed_writer_on_mmap() {
    crash::kill_and_check::<SkipCrash>(0);
}

/// Killed writers on positional files, the last record of a key kept.
#[test]
fn killed_writer_on_positional_files() {
    crash::kill_and_check::<SkipCrash>(1);
}

/// Killed writers that synchronize hard.
#[test]
fn killed_writer_synchronizing_hard() {
    crash::kill_and_check::<SkipCrash>(2);
}

// ---------------------------------------------------------------- power cut

/// A file a database opened, and the control of its faults.
type Opened = (PathBuf, Arc<FaultControl>);

/// Fault-injecting files for every file a database opens, and the power
/// switch: once it is off, every file is cut (what the device does not hold
/// is undone), and files opened later fail at once, so that the dying
/// database's close cannot build a file after the cut.
///
/// What this models is file contents only: a rename is done by the
/// filesystem, not the file layer, so here it reaches the device at once.
/// It checks that a build's data is on the device before the build takes
/// the database's name; it cannot check that the rename itself survives
/// (the directory's synchronization), nor model a rename undone by the cut.
#[derive(Clone, Default)]
struct Power {
    files: Arc<Mutex<Vec<Opened>>>,
    off: Arc<AtomicBool>,
    /// Arms the next file opened to fail its n-th operation.
    arm_next: Arc<Mutex<Option<u64>>>,
}

impl Power {
    fn wrapper(&self) -> FileWrapper {
        let power = self.clone();
        FileWrapper(Arc::new(move |inner| {
            let path = inner.path().to_path_buf();
            let file = FaultFile::new(inner);
            let control = file.control();
            if power.off.load(Ordering::SeqCst) {
                control.power_cut().expect("cut a new file");
            }
            if let Some(n) = power.arm_next.lock().expect("arm").take() {
                control.fail_nth_operation(n, FaultKind::Io);
            }
            power.files.lock().expect("files").push((path, control));
            Box::new(file)
        }))
    }

    fn cut(&self) {
        self.off.store(true, Ordering::SeqCst);
        for (path, control) in self.files.lock().expect("files").iter() {
            control.power_cut().unwrap_or_else(|e| panic!("cut {}: {e}", path.display()));
        }
    }

    /// Disarms every file's fault.
    fn heal(&self) {
        for (_, control) in self.files.lock().expect("files").iter() {
            control.heal();
        }
    }

    /// Forgets the files, closing what the database left open.
    fn release(&self) {
        self.files.lock().expect("files").clear();
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Set(u16, u8),
    Remove(u16),
    SoftSync,
    HardSync,
}

fn ops(rng: &mut SmallRng, n: usize) -> Vec<Op> {
    (0..n)
        .map(|_| match rng.gen_range(0..40) {
            0..=24 => Op::Set(rng.gen_range(0..150), rng.gen_range(0..60)),
            25..=34 => Op::Remove(rng.gen_range(0..150)),
            35..=37 => Op::SoftSync,
            _ => Op::HardSync,
        })
        .collect()
}

/// Runs `ops`, cuts the power, and checks that the reopened database holds
/// the state of the last hard synchronization or of a soft one after it;
/// answers whether it holds the last synchronized state.
fn power_cut(spec: &FileSpec, ops: &[Op], what: &str) -> bool {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cut.skip");
    let power = Power::default();
    let options = SkipOptions::default()
        .file(spec.clone())
        .sort_mem_size(512)
        .step_unit(3)
        .max_level(5)
        .max_cached_records(4)
        .wrap_file(Some(power.wrapper()));
    let db = SkipDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let (mut live, mut pending) = (Model::new(), Vec::<Step>::new());
    let mut allowed = vec![Model::new()];
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Set(k, n) => {
                let (key, mut value) = (format!("k{k:03}").into_bytes(), format!("{step}:").into_bytes());
                value.resize(value.len() + usize::from(n), b'v');
                db.set(&key, &value).expect("set");
                pending.push((key, Some(value)));
            }
            Op::Remove(k) => {
                let key = format!("k{k:03}").into_bytes();
                db.remove(&key).expect("remove");
                pending.push((key, None));
            }
            Op::SoftSync | Op::HardSync => {
                let hard = matches!(op, Op::HardSync);
                db.synchronize(if hard { Durability::Hard } else { Durability::Soft }).expect("synchronize");
                apply(&mut live, &std::mem::take(&mut pending), &Reducer::All);
                if hard {
                    allowed.clear();
                }
                allowed.push(live.clone());
            }
        }
    }
    power.cut();
    drop(db);
    power.release();
    let plain = options.wrap_file(None);
    let db = SkipDbm::open(&path, Access::ReadWrite, &plain)
        .unwrap_or_else(|e| panic!("{what}: reopen after the cut: {e}"));
    let found = records(&db).unwrap_or_else(|e| panic!("{what}: walk after the cut: {e}"));
    assert!(
        allowed.iter().any(|m| flat(m) == found),
        "{what}: after the cut the database is none of the states since the last hard synchronization: {}",
        difference(&found, &flat(&allowed[0]))
    );
    assert!(leftovers(dir.path()).is_empty(), "{what}: leftovers after the writer's open");
    db.set(b"after", b"works").expect("the database takes writes after the cut");
    db.close().expect("close");
    allowed.last().is_some_and(|m| flat(m) == found)
}

fn power_cut_specs() -> Vec<FileSpec> {
    ["mmap-para", "pos-para", "pos-atom,block_size=512,access=padding+pagecache"]
        .iter()
        .map(|s| FileSpec::parse(s).expect("spec"))
        .collect()
}

/// Random updates and synchronizations, then a power cut.
#[test]
fn a_power_cut_keeps_a_state_since_the_last_hard_synchronization() {
    let seed: u64 = std::env::var(ENV_REPLAY).ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    for spec in power_cut_specs() {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut older = 0;
        for case in 0..40 {
            let n = rng.gen_range(1..200);
            let ops = ops(&mut rng, n);
            let what = format!("[{spec}] case {case} (seed {seed}; {ENV_REPLAY} replays)");
            older += usize::from(!power_cut(&spec, &ops, &what));
        }
        // Soft builds of a new database are not made durable: some cuts lose them.
        eprintln!("[{spec}] (seed {seed}) {older} of 40 cuts went back to an older state");
    }
}

/// A hard synchronization with nothing pending makes the file of the soft
/// build before it durable, name and all, so the next soft build must reach
/// the device before it replaces that file. (It did not: seed
/// 6893528190710017782 of the test above came back empty after a cut.)
#[test]
fn a_hard_synchronization_with_nothing_pending_protects_the_last_build() {
    let ops = [
        Op::HardSync,
        Op::Set(1, 10),
        Op::Set(2, 20),
        Op::SoftSync,
        Op::HardSync,
        Op::Set(3, 30),
        Op::SoftSync,
    ];
    for spec in power_cut_specs() {
        power_cut(&spec, &ops, &format!("[{spec}] a soft build after an idle hard synchronization"));
    }
}

/// A hard synchronization whose build fails at its k-th file operation,
/// then a power cut: the database must come back as it was synchronized
/// before, or (once k is past the build's operations) as the synchronization
/// made it; the failed build's updates must stay pending.
#[test]
fn a_failed_build_then_a_power_cut_keeps_the_synchronized_state() {
    for spec in power_cut_specs() {
        let mut completed = false;
        for k in 1..60u64 {
            let what = format!("[{spec}] a build failing at its operation {k}");
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("cut.skip");
            let power = Power::default();
            let options = SkipOptions::default().file(spec.clone()).wrap_file(Some(power.wrapper()));
            let db = SkipDbm::open(&path, Access::ReadWrite, &options).expect("open");
            let (mut before, mut after) = (Vec::new(), Vec::new());
            for i in 0..300 {
                let key = format!("{i:04}").into_bytes();
                db.set(&key, b"first").expect("set");
                before.push((key, b"first".to_vec()));
            }
            db.synchronize(Durability::Hard).expect("hard sync");
            for i in 0..300 {
                let key = format!("{i:04}").into_bytes();
                if i % 3 == 0 {
                    db.remove(&key).expect("remove");
                } else {
                    after.push((key.clone(), b"first".to_vec()));
                }
                if i % 2 == 0 {
                    db.set(&key, b"second").expect("set");
                    after.push((key, b"second".to_vec()));
                }
            }
            *power.arm_next.lock().expect("arm") = Some(k);
            let failed = db.synchronize(Durability::Hard).is_err();
            // A fault not yet due would hit the built file's reads below.
            power.heal();
            let expected = if failed { &before } else { &after };
            assert_eq!(&records(&db).expect("walk"), expected, "{what}: what readers see (failed {failed})");
            assert!(leftovers(dir.path()).is_empty(), "{what}: the failed build left its file");
            if failed {
                assert!(
                    db.should_be_rebuilt().expect("pending"),
                    "{what}: the failed build's updates were lost"
                );
            } else {
                completed = true;
            }
            power.cut();
            drop(db);
            power.release();
            let plain = options.wrap_file(None);
            let db = SkipDbm::open(&path, Access::ReadWrite, &plain)
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            assert_eq!(&records(&db).expect("walk"), expected, "{what}: after the cut (failed {failed})");
            db.close().expect("close");
            if completed {
                break;
            }
        }
        assert!(completed, "[{spec}] no build completed within the operations tried");
    }
}

/// A failed build keeps its updates: the next synchronization writes them.
#[test]
fn a_failed_build_is_retried_by_the_next_synchronization() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("retry.skip");
    let power = Power::default();
    let options = SkipOptions::default().wrap_file(Some(power.wrapper())).sort_mem_size(1024);
    let db = SkipDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let mut model = Model::new();
    for round in 0..5u64 {
        let steps = plan(round, round).into_iter().take(200).collect::<Vec<_>>();
        for (key, value) in &steps {
            match value {
                Some(v) => db.set(key, v).expect("set"),
                None => drop(db.remove(key).expect("remove")),
            }
        }
        *power.arm_next.lock().expect("arm") = Some(1 + round % 3);
        assert!(db.synchronize(Durability::Hard).is_err(), "round {round}: the armed build failed");
        db.synchronize(Durability::Hard).expect("the retry");
        apply(&mut model, &steps, &Reducer::All);
        assert!(records(&db).expect("walk") == flat(&model), "round {round}: the retried build's state");
    }
    db.close().expect("close");
    power.release();
    let db = SkipDbm::open(&path, Access::ReadOnly, &SkipOptions::default()).expect("reopen");
    assert!(records(&db).expect("walk") == flat(&model), "after reopening");
}
