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

/// The reference's tuning flags, as `kura util` takes them.
#[derive(Args, Debug, Clone)]
pub struct TuningFlags {
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

    /// Fails at once if another process holds the file's lock (kura util's default).
    #[arg(long = "no_wait", conflicts_with = "wait")]
    no_wait: bool,

    /// Takes no inter-process lock on the file (as the reference's --no_lock:
    /// only when nothing else can open it).
    #[arg(long = "no_lock")]
    no_lock: bool,
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
        if self.no_wait {
            given.push(Given::new("--no_wait", "no_wait", true));
        }
        if self.no_lock {
            given.push(Given::new("--no_lock", "no_lock", true));
        }
        for g in given {
            params.insert(g.param, &g.value).map_err(|e| {
                Error::new(ErrorKind::InvalidArgument, format!("{}: {}", g.flag, e.message()))
            })?;
        }
        Ok(())
    }
}
