//! Inter-process advisory locks: a writer excludes every other opener, readers
//! share, `no_wait` fails at once with a "locked" error naming the path, waiting
//! openers get the lock once it is released, `no_lock` ignores locks, and
//! `File::lock`/`unlock` behave the same between two handles of one process.
//!
//! The other process is this test binary run again for the ignored test
//! [`lock_holder`], told what to do through environment variables.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::child::Holder;
use common::ExpectSpec;
use kuradb::file::{File, FileKind, FileSpec, LockMode, OpenOptions};
use kuradb::{ErrorKind, Result};

/// How long the child holds its lock after signalling that it has it.
const HOLD: Duration = Duration::from_millis(1200);

const ENV_SPECS: &str = "KURADB_LOCK_TEST_SPECS";
const ENV_PATHS: &str = "KURADB_LOCK_TEST_PATHS";
const ENV_MODE: &str = "KURADB_LOCK_TEST_MODE";
const ENV_SIGNAL: &str = "KURADB_LOCK_TEST_SIGNAL";
const ENV_HOLD_MS: &str = "KURADB_LOCK_TEST_HOLD_MS";

/// Not a test by itself: the child process's entry point. Opens each file named
/// in the environment as a writer or reader, creates the signal file, holds the
/// files open for the given time and closes them. Without the environment (a
/// plain `cargo test -- --ignored`) it does nothing.
#[test]
#[ignore = "the child process of the lock tests"]
fn lock_holder() {
    let Ok(specs) = std::env::var(ENV_SPECS) else { return };
    let paths = std::env::var(ENV_PATHS).expect("paths");
    let writer = std::env::var(ENV_MODE).expect("mode") == "writer";
    let signal = std::env::var(ENV_SIGNAL).expect("signal path");
    let hold: u64 = std::env::var(ENV_HOLD_MS).expect("hold").parse().expect("hold in ms");
    let options = if writer { OpenOptions::writer() } else { OpenOptions::reader() };
    let mut files: Vec<Box<dyn File>> = specs
        .split(';')
        .zip(paths.split(';'))
        .map(|(spec, path)| {
            let spec = FileSpec::parse(spec).expect("parse the spec");
            common::open(&spec, Path::new(path), &options)
        })
        .collect();
    std::fs::write(&signal, b"locked").expect("write the signal file");
    std::thread::sleep(Duration::from_millis(hold));
    for file in &mut files {
        file.close().expect("close in the child");
    }
}

/// Starts a child that opens `files` as a writer or reader and holds them for
/// [`HOLD`]; returns once it has them open, with the moment it knew.
fn hold(files: &[(FileSpec, PathBuf)], writer: bool, signal: &Path) -> (Holder, Instant) {
    let join = |parts: Vec<String>| parts.join(";");
    let envs = [
        (ENV_SPECS, join(files.iter().map(|(s, _)| s.to_string()).collect())),
        (ENV_PATHS, join(files.iter().map(|(_, p)| p.display().to_string()).collect())),
        (ENV_MODE, (if writer { "writer" } else { "reader" }).to_string()),
        (ENV_SIGNAL, signal.display().to_string()),
        (ENV_HOLD_MS, HOLD.as_millis().to_string()),
    ];
    let holder = Holder::start("lock holder", "lock_holder", envs, signal, Duration::from_secs(30));
    (holder, Instant::now())
}

/// The error of an open or lock that must not wait: a "locked" error naming the path.
#[track_caller]
fn assert_locked<T>(spec: &FileSpec, path: &Path, what: &str, result: Result<T>) {
    let err = match result {
        Ok(_) => panic!("[{spec}] {what} succeeded while another holder has a conflicting lock"),
        Err(err) => err,
    };
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "[{spec}] {what}: {err}");
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "[{spec}] {what}: the error does not name the path: {text}"
    );
}

fn plain_specs() -> Vec<FileSpec> {
    FileKind::ALL.into_iter().map(FileSpec::new).collect()
}

