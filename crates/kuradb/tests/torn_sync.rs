//! A power cut in the middle of a hard synchronization: the device holds
//! any mix of the writes made since the last one that completed, each whole
//! or not at all, in any order (`FaultControl::power_cut_torn`). Whatever the mix, and
//! at whichever of the synchronization's device syncs the power goes, the
//! restore must find what the crash-safety guide promises:
//!
//! - a hash database: every key with its value of the last completed hard
//!   synchronization or a value written after it (or absent, if it was then
//!   or was removed after), never a value older than that synchronization;
//! - a tree database: exactly the tree of the last completed hard
//!   synchronization, or exactly the one being synchronized.
//!
//! This is what holds the order a synchronization makes things durable in:
//! a replaced record marked void before its replacement is durable, or a
//! removal made durable before the void mark of an older version of the
//! same key, fails here.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::power_cut::{self as cut, Controls};
use common::tree as t;
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::tree::{KeyComparator, TreeDbm};
use kuradb::dbm::{Access, Action, Dbm, Durability};
use kuradb::file::FileSpec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[derive(Clone, Debug)]
enum Op {
    Set(u8, usize),
    Remove(u8),
    HardSync,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..16, 0usize..300).prop_map(|(k, n)| Op::Set(k, n)),
        3 => (0u8..16).prop_map(Op::Remove),
        2 => Just(Op::HardSync),
    ]
}

/// The operations, which device sync of the last hard synchronization the
/// power goes at (1 for the first), and the seed of the sectors kept.
fn case() -> impl Strategy<Value = (Vec<Op>, u64, u64)> {
    (proptest::collection::vec(op(), 1..70), 1u64..5, any::<u64>())
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

fn value(k: u8, n: usize, step: usize) -> Vec<u8> {
    let mut v = format!("{k}:{step}:").into_bytes();
    v.resize(n.max(v.len()), b'a' + (step % 26) as u8);
    v
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What each key may hold after the cut: its value at the last completed
/// synchronization and every value set since (`None` for absent).
struct Allowed(BTreeMap<Vec<u8>, BTreeSet<Option<Vec<u8>>>>);

impl Allowed {
    fn from_synced(synced: &Model) -> Allowed {
        let mut all = BTreeMap::new();
        for k in 0..16u8 {
            let mut set = BTreeSet::new();
            set.insert(synced.get(&key(k)).cloned());
            all.insert(key(k), set);
        }
        Allowed(all)
    }

    fn add(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        self.0.entry(key).or_default().insert(value);
    }

    fn check(&self, found: &Model) -> Result<(), String> {
        for (k, allowed) in &self.0 {
            let got = found.get(k).cloned();
            if !allowed.contains(&got) {
                return Err(format!(
                    "{} holds {:?}, allowed {:?}",
                    String::from_utf8_lossy(k),
                    got.map(|v| String::from_utf8_lossy(&v).into_owned()),
                    allowed
                        .iter()
                        .map(|v| v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()))
                        .collect::<Vec<_>>()
                ));
            }
        }
        if let Some(k) = found.keys().find(|k| !self.0.contains_key(*k)) {
            return Err(format!("{} was never written", String::from_utf8_lossy(k)));
        }
        Ok(())
    }
}

/// Runs `ops` on `db` through `set`, `remove` and `sync`, then tears the
/// next hard synchronization at its `at`-th device sync; answers the state
/// of the last completed synchronization, the state the torn one was
/// making durable, what each key may hold, and whether it was torn (a
/// synchronization with fewer device syncs than `at` completes, and the
/// power is cut after it, with nothing torn).
fn run_and_tear(
    controls: &Controls,
    path: &std::path::Path,
    ops: &[Op],
    at: u64,
    seed: u64,
    db: &dyn Dbm,
) -> (Model, Model, Allowed, bool) {
    let mut live = Model::new();
    let mut synced = live.clone();
    let mut allowed = Allowed::from_synced(&synced);
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Set(k, n) => {
                let v = value(k, n, step);
                db.set(&key(k), &v).expect("set");
                allowed.add(key(k), Some(v.clone()));
                live.insert(key(k), v);
            }
            Op::Remove(k) => {
                db.remove(&key(k)).expect("remove");
                allowed.add(key(k), None);
                live.remove(&key(k));
            }
            Op::HardSync => {
                db.synchronize(Durability::Hard).expect("hard sync");
                synced = live.clone();
                allowed = Allowed::from_synced(&synced);
            }
        }
    }
    let control = controls.last_at(path);
    control.tear_nth_hard_sync(at, seed);
    let torn = db.synchronize(Durability::Hard).is_err();
    if !torn {
        control.power_cut().expect("power cut");
        synced = live.clone();
        allowed = Allowed::from_synced(&synced);
    }
    (synced, live, allowed, torn)
}

