//! The command-line flags that choose a database, its file and its tuning, and
//! the opener that turns them into an open [`Dbm`].
//!
//! The names follow `tkrzw_dbm_perf` (`--dbm`, `--buckets`, `--align_pow`, …) so
//! a command line written for the reference runs unchanged. Only flags of
//! databases kuradb has are accepted; each later database adds its own, and a
//! flag of one database given with another is refused with its name.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::cache::{CacheDbm, CacheOptions};
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use kuradb::dbm::tiny::{TinyDbm, TinyOptions};
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::Dbm;
use kuradb::file::OpenOptions;
use kuradb::{Error, ErrorKind, Result};
use parking_lot::Mutex;

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
            "tkt" | "tree" => DbmName::Tree,
            "tks" | "skip" => DbmName::Skip,
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
    /// The database implementation: auto (by the path's extension: .tkh is hash,
    /// .tkt or .tree is tree, .tks or .skip is skip, .flat or .tkmt is tiny,
    /// .tkmb baby, .tkmc cache, .tksh stdhash, .tkst stdtree), hash, tree,
    /// skip, or the on-memory tiny, baby, cache, stdhash and stdtree.
    #[arg(long = "dbm", value_name = "IMPL", default_value = "auto", value_parser = parse_dbm_name)]
    pub dbm: DbmName,

    /// The path of the database file (required by file databases such as hash and
    /// tree; an on-memory database reads and writes its flat file there, if given).
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

    #[command(flatten)]
    pub tree: TreeFlags,

    #[command(flatten)]
    pub skip: SkipFlags,

    #[command(flatten)]
    pub cache: CacheFlags,
}

/// The tuning flags of the hash database, which also tune a tree's node store.
/// A negative number (the reference's way of saying "unset") or an absent flag
/// keeps kuradb's default for the database chosen (a tree's node store has its
/// own: 131101 buckets, 2^10 alignment).
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

    /// Records are aligned to 2^NUM bytes [default: kuradb's, for hash or tree].
    #[arg(long = "align_pow", value_name = "NUM", default_value_t = -1, allow_negative_numbers = true,
          hide_default_value = true)]
    pub align_pow: i64,

    /// The number of hash buckets [default: kuradb's, for hash or tree].
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
    /// Overrides `options` (kuradb's defaults for a hash database, or for a
    /// tree's node store) with the flags given.
    fn apply(&self, options: &mut HashOptions) -> Result<()> {
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
        Ok(())
    }
}

/// The tuning flags of the tree database, as the reference names them. A
/// negative number or an absent flag keeps kuradb's default; any of them
/// given with another database is refused.
#[derive(Args, Clone, Debug)]
pub struct TreeFlags {
    /// (tree) A leaf whose records take more bytes than this splits [default: 8130].
    #[arg(long = "max_page_size", value_name = "NUM", allow_negative_numbers = true)]
    pub max_page_size: Option<i64>,

    /// (tree) An inner node with more children than this splits [default: 256].
    #[arg(long = "max_branches", value_name = "NUM", allow_negative_numbers = true)]
    pub max_branches: Option<i64>,

    /// (tree) Nodes kept in memory; the least recently used beyond are written
    /// back and dropped [default: 10000].
    #[arg(long = "max_cached_pages", value_name = "NUM", allow_negative_numbers = true)]
    pub max_cached_pages: Option<i64>,

    /// (tree) The order of the keys: lexical, decimal, hex, real, or one of them
    /// followed by _reverse; the reference's names (SignedDecimalKeyComparator, …)
    /// are accepted too [default: lexical].
    #[arg(long = "key_comparator", value_name = "NAME", value_parser = parse_comparator)]
    pub key_comparator: Option<KeyComparator>,
}

