//! The loop every SIGKILL crash test runs, whatever the class: start a
//! writer (this test binary again, for the class's ignored writer test),
//! kill it after a random delay, work out from its "synced N" reports what
//! the database may hold, check what two readers of the crashed file see
//! and what the restore at the next writer's open makes of it, write to the
//! restored database, reopen it, and start the next writer on the same file.
//!
//! What differs per class is a [`Crash`]: the writer's plan, how to open
//! the database and read it, which states a kill allows, and what to write
//! after the restore. The writer reports each batch with one write to
//! stderr only after the synchronization that ends it returned, so a kill
//! never leaves half a report.
//!
//! How many writers a test kills is the class's [`Crash::KILLS`], a few,
//! unless [`ENV_KILLS`] asks for more: the kill loop (`scripts/kill-loop`)
//! sets it to run a thousand kills and more per class.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::RangeInclusive;
use std::path::Path;
use std::time::{Duration, Instant};

use kuradb::dbm::Dbm;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::child::{last_synced, ChildTest, Killed};

const ENV_PATH: &str = "KURADB_CRASH_WRITER_PATH";
const ENV_CONFIG: &str = "KURADB_CRASH_WRITER_CONFIG";
const ENV_FIRST: &str = "KURADB_CRASH_WRITER_FIRST_BATCH";
const ENV_SEED: &str = "KURADB_CRASH_WRITER_SEED";

/// The variable that sets how many writers each class's kill tests kill in
/// all, shared evenly by its configurations (each at least one); unset, a
/// test kills [`Crash::KILLS`].
pub const ENV_KILLS: &str = "KURA_KILLS";

/// What the checks of one kill tell the class's final judgement.
#[derive(Debug, Default)]
pub struct Stats {
    /// Writers killed.
    pub kills: usize,
    /// Writers that reported a synchronized batch before the kill.
    pub with_syncs: usize,
    /// The batch the next writer would have started with: one past every
    /// batch the writers began.
    pub next_batch: u64,
}

/// What a class's crash test gives the shared loop.
pub trait Crash: Sized {
    /// The database the writer opens.
    type Db: Dbm + 'static;
    /// What a database holds, as the checks compare it.
    type State: Clone + PartialEq;

    /// The ignored test that runs [`writer`] for this class.
    const WRITER: &'static str;
    /// The variable whose value (a seed) replays a run.
    const REPLAY: &'static str;
    /// The name of the database's file.
    const FILE: &'static str;
    /// Writers killed per configuration, unless [`ENV_KILLS`] says otherwise.
    const KILLS: usize;
    /// How many configurations (tests) share the class's [`ENV_KILLS`].
    const CONFIGS: usize;
    /// How long a writer runs before it is killed, in milliseconds.
    const DELAY_MS: RangeInclusive<u64>;

    /// The configuration numbered `index`.
    fn config(index: usize) -> Self;
    /// The configuration's name, as failures show it.
    fn name(&self) -> &str;
    /// Opens the database at `path`.
    fn open(&self, path: &Path, writable: bool) -> kuradb::Result<Self::Db>;
    /// Opens the database again after a clean close, as the last check does.
    fn reopen(&self, path: &Path) -> kuradb::Result<Self::Db>;

    /// The writer: applies batch `batch` of the plan of `seed` to `db`.
    fn write(&self, db: &Self::Db, seed: u64, batch: u64);
    /// The writer: the synchronization that ends each batch.
    fn synchronize(&self, db: &Self::Db);

    /// A new database's state.
    fn empty(&self) -> Self::State;
    /// What batch `batch` of the plan of `seed` makes of `state` once
    /// synchronized.
    fn apply(&self, state: &mut Self::State, seed: u64, batch: u64);
    /// Reads what `db` holds, checking it is consistent with itself.
    fn read(&self, db: &Self::Db) -> Result<Self::State, String>;
    /// Describes how two states differ.
    fn difference(&self, found: &Self::State, expected: &Self::State) -> String;
    /// Whether `found` is a state the kill allows: `last` is the state after
    /// the last batch the writer reported, `open_batch` the one it was in.
    /// Answers which allowed state it is.
    fn judge(
        &self,
        found: &Self::State,
        last: &Self::State,
        seed: u64,
        open_batch: u64,
    ) -> Result<String, String>;
    /// Writes to the restored database holding `state` (and checks it, where
    /// its writes show at once); answers the state it then holds.
    fn write_after(&self, db: &Self::Db, state: Self::State, kill: usize) -> Result<Self::State, String>;
    /// Checks that `db` holds exactly `state`, by every way of reading it.
    fn compare(&self, db: &Self::Db, state: &Self::State) -> Result<(), String>;
    /// The temporary files in `dir` that a crash may leave and the next
    /// writer's open must remove.
    fn leftovers(&self, _dir: &Path) -> Vec<String> {
        Vec::new()
    }
    /// Whether the run checked enough to count: by default, at least a
    /// third of the writers synchronized a batch before their kill.
    fn enough(&self, stats: &Stats) -> Result<(), String> {
        if stats.with_syncs * 3 < stats.kills {
            return Err(format!(
                "only {} of {} writers synchronized a batch before the kill",
                stats.with_syncs, stats.kills
            ));
        }
        Ok(())
    }
}

