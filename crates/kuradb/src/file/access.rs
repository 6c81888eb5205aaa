//! What every file implementation checks the same way: opening and locking the
//! OS file as [`OpenOptions`] ask, and the errors of misuse.

use std::fs;

/// The whole-file lock of the atomic memory-mapped file. Its critical
/// sections are memory copies, never a system call, so waiters spin and
/// yield rather than sleep: sleeping and waking in the kernel would cost more
/// than the sections themselves. Take it exclusively only through
/// [`exclusive_spin`], which keeps a stream of readers from starving writers.
pub(crate) type SpinFileLock = spin::rwlock::RwLock<(), spin::relax::Yield>;
/// A shared hold of a [`SpinFileLock`].
pub(crate) type SpinReadGuard<'a> = spin::rwlock::RwLockReadGuard<'a, ()>;
/// An exclusive hold of a [`SpinFileLock`].
pub(crate) type SpinWriteGuard<'a> = spin::rwlock::RwLockWriteGuard<'a, (), spin::relax::Yield>;

/// Takes `lock` exclusively: at once if it is free, else through an upgradable
/// hold, which bars new readers so the writer waits only for those inside.
pub(crate) fn exclusive_spin(lock: &SpinFileLock) -> SpinWriteGuard<'_> {
    lock.try_write().unwrap_or_else(|| lock.upgradeable_read().upgrade())
}

/// The whole-file lock of the atomic positional file, whose every section is a
/// system call. Waiters spin a little, then sleep on a futex until the holder
/// wakes them. With more threads than cores the holder is often preempted
/// inside its `pwrite`; waiters that only spin and yield then hand the CPU to
/// each other rather than to it, with many more system calls and CPU time
/// for the same writes (bench/results/2026-11-28-file-layer.md).
/// parking_lot's lock yields too before it sleeps, and measured between
/// the two; the standard library's lock (on Linux a futex,
/// like the reference's `pthread_rwlock`) does not. It makes readers wait
/// while a writer waits, so a stream of readers cannot starve a writer.
pub(crate) type FileLock = std::sync::RwLock<()>;
/// A shared hold of a [`FileLock`].
pub(crate) type FileReadGuard<'a> = std::sync::RwLockReadGuard<'a, ()>;
/// An exclusive hold of a [`FileLock`].
pub(crate) type FileWriteGuard<'a> = std::sync::RwLockWriteGuard<'a, ()>;

/// Takes `lock` shared. The lock guards no data in memory (its `()` cannot be
/// left half-changed), so a panic while another thread held it (a poisoned
/// lock) changes nothing, and is ignored.
pub(crate) fn shared(lock: &FileLock) -> FileReadGuard<'_> {
    lock.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Takes `lock` exclusively; a poisoned lock is ignored, as in [`shared`].
pub(crate) fn exclusive(lock: &FileLock) -> FileWriteGuard<'_> {
    lock.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

use std::cell::RefCell;
use std::io;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::owner::{FileKey, Owner};
use super::{FileSpec, LockMode, LockWait, OpenOptions, LOCK_WAIT_HINT};
use crate::error::{Error, ErrorKind, Result};
use crate::sys;

