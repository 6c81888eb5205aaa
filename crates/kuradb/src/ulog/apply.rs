//! Replaying update logs into a database.

use std::path::Path;
use std::time::Duration;

use super::entry::{UpdateEntry, UpdateOp};
use super::queue::MessageQueueReader;
use crate::dbm::{Dbm, FinalChange, UnitPart};
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
    /// The timestamp of the last entry read, from which a later call may
    /// go on; when the files end in a unit whose parts are not all there
    /// yet, the timestamp of its first part, so that the later call reads
    /// it again.
    pub last_timestamp: Option<u64>,
    /// Units of several parts not applied because a part is missing: the
    /// files end before their last part (a writer still writing it, or one
    /// that crashed), or another entry came in its place (a writer that
    /// crashed in the middle and went on after restarting).
    pub incomplete_units: u64,
}

/// Replays into `dbm` every entry of the update log files at `prefix` that
/// `filter` admits, in the order written: a set sets (overwriting), a
/// remove removes (an absent key is no error), a clear clears, and a unit
/// (a committed transaction) is made as one unit with
/// [`Dbm::apply_changes`]: a [`crate::dbm::txn::TransactionalDbm`] commits
/// it as a batch, whole or not at all even if the target crashes; another
/// database makes it in one [`Dbm::process_multi`], which no reader sees a
/// part of, but which a crash of a database that keeps changes made since
/// its last synchronization (the hash classes) may leave in part. The
/// parts of a unit a shard set split among its shards are gathered and
/// applied together once the last has been read ([`UnitAssembler`]), unless
/// `filter` names one database index, which takes its own parts alone. A
/// unit whose record the writer did not finish (torn at the end of the
/// last file), or whose later parts are missing, is not applied at all.
///
/// Applying the same files twice leaves the database as applying them once
/// does: each key ends as its last entry says, whatever it held before. A
/// damaged entry stops the replay with an error naming its file and
/// offset; what was replayed before it stays.
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
    let mut units = UnitAssembler::default();
    while let Some((timestamp, message)) = reader.read(Duration::ZERO)? {
        report.last_timestamp = Some(timestamp);
        let entry = UpdateEntry::decode(&message)
            .map_err(|e| Error::new(e.kind(), format!("{} (the entry of time {timestamp})", e.message())))?;
        if !filter.admits(&entry) {
            report.skipped += 1;
            continue;
        }
        let ready =
            if filter.dbm_index.is_some() { vec![(timestamp, entry)] } else { units.push(timestamp, entry) };
        if ready.is_empty() {
            continue;
        }
        apply_entries(dbm, &ready)?;
        report.applied += ready.len() as u64;
    }
    if let Some(first) = units.pending_since() {
        report.last_timestamp = Some(first);
        report.incomplete_units += 1;
    }
    report.incomplete_units += units.dropped();
    Ok(report)
}

/// Makes the change of one entry to `dbm`; a unit's changes as one unit
/// (see [`apply_update_logs`]). A part of a unit of several parts is made
/// alone: [`UnitAssembler`] gathers the parts to make together.
pub fn apply_entry(dbm: &dyn Dbm, op: &UpdateOp) -> Result<()> {
    match op {
        UpdateOp::Set { key, value } => dbm.set(key, value),
        UpdateOp::Remove { key } => dbm.remove(key).map(|_| ()),
        UpdateOp::Clear => dbm.clear(),
        UpdateOp::Unit { changes, .. } => apply_unit(dbm, changes.iter()),
    }
}

/// Makes entries [`UnitAssembler::push`] answered: one entry as
/// [`apply_entry`] does, the parts of a unit together as one unit.
pub fn apply_entries(dbm: &dyn Dbm, entries: &[(u64, UpdateEntry)]) -> Result<()> {
    match entries {
        [] => Ok(()),
        [(_, entry)] => apply_entry(dbm, &entry.op),
        parts => apply_unit(
            dbm,
            parts.iter().flat_map(|(_, entry)| match &entry.op {
                UpdateOp::Unit { changes, .. } => changes.as_slice(),
                _ => &[],
            }),
        ),
    }
}

fn apply_unit<'a>(
    dbm: &dyn Dbm,
    changes: impl Iterator<Item = &'a (Vec<u8>, Option<Vec<u8>>)>,
) -> Result<()> {
    let changes: Vec<FinalChange<'_>> = changes
        .map(|(key, value)| match value {
            Some(value) => FinalChange::Set(key, value),
            None => FinalChange::Remove(key),
        })
        .collect();
    dbm.apply_changes(&changes, UnitPart::WHOLE, &mut |_, _| {})
}

/// Gathers the parts of units that a shard set split among its shards, for
/// a reader that applies a log entry by entry. The parts of one unit are
/// written one after the other, so a unit is pending from its first part
/// until its last; an entry that does not continue it means its writer
/// stopped in the middle (a crash), and the parts so far are dropped.
#[derive(Debug, Default)]
pub struct UnitAssembler {
    /// The parts of the pending unit, with their timestamps.
    pending: Vec<(u64, UpdateEntry)>,
    dropped: u64,
}

