//! Commits survive crashes whole or not at all.
//!
//! `power_cut_*`: a hash database and a tree, each with its file and its
//! commit log opened through fault-injecting files (`common::sweep`'s
//! switchboard), run a fixed workload of batches and transactions at every
//! durability, with checkpoints. A first run counts the operations each
//! file sees; then, for every operation of the log (where the commits'
//! sync points are) and every operation of the database's file (or every
//! `KURA_TXN_SWEEP_STRIDE`-th one; CI tries about [`CI_POINTS`]), a fresh
//! run fails that operation with EIO, stops, cuts the power on every file
//! (undoing all that no hard synchronization made durable) and reopens
//! plainly; a second run at the same point cuts the power after the OS
//! wrote the database's pages back (its file keeps every write, the log
//! only what was synchronized), as it may at any moment. The
//! database must then hold the state after some prefix of the commits:
//! every commit wholly present or wholly absent, none after one missing,
//! and every commit acknowledged with `CommitDurability::Sync` (or followed
//! by a checkpoint that returned) present.
//!
//! `killed_*`: a child process (this test binary again, for the ignored
//! test `transfer_writer`) moves money between 16 accounts spread over the
//! four shards of a `PolyDbm` with transactions at Sync durability, two
//! threads at once, each transfer also writing a record of itself, and
//! reports each acknowledged commit. The parent kills it with SIGKILL at a
//! random moment, reopens (replaying the log) and checks that the total is
//! unchanged, that every balance is what the transfer records present make
//! it (no commit partial), and that every acknowledged transfer is present;
//! then starts the next child. CI kills 20 per class; `scripts/kill-loop`
//! (`KURA_KILLS=1000 cargo test -p kuradb --test transaction_crash killed`)
//! runs the long version.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::child::ChildTest;
use common::sweep::{self, Class, Point, Switchboard};
use kuradb::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
use kuradb::dbm::{Access, Durability};
use kuradb::file::{FileKind, FileSpec, OpenOptions};
use kuradb::{Dbm, HashDbm, HashOptions, KeyComparator, Params, PolyDbm, TreeDbm, TreeOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

// ---------------------------------------------------------------- power cut

/// About how many fault points of the database's file CI tries per class
/// (every operation of the commit log is tried).
const CI_POINTS: u64 = 40;
/// The variable that sets the stride of the sweep (1: every operation).
const ENV_STRIDE: &str = "KURA_TXN_SWEEP_STRIDE";

#[derive(Clone, Copy, Debug)]
enum Kind {
    Hash,
    Tree,
}

fn log_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".txlog");
    PathBuf::from(name)
}

fn options(kind: Kind) -> TransactionOptions {
    match kind {
        Kind::Hash => TransactionOptions::default(),
        Kind::Tree => {
            TransactionOptions { key_order: Some(KeyComparator::Lexical), ..TransactionOptions::default() }
        }
    }
}

/// A database of `kind` whose files (its own and its commit log beside it)
/// are opened through `board`'s fault-injecting files, or plainly.
enum Opened {
    Hash(Box<TransactionalDbm<HashDbm>>),
    Tree(Box<TransactionalDbm<TreeDbm>>),
}

fn open(kind: Kind, path: &Path, board: Option<&Switchboard>) -> kuradb::Result<Opened> {
    let wrapper = board.map(Switchboard::wrapper);
    let hash = HashOptions::default().num_buckets(7).wrap_file(wrapper.clone());
    // The log is opened after the database's file: the last file the board numbers.
    let log = wrapper.clone();
    let log_file = |log: Option<kuradb::file::FileWrapper>| -> kuradb::Result<Option<Box<dyn kuradb::File>>> {
        let Some(wrapper) = log else { return Ok(None) };
        let file =
            FileSpec::new(FileKind::PositionalParallel).open(log_path(path), &OpenOptions::writer())?;
        Ok(Some((wrapper.0)(file)))
    };
    Ok(match kind {
        Kind::Hash => {
            let db = HashDbm::open(path, Access::ReadWrite, &hash)?;
            Opened::Hash(Box::new(match log {
                Some(_) => TransactionalDbm::with_log_file(db, log_file(log)?, options(kind))?,
                None => TransactionalDbm::open(db, options(kind))?,
            }))
        }
        Kind::Tree => {
            let tree = TreeOptions::default().hash(hash).max_page_size(96).max_branches(3);
            let db = TreeDbm::open(path, Access::ReadWrite, &tree)?;
            Opened::Tree(Box::new(match log {
                Some(_) => TransactionalDbm::with_log_file(db, log_file(log)?, options(kind))?,
                None => TransactionalDbm::open(db, options(kind))?,
            }))
        }
    })
}