fn read_all(db: &dyn Dbm) -> Model {
    let mut found = Model::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        found.insert(k.to_vec(), v.to_vec());
        Action::Keep
    })
    .expect("walk");
    found
}

fn check_hash(
    spec: &FileSpec,
    mode: UpdateMode,
    (ops, at, seed): (Vec<Op>, u64, u64),
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("torn.kh");
    let controls = Controls::default();
    let options = HashOptions::default()
        .file(spec.clone())
        .num_buckets(7)
        .update_mode(mode)
        .align_pow(4)
        .wrap_file(Some(controls.wrapper()));
    let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let (_, _, allowed, torn) = run_and_tear(&controls, &path, &ops, at, seed, &db);
    drop(db);
    let plain = options.wrap_file(None);
    // A reader first: it must see what the writer's restore will make.
    let reader = HashDbm::open(&path, Access::ReadOnly, &plain).expect("read-only open after the cut");
    let seen = read_all(&reader);
    drop(reader);
    let db = HashDbm::open(&path, Access::ReadWrite, &plain).expect("reopen after the cut");
    let found = read_all(&db);
    let what = format!("[{spec}] {mode:?}, torn at device sync {at} ({torn}), {} ops", ops.len());
    allowed.check(&found).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    prop_assert_eq!(&seen, &found, "{}: the reader saw another state than the restore", what);
    prop_assert_eq!(db.count().expect("count"), found.len() as u64);
    db.set(b"after", b"works").expect("the restored database takes writes");
    Ok(())
}

/// Makes the closed tree at `path` a node store of format version 1, as
/// one made before epoch digests: its header loses the digest's version,
/// and its records' checksums the epoch they cover from version 6 on.
fn make_version_1(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).expect("read");
    assert_eq!(bytes[8], 7, "a new tree's node store is version 7");
    bytes[8] = 1;
    let crc = crc32fast::hash(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    let width = usize::from(bytes[10]);
    let align = 1usize << bytes[11];
    let mut at = u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes")) as usize;
    // A closed file's records follow one another from the first: no gap
    // but padding records, which are records too.
    while at + 1 + width + 8 < bytes.len() {
        assert!([0xC8, 0xA5, 0xDF, 0xD1].contains(&bytes[at]), "a record at {at}");
        let body = at + 1 + width + 8;
        let mut pos = body;
        let mut size = || kuradb::varint::leb128::decode(&bytes, &mut pos).expect("a size") as usize;
        let (key, value, padding) = (size(), size(), size());
        let end = pos + key + value;
        let crc = crc32fast::hash(&bytes[body..end]);
        bytes[body - 4..body].copy_from_slice(&crc.to_le_bytes());
        at = (end + padding).div_ceil(align) * align;
    }
    std::fs::write(path, bytes).expect("write");
}

fn check_tree(
    spec: &FileSpec,
    old_format: bool,
    mode: UpdateMode,
    (ops, at, seed): (Vec<Op>, u64, u64),
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("torn.kt");
    let controls = Controls::default();
    let cmp = KeyComparator::Lexical;
    let mut options = t::options(spec, cmp, 128, 4, 4, 7);
    options.hash.update_mode = mode;
    if old_format {
        TreeDbm::open(&path, Access::ReadWrite, &options).expect("create").close().expect("close");
        make_version_1(&path);
    }
    options.hash.wrap_file = Some(controls.wrapper());
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let (synced, live, _, torn) = run_and_tear(&controls, &path, &ops, at, seed, &db);
    drop(db);
    let plain = cut::plain_tree(options);
    let what = format!("[{spec}] {mode:?}, torn at device sync {at} ({torn}), {} ops", ops.len());
    let reader = TreeDbm::open(&path, Access::ReadOnly, &plain)
        .map_err(|e| TestCaseError::fail(format!("{what}: read-only open after the cut: {e}")))?;
    let seen = read_all(&reader);
    drop(reader);
    let db = TreeDbm::open(&path, Access::ReadWrite, &plain)
        .map_err(|e| TestCaseError::fail(format!("{what}: reopen after the cut: {e}")))?;
    let found = read_all(&db);
    if found != synced && !(torn && found == live) {
        return Err(TestCaseError::fail(format!(
            "{what}: the tree is neither the synchronized one ({} keys) nor the one being \
             synchronized ({} keys): {} keys",
            synced.len(),
            live.len(),
            found.len()
        )));
    }
    prop_assert_eq!(&seen, &found, "{}: the reader saw another tree than the restore", what);
    t::compare(&db, &found, cmp).map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    db.set(b"after", b"works").expect("the restored tree takes writes");
    Ok(())
}

