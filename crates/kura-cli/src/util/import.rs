//! `kura util import`: the records of a flat record file (the default) or a
//! TSV file (`--tsv`, fields as `export` writes them) into a database.
//!
//! **All or nothing.** A bad line (no tab, a bad escape) or a damaged flat
//! record is found before anything is written: the input is read once to
//! check every record, then again to import it. Standard input, which cannot
//! be read twice, is first copied to an unnamed temporary file. So a failing
//! import leaves the database as it was, and its error names the line (or the
//! byte of a flat file) and why. `--skip_bad` imports the good lines instead
//! and counts the bad ones on stderr (a damaged flat file cannot be skipped
//! past: its record lengths are lost). `--sync_every N` asks for records to be
//! durable as they come, which is at odds with checking them all first: it
//! streams, and a bad line stops the import there, with the records before it
//! imported.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek};
use std::path::{Path, PathBuf};

use clap::Args;
use kuradb::dbm::expiry::Expiry;
use kuradb::dbm::flat_records::FlatRecordReader;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Dbm, Durability};
use kuradb::{Error, ErrorKind, Result};

use super::transfer::{Fields, FormatFlags};
use super::ulog_transfer::{self, refuse_with_ulog, UlogFlags};
use super::{progress, Access, CreateFlags, DbFlags};

/// What takes each imported record: key, value, and with --expiry its
/// expiry time (`Some(None)`: never).
type RecordSink<'a> = dyn FnMut(&[u8], &[u8], Option<Option<u64>>) -> Result<()> + 'a;
/// Arguments of `kura util import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    format: FormatFlags,

    /// Imports the good lines of a TSV file, skipping and counting the bad
    /// ones, instead of importing nothing.
    #[arg(long = "skip_bad")]
    skip_bad: bool,

    /// With --tsv: the fields are raw bytes even where they hold what an
    /// --escape export writes (\t, \n, \r, \\, \xNN), which plain --tsv
    /// otherwise refuses, so an escaped export is never stored as literal
    /// escapes by mistake.
    #[arg(long = "raw", requires = "tsv", conflicts_with_all = ["escape", "hex", "base64"])]
    raw: bool,

    /// Synchronizes the database with the device every N records, so a crash
    /// loses at most the records since (0: only when closing). Streams the
    /// input: a bad line stops the import with the records before it kept.
    #[arg(long = "sync_every", value_name = "N", default_value_t = 0)]
    sync_every: u64,

    /// With --tsv: each line has a third field, the record's expiry time in
    /// milliseconds since the Unix epoch, empty for none (as `export
    /// --expiry` writes it). A record with an expiry time needs a database
    /// with expiry; one already expired is not imported.
    #[arg(long = "expiry")]
    expiry: bool,

    #[command(flatten)]
    ulog: UlogFlags,

    /// The database file; created if it does not exist.
    file: PathBuf,
    /// The file to read ("-" for stdin). With --ulog, the prefix of the
    /// update log files.
    input: PathBuf,

    #[command(flatten)]
    db: CreateFlags,
}

/// Sets every record of the input, in its order (a later one replaces an
/// earlier one of the same key, except in a skip database, which keeps both).
pub fn import(args: &ImportArgs) -> Result<()> {
    let fields = args.format.tsv()?;
    if args.expiry && fields.is_none() {
        return Err(super::transfer::no_flat_expiry());
    }
    if args.ulog.timestamp.is_some() {
        refuse_with_ulog(&[
            ("--tsv", fields.is_some()),
            ("--expiry", args.expiry),
            ("--skip_bad", args.skip_bad),
            ("--sync_every", args.sync_every > 0),
        ])?;
        let db = args.db.open(&args.file, Access::Create)?;
        let result = ulog_transfer::import(db.stored(), &args.input, &args.ulog);
        return args.db.finish(db, result);
    }
    let streaming = args.sync_every > 0;
    let mut input = Input::open(&args.input, !streaming)?;
    let mut expiring = None;
    if !streaming {
        // Nothing is written unless every record reads (or, with
        // --skip_bad, every record of a flat file).
        let mut shapes = FieldShapes::default();
        input.records(fields, args.raw, args.skip_bad, args.expiry, &mut |key, value, expiry| {
            shapes.see(key);
            shapes.see(value);
            if expiring.is_none() && matches!(expiry, Some(Some(_))) {
                expiring = Some(key.to_vec());
            }
            Ok(())
        })?;
        if fields == Some(Fields::Raw) && !args.raw {
            shapes.refuse_encoded(&args.input)?;
        }
        input.rewind()?;
    }
    let db = args.db.open(&args.file, Access::Create)?;
    if let (Some(key), None) = (&expiring, db.expiring()) {
        let _ = db.close();
        return Err(without_expiry(key));
    }
    let result = import_records(&db, args, fields, &mut input);
    let skipped = args.db.finish(db, result)?;
    if skipped > 0 {
        let lines = if skipped == 1 { "line" } else { "lines" };
        eprintln!("kura: {skipped} bad {lines} of {} skipped", args.input.display());
    }
    Ok(())
}