/// One step of the workload.
#[derive(Clone, Debug)]
enum Work {
    /// A batch setting `keys` to the commit's tag, removing one and
    /// bumping a counter.
    Batch(Vec<u8>, CommitDurability),
    /// A transaction reading and rewriting `keys`.
    Transaction(Vec<u8>, CommitDurability),
    Checkpoint,
}

/// The fixed workload: 36 commits over 10 keys, at every durability, and
/// three checkpoints.
fn workload() -> Vec<Work> {
    let mut rng = SmallRng::seed_from_u64(7);
    let durabilities = [CommitDurability::Sync, CommitDurability::Os, CommitDurability::Memory];
    let mut out = Vec::new();
    for i in 0..36 {
        if i % 12 == 11 {
            out.push(Work::Checkpoint);
        }
        let keys: Vec<u8> = (0..rng.gen_range(2..6)).map(|_| rng.gen_range(0..10u8)).collect();
        let durability = durabilities[rng.gen_range(0..3)];
        out.push(if i % 2 == 0 {
            Work::Batch(keys, durability)
        } else {
            Work::Transaction(keys, durability)
        });
    }
    out
}

fn wkey(k: u8) -> Vec<u8> {
    format!("key{k}").into_bytes()
}

/// Applies commit `n` of the workload to `state` (as the model does).
fn model(state: &mut Map, n: usize, work: &Work) {
    let tag = format!("c{n}").into_bytes();
    match work {
        Work::Batch(keys, _) => {
            for &k in &keys[1..] {
                state.insert(wkey(k), tag.clone());
            }
            state.remove(&wkey(keys[0]));
            let count =
                state.get(b"count".as_slice()).map_or(0, |v| i64::from_be_bytes(v[..].try_into().unwrap()));
            state.insert(b"count".to_vec(), (count + 1).to_be_bytes().to_vec());
        }
        Work::Transaction(keys, _) => {
            for &k in keys {
                let next = match state.get(&wkey(k)) {
                    Some(old) => [old.as_slice(), b"+", &tag].concat(),
                    None => tag.clone(),
                };
                state.insert(wkey(k), next);
            }
        }
        Work::Checkpoint => {}
    }
}

fn run_work<D: Dbm + 'static>(db: &TransactionalDbm<D>, n: usize, work: &Work) -> kuradb::Result<()> {
    let tag = format!("c{n}").into_bytes();
    match work {
        Work::Batch(keys, durability) => {
            let mut batch = db.batch(*durability);
            for &k in &keys[1..] {
                batch.set(&wkey(k), &tag);
            }
            batch.remove(&wkey(keys[0]));
            batch.increment(b"count", 1, 0);
            batch.commit().map(|_| ())
        }
        Work::Transaction(keys, durability) => {
            let mut tx = db.begin(*durability);
            for &k in keys {
                let next = match tx.get(&wkey(k))? {
                    Some(old) => [old.as_slice(), b"+", &tag].concat(),
                    None => tag.clone(),
                };
                tx.set(&wkey(k), &next);
            }
            tx.commit().map(|_| ())
        }
        Work::Checkpoint => db.synchronize(Durability::Hard),
    }
}

/// What a run left: the number of commits that returned, the most that
/// must survive, and whether a step failed.
struct Ran {
    /// Commits (numbered in `states`) attempted, the last one perhaps failed.
    attempted: usize,
    /// Every commit up to this one must be present after a power cut.
    durable: usize,
}

/// Runs the workload on `db` until a step fails, and waits for the commits
/// to reach the database (a hash database applies them in the background),
/// so that a run's operations all come before the power cut, and a dry
/// run counts every one.
fn run_all<D: Dbm + 'static>(db: &TransactionalDbm<D>, works: &[Work]) -> Ran {
    let ran = run_steps(db, works);
    db.wait_applied();
    ran
}

