//! A crash leaves a tree database exactly as its last hard synchronization
//! (or clean close, clear or rebuild) made it: after a simulated power cut,
//! which undoes every write since, and after a SIGKILL of a writer process,
//! the automatic restore at the next open must give back exactly that tree.
//!
//! The SIGKILL writer is this test binary run again for the ignored test
//! [`tree_crash_writer`]: it applies numbered batches (each step determined
//! by the seed, the batch and its position) and reports each after
//! `synchronize(Durability::Hard)` returned. The shared loop of `common::crash` kills it
//! after a random 5 to 150 ms; the restored tree must then be the state
//! after the last reported batch, or after the next one (synchronized but
//! not yet reported), or the state at a clear or rebuild inside that next
//! batch (both make their state durable at once).

mod common;

use std::ops::RangeInclusive;
use std::path::Path;

use common::crash::{self, Crash};
use common::hash::{self as h, show, Model};
use common::power_cut::{self as cut, Controls};
use common::tree as t;
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FileKind, FileSpec};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------- power cut

#[derive(Clone, Debug)]
enum Op {
    Set(u16, usize),
    Remove(u16),
    HardSync,
    SoftSync,
    Clear,
    Rebuild,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u16..120, 0usize..40).prop_map(|(k, n)| Op::Set(k, n)),
        5 => (0u16..120).prop_map(Op::Remove),
        1 => Just(Op::HardSync),
        1 => Just(Op::SoftSync),
        // Rare: each is durable at once.
        1 => (0u8..10).prop_filter_map("rare", |n| (n == 0).then_some(Op::Clear)),
        1 => (0u8..6).prop_filter_map("rare", |n| (n == 0).then_some(Op::Rebuild)),
    ]
}

fn pkey(k: u16, cmp: KeyComparator) -> Vec<u8> {
    match cmp {
        KeyComparator::Lexical => format!("key{k:03}").into_bytes(),
        _ => format!("{}", i32::from(k) - 60).into_bytes(),
    }
}

fn pvalue(k: u16, n: usize, step: usize) -> Vec<u8> {
    let mut v = format!("{k}:{step}:").into_bytes();
    v.resize(n.max(v.len()), b'a' + (step % 26) as u8);
    v
}

fn power_cut(
    spec: &FileSpec,
    cmp: KeyComparator,
    tuning: (usize, usize, usize),
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cut.kt");
    let controls = Controls::default();
    let mut options = t::options(spec, cmp, tuning.0, tuning.1, tuning.2, 7);
    options.hash.wrap_file = Some(controls.wrapper());
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let mut live = Model::new();
    let mut synced = live.clone();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Set(k, n) => {
                let v = pvalue(k, n, step);
                db.set(&pkey(k, cmp), &v).expect("set");
                live.insert(pkey(k, cmp), v);
            }
            Op::Remove(k) => {
                db.remove(&pkey(k, cmp)).expect("remove");
                live.remove(&pkey(k, cmp));
            }
            Op::HardSync => {
                db.synchronize(Durability::Hard).expect("hard sync");
                synced = live.clone();
            }
            Op::SoftSync => db.synchronize(Durability::Soft).expect("soft sync"),
            Op::Clear => {
                db.clear().expect("clear");
                live.clear();
                synced.clear();
            }
            Op::Rebuild => {
                db.rebuild().expect("rebuild");
                synced = live.clone();
            }
        }
    }
    controls.last_at(&path).power_cut().expect("power cut");
    drop(db);
    let plain = cut::plain_tree(options);
    let db = TreeDbm::open(&path, Access::ReadWrite, &plain)
        .map_err(|e| TestCaseError::fail(format!("[{spec} {}] reopen after the cut: {e}", cmp.name())))?;
    t::compare(&db, &synced, cmp)
        .map_err(|e| TestCaseError::fail(format!("[{spec} {}] after {} ops: {e}", cmp.name(), ops.len())))?;
    db.set(&pkey(1, cmp), b"after").expect("the restored tree takes writes");
    synced.insert(pkey(1, cmp), b"after".to_vec());
    db.close().expect("close");
    let db = TreeDbm::open(&path, Access::ReadOnly, &plain).expect("reopen");
    t::compare(&db, &synced, cmp).map_err(|e| TestCaseError::fail(format!("[{spec}] reopened: {e}")))?;
    Ok(())
}

