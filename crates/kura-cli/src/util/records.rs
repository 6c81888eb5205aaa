//! `kura util get|set|remove|rekey`: one record (or, with `--multi`, several).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Args;
use kuradb::dbm::expiry::{ExpiringDbm, Expiry};
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Dbm, OnDuplicate, Rekey};
use kuradb::{Error, ErrorKind, Result};

use super::{finish, multi, Access, Codec, CodecFlags, CreateFlags, DbFlags, ReadFlags, WriteFlags};

/// Arguments of `kura util get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    #[command(flatten)]
    codec: CodecFlags,
    /// Prints one JSON object, {"key": …, "value": …}, as `list --json` does.
    #[arg(long = "json")]
    json: bool,
    /// Gets several keys at once (atomically, with `get_multi`) and prints
    /// key TAB value for each one found, as the reference's --multi; a
    /// missing key is left out.
    #[arg(long = "multi")]
    multi: bool,
    /// The database file.
    file: PathBuf,
    /// The key.
    key: OsString,
    /// More keys, with --multi.
    #[arg(requires = "multi", value_name = "KEY")]
    more_keys: Vec<OsString>,

    #[command(flatten)]
    db: ReadFlags,
}

/// Prints the value of a key and a line feed; a missing key is an error.
pub fn get(args: &GetArgs) -> Result<()> {
    let codec = args.codec.codec();
    if args.multi {
        let keys = multi::decode_all(codec, std::iter::once(&args.key).chain(&args.more_keys), "key")?;
        let db = args.db.open(&args.file, Access::Read)?;
        let found = multi::get(&db, &keys, codec, args.json);
        return finish(db, found);
    }
    let key = codec.decode_arg(&args.key, "key")?;
    let db = args.db.open(&args.file, Access::Read)?;
    let found = db.get(&key);
    let value = finish(db, found)?.ok_or_else(|| not_found(&args.file, &args.key))?;
    let mut line = Vec::with_capacity(value.len() + 1);
    if args.json {
        json_line(&key, Some(&value), codec, &mut line);
    } else {
        codec.encode_alone(&value, &mut line);
    }
    line.push(b'\n');
    print_bytes(&line)
}

fn not_found(path: &Path, key: &OsString) -> Error {
    Error::new(ErrorKind::NotFound, format!("no record of key {key:?} in {}", path.display()))
}

use crate::out::print_bytes;

/// Arguments of `kura util set`.
#[derive(Args, Debug)]
pub struct SetArgs {
    #[command(flatten)]
    codec: CodecFlags,

    /// Fails if the key exists, instead of replacing its value.
    #[arg(long = "no_overwrite", conflicts_with_all = ["append", "incr"])]
    no_overwrite: bool,

    /// Appends VALUE to the existing value after DELIM ("" for none), as the
    /// reference does. DELIM is required so that a FILE after --append is
    /// never taken for it.
    #[arg(long = "append", value_name = "DELIM", conflicts_with = "incr")]
    append: Option<OsString>,

    /// Adds N to the key's number (8 bytes, big-endian) and prints the result.
    /// Given a VALUE too, the reference's form: N is the number an absent key
    /// starts from and VALUE the amount to add.
    #[arg(long = "incr", value_name = "N", allow_negative_numbers = true)]
    incr: Option<i64>,

    /// The number an absent key starts from with --incr.
    #[arg(
        long = "initial",
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true,
        requires = "incr"
    )]
    initial: i64,

    /// Makes the record expire SECONDS from now (a fraction is taken; the
    /// database must have expiry: create it with --params expiry=true).
    /// Without it a set record never expires.
    #[arg(long = "ttl", value_name = "SECONDS", value_parser = parse_ttl, allow_negative_numbers = true, conflicts_with_all = ["append", "incr", "multi"])]
    ttl: Option<std::time::Duration>,

    /// Prints the record as it now stands, one JSON object: {"key": …,
    /// "value": …}, the value a number with --incr.
    #[arg(long = "json", conflicts_with = "multi")]
    json: bool,

    /// Sets several records, KEY VALUE [KEY VALUE …], at once (atomically,
    /// with `set_multi`: with --no_overwrite, nothing is set if any key
    /// exists), or appends to each with --append, as the reference's --multi.
    #[arg(long = "multi", conflicts_with = "incr")]
    multi: bool,

    /// The database file; created if it does not exist.
    file: PathBuf,
    /// The key.
    key: OsString,
    /// The value (with --incr, the reference's amount to add).
    value: Option<OsString>,
    /// More keys and values, with --multi.
    #[arg(requires = "multi", value_name = "KEY VALUE")]
    more: Vec<OsString>,

    #[command(flatten)]
    db: CreateFlags,
}

