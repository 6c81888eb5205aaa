//! The command-line flags that choose a database, its file and its tuning, and
//! the opener that turns them into an open [`Dbm`].
//!
//! The names follow `tkrzw_dbm_perf` (`--dbm`, `--buckets`, `--align_pow`, …) so
//! a command line written for the reference runs unchanged. The flags become
//! the same [`Params`] `kura util` and the bindings build, and the database
//! opens through the class registry ([`DbmClass::open`]), which decides the
//! extensions, the defaults and which class takes which parameter: a flag of
//! one database given with another is refused with its name.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use kuradb::dbm::poly::{DbmClass, Params};
use kuradb::dbm::skip::Reducer;
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::txn::{TransactionOptions, TransactionalDbm};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::ulog::{LoggedDbm, MessageQueue, MqUpdateLogger, DEFAULT_MAX_FILE_SIZE};
use kuradb::{Error, ErrorKind, Result};
use parking_lot::Mutex;

use crate::file_options::FileOptions;

/// `--dbm`: a class, or `auto` (`None`): the class the path's extension names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbmChoice(pub Option<DbmClass>);

/// Lets clap reject an unknown name with a message listing the valid ones.
fn parse_dbm_name(name: &str) -> std::result::Result<DbmChoice, String> {
    if name.trim().eq_ignore_ascii_case("auto") {
        return Ok(DbmChoice(None));
    }
    DbmClass::from_name(name).map(|c| DbmChoice(Some(c))).map_err(|_| {
        format!("unknown DBM implementation {name:?}: expected one of auto, {}", DbmClass::name_list())
    })
}

/// Flags choosing the database, its file, how it is opened and its tuning.
#[derive(Args, Clone, Debug)]
pub struct DbmOptions {
    /// The database implementation: auto (by the path's extension, as `kura
    /// util` reads it: .kh .hash .tkh hash, .kt .tree .tkt tree, .ks .skip .tks
    /// skip, .flat .tiny .tkmt tiny, .baby .tkmb baby, .cache .tkmc cache,
    /// .stdhash .tksh stdhash, .stdtree .tkst stdtree), hash, tree, skip, or
    /// the on-memory tiny, baby, cache, stdhash and stdtree.
    #[arg(long = "dbm", value_name = "IMPL", default_value = "auto", value_parser = parse_dbm_name)]
    pub dbm: DbmChoice,

    /// The path of the database file (required by file databases such as hash and
    /// tree; an on-memory database reads and writes its flat file there, if given).
    #[arg(long = "path", value_name = "PATH")]
    pub path: Option<PathBuf>,

    #[command(flatten)]
    pub file: FileOptions,

    /// Fails at once if another process holds the file's lock: kura's default,
    /// taken as the reference's tool takes it.
    #[arg(long = "no_wait")]
    pub no_wait: bool,

    /// Takes no inter-process lock on the file.
    #[arg(long = "no_lock")]
    pub no_lock: bool,

    /// More parameters of the database, as `kura util --params` and the
    /// bindings take them: "name=value,name=value". Every parameter of every
    /// class is reachable this way; the flags below are the reference's
    /// spellings of the common ones.
    #[arg(long = "params", value_name = "PARAMS", default_value = "")]
    pub params: String,

    /// Synchronizes the file with the device (hard) before closing it after each
    /// writing phase (outside the phase's time).
    #[arg(long = "sync_hard")]
    pub sync_hard: bool,

    /// Logs every update into update-log files PREFIX.0000000000, … (the
    /// reference's format; `kura ulog read PREFIX` shows them), to measure
    /// what logging costs.
    #[arg(long = "ulog", value_name = "PREFIX")]
    pub ulog: Option<PathBuf>,

    /// Wraps the database for transactions (a `TransactionalDbm`) even where
    /// the workload starts none, to measure what the wrapper costs plain
    /// operations.
    #[arg(long = "transactional")]
    pub transactional: bool,

    #[command(flatten)]
    pub hash: HashFlags,

    #[command(flatten)]
    pub tree: TreeFlags,

    #[command(flatten)]
    pub skip: SkipFlags,

    #[command(flatten)]
    pub cache: CacheFlags,
}

/// A flag given on the command line, as the parameter it stands for.
#[derive(Clone, Debug)]
pub struct Given {
    /// The flag, as the user wrote it (`--buckets`).
    pub flag: &'static str,
    /// The parameter's name (`num_buckets`).
    pub param: &'static str,
    /// The parameter's value.
    pub value: String,
}

impl Given {
    /// The flag `flag` given as `param=value`.
    pub fn new(flag: &'static str, param: &'static str, value: impl ToString) -> Given {
        Given { flag, param, value: value.to_string() }
    }
}