/// The error of a record with an expiry time for a database without expiry.
fn without_expiry(key: &[u8]) -> Error {
    Error::new(
        ErrorKind::Infeasible,
        format!(
            "the record {:?} has an expiry time, but the database has no expiry (create it with --params \
             expiry=true); nothing imported",
            String::from_utf8_lossy(key)
        ),
    )
}

fn import_records(db: &PolyDbm, args: &ImportArgs, fields: Option<Fields>, input: &mut Input) -> Result<u64> {
    let mut count = 0u64;
    input.records(fields, args.raw, args.skip_bad, args.expiry, &mut |key, value, expiry| {
        match (expiry, db.expiring()) {
            (Some(Some(at)), Some(layer)) => layer.set_expiring(key, value, Some(at))?,
            (Some(Some(_)), None) => return Err(without_expiry(key)),
            _ => db.set(key, value)?,
        }
        count += 1;
        if args.sync_every > 0 && count.is_multiple_of(args.sync_every) {
            db.synchronize(Durability::Hard)?;
        }
        Ok(())
    })
}

/// The input of an import: a file, or stdin (copied to a temporary file
/// when it is to be read twice).
struct Input {
    path: PathBuf,
    reader: Box<dyn BufRead>,
    /// The file under `reader`, to read again; `None` for streamed stdin.
    file: Option<File>,
    size: Option<u64>,
}

impl Input {
    fn open(path: &Path, twice: bool) -> Result<Input> {
        if path != Path::new("-") {
            let file = File::open(path).map_err(|e| Error::io("opening", path, e))?;
            let meta = file.metadata().map_err(|e| Error::io("reading the metadata", path, e))?;
            if meta.is_dir() {
                return Err(super::is_a_directory(path));
            }
            let reader = BufReader::with_capacity(
                1 << 16,
                file.try_clone().map_err(|e| Error::io("opening", path, e))?,
            );
            return Ok(Input {
                path: path.into(),
                reader: Box::new(reader),
                file: Some(file),
                size: Some(meta.len()),
            });
        }
        let stdin = BufReader::with_capacity(1 << 16, std::io::stdin());
        if !twice {
            return Ok(Input { path: path.into(), reader: Box::new(stdin), file: None, size: None });
        }
        let spool = Path::new("a temporary file");
        let mut file = tempfile::tempfile().map_err(|e| Error::io("creating", spool, e))?;
        let bar = progress::bar("reading stdin", None, true);
        let copied = std::io::copy(&mut bar.wrap_read(std::io::stdin().lock()), &mut file);
        bar.finish_and_clear();
        copied.map_err(|e| Error::io("reading", Path::new("standard input"), e))?;
        let size = file.stream_position().map_err(|e| Error::io("writing", spool, e))?;
        let mut input = Input {
            path: path.into(),
            reader: Box::new(std::io::empty()),
            file: Some(file),
            size: Some(size),
        };
        input.rewind()?;
        Ok(input)
    }

    /// Starts over from the first byte.
    fn rewind(&mut self) -> Result<()> {
        let file = self.file.as_mut().expect("only a file is read twice");
        file.rewind().map_err(|e| Error::io("rereading", &self.path, e))?;
        let again = file.try_clone().map_err(|e| Error::io("rereading", &self.path, e))?;
        self.reader = Box::new(BufReader::with_capacity(1 << 16, again));
        Ok(())
    }

