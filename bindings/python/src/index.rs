//! `kuradb.Index` and `kuradb.IndexIterator`: a secondary index, in a file
//! (kuradb's `FileIndex`) or in memory (`MemIndex`) when the path is empty.
//!
//! An iterator keeps its position as the pair it is at, not as a Rust
//! cursor: each move makes a short-lived cursor, jumps to that pair and
//! steps from there. So an iterator borrows nothing across calls, pairs
//! added or removed meanwhile never invalidate it, and it holds only a
//! weak reference to the index, which closes whatever iterators remain.

use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use kuradb::index::{AnyIndex, IndexCursor};
use kuradb::ErrorKind;

use crate::convert::{bytes_of, params_of, FsPath};
use crate::error::to_py;

type Pair = (Vec<u8>, Vec<u8>);

fn closed() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the index is not open")
}

/// A secondary index: a set of (key, value) pairs in which a key may have
/// many values, kept in order. ``Index(path, writable=True, **params)``
/// opens or creates the index file at ``path`` (a tree file; the tree's
/// parameters apply, ``key_comparator`` being a pair comparator such as
/// ``"PairDecimalKeyComparator"``); an empty path (or None) makes an index in
/// memory. Keys and values are bytes or str (stored as UTF-8) and come
/// back as bytes. ``(key, value) in index`` checks a pair, ``len(index)``
/// counts them, iterating yields every pair in order; ``with`` closes it.
#[pyclass(name = "Index", module = "kuradb", frozen)]
pub struct PyIndex {
    open: RwLock<Option<Arc<AnyIndex>>>,
    writable: bool,
}

impl PyIndex {
    fn shared(&self) -> kuradb::Result<Arc<AnyIndex>> {
        self.open.read().as_ref().map(Arc::clone).ok_or_else(closed)
    }

    fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&AnyIndex) -> kuradb::Result<R> + Send,
    ) -> PyResult<R> {
        let open = self.shared().map_err(to_py)?;
        py.allow_threads(|| f(&open)).map_err(to_py)
    }

    fn iterator(&self) -> PyResult<PyIndexIterator> {
        let open = self.shared().map_err(to_py)?;
        Ok(PyIndexIterator { index: Arc::downgrade(&open), at: Mutex::new(Position::Unset) })
    }
}

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (path = None, writable = true, **params))]
    fn new(
        py: Python<'_>,
        path: Option<FsPath>,
        writable: bool,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyIndex> {
        let params = params_of(params)?;
        let path = path.map(|p| p.0).unwrap_or_default();
        let open = py
            .allow_threads(|| {
                AnyIndex::open(
                    &path,
                    if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
                    &params,
                )
            })
            .map_err(to_py)?;
        Ok(PyIndex { open: RwLock::new(Some(Arc::new(open))), writable })
    }

    /// Adds the pair (adding one already there changes nothing).
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (key, value) = (bytes_of(key, "key")?.into_owned(), bytes_of(value, "value")?.into_owned());
        self.with(py, |o| o.index().add(&key, &value))
    }

    /// Removes the pair; KeyError if it is not there.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?.into_owned(), bytes_of(value, "value")?.into_owned());
        if !self.with(py, |o| o.index().remove(&k, &v))? {
            return Err(PyKeyError::new_err((key.clone().unbind(), value.clone().unbind())));
        }
        Ok(())
    }

    /// Removes the pair if it is there; answers whether it was.
    fn discard(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (key, value) = (bytes_of(key, "key")?.into_owned(), bytes_of(value, "value")?.into_owned());
        self.with(py, |o| o.index().remove(&key, &value))
    }

    /// Whether the pair is there.
    fn check(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (key, value) = (bytes_of(key, "key")?.into_owned(), bytes_of(value, "value")?.into_owned());
        self.with(py, |o| o.index().check(&key, &value))
    }

    fn __contains__(&self, py: Python<'_>, pair: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let (key, value) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
        self.check(py, &key, &value)
    }

    /// The values of ``key`` in order, as bytes: at most ``max``, or all if 0.
    #[pyo3(signature = (key, max = 0))]
    fn get_values<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        max: usize,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let key = bytes_of(key, "key")?.into_owned();
        let values = self.with(py, |o| o.index().get_values(&key, max))?;
        Ok(values.iter().map(|v| PyBytes::new(py, v)).collect())
    }

    /// The number of pairs.
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |o| o.index().count())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.count(py)? as usize)
    }

    /// Removes every pair.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |o| o.index().clear())
    }

    /// Rewrites the index compactly.
    fn rebuild(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |o| o.rebuild())
    }

    /// Makes every change reach the OS (or the device, if ``hard``); an
    /// index in memory has nothing to write.
    #[pyo3(signature = (hard = false))]
    fn synchronize(&self, py: Python<'_>, hard: bool) -> PyResult<()> {
        self.with(py, |o| {
            o.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
        })
    }

    /// Whether the index is open.
    fn is_open(&self) -> bool {
        self.open.read().is_some()
    }

    /// Whether the index was opened for writing.
    fn is_writable(&self) -> bool {
        self.writable && self.is_open()
    }

    /// Whether the index lives in memory (it was opened with an empty path).
    fn is_in_memory(&self) -> PyResult<bool> {
        Ok(matches!(*self.shared().map_err(to_py)?, AnyIndex::Mem(_)))
    }

    /// The path of the index file ("" for an index in memory).
    fn path(&self) -> PyResult<String> {
        Ok(self.shared().map_err(to_py)?.path().map(|p| p.display().to_string()).unwrap_or_default())
    }

    /// Writes everything back and closes the index; its iterators stop.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(mut open) = self.open.write().take() else { return Err(to_py(closed())) };
        py.allow_threads(|| {
            // An iterator holds the index only for the moment of a move.
            loop {
                match Arc::try_unwrap(open) {
                    Ok(index) => return index.close(),
                    Err(shared) => {
                        open = shared;
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            }
        })
        .map_err(to_py)
    }

    /// An iterator over the pairs, not yet positioned.
    fn make_iterator(&self) -> PyResult<PyIndexIterator> {
        self.iterator()
    }

    /// Every pair in order, from the first.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIndexIterator> {
        let it = self.iterator()?;
        it.first(py)?;
        Ok(it)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        if self.is_open() {
            self.close(py)?;
        }
        Ok(())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.shared() {
            Err(_) => "<kuradb.Index: closed>".to_string(),
            Ok(open) => {
                let count = py.allow_threads(|| open.index().count()).unwrap_or(0);
                let place = self.path().unwrap_or_default();
                let place = if place.is_empty() { "memory".to_string() } else { format!("path={place:?}") };
                format!("<kuradb.Index: {place} count={count}>")
            }
        }
    }
}

