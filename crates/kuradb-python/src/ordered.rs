//! The walks of an ordered database (tree, skip): `range`, `prefix` and
//! `reversed(db)`. A hash database keeps no key order, so each of them
//! refuses it at the call, naming what would work.

use std::sync::Arc;

use pyo3::prelude::*;

use kuradb::dbm::any::AnyDbm;
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Cursor, Dbm};
use kuradb::ErrorKind;

use crate::convert::{bytes_of, opt_bytes_of};
use crate::cursor::{Bounds, RecordIterator, Yield};
use crate::database::Database;
use crate::error::{not_open, to_py};

/// The key order of an ordered database, or an error naming `what` needs one.
fn key_order(db: &AnyDbm, what: &str) -> kuradb::Result<KeyComparator> {
    if !db.is_ordered() {
        return Err(kuradb::Error::new(
            ErrorKind::NotImplemented,
            format!(
                "{what} needs an ordered database (tree, skip); this {} database keeps no key order",
                db.class().name()
            ),
        ));
    }
    let named = db.inspect()?.into_iter().find(|(k, _)| k == "key_comparator").map(|(_, v)| v);
    named.map_or(Ok(KeyComparator::default()), |name| KeyComparator::from_name(&name))
}

impl Database {
    /// A record iterator placed by `place` and stopped by `bounds`.
    fn walk(
        &self,
        py: Python<'_>,
        yields: Yield,
        bounds: Bounds,
        place: impl FnOnce(&mut dyn Cursor) -> kuradb::Result<()> + Send,
    ) -> PyResult<RecordIterator> {
        let slot = self.new_slot(py)?;
        let start = Arc::clone(&slot);
        py.allow_threads(move || match start.lock().as_mut() {
            Some(live) => place(live.cursor()),
            None => Err(not_open()),
        })
        .map_err(to_py)?;
        Ok(RecordIterator::new(slot, yields, bounds))
    }
}

#[pymethods]
impl Database {
    /// The `(key, value)` pairs of an ordered database with
    /// `lo <= key < hi` (`lo <= key <= hi` if `inclusive`) in its key order,
    /// or from the highest key down with `reverse=True`; None is no bound.
    /// A hash database raises UnsupportedError.
    #[pyo3(signature = (lo = None, hi = None, reverse = false, inclusive = false))]
    fn range(
        &self,
        py: Python<'_>,
        lo: Option<Bound<'_, PyAny>>,
        hi: Option<Bound<'_, PyAny>>,
        reverse: bool,
        inclusive: bool,
    ) -> PyResult<RecordIterator> {
        let lo = opt_bytes_of(&lo, "lo")?.map(|b| b.into_owned());
        let hi = opt_bytes_of(&hi, "hi")?.map(|b| b.into_owned());
        let order = self.run(py, |db| key_order(db, "range"))?;
        if reverse {
            let bounds = Bounds::Backward { start: lo, order };
            return self.walk(py, Yield::Items, bounds, move |c| match &hi {
                Some(hi) => c.jump_lower(hi, inclusive),
                None => c.last(),
            });
        }
        let bounds = match hi {
            Some(end) => Bounds::Below { end, inclusive, order },
            None => Bounds::Whole,
        };
        self.walk(py, Yield::Items, bounds, move |c| match &lo {
            Some(lo) => c.jump_upper(lo, true),
            None => c.first(),
        })
    }

    /// The `(key, value)` pairs whose key starts with `prefix`, in key
    /// order. It needs an ordered database whose keys are in plain byte
    /// order (the default comparator), where such keys sit together.
    fn prefix(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<RecordIterator> {
        let prefix = bytes_of(prefix, "prefix")?.into_owned();
        self.run(py, |db| match key_order(db, "prefix")? {
            KeyComparator::Lexical => Ok(()),
            other => Err(kuradb::Error::new(
                ErrorKind::NotImplemented,
                format!(
                    "prefix needs keys in byte order (the lexical comparator); this database orders them by \
                     the {} comparator, which does not keep a prefix's keys together: use range instead",
                    other.name()
                ),
            )),
        })?;
        let start = prefix.clone();
        self.walk(py, Yield::Items, Bounds::Prefix(prefix), move |c| c.jump_upper(&start, true))
    }

    /// The keys of an ordered database from the highest down.
    fn __reversed__(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        let order = self.run(py, |db| key_order(db, "reversed()"))?;
        self.walk(py, Yield::Keys, Bounds::Backward { start: None, order }, |c| c.last())
    }
}