/// The body of the class's ignored writer test: opens the database the
/// environment names and applies batches from the given one on, reporting
/// each after its synchronization, until it is killed. Without the
/// environment (a plain `cargo test -- --ignored`) it does nothing.
pub fn writer<C: Crash>() {
    let Ok(path) = std::env::var(ENV_PATH) else { return };
    let number = |name: &str| -> u64 {
        std::env::var(name).expect("the environment names it").parse().expect("a number")
    };
    let crash = C::config(number(ENV_CONFIG) as usize);
    let seed = number(ENV_SEED);
    let db = crash.open(Path::new(&path), true).expect("the writer opens the database");
    let mut report = std::io::stderr().lock();
    for batch in number(ENV_FIRST).. {
        crash.write(&db, seed, batch);
        crash.synchronize(&db);
        report.write_all(format!("synced {batch}\n").as_bytes()).expect("report");
    }
}

/// What readers see of a database left by a crash, opened by `open_reader`
/// twice, one beside the other: both see the same records, which are
/// answered. The caller checks that the next writer's restore makes exactly
/// these, so that no open after a crash shows a state a later open does not
/// reproduce.
pub fn crash_view<C: Crash>(crash: &C, path: &Path) -> Result<C::State, String> {
    let first = crash.open(path, false).map_err(|e| format!("the first read-only open: {e}"))?;
    let seen = crash.read(&first)?;
    let second = crash.open(path, false).map_err(|e| format!("a second read-only open beside it: {e}"))?;
    let again = crash.read(&second)?;
    drop((first, second));
    if seen != again {
        return Err(format!("two readers of the crashed file disagree: {}", crash.difference(&again, &seen)));
    }
    Ok(seen)
}

/// How many writers a test of `C` kills: its share of [`ENV_KILLS`] if set,
/// else [`Crash::KILLS`].
pub fn kills<C: Crash>() -> usize {
    match std::env::var(ENV_KILLS) {
        Ok(text) => {
            let all: usize = text
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{ENV_KILLS}={text:?} is not a number of kills"));
            all.div_ceil(C::CONFIGS).max(1)
        }
        Err(_) => C::KILLS,
    }
}

/// Runs [`kills`] writers of configuration `index` on one database, killing
/// each at a random moment and checking the restored file after each.
pub fn kill_and_check<C: Crash>(index: usize) {
    let crash = C::config(index);
    let started = Instant::now();
    let seed: u64 = std::env::var(C::REPLAY).ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let what = format!("[{}] (seed {seed}; {}={seed} replays it)", crash.name(), C::REPLAY);
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let path = dir.path().join(C::FILE);
    Box::new(crash.open(&path, true).expect("create")).close().expect("close");
    let mut rng = SmallRng::seed_from_u64(seed);
    // What the database held when the current writer started, checked.
    let mut base = crash.empty();
    let mut stats = Stats::default();
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    let mut with_leftovers = 0;
    for kill in 0..kills::<C>() {
        let what = format!("{what} kill {kill}");
        let first = stats.next_batch;
        let writer = ChildTest::start(
            C::WRITER,
            [
                (ENV_PATH, path.as_os_str().to_owned()),
                (ENV_CONFIG, index.to_string().into()),
                (ENV_FIRST, first.to_string().into()),
                (ENV_SEED, seed.to_string().into()),
            ],
        );
        std::thread::sleep(Duration::from_millis(rng.gen_range(C::DELAY_MS)));
        let Killed { running, stdout, stderr } = writer.kill();
        let output = format!("{stdout}{stderr}");
        assert!(running, "{what}: the writer stopped before it was killed:\n{output}");
        let synced = last_synced(&output);
        // After the last report the writer was inside the next batch, at most.
        let mut last = base.clone();
        for batch in first..synced.map_or(first, |s| s + 1) {
            crash.apply(&mut last, seed, batch);
        }
        let open_batch = synced.map_or(first, |s| s + 1);

        let left = crash.leftovers(dir.path());
        with_leftovers += usize::from(!left.is_empty());
        let viewed = crash_view(&crash, &path).unwrap_or_else(|e| {
            panic!("{what}: read-only after the kill (synced {synced:?}, left {left:?}): {e}")
        });
        let db = crash
            .open(&path, true)
            .unwrap_or_else(|e| panic!("{what}: open after the kill (synced {synced:?}): {e}"));
        let still = crash.leftovers(dir.path());
        assert!(still.is_empty(), "{what}: the writer's open left {still:?} (there were {left:?})");
        let found = crash.read(&db).unwrap_or_else(|e| panic!("{what}: after the kill: {e}"));
        if viewed != found {
            panic!(
                "{what}: readers saw the crashed file otherwise than its restore made it: {}",
                crash.difference(&found, &viewed)
            );
        }
        let verdict = crash.judge(&found, &last, seed, open_batch).unwrap_or_else(|e| {
            panic!("{what}: after batch {synced:?} was reported synchronized: {e}; the writer's output:\n{output}")
        });
        *verdicts.entry(verdict).or_default() += 1;
        stats.kills += 1;
        stats.with_syncs += usize::from(synced.is_some());

        // The restored database keeps working, and closes cleanly.
        let now =
            crash.write_after(&db, found, kill).unwrap_or_else(|e| panic!("{what}: after the restore: {e}"));
        Box::new(db).close().unwrap_or_else(|e| panic!("{what}: close after the restore: {e}"));
        let db = crash.reopen(&path).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
        crash.compare(&db, &now).unwrap_or_else(|e| panic!("{what}: reopened: {e}"));
        Box::new(db).close().unwrap_or_else(|e| panic!("{what}: close: {e}"));
        base = now;
        stats.next_batch = open_batch + 1;
    }
    eprintln!(
        "{what}: {} kills ({} after a reported synchronization) in {:.1} s left {verdicts:?}; {with_leftovers} \
         left temporary files",
        stats.kills,
        stats.with_syncs,
        started.elapsed().as_secs_f64()
    );
    crash.enough(&stats).unwrap_or_else(|e| panic!("{what}: {e}; the test checked too little"));
}
