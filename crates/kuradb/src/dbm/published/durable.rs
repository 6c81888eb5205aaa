//! The durable steps of a commit: files and directories reaching the device,
//! `CURRENT` replaced in one rename, the commit lock.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::{CURRENT, LOCK};
use crate::error::{Error, Result};

/// Makes the contents of the file at `path` durable.
pub(super) fn sync_file(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io("open for synchronization", path, e))?;
    file.sync_all().map_err(|e| Error::io("synchronization", path, e))
}

/// Makes the entries of the directory `dir` (names made, renamed, removed)
/// durable.
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    let handle = File::open(dir).map_err(|e| Error::io("open of the directory", dir, e))?;
    handle.sync_all().map_err(|e| Error::io("synchronization of the directory", dir, e))
}

/// Writes `text` to a new file at `path` and makes it durable.
pub(super) fn write_synced(path: &Path, text: &str) -> Result<()> {
    let mut file = File::create(path).map_err(|e| Error::io("create", path, e))?;
    file.write_all(text.as_bytes()).map_err(|e| Error::io("write", path, e))?;
    file.sync_all().map_err(|e| Error::io("synchronization", path, e))
}

/// Makes `v-<version>` current: a temporary file written and synchronized,
/// renamed over `CURRENT`, the directory synchronized. A crash leaves
/// `CURRENT` old or new, whole either way (a rename replaces atomically).
pub(super) fn write_current(dir: &Path, version: u64) -> Result<()> {
    let temp = dir.join(format!("{CURRENT}.tmp"));
    write_synced(&temp, &format!("v-{version}\n"))?;
    let current = dir.join(CURRENT);
    std::fs::rename(&temp, &current).map_err(|e| Error::io("rename into place", &current, e))?;
    sync_dir(dir)
}

/// Takes the exclusive lock of the directory's `LOCK` file, waiting for a
/// commit running elsewhere; released when the answer is dropped.
pub(super) fn lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io("open of the lock file", &path, e))?;
    file.lock().map_err(|e| Error::io("lock", &path, e))?;
    Ok(file)
}

/// A hard link of `from` at `to`, or a copy where the file system has no
/// hard links; the staged file stays, so a commit that stops before its end
/// can run again.
pub(super) fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to).map(drop).map_err(|e| Error::io(format!("copy of {}", from.display()), to, e))
}
