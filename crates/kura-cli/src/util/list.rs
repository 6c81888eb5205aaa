//! `kura util list`: a run of records, from where `--move` puts the cursor,
//! at most `--items` of them (10 by default, as the reference's list).

use std::cmp::Ordering;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Cursor, Dbm, Edge};
use kuradb::{Error, ErrorKind, Result};

use super::records::json_line;
use super::{finish, progress, Access, Codec, CodecFlags, DbFlags, ReadFlags};

/// How many records `list` prints unless `--items` says: the reference's default.
pub const DEFAULT_ITEMS: u64 = 10;

/// Arguments of `kura util list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    codec: CodecFlags,

    /// Where the listing starts, as the reference's --move: first; jump (the
    /// first key at or after --jump_key); jumplower/jumplowerinc (the last
    /// key below, or at or below, --jump_key, then onwards); jumpupper/
    /// jumpupperinc (the first key above, or at or above, --jump_key, then
    /// backwards, as the reference lists it). The jumps need an ordered
    /// database. [default: jump if --jump is given, else first]
    #[arg(long = "move", value_name = "TYPE", value_enum)]
    movement: Option<Move>,

    /// The key --move jumps by ("" if not given); alone, starts at the
    /// first key at or after KEY (ordered databases); the reference's --jump_key.
    #[arg(long = "jump", alias = "jump_key", value_name = "KEY")]
    jump: Option<OsString>,

    /// Stops before the first key at or after KEY (ordered databases).
    #[arg(long = "upper", value_name = "KEY")]
    upper: Option<OsString>,

    /// With --upper, includes KEY itself.
    #[arg(long = "upper_inclusive", requires = "upper")]
    upper_inclusive: bool,

    /// Prints at most N records, or every one with `all`. [default: 10, as the reference]
    #[arg(long = "items", value_name = "N|all", value_parser = parse_items, allow_negative_numbers = true)]
    items: Option<u64>,

    /// Prints keys only.
    #[arg(long = "keys")]
    keys: bool,

    /// C-escapes keys and values (\t, \n, \\, \xNN, …), as the reference's
    /// --escape; kura's list always does, unless --hex or --base64 is given.
    #[arg(long = "escape", conflicts_with_all = ["hex", "base64"])]
    escape: bool,

    /// Prints one JSON object a line: {"key": …, "value": …}. A key or value
    /// that is not UTF-8 text is given as "key_hex"/"value_hex" instead;
    /// with --hex or --base64 every one is encoded.
    #[arg(long = "json")]
    json: bool,

    /// The database file.
    file: PathBuf,

    #[command(flatten)]
    db: ReadFlags,
}

/// The reference's `list --move` types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "lower")]
pub enum Move {
    /// From the first record.
    First,
    /// From the first key at or after the jump key.
    Jump,
    /// From the last key below the jump key, onwards.
    JumpLower,
    /// From the last key at or below the jump key, onwards.
    JumpLowerInc,
    /// From the first key above the jump key, backwards.
    JumpUpper,
    /// From the first key at or above the jump key, backwards.
    JumpUpperInc,
}

impl Move {
    fn backwards(self) -> bool {
        matches!(self, Move::JumpUpper | Move::JumpUpperInc)
    }

    /// Puts the cursor at the listing's first record.
    fn start(self, cursor: &mut dyn Cursor, key: &[u8]) -> Result<()> {
        match self {
            Move::First => cursor.first(),
            Move::Jump => cursor.jump(key),
            Move::JumpLower => cursor.jump_lower(key, Edge::Exclusive),
            Move::JumpLowerInc => cursor.jump_lower(key, Edge::Inclusive),
            Move::JumpUpper => cursor.jump_upper(key, Edge::Exclusive),
            Move::JumpUpperInc => cursor.jump_upper(key, Edge::Inclusive),
        }
    }
}

/// `--items`: a count, or `all`. A negative count, which the reference
/// takes for "none", is refused rather than guessed at.
fn parse_items(text: &str) -> std::result::Result<u64, String> {
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(u64::MAX);
    }
    text.trim().parse::<u64>().map_err(|_| format!("{text:?} is not a count of 0 or more, nor `all`"))
}