    /// Calls `put` with every record; answers how many bad lines were
    /// skipped. Raw TSV fields holding escapes are bad lines unless `raw`.
    fn records(
        &mut self,
        fields: Option<Fields>,
        raw: bool,
        skip_bad: bool,
        expiry: bool,
        put: &mut RecordSink<'_>,
    ) -> Result<u64> {
        let bar = progress::bar("importing", self.size, true);
        let name = if self.path == Path::new("-") {
            "standard input".to_string()
        } else {
            self.path.display().to_string()
        };
        let Some(fields) = fields else {
            let mut reader = FlatRecordReader::new(&mut self.reader);
            let (mut key, mut value) = (Vec::new(), Vec::new());
            let at = |e: Error| {
                Error::new(e.kind(), format!("{name}: {} (for a TSV file, give --tsv)", e.message()))
            };
            while reader.next_pair(&mut key, &mut value).map_err(at)? {
                put(&key, &value, None)?;
                bar.set_position(reader.offset());
            }
            bar.finish_and_clear();
            return Ok(0);
        };
        let (mut line, mut offset, mut skipped) = (Vec::new(), 0u64, 0u64);
        for number in 1.. {
            line.clear();
            let n =
                self.reader.read_until(b'\n', &mut line).map_err(|e| Error::io("reading", &self.path, e))?;
            if n == 0 {
                break;
            }
            offset += n as u64;
            // Never skipped: an escaped export taken for raw text is no bad
            // line but the wrong flag, and --skip_bad would drop its records.
            if fields == Fields::Raw && !raw {
                refuse_escapes(&line)
                    .map_err(|e| Error::new(e.kind(), format!("{name} line {number}: {}", e.message())))?;
            }
            match parse_line(&line, fields, expiry) {
                Ok((key, value, at)) => put(&key, &value, at)?,
                Err(_) if skip_bad => skipped += 1,
                Err(e) => return Err(Error::new(e.kind(), format!("{name} line {number}: {}", e.message()))),
            }
            bar.set_position(offset);
        }
        bar.finish_and_clear();
        Ok(skipped)
    }
}

/// The key and value of a TSV line. CRLF line ends are accepted: the escaped
/// format writes every carriage return of the data as \r.
/// A TSV line's key, value and (with --expiry) expiry time.
type Line = (Vec<u8>, Vec<u8>, Option<Option<u64>>);

/// With `expiry`, the last field is the expiry time.
fn parse_line(line: &[u8], fields: Fields, expiry: bool) -> Result<Line> {
    let (key, mut value) = split_line(line)?;
    let mut at = None;
    if expiry {
        let tab = value.iter().rposition(|&b| b == b'\t').ok_or_else(|| {
            Error::new(ErrorKind::InvalidArgument, "no expiry field (--expiry: key TAB value TAB expiry)")
        })?;
        let field = &value[tab + 1..];
        at = Some(if field.is_empty() {
            None
        } else {
            let text = std::str::from_utf8(field).ok().filter(|t| t.bytes().all(|b| b.is_ascii_digit()));
            Some(text.and_then(|t| t.parse::<u64>().ok()).filter(|&ms| ms < 1 << 62).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "the expiry field {:?} is not milliseconds since the Unix epoch",
                        String::from_utf8_lossy(field)
                    ),
                )
            })?)
        });
        value = &value[..tab];
    }
    Ok((fields.decode(key, "key")?, fields.decode(value, "value")?, at))
}

/// The key and value fields of a TSV line, as written.
fn split_line(line: &[u8]) -> Result<(&[u8], &[u8])> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let tab = text.iter().position(|&b| b == b'\t').ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            "no tab between key and value (for a flat record file, leave out --tsv)",
        )
    })?;
    Ok((&text[..tab], &text[tab + 1..]))
}

/// Refuses a raw line whose fields hold an escape: such a file is most
/// likely an --escape export, which a raw import would store as literal
/// text. A line without a tab is left to [`parse_line`] to refuse.
fn refuse_escapes(line: &[u8]) -> Result<()> {
    let Ok((key, value)) = split_line(line) else { return Ok(()) };
    for (what, field) in [("key", key), ("value", value)] {
        if let Some(escape) = first_escape(field) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the {what} holds {escape}, as an --escape export writes: give --escape to decode \
                     escapes, or --raw to store backslashes as they are"
                ),
            ));
        }
    }
    Ok(())
}

/// What every field of a raw TSV file looks like, to tell a --hex or
/// --base64 export given to a plain --tsv import, which would store the
/// encoded text as the data. Plain text rarely has every field of a file
/// hexadecimal with a letter somewhere, or base64 with its padding or its
/// `+` and `/` somewhere; a file that does needs --raw.
#[derive(Debug)]
struct FieldShapes {
    fields: u64,
    all_hex: bool,
    hex_letter: bool,
    all_base64: bool,
    base64_mark: bool,
}

impl Default for FieldShapes {
    fn default() -> FieldShapes {
        FieldShapes { fields: 0, all_hex: true, hex_letter: false, all_base64: true, base64_mark: false }
    }
}

