//! A database whose writer replaces its file (hash and tree rebuilds, skip
//! builds, the saves of an on-memory database's flat file: a new file written
//! beside and renamed over the path) stays locked against other processes at
//! every moment. While one process sets records and replaces the file in a
//! loop, another's writer always fails with a "locked" error, at once
//! (`no_wait`) or after its `lock_timeout` (counted over the whole wait, not
//! afresh for each file it finds replaced); a writer that waits opens only
//! once the first has closed, though the file it first waited on was
//! replaced many times meanwhile, and sees every record the first wrote.
//!
//! The lock is a `flock` on the open file, so it belongs to the file and not
//! to its name. These checks fail if a rebuild lets go of the old file's lock
//! before the new file, locked, has the name (another writer slips in), or
//! if an opener granted the lock of a file replaced meanwhile uses it (it
//! works on a file nobody will see again).
//!
//! The other process is this test binary run again for the ignored test
//! [`rebuilding_writer`], told what to do through environment variables.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::child::Holder;
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::OpenOptions;
use kuradb::{BabyDbm, BabyOptions, CacheDbm, CacheOptions, FlatLock, StdHashDbm, StdOptions, StdTreeDbm};
use kuradb::{ErrorKind, HashDbm, HashOptions, Result, SkipDbm, SkipOptions, TinyDbm, TinyOptions};
use kuradb::{TreeDbm, TreeOptions};

const CLASSES: [&str; 9] =
    ["hash", "hash-appending", "tree", "skip", "tiny", "baby", "cache", "stdhash", "stdtree"];
const ENV_CLASS: &str = "KURADB_REBUILD_LOCK_CLASS";
const ENV_DIR: &str = "KURADB_REBUILD_LOCK_DIR";
/// How long the child rebuilds after it signals that it holds the database.
const HOLD: Duration = Duration::from_millis(5000);
/// The child goes on past its hold until it has replaced its file this many
/// times: a loaded machine once stalled a child for most of its hold (a
/// fresh-clone CI run beside other builds), and the test is of the lock
/// held through many replacements, not of how many fit in a time.
const MIN_REPLACEMENTS: u64 = 20;
/// How long the parent tries to slip in; the rest of the hold it waits.
const PROBING: Duration = Duration::from_millis(1200);
const TIMEOUT: Duration = Duration::from_millis(30);
/// How much later than its timeout a waiter may give up, on a loaded machine
/// (a fresh-clone CI run once saw a baby writer's open take 1.9 s, the file
/// system busy with the child's saves): less than what is left of the
/// child's hold after the probing (3.8 s), through which a waiter whose
/// timeout started afresh at each replaced file would wait.
const SLACK: Duration = Duration::from_millis(2500);

fn open(class: &str, path: &Path, open: OpenOptions) -> Result<Box<dyn Dbm>> {
    Ok(match class {
        "hash" | "hash-appending" => {
            let mut o = HashOptions::default();
            o.num_buckets = 1021;
            o.open = open;
            if class == "hash-appending" {
                o.update_mode = kuradb::dbm::hash::UpdateMode::Appending;
            }
            Box::new(HashDbm::open(path, Access::ReadWrite, &o)?)
        }
        "tree" => {
            let mut o = TreeOptions::default();
            o.hash.num_buckets = 1021;
            o.hash.open = open;
            Box::new(TreeDbm::open(path, Access::ReadWrite, &o)?)
        }
        "skip" => {
            Box::new(SkipDbm::open(path, Access::ReadWrite, &SkipOptions::default().open_options(open))?)
        }
        _ => open_flat(class, path, FlatLock::default().wait(open.lock_wait))?,
    })
}

fn open_flat(class: &str, path: &Path, lock: FlatLock) -> Result<Box<dyn Dbm>> {
    Ok(match class {
        "tiny" => Box::new(TinyDbm::open(path, Access::ReadWrite, &TinyOptions::default().lock(lock))?),
        "baby" => Box::new(BabyDbm::open(path, Access::ReadWrite, &BabyOptions::default().lock(lock))?),
        "cache" => Box::new(CacheDbm::open(path, Access::ReadWrite, &CacheOptions::default().lock(lock))?),
        "stdhash" => Box::new(StdHashDbm::open(path, Access::ReadWrite, &StdOptions::default().lock(lock))?),
        _ => Box::new(StdTreeDbm::open(path, Access::ReadWrite, &StdOptions::default().lock(lock))?),
    })
}

/// A hash or tree database rebuilds; a skip database builds a new file at
/// every synchronization that has something to write, and an on-memory one
/// saves its flat file at every synchronization.
fn replace_file(class: &str, db: &dyn Dbm) -> Result<()> {
    match class {
        "hash" | "hash-appending" | "tree" => db.rebuild(),
        _ => db.synchronize(Durability::Soft),
    }
}

fn key(i: u64) -> String {
    format!("key{i:06}")
}

fn value(i: u64) -> String {
    format!("value of {i}")
}