/// Sets, appends to or increments a record.
pub fn set(args: &SetArgs) -> Result<()> {
    let codec = args.codec.codec();
    if args.multi {
        let words: Vec<&OsString> = std::iter::once(&args.key).chain(&args.value).chain(&args.more).collect();
        if !words.len().is_multiple_of(2) {
            return Err(usage("set --multi takes KEY VALUE pairs: the last key has no value"));
        }
        let words = multi::decode_all(codec, words, "key or value")?;
        let delimiter = args.append.as_ref().map(|d| codec.decode_arg(d, "delimiter")).transpose()?;
        let db = args.db.open(&args.file, Access::Create)?;
        let result = multi::set(&db, &words, !args.no_overwrite, delimiter.as_deref());
        return args.db.finish(db, result);
    }
    let key = codec.decode_arg(&args.key, "key")?;
    // `--incr N KEY` adds N from --initial; the reference's `--incr INITIAL
    // KEY DELTA` adds DELTA to a number that starts at INITIAL.
    let (value, increment) = match (&args.value, args.incr) {
        (Some(delta), Some(initial)) => {
            if args.initial != 0 {
                return Err(usage("set --incr INITIAL KEY DELTA (the reference's form) takes no --initial"));
            }
            let text = delta.to_str().unwrap_or_default();
            let delta = text.trim().parse::<i64>().map_err(|_| {
                usage(&format!("set --incr INITIAL KEY DELTA: the DELTA {delta:?} is not a whole number"))
            })?;
            (Vec::new(), Some((delta, initial)))
        }
        (None, None) => return Err(usage("set needs a VALUE after the key (or --incr N)")),
        (Some(v), None) => (codec.decode_arg(v, "value")?, None),
        (None, Some(delta)) => (Vec::new(), Some((delta, args.initial))),
    };
    let delimiter = args.append.as_ref().map(|d| codec.decode_arg(d, "delimiter")).transpose()?;
    let db = args.db.open(&args.file, Access::Create)?;
    let result = match (increment, delimiter) {
        (Some((delta, initial)), _) => db.increment(&key, delta, initial).map(Some),
        (None, Some(delimiter)) => db.append(&key, &value, &delimiter).map(|()| None),
        (None, None) => match args.ttl {
            Some(ttl) => set_with_ttl(&db, &key, &value, ttl, !args.no_overwrite).map(|()| None),
            None if args.no_overwrite => db.insert(&key, &value).map(|()| None),
            None => db.set(&key, &value).map(|()| None),
        },
    };
    // With --json, the record as it stands after the change (an append's
    // whole value), read before closing.
    let stored = match (&result, args.json, args.incr) {
        (Ok(_), true, None) => db.get(&key).map(Option::unwrap_or_default),
        _ => Ok(Vec::new()),
    };
    let number = args.db.finish(db, result.and_then(|n| stored.map(|v| (n, v))))?;
    match number {
        (Some(number), _) if args.json => {
            let mut record = json_record(&key, None, codec);
            record.insert("value".to_string(), number.into());
            print_bytes(format!("{}\n", serde_json::Value::Object(record)).as_bytes())
        }
        (Some(number), _) => print_bytes(format!("{number}\n").as_bytes()),
        (None, value) if args.json => {
            let mut line = Vec::new();
            json_line(&key, Some(&value), codec, &mut line);
            line.push(b'\n');
            print_bytes(&line)
        }
        (None, _) => Ok(()),
    }
}

/// A time to live in seconds: a finite number, zero or more, that fits.
fn parse_ttl(text: &str) -> std::result::Result<std::time::Duration, String> {
    let seconds: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("{text:?} is not a time to live: give seconds, zero or more"));
    }
    std::time::Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| d.as_millis() < 1 << 62)
        .ok_or_else(|| format!("{text:?} seconds is too long a time to live"))
}

/// The expiry layer of `db`, or an error saying how to get one.
fn expiring(db: &PolyDbm) -> Result<&ExpiringDbm<PolyDbm>> {
    db.expiring().ok_or_else(|| {
        Error::new(
            ErrorKind::Infeasible,
            "the database has no expiry: expiry is turned on when a database is created (--params \
             expiry=true)",
        )
    })
}

/// Sets (or with `overwrite` false, inserts) a record expiring `ttl` from now.
fn set_with_ttl(
    db: &PolyDbm,
    key: &[u8],
    value: &[u8],
    ttl: std::time::Duration,
    overwrite: bool,
) -> Result<()> {
    let layer = expiring(db)?;
    if overwrite {
        return layer.set_with_ttl(key, value, ttl);
    }
    layer.insert_with_ttl(key, value, ttl)
}

/// Arguments of `kura util ttl`.
#[derive(Args, Debug)]
pub struct TtlArgs {
    #[command(flatten)]
    codec: CodecFlags,
    /// Prints one JSON object, {"key": …, "ttl": SECONDS or null, "expiry":
    /// milliseconds since the Unix epoch or null}.
    #[arg(long = "json")]
    json: bool,
    /// The database file (one with expiry).
    file: PathBuf,
    /// The key.
    key: OsString,

    #[command(flatten)]
    db: ReadFlags,
}

