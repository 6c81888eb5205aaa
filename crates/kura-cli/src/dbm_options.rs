//! The command-line flags that choose a database, its file and its tuning, and
//! the opener that turns them into an open [`Dbm`].
//!
//! The names follow `tkrzw_dbm_perf` (`--dbm`, `--buckets`, `--align_pow`, …) so
//! a command line written for the reference runs unchanged. Only flags of
//! databases kuradb has are accepted; each later database adds its own.

use std::path::{Path, PathBuf};

use clap::Args;
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::Dbm;
use kuradb::file::OpenOptions;
use kuradb::{Error, ErrorKind, Result};

use crate::file_options::FileOptions;

/// A database implementation as the reference tools name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbmName {
    /// Chosen by the path's extension.
    Auto,
    /// The file hash database.
    Hash,
    /// The file B+ tree database.
    Tree,
    /// The file skip list database.
    Skip,
    /// The on-memory hash database.
    Tiny,
    /// The on-memory B+ tree database.
    Baby,
    /// The on-memory LRU cache database.
    Cache,
    /// The standard library's hash map.
    StdHash,
    /// The standard library's ordered map.
    StdTree,
}

impl DbmName {
    /// Every name with its value, in the order the help lists them.
    const ALL: [(&'static str, DbmName); 9] = [
        ("auto", DbmName::Auto),
        ("hash", DbmName::Hash),
        ("tree", DbmName::Tree),
        ("skip", DbmName::Skip),
        ("tiny", DbmName::Tiny),
        ("baby", DbmName::Baby),
        ("cache", DbmName::Cache),
        ("stdhash", DbmName::StdHash),
        ("stdtree", DbmName::StdTree),
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        DbmName::ALL.iter().find(|(_, value)| *value == self).map_or("auto", |(name, _)| name)
    }

    /// The implementation the reference's `auto` picks for a file's extension.
    fn from_extension(path: &Path) -> Option<DbmName> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "tkh" => DbmName::Hash,
            "tkt" => DbmName::Tree,
            "tks" => DbmName::Skip,
            "tkmt" | "flat" => DbmName::Tiny,
            "tkmb" => DbmName::Baby,
            "tkmc" => DbmName::Cache,
            "tksh" => DbmName::StdHash,
            "tkst" => DbmName::StdTree,
            _ => return None,
        })
    }
}

/// Lets clap reject an unknown name with a message listing the valid ones.
fn parse_dbm_name(name: &str) -> std::result::Result<DbmName, String> {
    let lower = name.trim().to_ascii_lowercase();
    DbmName::ALL.iter().find(|(known, _)| *known == lower).map(|(_, value)| *value).ok_or_else(|| {
        let names: Vec<&str> = DbmName::ALL.iter().map(|(known, _)| *known).collect();
        format!("unknown DBM implementation {name:?}: expected one of {}", names.join(", "))
    })
}

/// Flags choosing the database, its file, how it is opened and its tuning.
#[derive(Args, Clone, Debug)]
pub struct DbmOptions {
    /// The database implementation: auto (by the path's extension: .tkh is hash) or
    /// hash. (tree, skip, tiny, baby, cache, stdhash and stdtree are not implemented yet.)
    #[arg(long = "dbm", value_name = "IMPL", default_value = "auto", value_parser = parse_dbm_name)]
    pub dbm: DbmName,

    /// The path of the database file (required by file databases such as hash).
    #[arg(long = "path", value_name = "PATH")]
    pub path: Option<PathBuf>,

    #[command(flatten)]
    pub file: FileOptions,

    /// Fails at once if another process holds the file's lock, instead of waiting.
    #[arg(long = "no_wait")]
    pub no_wait: bool,

    /// Takes no inter-process lock on the file.
    #[arg(long = "no_lock")]
    pub no_lock: bool,

    /// Synchronizes the file with the device (hard) before closing it after each
    /// writing phase (outside the phase's time).
    #[arg(long = "sync_hard")]
    pub sync_hard: bool,

    #[command(flatten)]
    pub hash: HashFlags,
}

