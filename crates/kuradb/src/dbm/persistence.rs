//! What an on-memory database keeps about its flat file: where it is, whether
//! the database may change it, the process that opened it, and a writer's
//! inter-process lock, which keeps a second writer out.
//!
//! The flat file is replaced whole at every save (written beside, renamed
//! over), so a lock on it would stay behind on the replaced file. A writer
//! therefore locks each file it writes before renaming it into place and
//! lets go of the old one after: the file at the path is always the locked
//! one. An opener whose lock was granted on a file replaced meanwhile finds
//! that the path names another file now, and tries again. Readers take no
//! lock: every file they can open is one complete save.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use parking_lot::Mutex;

use super::flat::{self, FlatWriter};
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{self, temp_beside, FileKey, LockMode, LockWait, Owner};
use crate::sys;

/// How the writer of an on-memory database locks its flat file against
/// writers in other processes (readers are never locked out).
///
/// ```
/// use std::time::Duration;
/// use kuradb::file::LockWait;
/// use kuradb::{FlatLock, TinyDbm, TinyOptions};
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("a.flat");
/// // Another process's writer is waited for up to five seconds, then "locked".
/// let options = TinyOptions::default().lock(FlatLock::default().wait(LockWait::Timeout(Duration::from_secs(5))));
/// let db = options.open(&path)?;
/// db.close()?;
/// # Ok::<(), kuradb::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlatLock {
    /// What to do while another process's writer holds the file: fail at
    /// once (the default), wait a while, or wait as long as it takes.
    pub wait: LockWait,
    /// Take no lock: the caller keeps other writers away.
    pub no_lock: bool,
}

impl FlatLock {
    /// `self` waiting for another process's writer as `wait` says.
    pub fn wait(mut self, wait: LockWait) -> FlatLock {
        self.wait = wait;
        self
    }

    /// `self` taking no lock at all.
    pub fn no_lock(mut self, no_lock: bool) -> FlatLock {
        self.no_lock = no_lock;
        self
    }
}

/// The most times an opener finds the file missing, or replaced though it
/// got the lock at once, before it gives up: this many means that something
/// replaces the file without taking its lock. (Saves of a writer it waited
/// for do not count: a waiting opener waits them out.)
const MAX_LOCK_TRIES: u32 = 1000;

/// An on-memory database's flat file, as the database holds it.
#[derive(Debug)]
pub(crate) struct Persistence {
    pub path: Option<PathBuf>,
    pub writable: bool,
    owner: Option<Owner>,
    /// A writer's open and locked flat file: the one at `path`.
    held: Mutex<Option<File>>,
}

impl Persistence {
    /// No file: purely in memory, always writable.
    pub(crate) fn none() -> Persistence {
        Persistence { path: None, writable: true, owner: None, held: Mutex::new(None) }
    }

    /// Reads the flat file at `path` into `load` unless `truncate`. A
    /// missing file is an empty database for a writer (which makes it, to
    /// lock it) and an error for a reader.
    pub(crate) fn open(
        path: &Path,
        access: Access,
        truncate: bool,
        lock: &FlatLock,
        load: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<Persistence> {
        // Readers may open beside a writer: the file is only ever replaced
        // whole, so they read one complete synchronized state.
        let owner = Owner::claim(FileKey::for_path(path), access.is_writable(), true, path)?;
        let held = if access.is_writable() && !lock.no_lock { Some(lock_current(path, lock)?) } else { None };
        if held.is_some() {
            // Only the lock's holder writes the next file there: one left
            // there is a crashed save's.
            let _ = std::fs::remove_file(temp_beside(path, "flat"));
        }
        let exists = path.exists();
        if !exists && !access.is_writable() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the flat file {} does not exist and the database is opened for reading",
                    path.display()
                ),
            ));
        }
        if exists && !truncate {
            flat::read(path, load)?;
        }
        Ok(Persistence {
            path: Some(path.to_path_buf()),
            writable: access.is_writable(),
            owner: Some(owner),
            held: Mutex::new(held),
        })
    }

    /// The error of a write to a database opened for reading.
    pub(crate) fn read_only(&self) -> Error {
        let name = self.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
        Error::new(ErrorKind::ReadOnly, format!("the database {name} is open for reading only"))
    }

    /// Checks that an operation may go on: in the process that opened the
    /// database, and if `writable`, on a database open for writing.
    pub(crate) fn check_writable(&self, writable: bool) -> Result<()> {
        self.check_process()?;
        if writable && !self.writable {
            return Err(self.read_only());
        }
        Ok(())
    }

    /// Fails if the database has a file and this is not the process that
    /// opened it: a forked child must not replace its parent's file.
    pub(crate) fn check_process(&self) -> Result<()> {
        match (&self.owner, &self.path) {
            (Some(owner), Some(path)) => owner.check(path),
            _ => Ok(()),
        }
    }

    /// Writes the records `fill` puts to the database's file, if it has one
    /// and may change it. The new file is locked before it replaces the old.
    pub(crate) fn save(
        &self,
        hard: bool,
        fill: impl FnOnce(&mut FlatWriter) -> io::Result<()>,
    ) -> Result<()> {
        let Some(path) = self.path.as_deref().filter(|_| self.writable) else { return Ok(()) };
        self.check_process()?;
        let mut held = self.held.lock();
        if held.is_none() {
            return flat::write(path, hard, fill);
        }
        let (temp, file) = flat::write_beside(path, hard, fill)?;
        // Nobody else knows the new file yet: its lock is free.
        if let Err(e) = sys::try_lock(&file, true) {
            let _ = std::fs::remove_file(&temp);
            return Err(Error::io("exclusive lock of the new flat file", &temp, e));
        }
        flat::install(&temp, path, hard)?;
        // The replaced file closes here, and its lock goes with it.
        *held = Some(file);
        Ok(())
    }
}

/// Opens and locks, exclusively, the flat file at `path` (making an empty
/// one first if there is none), and answers it once the lock is held on the
/// file the path still names.
fn lock_current(path: &Path, lock: &FlatLock) -> Result<File> {
    let start = Instant::now();
    let mut unexplained = 0;
    while unexplained < MAX_LOCK_TRIES {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Never over a file a writer racing this one made first.
                flat::create_empty(path)?;
                unexplained += 1;
                continue;
            }
            Err(e) => return Err(Error::io("open of the flat file", path, e)),
        };
        // The whole wait counts against the timeout, however many saves of
        // the other writer replaced the file meanwhile.
        let waited = file::lock_since(&file, path, LockMode::Exclusive, lock.wait, start)?;
        let locked = sys::file_identity(&file).map_err(|e| Error::io("stat of the flat file", path, e))?;
        match std::fs::metadata(path) {
            Ok(now) if (now.dev(), now.ino()) == locked => return Ok(file),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("stat of the flat file", path, e)),
        }
        // Saves of a writer it waited for do not count (see MAX_LOCK_TRIES).
        if !waited {
            unexplained += 1;
        }
    }
    Err(Error::new(
        ErrorKind::Infeasible,
        format!(
            "the flat file {} was replaced {MAX_LOCK_TRIES} times while this writer took its lock: \
             something replaces it without the lock",
            path.display()
        ),
    ))
}