/// After a power cut the tree is exactly as last synchronized, on every
/// spec, in a lexical and a numeric order, with tiny pages.
#[test]
fn a_power_cut_keeps_exactly_the_synchronized_tree() {
    for spec in cut::specs() {
        for cmp in [KeyComparator::Lexical, KeyComparator::Real] {
            let mut runner =
                TestRunner::new(Config { cases: 40, failure_persistence: None, ..Config::default() });
            let strategy = ((64usize..300, 3usize..6, 1usize..12), proptest::collection::vec(op(), 1..150));
            if let Err(e) = runner.run(&strategy, |(tuning, ops)| power_cut(&spec, cmp, tuning, &ops)) {
                panic!("[{spec} {}] {e}", cmp.name());
            }
        }
    }
}

// ---------------------------------------------------------------- SIGKILL

/// Set to reproduce a run.
const ENV_REPLAY: &str = "KURADB_TREE_CRASH_REPLAY";
const KILLS: usize = 12;
const KEYS: usize = 300;

fn config(index: usize) -> (&'static str, TreeOptions) {
    match index {
        0 => (
            "mmap-para, decimal",
            t::options(&FileSpec::new(FileKind::MmapParallel), KeyComparator::Decimal, 128, 4, 8, 31),
        ),
        _ => (
            "pos-atom block 512 page cache, lexical",
            t::options(
                &common::spec(FileKind::PositionalAtomic, |s| {
                    s.block_size = 512;
                    s.pagecache = true;
                    s.page_cache_capacity = Some(4);
                }),
                KeyComparator::Lexical,
                200,
                5,
                3,
                7,
            ),
        ),
    }
}

#[derive(Clone, Debug)]
enum Step {
    Set(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Rebuild,
    Clear,
}

fn skey(k: usize) -> Vec<u8> {
    format!("{k}").into_bytes()
}

/// Batch `batch`: 1 to 40 sets and removals; about one batch in 20 also
/// rebuilds, one in 80 clears.
fn plan(seed: u64, batch: u64) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut steps = Vec::new();
    for _ in 0..rng.gen_range(1..=40) {
        if rng.gen_ratio(1, 20 * 20) {
            steps.push(Step::Rebuild);
        }
        if rng.gen_ratio(1, 80 * 20) {
            steps.push(Step::Clear);
        }
        let k = skey(rng.gen_range(0..KEYS));
        if rng.gen_ratio(1, 3) {
            steps.push(Step::Remove(k));
        } else {
            let mut v = format!("b{batch}:s{}:", steps.len()).into_bytes();
            v.extend((0..rng.gen_range(0..60)).map(|i| (i as u64 + batch) as u8));
            steps.push(Step::Set(k, v));
        }
    }
    steps
}

fn apply(model: &mut Model, step: &Step) {
    match step {
        Step::Set(k, v) => drop(model.insert(k.clone(), v.clone())),
        Step::Remove(k) => drop(model.remove(k)),
        Step::Rebuild => {}
        Step::Clear => model.clear(),
    }
}

/// A configuration of the tree under test.
struct TreeCrash {
    name: &'static str,
    options: TreeOptions,
}

impl TreeCrash {
    /// The key order the tree was made with (lexical unless the options name one).
    fn order(&self) -> KeyComparator {
        self.options.comparator.unwrap_or(KeyComparator::Lexical)
    }
}

impl Crash for TreeCrash {
    type Db = TreeDbm;
    type State = Model;

    const WRITER: &'static str = "tree_crash_writer";
    const REPLAY: &'static str = ENV_REPLAY;
    const FILE: &'static str = "crash.kt";
    const KILLS: usize = KILLS;
    const CONFIGS: usize = 2;
    const DELAY_MS: RangeInclusive<u64> = 5..=150;

    fn config(index: usize) -> TreeCrash {
        let (name, options) = config(index);
        TreeCrash { name, options }
    }

    fn name(&self) -> &str {
        self.name
    }