fn cases() -> u32 {
    std::env::var("KURA_TORN_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128)
}

/// Hash databases, in place and appending, on every power-cut spec.
#[test]
fn a_torn_hard_sync_keeps_each_hash_key_at_a_written_value_no_older_than_the_last_sync() {
    for spec in cut::specs() {
        for mode in [UpdateMode::InPlace, UpdateMode::Appending] {
            let mut runner = TestRunner::new(Config { cases: cases(), ..Config::default() });
            if let Err(e) = runner.run(&case(), |c| check_hash(&spec, mode, c)) {
                panic!("[{spec}] {mode:?}: {e}");
            }
        }
    }
}

/// Tree databases with tiny pages, on every power-cut spec, their nodes
/// updated in place or appended: node stores of the current version (one
/// device sync, the header naming the epoch with its digest) and of version
/// 1 (two).
#[test]
fn a_torn_hard_sync_leaves_one_whole_tree() {
    for spec in cut::specs() {
        for old_format in [false, true] {
            for mode in [UpdateMode::InPlace, UpdateMode::Appending] {
                let mut runner = TestRunner::new(Config { cases: cases(), ..Config::default() });
                if let Err(e) = runner.run(&case(), |c| check_tree(&spec, old_format, mode, c)) {
                    panic!("[{spec}] {mode:?}, version {}: {e}", if old_format { 1 } else { 7 });
                }
            }
        }
    }
}

/// A node store of an older version takes writes as it is, and a rebuild
/// makes it current (version 7).
#[test]
fn a_rebuild_gives_an_old_node_store_epoch_digests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.kt");
    let options = t::options(&FileSpec::default(), KeyComparator::Lexical, 128, 4, 4, 7);
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("create");
    db.set(b"a", b"1").expect("set");
    db.close().expect("close");
    make_version_1(&path);
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("open version 1");
    db.set(b"b", b"2").expect("set");
    db.synchronize(Durability::Hard).expect("sync");
    db.close().expect("close");
    assert_eq!(std::fs::read(&path).expect("read")[8], 1, "kept its version");
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).expect("reopen");
    db.rebuild().expect("rebuild");
    db.close().expect("close");
    assert_eq!(std::fs::read(&path).expect("read")[8], 7, "rebuilt as version 7");
    let db = TreeDbm::open(&path, Access::ReadOnly, &options).expect("open rebuilt");
    assert_eq!(db.get(b"a").expect("get").as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"b").expect("get").as_deref(), Some(&b"2"[..]));
}

/// A key's version of this epoch, replaced, gives its space to another
/// key's, which is then removed: the removal's void mark must not land on
/// the first key's version when the second's write is lost, or that key
/// reads as removed and its synchronized value is gone. The random search
/// above meets this case seldom; here every spec runs it with many mixes,
/// then the longer form the search first found it in.
#[test]
fn a_removal_in_reused_space_cannot_remove_the_key_that_used_it_before() {
    use Op::*;
    let ops =
        vec![Set(14, 76), Set(2, 0), Remove(14), HardSync, Set(2, 28), Set(2, 181), Set(6, 79), Remove(6)];
    for spec in cut::specs() {
        for seed in 0..64 {
            check_hash(&spec, UpdateMode::InPlace, (ops.clone(), 1, seed)).expect("a case");
        }
    }
    // The first form it was found in.
    let ops = vec![
        Set(0, 0),
        Set(14, 76),
        Set(0, 0),
        Set(11, 0),
        Set(8, 0),
        Set(2, 0),
        Remove(14),
        HardSync,
        Set(8, 92),
        HardSync,
        Remove(8),
        Set(2, 28),
        Set(9, 28),
        Remove(0),
        Set(9, 0),
        Set(2, 181),
        Set(6, 79),
        Set(8, 14),
        Remove(6),
        Set(3, 15),
        Set(2, 83),
        Set(1, 192),
        Set(12, 108),
    ];
    let spec = cut::specs().pop().expect("the block spec");
    check_hash(&spec, UpdateMode::InPlace, (ops, 1, 8439763686419924736)).expect("the found case");
}