/// Where an iterator is.
#[derive(Clone)]
enum Position {
    Unset,
    At(Pair),
    Nowhere,
}

/// An iterator over an index's pairs in order: ``first``, ``last``,
/// ``jump(key, value=None)`` position it, ``next`` and ``previous`` move
/// it, ``get`` answers the pair there (``None`` if none). Iterating it
/// yields ``(key, value)`` pairs from its position on.
#[pyclass(name = "IndexIterator", module = "kuradb", frozen)]
pub struct PyIndexIterator {
    index: Weak<AnyIndex>,
    at: Mutex<Position>,
}

impl PyIndexIterator {
    /// Runs `f` on a fresh cursor of the index and stores the pair it
    /// leaves the cursor at; `f` answers false to leave the iterator
    /// nowhere without asking the cursor.
    fn seek(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Position, &mut dyn IndexCursor<[u8], [u8]>) -> kuradb::Result<bool> + Send,
    ) -> PyResult<Option<Pair>> {
        let index = self.index.upgrade().ok_or_else(closed).map_err(to_py)?;
        py.allow_threads(|| {
            let mut at = self.at.lock();
            let mut cursor = index.index().cursor()?;
            let found = if f(&at, cursor.as_mut())? { cursor.get()? } else { None };
            *at = found.clone().map_or(Position::Nowhere, Position::At);
            Ok(found)
        })
        .map_err(to_py)
    }
}

/// Puts `cursor` at the pair `at` holds, or at the one after it if it has
/// gone; answers whether it was still there.
fn relocate(at: &Position, cursor: &mut dyn IndexCursor<[u8], [u8]>) -> kuradb::Result<Option<bool>> {
    let Position::At((key, value)) = at else { return Ok(None) };
    cursor.jump(key, Some(value))?;
    Ok(Some(cursor.get()?.is_some_and(|(k, v)| k == *key && v == *value)))
}

#[pymethods]
impl PyIndexIterator {
    /// Moves to the first pair.
    fn first(&self, py: Python<'_>) -> PyResult<()> {
        self.seek(py, |_, c| c.first().map(|()| true)).map(drop)
    }

    /// Moves to the last pair.
    fn last(&self, py: Python<'_>) -> PyResult<()> {
        self.seek(py, |_, c| c.last().map(|()| true)).map(drop)
    }

    /// Moves to the first pair at or after (key, value); with no value, to
    /// the first pair of key.
    #[pyo3(signature = (key, value = None))]
    fn jump(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let key = bytes_of(key, "key")?.into_owned();
        let value = value.map(|v| bytes_of(v, "value").map(|v| v.into_owned())).transpose()?;
        self.seek(py, |_, c| c.jump(&key, value.as_deref()).map(|()| true)).map(drop)
    }

    /// Moves to the next pair (an iterator that is nowhere stays there).
    fn next(&self, py: Python<'_>) -> PyResult<()> {
        self.seek(py, |at, c| match relocate(at, c)? {
            Some(true) => c.next().map(|()| true),
            // Gone: the cursor already stands at the pair after it.
            Some(false) => Ok(true),
            None => Ok(false),
        })
        .map(drop)
    }

    /// Moves to the previous pair (an iterator that is nowhere stays there).
    fn previous(&self, py: Python<'_>) -> PyResult<()> {
        self.seek(py, |at, c| match relocate(at, c)? {
            // Gone, and nothing after it: the last pair is before it.
            Some(_) if c.get()?.is_none() => c.last().map(|()| true),
            Some(_) => c.previous().map(|()| true),
            None => Ok(false),
        })
        .map(drop)
    }

    /// The pair at the position, as (key, value) bytes, or None.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let found = self.seek(py, |at, c| relocate(at, c).map(|placed| placed.is_some()))?;
        found.map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])).transpose()
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let pair = self.get(py)?;
        if pair.is_some() {
            self.next(py)?;
        }
        Ok(pair)
    }
}