    fn open(&self, path: &Path, writable: bool) -> kuradb::Result<TreeDbm> {
        TreeDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &self.options)
    }

    fn reopen(&self, path: &Path) -> kuradb::Result<TreeDbm> {
        TreeDbm::open(path, Access::ReadOnly, &self.options)
    }

    fn write(&self, db: &TreeDbm, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            match step {
                Step::Set(k, v) => db.set(&k, &v).expect("set"),
                Step::Remove(k) => drop(db.remove(&k).expect("remove")),
                Step::Rebuild => db.rebuild().expect("rebuild"),
                Step::Clear => db.clear().expect("clear"),
            }
        }
    }

    fn synchronize(&self, db: &TreeDbm) {
        db.synchronize(Durability::Hard).expect("synchronize");
    }

    fn empty(&self) -> Model {
        Model::new()
    }

    fn apply(&self, state: &mut Model, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            apply(state, &step);
        }
    }

    /// Every way of reading the tree agrees, in order.
    fn read(&self, db: &TreeDbm) -> Result<Model, String> {
        Ok(t::self_consistent(db, self.order())?.into_iter().collect())
    }

    fn difference(&self, found: &Model, expected: &Model) -> String {
        h::difference(found, expected).unwrap_or_default()
    }

    /// The states the restore may give: the last reported one, one at a
    /// clear or rebuild in the next batch, or the whole next batch.
    fn judge(&self, found: &Model, last: &Model, seed: u64, open_batch: u64) -> Result<String, String> {
        let mut allowed = vec![("the last reported batch".to_string(), last.clone())];
        let mut during = last.clone();
        for step in &plan(seed, open_batch) {
            apply(&mut during, step);
            if matches!(step, Step::Clear | Step::Rebuild) {
                allowed.push((format!("{step:?} in the next batch"), during.clone()));
            }
        }
        allowed.push(("the next batch synchronized, unreported".to_string(), during));
        if let Some((name, _)) = allowed.iter().find(|(_, m)| m == found) {
            return Ok(name.clone());
        }
        let differ = found.iter().find(|(k, v)| last.get(*k) != Some(*v)).map(|(k, _)| show(k));
        let missing = last.keys().find(|k| !found.contains_key(*k)).map(|k| show(k));
        Err(format!(
            "the tree holds {} records, none of the allowed states ({}; the next batch is {open_batch}); vs \
             the reported state: first differing {differ:?}, first missing {missing:?}",
            found.len(),
            allowed.iter().map(|(n, m)| format!("{n}: {} records", m.len())).collect::<Vec<_>>().join("; ")
        ))
    }

    fn write_after(&self, db: &TreeDbm, mut state: Model, kill: usize) -> Result<Model, String> {
        let marker = skey(KEYS + kill);
        db.set(&marker, b"still working").map_err(|e| format!("set after the restore: {e}"))?;
        state.insert(marker, b"still working".to_vec());
        t::compare(db, &state, self.order())?;
        Ok(state)
    }

    fn compare(&self, db: &TreeDbm, state: &Model) -> Result<(), String> {
        t::compare(db, state, self.order())
    }
}

/// Not a test by itself: the writer process of the SIGKILL test (see
/// `common::crash::writer`).
#[test]
#[ignore = "the child process of the tree crash tests"]
fn tree_crash_writer() {
    crash::writer::<TreeCrash>();
}

/// Killed writers on a memory-mapped tree in decimal order lose nothing synchronized.
#[test]
fn killed_writer_on_mmap() {
    crash::kill_and_check::<TreeCrash>(0);
}

/// Killed writers through atomic block I/O and a tiny page cache lose nothing synchronized.
#[test]
fn killed_writer_on_block_io_with_page_cache() {
    crash::kill_and_check::<TreeCrash>(1);
}

/// What a process killed between hard synchronizations leaves: the tree
/// written and synchronized hard, more records written (nodes evicted to
/// the file), and the file copied while open. Its restore must give the
/// tree as of the hard synchronization.
#[test]
fn a_crash_between_synchronizations_restores_the_last_hard_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.kt");
    let copy = dir.path().join("copy.kt");
    let options =
        t::options(&FileSpec::new(FileKind::PositionalParallel), KeyComparator::Lexical, 128, 4, 8, 31);
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let mut model = Model::new();
    for i in 0..100 {
        let k = format!("{i:03}").into_bytes();
        db.set(&k, b"first").expect("set");
        model.insert(k, b"first".to_vec());
    }
    db.synchronize(Durability::Hard).expect("hard sync");
    for i in 50..150 {
        db.set(format!("{i:03}").as_bytes(), b"second").expect("set");
    }
    std::fs::copy(&path, &copy).expect("copy the open file");
    drop(db);
    let db = TreeDbm::open(&copy, Access::ReadWrite, &options).expect("open the crashed copy");
    t::compare(&db, &model, KeyComparator::Lexical).expect("the hard-synchronized tree");
}

