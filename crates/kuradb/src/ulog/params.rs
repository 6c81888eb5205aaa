//! The update-log parameters of [`PolyDbm`](crate::PolyDbm) and
//! [`ShardDbm`](crate::ShardDbm): `ulog_prefix`, `ulog_max_file_size`,
//! `ulog_server_id`, `ulog_dbm_index`.

use std::path::PathBuf;
use std::sync::Arc;

use super::mq_logger::MqUpdateLogger;
use super::queue::MessageQueue;
use crate::dbm::params::{bad_value, Params};
use crate::error::{Error, ErrorKind, Result};

const NAMES: [&str; 4] = ["ulog_prefix", "ulog_max_file_size", "ulog_server_id", "ulog_dbm_index"];

/// The default size at which a log file is closed and the next begun, as
/// the reference's.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1 << 30;

/// Where and how a database logs its changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UlogParams {
    pub(crate) prefix: PathBuf,
    pub(crate) max_file_size: u64,
    pub(crate) server_id: u32,
    /// The index of the database; a shard set's shard `i` logs `dbm_index + i`.
    pub(crate) dbm_index: u32,
}

impl UlogParams {
    /// Takes the update-log parameters out of `params`: the rest, and what
    /// they say if `ulog_prefix` is given. The others without it are refused.
    pub(crate) fn take(params: &Params) -> Result<(Params, Option<UlogParams>)> {
        let mut rest = params.clone();
        for name in NAMES {
            rest = rest.without(name);
        }
        let Some(prefix) = params.get("ulog_prefix").filter(|p| !p.is_empty()) else {
            if let Some(name) = NAMES[1..].iter().find(|n| params.get(n).is_some()) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("parameter {name} needs ulog_prefix, the update log's file prefix"),
                ));
            }
            return Ok((rest, None));
        };
        let number = |name: &str, default: u64, max: u64| -> Result<u64> {
            match params.get(name) {
                None => Ok(default),
                Some(text) => match text.trim().parse::<u64>() {
                    Ok(n) if n <= max => Ok(n),
                    _ => Err(bad_value(name, text, &format!("a number from 0 to {max}"))),
                },
            }
        };
        let ulog = UlogParams {
            prefix: PathBuf::from(prefix),
            max_file_size: number("ulog_max_file_size", DEFAULT_MAX_FILE_SIZE, u64::MAX)?,
            server_id: number("ulog_server_id", 0, u32::MAX.into())? as u32,
            dbm_index: number("ulog_dbm_index", 0, u32::MAX.into())? as u32,
        };
        Ok((rest, Some(ulog)))
    }

    /// Opens the queue for writing.
    pub(crate) fn open_queue(&self) -> Result<Arc<MessageQueue>> {
        Ok(Arc::new(MessageQueue::open(&self.prefix, self.max_file_size)?))
    }

    /// A logger into `queue` for the database `offset` after the first.
    pub(crate) fn logger(&self, queue: &Arc<MessageQueue>, offset: u32) -> Arc<MqUpdateLogger> {
        Arc::new(MqUpdateLogger::new(queue.clone(), self.server_id, self.dbm_index.wrapping_add(offset)))
    }
}
