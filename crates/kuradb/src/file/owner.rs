//! One handle per file per process, and no handle used by another process.
//!
//! Advisory locks are held by open file descriptions, so two handles of one
//! process exclude each other like two processes do: a second writer in the
//! same process would wait for ever for a lock that only its own process could
//! release. Opening checks a process-wide table of the files open here first,
//! and a conflicting open fails at once, naming the handle to use instead.
//! Readers may share a file; a writer shares it with nobody.
//!
//! A forked child inherits its parent's handles, with their descriptors, maps
//! and locks. Every handle carries the [`ProcessStamp`] of its open and
//! refuses to work (and, at its close, to write back, truncate or unlock) in
//! any other process, so the parent's file is never touched from the child.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use parking_lot::Mutex;

use crate::error::{Error, ErrorKind, Result};
use crate::sys::ProcessStamp;

/// What a handle claims in the table of open files.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FileKey {
    /// A file kept open, by its device and inode, whatever path reached it.
    Inode(u64, u64),
    /// A file replaced by rename at every save (the flat files of the
    /// on-memory databases), whose inode changes: by its absolute path.
    Path(PathBuf),
}

impl FileKey {
    /// The key of a flat file at `path`, which may not exist yet.
    pub(crate) fn for_path(path: &Path) -> FileKey {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        // The directory's canonical form, so two spellings of one place agree;
        // the file itself may be missing.
        let canonical = match (absolute.parent(), absolute.file_name()) {
            (Some(dir), Some(name)) => dir.canonicalize().map(|d| d.join(name)).unwrap_or(absolute),
            _ => absolute,
        };
        FileKey::Path(canonical)
    }
}

/// The handles of this process holding one file. An entry inherited
/// through a fork is stale: the parent's handles are not the child's.
struct Holders {
    stamp: ProcessStamp,
    writer: bool,
    readers: usize,
}

static OPEN: LazyLock<Mutex<HashMap<FileKey, Holders>>> = LazyLock::new(Default::default);

/// A handle's tie to the process that opened it and to its entry in the
/// table of open files (released on drop).
#[derive(Debug)]
pub(crate) struct Owner {
    stamp: ProcessStamp,
    claim: Option<(FileKey, bool)>,
}

impl Owner {
    /// A handle that claims no entry: it took no lock, so it waits for nothing
    /// and its caller coordinates access itself.
    pub(crate) fn unclaimed() -> Owner {
        Owner { stamp: ProcessStamp::now(), claim: None }
    }

    /// Claims `key` for a writer or a reader, failing at once with a "locked"
    /// error if another handle of this process holds it in a conflicting way:
    /// a writer conflicts with every other handle, unless `readers_beside_writer`
    /// (a file replaced whole by rename, which a reader always sees complete),
    /// where only a second writer conflicts.
    pub(crate) fn claim(
        key: FileKey,
        writable: bool,
        readers_beside_writer: bool,
        path: &Path,
    ) -> Result<Owner> {
        let stamp = ProcessStamp::now();
        let mut open = OPEN.lock();
        let holders = open.entry(key.clone()).or_insert(Holders { stamp, writer: false, readers: 0 });
        if !holders.stamp.is_current() {
            *holders = Holders { stamp, writer: false, readers: 0 };
        }
        let conflict = if holders.writer && (writable || !readers_beside_writer) {
            Some("for writing")
        } else if writable && holders.readers > 0 && !readers_beside_writer {
            Some("for reading")
        } else {
            None
        };
        if let Some(how) = conflict {
            let advice = if how == "for writing" {
                "use that handle, or close it before opening the file again"
            } else {
                "close the readers' handles before opening it for writing"
            };
            return Err(Error::new(
                ErrorKind::WouldBlock,
                format!("{} is already open {how} in this process: {advice}", path.display()),
            ));
        }
        if writable {
            holders.writer = true;
        } else {
            holders.readers += 1;
        }
        Ok(Owner { stamp, claim: Some((key, writable)) })
    }

    /// Whether the handle is used in the process that opened it.
    pub(crate) fn is_current(&self) -> bool {
        self.stamp.is_current()
    }

    /// Fails unless the handle is used in the process that opened it.
    pub(crate) fn check(&self, path: &Path) -> Result<()> {
        if self.stamp.is_current() {
            return Ok(());
        }
        Err(foreign_process(path, self.stamp.pid()))
    }
}

/// The error of a handle used in a process other than the one that opened it.
pub(crate) fn foreign_process(path: &Path, pid: u32) -> Error {
    Error::new(
        ErrorKind::Infeasible,
        format!(
            "{} was opened by process {pid}, and its handle cannot be used in another process \
             (a child after fork): open the database anew in this process",
            path.display()
        ),
    )
}

impl Drop for Owner {
    fn drop(&mut self) {
        let Some((key, writable)) = self.claim.take() else { return };
        if !self.stamp.is_current() {
            // The table's entry is the parent's, and stale here.
            return;
        }
        let mut open = OPEN.lock();
        if let Some(holders) = open.get_mut(&key) {
            if writable {
                holders.writer = false;
            } else {
                holders.readers = holders.readers.saturating_sub(1);
            }
            if !holders.writer && holders.readers == 0 {
                open.remove(&key);
            }
        }
    }
}