/// The tuning flags of the hash database. A negative number (the reference's
/// way of saying "unset") or an absent flag keeps kuradb's default.
#[derive(Args, Clone, Debug)]
pub struct HashFlags {
    /// Uses the appending update mode (every update appended, the crash-safest)
    /// rather than updating in place.
    #[arg(long = "append")]
    pub append: bool,

    /// Per-record checksums: 0 or -1 for none; 8, 16 or 32 to keep one in every
    /// record (kuradb's checksum has one width whichever of these is given).
    #[arg(long = "record_crc", value_name = "NUM", default_value = "0", allow_negative_numbers = true,
          value_parser = ["-1", "0", "8", "16", "32"], hide_possible_values = true)]
    pub record_crc: String,

    /// Bytes of a record offset, which bound the file's size [default: kuradb's].
    #[arg(long = "offset_width", value_name = "NUM", default_value_t = -1, allow_negative_numbers = true,
          hide_default_value = true)]
    pub offset_width: i64,

    /// Records are aligned to 2^NUM bytes [default: kuradb's].
    #[arg(long = "align_pow", value_name = "NUM", default_value_t = -1, allow_negative_numbers = true,
          hide_default_value = true)]
    pub align_pow: i64,

    /// The number of hash buckets [default: kuradb's].
    #[arg(long = "buckets", value_name = "NUM", default_value_t = -1, allow_negative_numbers = true,
          hide_default_value = true)]
    pub buckets: i64,

    /// The capacity of the free block pool [default: kuradb's].
    #[arg(long = "fbp_cap", value_name = "NUM", default_value_t = -1, allow_negative_numbers = true,
          hide_default_value = true)]
    pub fbp_cap: i64,

    /// Bytes read at least to fetch a record, so most records take one read [default: kuradb's].
    #[arg(long = "min_read_size", value_name = "NUM", default_value_t = -1, allow_negative_numbers = true,
          hide_default_value = true)]
    pub min_read_size: i64,

    /// Keeps the bucket array in memory.
    #[arg(long = "cache_buckets")]
    pub cache_buckets: bool,
}

impl HashFlags {
    /// The hash database's options: kuradb's defaults, overridden by the flags given.
    fn options(&self) -> Result<HashOptions> {
        let mut options = HashOptions::default();
        if self.append {
            options.update_mode = UpdateMode::Appending;
        }
        options.record_crc = matches!(self.record_crc.as_str(), "8" | "16" | "32");
        if let Some(width) = tuning("offset_width", self.offset_width, u8::MAX.into())? {
            options.offset_width = width as u8;
        }
        if let Some(pow) = tuning("align_pow", self.align_pow, 63)? {
            options.align_pow = pow as u8;
        }
        if let Some(buckets) = tuning("buckets", self.buckets, u64::MAX)? {
            options.num_buckets = buckets;
        }
        if let Some(cap) = tuning("fbp_cap", self.fbp_cap, usize::MAX as u64)? {
            options.fbp_cap = cap as usize;
        }
        if let Some(size) = tuning("min_read_size", self.min_read_size, usize::MAX as u64)? {
            options.min_read_size = size as usize;
        }
        options.cache_buckets = self.cache_buckets;
        Ok(options)
    }
}

/// A tuning number: `None` if negative (unset, as in the reference), an error
/// naming the flag if above `max`. Finer checks are the database's, at open.
fn tuning(flag: &str, value: i64, max: u64) -> Result<Option<u64>> {
    match u64::try_from(value) {
        Err(_) => Ok(None),
        Ok(value) if value <= max => Ok(Some(value)),
        Ok(value) => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("--{flag} {value} is beyond its maximum {max}"),
        )),
    }
}

/// How a phase opens the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// For writing, emptied first: the first phase of a run.
    Create,
    /// For writing, keeping the content.
    Write,
    /// For reading only.
    Read,
}

/// A database opened by [`DbmOpener::open`]: any [`Dbm`] that can also be closed
/// with its errors reported (dropping one closes it too, but silently).
pub trait OpenDbm: Dbm {
    /// Closes the database.
    fn close_dbm(self: Box<Self>) -> Result<()>;
}

impl OpenDbm for HashDbm {
    fn close_dbm(self: Box<Self>) -> Result<()> {
        (*self).close()
    }
}

/// The implementations kuradb has; [`DbmOptions::opener`] refuses the others.
#[derive(Clone, Debug)]
enum Implementation {
    Hash(HashOptions),
}