impl TreeFlags {
    /// The flags given, by name, so that another database can refuse them.
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        for (flag, present) in [
            ("--max_page_size", self.max_page_size.is_some()),
            ("--max_branches", self.max_branches.is_some()),
            ("--max_cached_pages", self.max_cached_pages.is_some()),
            ("--key_comparator", self.key_comparator.is_some()),
        ] {
            if present {
                given.push(flag);
            }
        }
        given
    }

    /// Overrides the tree's own tuning in `options` with the flags given.
    fn apply(&self, options: &mut TreeOptions) -> Result<()> {
        let limit = usize::MAX as u64;
        if let Some(size) = tuning("max_page_size", self.max_page_size.unwrap_or(-1), limit)? {
            options.max_page_size = size as usize;
        }
        if let Some(branches) = tuning("max_branches", self.max_branches.unwrap_or(-1), limit)? {
            options.max_branches = branches as usize;
        }
        if let Some(pages) = tuning("max_cached_pages", self.max_cached_pages.unwrap_or(-1), limit)? {
            options.max_cached_pages = pages as usize;
        }
        if let Some(comparator) = self.key_comparator {
            options.comparator = comparator;
        }
        Ok(())
    }
}

/// The tuning flags of the skip database, as the reference names them. An
/// absent flag keeps kuradb's default; any of them given with another
/// database is refused. (`--offset_width` of the hash flags applies too.)
#[derive(Args, Clone, Debug)]
pub struct SkipFlags {
    /// (skip) Each level's pointers skip this many times the records of the
    /// level below's [default: 4].
    #[arg(long = "step_unit", value_name = "NUM", allow_negative_numbers = true)]
    pub step_unit: Option<i64>,

    /// (skip) Levels of skip pointers, 1 to 31 [default: 14].
    #[arg(long = "max_level", value_name = "NUM", allow_negative_numbers = true)]
    pub max_level: Option<i64>,

    /// (skip) Records of the upper levels kept in memory [default: 65536].
    #[arg(long = "max_cached_records", value_name = "NUM", allow_negative_numbers = true)]
    pub max_cached_records: Option<i64>,

    /// (skip) Bytes of updates held in memory before they are sorted and
    /// spilled to a temporary file [default: 268435456].
    #[arg(long = "sort_mem_size", value_name = "NUM", allow_negative_numbers = true)]
    pub sort_mem_size: Option<i64>,

    /// (skip) Updates come in ascending key order: they are checked, not sorted.
    #[arg(long = "insert_in_order")]
    pub insert_in_order: bool,

    /// (skip) How each synchronization reduces a key's records: none, first,
    /// last, concat, concat_null, concat_tab, concat_line or total [default: none].
    #[arg(long = "reducer", value_name = "NAME", value_parser = parse_reducer)]
    pub reducer: Option<Reducer>,
}

impl SkipFlags {
    /// The flags given, by name, so that another database can refuse them.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--step_unit", self.step_unit.is_some()),
            ("--max_level", self.max_level.is_some()),
            ("--max_cached_records", self.max_cached_records.is_some()),
            ("--sort_mem_size", self.sort_mem_size.is_some()),
            ("--insert_in_order", self.insert_in_order),
            ("--reducer", self.reducer.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, present)| present.then_some(flag))
        .collect()
    }

    /// Overrides the skip database's defaults in `options` with the flags given.
    fn apply(&self, options: &mut SkipOptions) -> Result<()> {
        if let Some(step) = tuning("step_unit", self.step_unit.unwrap_or(-1), u32::MAX.into())? {
            options.step_unit = step as u32;
        }
        if let Some(level) = tuning("max_level", self.max_level.unwrap_or(-1), u8::MAX.into())? {
            options.max_level = level as u8;
        }
        let limit = usize::MAX as u64;
        if let Some(records) = tuning("max_cached_records", self.max_cached_records.unwrap_or(-1), limit)? {
            options.max_cached_records = records as usize;
        }
        if let Some(size) = tuning("sort_mem_size", self.sort_mem_size.unwrap_or(-1), limit)? {
            options.sort_mem_size = size as usize;
        }
        options.insert_in_order = self.insert_in_order;
        if let Some(reducer) = &self.reducer {
            options.reducer = reducer.clone();
        }
        Ok(())
    }
}

fn parse_reducer(name: &str) -> std::result::Result<Reducer, String> {
    Reducer::from_name(name).map_err(|e| e.message().to_string())
}

