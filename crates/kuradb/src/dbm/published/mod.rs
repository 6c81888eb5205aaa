//! Published directories: a directory of immutable versions of a shard set,
//! one of them current, opened read-only as one database.
//!
//! A [`PublishJob`] builds a version: each task attempt writes one shard into
//! its own staging file ([`PublishJob::stage`]), and one commit
//! ([`PublishJob::commit`]) puts the chosen attempts' files into a new
//! version directory with a `MANIFEST.json`, then replaces `CURRENT`, the
//! file naming the current version, in one rename. A reader sees the old
//! version or the new one, never a part of one. [`open`] (and
//! [`PolyDbm::open`](crate::dbm::poly::PolyDbm::open) on a directory holding
//! `CURRENT`) opens the current version as a [`ShardDbm`]; [`verify`] checks
//! every file against its checksum.
//!
//! The layout (`docs/format.md`, "Published directory"):
//!
//! ```text
//! DIR/CURRENT                         "v-7\n"
//! DIR/LOCK                            locked by a commit, so commits take turns
//! DIR/v-7/MANIFEST.json
//! DIR/v-7/db.kh-00000-of-00004 …      the shard files, named as ShardDbm names them
//! DIR/_staging/JOB/SSSSS-ATTEMPT/…    one directory per task attempt
//! ```
//!
//! ```
//! use kuradb::dbm::published::{self, CommitOptions, PublishJob};
//! use kuradb::dbm::{poly::Params, poly::PolyDbm, shard::shard_of, Dbm};
//! # fn main() -> kuradb::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let job = PublishJob::new(dir.path(), "job-1", 2, &Params::parse("dbm=hash")?)?;
//! for shard in 0..2 {
//!     let db = job.stage(shard, "0")?;
//!     for key in ["apple", "banana", "cherry"] {
//!         if shard_of(key.as_bytes(), 2)? == shard {
//!             db.set(key.as_bytes(), b"fruit")?;
//!         }
//!     }
//!     db.close()?;
//! }
//! assert_eq!(job.commit(&[(0, "0"), (1, "0")], &CommitOptions::default())?, 1);
//! let db = PolyDbm::builder().open_read_only(dir.path())?;
//! assert_eq!((db.count()?, db.get(b"banana")?), (3, Some(b"fruit".to_vec())));
//! assert_eq!(published::verify(dir.path())?.version, 1);
//! # Ok(())
//! # }
//! ```

mod durable;
mod job;
mod manifest;

use std::path::{Path, PathBuf};

pub use job::{CommitOptions, PublishJob};
pub use manifest::{file_checksum, Manifest, ShardEntry, CHECKSUM, FORMAT_VERSION};

use super::params::Params;
use super::shard::ShardDbm;
use crate::dbm::{Access, Dbm};
use crate::error::{Error, ErrorKind, Result};

/// The file naming the current version.
pub const CURRENT: &str = "CURRENT";
/// The manifest's name in each version directory.
pub const MANIFEST: &str = "MANIFEST.json";
/// The directory of the task attempts' files.
pub const STAGING: &str = "_staging";
/// The file a commit locks.
pub const LOCK: &str = "LOCK";

/// Whether `path` is a published directory: a directory holding `CURRENT`.
pub fn is_published(path: &Path) -> bool {
    !path.as_os_str().is_empty() && path.join(CURRENT).is_file()
}

/// The directory of version `version` in `dir`.
pub fn version_dir(dir: &Path, version: u64) -> PathBuf {
    dir.join(format!("v-{version}"))
}

/// The number a version directory's name `v-<N>` holds.
fn parse_version_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("v-")?;
    let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
    ok.then(|| digits.parse().ok()).flatten()
}

/// The current version of the published directory `dir`, `None` if it has
/// none yet (no `CURRENT`).
pub fn current_version(dir: &Path) -> Result<Option<u64>> {
    let path = dir.join(CURRENT);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    let name = text.trim_end_matches('\n');
    parse_version_name(name).map(Some).ok_or_else(|| {
        Error::new(
            ErrorKind::BrokenData,
            format!("{} is broken: it names {name:?}, not a version directory v-<N>", path.display()),
        )
    })
}

/// The manifest of the current version of `dir`; an error if it has none.
pub fn current_manifest(dir: &Path) -> Result<Manifest> {
    let version = current_version(dir)?.ok_or_else(|| {
        Error::new(
            ErrorKind::NotFound,
            format!("{} is not a published directory: it has no {CURRENT}", dir.display()),
        )
    })?;
    version_manifest(dir, version)
}

/// The manifest of version `version` of `dir`, checked to name that version.
pub fn version_manifest(dir: &Path, version: u64) -> Result<Manifest> {
    let manifest = Manifest::read(&version_dir(dir, version).join(MANIFEST))?;
    if manifest.version != version {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "the manifest of v-{version} in {} says it is version {}",
                dir.display(),
                manifest.version
            ),
        ));
    }
    Ok(manifest)
}

/// The name of the set a version's shard files belong to: `db.` and the
/// class's first extension, so the files say their class.
pub(crate) fn set_name(class: crate::dbm::class::DbmClass) -> String {
    format!("db.{}", class.extensions()[0])
}

