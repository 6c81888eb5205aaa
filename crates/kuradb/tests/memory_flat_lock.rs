//! The flat file of an on-memory database between processes: while one
//! process's writer holds it, another's writer fails at once with a "locked"
//! error naming the file (`no_wait`), gives up after its `lock_timeout`, or
//! waits and then reads everything the first one saved, though the first one
//! replaced the file (each save renames a new file into place) while it
//! waited. Readers open beside the writer and read its last save.
//!
//! The other process is this test binary run again for the ignored test
//! [`flat_holder`], told what to do through environment variables.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::child::Holder;
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::LockWait;
use kuradb::{BabyDbm, BabyOptions, CacheDbm, CacheOptions, ErrorKind, FlatLock, Result};
use kuradb::{StdHashDbm, StdOptions, StdTreeDbm, TinyDbm, TinyOptions};

const NAMES: [&str; 5] = ["stdhash", "stdtree", "tiny", "baby", "cache"];
const ENV_NAME: &str = "KURADB_FLAT_LOCK_NAME";
const ENV_PATH: &str = "KURADB_FLAT_LOCK_PATH";
const ENV_SIGNAL: &str = "KURADB_FLAT_LOCK_SIGNAL";
/// How long the child holds the file after signalling, saving again half way.
const HOLD: Duration = Duration::from_millis(1500);

fn open(name: &str, path: &Path, writable: bool, lock: FlatLock) -> Result<Box<dyn Dbm>> {
    Ok(match name {
        "stdhash" => Box::new(StdHashDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &StdOptions::default().lock(lock),
        )?),
        "stdtree" => Box::new(StdTreeDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &StdOptions::default().lock(lock),
        )?),
        "tiny" => Box::new(TinyDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &TinyOptions::default().lock(lock),
        )?),
        "baby" => Box::new(BabyDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &BabyOptions::default().lock(lock),
        )?),
        _ => Box::new(CacheDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &CacheOptions::default().lock(lock),
        )?),
    })
}

/// Not a test by itself: the child process's entry point. Opens the database
/// as a writer, saves a record, signals, saves another half way through its
/// hold and closes. Without the environment it does nothing.
#[test]
#[ignore = "the child process of the flat lock tests"]
fn flat_holder() {
    let Ok(name) = std::env::var(ENV_NAME) else { return };
    let path = PathBuf::from(std::env::var(ENV_PATH).expect("path"));
    let signal = std::env::var(ENV_SIGNAL).expect("signal path");
    let db = open(&name, &path, true, FlatLock::default()).expect("open in the child");
    db.set(b"first", b"from the child").expect("set");
    db.synchronize(Durability::Soft).expect("synchronize");
    std::fs::write(&signal, b"locked").expect("write the signal file");
    std::thread::sleep(HOLD / 2);
    db.set(b"second", b"from the child").expect("set");
    db.synchronize(Durability::Soft).expect("synchronize");
    std::thread::sleep(HOLD / 2);
    db.set(b"third", b"at close").expect("set");
    drop(db);
}

/// A child process holding `name`'s writer on `path`.
fn hold(name: &str, path: &Path, signal: &Path) -> Holder {
    let envs = [(ENV_NAME, name.as_ref()), (ENV_PATH, path.as_os_str()), (ENV_SIGNAL, signal.as_os_str())];
    Holder::start(name, "flat_holder", envs, signal, Duration::from_secs(30))
}

#[track_caller]
fn assert_locked(name: &str, path: &Path, what: &str, result: Result<Box<dyn Dbm>>) {
    let err =
        result.err().unwrap_or_else(|| panic!("[{name}] {what} opened beside another process's writer"));
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "[{name}] {what}: {err}");
    assert!(err.to_string().contains(&path.display().to_string()), "[{name}] {what}: no path in {err}");
}

#[test]
fn a_writer_excludes_writers_of_other_processes_and_readers_see_its_saves() {
    for name in NAMES {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("shared.flat");
        let holder = hold(name, &path, &dir.path().join("signal"));
        assert_locked(
            name,
            &path,
            "a no-wait writer",
            open(name, &path, true, FlatLock::default().wait(LockWait::Fail)),
        );
        let started = Instant::now();
        let timeout = FlatLock::default().wait(LockWait::Timeout(Duration::from_millis(200)));
        assert_locked(name, &path, "a writer with a timeout", open(name, &path, true, timeout));
        assert!(started.elapsed() >= Duration::from_millis(200), "[{name}] gave up before its timeout");
        let reader = open(name, &path, false, FlatLock::default()).expect("a reader beside the writer");
        assert_eq!(reader.get(b"first").unwrap().as_deref(), Some(&b"from the child"[..]), "[{name}]");
        drop(reader);
        // By default a writer fails at once, naming the process that holds the file.
        let refused = open(name, &path, true, FlatLock::default());
        assert_locked(name, &path, "a writer by default", refused);
        // Waits through the child's second save, which replaces the file it waits on.
        let writer =
            open(name, &path, true, FlatLock::default().wait(LockWait::Forever)).expect("a waiting writer");
        for key in [&b"first"[..], b"second", b"third"] {
            assert!(writer.get(key).unwrap().is_some(), "[{name}] the waiting writer lost {key:?}");
        }
        holder.finish();
        writer.set(b"fourth", b"parent").unwrap();
        drop(writer);
        assert_eq!(open(name, &path, false, FlatLock::default()).unwrap().count().unwrap(), 4, "[{name}]");
    }
}

#[test]
fn no_lock_opens_beside_a_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.flat");
    let holder = hold("tiny", &path, &dir.path().join("signal"));
    let db = open("tiny", &path, true, FlatLock::default().no_lock(true)).expect("no_lock");
    assert_eq!(db.get(b"first").unwrap().as_deref(), Some(&b"from the child"[..]));
    drop(db);
    holder.finish();
}
