//! One handle per file per process, no handle used after `fork`, and lock
//! waits that end.
//!
//! A second open of a file this process holds for writing fails at once with
//! a "locked" error (it used to wait for ever for its own process's lock);
//! readers share. A handle used in a forked child refuses every call and
//! touches nothing on disk, so the parent's database stays intact. A wait for
//! another process's lock gives up after `lock_timeout`, and an interrupt
//! (what the Python binding's Ctrl-C uses) ends it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::hash::{HashDbm, HashOptions};
use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::skip::{SkipDbm, SkipOptions};
use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{with_lock_interrupt, FileKind, FileSpec};
use kuradb::{ErrorKind, Result};

type Opener = fn(&Path, bool) -> Result<Box<dyn Dbm>>;

/// Every test here runs alone. A forked child inherits only the thread that
/// forked, so a lock another test's thread held at that moment (kuradb's
/// table of open files, taken by every open and close) would stay locked in
/// the child for ever, and a child that opens a database would hang.
static ALONE: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn hash_mmap(path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    let o = HashOptions::default().num_buckets(101);
    Ok(Box::new(HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &o)?))
}

/// [`hash_mmap`] waiting for another process's lock rather than failing at once.
fn hash_mmap_waiting(path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    let mut o = HashOptions::default().num_buckets(101);
    o.open = o.open.waiting();
    Ok(Box::new(HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &o)?))
}

fn hash_pagecache(path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    let mut file = FileSpec::new(FileKind::PositionalParallel);
    file.block_size = 512;
    file.pagecache = true;
    let o = HashOptions::default().num_buckets(101).file(file);
    Ok(Box::new(HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &o)?))
}

fn tree(path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    Ok(Box::new(TreeDbm::open(
        path,
        if writable { Access::ReadWrite } else { Access::ReadOnly },
        &TreeOptions::default(),
    )?))
}

fn skip(path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    Ok(Box::new(SkipDbm::open(
        path,
        if writable { Access::ReadWrite } else { Access::ReadOnly },
        &SkipOptions::default(),
    )?))
}

fn baby(path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    Ok(Box::new(BabyDbm::open(
        path,
        if writable { Access::ReadWrite } else { Access::ReadOnly },
        &BabyOptions::default(),
    )?))
}

/// The file databases, each on the files it is most often used with.
const FILE_DBMS: [(&str, Opener); 4] = [
    ("hash mmap", hash_mmap),
    ("hash pos-para block 512 page cache", hash_pagecache),
    ("tree", tree),
    ("skip", skip),
];

/// Every class with a file, the on-memory one's flat file included.
const ALL_DBMS: [(&str, Opener); 5] = [
    ("hash mmap", hash_mmap),
    ("hash pos-para block 512 page cache", hash_pagecache),
    ("tree", tree),
    ("skip", skip),
    ("baby with a flat file", baby),
];

/// Asserts that `open` fails at once with a "locked" error naming `path`,
/// the path it was given.
#[track_caller]
fn assert_refused_at_once(name: &str, what: &str, path: &Path, open: impl FnOnce() -> Result<Box<dyn Dbm>>) {
    let start = Instant::now();
    let err = match open() {
        Ok(_) => panic!("[{name}] {what} succeeded beside the open writer"),
        Err(err) => err,
    };
    assert!(start.elapsed() < Duration::from_secs(2), "[{name}] {what} took {:?}", start.elapsed());
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "[{name}] {what}: {err}");
    let text = err.to_string();
    assert!(
        text.contains(&path.display().to_string())
            && text.contains("already open")
            && text.contains("this process"),
        "[{name}] {what}: the error does not say what is wrong: {text}"
    );
}

/// A second writer or a reader of a file this process holds for writing is
/// refused at once, naming the file; once the writer closes, both open.
#[test]
fn a_second_open_beside_a_writer_fails_at_once() {
    let _alone = alone();
    for (name, open) in FILE_DBMS {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("casket");
        let writer = open(&path, true).unwrap_or_else(|e| panic!("[{name}] open the writer: {e}"));
        writer.set(b"k", b"v").expect("set");
        writer.synchronize(Durability::Soft).expect("synchronize");
        assert_refused_at_once(name, "a second writer", &path, || open(&path, true));
        assert_refused_at_once(name, "a reader", &path, || open(&path, false));
        // Through another spelling of the same file too.
        let other = dir.path().join(".").join("casket");
        assert_refused_at_once(name, "a writer by another path", &other, || open(&other, true));
        assert_eq!(
            writer.get(b"k").expect("get").as_deref(),
            Some(&b"v"[..]),
            "[{name}] the writer works on"
        );
        drop(writer);
        let again = open(&path, true).unwrap_or_else(|e| panic!("[{name}] reopen after close: {e}"));
        assert_eq!(again.get(b"k").expect("get").as_deref(), Some(&b"v"[..]), "[{name}]");
    }
}

