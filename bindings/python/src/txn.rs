//! `kuradb.Transaction`, `kuradb.Batch`, `kuradb.Snapshot` and
//! `kuradb.Savepoint`: the database's transactions for Python, from
//! `DBM.transaction()`, `DBM.batch()` and `DBM.snapshot()`.
//!
//! A transaction or snapshot keeps its database with it in the binding
//! core's slot ([`kuradb_binding::txn`]), which closing the database
//! empties; a batch only gathers its writes until its commit. Commits (and
//! the device syncs they may wait for) run with the GIL released, and so
//! do reads, which may wait for a record's lock.

use std::sync::Arc;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use kuradb::dbm::txn::{CommitDurability, Savepoint};
use kuradb_binding::txn::{BatchOp, BatchOps, SnapshotSlot, TransactionSlot};

use crate::convert::{bytes_of, opt_bytes_of};
use crate::database::Database;
use crate::error::to_py;

/// The commit durability a Python string names: "none", "os" or "sync".
pub(crate) fn durability_of(name: &str) -> PyResult<CommitDurability> {
    match name {
        "none" => Ok(CommitDurability::Memory),
        "os" => Ok(CommitDurability::Os),
        "sync" => Ok(CommitDurability::Sync),
        _ => Err(PyValueError::new_err(format!(
            "durability must be \"none\", \"os\" or \"sync\", not {name:?}"
        ))),
    }
}

/// A serializable transaction: it reads the database as of its start plus
/// its own writes, and its commit applies its writes as one unit only if
/// no other commit changed what it read meanwhile, else raises
/// ConflictError and applies nothing. A context manager: `with
/// db.transaction() as tx:` commits on a normal exit and aborts (and
/// re-raises) on an exception. Dropping it unfinished aborts it.
#[pyclass(name = "Transaction", module = "kuradb", frozen)]
pub struct PyTransaction {
    slot: Arc<TransactionSlot>,
    durability: CommitDurability,
}

/// A point in a transaction's writes, from `Transaction.savepoint()`.
#[pyclass(name = "Savepoint", module = "kuradb", frozen)]
pub struct PySavepoint {
    pub(crate) point: Savepoint,
}

impl PyTransaction {
    pub(crate) fn begin(db: &Database, py: Python<'_>, durability: &str) -> PyResult<PyTransaction> {
        let durability = durability_of(durability)?;
        let slot = db.new_transaction(py, durability)?;
        Ok(PyTransaction { slot, durability })
    }

    fn get_bytes(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
        let key = bytes_of(key, "key")?;
        py.allow_threads(|| self.slot.with(|tx| tx.get(&key))).map_err(to_py)
    }
}

