//! `kura ulog`: update-log files, with the subcommands and flags of the
//! reference's `tkrzw_ulog_util` (writeset, writeremove, writeclear, read,
//! listfiles, removeoldfiles) and the same output, plus `apply`, which
//! replays the logs into a database. `--timestamp` takes milliseconds since
//! the epoch, or a form relative to now such as `-7D`, `-3h`, `+10s`.

use kuradb::ulog::NewestFile;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use kuradb::dbm::poly::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Durability};
use kuradb::ulog::{
    apply_update_logs, find_files, now_ms, parse_timestamp, read_file_meta, remove_old_files, ApplyFilter,
    MessageQueue, MessageQueueReader, UpdateEntry, UpdateOp, DEFAULT_MAX_FILE_SIZE,
};
use kuradb::{Error, Result};

/// Arguments of `kura ulog`.
#[derive(Args, Debug)]
pub struct UlogArgs {
    #[command(subcommand)]
    command: UlogCommand,
}

#[derive(Subcommand, Debug)]
enum UlogCommand {
    /// Writes a SET operation.
    Writeset(WriteArgs),
    /// Writes a REMOVE operation.
    Writeremove(WriteArgs),
    /// Writes a CLEAR operation.
    Writeclear(WriteArgs),
    /// Prints each log entry: timestamp, server id, index, operation, key, value.
    Read(ReadArgs),
    /// Lists the log files: path, id, latest timestamp, its age, size.
    Listfiles(ListArgs),
    /// Removes the log files whose latest entry is older than --timestamp.
    Removeoldfiles(RemoveArgs),
    /// Replays the log entries into a database (created if missing).
    Apply(ApplyArgs),
}

/// Arguments of the write subcommands: PREFIX, then KEY and VALUE as the
/// operation takes them.
#[derive(Args, Debug)]
struct WriteArgs {
    /// The timestamp to record (default: now).
    #[arg(long = "timestamp", value_name = "TIME", allow_hyphen_values = true)]
    timestamp: Option<String>,
    /// The size at which a new file is begun.
    #[arg(long = "max_file_size", value_name = "NUM", default_value_t = DEFAULT_MAX_FILE_SIZE)]
    max_file_size: u64,
    /// The server id to record.
    #[arg(long = "server_id", value_name = "NUM", default_value_t = 0)]
    server_id: u32,
    /// The database index to record.
    #[arg(long = "dbm_index", value_name = "NUM", default_value_t = 0)]
    dbm_index: u32,
    /// The prefix of the log files.
    prefix: PathBuf,
    /// The key (writeset, writeremove) and the value (writeset).
    #[arg(value_name = "KEY [VALUE]")]
    rest: Vec<String>,
}

/// Arguments of `kura ulog read`.
#[derive(Args, Debug)]
struct ReadArgs {
    /// The timestamp to start at.
    #[arg(long = "timestamp", value_name = "TIME", allow_hyphen_values = true, default_value = "0")]
    timestamp: String,
    /// Only the entries of this server.
    #[arg(long = "server_id", value_name = "NUM")]
    server_id: Option<u32>,
    /// Only the entries of this database index.
    #[arg(long = "dbm_index", value_name = "NUM")]
    dbm_index: Option<u32>,
    /// The number of entries to print.
    #[arg(long = "items", value_name = "NUM", default_value_t = 10)]
    items: u64,
    /// Escapes keys and values C-style instead of blanking their control characters.
    #[arg(long = "escape")]
    escape: bool,
    /// The prefix of the log files.
    prefix: PathBuf,
}

/// Arguments of `kura ulog listfiles`.
#[derive(Args, Debug)]
struct ListArgs {
    /// Lists only files with an entry at or after this timestamp.
    #[arg(long = "timestamp", value_name = "TIME", allow_hyphen_values = true, default_value = "0")]
    timestamp: String,
    /// The prefix of the log files.
    prefix: PathBuf,
}

/// Arguments of `kura ulog removeoldfiles`.
#[derive(Args, Debug)]
struct RemoveArgs {
    /// The threshold: files whose latest entry is older go.
    #[arg(long = "timestamp", value_name = "TIME", allow_hyphen_values = true, default_value = "-7D")]
    timestamp: String,
    /// Keeps the newest file whatever its age.
    #[arg(long = "exclude_latest")]
    exclude_latest: bool,
    /// The prefix of the log files.
    prefix: PathBuf,
}