/// Readers in one process share a file; a writer beside them is refused at
/// once, and opens once they are closed.
#[test]
fn readers_share_and_keep_a_writer_out() {
    let _alone = alone();
    for (name, open) in FILE_DBMS {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("casket");
        let writer = open(&path, true).unwrap_or_else(|e| panic!("[{name}] create: {e}"));
        writer.set(b"k", b"v").expect("set");
        drop(writer);
        let a = open(&path, false).unwrap_or_else(|e| panic!("[{name}] a first reader: {e}"));
        let b = open(&path, false).unwrap_or_else(|e| panic!("[{name}] a second reader: {e}"));
        assert_eq!(b.get(b"k").expect("get").as_deref(), Some(&b"v"[..]), "[{name}]");
        let start = Instant::now();
        let err =
            open(&path, true).err().unwrap_or_else(|| panic!("[{name}] a writer opened beside readers"));
        assert!(start.elapsed() < Duration::from_secs(2), "[{name}] the refusal waited");
        assert_eq!(err.kind(), ErrorKind::WouldBlock, "[{name}] {err}");
        assert!(err.to_string().contains("already open for reading in this process"), "[{name}] {err}");
        drop((a, b));
        open(&path, true).unwrap_or_else(|e| panic!("[{name}] a writer once the readers closed: {e}"));
    }
}

/// An on-memory database's flat file is replaced whole at every save, so a
/// reader may open it beside the writer; a second writer, whose saves would
/// overwrite the first's, is refused.
#[test]
fn a_flat_file_takes_readers_beside_its_one_writer() {
    let _alone = alone();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("casket.flat");
    let writer = baby(&path, true).expect("open the writer");
    writer.set(b"k", b"v").expect("set");
    writer.synchronize(Durability::Soft).expect("synchronize");
    assert_refused_at_once("baby", "a second writer", &path, || baby(&path, true));
    let reader = baby(&path, false).expect("a reader beside the writer");
    assert_eq!(reader.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
}

/// What a forked child did with its inherited handle: the exit code says
/// which step went wrong (0: every call was refused as it should be).
fn in_child(db: &dyn Dbm) -> i32 {
    let refused = |r: Result<()>| {
        matches!(r, Err(e) if e.kind() == ErrorKind::Infeasible
        && e.to_string().contains("cannot be used in another process"))
    };
    if !refused(db.get(b"k").map(drop)) {
        return 2;
    }
    if !refused(db.set(b"k", b"child")) {
        return 3;
    }
    if !refused(db.set(b"new in the child", b"x")) {
        return 4;
    }
    if !refused(db.remove(b"k").map(drop)) {
        return 5;
    }
    if !refused(db.synchronize(Durability::Hard)) {
        return 6;
    }
    if !refused(db.clear()) {
        return 7;
    }
    0
}

/// Forks; the child runs `child` on the inherited handle, then drops it (as a
/// child that exits normally would) and leaves without running the parent's
/// cleanup. Answers the child's exit code.
fn fork_and_run(db: Box<dyn Dbm>, child: impl FnOnce(&dyn Dbm) -> i32) -> (Box<dyn Dbm>, i32) {
    // SAFETY: the child calls only kuradb and then _exit; no other thread
    // runs kuradb meanwhile (`alone`), so none of its locks was held at the
    // fork; glibc makes malloc usable after fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = child(db.as_ref());
        drop(db);
        // SAFETY: ends the child at once, without the parent's atexit work.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child this call forked.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid, "waitpid");
    assert!(libc::WIFEXITED(status), "the child did not exit normally: status {status}");
    (db, libc::WEXITSTATUS(status))
}

fn every_file(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("list the directory")
        .map(|e| e.expect("entry").path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
        .collect();
    files.sort();
    files
}

/// A handle used in a forked child refuses every call and, dropped there,
/// writes back, renames and unlocks nothing: the files are byte for byte what
/// the parent left, and the parent goes on using its handle.
#[test]
fn a_handle_in_a_forked_child_refuses_everything_and_touches_nothing() {
    let _alone = alone();
    for (name, open) in ALL_DBMS {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("casket");
        let db = open(&path, true).unwrap_or_else(|e| panic!("[{name}] open: {e}"));
        for i in 0..200u32 {
            db.set(format!("key{i}").as_bytes(), format!("value{i}").as_bytes()).expect("set");
        }
        db.set(b"k", b"parent").expect("set");
        db.synchronize(Durability::Soft).expect("synchronize");
        // Changes the child's drop would write back if it could.
        db.set(b"unsynchronized", b"pending").expect("set");
        let before = every_file(dir.path());
        let (db, code) = fork_and_run(db, in_child);
        assert_eq!(code, 0, "[{name}] the child's handle did not refuse step {code} (see in_child)");
        assert_eq!(every_file(dir.path()), before, "[{name}] the child changed the files");
        assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"parent"[..]), "[{name}]");
        db.set(b"after the fork", b"yes").expect("the parent writes on");
        drop(db);
        let db = open(&path, false).unwrap_or_else(|e| panic!("[{name}] reopen: {e}"));
        assert_eq!(db.count().expect("count"), 203, "[{name}]");
        assert_eq!(db.get(b"unsynchronized").expect("get").as_deref(), Some(&b"pending"[..]), "[{name}]");
        assert_eq!(db.get(b"new in the child").expect("get"), None, "[{name}]");
    }
}

