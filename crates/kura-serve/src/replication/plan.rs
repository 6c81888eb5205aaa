//! A master's answer to a replica's position: go on from it, or resync
//! fully because the log can no longer bring the replica up to date.

use std::time::Duration;

use kuradb::ulog::{find_files, MessageQueue, MessageQueueReader};
use kuradb::Result;

/// How far before the log's newest entry a snapshot's log begins. An
/// entry is written to the log just before its change is made: replaying
/// the log from a moment safely before the snapshot began covers every
/// change the snapshot might have read too early (replaying an entry the
/// snapshot already holds changes nothing).
pub const SNAPSHOT_MARGIN_MS: u64 = 1000;

/// Where a feed starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// The log from `timestamp`, the first `skip` entries of that timestamp left out.
    Continue {
        /// The replica's timestamp.
        timestamp: u64,
        /// Entries of that timestamp it has.
        skip: u64,
    },
    /// A snapshot of the database, then the log from `timestamp`.
    Full {
        /// Where the log after the snapshot starts.
        timestamp: u64,
        /// Why (for the logs of both sides).
        reason: String,
    },
}

/// The start for a replica at `position` (`None`: it has nothing) in `queue`.
pub fn start(queue: &MessageQueue, position: Option<(u64, u64)>) -> Result<Start> {
    let full = |reason: String| {
        Ok(Start::Full { timestamp: queue.timestamp().saturating_sub(SNAPSHOT_MARGIN_MS), reason })
    };
    let Some((timestamp, skip)) = position else {
        return full("the replica asked for one".into());
    };
    let newest = queue.timestamp();
    if timestamp > newest {
        return full(format!(
            "the replica is at {timestamp}, after this log's newest entry ({newest}): it followed another log"
        ));
    }
    let files = find_files(queue.prefix())?;
    if files.first().is_none_or(|(id, _)| *id == 0) {
        // No file was ever removed: the log holds every entry.
        return Ok(Start::Continue { timestamp, skip });
    }
    // Files were removed. Entries of the replica's timestamp may have been in
    // them (its skip count would be off), and entries after it too unless the
    // oldest file left starts after it.
    match MessageQueueReader::new(queue.prefix(), 0).read(Duration::ZERO)? {
        Some((first, _)) if timestamp > first => Ok(Start::Continue { timestamp, skip }),
        Some((first, _)) => full(format!(
            "the log no longer has the entries after {timestamp} (old files removed; the oldest left starts at {first})"
        )),
        None => full(format!("the log no longer has the entries after {timestamp} (old files removed)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::ulog::remove_old_files;
    use kuradb::ulog::NewestFile;

    #[test]
    fn a_replica_goes_on_unless_its_entries_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let queue = MessageQueue::open(dir.path().join("db0"), 100).unwrap();
        assert!(matches!(start(&queue, None).unwrap(), Start::Full { .. }));
        for t in 1..=30 {
            queue.write(Some(t * 10), &[7; 40]).unwrap();
        }
        assert_eq!(start(&queue, Some((50, 1))).unwrap(), Start::Continue { timestamp: 50, skip: 1 });
        assert!(matches!(start(&queue, Some((301, 0))).unwrap(), Start::Full { .. }), "ahead of the log");
        remove_old_files(queue.prefix(), 150, NewestFile::Keep).unwrap();
        let Start::Full { reason, .. } = start(&queue, Some((50, 1))).unwrap() else {
            panic!("gap not seen")
        };
        assert!(reason.contains("no longer has"), "{reason}");
        assert!(matches!(start(&queue, Some((290, 1))).unwrap(), Start::Continue { .. }));
    }
}