/// Opens `path`, claims it in this process's table of open files and takes
/// the lock the options ask for: exclusive for a writer, shared for a reader,
/// none (and no claim) with `no_lock`. A file to be emptied is emptied only
/// once both are held, so a refused open never touches it.
///
/// A lock belongs to the file, not to its name, and a rebuild puts a new file
/// at the path by rename while this opener may be waiting for the old one's
/// lock. So once the lock is granted, the path must still name the locked
/// file; if it names another, the opener lets go and tries the new one.
pub(crate) fn open_locked(
    path: &Path,
    options: &OpenOptions,
    direct: bool,
    sync: bool,
) -> Result<(fs::File, Owner)> {
    let start = Instant::now();
    let mut unexplained = 0;
    while unexplained < MAX_REPLACED {
        let file = open_file(path, options, direct, sync)?;
        if options.no_lock {
            return Ok((truncated(file, path, options)?, Owner::unclaimed()));
        }
        let identity = sys::file_identity(&file).map_err(|e| Error::io("stat", path, e))?;
        let owner = Owner::claim(FileKey::Inode(identity.0, identity.1), options.writable, false, path)?;
        let mode = if options.writable { LockMode::Exclusive } else { LockMode::Shared };
        // The whole wait counts against the timeout, however many files it
        // took to find the current one.
        let waited = lock_since(&file, path, mode, options.lock_wait, start)?;
        match sys::path_identity(path) {
            Ok(now) if now == identity => return Ok((truncated(file, path, options)?, owner)),
            // Replaced (or removed, to be made anew) while this opener waited.
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("stat", path, e)),
        }
        // A writer that held the lock may replace the file as often as it
        // likes; a file replaced while nobody held its lock is suspect.
        if !waited {
            unexplained += 1;
        }
    }
    Err(Error::new(
        ErrorKind::Infeasible,
        format!(
            "{} was replaced by another file {MAX_REPLACED} times while this process took its lock: \
             something replaces it without holding the lock",
            path.display()
        ),
    ))
}

/// The most times an opener finds the file it locked at once replaced before
/// it gives up: with no writer holding the lock in between, this many means
/// that something replaces the file without holding it. (Replacements by a
/// writer it waited for do not count: a waiting opener waits them out.)
const MAX_REPLACED: u32 = 1000;

fn open_file(path: &Path, options: &OpenOptions, direct: bool, sync: bool) -> Result<fs::File> {
    let flags = sys::OpenFlags { writable: options.writable, create: options.create, direct, sync };
    sys::open(path, &flags).map_err(|e| {
        if e.kind() == io::ErrorKind::Unsupported {
            Error::io("open with direct I/O", path, e).with_kind(ErrorKind::NotImplemented)
        } else {
            let mode = if options.writable { "open for writing" } else { "open for reading" };
            Error::io(mode, path, e)
        }
    })
}

/// `file`, emptied first if the options ask for it.
fn truncated(file: fs::File, path: &Path, options: &OpenOptions) -> Result<fs::File> {
    if options.writable && options.truncate {
        file.set_len(0).map_err(|e| Error::io("truncate to 0 bytes", path, e))?;
    }
    Ok(file)
}

/// The longest pause between two tries of a lock a waiter makes: how late it
/// may notice that the lock was released, or that it was interrupted.
const MAX_LOCK_PAUSE: Duration = Duration::from_millis(20);

thread_local! {
    /// What [`with_lock_interrupt`] asks while this thread waits for a lock.
    static INTERRUPT: RefCell<Option<Rc<dyn Fn() -> bool>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread; while anything in it waits for an inter-process
/// lock, `interrupted` is asked between tries (at least every 20 ms) whether
/// to give up, and if it answers `true` the wait fails with
/// [`ErrorKind::Canceled`]. A binding uses it to let its language's interrupt
/// (Python's Ctrl-C) stop an open that waits for another process.
///
/// ```
/// use kuradb::file::with_lock_interrupt;
/// let answer = with_lock_interrupt(|| false, || 42);
/// assert_eq!(answer, 42);
/// ```
pub fn with_lock_interrupt<T>(interrupted: impl Fn() -> bool + 'static, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Rc<dyn Fn() -> bool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            INTERRUPT.with(|slot| *slot.borrow_mut() = previous);
        }
    }
    let previous = INTERRUPT.with(|slot| slot.borrow_mut().replace(Rc::new(interrupted)));
    let _restore = Restore(previous);
    f()
}

fn interrupted() -> bool {
    let check = INTERRUPT.with(|slot| slot.borrow().clone());
    check.is_some_and(|check| check())
}