/// In a forked child the parent's handles do not count as this process's:
/// a new open there meets the parent's lock as another process's (it waits,
/// here up to `lock_timeout`), not as a second handle of its own.
#[test]
fn a_forked_child_meets_its_parents_lock_as_another_process() {
    let _alone = alone();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("casket.kh");
    let writer = hash_mmap(&path, true).expect("create");
    writer.set(b"k", b"v").expect("set");
    let child = |_: &dyn Dbm| -> i32 {
        let params = Params::parse("lock_timeout=0.2").expect("params");
        match PolyDbm::open(&path, Access::ReadWrite, &params) {
            Ok(_) => 2,
            Err(e) if e.to_string().contains("gave up waiting") => 0,
            Err(_) => 3,
        }
    };
    let (_writer, code) = fork_and_run(writer, child);
    assert_eq!(code, 0, "the child's open was not refused for the parent's lock (step {code})");
}

/// Starts a process that holds `path` open for writing (through a fork)
/// until the returned pipe closes; returns once it holds it.
fn hold_in_another_process(path: &Path) -> (libc::pid_t, std::fs::File) {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let mut ready = [0i32; 2];
    let mut release = [0i32; 2];
    // SAFETY: pipe fills the two arrays with new descriptors we own.
    unsafe {
        assert_eq!(libc::pipe(ready.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(release.as_mut_ptr()), 0);
    }
    // SAFETY: the child opens its own handle (no other thread runs kuradb
    // meanwhile, see `alone`) and waits on a pipe, then _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        let code = match hash_mmap(path, true) {
            Ok(db) => {
                let mut byte = [1u8];
                // SAFETY: writes one byte from a live buffer to our pipe's
                // write end, then blocks reading the other pipe until the
                // parent closes its end.
                unsafe {
                    libc::write(ready[1], byte.as_ptr().cast(), 1);
                    libc::close(release[1]);
                    libc::read(release[0], byte.as_mut_ptr().cast(), 1);
                }
                drop(db);
                0
            }
            Err(_) => 1,
        };
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(code) };
    }
    // SAFETY: the descriptors are ours; each is owned by exactly one File.
    let (mut ready_read, release_write) = unsafe {
        libc::close(ready[1]);
        libc::close(release[0]);
        (std::fs::File::from_raw_fd(ready[0]), std::fs::File::from_raw_fd(release[1]))
    };
    let mut byte = [0u8];
    ready_read.read_exact(&mut byte).expect("the holder's signal");
    (pid, release_write)
}

fn finish_holder(pid: libc::pid_t, release: std::fs::File) {
    drop(release);
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the holder failed: {status}");
}

/// A wait for another process's lock gives up after `lock_timeout` with a
/// "locked" error that says so; an interrupt ends a wait without a limit.
#[test]
fn lock_waits_time_out_and_can_be_interrupted() {
    let _alone = alone();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("casket.kh");
    hash_mmap(&path, true).expect("create");
    let (pid, release) = hold_in_another_process(&path);

    let start = Instant::now();
    let params = Params::parse("lock_timeout=0.3").expect("params");
    let err = PolyDbm::open(&path, Access::ReadWrite, &params)
        .err()
        .expect("opened beside another process's writer");
    let waited = start.elapsed();
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
    assert!(err.to_string().contains("gave up waiting"), "{err}");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5), "waited {waited:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let setter = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        })
    };
    let start = Instant::now();
    let flag = stop.clone();
    let err = with_lock_interrupt(move || flag.load(Ordering::Relaxed), || hash_mmap_waiting(&path, true))
        .err()
        .expect("opened beside another process's writer");
    setter.join().expect("the setter");
    assert_eq!(err.kind(), ErrorKind::Canceled, "{err}");
    assert!(err.to_string().contains("interrupted"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5), "the interrupt took {:?}", start.elapsed());

    // Released, the lock is taken by a waiter.
    let waiter = std::thread::spawn({
        let path = path.clone();
        move || hash_mmap_waiting(&path, true).map(drop)
    });
    std::thread::sleep(Duration::from_millis(100));
    finish_holder(pid, release);
    waiter.join().expect("the waiter").expect("the waiting open once the holder left");
}