#[pymethods]
impl PyTransaction {
    /// The value of `key` as this transaction sees it, or `default`.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match self.get_bytes(py, key)? {
            Some(value) => Some(PyBytes::new(py, &value).into_any()),
            None => default,
        })
    }

    /// Sets `key` to `value` in this transaction.
    fn set(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        self.slot
            .with(|tx| {
                tx.set(&key, &value);
                Ok(())
            })
            .map_err(to_py)
    }

    /// Removes `key` in this transaction; answers whether it was there.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = bytes_of(key, "key")?;
        py.allow_threads(|| self.slot.with(|tx| tx.remove(&key))).map_err(to_py)
    }

    /// Appends `value` to `key`'s value, after `delim` if there was one.
    #[pyo3(signature = (key, value, delim = None))]
    fn append(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        delim: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default();
        py.allow_threads(|| self.slot.with(|tx| tx.append(&key, &value, &delim))).map_err(to_py)
    }

    /// Adds `delta` to `key`'s number (`initial` if absent); answers the new number.
    #[pyo3(signature = (key, delta = 1, initial = 0))]
    fn increment(&self, py: Python<'_>, key: &Bound<'_, PyAny>, delta: i64, initial: i64) -> PyResult<i64> {
        let key = bytes_of(key, "key")?;
        py.allow_threads(|| self.slot.with(|tx| tx.increment(&key, delta, initial))).map_err(to_py)
    }

    /// Every `(key, value)` this transaction sees, as a list (the whole
    /// database counts as read).
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = py.allow_threads(|| self.slot.with(|tx| tx.items())).map_err(to_py)?;
        let pairs: Vec<Bound<'py, PyTuple>> = items
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)]))
            .collect::<PyResult<_>>()?;
        PyList::new(py, pairs)
    }

    /// A point to roll back to with `rollback_to`: the writes made so far.
    fn savepoint(&self) -> PyResult<PySavepoint> {
        let point = self.slot.with(|tx| Ok(tx.savepoint())).map_err(to_py)?;
        Ok(PySavepoint { point })
    }

    /// Undoes the writes made since `savepoint`; what was read stays read.
    fn rollback_to(&self, savepoint: &PySavepoint) -> PyResult<()> {
        self.slot.with(|tx| tx.rollback_to(savepoint.point)).map_err(to_py)
    }

    /// Applies the writes as one unit, or raises ConflictError (and applies
    /// nothing) if another commit changed what this transaction read. The
    /// transaction is finished either way.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.slot.commit()).map_err(to_py)
    }

    /// Drops the writes and finishes the transaction (nothing if finished).
    fn abort(&self, py: Python<'_>) {
        py.allow_threads(|| self.slot.abort())
    }

    /// Whether the transaction is neither committed nor aborted (and its
    /// database open).
    #[getter]
    fn active(&self) -> bool {
        self.slot.is_active()
    }

    /// The commit's durability: "none", "os" or "sync".
    #[getter]
    fn durability(&self) -> &'static str {
        self.durability.name()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_bytes(py, key)? {
            Some(value) => Ok(PyBytes::new(py, &value)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set(key, value)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.remove(py, key)? {
            Ok(())
        } else {
            Err(PyKeyError::new_err(key.clone().unbind()))
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = bytes_of(key, "key")?;
        py.allow_threads(|| self.slot.with(|tx| tx.contains(&key))).map_err(to_py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits on a normal exit (unless already finished), aborts on an
    /// exception, which goes on.
    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exc_type {
            Some(t) if !t.is_none() => self.abort(py),
            _ if self.slot.is_active() => self.commit(py)?,
            _ => {}
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.slot.is_active() { "active" } else { "finished" };
        format!("<kuradb.Transaction {state} durability={:?}>", self.durability.name())
    }
}

/// Blind writes applied as one unit by `commit`: readers never see a part
/// of them, and a crash leaves them whole or absent. A context manager
/// that commits on a normal exit and discards the writes on an exception.
#[pyclass(name = "Batch", module = "kuradb", frozen)]
pub struct PyBatch {
    db: Py<Database>,
    ops: BatchOps,
    durability: CommitDurability,
}

impl PyBatch {
    pub(crate) fn new(db: Py<Database>, durability: &str) -> PyResult<PyBatch> {
        Ok(PyBatch { db, ops: BatchOps::new(), durability: durability_of(durability)? })
    }
}

#[pymethods]
impl PyBatch {
    /// Sets `key` to `value` at the commit.
    fn set(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let op = BatchOp::Set(bytes_of(key, "key")?.into_owned(), bytes_of(value, "value")?.into_owned());
        self.ops.push(op).map_err(to_py)
    }

    /// Removes `key` at the commit.
    fn remove(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.ops.push(BatchOp::Remove(bytes_of(key, "key")?.into_owned())).map_err(to_py)
    }

    /// Appends `value` to `key`'s value at the commit, after `delim` if there was one.
    #[pyo3(signature = (key, value, delim = None))]
    fn append(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        delim: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default().into_owned();
        let op = BatchOp::Append(
            bytes_of(key, "key")?.into_owned(),
            bytes_of(value, "value")?.into_owned(),
            delim,
        );
        self.ops.push(op).map_err(to_py)
    }

    /// Adds `delta` to `key`'s number (`initial` if absent) at the commit.
    #[pyo3(signature = (key, delta = 1, initial = 0))]
    fn increment(&self, key: &Bound<'_, PyAny>, delta: i64, initial: i64) -> PyResult<()> {
        self.ops.push(BatchOp::Increment(bytes_of(key, "key")?.into_owned(), delta, initial)).map_err(to_py)
    }

    /// Applies the writes as one unit; the batch is finished.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let durability = self.durability;
        let ops = &self.ops;
        self.db.get().run(py, |db| ops.commit(db, durability))
    }

    /// Drops the writes; the batch is finished.
    fn discard(&self) {
        self.ops.discard();
    }

    /// Whether writes can still be added.
    #[getter]
    fn active(&self) -> bool {
        self.ops.is_active()
    }

    /// The number of writes gathered.
    fn __len__(&self) -> usize {
        self.ops.len()
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set(key, value)
    }

    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.remove(key)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits on a normal exit (unless already finished), discards the
    /// writes on an exception, which goes on.
    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exc_type {
            Some(t) if !t.is_none() => self.discard(),
            _ if self.ops.is_active() => self.commit(py)?,
            _ => {}
        }
        Ok(false)
    }
}

/// A read view of the database at one commit: reads see that state while
/// writers go on. Iterating gives its keys, as a dict does. A context
/// manager that releases it on exit; `release()` does so at once, and so
/// does closing the database.
#[pyclass(name = "Snapshot", module = "kuradb", frozen)]
pub struct PySnapshot {
    slot: Arc<SnapshotSlot>,
}

impl PySnapshot {
    pub(crate) fn open(db: &Database, py: Python<'_>) -> PyResult<PySnapshot> {
        Ok(PySnapshot { slot: db.new_snapshot(py)? })
    }

    fn get_bytes(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
        let key = bytes_of(key, "key")?;
        py.allow_threads(|| self.slot.get(&key)).map_err(to_py)
    }
}

#[pymethods]
impl PySnapshot {
    /// The value of `key` in this view, or `default`.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match self.get_bytes(py, key)? {
            Some(value) => Some(PyBytes::new(py, &value).into_any()),
            None => default,
        })
    }

    /// Every `(key, value)` of this view, as a list, in the database's key
    /// order if it has one.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = py.allow_threads(|| self.slot.items()).map_err(to_py)?;
        let pairs: Vec<Bound<'py, PyTuple>> = items
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)]))
            .collect::<PyResult<_>>()?;
        PyList::new(py, pairs)
    }

    /// Every key of this view, as a list.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let keys = py.allow_threads(|| self.slot.keys()).map_err(to_py)?;
        PyList::new(py, keys.iter().map(|k| PyBytes::new(py, k)))
    }

    /// Every value of this view, as a list, in the order of its keys.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = py.allow_threads(|| self.slot.items()).map_err(to_py)?;
        PyList::new(py, items.iter().map(|(_, v)| PyBytes::new(py, v)))
    }

    /// Releases the view (the old values it kept); reads then fail.
    fn release(&self, py: Python<'_>) {
        use kuradb_binding::txn::Release;
        py.allow_threads(|| self.slot.release())
    }

    /// Whether the view is still held.
    #[getter]
    fn active(&self) -> bool {
        self.slot.is_active()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_bytes(py, key)? {
            Some(value) => Ok(PyBytes::new(py, &value)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_bytes(py, key)?.is_some())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let n = py.allow_threads(|| self.slot.count()).map_err(to_py)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// The keys of this view (read when the iteration starts).
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.keys(py)?.try_iter().map(Bound::into_any)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.release(py);
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.slot.is_active() { "active" } else { "released" };
        format!("<kuradb.Snapshot {state}>")
    }
}

/// Adds the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTransaction>()?;
    m.add_class::<PyBatch>()?;
    m.add_class::<PySnapshot>()?;
    m.add_class::<PySavepoint>()?;
    Ok(())
}