fn run_steps<D: Dbm + 'static>(db: &TransactionalDbm<D>, works: &[Work]) -> Ran {
    let mut ran = Ran { attempted: 0, durable: 0 };
    let mut commits = 0;
    for (n, work) in works.iter().enumerate() {
        let is_commit = !matches!(work, Work::Checkpoint);
        if is_commit {
            commits += 1;
            ran.attempted = commits;
        }
        if run_work(db, n, work).is_err() {
            return ran;
        }
        match work {
            Work::Checkpoint => ran.durable = commits,
            Work::Batch(_, CommitDurability::Sync) | Work::Transaction(_, CommitDurability::Sync) => {
                ran.durable = commits
            }
            _ => {}
        }
    }
    ran
}

fn contents<D: Dbm + 'static>(db: &D) -> Map {
    let mut all = Map::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        all.insert(k.to_vec(), v.to_vec());
        kuradb::Action::Keep
    })
    .expect("walk");
    all
}

/// The states after each prefix of the workload's commits.
fn states(works: &[Work]) -> Vec<Map> {
    let mut state = Map::new();
    let mut out = vec![state.clone()];
    for (n, work) in works.iter().enumerate() {
        if !matches!(work, Work::Checkpoint) {
            model(&mut state, n, work);
            out.push(state.clone());
        }
    }
    out
}

fn sweep_class(kind: Kind) {
    let works = workload();
    let states = states(&works);
    let started = Instant::now();
    // The dry run: how many operations each file sees.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let board = Switchboard::default();
    let counts = {
        let opened = open(kind, &path, Some(&board)).expect("open");
        let ran = match &opened {
            Opened::Hash(db) => run_all(db, &works),
            Opened::Tree(db) => run_all(db, &works),
        };
        assert_eq!(ran.attempted, states.len() - 1, "[{kind:?}] the dry run failed a step");
        let counts = board.counts(Class::Io);
        drop(opened);
        counts
    };
    board.release();
    let total: u64 = counts.iter().sum();
    let database_ops: u64 = counts[..counts.len() - 1].iter().sum();
    let stride = std::env::var(ENV_STRIDE)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| database_ops.div_ceil(CI_POINTS).max(1));
    // Every operation of the commit log (the file opened last), where the
    // commits' sync points are; the database's file by the stride.
    let log = counts.len() - 1;
    let mut points = sweep::points(&counts[..log], Class::Io, stride);
    points.extend((1..=counts[log]).map(|n| Point { file: log, n, class: Class::Io }));
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for point in &points {
        for cut in [Cut::Undo, Cut::AfterWriteback] {
            let verdict = cut_at(kind, *point, cut, &works, &states);
            *outcomes.entry(verdict).or_default() += 1;
        }
    }
    let unreached = outcomes.get("past the run's operations").copied().unwrap_or(0);
    assert!(
        unreached * 10 <= points.len(),
        "[{kind:?}] {unreached} of {} fault points not reached",
        points.len()
    );
    eprintln!(
        "[{kind:?}] {} fault points of {total} operations (files {counts:?}, stride {stride}) in {:.1} s: {outcomes:?}",
        points.len(),
        started.elapsed().as_secs_f64()
    );
}

/// What a power cut leaves of the database's own file.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// Only what a hard synchronization made durable.
    Undo,
    /// Everything written (the OS wrote its pages back before the cut),
    /// while the commit log keeps only what was synchronized: a commit
    /// applied before its log record reached the device would show in part.
    AfterWriteback,
}

