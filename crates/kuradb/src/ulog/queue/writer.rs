//! The writer of a queue: appends records to the last file and starts a new
//! file once the last one has reached the size limit.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::files::{file_path, find_files, read_file_meta};
use super::format::{encode_meta, finish_record, record_buffer, MAX_TIMESTAMP, META_SIZE, RECORD_HEADER};
use super::reader::MessageQueueReader;
use super::scan::{read_next, Next};
use crate::dbm::Durability;
use crate::error::{Error, ErrorKind, Result};

/// How a writer tells the readers of its process that it wrote: a counter of
/// writes and a condition variable.
#[derive(Default)]
pub(crate) struct Notifier {
    pub(crate) writes: Mutex<u64>,
    pub(crate) cond: Condvar,
}

/// A message queue in files `PREFIX.0000000000`, `PREFIX.0000000001`, …,
/// in the reference's format (see `format.rs`), so that its tools read
/// kuradb's files and kuradb reads theirs. One writer per prefix; readers
/// ([`MessageQueueReader`]) in this process or others.
///
/// ```
/// use kuradb::ulog::MessageQueue;
/// use std::time::Duration;
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let queue = MessageQueue::open(dir.path().join("log"), 1 << 20)?;
/// queue.write(Some(1000), b"hello")?;
/// let mut reader = queue.reader(0);
/// assert_eq!(reader.read(Duration::ZERO)?, Some((1000, b"hello".to_vec())));
/// assert_eq!(reader.read(Duration::from_millis(10))?, None);
/// # Ok(())
/// # }
/// ```
pub struct MessageQueue {
    prefix: PathBuf,
    max_file_size: u64,
    state: Mutex<Tail>,
    notifier: Arc<Notifier>,
}

/// The last file, which every write appends to.
struct Tail {
    file: File,
    path: PathBuf,
    file_id: u64,
    size: u64,
    /// The latest timestamp written: records never go back in time.
    timestamp: u64,
    cyclic: u8,
    /// Why writing stopped, after a failed write that could not be undone.
    broken: Option<String>,
}

impl MessageQueue {
    /// Opens the queue at `prefix` for writing, creating its first file if
    /// it has none. A new file is started once the last reaches
    /// `max_file_size` bytes. The last file is checked: a record cut short by
    /// a crash at its end is cut off; a damaged record is an error.
    pub fn open(prefix: impl AsRef<Path>, max_file_size: u64) -> Result<MessageQueue> {
        let prefix = prefix.as_ref().to_path_buf();
        let tail = match find_files(&prefix)?.pop() {
            None => Tail::create(&prefix, 0, 0)?,
            Some((id, path)) => Tail::reopen(id, path)?,
        };
        Ok(MessageQueue { prefix, max_file_size, state: Mutex::new(tail), notifier: Arc::default() })
    }

    /// The prefix of the queue's files.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// The latest timestamp written.
    pub fn timestamp(&self) -> u64 {
        self.state.lock().timestamp
    }

    /// Appends `message` with `timestamp` in milliseconds (now if `None`; a
    /// timestamp earlier than the last one written is raised to it, so the
    /// file stays in time order). Returns the timestamp recorded.
    pub fn write(&self, timestamp: Option<u64>, message: &[u8]) -> Result<u64> {
        let mut record = record_buffer(message.len());
        record.extend_from_slice(message);
        self.write_record(timestamp, record)
    }

    /// [`MessageQueue::write`] of a [`record_buffer`] the caller has put the
    /// message into, which saves a copy of it.
    pub(crate) fn write_record(&self, timestamp: Option<u64>, mut record: Vec<u8>) -> Result<u64> {
        let timestamp = timestamp.unwrap_or_else(super::super::now_ms);
        if timestamp > MAX_TIMESTAMP {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("timestamp {timestamp} does not fit in the 6 bytes of a queue record"),
            ));
        }
        if record.len() - RECORD_HEADER >= u32::MAX as usize {
            return Err(Error::new(ErrorKind::InvalidArgument, "a queue message must be under 4 GiB"));
        }
        let written = {
            let mut tail = self.state.lock();
            if let Some(why) = &tail.broken {
                return Err(Error::new(ErrorKind::Infeasible, why.clone()));
            }
            if tail.size >= self.max_file_size {
                let next = Tail::create(&self.prefix, tail.file_id + 1, tail.timestamp)?;
                tail.save_meta(false)?;
                *tail = next;
            }
            tail.append(timestamp, &mut record)?
        };
        *self.notifier.writes.lock() += 1;
        self.notifier.cond.notify_all();
        Ok(written)
    }

    /// Saves the last file's metadata (which the reference's readers check
    /// against the file's size) and, if `hard`, makes the file durable.
    pub fn synchronize(&self, durability: Durability) -> Result<()> {
        self.state.lock().save_meta(durability.is_hard())
    }

    /// A reader of this queue from `min_timestamp` on, woken by this
    /// writer's writes.
    pub fn reader(&self, min_timestamp: u64) -> MessageQueueReader {
        MessageQueueReader::attached(&self.prefix, min_timestamp, self.notifier.clone())
    }
}

