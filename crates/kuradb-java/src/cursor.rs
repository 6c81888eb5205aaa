//! A cursor held together with the database it borrows.

use std::sync::Arc;

use kuradb::dbm::any::AnyDbm;
use kuradb::dbm::{Cursor, Dbm};
use parking_lot::Mutex;

/// A cursor and the database it borrows.
pub struct Live {
    // Declared before `_db` so that it is dropped first: it borrows `*_db`.
    cursor: Box<dyn Cursor + 'static>,
    _db: Arc<AnyDbm>,
}

impl Live {
    /// A cursor on `db`, not yet positioned.
    pub fn new(db: Arc<AnyDbm>) -> kuradb::Result<Live> {
        let cursor: Box<dyn Cursor + '_> = db.iter()?;
        // SAFETY: the cursor borrows the `AnyDbm` inside the `Arc`, whose heap
        // address is fixed while any `Arc` to it lives. `Live` owns such an
        // `Arc` and drops the cursor before it (field order), so the borrow
        // never outlives the database. Only the lifetime changes here.
        let cursor: Box<dyn Cursor + 'static> = unsafe { std::mem::transmute(cursor) };
        Ok(Live { cursor, _db: db })
    }

    /// The cursor.
    pub fn cursor(&mut self) -> &mut dyn Cursor {
        self.cursor.as_mut()
    }
}

/// Where a Java cursor keeps its cursor; `None` once it or its database closed.
pub type Slot = Mutex<Option<Live>>;