/// Arguments of `kura ulog apply`.
#[derive(Args, Debug)]
struct ApplyArgs {
    /// The timestamp to start at.
    #[arg(long = "timestamp", value_name = "TIME", allow_hyphen_values = true, default_value = "0")]
    timestamp: String,
    /// Only the entries of this server.
    #[arg(long = "server_id", value_name = "NUM")]
    server_id: Option<u32>,
    /// Only the entries of this database index.
    #[arg(long = "dbm_index", value_name = "NUM")]
    dbm_index: Option<u32>,
    /// Database parameters (name=value,...), as `kura util` takes them.
    #[arg(long = "params", value_name = "PARAMS", default_value = "")]
    params: String,
    /// The prefix of the log files.
    prefix: PathBuf,
    /// The database to apply them to.
    db_file: PathBuf,
}

/// Runs `kura ulog`.
pub fn run(args: &UlogArgs) -> Result<()> {
    match &args.command {
        UlogCommand::Writeset(a) => write(a, "writeset", 2),
        UlogCommand::Writeremove(a) => write(a, "writeremove", 1),
        UlogCommand::Writeclear(a) => write(a, "writeclear", 0),
        UlogCommand::Read(a) => read(a),
        UlogCommand::Listfiles(a) => list(a),
        UlogCommand::Removeoldfiles(a) => remove(a),
        UlogCommand::Apply(a) => apply(a),
    }
}

fn write(args: &WriteArgs, name: &str, operands: usize) -> Result<()> {
    if args.rest.len() != operands {
        let wanted = ["PREFIX", "PREFIX KEY", "PREFIX KEY VALUE"][operands];
        return Err(Error::new(kuradb::ErrorKind::InvalidArgument, format!("{name} takes {wanted}")));
    }
    let op = match args.rest.as_slice() {
        [key, value] => UpdateOp::Set { key: key.clone().into_bytes(), value: value.clone().into_bytes() },
        [key] => UpdateOp::Remove { key: key.clone().into_bytes() },
        _ => UpdateOp::Clear,
    };
    let timestamp = match &args.timestamp {
        Some(expr) => parse_timestamp(expr, now_ms())?,
        None => now_ms(),
    };
    let entry = UpdateEntry { server_id: args.server_id, dbm_index: args.dbm_index, op };
    let queue = MessageQueue::open(&args.prefix, args.max_file_size)?;
    queue.write(Some(timestamp), &entry.encode())?;
    queue.synchronize(Durability::Soft)
}

fn read(args: &ReadArgs) -> Result<()> {
    let min = parse_timestamp(&args.timestamp, now_ms())?;
    if find_files(&args.prefix)?.is_empty() {
        return Err(no_files(&args.prefix));
    }
    let filter = ApplyFilter { min_timestamp: min, server_id: args.server_id, dbm_index: args.dbm_index };
    let mut reader = MessageQueueReader::new(&args.prefix, min);
    let mut out = crate::out::stdout();
    let mut count = 0;
    while count < args.items {
        let Some((timestamp, message)) = reader.read(std::time::Duration::ZERO)? else { break };
        let entry = UpdateEntry::decode(&message)?;
        if !filter.admits(&entry) {
            continue;
        }
        let mut line = format!("{timestamp}\t{}\t{}\t", entry.server_id, entry.dbm_index).into_bytes();
        match &entry.op {
            UpdateOp::Set { key, value } => {
                line.extend_from_slice(b"SET\t");
                show(&mut line, key, args.escape, false);
                line.push(b'\t');
                show(&mut line, value, args.escape, true);
            }
            UpdateOp::Remove { key } => {
                line.extend_from_slice(b"REMOVE\t");
                show(&mut line, key, args.escape, false);
            }
            UpdateOp::Clear => line.extend_from_slice(b"CLEAR"),
            UpdateOp::Unit { id, part, parts, changes } => {
                // A header line, then each change on a line of its own as
                // a set or a remove entry prints.
                let head = line.clone();
                line.extend_from_slice(
                    format!("UNIT\t{id}\t{}/{parts}\t{}", part + 1, changes.len()).as_bytes(),
                );
                for (key, value) in changes {
                    line.push(b'\n');
                    line.extend_from_slice(&head);
                    match value {
                        Some(value) => {
                            line.extend_from_slice(b"SET\t");
                            show(&mut line, key, args.escape, false);
                            line.push(b'\t');
                            show(&mut line, value, args.escape, true);
                        }
                        None => {
                            line.extend_from_slice(b"REMOVE\t");
                            show(&mut line, key, args.escape, false);
                        }
                    }
                }
            }
        }
        line.push(b'\n');
        out.write_all(&line).map_err(crate::out::write_failed)?;
        count += 1;
    }
    out.flush().map_err(crate::out::write_failed)
}