/// Sets 200 keys to `value` in a tree with tiny pages and a small node
/// cache (so that sets write nodes out); answers what the tree holds.
fn fill(db: &TreeDbm, value: &[u8]) -> Model {
    let mut model = Model::new();
    for i in 0..200u32 {
        let key = format!("{i:03}").into_bytes();
        db.set(&key, value).expect("set");
        model.insert(key, value.to_vec());
    }
    model
}

/// Changes the second half of the header of the tree file at `path` (its
/// bytes 64 to 123, as `edit` is given them) and its checksum to match.
fn edit_header_state<R>(path: &Path, edit: impl FnOnce(&mut [u8]) -> R) -> R {
    let mut b = std::fs::read(path).expect("read the file");
    let answer = edit(&mut b[64..124]);
    let crc = crc32fast::hash(&b[64..124]);
    b[124..128].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, &b).expect("write the file");
    answer
}

/// Spoils the digest a crashed tree's header gives for the epoch it was
/// synchronizing, as a writer that miscounted would have written it, and
/// answers which epoch it names.
fn spoil_pending_digest(path: &Path) -> u32 {
    edit_header_state(path, |state| {
        assert_eq!(state[56], 1, "the header names no epoch with a digest");
        state[40] ^= 1;
        u32::from_le_bytes(state[48..52].try_into().expect("four bytes"))
    })
}

/// A restore checks the digest of the epoch a crash may have cut short, and
/// goes back one epoch when it disagrees; but not past an epoch that later
/// records prove synchronized, whose replaced versions' space those records
/// may have reused: a digest a writer miscounted must not cost a tree it
/// synchronized. Two copies of the open file after the second of two hard
/// synchronizations, one before and one after the leaves were rewritten
/// again (through a node cache too small to hold them), both with the
/// pending epoch's digest spoiled; a reader of the second agrees with its
/// next writer.
#[test]
fn a_spoiled_digest_goes_back_one_epoch_but_never_past_a_synchronized_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.kt");
    let (before_later, after_later) = (dir.path().join("before.kt"), dir.path().join("after.kt"));
    let options =
        t::options(&FileSpec::new(FileKind::PositionalParallel), KeyComparator::Lexical, 128, 4, 8, 31);
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let first = fill(&db, b"first");
    db.synchronize(Durability::Hard).expect("hard sync");
    let second = fill(&db, b"second");
    db.synchronize(Durability::Hard).expect("hard sync");
    std::fs::copy(&path, &before_later).expect("copy the open file");
    fill(&db, b"third");
    std::fs::copy(&path, &after_later).expect("copy the open file");
    drop(db);
    let pending = spoil_pending_digest(&before_later);
    assert_eq!(spoil_pending_digest(&after_later), pending, "a hard synchronization since");
    let db = TreeDbm::open(&before_later, Access::ReadWrite, &options).expect("open the first copy");
    t::compare(&db, &first, KeyComparator::Lexical).expect("nothing proves the second synchronized");
    db.close().expect("close");
    // A reader of a crashed file says it is not healthy, and reads what the
    // restore would make of it.
    let reader = TreeDbm::open(&after_later, Access::ReadOnly, &options).expect("read the second copy");
    let read = t::scan(&reader).expect("scan");
    assert!(read == t::sorted(&second, KeyComparator::Lexical), "the reader: the second synchronization");
    reader.close().expect("close");
    let db = TreeDbm::open(&after_later, Access::ReadWrite, &options).expect("open the second copy");
    t::compare(&db, &second, KeyComparator::Lexical).expect("the second synchronization, proved");
    db.close().expect("close");
}