/// Everything needed to open the chosen database, checked once before any phase.
#[derive(Clone, Debug)]
pub struct DbmOpener {
    implementation: Implementation,
    path: PathBuf,
    sync_hard: bool,
}

impl DbmOptions {
    /// Resolves `auto`, checks that the implementation exists and has what it
    /// needs (a path for file databases), and checks the file and tuning flags.
    pub fn opener(&self) -> Result<DbmOpener> {
        let name = match (self.dbm, &self.path) {
            (DbmName::Auto, Some(path)) => DbmName::from_extension(path).ok_or_else(|| {
                invalid(format!(
                    "--dbm auto cannot tell the database from the extension of {}: give --dbm hash \
                     or a path ending in .tkh",
                    path.display()
                ))
            })?,
            (DbmName::Auto, None) => {
                return Err(invalid("give --dbm hash and a --path for the database file".to_string()))
            }
            (name, _) => name,
        };
        if name != DbmName::Hash {
            return Err(Error::new(
                ErrorKind::NotImplemented,
                format!(
                    "the {} database (--dbm {}) is not implemented yet in kuradb: only hash is",
                    name.name(),
                    name.name()
                ),
            ));
        }
        let path = self.path.clone().ok_or_else(|| {
            invalid(format!("--dbm {} is a file database: give the file's --path", name.name()))
        })?;
        let mut options = self.hash.options()?;
        options.file = self.file.spec()?;
        let mut open = OpenOptions::writer();
        open.no_wait = self.no_wait;
        open.no_lock = self.no_lock;
        options.open = open;
        Ok(DbmOpener { implementation: Implementation::Hash(options), path, sync_hard: self.sync_hard })
    }
}

impl DbmOpener {
    /// The implementation's name, as the reports print it (`impl=hash`).
    pub fn name(&self) -> &'static str {
        match self.implementation {
            Implementation::Hash(_) => "hash",
        }
    }

    /// Opens the database for a phase.
    pub fn open(&self, mode: OpenMode) -> Result<Box<dyn OpenDbm>> {
        match &self.implementation {
            Implementation::Hash(options) => {
                let mut options = options.clone();
                let (no_wait, no_lock) = (options.open.no_wait, options.open.no_lock);
                options.open = match mode {
                    OpenMode::Create => OpenOptions::writer().truncating(),
                    OpenMode::Write => OpenOptions::writer(),
                    OpenMode::Read => OpenOptions::reader(),
                };
                options.open.no_wait = no_wait;
                options.open.no_lock = no_lock;
                Ok(Box::new(HashDbm::open(&self.path, mode != OpenMode::Read, &options)?))
            }
        }
    }

    /// Closes a database after a phase, first synchronizing it with the device
    /// if it was opened for writing and `--sync_hard` was given.
    pub fn close(&self, db: Box<dyn OpenDbm>, mode: OpenMode) -> Result<()> {
        if self.sync_hard && mode != OpenMode::Read {
            db.synchronize(true)?;
        }
        db.close_dbm()
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_extension_as_the_reference() {
        assert_eq!(DbmName::from_extension(Path::new("/tmp/a.TKH")), Some(DbmName::Hash));
        assert_eq!(DbmName::from_extension(Path::new("casket.tkt")), Some(DbmName::Tree));
        assert_eq!(DbmName::from_extension(Path::new("casket.flat")), Some(DbmName::Tiny));
        assert_eq!(DbmName::from_extension(Path::new("casket")), None);
        assert_eq!(parse_dbm_name("Hash"), Ok(DbmName::Hash));
        assert!(parse_dbm_name("poly").unwrap_err().contains("expected one of auto, hash, tree"));
        assert_eq!(DbmName::StdTree.name(), "stdtree");
    }

    #[test]
    fn negative_tuning_keeps_the_default_and_overflow_is_refused() {
        assert_eq!(tuning("buckets", -1, u64::MAX).unwrap(), None);
        assert_eq!(tuning("align_pow", 8, 63).unwrap(), Some(8));
        let err = tuning("align_pow", 64, 63).unwrap_err();
        assert!(err.message().contains("--align_pow 64"), "{err}");
    }
}