impl FieldShapes {
    fn see(&mut self, field: &[u8]) {
        self.fields += 1;
        if self.all_hex {
            self.all_hex =
                field.len().is_multiple_of(2) && field.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            self.hex_letter |= field.iter().any(u8::is_ascii_lowercase);
        }
        if self.all_base64 {
            let body = field.strip_suffix(b"==").or_else(|| field.strip_suffix(b"=")).unwrap_or(field);
            self.all_base64 = field.len().is_multiple_of(4)
                && body.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'));
            self.base64_mark |= body.len() < field.len() || body.iter().any(|b| matches!(b, b'+' | b'/'));
        }
    }

    /// An error if the fields seen look like a --hex or --base64 export.
    fn refuse_encoded(&self, input: &Path) -> Result<()> {
        let flag = if self.fields == 0 {
            return Ok(());
        } else if self.all_hex && self.hex_letter {
            "--hex"
        } else if self.all_base64 && self.base64_mark {
            "--base64"
        } else {
            return Ok(());
        };
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{}: every field looks like what {flag} exports write: give {flag} to decode them, or --raw to \
                 store them as text",
                input.display()
            ),
        ))
    }
}

/// The first sequence in `field` that an escaped export writes (\\, \t, \n,
/// \r or \x and two hexadecimal digits), as text.
fn first_escape(field: &[u8]) -> Option<String> {
    field.windows(2).enumerate().find_map(|(i, pair)| match pair {
        [b'\\', b'\\' | b't' | b'n' | b'r'] => Some(String::from_utf8_lossy(pair).into_owned()),
        [b'\\', b'x'] => field
            .get(i + 2..i + 4)
            .filter(|digits| digits.iter().all(u8::is_ascii_hexdigit))
            .map(|digits| format!("\\x{}", String::from_utf8_lossy(digits))),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(lines: &[(&str, &str)]) -> FieldShapes {
        let mut shapes = FieldShapes::default();
        for (key, value) in lines {
            shapes.see(key.as_bytes());
            shapes.see(value.as_bytes());
        }
        shapes
    }

    #[test]
    fn tells_hex_and_base64_exports_from_plain_text() {
        let refused = |lines: &[(&str, &str)]| shapes(lines).refuse_encoded(Path::new("f")).err();
        let hex = refused(&[("6b31", "76616c7565"), ("", "00ff")]).expect("hex");
        assert!(hex.message().contains("give --hex"), "{hex}");
        let b64 = refused(&[("azE=", "dmFsdWU="), ("a2V5", "")]).expect("base64");
        assert!(b64.message().contains("give --base64"), "{b64}");
        // Numbers, words and mixed text are plain.
        assert!(refused(&[("10", "2000"), ("12", "34")]).is_none());
        assert!(refused(&[("key1", "val1"), ("abcd", "wxyz")]).is_none());
        assert!(refused(&[("6b31", "hello world")]).is_none());
        assert!(refused(&[]).is_none());
    }

    #[test]
    fn finds_what_an_escaped_export_writes_and_nothing_else() {
        assert_eq!(first_escape(b"a\\tb").as_deref(), Some("\\t"));
        assert_eq!(first_escape(b"\\\\").as_deref(), Some("\\\\"));
        assert_eq!(first_escape(b"x\\x0Ay").as_deref(), Some("\\x0A"));
        assert_eq!(first_escape(b"C:\\Users"), None);
        assert_eq!(first_escape(b"\\xZZ \\q \\"), None);
        assert_eq!(first_escape(b"plain"), None);
    }

    #[test]
    fn a_raw_line_with_escapes_is_refused() {
        let err = refuse_escapes(b"k\tC:\\temp\n").unwrap_err();
        assert!(err.message().contains("--escape") && err.message().contains("--raw"), "{err}");
        let (key, value, at) = parse_line(b"k\tC:\\temp\n", Fields::Raw, false).unwrap();
        assert_eq!((key.as_slice(), value.as_slice(), at), (&b"k"[..], &b"C:\\temp"[..], None));
        assert!(refuse_escapes(b"k\tC:\\Users\n").is_ok() && refuse_escapes(b"no tab").is_ok());
    }

    #[test]
    fn the_expiry_field_is_the_last() {
        let (key, value, at) = parse_line(b"k\ta\tb\t1700000000000\n", Fields::Raw, true).unwrap();
        assert_eq!(
            (key.as_slice(), value.as_slice(), at),
            (&b"k"[..], &b"a\tb"[..], Some(Some(1_700_000_000_000)))
        );
        assert_eq!(parse_line(b"k\tv\t\r\n", Fields::Raw, true).unwrap().2, Some(None));
        assert!(parse_line(b"k\tv\t-5\n", Fields::Raw, true).is_err());
        assert!(parse_line(b"k\tv\t99999999999999999999\n", Fields::Raw, true).is_err());
    }
}