/// Takes the inter-process lock of an open file. Without `wait` a conflicting
/// lock fails at once with a "locked" error; with it the caller waits, and an
/// interrupt (see [`with_lock_interrupt`]) ends the wait.
pub(crate) fn lock(file: &fs::File, path: &Path, mode: LockMode, wait: bool) -> Result<()> {
    let wait = if wait { LockWait::Forever } else { LockWait::Fail };
    lock_since(file, path, mode, wait, Instant::now()).map(|_| ())
}

/// Takes the inter-process lock of an open file as `wait` says, a timeout
/// counted from `start`: an opener that found the file it waited for
/// replaced, and waits again for the new one, waits no longer in all than it
/// was told. Answers whether it had to wait: whether another holder had the
/// lock.
pub(crate) fn lock_since(
    file: &fs::File,
    path: &Path,
    mode: LockMode,
    wait: LockWait,
    start: Instant,
) -> Result<bool> {
    let what = match mode {
        LockMode::Exclusive => "exclusive lock",
        LockMode::Shared => "shared lock",
    };
    let mut pause = Duration::from_micros(200);
    let mut waited_before = false;
    loop {
        match sys::try_lock(file, mode == LockMode::Exclusive) {
            Ok(()) => return Ok(waited_before),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if wait == LockWait::Fail {
                    return Err(locked(file, path, None));
                }
            }
            Err(e) => return Err(Error::io(what, path, e)),
        }
        let waited = start.elapsed();
        if let LockWait::Timeout(limit) = wait {
            if waited >= limit {
                return Err(locked(file, path, Some(limit)));
            }
            pause = pause.min(limit - waited);
        }
        if interrupted() {
            return Err(Error::new(
                ErrorKind::Canceled,
                format!("the wait for the {what} of {} was interrupted", path.display()),
            ));
        }
        waited_before = true;
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_LOCK_PAUSE);
    }
}

/// The "locked" error of a file another process holds: who holds it (where
/// the platform says), what to do about it, and, after a timed wait, that
/// the wait gave up. Every front end shows this one message.
fn locked(file: &fs::File, path: &Path, gave_up_after: Option<Duration>) -> Error {
    let holder = sys::file_identity(file).ok().and_then(|(dev, ino)| sys::lock_holder(dev, ino));
    let who = match holder {
        Some(sys::LockHolder { pid, program, writer }) => format!(
            "another process (pid {pid}{}) that has it open for {}",
            program.map(|p| format!(", {p}")).unwrap_or_default(),
            if writer { "writing" } else { "reading" }
        ),
        None => "another process that has it open".to_owned(),
    };
    let message = match gave_up_after {
        None => format!(
            "{} is locked by {who}; try again once that process closes it, or {LOCK_WAIT_HINT}",
            path.display()
        ),
        Some(limit) => format!(
            "gave up waiting for {} after {:.3} s: it is locked by {who}",
            path.display(),
            limit.as_secs_f64()
        ),
    };
    Error::new(ErrorKind::WouldBlock, message)
}

/// Renames the file at `from` to `to`, replacing any file there.
pub(crate) fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| Error::io(format_args!("rename of {} to", from.display()), to, e))
}

/// How much of a file [`write_back`] writes in one step, and waits for:
/// about what a read of another file may wait behind. Small beside a large
/// copy's data, large enough that the waits between steps cost little.
const WRITE_BACK_STEP: u64 = 16 << 20;

/// Writes the changed pages of `file`'s first `size` bytes to the device,
/// [`WRITE_BACK_STEP`] bytes at a time, each waited for (see
/// [`super::File::write_back`]).
pub(crate) fn write_back(file: &fs::File, path: &Path, size: u64) -> Result<()> {
    let mut done = 0;
    while done < size {
        let len = WRITE_BACK_STEP.min(size - done);
        sys::write_back(file, done, len).map_err(|e| Error::io("write-back", path, e))?;
        done += len;
    }
    Ok(())
}

/// Releases the inter-process lock of an open file.
pub(crate) fn unlock(file: &fs::File, path: &Path) -> Result<()> {
    sys::unlock(file).map_err(|e| Error::io("unlock", path, e))
}