/// A copy of a tree, opened and written to, then crashed after its first
/// hard synchronization and more writes, restores to that synchronization:
/// the epoch its writer synchronized is the one after the copy's, never the
/// copy's own, whose replaced versions that synchronization gave back to
/// the pool. Both how copies name their epoch now and how a restore reads
/// a copy made before (whose writer skipped an epoch) are covered: the
/// second copy's header is set back as such a copy's was.
#[test]
fn a_copy_reopened_never_goes_back_past_its_first_hard_synchronization() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options =
        t::options(&FileSpec::new(FileKind::PositionalParallel), KeyComparator::Lexical, 128, 4, 8, 31);
    for skipped_epoch in [false, true] {
        let (path, copy, crashed) =
            (dir.path().join("t.kt"), dir.path().join("c.kt"), dir.path().join("x.kt"));
        let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
        fill(&db, b"first");
        db.synchronize(Durability::Hard).expect("hard sync");
        db.copy_file_data(&copy, Durability::Hard).expect("copy");
        db.close().expect("close");
        std::fs::remove_file(&path).expect("remove");
        if skipped_epoch {
            // The epoch (byte 88) one past the synchronized one (byte 92).
            edit_header_state(&copy, |state| {
                let synced = u32::from_le_bytes(state[28..32].try_into().expect("four bytes"));
                state[24..28].copy_from_slice(&(synced + 1).to_le_bytes());
            });
        }
        let db = TreeDbm::open(&copy, Access::ReadWrite, &options).expect("open the copy");
        let second = fill(&db, b"second");
        db.synchronize(Durability::Hard).expect("hard sync");
        fill(&db, b"third");
        std::fs::copy(&copy, &crashed).expect("copy the open file");
        drop(db);
        let db = TreeDbm::open(&crashed, Access::ReadWrite, &options).expect("open the crashed copy");
        t::compare(&db, &second, KeyComparator::Lexical)
            .unwrap_or_else(|e| panic!("skipped epoch {skipped_epoch}: {e}"));
        db.close().expect("close");
        for p in [&copy, &crashed] {
            std::fs::remove_file(p).expect("remove");
        }
    }
}

/// A hard synchronization that fails at its k-th file operation, then a
/// power cut: for every k, the tree must reopen as it was synchronized
/// before, or as the failed synchronization would have made it.
#[test]
fn a_failed_hard_synchronization_then_a_power_cut_keeps_a_synchronized_tree() {
    let spec = FileSpec::new(FileKind::PositionalParallel);
    for k in 0..40u64 {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.kt");
        let controls = Controls::default();
        let mut options = t::options(&spec, KeyComparator::Lexical, 128, 4, 8, 31);
        options.hash.wrap_file = Some(controls.wrapper());
        let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
        let (mut before, mut after) = (Model::new(), Model::new());
        for i in 0..60 {
            let key = format!("{i:03}").into_bytes();
            db.set(&key, b"first").expect("set");
            before.insert(key, b"first".to_vec());
        }
        db.synchronize(Durability::Hard).expect("hard sync");
        after.clone_from(&before);
        for i in 30..90 {
            let key = format!("{i:03}").into_bytes();
            db.set(&key, b"second").expect("set");
            after.insert(key, b"second".to_vec());
        }
        let control = controls.last();
        control.fail_nth_operation(k + 1, kuradb::file::FaultKind::Io);
        let failed = db.synchronize(Durability::Hard).is_err();
        control.power_cut().expect("power cut");
        drop(db);
        let plain = cut::plain_tree(options);
        let db = TreeDbm::open(&path, Access::ReadWrite, &plain)
            .unwrap_or_else(|e| panic!("fault at operation {k} of the sync (failed {failed}): reopen: {e}"));
        let found: Model = t::self_consistent(&db, KeyComparator::Lexical)
            .unwrap_or_else(|e| panic!("fault at operation {k}: {e}"))
            .into_iter()
            .collect();
        assert!(found == before || found == after, "fault at operation {k}: {} records", found.len());
        db.close().expect("close");
    }
}

