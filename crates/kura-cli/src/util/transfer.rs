//! `kura util export`: every record to a flat record file of exact bytes
//! (the default, the reference's layout, written by the library's
//! `kuradb::dbm::flat_records`), or to a TSV file with `--tsv` (key TAB
//! value, one record a line). `import` reads the same formats (see `import`).
//!
//! The TSV fields are written as the reference's `tkrzw_dbm_util` writes
//! them: raw bytes by default, C-escaped with `--escape`, or hex or base64
//! with `--hex`/`--base64` (which imply `--tsv`). Where the reference turns a
//! tab or line feed of raw data into a space, losing it, kura refuses such a
//! record and names `--escape`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use kuradb::dbm::expiry::{ExpiringDbm, Expiry};
use kuradb::dbm::flat_records::write_flat_record;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::Dbm;
use kuradb::{Error, ErrorKind, Result};

use super::ulog_transfer::{self, refuse_with_ulog, UlogFlags};
use super::{finish, progress, write_error, Access, Codec, CodecFlags, DbFlags, Output, ReadFlags};

/// The flags that choose the record file's format, shared by export and import.
#[derive(Args, Debug, Clone, Copy)]
pub struct FormatFlags {
    #[command(flatten)]
    codec: CodecFlags,

    /// The record file is TSV (key TAB value, one record a line) instead of
    /// flat records.
    #[arg(long = "tsv", conflicts_with = "flat")]
    tsv: bool,

    /// TSV fields are C-escaped (\t, \n, \\, \xNN, …), as the reference's
    /// --escape; without it they are raw bytes.
    #[arg(long = "escape", conflicts_with_all = ["hex", "base64"])]
    escape: bool,

    /// The record file is flat records (the default; kept for the scripts
    /// written when TSV was).
    #[arg(long = "flat", conflicts_with_all = ["hex", "base64", "escape"])]
    flat: bool,
}

/// How the fields of a TSV line are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    /// Raw bytes: no tab, line feed or carriage return may appear in them.
    Raw,
    /// Escaped text, hex or base64.
    Coded(Codec),
}

impl FormatFlags {
    /// `None` for flat records, else how TSV fields are written.
    pub fn tsv(self) -> Result<Option<Fields>> {
        let codec = self.codec.codec();
        if self.escape && !self.tsv {
            return Err(Error::new(ErrorKind::InvalidArgument, "--escape applies to TSV: give --tsv too"));
        }
        Ok(match codec {
            Codec::Text if self.escape => Some(Fields::Coded(Codec::Text)),
            Codec::Text if self.tsv => Some(Fields::Raw),
            Codec::Text => None,
            coded => Some(Fields::Coded(coded)),
        })
    }
}

impl Fields {
    /// Appends `data` as a field; a raw field that would break the line is an error.
    pub fn encode(self, data: &[u8], what: &str, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Fields::Coded(codec) => codec.encode_field(data, out),
            Fields::Raw => {
                if data.iter().any(|b| matches!(b, b'\t' | b'\n' | b'\r')) {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "a {what} holds a tab or line break, which a raw TSV line cannot: give --escape \
                             (or --hex, --base64, or export to flat records without --tsv)"
                        ),
                    ));
                }
                out.extend_from_slice(data);
            }
        }
        Ok(())
    }

    /// The bytes a field stands for.
    pub fn decode(self, field: &[u8], what: &str) -> Result<Vec<u8>> {
        match self {
            Fields::Coded(codec) => codec.decode_field(field, what),
            Fields::Raw => Ok(field.to_vec()),
        }
    }
}