/// The number a flag gives, if given: `None` for an absent or negative one
/// (the reference's "unset"), an error naming the flag above `max`.
fn number(flag: &'static str, param: &'static str, value: Option<i64>, max: u64) -> Result<Option<Given>> {
    let Some(value) = value else { return Ok(None) };
    Ok(tuning(&flag[2..], value, max)?.map(|n| Given::new(flag, param, n)))
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

    /// Record checksums verified on every read: 0 or -1 for none; 8, 16 or 32
    /// for the reference's widths, each of which verifies the CRC-32 that every
    /// kuradb record carries (tuning, at creation; kept in the file).
    #[arg(long = "record_crc", value_name = "NUM", default_value = "0", allow_negative_numbers = true,
          value_parser = ["-1", "0", "8", "16", "32"], hide_possible_values = true)]
    pub record_crc: String,

    /// Values (and a tree's pages) compressed: none, zstd, lz4, zlib or lzma, as
    /// the reference spells them (tuning, at creation; kept in the file).
    #[arg(long = "record_comp", value_name = "MODE")]
    pub record_comp: Option<String>,

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

    /// Encrypts every value (a tree: every page) with a key derived from KEY
    /// (hash and tree; see docs/encryption.md), to measure what it costs.
    #[arg(long = "cipher_key", value_name = "KEY")]
    pub cipher_key: Option<String>,
}

impl HashFlags {
    /// The flags given, as parameters.
    pub(crate) fn given(&self) -> Result<Vec<Given>> {
        let mut out = Vec::new();
        if self.append {
            out.push(Given::new("--append", "update_mode", "appending"));
        }
        if matches!(self.record_crc.as_str(), "8" | "16" | "32") {
            out.push(Given::new("--record_crc", "record_crc_mode", &self.record_crc));
        }
        if let Some(mode) = &self.record_comp {
            out.push(Given::new("--record_comp", "record_comp_mode", mode));
        }
        out.extend(number("--offset_width", "offset_width", Some(self.offset_width), u8::MAX.into())?);
        out.extend(number("--align_pow", "align_pow", Some(self.align_pow), 63)?);
        out.extend(number("--buckets", "num_buckets", Some(self.buckets), u64::MAX)?);
        out.extend(number("--fbp_cap", "fbp_cap", Some(self.fbp_cap), usize::MAX as u64)?);
        out.extend(number("--min_read_size", "min_read_size", Some(self.min_read_size), usize::MAX as u64)?);
        if self.cache_buckets {
            out.push(Given::new("--cache_buckets", "cache_buckets", true));
        }
        if let Some(key) = &self.cipher_key {
            out.push(Given::new("--cipher_key", "cipher_key", key));
        }
        Ok(out)
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

    /// (tree) The share of the cached nodes, in percent, for nodes lookups
    /// load again (0 makes the node cache a plain LRU) [default: 80].
    #[arg(long = "cached_pages_protected_percent", value_name = "NUM", allow_negative_numbers = true)]
    pub cached_pages_protected_percent: Option<i64>,

    /// (tree) The order of the keys: lexical, decimal, hex, real, or one of them
    /// followed by _reverse; the reference's names (SignedDecimalKeyComparator, …)
    /// are accepted too [default: lexical].
    #[arg(long = "key_comparator", value_name = "NAME", value_parser = parse_comparator)]
    pub key_comparator: Option<KeyComparator>,
}

impl TreeFlags {
    /// The flags given, as parameters.
    pub(crate) fn given(&self) -> Result<Vec<Given>> {
        let limit = usize::MAX as u64;
        let mut out = Vec::new();
        out.extend(number("--max_page_size", "max_page_size", self.max_page_size, limit)?);
        out.extend(number("--max_branches", "max_branches", self.max_branches, limit)?);
        out.extend(number("--max_cached_pages", "max_cached_pages", self.max_cached_pages, limit)?);
        let percent = self.cached_pages_protected_percent;
        out.extend(number(
            "--cached_pages_protected_percent",
            "cached_pages_protected_percent",
            percent,
            100,
        )?);
        if let Some(comparator) = self.key_comparator {
            out.push(Given::new("--key_comparator", "key_comparator", comparator.name()));
        }
        Ok(out)
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
    /// second, last, concat, concat_null, concat_tab, concat_line or total [default: none].
    #[arg(long = "reducer", value_name = "NAME", value_parser = parse_reducer)]
    pub reducer: Option<String>,
}

impl SkipFlags {
    /// The flags given, as parameters.
    pub(crate) fn given(&self) -> Result<Vec<Given>> {
        let limit = usize::MAX as u64;
        let mut out = Vec::new();
        out.extend(number("--step_unit", "step_unit", self.step_unit, u32::MAX.into())?);
        out.extend(number("--max_level", "max_level", self.max_level, u8::MAX.into())?);
        out.extend(number("--max_cached_records", "max_cached_records", self.max_cached_records, limit)?);
        out.extend(number("--sort_mem_size", "sort_mem_size", self.sort_mem_size, limit)?);
        if self.insert_in_order {
            out.push(Given::new("--insert_in_order", "insert_in_order", true));
        }
        if let Some(reducer) = &self.reducer {
            out.push(Given::new("--reducer", "reducer", reducer));
        }
        Ok(out)
    }
}

/// Lets clap report an unknown reducer with the library's own message; the
/// name stays as given, the parameter's value.
fn parse_reducer(name: &str) -> std::result::Result<String, String> {
    Reducer::from_name(name).map(|_| name.to_string()).map_err(|e| e.message().to_string())
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
    /// The flags given, as parameters.
    pub(crate) fn given(&self) -> Result<Vec<Given>> {
        let mut out = Vec::new();
        out.extend(number("--cap_rec_num", "cap_rec_num", self.cap_rec_num, u64::MAX)?);
        out.extend(number("--cap_mem_size", "cap_mem_size", self.cap_mem_size, u64::MAX)?);
        Ok(out)
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

/// Everything needed to open the chosen database, checked once before any phase.
#[derive(Clone, Debug)]
pub struct DbmOpener {
    class: DbmClass,
    path: Option<PathBuf>,
    params: Params,
    sync_hard: bool,
    updates: Updates,
    /// The prefix of the update log every writing phase logs into.
    ulog: Option<PathBuf>,
    /// Whether every writing phase wraps the database for transactions.
    transactional: bool,
    /// Without a path, the on-memory database between phases.
    kept: Kept,
}

/// The database of a run without a path, between its phases.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Option<Box<dyn Dbm>>>>);

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.lock().is_some() { "Kept(database)" } else { "Kept(none)" })
    }
}

impl DbmOptions {
    /// Every flag given, as the parameter it stands for.
    pub(crate) fn given(&self) -> Result<Vec<Given>> {
        let mut given = self.file.given();
        given.extend(self.hash.given()?);
        given.extend(self.tree.given()?);
        given.extend(self.skip.given()?);
        given.extend(self.cache.given()?);
        Ok(given)
    }