impl UnitAssembler {
    /// Takes the next entry read and its timestamp; answers the entries
    /// now ready to apply together ([`apply_entries`]): none while a unit
    /// is pending, the entry alone if it is no part of a unit of several,
    /// all the parts once the last has come.
    pub fn push(&mut self, timestamp: u64, entry: UpdateEntry) -> Vec<(u64, UpdateEntry)> {
        let unit = match &entry.op {
            UpdateOp::Unit { id, part, parts, .. } if *parts > 1 => Some((*id, *part, *parts)),
            _ => None,
        };
        if !self.pending.is_empty() && !self.continues(&entry, unit) {
            self.pending.clear();
            self.dropped += 1;
        }
        match unit {
            None => vec![(timestamp, entry)],
            // A unit met past its first part (its start was before where
            // the reader began, or was dropped) cannot be made whole.
            Some((_, part, _)) if self.pending.is_empty() && part != 0 => {
                self.dropped += 1;
                Vec::new()
            }
            Some((_, part, parts)) => {
                self.pending.push((timestamp, entry));
                if part + 1 == parts {
                    std::mem::take(&mut self.pending)
                } else {
                    Vec::new()
                }
            }
        }
    }

    /// Whether `entry` is the next part of the pending unit.
    fn continues(&self, entry: &UpdateEntry, unit: Option<(u64, u32, u32)>) -> bool {
        let Some((_, first)) = self.pending.first() else { return false };
        let (Some((id, part, parts)), UpdateOp::Unit { id: first_id, parts: first_parts, .. }) =
            (unit, &first.op)
        else {
            return false;
        };
        entry.server_id == first.server_id
            && id == *first_id
            && parts == *first_parts
            && part as usize == self.pending.len()
    }

    /// The timestamp of the pending unit's first part, if a unit is pending.
    pub fn pending_since(&self) -> Option<u64> {
        self.pending.first().map(|(timestamp, _)| *timestamp)
    }