impl HashFlags {
    /// The flags given that tune only a hash table (a hash database or a
    /// tree's node store), by name, so that the skip database can refuse them.
    fn given_for_tables(&self) -> Vec<&'static str> {
        [
            ("--append", self.append),
            ("--record_crc", !matches!(self.record_crc.as_str(), "0" | "-1")),
            ("--align_pow", self.align_pow >= 0),
            ("--buckets", self.buckets >= 0),
            ("--fbp_cap", self.fbp_cap >= 0),
            ("--min_read_size", self.min_read_size >= 0),
            ("--cache_buckets", self.cache_buckets),
        ]
        .into_iter()
        .filter_map(|(flag, present)| present.then_some(flag))
        .collect()
    }
}

/// Lets clap report an unknown comparator with the library's own message,
/// which names the value and lists the valid ones.
fn parse_comparator(name: &str) -> std::result::Result<KeyComparator, String> {
    KeyComparator::from_name(name.trim()).map_err(|e| e.message().to_string())
}

/// The caps of the cache database. An absent flag or a negative number keeps
/// kuradb's default; either given with another database is refused.
#[derive(Args, Clone, Debug)]
pub struct CacheFlags {
    /// (cache) The most records kept; more evict the least recently used [default: 1048576].
    #[arg(long = "cap_rec_num", value_name = "NUM", allow_negative_numbers = true)]
    pub cap_rec_num: Option<i64>,

    /// (cache) The most bytes of records kept; more evict the least recently
    /// used [default: no cap].
    #[arg(long = "cap_mem_size", value_name = "NUM", allow_negative_numbers = true)]
    pub cap_mem_size: Option<i64>,
}

impl CacheFlags {
    /// The flags given, by name, so that another database can refuse them.
    fn given(&self) -> Vec<&'static str> {
        let flags =
            [("--cap_rec_num", self.cap_rec_num.is_some()), ("--cap_mem_size", self.cap_mem_size.is_some())];
        flags.into_iter().filter(|(_, present)| *present).map(|(flag, _)| flag).collect()
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

impl OpenDbm for TreeDbm {
    fn close_dbm(self: Box<Self>) -> Result<()> {
        (*self).close()
    }
}

macro_rules! open_dbm {
    ($($name:ty),*) => {$(
        impl OpenDbm for $name {
            fn close_dbm(self: Box<Self>) -> Result<()> {
                (*self).close()
            }
        }
    )*};
}

open_dbm!(SkipDbm, TinyDbm, BabyDbm, CacheDbm, StdHashDbm, StdTreeDbm);

/// The implementations kuradb has; [`DbmOptions::opener`] refuses the others.
#[derive(Clone, Debug)]
enum Implementation {
    Hash(HashOptions),
    Tree(TreeOptions),
    Skip(SkipOptions),
    Memory(MemorySetup),
}

/// When a database's updates show to its readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Updates {
    /// At once: a set key is found, a removed one is not.
    Immediate,
    /// At the next synchronization (closing the phase's database): within a
    /// phase, every remove of a key that was there finds it. With
    /// `duplicates`, every set adds a record beside the key's others.
    Deferred { duplicates: bool },
}

/// An on-memory database's choice and tuning. Without a path the database
/// lives between phases in the opener, as the reference keeps its object.
#[derive(Clone, Debug)]
struct MemorySetup {
    name: DbmName,
    path: Option<PathBuf>,
    buckets: Option<u64>,
    baby: BabyOptions,
    cache: CacheOptions,
    kept: Kept,
}

/// The database of a run without a path, between its phases.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Option<Box<dyn OpenDbm>>>>);

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.lock().is_some() { "Kept(database)" } else { "Kept(none)" })
    }
}

impl MemorySetup {
    fn open(&self, mode: OpenMode) -> Result<Box<dyn OpenDbm>> {
        let Some(path) = &self.path else {
            let kept = if mode == OpenMode::Create { None } else { self.kept.0.lock().take() };
            return kept.map_or_else(|| self.build(None, true, true), Ok);
        };
        self.build(Some(path), mode != OpenMode::Read, mode == OpenMode::Create)
    }