    /// Resolves `auto`, checks that the database has what it needs (a path
    /// for file databases) and takes every flag given, and checks the tuning.
    pub fn opener(&self) -> Result<DbmOpener> {
        let class = match (self.dbm.0, &self.path) {
            (Some(class), _) => class,
            (None, Some(path)) => DbmClass::from_extension(path).ok_or_else(|| {
                invalid(format!(
                    "--dbm auto cannot tell the database from the extension of {}: give --dbm hash, \
                     tree or skip, or a path with an extension that names one: {}",
                    path.display(),
                    DbmClass::extension_list()
                ))
            })?,
            (None, None) => {
                return Err(invalid(
                    "give --dbm hash (or tree or skip) and a --path for the database file".to_string(),
                ))
            }
        };
        if !class.is_on_memory() && self.path.is_none() {
            return Err(invalid(format!(
                "--dbm {} is a file database: give the file's --path",
                class.name()
            )));
        }
        let mut params = Params::new();
        if !class.is_on_memory() {
            params.insert("file", self.file.file.name())?;
        }
        let mut access: Vec<String> = Vec::new();
        for given in self.given()? {
            if !class.takes(given.param) {
                return Err(refusal(&given, class));
            }
            if given.param == "access" {
                access.push(given.value);
            } else {
                params.insert(given.param, &given.value)?;
            }
        }
        if !access.is_empty() {
            params.insert("access", &access.join("+"))?;
        }
        let more = Params::parse(&self.params).map_err(|e| invalid(format!("--params: {}", e.message())))?;
        for (name, value) in more.iter() {
            if !class.takes(name) {
                return Err(invalid(format!(
                    "--params: {name} is not a parameter of the {} database (--dbm {})",
                    class.name(),
                    class.name()
                )));
            }
            params.insert(name, value).map_err(|e| invalid(format!("--params: {}", e.message())))?;
        }
        for (flag, given) in [("no_wait", self.no_wait), ("no_lock", self.no_lock)] {
            if given {
                params.insert(flag, "true")?;
            }
        }
        let reducer = self.skip.reducer.as_deref().map_or(Ok(Reducer::All), Reducer::from_name)?;
        let updates = match class.updates_at_sync() {
            true => Updates::Deferred { duplicates: reducer == Reducer::All },
            false => Updates::Immediate,
        };
        let opener = DbmOpener {
            class,
            path: self.path.clone(),
            params,
            sync_hard: self.sync_hard,
            updates,
            ulog: self.ulog.clone(),
            transactional: self.transactional,
            kept: Kept::default(),
        };
        opener.check()?;
        Ok(opener)
    }
}

/// The refusal of a flag `class` does not take, naming the databases that do.
fn refusal(given: &Given, class: DbmClass) -> Error {
    let name = class.name();
    if class.is_on_memory() {
        return invalid(format!(
            "{} is not a flag of the {name} database (--dbm {name}), which lives in memory",
            given.flag
        ));
    }
    // File databases name the file databases that take it, if any does.
    let takers: Vec<DbmClass> = DbmClass::all().filter(|c| c.takes(given.param)).collect();
    let files: Vec<&str> = takers.iter().filter(|c| !c.is_on_memory()).map(|c| c.name()).collect();
    let named = if files.is_empty() { takers.iter().map(|c| c.name()).collect() } else { files };
    let list = match named.as_slice() {
        [one] => format!("the {one} database"),
        [init @ .., last] => format!("the {} and {last} databases", init.join(", ")),
        [] => "no database".to_string(),
    };
    invalid(format!("{} is a flag of {list}, not of the {name} database (--dbm {name})", given.flag))
}

impl DbmOpener {
    /// The implementation's name, as the reports print it (`impl=hash`).
    pub fn name(&self) -> &'static str {
        self.class.name()
    }