/// Arguments of `kura util export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    format: FormatFlags,

    /// Writes keys only: one flat record, or one TSV line, a key.
    #[arg(long = "keys")]
    keys: bool,

    /// With --tsv: a third field on each line, the record's expiry time in
    /// milliseconds since the Unix epoch, empty for one that never expires
    /// (a database with expiry; `import --expiry` reads it back).
    #[arg(long = "expiry", conflicts_with = "keys")]
    expiry: bool,

    #[command(flatten)]
    ulog: UlogFlags,

    /// The database file.
    file: PathBuf,
    /// The file to write ("-" for stdout); replaced if it exists. With
    /// --ulog, the prefix of the update log files, added to if they exist.
    out: PathBuf,

    #[command(flatten)]
    db: ReadFlags,
}

/// Writes every record of the database, in its order.
pub fn export(args: &ExportArgs) -> Result<()> {
    let fields = args.format.tsv()?;
    if args.expiry && fields.is_none() {
        return Err(no_flat_expiry());
    }
    if args.ulog.timestamp.is_some() {
        refuse_with_ulog(&[("--tsv", fields.is_some()), ("--keys", args.keys), ("--expiry", args.expiry)])?;
        let db = args.db.open(&args.file, Access::Read)?;
        let result = ulog_transfer::export(db.stored(), &args.out, &args.ulog);
        return finish(db, result);
    }
    let db = args.db.open(&args.file, Access::Read)?;
    let layer = match args.expiry {
        true => match db.expiring() {
            Some(layer) => Some(layer),
            None => {
                let _ = db.close();
                return Err(Error::new(
                    ErrorKind::Infeasible,
                    format!(
                        "--expiry: {} has no expiry, so its records have no expiry times",
                        args.file.display()
                    ),
                ));
            }
        },
        false => None,
    };
    let result = export_records(&db, args, fields, layer);
    finish(db, result)
}

/// The error of `--expiry` without TSV.
pub fn no_flat_expiry() -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        "--expiry applies to TSV (a flat record has no place for an expiry time): give --tsv too",
    )
}

fn export_records(
    db: &dyn Dbm,
    args: &ExportArgs,
    fields: Option<Fields>,
    layer: Option<&ExpiringDbm<PolyDbm>>,
) -> Result<()> {
    refuse_self(&args.file, &args.out)?;
    let mut out = Output::new(&args.out)?;
    let failed = write_error(&args.out);
    let bar = progress::bar("exporting", Some(db.count()?), false);
    let mut cursor = db.iter()?;
    cursor.first()?;
    let mut line = Vec::new();
    let mut number = 0u64;
    while let Some((key, value)) = cursor.get()? {
        number += 1;
        match fields {
            None => write_flat_record(&mut out, &key)
                .and_then(|()| if args.keys { Ok(()) } else { write_flat_record(&mut out, &value) })
                .map_err(&failed)?,
            Some(fields) => {
                line.clear();
                let at = |e: Error| Error::new(e.kind(), format!("record {number}: {}", e.message()));
                fields.encode(&key, "key", &mut line).map_err(at)?;
                if !args.keys {
                    line.push(b'\t');
                    fields.encode(&value, "value", &mut line).map_err(at)?;
                }
                if let Some(layer) = layer {
                    match layer.expiry(&key)? {
                        // Expired since the cursor read it: not exported.
                        None => {
                            bar.inc(1);
                            cursor.next()?;
                            continue;
                        }
                        Some(None) => line.push(b'\t'),
                        Some(Some(at)) => line.extend_from_slice(format!("\t{at}").as_bytes()),
                    }
                }
                line.push(b'\n');
                out.write_all(&line).map_err(&failed)?;
            }
        }
        bar.inc(1);
        cursor.next()?;
    }
    bar.finish_and_clear();
    out.commit()
}

/// Refuses an export whose destination is the database's own file (by any
/// name: a link, another path): renaming the export into place would
/// replace the database with its records' text.
fn refuse_self(file: &std::path::Path, out: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let identity = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    match (identity(file), identity(out)) {
        (Some(a), Some(b)) if a == b => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{} is the database itself: export it to another file", out.display()),
        )),
        _ => Ok(()),
    }
}
