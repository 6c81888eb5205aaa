//! Where a replica is in its master's log, and the small state file beside
//! the database that remembers it across restarts.
//!
//! Timestamps are milliseconds and several entries may share one, so a
//! position is a timestamp and how many entries of that timestamp (counted
//! from the first of them in the log) are applied: the master skips those
//! when it goes on, and nothing is applied twice.

use std::io::Write;
use std::path::{Path, PathBuf};

use kuradb::{Error, ErrorKind, Result};

/// The first line of a state file.
const MAGIC: &str = "kura-replica 1";

/// How far a replica has applied its master's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The master, as `HOST:PORT`: a position means nothing in another's log.
    pub master: String,
    /// The timestamp of the last entry applied (or of the snapshot).
    pub timestamp: u64,
    /// How many entries of that timestamp are applied.
    pub skip: u64,
}

impl Position {
    /// The position after applying an entry of `timestamp`.
    pub fn advance(&mut self, timestamp: u64) {
        if timestamp == self.timestamp {
            self.skip += 1;
        } else {
            self.timestamp = timestamp;
            self.skip = 1;
        }
    }
}

/// The state file of the database at `db_path`.
pub fn state_path(db_path: &Path) -> PathBuf {
    let mut name = db_path.as_os_str().to_os_string();
    name.push(".replica");
    PathBuf::from(name)
}

/// The position saved at `path`, if any. A damaged file is an error (the
/// caller resyncs fully rather than guess).
pub fn load(path: &Path) -> Result<Option<Position>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("reading the replica state", path, e)),
    };
    let damaged =
        || Error::new(ErrorKind::BrokenData, format!("{}: not a replica state file", path.display()));
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err(damaged());
    }
    let mut field = |name: &str| lines.next().and_then(|l| l.strip_prefix(name)).map(str::to_string);
    let master = field("master ").ok_or_else(damaged)?;
    let timestamp = field("timestamp ").and_then(|t| t.parse().ok()).ok_or_else(damaged)?;
    let skip = field("skip ").and_then(|t| t.parse().ok()).ok_or_else(damaged)?;
    Ok(Some(Position { master, timestamp, skip }))
}

/// Saves `position` at `path` whole or not at all: written beside, made
/// durable, then renamed over the old one.
pub fn save(path: &Path, position: &Position) -> Result<()> {
    let mut temp = path.as_os_str().to_os_string();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let text = format!(
        "{MAGIC}\nmaster {}\ntimestamp {}\nskip {}\n",
        position.master, position.timestamp, position.skip
    );
    let written = std::fs::File::create(&temp)
        .and_then(|mut file| file.write_all(text.as_bytes()).and_then(|()| file.sync_data()))
        .and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| Error::io("writing the replica state", path, e))
}

/// Removes the state file at `path`, if there is one, saying so: the
/// database's position in a master's log is no longer known.
pub fn forget(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => log::info!("{}: removed; a later REPLICAOF starts with a full resync", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => log::error!("removing the replica state {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_the_entries_of_one_timestamp() {
        let mut p = Position { master: "h:1".into(), timestamp: 10, skip: 0 };
        p.advance(10);
        p.advance(10);
        assert_eq!((p.timestamp, p.skip), (10, 2));
        p.advance(12);
        assert_eq!((p.timestamp, p.skip), (12, 1));
    }

    #[test]
    fn state_files_round_trip_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = state_path(&dir.path().join("casket.tkh"));
        assert_eq!(load(&path).unwrap(), None);
        let p = Position { master: "127.0.0.1:6380".into(), timestamp: 1_700_000_000_123, skip: 3 };
        save(&path, &p).unwrap();
        assert_eq!(load(&path).unwrap(), Some(p));
        std::fs::write(&path, "kura-replica 1\nmaster h:1\ntimestamp x\n").unwrap();
        assert!(load(&path).unwrap_err().to_string().contains("not a replica state file"));
        forget(&path);
        assert!(!path.exists());
    }
}
