//! The logger into a message queue, in the reference's entry format.

use std::sync::Arc;

use super::entry::{encode_into, encode_unit_into, OpRef};
use super::queue::{record_buffer, MessageQueue};
use super::UpdateLogger;
use crate::dbm::{Durability, FinalChange, UnitPart};
use crate::error::Result;

/// Writes each change as an entry (see [`UpdateEntry`](super::UpdateEntry))
/// into a [`MessageQueue`], timestamped now, with a server id and a
/// database index. Several loggers may share one queue (a shard set's
/// shards, each with its own index).
///
/// ```
/// use std::sync::Arc;
/// use kuradb::dbm::Dbm;
/// use kuradb::ulog::{LoggedDbm, MessageQueue, MessageQueueReader, MqUpdateLogger, UpdateEntry, UpdateOp};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let queue = Arc::new(MessageQueue::open(dir.path().join("ulog"), 1 << 30)?);
/// let db = LoggedDbm::new(kuradb::TinyDbm::new(&Default::default()), Arc::new(MqUpdateLogger::new(queue, 1, 0)));
/// db.increment(b"hits", 5, 0)?;
/// let (_, message) = MessageQueueReader::new(dir.path().join("ulog"), 0).read(Default::default())?.unwrap();
/// let entry = UpdateEntry::decode(&message)?;
/// assert_eq!(entry.op, UpdateOp::Set { key: b"hits".to_vec(), value: 5i64.to_be_bytes().to_vec() });
/// # Ok(())
/// # }
/// ```
pub struct MqUpdateLogger {
    queue: Arc<MessageQueue>,
    server_id: u32,
    dbm_index: u32,
}

impl MqUpdateLogger {
    /// A logger into `queue` that marks its entries with `server_id` and `dbm_index`.
    pub fn new(queue: Arc<MessageQueue>, server_id: u32, dbm_index: u32) -> MqUpdateLogger {
        MqUpdateLogger { queue, server_id, dbm_index }
    }

    /// The queue written to.
    pub fn queue(&self) -> &Arc<MessageQueue> {
        &self.queue
    }

    fn write(&self, op: OpRef<'_>) -> Result<()> {
        // The entry goes straight into the record's buffer: no copy of the value.
        let mut record = record_buffer(16 + op_len(&op));
        encode_into(&mut record, self.server_id, self.dbm_index, &op);
        self.queue.write_record(None, record).map(|_| ())
    }
}

fn op_len(op: &OpRef<'_>) -> usize {
    match op {
        OpRef::Set(key, value) => key.len() + value.len(),
        OpRef::Remove(key) => key.len(),
        OpRef::Clear => 0,
    }
}

impl UpdateLogger for MqUpdateLogger {
    fn write_set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(OpRef::Set(key, value))
    }
    fn write_remove(&self, key: &[u8]) -> Result<()> {
        self.write(OpRef::Remove(key))
    }
    fn write_clear(&self) -> Result<()> {
        self.write(OpRef::Clear)
    }
    /// One unit entry (kuradb's own, which the reference cannot read).
    fn write_batch(&self, changes: &[FinalChange<'_>], part: UnitPart) -> Result<()> {
        let size: usize = changes.iter().map(|c| 24 + c.key().len() + c.value().map_or(0, <[u8]>::len)).sum();
        let mut record = record_buffer(48 + size);
        encode_unit_into(&mut record, self.server_id, self.dbm_index, part, changes);
        self.queue.write_record(None, record).map(|_| ())
    }
    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.queue.synchronize(durability)
    }
}
