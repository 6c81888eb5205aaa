//! `kura util export|import`: every record to or from a TSV file (key TAB
//! value, one record a line, fields escaped as `codec` says) or a flat record
//! file of exact bytes (`--flat`, the reference's layout, read and written by
//! the library's `kuradb::dbm::flat_records`).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use kuradb::dbm::flat_records::{write_flat_record, FlatRecordReader};
use kuradb::dbm::Dbm;
use kuradb::{Error, ErrorKind, Result};

use super::{finish, output, progress, write_error, Access, CodecFlags, DbFlags};

/// Arguments of `kura util export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    db: DbFlags,
    #[command(flatten)]
    codec: CodecFlags,

    /// Writes flat records (exact bytes, length-prefixed) instead of TSV.
    #[arg(long = "flat", conflicts_with_all = ["hex", "base64"])]
    flat: bool,

    /// The database file.
    file: PathBuf,
    /// The file to write ("-" for stdout); replaced if it exists.
    out: PathBuf,
}

/// Writes every record of the database, in its order.
pub fn export(args: &ExportArgs) -> Result<()> {
    let db = args.db.open(&args.file, Access::Read)?;
    let result = export_records(&db, args);
    finish(db, result)
}

fn export_records(db: &dyn Dbm, args: &ExportArgs) -> Result<()> {
    let codec = args.codec.codec();
    let mut out = output(&args.out)?;
    let failed = write_error(&args.out);
    let bar = progress::bar("exporting", db.count()?, false);
    let mut cursor = db.iter()?;
    cursor.first()?;
    let mut line = Vec::new();
    while let Some((key, value)) = cursor.get()? {
        if args.flat {
            write_flat_record(&mut out, &key).and_then(|()| write_flat_record(&mut out, &value))
        } else {
            line.clear();
            codec.encode_field(&key, &mut line);
            line.push(b'\t');
            codec.encode_field(&value, &mut line);
            line.push(b'\n');
            out.write_all(&line)
        }
        .map_err(&failed)?;
        bar.inc(1);
        cursor.next()?;
    }
    bar.finish_and_clear();
    out.flush().map_err(&failed)
}

/// Arguments of `kura util import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    db: DbFlags,
    #[command(flatten)]
    codec: CodecFlags,

    /// Reads flat records (as `export --flat` and the reference's `export`
    /// without --tsv write them) instead of TSV.
    #[arg(long = "flat", conflicts_with_all = ["hex", "base64"])]
    flat: bool,

    /// Synchronizes the database with the device every N records, so a crash
    /// loses at most the records since (0: only when closing).
    #[arg(long = "sync_every", value_name = "N", default_value_t = 0)]
    sync_every: u64,

    /// The database file; created if it does not exist.
    file: PathBuf,
    /// The file to read ("-" for stdin).
    input: PathBuf,
}

/// Sets every record of the input, in its order (a later one replaces an
/// earlier one of the same key, except in a skip database, which keeps both).
pub fn import(args: &ImportArgs) -> Result<()> {
    let (reader, size) = input(&args.input)?;
    let db = args.db.open(&args.file, Access::Create)?;
    let result = import_records(&db, args, reader, size);
    finish(db, result)
}

fn input(path: &Path) -> Result<(Box<dyn BufRead>, u64)> {
    if path == Path::new("-") {
        return Ok((Box::new(std::io::BufReader::with_capacity(1 << 16, std::io::stdin())), 0));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((Box::new(std::io::BufReader::with_capacity(1 << 16, file)), size))
}

fn import_records(db: &dyn Dbm, args: &ImportArgs, mut input: Box<dyn BufRead>, size: u64) -> Result<()> {
    let bar = progress::bar("importing", size, true);
    let mut count = 0u64;
    let mut put = |key: &[u8], value: &[u8]| -> Result<()> {
        db.set(key, value, true)?;
        count += 1;
        if args.sync_every > 0 && count.is_multiple_of(args.sync_every) {
            db.synchronize(true)?;
        }
        Ok(())
    };
    if args.flat {
        let mut reader = FlatRecordReader::new(input);
        let (mut key, mut value) = (Vec::new(), Vec::new());
        let at = |e: Error| {
            Error::new(
                e.kind(),
                format!("{}: {} (a TSV file needs no --flat)", args.input.display(), e.message()),
            )
        };
        while reader.next_pair(&mut key, &mut value).map_err(at)? {
            put(&key, &value)?;
            bar.set_position(reader.offset());
        }
    } else {
        let codec = args.codec.codec();
        let mut line = Vec::new();
        let mut offset = 0u64;
        for number in 1.. {
            line.clear();
            let n = input.read_until(b'\n', &mut line).map_err(|e| Error::io("reading", &args.input, e))?;
            if n == 0 {
                break;
            }
            offset += n as u64;
            // CRLF line ends are accepted: the escaped format writes every
            // carriage return of the data as \r.
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let at = |e: Error| {
                Error::new(e.kind(), format!("{} line {number}: {}", args.input.display(), e.message()))
            };
            let tab = text.iter().position(|&b| b == b'\t').ok_or_else(|| {
                at(Error::new(
                    ErrorKind::InvalidArgument,
                    "no tab between key and value (for a flat record file, give --flat)",
                ))
            })?;
            let key = codec.decode_field(&text[..tab], "key").map_err(at)?;
            let value = codec.decode_field(&text[tab + 1..], "value").map_err(at)?;
            put(&key, &value)?;
            bar.set_position(offset);
        }
    }
    bar.finish_and_clear();
    Ok(())
}