impl Drop for MessageQueue {
    fn drop(&mut self) {
        let _ = self.state.get_mut().save_meta(false);
    }
}

impl Tail {
    /// Creates file `file_id` with its metadata.
    fn create(prefix: &Path, file_id: u64, timestamp: u64) -> Result<Tail> {
        let path = file_path(prefix, file_id);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io("creating the update log", &path, e))?;
        let mut tail = Tail { file, path, file_id, size: META_SIZE, timestamp, cyclic: 0, broken: None };
        tail.save_meta(false)?;
        Ok(tail)
    }

    /// Opens the existing last file, cutting off a torn record at its end.
    fn reopen(file_id: u64, path: PathBuf) -> Result<Tail> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("opening the update log", &path, e))?;
        let len = file.metadata().map_err(|e| Error::io("reading the size", &path, e))?.len();
        if len < META_SIZE {
            // Created, then cut by a crash before its metadata was whole.
            drop(file);
            return Tail::recreate(file_id, path);
        }
        let meta = read_file_meta(&path)?;
        if meta.file_id != file_id {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!("{} says it is file {} of its queue, not {file_id}", path.display(), meta.file_id),
            ));
        }
        let mut timestamp = meta.timestamp;
        let mut end = META_SIZE;
        loop {
            match read_next(&file, &path, end, len)? {
                Next::Record { timestamp: t, end: e, .. } => (timestamp, end) = (timestamp.max(t), e),
                Next::End | Next::Partial => break,
                Next::Broken(why) => {
                    return Err(Error::new(ErrorKind::BrokenData, format!("{}: {why}", path.display())))
                }
            }
        }
        if end < len {
            file.set_len(end).map_err(|e| Error::io("cutting the torn end", &path, e))?;
        }
        let mut tail = Tail { file, path, file_id, size: end, timestamp, cyclic: 0, broken: None };
        tail.save_meta(false)?;
        Ok(tail)
    }

    /// Writes the metadata of a file at `path` cut inside it anew.
    fn recreate(file_id: u64, path: PathBuf) -> Result<Tail> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("opening the update log", &path, e))?;
        let mut tail = Tail { file, path, file_id, size: META_SIZE, timestamp: 0, cyclic: 0, broken: None };
        tail.save_meta(false)?;
        Ok(tail)
    }

    /// Appends `record` (a [`record_buffer`] holding its message) with one
    /// positional write (`pwrite`), so that a crash leaves the record whole,
    /// absent, or cut short at the end of the file, which readers take for
    /// not yet written and the next writer's open cuts off.
    fn append(&mut self, timestamp: u64, record: &mut Vec<u8>) -> Result<u64> {
        self.timestamp = self.timestamp.max(timestamp);
        finish_record(record, self.timestamp);
        if let Err(e) = crate::sys::write_at(&self.file, record, self.size) {
            // A part of the record may be in the file: cut it off, or stop
            // writing, since a reader would take the next record for damage.
            if self.file.set_len(self.size).is_err() {
                self.broken = Some(format!(
                    "{} holds a record cut short by a failed write and could not be cut back; \
                     reopen the queue",
                    self.path.display()
                ));
            }
            return Err(Error::io("writing to the update log", &self.path, e));
        }
        self.size += record.len() as u64;
        Ok(self.timestamp)
    }

    fn save_meta(&mut self, hard: bool) -> Result<()> {
        self.cyclic = self.cyclic % 255 + 1;
        let meta = encode_meta(self.cyclic, self.file_id, self.timestamp, self.size);
        let path = &self.path;
        crate::sys::write_at(&self.file, &meta, 0)
            .map_err(|e| Error::io("writing the metadata of the update log", path, e))?;
        if hard {
            self.file.sync_data().map_err(|e| Error::io("synchronizing the update log", path, e))?;
        }
        Ok(())
    }
}
