//! A cursor kept together with the database it borrows.
//!
//! A foreign object (a Python iterator, a Java cursor, a Ruby cursor) cannot
//! hold a borrow, so [`Live`] owns an `Arc` of the database and the cursor
//! that borrows it, as one self-referential value built by `self_cell`: no
//! lifetime is forged. The database's [`OpenHandle`](crate::handle::OpenHandle)
//! keeps a weak reference to every [`Slot`] and empties them when it closes,
//! so no cursor outlives an open database.

use std::sync::Arc;

use kuradb::dbm::{Cursor, Dbm};
use parking_lot::Mutex;
use self_cell::self_cell;

use crate::handle::Db;

type BoxedCursor<'a> = Box<dyn Cursor + 'a>;

self_cell!(
    /// A cursor and the database it borrows.
    pub struct Live {
        owner: Arc<Db>,
        #[not_covariant]
        dependent: BoxedCursor,
    }
);

impl Live {
    /// A new cursor of `db`, not yet positioned.
    pub fn open(db: Arc<Db>) -> kuradb::Result<Live> {
        Live::try_new(db, |db| db.iter())
    }

    /// Runs `f` on the cursor.
    pub fn with_cursor<R>(&mut self, f: impl FnOnce(&mut dyn Cursor) -> R) -> R {
        self.with_dependent_mut(|_, cursor| f(cursor.as_mut()))
    }
}

/// Where a foreign cursor object keeps its cursor: `None` once the cursor
/// or its database closed.
pub type Slot = Mutex<Option<Live>>;

/// Runs `f` on the cursor in `slot`, or fails with `closed()` if the slot
/// is empty.
pub fn with_slot<R>(
    slot: &Slot,
    closed: fn() -> kuradb::Error,
    f: impl FnOnce(&mut dyn Cursor) -> kuradb::Result<R>,
) -> kuradb::Result<R> {
    match slot.lock().as_mut() {
        Some(live) => live.with_cursor(f),
        None => Err(closed()),
    }
}