/// Prints the seconds a record has left (three decimals), or "none" if it
/// never expires; a missing (or expired) key is an error.
pub fn ttl(args: &TtlArgs) -> Result<()> {
    let codec = args.codec.codec();
    let key = codec.decode_arg(&args.key, "key")?;
    let db = args.db.open(&args.file, Access::Read)?;
    let found = expiring(&db).and_then(|layer| Ok(layer.expiry(&key)?.map(|at| (at, layer.now_ms()))));
    let (at, now) = finish(db, found)?.ok_or_else(|| not_found(&args.file, &args.key))?;
    let left = at.map(|at| at.saturating_sub(now) as f64 / 1000.0);
    if args.json {
        let mut record = json_record(&key, None, codec);
        record.insert("ttl".to_string(), left.map_or(serde_json::Value::Null, serde_json::Value::from));
        record.insert("expiry".to_string(), at.map_or(serde_json::Value::Null, serde_json::Value::from));
        return print_bytes(format!("{}\n", serde_json::Value::Object(record)).as_bytes());
    }
    match left {
        Some(left) => print_bytes(format!("{left:.3}\n").as_bytes()),
        None => print_bytes(b"none\n"),
    }
}

fn usage(message: &str) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// Arguments of `kura util remove`.
#[derive(Args, Debug)]
pub struct RemoveArgs {
    #[command(flatten)]
    codec: CodecFlags,
    /// Removes several keys at once (atomically, with `remove_multi`), as
    /// the reference's --multi; a missing key is no error.
    #[arg(long = "multi")]
    multi: bool,
    /// The database file.
    file: PathBuf,
    /// The key.
    key: OsString,
    /// More keys, with --multi.
    #[arg(requires = "multi", value_name = "KEY")]
    more_keys: Vec<OsString>,

    #[command(flatten)]
    db: WriteFlags,
}

/// Removes a record; a missing key is an error.
pub fn remove(args: &RemoveArgs) -> Result<()> {
    let codec = args.codec.codec();
    if args.multi {
        let keys = multi::decode_all(codec, std::iter::once(&args.key).chain(&args.more_keys), "key")?;
        let db = args.db.open(&args.file, Access::Write)?;
        let removed = db.remove_multi(&keys.iter().map(Vec::as_slice).collect::<Vec<_>>());
        return args.db.finish(db, removed.map(|_| ()));
    }
    let key = codec.decode_arg(&args.key, "key")?;
    let db = args.db.open(&args.file, Access::Write)?;
    let removed = db.remove(&key);
    if !args.db.finish(db, removed)? {
        return Err(not_found(&args.file, &args.key));
    }
    Ok(())
}

/// Arguments of `kura util rekey`.
#[derive(Args, Debug)]
pub struct RekeyArgs {
    #[command(flatten)]
    codec: CodecFlags,

    /// Fails if a record of NEW_KEY exists, instead of replacing it.
    #[arg(long = "no_overwrite")]
    no_overwrite: bool,

    /// The database file.
    file: PathBuf,
    /// The key of the record.
    old_key: OsString,
    /// Its new key.
    new_key: OsString,

    #[command(flatten)]
    db: WriteFlags,
}

/// Gives a record a new key, in one step of the database; a missing old key
/// is an error.
pub fn rekey(args: &RekeyArgs) -> Result<()> {
    let codec = args.codec.codec();
    let old_key = codec.decode_arg(&args.old_key, "old key")?;
    let new_key = codec.decode_arg(&args.new_key, "new key")?;
    let db = args.db.open(&args.file, Access::Write)?;
    let on_duplicate = if args.no_overwrite { OnDuplicate::Fail } else { OnDuplicate::Replace };
    let moved = db.rekey(&old_key, &new_key, Rekey::Move, on_duplicate);
    args.db.finish(db, moved).map_err(|e| match e.kind() {
        ErrorKind::NotFound => not_found(&args.file, &args.old_key),
        _ => e,
    })
}

pub(super) fn json_line(key: &[u8], value: Option<&[u8]>, codec: Codec, out: &mut Vec<u8>) {
    let object = json_record(key, value, codec);
    out.extend_from_slice(serde_json::Value::Object(object).to_string().as_bytes());
}

/// A record as a JSON object: "key" and "value" as text, or "key_hex" and
/// "value_hex" for bytes that are not UTF-8 text (every one encoded with
/// --hex or --base64).
fn json_record(key: &[u8], value: Option<&[u8]>, codec: Codec) -> serde_json::Map<String, serde_json::Value> {
    let mut object = serde_json::Map::new();
    let mut put = |name: &str, data: &[u8]| match (codec, std::str::from_utf8(data)) {
        (Codec::Text, Ok(text)) => {
            object.insert(name.to_string(), text.into());
        }
        (Codec::Text, Err(_)) => {
            let mut hex = Vec::new();
            Codec::Hex.encode_field(data, &mut hex);
            object.insert(format!("{name}_hex"), String::from_utf8_lossy(&hex).into_owned().into());
        }
        _ => {
            let mut encoded = Vec::new();
            codec.encode_field(data, &mut encoded);
            object.insert(name.to_string(), String::from_utf8_lossy(&encoded).into_owned().into());
        }
    };
    put("key", key);
    if let Some(value) = value {
        put("value", value);
    }
    object
}