    /// How many units were dropped for a missing part.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Forgets the pending unit (a reader that starts again elsewhere).
    pub fn reset(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
    use crate::ulog::{find_files, LoggedDbm, MessageQueue, MqUpdateLogger};
    use crate::{StdTreeDbm, TinyDbm};

    fn unit(id: u64, part: u32, parts: u32, changes: &[(&str, Option<&str>)]) -> UpdateEntry {
        let changes =
            changes.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.map(|v| v.as_bytes().to_vec()))).collect();
        UpdateEntry { server_id: 0, dbm_index: part, op: UpdateOp::Unit { id, part, parts, changes } }
    }

    fn value(db: &dyn Dbm, key: &str) -> Option<String> {
        db.get(key.as_bytes()).unwrap().map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn a_logged_commit_is_one_entry_and_applies_whole_into_a_transactional_target() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("ulog");
        let queue = Arc::new(MessageQueue::open(&prefix, 1 << 30).unwrap());
        let logged =
            LoggedDbm::new(TinyDbm::new(&Default::default()), Arc::new(MqUpdateLogger::new(queue, 0, 0)));
        let db = TransactionalDbm::open(logged, TransactionOptions::default()).unwrap();
        db.set(b"old", b"gone soon").unwrap();
        let mut batch = db.batch(CommitDurability::Memory);
        batch.set(b"a", b"1").set(b"b", b"2").increment(b"n", 5, 10);
        batch.remove(b"old");
        batch.commit().unwrap();
        db.close().unwrap();

        let mut reader = MessageQueueReader::new(&prefix, 0);
        let mut ops = Vec::new();
        while let Some((_, message)) = reader.read(Duration::ZERO).unwrap() {
            ops.push(UpdateEntry::decode(&message).unwrap().op);
        }
        assert_eq!(ops.len(), 2, "the plain set, then the commit as one entry: {ops:?}");
        let UpdateOp::Unit { parts: 1, changes, .. } = &ops[1] else { panic!("{:?}", ops[1]) };
        assert_eq!(changes.len(), 4);

        let target =
            TransactionalDbm::open(StdTreeDbm::new(&Default::default()), TransactionOptions::default())
                .unwrap();
        let view = target.snapshot().unwrap();
        let report = apply_update_logs(&target, &prefix, &ApplyFilter::default()).unwrap();
        assert_eq!((report.applied, report.incomplete_units), (2, 0));
        assert_eq!(view.get(b"a").unwrap(), None, "the unit is a commit: an older view keeps its state");
        drop(view);
        assert_eq!(value(&target, "a").as_deref(), Some("1"));
        assert_eq!(value(&target, "b").as_deref(), Some("2"));
        assert_eq!(target.get(b"n").unwrap(), Some(15i64.to_be_bytes().to_vec()));
        assert_eq!(value(&target, "old"), None);
    }

    #[test]
    fn a_unit_torn_at_the_end_of_the_log_is_not_applied() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("ulog");
        let queue = MessageQueue::open(&prefix, 1 << 30).unwrap();
        let plain = UpdateEntry {
            server_id: 0,
            dbm_index: 0,
            op: UpdateOp::Set { key: b"x".to_vec(), value: b"1".to_vec() },
        };
        queue.write(None, &plain.encode()).unwrap();
        queue
            .write(None, &unit(0, 0, 1, &[("a", Some("1")), ("b", Some("2")), ("c", None)]).encode())
            .unwrap();
        drop(queue);
        let (_, file) = find_files(&prefix).unwrap().pop().unwrap();
        let length = std::fs::metadata(&file).unwrap().len();
        // Cut off the unit's last bytes, as a crash in the middle of its write does.
        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(length - 4).unwrap();
        let db = TinyDbm::new(&Default::default());
        db.set(b"c", b"kept").unwrap();
        let report = apply_update_logs(&db, &prefix, &ApplyFilter::default()).unwrap();
        assert_eq!(report.applied, 1);
        assert_eq!(value(&db, "x").as_deref(), Some("1"));
        assert_eq!((value(&db, "a"), value(&db, "b")), (None, None));
        assert_eq!(value(&db, "c").as_deref(), Some("kept"));
    }

    #[test]
    fn parts_apply_together_once_the_last_comes_and_never_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("ulog");
        let queue = MessageQueue::open(&prefix, 1 << 30).unwrap();
        // A unit in two parts; then one whose writer died after its first
        // part and wrote a plain entry after restarting; then one whose
        // last part is not written yet.
        for (i, entry) in [
            unit(7, 0, 2, &[("a", Some("1"))]),
            unit(7, 1, 2, &[("b", Some("1")), ("c", None)]),
            unit(8, 0, 2, &[("a", Some("lost"))]),
            UpdateEntry {
                server_id: 0,
                dbm_index: 0,
                op: UpdateOp::Set { key: b"y".to_vec(), value: b"1".to_vec() },
            },
            unit(9, 0, 3, &[("b", Some("later"))]),
            unit(9, 1, 3, &[("c", Some("later"))]),
        ]
        .iter()
        .enumerate()
        {
            queue.write(Some(100 + i as u64), &entry.encode()).unwrap();
        }
        let db = TinyDbm::new(&Default::default());
        db.set(b"c", b"before").unwrap();
        let report = apply_update_logs(&db, &prefix, &ApplyFilter::default()).unwrap();
        assert_eq!((report.applied, report.incomplete_units), (3, 2));
        assert_eq!(value(&db, "a").as_deref(), Some("1"));
        assert_eq!(value(&db, "b").as_deref(), Some("1"));
        assert_eq!(value(&db, "c"), None);
        assert_eq!(value(&db, "y").as_deref(), Some("1"));

        // The last part arrives: a later call from the reported time makes the unit whole.
        assert_eq!(report.last_timestamp, Some(104), "the first part of the unit not yet whole");
        queue.write(Some(106), &unit(9, 2, 3, &[("d", Some("later"))]).encode()).unwrap();
        let from = ApplyFilter { min_timestamp: 104, ..ApplyFilter::default() };
        let again = apply_update_logs(&db, &prefix, &from).unwrap();
        assert_eq!((again.applied, again.incomplete_units), (3, 0));
        for key in ["b", "c", "d"] {
            assert_eq!(value(&db, key).as_deref(), Some("later"), "{key}");
        }

        // Filtered to one database index, a part is applied alone.
        let one = TinyDbm::new(&Default::default());
        let only = ApplyFilter { dbm_index: Some(1), ..ApplyFilter::default() };
        apply_update_logs(&one, &prefix, &only).unwrap();
        assert_eq!(value(&one, "c").as_deref(), Some("later"));
        assert_eq!(value(&one, "b").as_deref(), Some("1"), "unit 7's second part");
        assert_eq!((value(&one, "a"), value(&one, "d")), (None, None), "other indexes' parts");
    }

    #[test]
    fn an_assembler_drops_a_unit_met_past_its_first_part() {
        let mut units = UnitAssembler::default();
        assert!(units.push(1, unit(3, 1, 2, &[("a", Some("1"))])).is_empty());
        assert_eq!(units.dropped(), 1);
        assert!(units.push(2, unit(4, 0, 2, &[("a", Some("1"))])).is_empty());
        assert_eq!(units.pending_since(), Some(2));
        // Another writer's part with the same id does not continue it.
        let mut other = unit(4, 1, 2, &[("b", Some("1"))]);
        other.server_id = 5;
        assert!(units.push(3, other).is_empty());
        assert_eq!(units.dropped(), 3);
        assert_eq!(units.pending_since(), None);
        let whole = unit(0, 0, 1, &[("c", Some("1"))]);
        assert_eq!(units.push(4, whole.clone()), vec![(4, whole)]);
    }
}
