//! `kura util export|import --ulog TIMESTAMP`: records to and from update
//! log files (`PREFIX.0000000000`, … in the reference's message-queue
//! format, which `kura ulog` and `tkrzw_ulog_util` read), as the reference's
//! `tkrzw_dbm_util` does: export writes a SET entry a record, all with the
//! timestamp given; import replays the entries of that timestamp or later.
//!
//! Both move values as stored: those of a database with expiry keep their
//! expiry tags, and the layer's record goes with them, so the database an
//! import makes or fills is one with expiry too.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use kuradb::dbm::expiry::EXPIRY_MARKER;
use kuradb::dbm::{Dbm, Durability};
use kuradb::ulog::{
    apply_update_logs, find_files, ApplyFilter, MessageQueue, MessageQueueReader, UpdateEntry, UpdateOp,
    DEFAULT_MAX_FILE_SIZE,
};
use kuradb::{Error, ErrorKind, Result};

use super::progress;

/// The `--ulog` flags of export and import.
#[derive(Args, Debug, Clone)]
pub struct UlogFlags {
    /// The record file is a set of update log files of this prefix:
    /// export writes every record as a SET entry of this timestamp
    /// (milliseconds); import replays every entry of this timestamp or later.
    #[arg(long = "ulog", value_name = "TIMESTAMP")]
    pub timestamp: Option<u64>,

    /// With --ulog, the server id and database index: export writes them
    /// into each entry (0 0 if not given); import replays only the entries
    /// of that server and index (every entry if not given).
    #[arg(long = "ulog_ids", value_names = ["SERVER_ID", "DBM_INDEX"], num_args = 2, requires = "timestamp")]
    pub ids: Option<Vec<u32>>,
}

impl UlogFlags {
    fn ids(&self) -> Option<(u32, u32)> {
        self.ids.as_ref().map(|ids| (ids[0], ids[1]))
    }
}

/// Fails if a flag that `--ulog` leaves without meaning was given too.
pub fn refuse_with_ulog(given: &[(&str, bool)]) -> Result<()> {
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{flag} does not apply to update log files (--ulog)"),
        )),
        None => Ok(()),
    }
}

/// Writes a SET entry for every record of `db` into the update log files
/// at `prefix`.
pub fn export(db: &dyn Dbm, prefix: &Path, flags: &UlogFlags) -> Result<()> {
    let timestamp = flags.timestamp.unwrap_or_default();
    let (server_id, dbm_index) = flags.ids().unwrap_or((0, 0));
    let queue = MessageQueue::open(prefix, DEFAULT_MAX_FILE_SIZE)?;
    let bar = progress::bar("exporting", Some(db.count()?), false);
    let mut cursor = db.iter()?;
    cursor.first()?;
    while let Some((key, value)) = cursor.get()? {
        let entry = UpdateEntry { server_id, dbm_index, op: UpdateOp::Set { key, value } };
        queue.write(Some(timestamp), &entry.encode())?;
        bar.inc(1);
        cursor.next()?;
    }
    bar.finish_and_clear();
    queue.synchronize(Durability::Soft)
}

/// Replays into `db` the entries of the update log files at `prefix` from
/// the timestamp on. Every entry is read and decoded first, so a damaged
/// file changes nothing.
pub fn import(db: &dyn Dbm, prefix: &Path, flags: &UlogFlags) -> Result<()> {
    if find_files(prefix)?.is_empty() {
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "no update log files {}.0000000000, … (--ulog reads them by their prefix)",
                prefix.display()
            ),
        ));
    }
    let (server_id, dbm_index) = flags.ids().unzip();
    let filter = ApplyFilter { min_timestamp: flags.timestamp.unwrap_or_default(), server_id, dbm_index };
    refuse_expiry_mismatch(db, prefix, filter.min_timestamp)?;
    apply_update_logs(db, prefix, &filter).map(|_| ())
}

/// Checks every entry of the log at `prefix` from `min_timestamp` on
/// decodes, and refuses a log of a database with expiry for `db` if it
/// holds records without expiry (the two kinds of value would be mixed).
pub(crate) fn refuse_expiry_mismatch(db: &dyn Dbm, prefix: &Path, min_timestamp: u64) -> Result<()> {
    let with_expiry = check(prefix, min_timestamp)?;
    if with_expiry && !db.contains(EXPIRY_MARKER)? && db.count()? > 0 {
        return Err(Error::new(
            ErrorKind::Infeasible,
            format!(
                "{} is the log of a database with expiry, and the database it would go into holds records \
                 without expiry: replay it into a new database or one with expiry",
                prefix.display()
            ),
        ));
    }
    Ok(())
}

/// Decodes every entry; answers whether the log is of a database with
/// expiry (it sets the layer's record).
fn check(prefix: &Path, min_timestamp: u64) -> Result<bool> {
    let mut reader = MessageQueueReader::new(prefix, min_timestamp);
    let mut with_expiry = false;
    while let Some((timestamp, message)) = reader.read(Duration::ZERO)? {
        let entry = UpdateEntry::decode(&message).map_err(|e| {
            Error::new(
                e.kind(),
                format!("{}: {} (the entry of time {timestamp})", prefix.display(), e.message()),
            )
        })?;
        with_expiry |= matches!(&entry.op, UpdateOp::Set { key, .. } if key == EXPIRY_MARKER);
    }
    Ok(with_expiry)
}