/// One point: runs the workload with the fault at `point`, cuts the power,
/// reopens and checks. Answers a verdict for the summary.
fn cut_at(kind: Kind, point: Point, cut: Cut, works: &[Work], states: &[Map]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let board = Switchboard::armed(point);
    let what = format!("[{kind:?}] fault at {point:?}, {cut:?} ({ENV_STRIDE}=1 sweeps every operation)");
    let power_cut = || match cut {
        Cut::Undo => board.cut(),
        Cut::AfterWriteback => board.cut_after_writeback(|p| p.extension().is_none_or(|e| e != "txlog")),
    };
    let ran = match open(kind, &path, Some(&board)) {
        Ok(Opened::Hash(db)) => {
            let ran = run_all(&db, works);
            power_cut();
            drop(db);
            Some(ran)
        }
        Ok(Opened::Tree(db)) => {
            let ran = run_all(&db, works);
            power_cut();
            drop(db);
            Some(ran)
        }
        // The fault hit the open itself.
        Err(_) => {
            power_cut();
            None
        }
    };
    // A hash database's reads of its file depend on whether the applier
    // had applied a commit yet, so a run may make fewer operations than
    // the dry run counted: a point past them cuts the power after the
    // whole workload instead, which is checked alike.
    let fired = board.fired();
    let made = board.counts(point.class).get(point.file).copied().unwrap_or(0);
    assert!(fired || made < point.n, "{what}: the fault did not fire within the {made} operations made");
    board.release();
    let ran = ran.unwrap_or(Ran { attempted: 0, durable: 0 });
    let found = match open(kind, &path, None).unwrap_or_else(|e| panic!("{what}: reopen after the cut: {e}"))
    {
        Opened::Hash(db) => {
            let found = contents(&*db);
            db.set(b"after", b"1").expect("writes after the restore");
            db.close().unwrap_or_else(|e| panic!("{what}: close: {e}"));
            found
        }
        Opened::Tree(db) => {
            let found = contents(&*db);
            db.set(b"after", b"1").expect("writes after the restore");
            db.close().unwrap_or_else(|e| panic!("{what}: close: {e}"));
            found
        }
    };
    let Some(prefix) = states.iter().position(|s| *s == found) else {
        panic!(
            "{what}: after {} commits attempted ({} durable) the database holds no prefix of the commits: {found:?}",
            ran.attempted, ran.durable
        );
    };
    assert!(
        (ran.durable..=ran.attempted).contains(&prefix),
        "{what}: holds the first {prefix} commits; commits up to {} were acknowledged durable and {} attempted",
        ran.durable,
        ran.attempted
    );
    match fired {
        true => format!("{} lost", ran.attempted - prefix),
        false => "past the run's operations".into(),
    }
}

#[test]
fn power_cut_at_every_operation_leaves_commits_whole_hash() {
    sweep_class(Kind::Hash);
}

#[test]
fn power_cut_at_every_operation_leaves_commits_whole_tree() {
    sweep_class(Kind::Tree);
}

// ---------------------------------------------------------------- SIGKILL

const ACCOUNTS: usize = 16;
const INITIAL: i64 = 1000;
const ENV_PATH: &str = "KURADB_TXN_WRITER_PATH";
const ENV_CLASS: &str = "KURADB_TXN_WRITER_CLASS";
const ENV_ROUND: &str = "KURADB_TXN_WRITER_ROUND";
/// Replays a kill test's random delays and transfers.
const REPLAY: &str = "KURADB_TXN_KILL_SEED";
/// Kills per class in CI.
const CI_KILLS: usize = 20;

fn account(i: usize) -> Vec<u8> {
    format!("acct{i:02}").into_bytes()
}

fn shard_params(class: &str) -> Params {
    // Few buckets: a restore after a kill reads the whole file of each shard.
    let tuning = if class == "hash" { ",num_buckets=1000" } else { "" };
    Params::parse(&format!("dbm={class},num_shards=4{tuning}")).expect("parameters")
}

fn open_shards(class: &str, path: &Path) -> kuradb::Result<TransactionalDbm<PolyDbm>> {
    let db = PolyDbm::open(path, Access::ReadWrite, &shard_params(class))?;
    let options = TransactionOptions::for_poly(&db)?;
    TransactionalDbm::open(db, options)
}

fn number(v: &[u8]) -> i64 {
    std::str::from_utf8(v).expect("text").parse().expect("a number")
}

/// The child: two threads move money until killed, reporting each
/// acknowledged transfer as "acked ID" in one write.
#[test]
#[ignore = "the child of the killed_* tests"]
fn transfer_writer() {
    let Ok(path) = std::env::var(ENV_PATH) else { return };
    let class = std::env::var(ENV_CLASS).expect("class");
    let round: u64 = std::env::var(ENV_ROUND).expect("round").parse().expect("a number");
    let db = open_shards(&class, Path::new(&path)).expect("the writer opens the database");
    std::thread::scope(|scope| {
        for t in 0..2u64 {
            let db = &db;
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(round * 2 + t);
                for n in 0.. {
                    let from = rng.gen_range(0..ACCOUNTS);
                    let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
                    let amount = rng.gen_range(1..50i64);
                    let id = format!("xfer/{round}-{t}-{n}");
                    db.run(CommitDurability::Sync, 1000, |tx| {
                        let a = number(&tx.get(&account(from))?.expect("an account"));
                        let b = number(&tx.get(&account(to))?.expect("an account"));
                        tx.set(&account(from), (a - amount).to_string().as_bytes());
                        tx.set(&account(to), (b + amount).to_string().as_bytes());
                        tx.set(id.as_bytes(), format!("{from} {to} {amount}").as_bytes());
                        Ok(())
                    })
                    .expect("a transfer");
                    std::io::stderr().lock().write_all(format!("acked {id}\n").as_bytes()).expect("report");
                }
            });
        }
    });
}

