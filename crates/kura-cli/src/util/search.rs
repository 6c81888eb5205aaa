//! `kura util search`: the keys that match a pattern, by the library's
//! [`Dbm::search`] in one of the reference's modes.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use kuradb::dbm::{Dbm, SearchMode};
use kuradb::Result;

use super::{finish, Access, CodecFlags, DbFlags, ReadFlags};

/// Arguments of `kura util search`.
#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    codec: CodecFlags,

    /// How keys match: contain, containcase, containword, containcaseword
    /// (each with a * for any of several patterns, one a line), begin, end,
    /// regex, edit (nearest by Levenshtein distance over characters),
    /// editbin (over bytes), upper, upperinc, lower, lowerinc (ordered
    /// databases: the keys after or before the pattern).
    #[arg(long = "mode", value_name = "MODE", default_value = "contain", value_parser = parse_mode)]
    mode: SearchMode,

    /// Prints at most N keys (0: every match).
    #[arg(long = "max", value_name = "N", default_value_t = 0)]
    max: usize,

    /// The database file.
    file: PathBuf,
    /// The pattern, decoded like a key (--hex, --base64).
    pattern: OsString,

    #[command(flatten)]
    db: ReadFlags,
}

fn parse_mode(name: &str) -> std::result::Result<SearchMode, String> {
    name.parse().map_err(|e: kuradb::Error| e.message().to_string())
}

/// Prints each matching key on a line, escaped as `list` prints keys.
pub fn search(args: &SearchArgs) -> Result<()> {
    let codec = args.codec.codec();
    let pattern = codec.decode_arg(&args.pattern, "pattern")?;
    let db = args.db.open(&args.file, Access::Read)?;
    let found = db.search(args.mode, &pattern, args.max);
    let keys = finish(db, found)?;
    let mut text = Vec::new();
    for key in keys {
        codec.encode_field(&key, &mut text);
        text.push(b'\n');
    }
    crate::out::print_bytes(&text)
}
