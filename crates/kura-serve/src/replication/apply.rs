//! The replica's side of applying: the frames of a link are applied to the
//! database in order, with the core's apply path (`apply_entry`: a set
//! overwrites, a remove of an absent key is no error, a clear clears, a
//! unit, a committed transaction, is committed as one batch), and the
//! position is saved beside the database once what it covers is
//! synchronized. The parts of a unit split among shards are held back
//! until the last has come and then applied together; the position moves
//! past them only then, so a link that breaks in the middle of one gets
//! them all again.

use std::time::{Duration, Instant};

use kuradb::dbm::expiry::EXPIRY_MARKER;
use kuradb::dbm::{Dbm, Durability};
use kuradb::ulog::{apply_entries, apply_entry, UnitAssembler, UpdateOp};

use super::follow::Link;
use super::frames::Frame;
use super::position::{self, Position};
use crate::expiry::Off;
use crate::state::Server;

/// How often, at most, a busy replica synchronizes and saves its position
/// (a hard synchronization: a tree reopened after a crash goes back to its
/// last one, so a softer one could leave the database behind the position).
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// What the applier keeps: the position and whether it is saved.
pub struct Applied {
    /// The position reached; `None` before any, or during a full resync.
    pub position: Option<Position>,
    /// Whether the position moved since it was last saved.
    pub dirty: bool,
    /// When it was last saved.
    pub saved_at: Instant,
    /// The parts of a unit received but not yet applied.
    pub units: UnitAssembler,
}

/// Applies `batch`, received from `master`, to database `db`. An error ends
/// the link (what was applied before it stays, and its position with it).
pub fn apply_batch(server: &Server, db: usize, master: &str, batch: Vec<Frame>) -> Result<(), String> {
    let link = &server.replication.links[db];
    let current = server.databases[db].db.load();
    let database = &**current;
    let mut applied = link.applied.lock();
    let mut idle = false;
    let outcome = (|| {
        for frame in batch {
            match frame {
                Frame::Continue => {
                    // A new link: parts held from the last one come again.
                    applied.units.reset();
                    link.status(|s| {
                        s.state = "up";
                        s.down_since = None;
                        s.error = None;
                        s.last_sync = "continue";
                    })
                }
                Frame::FullResync(timestamp) => {
                    // Forgotten first: a crash during the resync must not
                    // resume from the old position over a half-loaded database.
                    if let Some(path) = &link.state_path {
                        position::forget(path);
                    }
                    applied.position = None;
                    applied.dirty = false;
                    applied.units.reset();
                    // The master's marker, if it has expiry, comes with the snapshot.
                    server.databases[db].expiry.turn_off(Off::Replica);
                    database.clear().map_err(|e| format!("clearing the database for a full resync: {e}"))?;
                    log::warn!("database {db}: full resync from {master} (its log follows from {timestamp})");
                    link.status(|s| {
                        s.state = "sync";
                        s.last_sync = "full";
                        s.full_resyncs += 1;
                        s.through = 0;
                    });
                }
                Frame::Snapshot(entry) => {
                    if applied.position.is_some() {
                        return Err("a snapshot record outside a full resync".to_string());
                    }
                    apply_entry(database, &entry.op).map_err(|e| format!("applying the snapshot: {e}"))?;
                    // The master sends its expiry marker first: expiry is on
                    // before any value with an expiry tag can be read.
                    if matches!(&entry.op, UpdateOp::Set { key, .. } if key == EXPIRY_MARKER) {
                        server.databases[db]
                            .expiry
                            .follow_marker(database)
                            .map_err(|e| format!("reading the master's expiry marker: {e}"))?;
                    }
                }
                Frame::SnapshotEnd(timestamp) => {
                    applied.position = Some(Position { master: master.to_string(), timestamp, skip: 0 });
                    applied.dirty = true;
                    idle = true;
                    link.status(|s| {
                        s.state = "up";
                        s.down_since = None;
                        s.error = None;
                        s.applied = timestamp;
                        // The log is replayed from `timestamp` on.
                        s.through = timestamp.saturating_sub(1);
                    });
                }
                Frame::Entry(timestamp, entry) => {
                    if applied.position.is_none() {
                        return Err("a log entry before the snapshot ended".to_string());
                    }
                    let ready = applied.units.push(timestamp, entry);
                    if ready.is_empty() {
                        continue;
                    }
                    apply_entries(database, &ready)
                        .map_err(|e| format!("applying the entry of time {timestamp}: {e}"))?;
                    if let Some(position) = applied.position.as_mut() {
                        for (timestamp, _) in &ready {
                            position.advance(*timestamp);
                        }
                    }
                    applied.dirty = true;
                    // The log is in time order: every entry before this
                    // one's time has come, and those held back in a unit
                    // are applied now.
                    let through = timestamp.saturating_sub(1);
                    let whole = applied.units.pending_since().is_none();
                    link.status(|s| {
                        s.applied = timestamp;
                        s.master_newest = s.master_newest.max(timestamp);
                        if whole {
                            s.through = s.through.max(through);
                        }
                    });
                }
                Frame::Ping(newest, through) => {
                    idle = true;
                    let whole = applied.units.pending_since().is_none() && applied.position.is_some();
                    link.status(|s| {
                        s.master_newest = s.master_newest.max(newest);
                        if whole {
                            s.through = s.through.max(through);
                        }
                    });
                }
                Frame::Ok => {}
                Frame::Error(text) => return Err(format!("the master says: {text}")),
            }
        }
        Ok(())
    })();
    // Expiry is on once the master's marker has come (the values are
    // stored as the master stores them).
    if let Err(e) = server.databases[db].expiry.follow_marker(database) {
        log::warn!("database {db}: reading the master's expiry marker: {e}");
    }
    if applied.dirty && (idle || outcome.is_err() || applied.saved_at.elapsed() >= SAVE_EVERY) {
        save(link, database, &mut applied);
    }
    outcome
}

/// Synchronizes the database, then saves the position, if it moved.
pub fn save(link: &Link, database: &dyn Dbm, applied: &mut Applied) {
    if !applied.dirty {
        return;
    }
    let Some(position) = &applied.position else { return };
    if let Some(path) = &link.state_path {
        let saved = database.synchronize(Durability::Hard).and_then(|()| position::save(path, position));
        if let Err(e) = saved {
            log::error!("saving the replica position: {e}");
            link.status(|s| s.error = Some(format!("saving the position: {e}")));
            return;
        }
    }
    applied.dirty = false;
    applied.saved_at = Instant::now();
}