/// Prints records in the database's order, from where --move and --jump
/// put the cursor to --upper, at most --items of them.
pub fn list(args: &ListArgs) -> Result<()> {
    let codec = if args.escape { Codec::Text } else { args.codec.codec() };
    let jump = args.jump.as_ref().map(|k| codec.decode_arg(k, "--jump key")).transpose()?;
    let upper = args.upper.as_ref().map(|k| codec.decode_arg(k, "--upper key")).transpose()?;
    let movement = args.movement.unwrap_or(if jump.is_some() { Move::Jump } else { Move::First });
    if movement.backwards() && upper.is_some() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "--upper bounds a listing that goes forwards; --move jumpupper lists backwards",
        ));
    }
    let db = args.db.open(&args.file, Access::Read)?;
    let result =
        list_records(&db, args, codec, movement, jump.as_deref().unwrap_or_default(), upper.as_deref());
    finish(db, result)
}

fn list_records(
    db: &dyn Dbm,
    args: &ListArgs,
    codec: Codec,
    movement: Move,
    jump: &[u8],
    upper: Option<&[u8]>,
) -> Result<()> {
    if (movement != Move::First || upper.is_some()) && !db.is_ordered() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "--jump, --move and --upper need an ordered database (tree or skip); this one keeps no key order",
        ));
    }
    let order = key_order(db)?;
    let items = args.items.unwrap_or(DEFAULT_ITEMS);
    let total = db.count()?.min(items);
    let bar = progress::bar("listing", Some(total), false);
    let mut cursor = db.iter()?;
    movement.start(cursor.as_mut(), jump)?;
    let mut out = crate::out::stdout();
    let mut line = Vec::new();
    let mut printed = 0u64;
    while printed < items {
        let Some((key, value)) = cursor.get()? else { break };
        if let Some(upper) = upper {
            match order.compare(&key, upper) {
                Ordering::Greater => break,
                Ordering::Equal if !args.upper_inclusive => break,
                _ => {}
            }
        }
        line.clear();
        if args.json {
            json_line(&key, (!args.keys).then_some(&value[..]), codec, &mut line);
        } else {
            codec.encode_field(&key, &mut line);
            if !args.keys {
                line.push(b'\t');
                codec.encode_field(&value, &mut line);
            }
        }
        line.push(b'\n');
        out.write_all(&line).map_err(crate::out::write_failed)?;
        printed += 1;
        bar.inc(1);
        if movement.backwards() {
            cursor.previous()?;
        } else {
            cursor.next()?;
        }
    }
    bar.finish_and_clear();
    out.flush().map_err(crate::out::write_failed)?;
    if printed == items && more_within(cursor.as_mut(), upper, args.upper_inclusive, order)? {
        // The reference stops at ten without a word; a newcomer takes the
        // ten for the whole database.
        let records = if items == 1 { "record" } else { "records" };
        eprintln!("kura: listed {items} {records}, and more follow: give --items N for more, or --items all");
    }
    Ok(())
}

/// Whether the cursor stands on a record the listing would have printed next.
fn more_within(
    cursor: &mut dyn kuradb::dbm::Cursor,
    upper: Option<&[u8]>,
    upper_inclusive: bool,
    order: KeyComparator,
) -> Result<bool> {
    let Some((key, _)) = cursor.get()? else { return Ok(false) };
    Ok(match upper {
        None => true,
        Some(upper) => match order.compare(&key, upper) {
            Ordering::Less => true,
            Ordering::Equal => upper_inclusive,
            Ordering::Greater => false,
        },
    })
}

/// The order the database keeps its keys in, for --upper: the comparator its
/// inspection names (a tree's), or byte order, which every other ordered
/// database keeps.
fn key_order(db: &dyn Dbm) -> Result<KeyComparator> {
    match db.inspect()?.into_iter().find(|(name, _)| name == "key_comparator") {
        Some((_, name)) => KeyComparator::from_name(&name),
        None => Ok(KeyComparator::Lexical),
    }
}
