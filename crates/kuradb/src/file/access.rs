//! What every file implementation checks the same way: opening and locking the
//! OS file as [`OpenOptions`] ask, and the errors of misuse.

use std::fs;

/// The whole-file lock of the atomic kinds. Its critical sections are short
/// (one copy or one system call), so waiters spin and yield rather than sleep:
/// measured with ten threads on two cores, sleeping and waking in the kernel
/// cost more than the sections themselves. Take it exclusively only through
/// [`exclusive`], which keeps a stream of readers from starving writers.
pub(crate) type FileLock = spin::rwlock::RwLock<(), spin::relax::Yield>;
/// A shared hold of a [`FileLock`].
pub(crate) type FileReadGuard<'a> = spin::rwlock::RwLockReadGuard<'a, ()>;
/// An exclusive hold of a [`FileLock`].
pub(crate) type FileWriteGuard<'a> = spin::rwlock::RwLockWriteGuard<'a, (), spin::relax::Yield>;

/// Takes `lock` exclusively: at once if it is free, else through an upgradable
/// hold, which bars new readers so the writer waits only for those inside.
pub(crate) fn exclusive(lock: &FileLock) -> FileWriteGuard<'_> {
    lock.try_write().unwrap_or_else(|| lock.upgradeable_read().upgrade())
}
use std::io;
use std::path::Path;

use super::{FileSpec, LockMode, OpenOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::sys;

/// Opens `path` and takes the lock the options ask for: exclusive for a writer,
/// shared for a reader, none with `no_lock`.
pub(crate) fn open_locked(path: &Path, options: &OpenOptions, direct: bool, sync: bool) -> Result<fs::File> {
    let flags = sys::OpenFlags {
        writable: options.writable,
        create: options.create,
        truncate: options.truncate,
        direct,
        sync,
    };
    let file = sys::open(path, &flags).map_err(|e| {
        if e.kind() == io::ErrorKind::Unsupported {
            Error::io("open with direct I/O", path, e).with_kind(ErrorKind::NotImplemented)
        } else {
            let mode = if options.writable { "open for writing" } else { "open for reading" };
            Error::io(mode, path, e)
        }
    })?;
    if !options.no_lock {
        let mode = if options.writable { LockMode::Exclusive } else { LockMode::Shared };
        lock(&file, path, mode, !options.no_wait)?;
    }
    Ok(file)
}

/// Takes the inter-process lock of an open file.
pub(crate) fn lock(file: &fs::File, path: &Path, mode: LockMode, wait: bool) -> Result<()> {
    let what = match mode {
        LockMode::Exclusive => "exclusive lock",
        LockMode::Shared => "shared lock",
    };
    sys::lock(file, mode == LockMode::Exclusive, wait).map_err(|e| Error::io(what, path, e))
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