    fn build(&self, path: Option<&Path>, writable: bool, truncate: bool) -> Result<Box<dyn OpenDbm>> {
        Ok(match self.name {
            DbmName::Tiny => {
                let mut o = TinyOptions { truncate, ..TinyOptions::default() };
                if let Some(b) = self.buckets {
                    o.num_buckets = b;
                }
                match path {
                    Some(p) => Box::new(TinyDbm::open(p, writable, &o)?),
                    None => Box::new(TinyDbm::new(&o)),
                }
            }
            DbmName::Baby => {
                let o = BabyOptions { truncate, ..self.baby.clone() };
                match path {
                    Some(p) => Box::new(BabyDbm::open(p, writable, &o)?),
                    None => Box::new(BabyDbm::new(&o)?),
                }
            }
            DbmName::Cache => {
                let o = CacheOptions { truncate, ..self.cache.clone() };
                match path {
                    Some(p) => Box::new(CacheDbm::open(p, writable, &o)?),
                    None => Box::new(CacheDbm::new(&o)?),
                }
            }
            DbmName::StdHash | DbmName::StdTree => {
                let num_buckets = match self.buckets {
                    Some(b) => b.try_into().unwrap_or(usize::MAX),
                    None => StdOptions::default().num_buckets,
                };
                let o = StdOptions { num_buckets, truncate };
                match (self.name, path) {
                    (DbmName::StdHash, Some(p)) => Box::new(StdHashDbm::open(p, writable, &o)?),
                    (DbmName::StdHash, None) => Box::new(StdHashDbm::new(&o)),
                    (_, Some(p)) => Box::new(StdTreeDbm::open(p, writable, &o)?),
                    (_, None) => Box::new(StdTreeDbm::new(&o)),
                }
            }
            other => return Err(invalid(format!("{} is not an on-memory database", other.name()))),
        })
    }
}

