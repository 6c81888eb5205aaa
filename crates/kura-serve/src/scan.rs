//! SCAN's cursors. A client holds only a number; the position it stands for
//! lives here, so it can be one that survives writes:
//!
//! - on an ordered database, the last key visited: the next call resumes
//!   at the first key above it, so records present throughout are visited
//!   exactly once in key order, whatever is added or removed meanwhile;
//! - on a hash (unordered) database, a live kuradb cursor, which the library
//!   keeps valid across concurrent updates (a hash cursor walks buckets:
//!   a record present throughout is visited once, and the walk ends).
//!
//! Each call answers a fresh number and forgets the one it was given. At
//! most [`MAX_CURSORS`] positions are kept; past that the oldest is dropped,
//! and a number that is unknown (dropped, already used, or from before a
//! restart) is refused with an error telling to start again from 0.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::databases::Db;
use bytes::Bytes;
use kuradb::dbm::{Cursor, Dbm, Edge};
use parking_lot::Mutex;
use self_cell::self_cell;

use super::databases::Database;
use super::pattern::KeyPattern;

/// How many positions are kept at once.
pub const MAX_CURSORS: usize = 4096;

type DynCursor<'a> = Box<dyn Cursor + 'a>;

self_cell!(
    /// A kuradb cursor together with the database it walks.
    struct LiveCursor {
        owner: Arc<Db>,
        #[covariant]
        dependent: DynCursor,
    }
);

enum Position {
    /// The last key visited in an ordered database.
    After(Vec<u8>),
    /// A walk of an unordered database.
    Live(LiveCursor),
    /// A walk of a published directory's version since replaced: it
    /// starts again over the version served (a key may come twice).
    Restart,
}

struct Entry {
    db: usize,
    position: Position,
}

/// The positions of the SCANs in progress, shared by every connection.
pub struct ScanCursors {
    entries: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    by_id: HashMap<u64, Entry>,
    order: VecDeque<u64>,
    next_id: u64,
}

/// One step of a SCAN: the cursor to give next (0 when the walk is over)
/// and the matching keys.
pub type ScanStep = (u64, Vec<Bytes>);

impl ScanCursors {
    /// An empty table; cursor numbers start at a value that differs from
    /// run to run, so a number from before a restart is unlikely to be
    /// taken for a live one.
    pub fn new() -> ScanCursors {
        let start = u64::from(rand::random::<u32>()) + 1;
        ScanCursors { entries: Mutex::new(Table { next_id: start, ..Table::default() }) }
    }

    /// Visits up to `count` records of database `index` from `cursor` and
    /// answers the keys that match `pattern`.
    pub fn step(
        &self,
        index: usize,
        database: &Database,
        cursor: u64,
        pattern: &KeyPattern,
        count: usize,
    ) -> Result<ScanStep, String> {
        let position = if cursor == 0 {
            None
        } else {
            let entry = self.entries.lock().by_id.remove(&cursor);
            match entry {
                Some(entry) if entry.db == index => Some(entry.position),
                _ => {
                    return Err(format!(
                    "ERR unknown or expired SCAN cursor {cursor}: start again from 0 (cursors are kept for \
                         the {MAX_CURSORS} most recent scans)"
                ))
                }
            }
        };
        let mut keys = Vec::new();
        // Expired keys (and the expiry layer's marker) are walked past, not shown.
        let now = database.expiry.state().map(|state| state.now_ms());
        let mut visit = |key: &[u8], stored: &[u8]| {
            if pattern.matches(key) && crate::expiry::is_live(key, stored, now) {
                keys.push(Bytes::copy_from_slice(key));
            }
        };
        // One version of a published directory for the call.
        let db = database.db.load();
        let next = if database.ordered {
            let after = match position {
                Some(Position::After(key)) => Some(key),
                _ => None,
            };
            walk_ordered(&db, after, count, &mut visit)?.map(Position::After)
        } else {
            let live = match position {
                Some(Position::Live(live)) if Arc::ptr_eq(live.borrow_owner(), &db) => live,
                _ => start_live(&db)?,
            };
            walk_live(live, count, &mut visit)?.map(Position::Live)
        };
        Ok((next.map_or(0, |position| self.keep(index, position)), keys))
    }

    fn keep(&self, db: usize, position: Position) -> u64 {
        let mut table = self.entries.lock();
        let id = table.next_id;
        table.next_id = table.next_id.wrapping_add(1).max(1);
        table.by_id.insert(id, Entry { db, position });
        table.order.push_back(id);
        while table.by_id.len() > MAX_CURSORS || table.order.len() > 2 * MAX_CURSORS {
            let Some(old) = table.order.pop_front() else { break };
            table.by_id.remove(&old);
        }
        id
    }

    /// Lets go of the walks of database `db`, whose version was replaced,
    /// so the old version can be closed; each goes on over the new one.
    pub fn restart_live(&self, db: usize) {
        let mut table = self.entries.lock();
        for entry in table.by_id.values_mut().filter(|e| e.db == db) {
            if matches!(entry.position, Position::Live(_)) {
                entry.position = Position::Restart;
            }
        }
    }

    /// Drops every position (at shutdown, so the databases can be closed).
    pub fn clear(&self) {
        let mut table = self.entries.lock();
        table.by_id.clear();
        table.order.clear();
    }
}

fn err(e: kuradb::Error) -> String {
    format!("ERR {e}")
}

/// Up to `count` keys after `after`; the last one visited, or `None` at the end.
fn walk_ordered(
    db: &Db,
    after: Option<Vec<u8>>,
    count: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<Option<Vec<u8>>, String> {
    let mut cursor = db.iter().map_err(err)?;
    match &after {
        Some(key) => cursor.jump_upper(key, Edge::Exclusive).map_err(err)?,
        None => cursor.first().map_err(err)?,
    }
    let mut last = None;
    for _ in 0..count {
        let Some((key, stored)) = cursor.get().map_err(err)? else { return Ok(None) };
        visit(&key, &stored);
        last = Some(key);
        cursor.next().map_err(err)?;
    }
    // Whether anything is left decides between a cursor and 0.
    if cursor.get().map_err(err)?.is_none() {
        return Ok(None);
    }
    Ok(last.or(after))
}

fn start_live(db: &Arc<Db>) -> Result<LiveCursor, String> {
    LiveCursor::try_new(Arc::clone(db), |db| {
        let mut cursor = db.iter()?;
        cursor.first()?;
        Ok(cursor)
    })
    .map_err(err)
}

fn walk_live(
    mut live: LiveCursor,
    count: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<Option<LiveCursor>, String> {
    let more = live.with_dependent_mut(|_, cursor| -> kuradb::Result<bool> {
        for _ in 0..count {
            let Some((key, stored)) = cursor.get()? else { return Ok(false) };
            visit(&key, &stored);
            cursor.next()?;
        }
        Ok(cursor.get()?.is_some())
    });
    Ok(if more.map_err(err)? { Some(live) } else { None })
}