fn list(args: &ListArgs) -> Result<()> {
    let now = now_ms();
    let min = parse_timestamp(&args.timestamp, now)?;
    let mut out = crate::out::stdout();
    for (_, path) in find_files(&args.prefix)? {
        let meta = read_file_meta(&path)?;
        if meta.timestamp < min {
            continue;
        }
        let line = format!(
            "{}\t{}\t{}\t{}\t{}\n",
            path.display(),
            meta.file_id,
            meta.timestamp,
            age(meta.timestamp, now),
            meta.file_size
        );
        out.write_all(line.as_bytes()).map_err(crate::out::write_failed)?;
    }
    out.flush().map_err(crate::out::write_failed)
}

fn remove(args: &RemoveArgs) -> Result<()> {
    let threshold = parse_timestamp(&args.timestamp, now_ms())?;
    let newest = if args.exclude_latest { NewestFile::Keep } else { NewestFile::Include };
    remove_old_files(&args.prefix, threshold, newest)?;
    Ok(())
}

fn apply(args: &ApplyArgs) -> Result<()> {
    let min = parse_timestamp(&args.timestamp, now_ms())?;
    if find_files(&args.prefix)?.is_empty() {
        return Err(no_files(&args.prefix));
    }
    let params = Params::parse(&args.params)?;
    let db = PolyDbm::open(&args.db_file, Access::ReadWrite, &params)?;
    let filter = ApplyFilter { min_timestamp: min, server_id: args.server_id, dbm_index: args.dbm_index };
    // A log holds values as stored (with their expiry tags, where any).
    let applied = crate::util::ulog_transfer::refuse_expiry_mismatch(db.stored(), &args.prefix, min)
        .and_then(|()| apply_update_logs(db.stored(), &args.prefix, &filter));
    let closed = db.close();
    let report = applied?;
    closed?;
    let last = report.last_timestamp.map_or_else(|| "none".to_string(), |t| t.to_string());
    crate::out::print_line(format_args!(
        "{} entries applied, {} of other servers or databases skipped; last timestamp {last}",
        report.applied, report.skipped
    ))
}

fn no_files(prefix: &Path) -> Error {
    Error::new(kuradb::ErrorKind::NotFound, format!("no update log files {}.0000000000, …", prefix.display()))
}

/// How long ago `timestamp` was, as the reference's listfiles says it.
fn age(timestamp: u64, now: u64) -> String {
    // Whole seconds, as the reference counts them.
    let then = (timestamp / 1000) as f64;
    let now = now as f64 / 1000.0;
    if then > now {
        return "future".to_string();
    }
    let diff = now - then;
    match diff {
        d if d > 86400.0 => format!("{:.1} days", d / 86400.0),
        d if d > 3600.0 => format!("{:.1} hours", d / 3600.0),
        d if d > 60.0 => format!("{:.1} minutes", d / 60.0),
        d => format!("{d:.1} seconds"),
    }
}

/// Appends `data` as the reference's read prints it: C-escaped with
/// `escape`, else with control characters (and tabs, unless `keep_tab`)
/// made spaces.
fn show(out: &mut Vec<u8>, data: &[u8], escape: bool, keep_tab: bool) {
    if !escape {
        out.extend(data.iter().map(|&c| {
            if (c < b' ' && !(keep_tab && c == b'\t')) || c == 0x7f {
                b' '
            } else {
                c
            }
        }));
        return;
    }
    crate::util::escape::escape_c(data, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_print_as_the_reference_prints_them() {
        let shown = |data: &[u8], escape, keep_tab| {
            let mut out = Vec::new();
            show(&mut out, data, escape, keep_tab);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(shown(b"a\tb\\c\n", false, true), "a\tb\\c ");
        assert_eq!(shown(b"a\tb", false, false), "a b");
        assert_eq!(shown(b"a\tb\\c\n\x7f", true, false), "a\\tb\\\\c\\n\\x7f");
        assert_eq!(shown(b"\x001\x00z\x00", true, false), "\\x001\\0z\\0");
        assert_eq!(age(5_000, 70_000), "1.1 minutes");
        assert_eq!(age(80_000, 70_000), "future");
    }
}