/// Checks the reopened database: the total, every balance against the
/// transfers present, and every acknowledged transfer present.
fn check_transfers(db: &TransactionalDbm<PolyDbm>, acked: &[String]) -> Result<usize, String> {
    let all = contents(db);
    let mut expected = [INITIAL; ACCOUNTS];
    let mut transfers = 0;
    for (k, v) in &all {
        if k.starts_with(b"xfer/") {
            let text = std::str::from_utf8(v).map_err(|e| e.to_string())?;
            let parts: Vec<i64> = text.split(' ').map(|p| p.parse().expect("a number")).collect();
            expected[parts[0] as usize] -= parts[2];
            expected[parts[1] as usize] += parts[2];
            transfers += 1;
        }
    }
    let mut total = 0;
    for (i, want) in expected.iter().enumerate() {
        let got = all.get(&account(i)).map(|v| number(v)).ok_or_else(|| format!("account {i} is missing"))?;
        total += got;
        if got != *want {
            return Err(format!(
                "account {i} holds {got}; the {transfers} transfers recorded make it {want} (a partial commit)"
            ));
        }
    }
    if total != INITIAL * ACCOUNTS as i64 {
        return Err(format!("the total is {total}, not {}", INITIAL * ACCOUNTS as i64));
    }
    for id in acked {
        if !all.contains_key(id.as_bytes()) {
            return Err(format!("the acknowledged transfer {id} is missing"));
        }
    }
    Ok(transfers)
}

fn kills() -> usize {
    match std::env::var(common::crash::ENV_KILLS) {
        Ok(n) => n.trim().parse().expect("a number of kills"),
        Err(_) => CI_KILLS,
    }
}

fn kill_loop(class: &str) {
    let seed: u64 = std::env::var(REPLAY).ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let what = format!("[shards of {class}] (seed {seed}; {REPLAY}={seed} replays the delays)");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bank");
    let db = open_shards(class, &path).expect("create");
    let mut batch = db.batch(CommitDurability::Sync);
    for i in 0..ACCOUNTS {
        batch.set(&account(i), INITIAL.to_string().as_bytes());
    }
    batch.commit().expect("the accounts");
    db.close().expect("close");
    let started = Instant::now();
    let (mut with_acks, mut acked_total) = (0, 0);
    let kills = kills();
    for kill in 0..kills {
        let round = seed.wrapping_mul(1000).wrapping_add(kill as u64) % (1 << 40);
        let child = ChildTest::start(
            "transfer_writer",
            [
                (ENV_PATH, path.as_os_str().to_owned()),
                (ENV_CLASS, class.into()),
                (ENV_ROUND, round.to_string().into()),
            ],
        );
        std::thread::sleep(Duration::from_millis(rng.gen_range(20..=200)));
        let killed = child.kill();
        let output = format!("{}{}", killed.stdout, killed.stderr);
        assert!(killed.running, "{what} kill {kill}: the writer stopped before the kill:\n{output}");
        let acked: Vec<String> = output
            .lines()
            .filter_map(|line| line.rsplit_once("acked ").map(|(_, id)| id.trim().to_string()))
            .collect();
        with_acks += usize::from(!acked.is_empty());
        acked_total += acked.len();
        let db = open_shards(class, &path).unwrap_or_else(|e| panic!("{what} kill {kill}: reopen: {e}"));
        check_transfers(&db, &acked).unwrap_or_else(|e| {
            panic!("{what} kill {kill} ({} acknowledged): {e}; the writer's output:\n{output}", acked.len())
        });
        db.close().unwrap_or_else(|e| panic!("{what} kill {kill}: close: {e}"));
    }
    let db = open_shards(class, &path).expect("reopen");
    let transfers = check_transfers(&db, &[]).unwrap_or_else(|e| panic!("{what} at the end: {e}"));
    db.close().expect("close");
    eprintln!(
        "{what}: {kills} kills ({with_acks} after acknowledged commits, {acked_total} acknowledged, \
         {transfers} transfers present) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(with_acks * 3 >= kills, "{what}: only {with_acks} of {kills} writers committed before the kill");
}

#[test]
fn killed_transfers_on_hash_shards_stay_whole() {
    kill_loop("hash");
}

#[test]
fn killed_transfers_on_tree_shards_stay_whole() {
    kill_loop("tree");
}