impl DbmOptions {
    /// The opener of an on-memory database, refusing the flags of others.
    fn memory_opener(&self, name: DbmName) -> Result<DbmOpener> {
        let mut refused: Vec<&'static str> = Vec::new();
        let tree_given = self.tree.given();
        refused.extend(tree_given.iter().filter(|f| name != DbmName::Baby || **f == "--max_cached_pages"));
        if name != DbmName::Cache {
            refused.extend(self.cache.given());
        }
        refused.extend(self.skip.given());
        let h = &self.hash;
        let hash_only = [
            ("--append", h.append),
            ("--record_crc", !matches!(h.record_crc.as_str(), "0" | "-1")),
            ("--offset_width", h.offset_width >= 0),
            ("--align_pow", h.align_pow >= 0),
            ("--fbp_cap", h.fbp_cap >= 0),
            ("--min_read_size", h.min_read_size >= 0),
            ("--cache_buckets", h.cache_buckets),
            ("--buckets", h.buckets >= 0 && matches!(name, DbmName::Baby | DbmName::StdTree)),
        ];
        let f = &self.file;
        let file_only = [
            ("--block_size", f.block_size != 1),
            ("--head_buffer", f.head_buffer != 0),
            ("--direct_io", f.direct_io),
            ("--sync_io", f.sync_io),
            ("--padding", f.padding),
            ("--pagecache", f.pagecache),
            ("--page_cache_capacity", f.page_cache_capacity.is_some()),
            ("--alloc_init", f.alloc_init.is_some()),
            ("--alloc_inc", f.alloc_inc.is_some()),
        ];
        refused.extend(hash_only.iter().chain(&file_only).filter(|(_, given)| *given).map(|(flag, _)| *flag));
        if let Some(flag) = refused.first() {
            return Err(invalid(format!(
                "{flag} is not a flag of the {} database (--dbm {}), which lives in memory",
                name.name(),
                name.name()
            )));
        }
        let mut baby = BabyOptions::default();
        let mut tree = TreeOptions {
            max_page_size: baby.max_page_size,
            max_branches: baby.max_branches,
            ..TreeOptions::default()
        };
        self.tree.apply(&mut tree)?;
        baby.max_page_size = tree.max_page_size;
        baby.max_branches = tree.max_branches;
        baby.comparator = tree.comparator;
        let mut cache = CacheOptions::default();
        if let Some(n) = tuning("cap_rec_num", self.cache.cap_rec_num.unwrap_or(-1), u64::MAX)? {
            cache.cap_rec_num = n;
        }
        if let Some(n) = tuning("cap_mem_size", self.cache.cap_mem_size.unwrap_or(-1), u64::MAX)? {
            cache.cap_mem_size = n;
        }
        let setup = MemorySetup {
            name,
            path: self.path.clone(),
            buckets: tuning("buckets", h.buckets, u64::MAX)?,
            baby,
            cache,
            kept: Kept::default(),
        };
        // Checks the tuning now rather than at the first phase.
        drop(setup.build(None, true, true)?);
        Ok(DbmOpener {
            implementation: Implementation::Memory(setup),
            path: PathBuf::new(),
            sync_hard: self.sync_hard,
        })
    }
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
                    "--dbm auto cannot tell the database from the extension of {}: give --dbm hash, \
                     tree or skip, or a path ending in .tkh, .tkt or .tks",
                    path.display()
                ))
            })?,
            (DbmName::Auto, None) => {
                return Err(invalid(
                    "give --dbm hash (or tree or skip) and a --path for the database file".to_string(),
                ))
            }
            (name, _) => name,
        };
        if matches!(
            name,
            DbmName::Tiny | DbmName::Baby | DbmName::Cache | DbmName::StdHash | DbmName::StdTree
        ) {
            return self.memory_opener(name);
        }
        if let Some(flag) = self.cache.given().first() {
            return Err(invalid(format!(
                "{flag} is a flag of the cache database, not of the {} database (--dbm {})",
                name.name(),
                name.name()
            )));
        }
        if !matches!(name, DbmName::Hash | DbmName::Tree | DbmName::Skip) {
            return Err(Error::new(
                ErrorKind::NotImplemented,
                format!(
                    "the {} database (--dbm {}) is not implemented yet in kuradb",
                    name.name(),
                    name.name()
                ),
            ));
        }
        let path = self.path.clone().ok_or_else(|| {
            invalid(format!("--dbm {} is a file database: give the file's --path", name.name()))
        })?;
        if name != DbmName::Tree {
            if let Some(flag) = self.tree.given().first() {
                return Err(invalid(format!(
                    "{flag} is a flag of the tree database, not of the {} database (--dbm {})",
                    name.name(),
                    name.name()
                )));
            }
        }
        if name != DbmName::Skip {
            if let Some(flag) = self.skip.given().first() {
                return Err(invalid(format!(
                    "{flag} is a flag of the skip database, not of the {} database (--dbm {})",
                    name.name(),
                    name.name()
                )));
            }
        }
        let mut open = OpenOptions::writer();
        open.no_wait = self.no_wait;
        open.no_lock = self.no_lock;
        if name == DbmName::Skip {
            if let Some(flag) = self.hash.given_for_tables().first() {
                return Err(invalid(format!(
                    "{flag} is a flag of the hash and tree databases, not of the skip database (--dbm skip)"
                )));
            }
            let mut skip = SkipOptions { file: self.file.spec()?, open, ..SkipOptions::default() };
            if let Some(width) = tuning("offset_width", self.hash.offset_width, u8::MAX.into())? {
                skip.offset_width = width as u8;
            }
            self.skip.apply(&mut skip)?;
            return Ok(DbmOpener {
                implementation: Implementation::Skip(skip),
                path,
                sync_hard: self.sync_hard,
            });
        }
        // The node store of a tree has its own defaults, which flags override
        // as they override a hash database's.
        let mut store =
            if name == DbmName::Tree { TreeOptions::default().hash } else { HashOptions::default() };
        self.hash.apply(&mut store)?;
        store.file = self.file.spec()?;
        store.open = open;
        let implementation = if name == DbmName::Tree {
            let mut tree = TreeOptions { hash: store, ..TreeOptions::default() };
            self.tree.apply(&mut tree)?;
            Implementation::Tree(tree)
        } else {
            Implementation::Hash(store)
        };
        Ok(DbmOpener { implementation, path, sync_hard: self.sync_hard })
    }
}

/// The open options for a phase: `mode`'s, keeping the locking flags.
fn phase_open(options: &mut OpenOptions, mode: OpenMode) {
    let (no_wait, no_lock) = (options.no_wait, options.no_lock);
    *options = match mode {
        OpenMode::Create => OpenOptions::writer().truncating(),
        OpenMode::Write => OpenOptions::writer(),
        OpenMode::Read => OpenOptions::reader(),
    };
    options.no_wait = no_wait;
    options.no_lock = no_lock;
}