    /// How updates show, for the checks of `--validate`.
    pub fn updates(&self) -> Updates {
        self.updates
    }

    /// Checks the tuning now rather than at the first phase: an on-memory
    /// database is made and dropped; a file database's parameters are read.
    fn check(&self) -> Result<()> {
        if self.class.is_on_memory() {
            self.class.open(None, Access::ReadWrite, &self.params)?.close()
        } else {
            self.class.check(&self.params)
        }
    }

    /// Opens the database for a phase.
    pub fn open(&self, mode: OpenMode) -> Result<Box<dyn Dbm>> {
        let Some(path) = &self.path else {
            let kept = if mode == OpenMode::Create { None } else { self.kept.0.lock().take() };
            return match kept {
                Some(db) => Ok(db),
                None => self.logged(self.class.open(None, Access::ReadWrite, &self.params)?),
            };
        };
        let mut params = self.params.clone();
        if mode == OpenMode::Create {
            params.insert("truncate", "true")?;
        }
        let access = if mode == OpenMode::Read { Access::ReadOnly } else { Access::ReadWrite };
        let db = self.class.open(Some(path), access, &params)?;
        if mode == OpenMode::Read {
            return Ok(db);
        }
        self.logged(db)
    }

    /// `db`, logging into the update log if `--ulog` was given, and wrapped
    /// for transactions if `--transactional` was.
    fn logged(&self, db: Box<dyn Dbm>) -> Result<Box<dyn Dbm>> {
        let db: Box<dyn Dbm> = match &self.ulog {
            None => db,
            Some(prefix) => {
                let queue = Arc::new(MessageQueue::open(prefix, DEFAULT_MAX_FILE_SIZE)?);
                Box::new(LoggedDbm::boxed(db, Arc::new(MqUpdateLogger::new(queue, 0, 0))))
            }
        };
        if !self.transactional {
            return Ok(db);
        }
        Ok(Box::new(self.transactional(db)?))
    }

    /// `db` wrapped for transactions.
    pub fn transactional(&self, db: Box<dyn Dbm>) -> Result<TransactionalDbm<Box<dyn Dbm>>> {
        TransactionalDbm::open(db, self.transaction_options())
    }

    /// The options a [`TransactionalDbm`] over this database takes (the
    /// wrapper asks the database itself for its class's facts).
    pub fn transaction_options(&self) -> TransactionOptions {
        TransactionOptions::default()
    }

    /// Closes a database after a phase, first synchronizing it with the device
    /// if it was opened for writing and `--sync_hard` was given.
    pub fn close(&self, db: Box<dyn Dbm>, mode: OpenMode) -> Result<()> {
        if self.path.is_none() {
            // Nothing to write: the database waits in memory for the next phase.
            *self.kept.0.lock() = Some(db);
            return Ok(());
        }
        if self.sync_hard && mode != OpenMode::Read {
            db.synchronize(Durability::Hard)?;
        }
        db.close()
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

#[cfg(test)]
mod tests;