/// A hard synchronization that fails at its k-th file operation, then more
/// writes (rewrites and new records) and a second hard synchronization,
/// which succeeds, or is torn by a power cut (each write since the last
/// good sync reaching the device or not). The tree must reopen as one of
/// the states a synchronization could have made durable. Where the first
/// one failed after its device sync (a void mark written after it), its
/// records are synchronized all the same: the rewrites must not tear them
/// in place, and the second's digest must count what the first left out.
#[test]
fn a_synchronization_after_a_failed_one_keeps_everything_it_synchronized() {
    let spec = FileSpec::new(FileKind::PositionalParallel);
    let options = t::options(&spec, KeyComparator::Lexical, 128, 4, 8, 31);
    let key = |i: u32| format!("{i:04}").into_bytes();
    // Answers false where the first synchronization did not fail.
    let case = |k: u64, tear: Option<u64>, recovered: &mut u32, past_sync: &mut u32| -> bool {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.kt");
        let controls = Controls::default();
        let mut wrapped = options.clone();
        wrapped.hash.wrap_file = Some(controls.wrapper());
        let db = TreeDbm::open(&path, Access::ReadWrite, &wrapped).expect("open");
        let mut first = Model::new();
        for i in 0..300 {
            db.set(&key(i), b"first").expect("set");
            first.insert(key(i), b"first".to_vec());
        }
        db.synchronize(Durability::Hard).expect("hard sync");
        // Removals merge nodes away: their void marks go after the device sync.
        let mut thinned = first.clone();
        for i in (0..300).filter(|i| i % 10 != 0) {
            db.remove(&key(i)).expect("remove");
            thinned.remove(&key(i));
        }
        let control = controls.last();
        control.fail_nth_operation(k + 1, kuradb::file::FaultKind::Io);
        let syncs = control.hard_syncs();
        let failed = db.synchronize(Durability::Hard).is_err();
        control.heal();
        if !failed {
            db.close().expect("close");
            return false;
        }
        // Its device sync done, the failed synchronization made `thinned` durable.
        let durable = control.hard_syncs() > syncs;
        *past_sync += u32::from(durable);
        let mut last = thinned.clone();
        let more = (0..300).step_by(10).chain(300..340).try_for_each(|i| {
            last.insert(key(i), b"second".to_vec());
            db.set(&key(i), b"second")
        });
        // The failed synchronization may have left the tree refusing writes
        // until it is reopened; then there is nothing more to check.
        if more.is_err() {
            return true;
        }
        if let Some(seed) = tear {
            control.tear_nth_hard_sync(1, seed);
        }
        let synced = db.synchronize(Durability::Hard).is_ok();
        if tear.is_none() && !synced {
            return true;
        }
        *recovered += u32::from(synced);
        control.power_cut_torn(tear.unwrap_or(0)).expect("power cut");
        drop(db);
        let what = format!("fault at operation {k} of the first sync, second torn by {tear:?}");
        let db = TreeDbm::open(&path, Access::ReadWrite, &cut::plain_tree(wrapped))
            .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
        let found: Model = t::self_consistent(&db, KeyComparator::Lexical)
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .into_iter()
            .collect();
        if synced {
            assert!(found == last, "{what}: {} records of {}", found.len(), last.len());
        } else {
            assert!(
                (found == first && !durable) || found == thinned || found == last,
                "{what}: {} records, no synchronized state (the first's device sync done: {durable})",
                found.len()
            );
        }
        db.close().expect("close");
        true
    };
    let (mut recovered, mut past_sync) = (0, 0);
    for k in 0.. {
        if !case(k, None, &mut recovered, &mut past_sync) {
            break;
        }
        for seed in 1..=4 {
            case(k, Some(seed), &mut recovered, &mut past_sync);
        }
    }
    assert!(recovered > 0, "no failed synchronization was followed by a good one");
    assert!(past_sync > 0, "no synchronization failed after its device sync");
}

/// How many records the tree's node store holds: its nodes and its figures.
fn stored_pages(db: &TreeDbm) -> u64 {
    let inspected = db.inspect().expect("inspect");
    let (_, n) = inspected.iter().find(|(k, _)| k == "store_num_records").expect("the store's record count");
    n.parse().expect("a number")
}