pub(crate) fn closed(path: &Path) -> Error {
    Error::new(ErrorKind::Infeasible, format!("{} is closed", path.display()))
}

/// Checks that `len` bytes at `offset` lie inside a file of logical `size`.
pub(crate) fn check_read(path: &Path, offset: u64, len: usize, size: u64) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::new(
            ErrorKind::Infeasible,
            format!(
                "read of {len} bytes at offset {offset} of {} passes its end ({size} bytes)",
                path.display()
            ),
        )),
    }
}

/// Checks that a write may happen and returns where it ends.
pub(crate) fn check_write(
    path: &Path,
    writable: bool,
    poisoned: bool,
    offset: u64,
    len: usize,
) -> Result<u64> {
    if !writable {
        return Err(Error::new(
            ErrorKind::Infeasible,
            format!("write to {}, which is open for reading only", path.display()),
        ));
    }
    if poisoned {
        return Err(Error::new(
            ErrorKind::Infeasible,
            format!(
                "write to {} refused: a hard synchronization failed, so what the device holds is \
                 unknown; reopen the file",
                path.display()
            ),
        ));
    }
    offset.checked_add(len as u64).filter(|&end| end <= i64::MAX as u64).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "write of {len} bytes at offset {offset} of {} passes the largest file size",
                path.display()
            ),
        )
    })
}

/// The name/value pairs every implementation's `inspect` starts with; `None`
/// for a closed file.
pub(crate) fn describe(path: &Path, open: Option<(&FileSpec, u64, bool)>) -> Vec<(String, String)> {
    let mut out = vec![("path".to_string(), path.display().to_string())];
    match open {
        None => out.push(("open".into(), "false".into())),
        Some((spec, size, writable)) => {
            out.push(("class".into(), spec.kind.class_name().into()));
            out.push(("spec".into(), spec.to_string()));
            out.push(("size".into(), size.to_string()));
            out.push(("writable".into(), writable.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Readers whose holds overlap keep the positional file's lock shared
    /// without a break; a writer must still get it, which a lock that lets
    /// new readers pass a waiting writer never gives it.
    #[test]
    fn a_writer_gets_the_lock_while_readers_overlap() {
        const READERS: usize = 4;
        const LIMIT: Duration = Duration::from_secs(5);
        let lock = FileLock::new(());
        let stop = AtomicBool::new(false);
        let wrote = AtomicBool::new(false);
        let got_in = std::thread::scope(|s| {
            for _ in 0..READERS {
                s.spawn(|| {
                    while !stop.load(Ordering::Acquire) {
                        let _shared = shared(&lock);
                        std::thread::sleep(Duration::from_micros(300));
                    }
                });
            }
            // Every reader holds or is about to: the lock is never free.
            std::thread::sleep(Duration::from_millis(20));
            s.spawn(|| {
                let _exclusive = exclusive(&lock);
                wrote.store(true, Ordering::Release);
            });
            let start = Instant::now();
            while !wrote.load(Ordering::Acquire) && start.elapsed() < LIMIT {
                std::thread::sleep(Duration::from_millis(1));
            }
            let got_in = wrote.load(Ordering::Acquire);
            // Stopped either way, so a starved writer fails the test rather than hanging it.
            stop.store(true, Ordering::Release);
            got_in
        });
        assert!(got_in, "the writer waited {LIMIT:?} while readers kept the lock");
    }

    /// A thread that panicked while it held the lock leaves nothing half-done
    /// that the lock guards, so the file's other threads go on using it.
    #[test]
    fn a_panic_under_the_lock_does_not_block_the_file() {
        let lock = FileLock::new(());
        let panicked = std::thread::scope(|s| {
            s.spawn(|| {
                let _exclusive = exclusive(&lock);
                panic!("a panic inside a write (expected by this test)");
            })
            .join()
        });
        assert!(panicked.is_err() && lock.is_poisoned());
        drop(shared(&lock));
        drop(exclusive(&lock));
    }
}
