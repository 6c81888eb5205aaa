//! The files of a queue: `PREFIX.%010d`, found, listed and pruned.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::format::{decode_meta, FileMeta, META_SIZE};
use crate::error::{Error, ErrorKind, Result};

/// The path of file `file_id` of the queue at `prefix`.
pub fn file_path(prefix: &Path, file_id: u64) -> PathBuf {
    let mut name = prefix.as_os_str().to_os_string();
    name.push(format!(".{file_id:010}"));
    PathBuf::from(name)
}

/// The files of the queue at `prefix`, by id: every file named the prefix's
/// last component, a dot and ten (or more) digits, in its directory. A
/// missing directory is an error; no files is an empty list.
pub fn find_files(prefix: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let base = prefix.file_name().and_then(|n| n.to_str()).filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::new(ErrorKind::InvalidArgument, format!("the log prefix {} names no file", prefix.display()))
    })?;
    let dir = match prefix.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing the update logs in", dir, e))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("listing the update logs in", dir, e))?;
        let name = entry.file_name();
        let Some(digits) = name.to_str().and_then(|n| n.strip_prefix(base)).and_then(|r| r.strip_prefix('.'))
        else {
            continue;
        };
        if digits.len() >= 10 && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(id) = digits.parse::<u64>() {
                found.push((id, dir.join(&name)));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The metadata of the queue file at `path`.
pub fn read_file_meta(path: &Path) -> Result<FileMeta> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("opening the update log", path, e))?;
    let mut meta = Vec::with_capacity(META_SIZE as usize);
    (&mut file)
        .take(META_SIZE)
        .read_to_end(&mut meta)
        .map_err(|e| Error::io("reading the metadata of the update log", path, e))?;
    decode_meta(&meta, &path.display())
}

/// Whether [`remove_old_files`] may remove the queue's newest file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NewestFile {
    /// The newest file stays whatever its age: a writer may still append to it.
    Keep,
    /// The newest file goes too if it is old enough.
    Include,
}

/// Removes the files of the queue at `prefix` whose latest timestamp is
/// below `threshold` (milliseconds), but never the newest one with
/// [`NewestFile::Keep`]; answers the paths removed.
pub fn remove_old_files(prefix: &Path, threshold: u64, newest: NewestFile) -> Result<Vec<PathBuf>> {
    let mut files = find_files(prefix)?;
    if newest == NewestFile::Keep {
        files.pop();
    }
    let mut removed = Vec::new();
    for (_, path) in files {
        if read_file_meta(&path)?.timestamp < threshold {
            std::fs::remove_file(&path).map_err(|e| Error::io("removing the update log", &path, e))?;
            removed.push(path);
        }
    }
    Ok(removed)
}