impl DbmOpener {
    /// The implementation's name, as the reports print it (`impl=hash`).
    pub fn name(&self) -> &'static str {
        match self.implementation {
            Implementation::Hash(_) => "hash",
            Implementation::Tree(_) => "tree",
            Implementation::Skip(_) => "skip",
            Implementation::Memory(ref m) => m.name.name(),
        }
    }

    /// How updates show, for the checks of `--validate`.
    pub fn updates(&self) -> Updates {
        match &self.implementation {
            Implementation::Skip(options) => {
                Updates::Deferred { duplicates: options.reducer == Reducer::All }
            }
            _ => Updates::Immediate,
        }
    }

    /// Opens the database for a phase.
    pub fn open(&self, mode: OpenMode) -> Result<Box<dyn OpenDbm>> {
        match &self.implementation {
            Implementation::Hash(options) => {
                let mut options = options.clone();
                phase_open(&mut options.open, mode);
                Ok(Box::new(HashDbm::open(&self.path, mode != OpenMode::Read, &options)?))
            }
            Implementation::Tree(options) => {
                let mut options = options.clone();
                phase_open(&mut options.hash.open, mode);
                Ok(Box::new(TreeDbm::open(&self.path, mode != OpenMode::Read, &options)?))
            }
            Implementation::Skip(options) => {
                let mut options = options.clone();
                phase_open(&mut options.open, mode);
                Ok(Box::new(SkipDbm::open(&self.path, mode != OpenMode::Read, &options)?))
            }
            Implementation::Memory(setup) => setup.open(mode),
        }
    }

    /// Closes a database after a phase, first synchronizing it with the device
    /// if it was opened for writing and `--sync_hard` was given.
    pub fn close(&self, db: Box<dyn OpenDbm>, mode: OpenMode) -> Result<()> {
        if let Implementation::Memory(MemorySetup { path: None, kept, .. }) = &self.implementation {
            // Nothing to write: the database waits in memory for the next phase.
            *kept.0.lock() = Some(db);
            return Ok(());
        }
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
        assert_eq!(DbmName::from_extension(Path::new("casket.Tree")), Some(DbmName::Tree));
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

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        dbm: DbmOptions,
    }

    fn opener(args: &[&str]) -> Result<DbmOpener> {
        use clap::Parser;
        let flags = Flags::try_parse_from(std::iter::once("kura").chain(args.iter().copied()))
            .map_err(|e| invalid(e.to_string()))?;
        flags.dbm.opener()
    }

    fn tree_options(args: &[&str]) -> TreeOptions {
        match opener(args).unwrap().implementation {
            Implementation::Tree(options) => options,
            other => panic!("{args:?} opened {other:?}"),
        }
    }

    #[test]
    fn tree_defaults_are_the_trees_and_flags_override_them() {
        let defaults = TreeOptions::default();
        let found = tree_options(&["--dbm", "tree", "--path", "x"]);
        assert_eq!(found.hash.num_buckets, defaults.hash.num_buckets);
        assert_eq!(found.hash.align_pow, defaults.hash.align_pow);
        assert_eq!(found.max_page_size, defaults.max_page_size);
        assert_eq!(found.max_branches, defaults.max_branches);
        assert_eq!(found.max_cached_pages, defaults.max_cached_pages);
        assert_eq!(found.comparator, defaults.comparator);
        // auto picks tree for .tkt and .tree, with the same defaults.
        for path in ["x.tkt", "x.tree"] {
            assert_eq!(tree_options(&["--path", path]).hash.num_buckets, 131_101);
        }
        let found = tree_options(&[
            "--dbm",
            "tree",
            "--path",
            "x",
            "--buckets",
            "1000",
            "--align_pow",
            "-1",
            "--append",
            "--max_page_size",
            "4000",
            "--max_branches",
            "-1",
            "--max_cached_pages",
            "50",
            "--key_comparator",
            "SignedDecimalKeyComparator",
        ]);
        assert_eq!(found.hash.num_buckets, 1000);
        assert_eq!(found.hash.align_pow, defaults.hash.align_pow);
        assert_eq!(found.hash.update_mode, UpdateMode::Appending);
        assert_eq!((found.max_page_size, found.max_branches, found.max_cached_pages), (4000, 256, 50));
        assert_eq!(found.comparator, KeyComparator::Decimal);
        // The hash database keeps its own defaults.
        match opener(&["--dbm", "hash", "--path", "x"]).unwrap().implementation {
            Implementation::Hash(options) => {
                assert_eq!(options.num_buckets, HashOptions::default().num_buckets)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tree_flags_are_refused_for_other_databases() {
        for flag in ["--max_page_size", "--max_branches", "--max_cached_pages", "--key_comparator"] {
            let value = if flag == "--key_comparator" { "decimal" } else { "-1" };
            let err = opener(&["--dbm", "hash", "--path", "x.tkh", flag, value]).unwrap_err();
            assert!(err.message().contains(flag) && err.message().contains("tree"), "{err}");
            let err = opener(&["--path", "x.tkh", flag, value]).unwrap_err();
            assert!(err.message().contains(flag), "{err}");
        }
        let err = opener(&["--dbm", "tree", "--path", "x", "--key_comparator", "alpha"]).unwrap_err();
        assert!(err.message().contains("unknown key comparator \"alpha\""), "{err}");
        let err = opener(&["--dbm", "tree", "--path", "x", "--max_branches", "-"]).unwrap_err();
        assert!(err.message().contains("--max_branches"), "{err}");
    }

    #[test]
    fn memory_databases_live_between_phases_without_a_path() {
        for name in ["tiny", "baby", "cache", "stdhash", "stdtree"] {
            let o = opener(&["--dbm", name]).unwrap();
            assert_eq!(o.name(), name);
            let db = o.open(OpenMode::Create).unwrap();
            db.set(b"k", b"v", true).unwrap();
            o.close(db, OpenMode::Create).unwrap();
            let db = o.open(OpenMode::Read).unwrap();
            assert_eq!(db.get(b"k").unwrap().unwrap(), b"v", "{name}: kept between phases");
            o.close(db, OpenMode::Read).unwrap();
            let db = o.open(OpenMode::Create).unwrap();
            assert_eq!(db.count().unwrap(), 0, "{name}: a new run starts empty");
            o.close(db, OpenMode::Create).unwrap();
        }
    }

    #[test]
    fn memory_databases_with_a_path_keep_a_flat_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.tkmb");
        let path = path.to_str().unwrap();
        let o = opener(&["--path", path, "--key_comparator", "decimal"]).unwrap();
        assert_eq!(o.name(), "baby");
        let db = o.open(OpenMode::Create).unwrap();
        db.set(b"10", b"x", true).unwrap();
        db.set(b"9", b"y", true).unwrap();
        o.close(db, OpenMode::Create).unwrap();
        let db = o.open(OpenMode::Read).unwrap();
        let mut c = db.iter().unwrap();
        c.first().unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"9", "the comparator orders the keys");
        assert!(db.set(b"1", b"z", true).is_err(), "a reading phase opens for reading");
        drop(c);
        o.close(db, OpenMode::Read).unwrap();
    }

    #[test]
    fn memory_flags_are_checked_and_others_refused() {
        opener(&["--dbm", "cache", "--cap_rec_num", "10", "--cap_mem_size", "1000"]).unwrap();
        opener(&["--dbm", "tiny", "--buckets", "100"]).unwrap();
        opener(&["--dbm", "stdhash", "--buckets", "100"]).unwrap();
        opener(&["--dbm", "baby", "--key_comparator", "decimal", "--max_page_size", "1000"]).unwrap();
        assert!(opener(&["--dbm", "cache", "--cap_rec_num", "0"]).is_err());
        assert!(opener(&["--dbm", "baby", "--max_branches", "2"]).is_err());
        for (dbm, flag, value) in [
            ("tiny", "--cap_rec_num", "5"),
            ("hash", "--cap_mem_size", "5"),
            ("baby", "--buckets", "5"),
            ("stdtree", "--buckets", "5"),
            ("tiny", "--max_page_size", "100"),
            ("baby", "--max_cached_pages", "5"),
            ("cache", "--align_pow", "3"),
            ("tiny", "--block_size", "512"),
        ] {
            let mut args = vec!["--dbm", dbm, flag, value];
            if dbm == "hash" {
                args.extend(["--path", "x.tkh"]);
            }
            let err = opener(&args).unwrap_err();
            assert!(err.message().contains(flag), "{err}");
        }
    }
}
