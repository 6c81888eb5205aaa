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
//! forward. docs/update-logs.md tells the whole story.

mod apply;
mod dbm_logger;
mod entry;
mod logged;
mod logged_cursor;
mod mq_logger;
pub(crate) mod params;
mod queue;
mod timestamp;

pub use apply::{apply_entry, apply_update_logs, ApplyFilter, ApplyReport};
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

use crate::dbm::Durability;
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
    /// Makes what was written reach the OS, or with `hard` the device.
    fn synchronize(&self, durability: Durability) -> Result<()>;
}
