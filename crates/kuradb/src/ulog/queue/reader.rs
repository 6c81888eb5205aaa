//! The reader of a queue: the records from a timestamp on, in file order,
//! waiting for new ones if asked.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::files::{file_path, find_files, read_file_meta};
use super::format::META_SIZE;
use super::scan::{read_next, Next};
use super::writer::Notifier;
use crate::error::{Error, ErrorKind, Result};

/// How often a reader looks at the files again while it waits for a writer
/// of another process, which cannot wake it.
const POLL: Duration = Duration::from_millis(20);
/// The same for a reader its own process's writer wakes; it still looks now
/// and then, for a writer of another process.
const POLL_WOKEN: Duration = Duration::from_millis(100);

/// Reads the records of a queue whose timestamp is at least a minimum, in
/// the order they were written, from the files of a prefix; a record being
/// written is read once whole. Made by [`MessageQueue::reader`](super::MessageQueue::reader)
/// (woken by that writer) or [`MessageQueueReader::new`] (for files another
/// process writes, which it looks at every 20 ms while it waits).
pub struct MessageQueueReader {
    prefix: PathBuf,
    min_timestamp: u64,
    notifier: Option<Arc<Notifier>>,
    at: Option<Position>,
    /// The file to go on with once the current one is done.
    next_id: Option<u64>,
}

struct Position {
    file: File,
    path: PathBuf,
    file_id: u64,
    offset: u64,
}

impl MessageQueueReader {
    /// A reader of the files at `prefix` from `min_timestamp` (milliseconds) on.
    pub fn new(prefix: impl AsRef<Path>, min_timestamp: u64) -> MessageQueueReader {
        MessageQueueReader {
            prefix: prefix.as_ref().to_path_buf(),
            min_timestamp,
            notifier: None,
            at: None,
            next_id: None,
        }
    }

    pub(crate) fn attached(prefix: &Path, min_timestamp: u64, notifier: Arc<Notifier>) -> MessageQueueReader {
        MessageQueueReader { notifier: Some(notifier), ..MessageQueueReader::new(prefix, min_timestamp) }
    }

    /// The next record, as its timestamp and message: at once if one is
    /// there, else as soon as one is written within `wait`, else `None`. A
    /// damaged record is a [`ErrorKind::BrokenData`] error naming the file
    /// and offset.
    pub fn read(&mut self, wait: Duration) -> Result<Option<(u64, Vec<u8>)>> {
        let deadline = Instant::now().checked_add(wait);
        loop {
            let seen = self.notifier.as_ref().map(|n| *n.writes.lock());
            if let Some(record) = self.read_available()? {
                return Ok(Some(record));
            }
            let now = Instant::now();
            let left = match deadline {
                Some(deadline) if deadline <= now => return Ok(None),
                Some(deadline) => deadline - now,
                None => Duration::MAX,
            };
            match (&self.notifier, seen) {
                (Some(notifier), Some(seen)) => {
                    let mut writes = notifier.writes.lock();
                    if *writes == seen {
                        notifier.cond.wait_for(&mut writes, left.min(POLL_WOKEN));
                    }
                }
                _ => std::thread::sleep(left.min(POLL)),
            }
        }
    }

    /// The next record already written, if any.
    fn read_available(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        loop {
            if self.at.is_none() && !self.start()? {
                return Ok(None);
            }
            let Some(at) = self.at.as_mut() else { return Ok(None) };
            // Looked at before the file is read: a writer starts the next
            // file only after the last record of this one is whole.
            let later = file_path(&self.prefix, at.file_id + 1).exists();
            let len = at.file.metadata().map_err(|e| Error::io("reading the size", &at.path, e))?.len();
            match read_next(&at.file, &at.path, at.offset, len)? {
                Next::Record { timestamp, message, end } => {
                    at.offset = end;
                    if timestamp >= self.min_timestamp {
                        return Ok(Some((timestamp, message)));
                    }
                }
                Next::End | Next::Partial if !later => return Ok(None),
                Next::End => {
                    self.next_id = Some(at.file_id + 1);
                    self.at = None;
                }
                Next::Partial => {
                    return Err(Error::new(
                        ErrorKind::BrokenData,
                        format!("{}: the record at offset {} is cut short", at.path.display(), at.offset),
                    ))
                }
                Next::Broken(why) => {
                    return Err(Error::new(ErrorKind::BrokenData, format!("{}: {why}", at.path.display())))
                }
            }
        }
    }

    /// Opens the file to read next: the one after the last read, or at
    /// first the earliest whose latest timestamp reaches the minimum (the
    /// last file if none does). Answers false if there is none yet.
    fn start(&mut self) -> Result<bool> {
        let files = find_files(&self.prefix)?;
        let file_id = match self.next_id {
            // Files removed meanwhile (old ones pruned): go on with the first left.
            Some(id) => match files.iter().find(|(f, _)| *f >= id) {
                Some((f, _)) => *f,
                None => return Ok(false),
            },
            None => {
                let mut chosen = None;
                for (id, path) in &files {
                    if read_file_meta(path)?.timestamp >= self.min_timestamp {
                        chosen = Some(*id);
                        break;
                    }
                }
                match chosen.or(files.last().map(|(id, _)| *id)) {
                    Some(id) => id,
                    None => return Ok(false),
                }
            }
        };
        let path = file_path(&self.prefix, file_id);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io("opening the update log", &path, e)),
        };
        self.next_id = Some(file_id);
        self.at = Some(Position { file, path, file_id, offset: META_SIZE });
        Ok(true)
    }
}
