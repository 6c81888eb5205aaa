//! Update logs: every change to a database, written somewhere as it is made.
//!
//! An [`UpdateLogger`] is told each change (a set with the value it set, a
//! remove, a clear). [`LoggedDbm`] wraps any database and tells its logger
//! every change made through it, under the changed record's lock, before the
//! change is made: see [`LoggedDbm`] for the order and what a crash leaves.
//! [`PolyDbm`](crate::PolyDbm) wraps the database it opens (each shard of a
//! [`ShardDbm`](crate::ShardDbm), with the shard's index) when given
//! `ulog_prefix`.
//!
//! Loggers: [`DbmUpdateLogger`] makes each change to another database too (a
//! live mirror); [`MqUpdateLogger`] writes entries into a [`MessageQueue`],
//! files `PREFIX.0000000000`, … in the reference's format, with a
//! millisecond timestamp, a server id and a database index, which the
//! reference's `tkrzw_ulog_util` reads. [`apply_update_logs`] replays such
//! files into a database: how a replica catches up and a backup is rolled
//! forward.
//!
//! A commit of a [`TransactionalDbm`](crate::dbm::txn::TransactionalDbm)
//! reaches the logger whole ([`UpdateLogger::write_batch`], from
//! [`Dbm::apply_changes`](crate::dbm::Dbm::apply_changes)), and the queue
//! logger writes it as one unit entry ([`UpdateOp::Unit`], kuradb's own);
//! applying makes a unit whole or not at all, gathering the parts of one a
//! shard set split ([`UnitAssembler`]). docs/update-logs.md tells the whole
//! story.

mod apply;
mod dbm_logger;
mod entry;
mod logged;
mod logged_cursor;
mod mq_logger;
pub(crate) mod params;
mod queue;
mod timestamp;

pub use apply::{apply_entries, apply_entry, apply_update_logs, ApplyFilter, ApplyReport, UnitAssembler};
pub use dbm_logger::DbmUpdateLogger;
pub use entry::{UpdateEntry, UpdateOp};
pub use logged::LoggedDbm;
pub use mq_logger::MqUpdateLogger;
pub use params::DEFAULT_MAX_FILE_SIZE;
pub use queue::{
    file_path, find_files, read_file_meta, remove_old_files, FileMeta, MessageQueue, MessageQueueReader,
    NewestFile,
};
pub use timestamp::{now_ms, parse_timestamp};

use crate::dbm::{Durability, FinalChange, UnitPart};
use crate::error::Result;

/// Where a database's changes are written as they are made.
///
/// Each method is called before the change it reports is made, under the
/// lock of the record it changes (all of them for a clear), so the calls for
/// one key come in the order of its changes. An error fails the change,
/// which is then not made. The methods may be called from several threads
/// at once.
pub trait UpdateLogger: Send + Sync {
    /// `key` is being set to `value` (the final value: for an append or an
    /// increment, what the record holds after it).
    fn write_set(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// `key` is being removed.
    fn write_remove(&self, key: &[u8]) -> Result<()>;
    /// Every record is being removed.
    fn write_clear(&self) -> Result<()>;
    /// `changes` are being made as one unit (a commit of two changes or
    /// more, or a shard's part of one spanning shards: see [`UnitPart`]),
    /// under the locks of all their keys. The default tells each change
    /// alone, in order, as the logger's `write_set` and `write_remove`;
    /// [`MqUpdateLogger`] writes one entry, so that a reader applies the
    /// unit whole or not at all.
    fn write_batch(&self, changes: &[FinalChange<'_>], part: UnitPart) -> Result<()> {
        let _ = part;
        for change in changes {
            match change {
                FinalChange::Set(key, value) => self.write_set(key, value)?,
                FinalChange::Remove(key) => self.write_remove(key)?,
            }
        }
        Ok(())
    }
    /// Makes what was written reach the OS, or with `hard` the device.
    fn synchronize(&self, durability: Durability) -> Result<()>;
}
