//! Going over the records: cursors, the record iterators and the ordered
//! walks, callbacks over every record, and search.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Dbm, Edge, SearchMode};
use kuradb::ErrorKind;

use super::{action_of, call_back, Database};
use crate::convert::{bytes_of, opt_bytes_of};
use crate::cursor::{Bounds, PyCursor, RecordIterator, Yield};
use crate::error::to_py;
use crate::ordered::key_order;

pub(super) fn process_each(db: &Database, py: Python<'_>, func: PyObject, writable: bool) -> PyResult<()> {
    let (mut failure, guard) = (None, db.guard());
    db.run_calling_back(py, |db| {
        db.process_each(
            if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
            &mut |key, value| {
                call_back(guard, &mut failure, |py| {
                    let args = (PyBytes::new(py, key), PyBytes::new(py, value));
                    action_of(&func.call1(py, args)?.into_bound(py))
                })
            },
        )
    })?;
    failure.map_or(Ok(()), Err)
}

pub(super) fn make_iterator(db: &Database, py: Python<'_>) -> PyResult<PyCursor> {
    Ok(PyCursor::new(db.new_slot(py)?))
}

pub(super) fn keys(db: &Database, py: Python<'_>) -> PyResult<RecordIterator> {
    db.records_from_first(py, Yield::Keys)
}

pub(super) fn values(db: &Database, py: Python<'_>) -> PyResult<RecordIterator> {
    db.records_from_first(py, Yield::Values)
}

pub(super) fn items(db: &Database, py: Python<'_>) -> PyResult<RecordIterator> {
    db.records_from_first(py, Yield::Items)
}

pub(super) fn iter(db: &Database, py: Python<'_>) -> PyResult<RecordIterator> {
    db.records_from_first(py, Yield::Keys)
}

pub(super) fn range(
    db: &Database,
    py: Python<'_>,
    lo: Option<Bound<'_, PyAny>>,
    hi: Option<Bound<'_, PyAny>>,
    reverse: bool,
    inclusive: bool,
) -> PyResult<RecordIterator> {
    let lo = opt_bytes_of(&lo, "lo")?.map(|b| b.into_owned());
    let hi = opt_bytes_of(&hi, "hi")?.map(|b| b.into_owned());
    let order = db.run(py, |db| key_order(db, "range"))?;
    if reverse {
        let bounds = Bounds::Backward { start: lo, order };
        return db.walk(py, Yield::Items, bounds, move |c| match &hi {
            Some(hi) => c.jump_lower(
                hi,
                if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive },
            ),
            None => c.last(),
        });
    }
    let bounds = match hi {
        Some(end) => Bounds::Below { end, inclusive, order },
        None => Bounds::Whole,
    };
    db.walk(py, Yield::Items, bounds, move |c| match &lo {
        Some(lo) => c.jump_upper(lo, Edge::Inclusive),
        None => c.first(),
    })
}

pub(super) fn prefix(db: &Database, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<RecordIterator> {
    let prefix = bytes_of(prefix, "prefix")?.into_owned();
    db.run(py, |db| match key_order(db, "prefix")? {
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
    db.walk(py, Yield::Items, Bounds::Prefix(prefix), move |c| c.jump_upper(&start, Edge::Inclusive))
}

pub(super) fn reversed(db: &Database, py: Python<'_>) -> PyResult<RecordIterator> {
    let order = db.run(py, |db| key_order(db, "reversed()"))?;
    db.walk(py, Yield::Keys, Bounds::Backward { start: None, order }, |c| c.last())
}

pub(super) fn process_first(db: &Database, py: Python<'_>, func: PyObject, writable: bool) -> PyResult<bool> {
    let (mut failure, guard) = (None, db.guard());
    let found = db.run_calling_back(py, |db| {
        db.process_first(
            if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
            &mut |key, value| {
                call_back(guard, &mut failure, |py| {
                    let args = (PyBytes::new(py, key), PyBytes::new(py, value));
                    action_of(&func.call1(py, args)?.into_bound(py))
                })
            },
        )
    })?;
    failure.map_or(Ok(found), Err)
}

pub(super) fn search<'py>(
    db: &Database,
    py: Python<'py>,
    mode: &str,
    pattern: &Bound<'_, PyAny>,
    capacity: usize,
) -> PyResult<Bound<'py, PyList>> {
    let mode: SearchMode = mode.parse().map_err(to_py)?;
    let as_str = pattern.is_instance_of::<PyString>();
    let pattern = bytes_of(pattern, "pattern")?;
    let keys = db.run(py, |db| db.search(mode, &pattern, capacity))?;
    if as_str {
        PyList::new(py, keys.iter().map(|k| String::from_utf8_lossy(k)))
    } else {
        PyList::new(py, keys.iter().map(|k| PyBytes::new(py, k)))
    }
}