/// Not a test by itself: the child process's entry point. Opens the
/// database as a writer, signals, then sets a record and replaces the file
/// again and again for [`HOLD`] (and at least [`MIN_REPLACEMENTS`] times),
/// writes how many records and replacements
/// it made to `done` and closes. Without the environment it does nothing.
#[test]
#[ignore = "the child process of the rebuild lock tests"]
fn rebuilding_writer() {
    let Ok(class) = std::env::var(ENV_CLASS) else { return };
    let dir = PathBuf::from(std::env::var(ENV_DIR).expect("dir"));
    let db = open(&class, &dir.join("casket"), OpenOptions::writer()).expect("open in the child");
    db.set(key(0).as_bytes(), value(0).as_bytes()).expect("set");
    replace_file(&class, db.as_ref()).expect("first replacement");
    std::fs::write(dir.join("signal"), b"locked").expect("write the signal file");
    let (mut records, mut replacements) = (1u64, 1u64);
    let end = Instant::now() + HOLD;
    while Instant::now() < end || replacements < MIN_REPLACEMENTS {
        db.set(key(records).as_bytes(), value(records).as_bytes()).expect("set");
        records += 1;
        replace_file(&class, db.as_ref()).expect("replace the file");
        replacements += 1;
    }
    std::fs::write(dir.join("done"), format!("{records} {replacements}")).expect("write the done file");
    db.close().expect("close in the child");
}

/// A child process running [`rebuilding_writer`] on `class` in `dir`.
fn hold(class: &str, dir: &Path) -> Holder {
    let envs = [(ENV_CLASS, class.as_ref()), (ENV_DIR, dir.as_os_str())];
    Holder::start(class, "rebuilding_writer", envs, &dir.join("signal"), Duration::from_secs(60))
}

/// The child's record and replacement counts, once it is about to close.
fn done(dir: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(dir.join("done")).ok()?;
    let (records, replacements) = text.split_once(' ')?;
    Some((records.parse().ok()?, replacements.parse().ok()?))
}

/// Checks that an open beside the child's writer failed as "locked", naming
/// the file; answers false if it succeeded because the child had finished.
#[track_caller]
fn refused(class: &str, dir: &Path, what: &str, result: Result<Box<dyn Dbm>>) -> bool {
    match result {
        Ok(_) => {
            assert!(done(dir).is_some(), "[{class}] {what} opened while another process's writer held it");
            false
        }
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::WouldBlock, "[{class}] {what}: {err}");
            let path = dir.join("casket").display().to_string();
            assert!(err.to_string().contains(&path), "[{class}] {what}: no path in {err}");
            true
        }
    }
}

#[test]
fn a_rebuilding_writer_keeps_other_processes_writers_out_and_loses_nothing() {
    for class in CLASSES {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("casket");
        let holder = hold(class, dir.path());
        let probing = Instant::now() + PROBING;
        let (mut at_once, mut timed) = (0u32, 0u32);
        while Instant::now() < probing {
            let no_wait = open(class, &path, OpenOptions::writer().without_waiting());
            if !refused(class, dir.path(), "a no-wait writer", no_wait) {
                break;
            }
            at_once += 1;
            if at_once % 10 != 0 {
                continue;
            }
            let started = Instant::now();
            let timeout = open(class, &path, OpenOptions::writer().with_lock_timeout(TIMEOUT));
            let waited = started.elapsed();
            assert!(
                waited < TIMEOUT + SLACK,
                "[{class}] a writer with a timeout of {TIMEOUT:?} waited {waited:?}"
            );
            if !refused(class, dir.path(), "a writer with a timeout", timeout) {
                break;
            }
            assert!(waited >= TIMEOUT, "[{class}] gave up before its timeout");
            timed += 1;
        }
        assert!(at_once >= 10 && timed >= 1, "[{class}] too few tries: {at_once} and {timed}");
        // Waits through the child's remaining replacements of the file.
        let writer = open(class, &path, OpenOptions::writer().waiting()).expect("a waiting writer");
        let (records, replacements) = done(dir.path())
            .unwrap_or_else(|| panic!("[{class}] the waiting writer opened before the child closed"));
        assert!(
            replacements >= MIN_REPLACEMENTS,
            "[{class}] the child replaced its file only {replacements} times"
        );
        assert_eq!(writer.count().unwrap(), records, "[{class}] the waiting writer's count");
        for i in 0..records {
            let got = writer.get(key(i).as_bytes()).unwrap();
            assert_eq!(got.as_deref(), Some(value(i).as_bytes()), "[{class}] record {i} of {records}");
        }
        holder.finish();
        writer.set(b"parent", b"last").unwrap();
        replace_file(class, writer.as_ref()).unwrap();
        writer.close().unwrap();
        let reopened = open(class, &path, OpenOptions::writer().without_waiting()).unwrap();
        assert_eq!(reopened.count().unwrap(), records + 1, "[{class}] after the parent's close");
        eprintln!(
            "[{class}] {at_once} + {timed} opens refused; {replacements} replacements, {records} records"
        );
    }
}
