//! The reference's `tkrzw_dbm_util` tuning and opening flags, so a script
//! written for it runs with `kura util` in its place. Each becomes the
//! parameter kuradb's classes take (`--buckets` is `num_buckets`,
//! `--comparator dec` is `key_comparator=decimal`, …); the database decides
//! which it takes, and refuses the others by name. They tune a new file
//! (create, import, set, merge) or a rebuild; an existing file keeps the
//! tuning it was made with.

use clap::Args;
use kuradb::dbm::poly::Params;
use kuradb::dbm::tree::KeyComparator;
use kuradb::{Error, ErrorKind, Result};

use crate::dbm_options::{Given, SkipFlags, TreeFlags};

/// The reference's tuning flags, as `kura util` takes them, with kuradb's
/// own for compression; only the commands that make a new file or rebuild
/// one take them, so their help lists them after the command's own.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Tuning of a new or rebuilt database")]
pub struct TuningFlags {
    /// Compresses values (a tree's pages): none, zstd, lz4, zlib or lzma; the
    /// same as --params record_comp_mode=MODE.
    #[arg(long = "record_comp", value_name = "MODE")]
    record_comp: Option<String>,

    /// (hash, tree) The number of hash buckets.
    #[arg(long = "buckets", value_name = "NUM", allow_negative_numbers = true)]
    buckets: Option<i64>,

    /// (hash, tree) Records are aligned to 2^NUM bytes.
    #[arg(long = "align_pow", value_name = "NUM", allow_negative_numbers = true)]
    align_pow: Option<i64>,

    /// (hash, tree, skip) Bytes of a record offset, which bound the file's size.
    #[arg(long = "offset_width", value_name = "NUM", allow_negative_numbers = true)]
    offset_width: Option<i64>,

    /// (hash, tree) Record checksums: 0 or -1 for none; 8, 16 or 32.
    #[arg(long = "record_crc", value_name = "NUM", allow_negative_numbers = true,
          value_parser = ["-1", "0", "8", "16", "32"])]
    record_crc: Option<String>,

    /// (hash, tree) Updates records in place (kuradb's default update mode).
    #[arg(long = "in_place")]
    in_place: bool,

    /// (tree) The key order, as the reference names it: lex, dec or hex (or
    /// any name --key_comparator takes).
    #[arg(long = "comparator", value_name = "FUNC", value_parser = parse_comparator)]
    comparator: Option<KeyComparator>,

    #[command(flatten)]
    tree: TreeFlags,

    #[command(flatten)]
    skip: SkipFlags,
}

/// The reference's locking flags, which every command takes.
#[derive(Args, Debug, Clone)]
pub struct LockFlags {
    /// Fails at once if another process holds the file's lock (kura util's default).
    #[arg(long = "no_wait", conflicts_with = "wait")]
    no_wait: bool,

    /// Takes no inter-process lock on the file (as the reference's --no_lock:
    /// only when nothing else can open it).
    #[arg(long = "no_lock")]
    no_lock: bool,
}

impl LockFlags {
    /// Adds the flags given to `params`, as [`TuningFlags::insert_into`] does.
    pub fn insert_into(&self, params: &mut Params) -> Result<()> {
        let mut given = Vec::new();
        if self.no_wait {
            given.push(Given::new("--no_wait", "no_wait", true));
        }
        if self.no_lock {
            given.push(Given::new("--no_lock", "no_lock", true));
        }
        insert_all(given, params)
    }
}

/// The reference's common flags of the file under the database, which the
/// commands that write take (a reader gives them in --params if it must).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "File options")]
pub struct FileFlags {
    /// Bytes the file's space is reserved by when a writer opens it
    /// (alloc_init; negative: kuradb's default, 1 MiB).
    #[arg(long = "alloc_init", value_name = "NUM", allow_negative_numbers = true)]
    alloc_init: Option<i64>,

    /// Factor the reserved space grows by when it is full (alloc_inc; 0 or
    /// less: kuradb's default, 2.0).
    #[arg(long = "alloc_inc", value_name = "NUM", allow_negative_numbers = true)]
    alloc_inc: Option<f64>,

    /// The block size of the positional file (--file pos-para or pos-atom):
    /// every system call reads or writes whole blocks.
    #[arg(long = "block_size", value_name = "NUM")]
    block_size: Option<u64>,

    /// Bypasses the OS page cache (O_DIRECT; a positional file with
    /// --block_size of 512 or more).
    #[arg(long = "direct_io")]
    direct_io: bool,

