//! Cursors for Python: `kuradb.Iterator` (the cursor's own methods) and
//! `kuradb.RecordIterator` (what `for k in db`, `keys()`, `values()`,
//! `items()` and `range()` return).
//!
//! A cursor borrows its database, but a Python object cannot hold a borrow,
//! so the binding core's `Live` holds the cursor together with an `Arc` of the database it
//! borrows. The database keeps a weak reference to every [`Slot`] and empties
//! them all when it closes, so no cursor outlives an open database.

use std::cmp::Ordering;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::Cursor;

use crate::convert::bytes_of;
use crate::error::{not_open, to_py};

pub use kuradb_binding::cursor::Slot;

/// Runs `f` on the cursor of `slot` with the GIL released.
fn with_cursor<R: Send>(
    py: Python<'_>,
    slot: &Slot,
    f: impl FnOnce(&mut dyn Cursor) -> kuradb::Result<R> + Send,
) -> PyResult<R> {
    py.allow_threads(|| {
        let mut guard = slot.lock();
        let live = guard.as_mut().ok_or_else(not_open)?;
        live.with_cursor(f)
    })
    .map_err(to_py)
}

/// A cursor over the records of a database: position it with `first`,
/// `last`, `jump`, `jump_lower` or `jump_upper`, move with `next` and
/// `previous`, read with `get`, change with `set` and `remove`. Iterating it
/// yields `(key, value)` pairs from the current position on.
///
/// `last`, `jump_lower`, `jump_upper` and `previous` need an ordered database
/// (tree, skip); a hash database jumps only to existing keys.
#[pyclass(name = "Iterator", module = "kuradb", frozen)]
pub struct PyCursor {
    slot: Arc<Slot>,
}

impl PyCursor {
    pub fn new(slot: Arc<Slot>) -> PyCursor {
        PyCursor { slot }
    }
}

#[pymethods]
impl PyCursor {
    /// Moves to the first record.
    fn first(&self, py: Python<'_>) -> PyResult<()> {
        with_cursor(py, &self.slot, |c| c.first())
    }

    /// Moves to the last record.
    fn last(&self, py: Python<'_>) -> PyResult<()> {
        with_cursor(py, &self.slot, |c| c.last())
    }

    /// Moves to the record of `key` (in an ordered database, the first
    /// record at or after it).
    fn jump(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        with_cursor(py, &self.slot, |c| c.jump(&key))
    }

    /// Moves to the last record before `key` (or at it, if `inclusive`).
    #[pyo3(signature = (key, inclusive = false))]
    fn jump_lower(&self, py: Python<'_>, key: &Bound<'_, PyAny>, inclusive: bool) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        with_cursor(py, &self.slot, |c| {
            c.jump_lower(
                &key,
                if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive },
            )
        })
    }

    /// Moves to the first record after `key` (or at it, if `inclusive`).
    #[pyo3(signature = (key, inclusive = false))]
    fn jump_upper(&self, py: Python<'_>, key: &Bound<'_, PyAny>, inclusive: bool) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        with_cursor(py, &self.slot, |c| {
            c.jump_upper(
                &key,
                if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive },
            )
        })
    }

    /// Moves to the next record.
    fn next(&self, py: Python<'_>) -> PyResult<()> {
        with_cursor(py, &self.slot, |c| c.next())
    }

    /// Moves to the previous record.
    fn previous(&self, py: Python<'_>) -> PyResult<()> {
        with_cursor(py, &self.slot, |c| c.previous())
    }

    /// The record at the cursor as `(key, value)`, or None past the end.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let record = with_cursor(py, &self.slot, |c| c.get())?;
        record.map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])).transpose()
    }

    /// The key at the cursor, or None past the end.
    fn get_key<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = with_cursor(py, &self.slot, |c| c.get())?;
        Ok(record.map(|(k, _)| PyBytes::new(py, &k)))
    }

    /// The value at the cursor, or None past the end.
    fn get_value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = with_cursor(py, &self.slot, |c| c.get())?;
        Ok(record.map(|(_, v)| PyBytes::new(py, &v)))
    }

    /// Replaces the value of the record at the cursor.
    fn set(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = bytes_of(value, "value")?;
        with_cursor(py, &self.slot, |c| c.set(&value))
    }

    /// Removes the record at the cursor; the cursor moves to the next one.
    fn remove(&self, py: Python<'_>) -> PyResult<()> {
        with_cursor(py, &self.slot, |c| c.remove())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let record = with_cursor(py, &self.slot, step)?;
        record.map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])).transpose()
    }

    fn __repr__(&self) -> String {
        let open = self.slot.lock().is_some();
        format!("<kuradb.Iterator{}>", if open { "" } else { " (database closed)" })
    }
}

/// Reads the record at the cursor and moves past it.
fn step(c: &mut dyn Cursor) -> kuradb::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let record = c.get()?;
    if record.is_some() {
        c.next()?;
    }
    Ok(record)
}

/// What a [`RecordIterator`] yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Yield {
    Keys,
    Values,
    Items,
}