/// While another process has a file open for writing, a no-wait writer or reader
/// fails at once with a "locked" error naming the path, a lockless open succeeds
/// at once, and a waiting writer blocks until the other process lets go.
#[test]
fn a_writer_excludes_other_processes() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let files: Vec<(FileSpec, PathBuf)> =
        plain_specs().into_iter().map(|s| (s.clone(), dir.path().join(format!("{}.dat", s.kind)))).collect();
    for (spec, path) in &files {
        let mut file = common::open(spec, path, &OpenOptions::writer());
        file.write(0, b"before").expect_spec(spec, "write");
        file.close().expect_spec(spec, "close");
    }
    let (holder, locked_at) = hold(&files, true, &dir.path().join("signal"));
    for (spec, path) in &files {
        let start = Instant::now();
        assert_locked(
            spec,
            path,
            "a no-wait writer open",
            spec.open(path, &OpenOptions::writer().without_waiting()),
        );
        assert_locked(
            spec,
            path,
            "a no-wait reader open",
            spec.open(path, &OpenOptions::reader().without_waiting()),
        );
        // Failing at once is the default, and the error names who holds the
        // file (Linux lists lock holders), so its user knows what to close.
        let refused = spec.open(path, &OpenOptions::reader()).err().expect("a default open beside a writer");
        assert_eq!(refused.kind(), ErrorKind::WouldBlock, "[{spec}] {refused}");
        if cfg!(target_os = "linux") {
            let named = format!("pid {}", holder.pid());
            assert!(refused.message().contains(&named), "[{spec}] no {named} in {refused}");
            assert!(refused.message().contains("open for writing"), "[{spec}] {refused}");
        }
        assert!(refused.message().contains("wait=true"), "[{spec}] no advice to wait in {refused}");
        let mut lockless = common::open(spec, path, &OpenOptions::reader().without_lock());
        let mut buf = [0u8; 6];
        lockless.read(0, &mut buf).expect_spec(spec, "read without a lock");
        assert_eq!(&buf, b"before", "[{spec}] content read without a lock");
        lockless.close().expect_spec(spec, "close the lockless reader");
        assert!(
            start.elapsed() < HOLD / 2,
            "[{spec}] the no-wait and lockless opens took {:?}",
            start.elapsed()
        );
    }
    std::thread::scope(|s| {
        for (spec, path) in &files {
            s.spawn(move || {
                let mut waiter = common::open(spec, path, &OpenOptions::writer().waiting());
                let waited = locked_at.elapsed();
                assert!(
                    waited >= HOLD - Duration::from_millis(100),
                    "[{spec}] the waiting open returned after {waited:?}"
                );
                waiter.close().expect_spec(spec, "close the waiting writer");
            });
        }
    });
    holder.finish();
    for (spec, path) in &files {
        let mut file = common::open(spec, path, &OpenOptions::writer().without_waiting());
        file.close().expect_spec(spec, "close after the child exited");
    }
}

/// Closing a file releases its lock even while another process holds a copy
/// of the descriptor, as a process forked by another thread does until its
/// exec: without the explicit release, a no-wait open here fails (and a
/// multithreaded program that spawns processes sees its own closed database
/// locked for a moment).
#[test]
fn a_closed_file_releases_its_lock_while_a_copy_of_its_descriptor_lives() {
    use std::os::fd::BorrowedFd;
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in plain_specs() {
        let path = dir.path().join(format!("{}.dat", spec.kind));
        let mut file = common::open(&spec, &path, &OpenOptions::writer());
        let fds = common::descriptors(&path);
        assert_eq!(fds.len(), 1, "[{spec}] descriptors on the file: {fds:?}");
        // SAFETY: the descriptor belongs to `file`, which is open until after
        // the copy is made.
        let copy = unsafe { BorrowedFd::borrow_raw(fds[0]) }.try_clone_to_owned().expect("dup");
        let mut holder = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::from(copy))
            .stdout(Stdio::null())
            .spawn()
            .expect("start sleep");
        file.close().expect_spec(&spec, "close");
        let reopened = spec.open(&path, &OpenOptions::writer().without_waiting());
        let _ = holder.kill();
        let _ = holder.wait();
        let mut reopened =
            reopened.unwrap_or_else(|e| panic!("[{spec}] a no-wait open after the close: {e}"));
        reopened.close().expect_spec(&spec, "close the reopened file");
    }
}

