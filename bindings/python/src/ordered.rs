//! The walks of an ordered database (tree, skip): `range`, `prefix` and
//! `reversed(db)`. A hash database keeps no key order, so each of them
//! refuses it at the call, naming what would work. The methods sit in
//! `database.rs`'s `#[pymethods]` block (one block per class: see
//! `reference_api.rs`); their helpers are here.

use std::sync::Arc;

use pyo3::prelude::*;

use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Cursor, Dbm};
use kuradb::ErrorKind;
use kuradb_binding::handle::Db;

use crate::cursor::{Bounds, RecordIterator, Yield};
use crate::database::Database;
use crate::error::{not_open, to_py};

/// The key order of an ordered database, or an error naming `what` needs one.
pub(crate) fn key_order(db: &Db, what: &str) -> kuradb::Result<KeyComparator> {
    if !db.is_ordered() {
        return Err(kuradb::Error::new(
            ErrorKind::NotImplemented,
            format!(
                "{what} needs an ordered database (tree, skip); this {} database keeps no key order",
                db.inner().class().name()
            ),
        ));
    }
    let named = db.inspect()?.into_iter().find(|(k, _)| k == "key_comparator").map(|(_, v)| v);
    named.map_or(Ok(KeyComparator::default()), |name| KeyComparator::from_name(&name))
}

impl Database {
    /// A record iterator placed by `place` and stopped by `bounds`.
    pub(crate) fn walk(
        &self,
        py: Python<'_>,
        yields: Yield,
        bounds: Bounds,
        place: impl FnOnce(&mut dyn Cursor) -> kuradb::Result<()> + Send,
    ) -> PyResult<RecordIterator> {
        let slot = self.new_slot(py)?;
        let start = Arc::clone(&slot);
        py.allow_threads(move || match start.lock().as_mut() {
            Some(live) => live.with_cursor(place),
            None => Err(not_open()),
        })
        .map_err(to_py)?;
        Ok(RecordIterator::new(slot, yields, bounds))
    }
}