/// A node removed within an epoch never comes back as an orphan: leaves
/// merged away after a hard synchronization, then a hard synchronization
/// that fails at its k-th file operation, then a power cut. For every k the
/// tree reopens as it was synchronized before or as the failed
/// synchronization would have made it, and its node store holds exactly
/// the pages the same writes leave without a fault: a merged-away node that
/// came back, which no link reaches, would be one more.
#[test]
fn a_crash_inside_a_hard_synchronization_brings_back_no_removed_node() {
    let spec = FileSpec::new(FileKind::PositionalParallel);
    let options = t::options(&spec, KeyComparator::Lexical, 128, 4, 8, 31);
    let key = |i: u32| format!("{i:04}").into_bytes();
    // Writes 300 records, synchronized hard; answers the page count then.
    let fill = |db: &TreeDbm, model: &mut Model| {
        for i in 0..300 {
            db.set(&key(i), b"first").expect("set");
            model.insert(key(i), b"first".to_vec());
        }
        db.synchronize(Durability::Hard).expect("hard sync");
        stored_pages(db)
    };
    // Removes most of them, so that leaves and inner nodes merge away.
    let thin = |db: &TreeDbm, model: &mut Model| {
        for i in (0..300).filter(|i| i % 10 != 0) {
            db.remove(&key(i)).expect("remove");
            model.remove(&key(i));
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let reference =
        TreeDbm::open(dir.path().join("reference.kt"), Access::ReadWrite, &options).expect("open");
    let (mut before, mut after) = (Model::new(), Model::new());
    let pages_before = fill(&reference, &mut before);
    after.clone_from(&before);
    thin(&reference, &mut after);
    reference.synchronize(Durability::Hard).expect("hard sync");
    let pages_after = stored_pages(&reference);
    reference.close().expect("close");
    assert!(pages_after < pages_before, "the removals merged no node ({pages_before} pages before)");

    let mut faults_inside = 0;
    for k in 0.. {
        let path = dir.path().join(format!("t{k}.kt"));
        let controls = Controls::default();
        let mut wrapped = options.clone();
        wrapped.hash.wrap_file = Some(controls.wrapper());
        let db = TreeDbm::open(&path, Access::ReadWrite, &wrapped).expect("open");
        fill(&db, &mut Model::new());
        thin(&db, &mut Model::new());
        let control = controls.last();
        control.fail_nth_operation(k + 1, kuradb::file::FaultKind::Io);
        let failed = db.synchronize(Durability::Hard).is_err();
        control.power_cut().expect("power cut");
        drop(db);
        let db = TreeDbm::open(&path, Access::ReadWrite, &cut::plain_tree(wrapped))
            .unwrap_or_else(|e| panic!("fault at operation {k} of the sync (failed {failed}): reopen: {e}"));
        let found: Model = t::self_consistent(&db, KeyComparator::Lexical)
            .unwrap_or_else(|e| panic!("fault at operation {k}: {e}"))
            .into_iter()
            .collect();
        let pages = stored_pages(&db);
        if found == before {
            assert_eq!(pages, pages_before, "fault at operation {k}: the tree as first synchronized");
        } else if found == after {
            assert_eq!(pages, pages_after, "fault at operation {k}: the tree as last synchronized");
        } else {
            panic!("fault at operation {k}: {} records, neither synchronized state", found.len());
        }
        db.close().expect("close");
        if !failed {
            break;
        }
        faults_inside += 1;
    }
    assert!(faults_inside > 10, "only {faults_inside} operations of the synchronization were faulted");
}

/// A replaced node version is left unmarked, its space reused once its
/// replacement's epoch is durable; a node merged away must still never
/// come back from such a version. Every node is rewritten over several
/// hard synchronizations, most leaves are then merged away, and more
/// synchronized rounds reuse the space freed meanwhile; after a power cut
/// the restored tree is the last synchronized one, with exactly its pages.
#[test]
fn a_merged_away_node_stays_gone_once_its_older_versions_are_reused() {
    let spec = FileSpec::new(FileKind::PositionalParallel);
    let key = |i: u32| format!("{i:04}").into_bytes();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.kt");
    let controls = Controls::default();
    let mut options = t::options(&spec, KeyComparator::Lexical, 128, 4, 8, 31);
    options.hash.wrap_file = Some(controls.wrapper());
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let mut model = Model::new();
    let round = |db: &TreeDbm, model: &mut Model, n: u32, keys: &mut dyn Iterator<Item = u32>| {
        for i in keys {
            let value = format!("round {n}").into_bytes();
            db.set(&key(i), &value).expect("set");
            model.insert(key(i), value);
        }
        db.synchronize(Durability::Hard).expect("hard sync");
    };
    for n in 0..4 {
        round(&db, &mut model, n, &mut (0..300));
    }
    for i in (0..300).filter(|i| i % 10 != 0) {
        db.remove(&key(i)).expect("remove");
        model.remove(&key(i));
    }
    db.synchronize(Durability::Hard).expect("hard sync");
    for n in 4..10 {
        round(&db, &mut model, n, &mut (0..300).step_by(10));
    }
    let pages = stored_pages(&db);
    controls.last().power_cut().expect("power cut");
    drop(db);
    let db = TreeDbm::open(&path, Access::ReadWrite, &cut::plain_tree(options)).expect("reopen");
    let found: Model =
        t::self_consistent(&db, KeyComparator::Lexical).expect("a whole tree").into_iter().collect();
    assert!(found == model, "{} records, not the synchronized {}", found.len(), model.len());
    assert_eq!(stored_pages(&db), pages, "a node merged away came back");
    db.close().expect("close");
}