/// Where a [`RecordIterator`] stops, and which way it steps.
pub enum Bounds {
    /// Forward to the last record.
    Whole,
    /// Forward while the key is below the end (or at it, if inclusive) in
    /// the database's key order.
    Below { end: Vec<u8>, inclusive: bool, order: KeyComparator },
    /// Backward while the key is at or above the start (None: to the first
    /// record).
    Backward { start: Option<Vec<u8>>, order: KeyComparator },
    /// Forward while the key starts with the prefix (a lexical key order
    /// keeps such keys together).
    Prefix(Vec<u8>),
}

impl Bounds {
    /// Whether the record of `key` is past the bounds.
    fn passed(&self, key: &[u8]) -> bool {
        match self {
            Bounds::Whole => false,
            Bounds::Below { end, inclusive, order } => match order.compare(key, end) {
                Ordering::Less => false,
                Ordering::Equal => !inclusive,
                Ordering::Greater => true,
            },
            Bounds::Backward { start: Some(start), order } => order.compare(key, start) == Ordering::Less,
            Bounds::Backward { start: None, .. } => false,
            Bounds::Prefix(prefix) => !key.starts_with(prefix),
        }
    }

    fn backward(&self) -> bool {
        matches!(self, Bounds::Backward { .. })
    }
}

/// An iterator over keys, values or `(key, value)` items, from the first
/// record (or a range's end record) to the end of the database or the range.
#[pyclass(name = "RecordIterator", module = "kuradb", frozen)]
pub struct RecordIterator {
    slot: Arc<Slot>,
    yields: Yield,
    bounds: Bounds,
}

impl RecordIterator {
    pub fn new(slot: Arc<Slot>, yields: Yield, bounds: Bounds) -> RecordIterator {
        RecordIterator { slot, yields, bounds }
    }
}

#[pymethods]
impl RecordIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let bounds = &self.bounds;
        let record = with_cursor(py, &self.slot, |c| {
            let record = c.get()?;
            match record {
                Some((k, _)) if bounds.passed(&k) => return Ok(None),
                Some(_) if bounds.backward() => c.previous()?,
                Some(_) => c.next()?,
                None => {}
            }
            Ok(record)
        })?;
        let Some((k, v)) = record else { return Ok(None) };
        Ok(Some(match self.yields {
            Yield::Keys => PyBytes::new(py, &k).into_any(),
            Yield::Values => PyBytes::new(py, &v).into_any(),
            Yield::Items => PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?.into_any(),
        }))
    }

    /// Up to `max_records` records from where the iterator stands, as the
    /// buffers of two Arrow binary columns: `(count, key_offsets, keys,
    /// value_offsets, values)`, the offsets `count + 1` little-endian int32s;
    /// `None` at the end. One call per batch rather than a Python object per
    /// record, for building `pyarrow` arrays (`pa.Array.from_buffers`).
    fn next_columns<'py>(
        &self,
        py: Python<'py>,
        max_records: usize,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if max_records == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("max_records must be 1 or more"));
        }
        let bounds = &self.bounds;
        let columns = with_cursor(py, &self.slot, |c| {
            let mut columns = ArrowColumns::default();
            while columns.count < max_records {
                let Some((k, v)) = c.get()? else { break };
                if bounds.passed(&k) || !columns.push(&k, &v)? {
                    break;
                }
                if bounds.backward() {
                    c.previous()?;
                } else {
                    c.next()?;
                }
            }
            Ok(columns)
        })?;
        if columns.count == 0 {
            return Ok(None);
        }
        let items: [Bound<'py, PyAny>; 5] = [
            columns.count.into_pyobject(py)?.into_any(),
            PyBytes::new(py, &columns.key_offsets).into_any(),
            PyBytes::new(py, &columns.keys).into_any(),
            PyBytes::new(py, &columns.value_offsets).into_any(),
            PyBytes::new(py, &columns.values).into_any(),
        ];
        Ok(Some(PyTuple::new(py, items)?))
    }
}

/// Records gathered as two Arrow binary columns (int32 offsets).
struct ArrowColumns {
    count: usize,
    key_offsets: Vec<u8>,
    keys: Vec<u8>,
    value_offsets: Vec<u8>,
    values: Vec<u8>,
}

impl Default for ArrowColumns {
    fn default() -> ArrowColumns {
        let zero = 0i32.to_le_bytes().to_vec();
        ArrowColumns {
            count: 0,
            key_offsets: zero.clone(),
            keys: Vec::new(),
            value_offsets: zero,
            values: Vec::new(),
        }
    }
}

impl ArrowColumns {
    /// Adds a record; answers false, adding nothing, when a column would
    /// pass what int32 offsets reach (the batch ends before it).
    fn push(&mut self, key: &[u8], value: &[u8]) -> kuradb::Result<bool> {
        let end = |column: &Vec<u8>, more: &[u8]| i32::try_from(column.len() + more.len()).ok();
        let (Some(key_end), Some(value_end)) = (end(&self.keys, key), end(&self.values, value)) else {
            if self.count == 0 {
                return Err(kuradb::Error::new(
                    kuradb::ErrorKind::InvalidArgument,
                    "a record is larger than an Arrow binary column holds (2 GiB)",
                ));
            }
            return Ok(false);
        };
        self.keys.extend_from_slice(key);
        self.values.extend_from_slice(value);
        self.key_offsets.extend_from_slice(&key_end.to_le_bytes());
        self.value_offsets.extend_from_slice(&value_end.to_le_bytes());
        self.count += 1;
        Ok(true)
    }
}
