//! Replaying update logs into a database.

use std::path::Path;
use std::time::Duration;

use super::entry::{UpdateEntry, UpdateOp};
use super::queue::MessageQueueReader;
use crate::dbm::Dbm;
use crate::error::{Error, Result};

/// Which entries [`apply_update_logs`] replays.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyFilter {
    /// Entries written before this time (milliseconds) are skipped.
    pub min_timestamp: u64,
    /// Only the entries of this server, if given.
    pub server_id: Option<u32>,
    /// Only the entries of this database index, if given.
    pub dbm_index: Option<u32>,
}

impl ApplyFilter {
    /// Whether `entry` passes.
    pub fn admits(&self, entry: &UpdateEntry) -> bool {
        self.server_id.is_none_or(|s| s == entry.server_id)
            && self.dbm_index.is_none_or(|d| d == entry.dbm_index)
    }
}

/// What [`apply_update_logs`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Entries replayed.
    pub applied: u64,
    /// Entries read but left out by the filter's server id or index.
    pub skipped: u64,
    /// The timestamp of the last entry read, from which a later call may go on.
    pub last_timestamp: Option<u64>,
}

/// Replays into `dbm` every entry of the update log files at `prefix` that
/// `filter` admits, in the order written: a set sets (overwriting), a
/// remove removes (an absent key is no error), a clear clears. Applying the
/// same files twice leaves the database as applying them once does: each
/// key ends as its last entry says, whatever it held before. A damaged
/// entry stops the replay with an error naming its file and offset; what
/// was replayed before it stays.
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::ulog::{apply_update_logs, ApplyFilter, MessageQueue, UpdateEntry, UpdateOp};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let prefix = dir.path().join("ulog");
/// let queue = MessageQueue::open(&prefix, 1 << 30)?;
/// let set = UpdateEntry { server_id: 0, dbm_index: 0, op: UpdateOp::Set { key: b"k".to_vec(), value: b"v".to_vec() } };
/// queue.write(None, &set.encode())?;
/// let db = kuradb::TinyDbm::new(&Default::default());
/// let report = apply_update_logs(&db, &prefix, &ApplyFilter::default())?;
/// assert_eq!((report.applied, db.get(b"k")?), (1, Some(b"v".to_vec())));
/// # Ok(())
/// # }
/// ```
pub fn apply_update_logs(dbm: &dyn Dbm, prefix: &Path, filter: &ApplyFilter) -> Result<ApplyReport> {
    let mut reader = MessageQueueReader::new(prefix, filter.min_timestamp);
    let mut report = ApplyReport::default();
    while let Some((timestamp, message)) = reader.read(Duration::ZERO)? {
        report.last_timestamp = Some(timestamp);
        let entry = UpdateEntry::decode(&message)
            .map_err(|e| Error::new(e.kind(), format!("{} (the entry of time {timestamp})", e.message())))?;
        if !filter.admits(&entry) {
            report.skipped += 1;
            continue;
        }
        apply_entry(dbm, &entry.op)?;
        report.applied += 1;
    }
    Ok(report)
}

/// Makes the change of one entry to `dbm`.
pub fn apply_entry(dbm: &dyn Dbm, op: &UpdateOp) -> Result<()> {
    match op {
        UpdateOp::Set { key, value } => dbm.set(key, value),
        UpdateOp::Remove { key } => dbm.remove(key).map(|_| ()),
        UpdateOp::Clear => dbm.clear(),
    }
}