/// Opens the current version of the published directory `dir`, read-only,
/// as a [`ShardDbm`] of the manifest's class and parameters. `params` may
/// add or override tuning (a cache size, a file implementation); `dbm` and
/// `num_shards`, if given, must match the manifest's. Each shard's size and
/// record count are checked against the manifest (a full check of the bytes
/// is [`verify`]). A writable open is refused: versions are immutable.
///
/// The version stays readable while open even if a later commit prunes it:
/// its files are open (on systems where a removed open file stays readable).
pub fn open(dir: &Path, access: Access, params: &Params) -> Result<ShardDbm> {
    refuse_writable(dir, access)?;
    open_checked(dir, current_manifest(dir)?, params)
}

/// Opens version `version` of the published directory `dir`, as [`open`]
/// opens the current one, with the same checks: what a reader that watches
/// `CURRENT` opens once it has read the number there, so the version it
/// serves is the one it read, whatever commits come meanwhile.
pub fn open_version(dir: &Path, version: u64, access: Access, params: &Params) -> Result<ShardDbm> {
    refuse_writable(dir, access)?;
    open_checked(dir, version_manifest(dir, version)?, params)
}

fn refuse_writable(dir: &Path, access: Access) -> Result<()> {
    if access.is_writable() {
        return Err(Error::new(
            ErrorKind::ReadOnly,
            format!(
                "{} is a published directory: its versions are immutable, so it opens read-only; \
                 make a new version with a PublishJob",
                dir.display()
            ),
        ));
    }
    Ok(())
}

fn open_checked(dir: &Path, manifest: Manifest, params: &Params) -> Result<ShardDbm> {
    let vdir = version_dir(dir, manifest.version);
    let n = manifest.num_shards();
    let set = vdir.join(set_name(manifest.class));
    for (i, entry) in manifest.shards.iter().enumerate() {
        let expected = ShardDbm::shard_path(&set, i, n);
        if vdir.join(&entry.file) != expected {
            return Err(broken_version(dir, &manifest, format!("shard {i} is named {:?}", entry.file)));
        }
        let size =
            std::fs::metadata(&expected).map_err(|e| Error::io("stat of a shard", &expected, e))?.len();
        if size != entry.bytes {
            return Err(broken_version(
                dir,
                &manifest,
                format!("{} has {size} bytes, the manifest says {}", entry.file, entry.bytes),
            ));
        }
    }
    let mut merged = manifest.params.clone();
    for (name, value) in params.iter() {
        match name {
            "dbm" | "num_shards" => {
                let ours = if name == "dbm" { manifest.class.name().to_string() } else { n.to_string() };
                let same = if name == "dbm" {
                    crate::dbm::class::DbmClass::from_name(value).ok() == Some(manifest.class)
                } else {
                    value.trim() == ours
                };
                if !same {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("{} holds {name}={ours}, not {value}", dir.display()),
                    ));
                }
            }
            _ => {
                merged = merged.without(name);
                merged.insert(name, value)?;
            }
        }
    }
    merged.insert("dbm", manifest.class.name())?;
    merged.insert("num_shards", &n.to_string())?;
    let db = ShardDbm::open(&set, Access::ReadOnly, &merged)?;
    for (i, (shard, entry)) in db.shards().iter().zip(&manifest.shards).enumerate() {
        let count = shard.count()?;
        if count != entry.records {
            let err = broken_version(
                dir,
                &manifest,
                format!("shard {i} holds {count} records, the manifest says {}", entry.records),
            );
            db.close()?;
            return Err(err);
        }
    }
    Ok(db)
}

fn broken_version(dir: &Path, manifest: &Manifest, what: String) -> Error {
    Error::new(
        ErrorKind::BrokenData,
        format!(
            "version v-{} of the published directory {} is broken: {what}",
            manifest.version,
            dir.display()
        ),
    )
}

/// Checks every shard file of the current version of `dir` against the
/// manifest: size, checksum of the bytes, and record count (by opening the
/// version). Answers the manifest checked.
pub fn verify(dir: &Path) -> Result<Manifest> {
    let manifest = current_manifest(dir)?;
    let vdir = version_dir(dir, manifest.version);
    for entry in &manifest.shards {
        let path = vdir.join(&entry.file);
        let sum = file_checksum(&path)?;
        if sum != entry.checksum {
            return Err(broken_version(
                dir,
                &manifest,
                format!("{} has checksum {sum:016x}, the manifest says {:016x}", entry.file, entry.checksum),
            ));
        }
    }
    // Sizes and record counts: what every open checks.
    open(dir, Access::ReadOnly, &Params::new())?.close()?;
    Ok(manifest)
}

/// The versions whose directories exist in `dir`, in increasing order.
pub fn versions(dir: &Path) -> Result<Vec<u64>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    let mut found: Vec<u64> =
        entries.flatten().filter_map(|e| e.file_name().to_str().and_then(parse_version_name)).collect();
    found.sort_unstable();
    Ok(found)
}

#[cfg(test)]
mod tests;
