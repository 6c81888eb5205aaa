//! The ordered cursor of a skip database.

use std::borrow::Cow;
use std::sync::Arc;

use super::format::{Window, HEADER_SIZE};
use super::pending::Change;
use super::search::{Below, Position, Snapshot};
use super::value::decode_value;
use super::SkipDbm;
use crate::caching::ScanScope;
use crate::dbm::ordered_cursor::past_end;
use crate::dbm::{Action, Cursor, Edge};
use crate::error::Result;

impl SkipDbm {
    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> SkipCursor<'_> {
        SkipCursor { db: self, snapshot: None, at: None, key: Vec::new(), window: Window::new(1 << 12) }
    }
}

/// A position among a skip database's records. It reads the state of the
/// last synchronization; after a newer one it finds its key again in the
/// new file (the first record of the key, or the first after it).
pub struct SkipCursor<'a> {
    db: &'a SkipDbm,
    snapshot: Option<Arc<Snapshot>>,
    at: Option<Position>,
    /// The key at `at`, to find the place again in a newer file.
    key: Vec<u8>,
    window: Window,
}

impl SkipCursor<'_> {
    /// The current snapshot, the position moved into it if it is newer.
    fn fresh(&mut self) -> Result<Arc<Snapshot>> {
        let current = self.db.snapshot()?;
        if let Some(old) = &self.snapshot {
            if old.generation != current.generation {
                // The window holds bytes of the old file.
                self.window.reset();
                if self.at.is_some() {
                    let key = std::mem::take(&mut self.key);
                    let at = current.seek(&mut self.window, Below { key: &key, or_equal: false })?;
                    self.place(&current, at)?;
                }
            }
        }
        self.snapshot = Some(current.clone());
        Ok(current)
    }

    fn place(&mut self, snapshot: &Snapshot, at: Option<Position>) -> Result<()> {
        self.at = at;
        self.key.clear();
        if let Some(at) = at {
            let record = snapshot.read(&mut self.window, at.offset, false)?;
            self.key.extend_from_slice(self.window.key(&record));
        }
        Ok(())
    }

    fn seek_by(&mut self, below: Below<'_>) -> Result<()> {
        let snapshot = self.fresh()?;
        self.window.set_chunk(1 << 12);
        let at = snapshot.seek(&mut self.window, below)?;
        self.place(&snapshot, at)
    }

    /// Moves to the last record `below` holds for.
    fn seek_before(&mut self, below: Below<'_>) -> Result<()> {
        let snapshot = self.fresh()?;
        let at = snapshot.seek(&mut self.window, below)?;
        let target = match at {
            Some(at) if at.index == 0 => return self.place(&snapshot, None),
            Some(at) => at.index - 1,
            None if snapshot.header.count == 0 => return self.place(&snapshot, None),
            None => snapshot.header.count - 1,
        };
        let at = snapshot.locate(&mut self.window, target)?;
        self.place(&snapshot, at)
    }
}

impl Cursor for SkipCursor<'_> {
    fn first(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        let snapshot = self.fresh()?;
        let at = (snapshot.header.count > 0).then_some(Position { index: 0, offset: HEADER_SIZE });
        self.place(&snapshot, at)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek_by(Below { key, or_equal: false })
    }

    fn next(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        let snapshot = self.fresh()?;
        let Some(at) = self.at else { return Ok(()) };
        self.window.set_chunk(1 << 16);
        let record = snapshot.read(&mut self.window, at.offset, false)?;
        let next = record.end();
        let at =
            (next < snapshot.header.records_end).then_some(Position { index: at.index + 1, offset: next });
        self.place(&snapshot, at)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let _scan = ScanScope::enter();
        let snapshot = self.fresh()?;
        let Some(at) = self.at else { return Ok(None) };
        let record = snapshot.read(&mut self.window, at.offset, true)?;
        Ok(Some((self.window.key(&record).to_vec(), decode_value(self.window.value(&record)).to_vec())))
    }

    /// Replaces every record of the key at the position with one of `value`,
    /// at the next synchronization.
    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                let mut pending = self.db.pending.lock();
                self.db.answer(Some(&mut pending), &key, Action::Set(Cow::Borrowed(value)))
            }
            None => Err(past_end()),
        }
    }

    /// Removes every record of the key at the position, at the next
    /// synchronization; the cursor moves to the next record.
    fn remove(&mut self) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                {
                    let mut pending = self.db.pending.lock();
                    self.db.change(&mut pending, Change::Remove { key: &key })?;
                }
                self.next()
            }
            None => Err(past_end()),
        }
    }

    fn last(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        let snapshot = self.fresh()?;
        let at = match snapshot.header.count {
            0 => None,
            n => snapshot.locate(&mut self.window, n - 1)?,
        };
        self.place(&snapshot, at)
    }

    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.seek_before(Below { key, or_equal: edge.is_inclusive() })
    }

    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.seek_by(Below { key, or_equal: !edge.is_inclusive() })
    }

    fn previous(&mut self) -> Result<()> {
        let _scan = ScanScope::enter();
        let snapshot = self.fresh()?;
        let Some(at) = self.at else { return Ok(()) };
        let at = match at.index {
            0 => None,
            i => snapshot.locate(&mut self.window, i - 1)?,
        };
        self.place(&snapshot, at)
    }
}