/// Readers in two processes hold the file at once, and exclude a writer.
#[test]
fn readers_share_across_processes() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let files: Vec<(FileSpec, PathBuf)> =
        plain_specs().into_iter().map(|s| (s.clone(), dir.path().join(format!("{}.dat", s.kind)))).collect();
    for (spec, path) in &files {
        let mut file = common::open(spec, path, &OpenOptions::writer());
        file.write(0, b"shared").expect_spec(spec, "write");
        file.close().expect_spec(spec, "close");
    }
    let (holder, _) = hold(&files, false, &dir.path().join("signal"));
    for (spec, path) in &files {
        let start = Instant::now();
        let mut reader = common::open(spec, path, &OpenOptions::reader().without_waiting());
        let mut buf = [0u8; 6];
        reader.read(0, &mut buf).expect_spec(spec, "read");
        assert_eq!(&buf, b"shared", "[{spec}] content");
        assert_locked(
            spec,
            path,
            "a no-wait writer open",
            spec.open(path, &OpenOptions::writer().without_waiting()),
        );
        reader.close().expect_spec(spec, "close the reader");
        assert!(start.elapsed() < HOLD / 2, "[{spec}] the opens took {:?}", start.elapsed());
    }
    holder.finish();
}

/// Within one process, two handles' locks exclude each other the same way:
/// exclusive against everything, shared with shared, `unlock` and `close`
/// release, and a waiting `lock` returns once the other handle unlocks.
#[test]
fn lock_and_unlock_exclude_within_a_process() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in plain_specs() {
        let path = dir.path().join(format!("{}.dat", spec.kind));
        let mut a = common::open(&spec, &path, &OpenOptions::writer());
        assert_locked(
            &spec,
            &path,
            "a second no-wait writer open",
            spec.open(&path, &OpenOptions::writer().without_waiting()),
        );
        assert_locked(
            &spec,
            &path,
            "a no-wait reader open",
            spec.open(&path, &OpenOptions::reader().without_waiting()),
        );
        a.unlock().expect_spec(&spec, "unlock the writer");
        let mut b = common::open(&spec, &path, &OpenOptions::writer().without_lock());

        b.try_lock(LockMode::Shared).expect_spec(&spec, "lock b shared");
        a.try_lock(LockMode::Shared).expect_spec(&spec, "lock a shared beside b");
        a.unlock().expect_spec(&spec, "unlock a");
        assert_locked(
            &spec,
            &path,
            "lock a exclusive beside b's shared lock",
            a.try_lock(LockMode::Exclusive),
        );
        b.unlock().expect_spec(&spec, "unlock b");
        a.try_lock(LockMode::Exclusive).expect_spec(&spec, "lock a exclusive alone");
        assert_locked(&spec, &path, "lock b shared beside a's exclusive lock", b.try_lock(LockMode::Shared));
        assert_locked(
            &spec,
            &path,
            "lock b exclusive beside a's exclusive lock",
            b.try_lock(LockMode::Exclusive),
        );

        let released = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let start = Instant::now();
                b.lock(LockMode::Exclusive).expect_spec(&spec, "lock b exclusive, waiting");
                start.elapsed()
            });
            std::thread::sleep(Duration::from_millis(300));
            a.unlock().expect_spec(&spec, "unlock a");
            waiter.join().expect("the waiting thread panicked")
        });
        assert!(
            released >= Duration::from_millis(250),
            "[{spec}] the waiting lock returned after {released:?}"
        );
        assert_locked(&spec, &path, "lock a shared beside b's exclusive lock", a.try_lock(LockMode::Shared));
        b.close().expect_spec(&spec, "close b");
        a.try_lock(LockMode::Exclusive).expect_spec(&spec, "lock a once b closed");
        a.close().expect_spec(&spec, "close a");
        let mut c = common::open(&spec, &path, &OpenOptions::writer().without_waiting());
        c.close().expect_spec(&spec, "close c");
    }
}