    /// Makes every write of the positional file wait for the device (O_SYNC).
    #[arg(long = "sync_io")]
    sync_io: bool,

    /// Pads the end of the positional file to a multiple of the block size.
    #[arg(long = "padding")]
    padding: bool,

    /// Keeps recently used blocks of the positional file in a page cache in the process.
    #[arg(long = "pagecache")]
    pagecache: bool,
}

impl FileFlags {
    /// Adds the flags given to `params`, as [`TuningFlags::insert_into`] does.
    pub fn insert_into(&self, params: &mut Params) -> Result<()> {
        insert_all(self.given()?, params)
    }

    fn given(&self) -> Result<Vec<Given>> {
        let mut given = Vec::new();
        if let Some(n) = self.alloc_init.and_then(|n| u64::try_from(n).ok()) {
            given.push(Given::new("--alloc_init", "alloc_init", n));
        }
        if let Some(x) = self.alloc_inc.filter(|x| *x > 0.0) {
            // Checked here rather than by the file layer, so that the message
            // names the flag the user typed (the reference takes a factor below
            // 1.0 silently; a file that could never grow is refused instead).
            if !x.is_finite() || x < 1.0 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "--alloc_inc: the factor the reserved space grows by must be at least 1.0, not {x}"
                    ),
                ));
            }
            given.push(Given::new("--alloc_inc", "alloc_inc", x));
        }
        if let Some(n) = self.block_size {
            given.push(Given::new("--block_size", "block_size", n));
        }
        let access: Vec<&str> = [
            (self.direct_io, "direct"),
            (self.sync_io, "sync"),
            (self.padding, "padding"),
            (self.pagecache, "pagecache"),
        ]
        .into_iter()
        .filter_map(|(on, word)| on.then_some(word))
        .collect();
        if !access.is_empty() {
            let flag = match access[0] {
                "direct" => "--direct_io",
                "sync" => "--sync_io",
                "padding" => "--padding",
                _ => "--pagecache",
            };
            given.push(Given::new(flag, "access_options", access.join(",")));
        }
        Ok(given)
    }
}

/// The reference's comparator names (lex, dec, hex), or kuradb's.
fn parse_comparator(name: &str) -> std::result::Result<KeyComparator, String> {
    let name = name.trim();
    match name.to_ascii_lowercase().as_str() {
        "lex" => Ok(KeyComparator::Lexical),
        "dec" => Ok(KeyComparator::Decimal),
        "lexcase" => {
            Err("lexcase (case-insensitive order) is not implemented by kuradb's tree: use lex".into())
        }
        _ => KeyComparator::from_name(name).map_err(|e| e.message().to_string()),
    }
}

impl TuningFlags {
    /// Adds the flags given to `params`; a parameter given twice (as a flag
    /// and in --params) is refused naming the flag.
    pub fn insert_into(&self, params: &mut Params) -> Result<()> {
        let mut given = Vec::new();
        let mut number = |flag: &'static str, param: &'static str, value: Option<i64>| {
            // A negative number is the reference's "unset": kuradb's default.
            if let Some(n) = value.and_then(|n| u64::try_from(n).ok()) {
                given.push(Given::new(flag, param, n));
            }
        };
        number("--buckets", "num_buckets", self.buckets);
        number("--align_pow", "align_pow", self.align_pow);
        number("--offset_width", "offset_width", self.offset_width);
        if let Some(crc) = self.record_crc.as_deref().filter(|c| matches!(*c, "8" | "16" | "32")) {
            given.push(Given::new("--record_crc", "record_crc_mode", crc));
        }
        if self.in_place {
            given.push(Given::new("--in_place", "update_mode", "in_place"));
        }
        if let Some(comparator) = self.comparator {
            given.push(Given::new("--comparator", "key_comparator", comparator.name()));
        }
        given.extend(self.tree.given()?);
        // "none" is every class's default reducer, so a script giving it to
        // a hash database still runs.
        given
            .extend(self.skip.given()?.into_iter().filter(|g| !(g.flag == "--reducer" && g.value == "none")));
        if let Some(mode) = &self.record_comp {
            given.push(Given::new("--record_comp", "record_comp_mode", mode));
        }
        insert_all(given, params)
    }
}

/// Adds each flag given to `params`; a parameter given twice (as a flag and
/// in --params) is refused naming the flag.
fn insert_all(given: Vec<Given>, params: &mut Params) -> Result<()> {
    for g in given {
        params
            .insert(g.param, &g.value)
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("{}: {}", g.flag, e.message())))?;
    }
    Ok(())
}
