//! `kuradb.AsyncTransaction`, `kuradb.AsyncBatch` and
//! `kuradb.AsyncSnapshot`: the database's transactions for an `AsyncDBM`,
//! from `AsyncDBM.transaction()`, `.batch()` and `.snapshot()`.
//!
//! They hold the same core slots as `kuradb.Transaction` and its kin
//! ([`crate::txn`]); what may wait (a read, which may wait for a record's
//! lock, and a commit, which may wait for the device) is queued on the
//! `AsyncDBM`'s workers and answers a `kuradb.Future`, so the event loop
//! never blocks on it. What only gathers (a transaction's `set`, a batch's
//! writes) or drops runs at once. Each is an async context manager.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use kuradb::dbm::txn::CommitDurability;
use kuradb_binding::handle::Db;
use kuradb_binding::txn::{BatchOp, BatchOps, Release, SnapshotSlot, TransactionSlot};

use crate::async_dbm::AsyncDatabase;
use crate::convert::{bytes_of, opt_bytes_of};
use crate::error::to_py;
use crate::future::{Answer, PyFuture, Shape};
use crate::txn::{durability_of, PySavepoint};

/// An asyncio future of the running loop already holding `value`: what
/// `__aenter__` and an `__aexit__` with nothing to wait for answer.
fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    future.call_method1("set_result", (value,))?;
    Ok(future)
}

/// Queues `f` on the workers of `adb`.
fn run<T>(
    adb: &Py<AsyncDatabase>,
    shape: Shape,
    f: impl FnOnce() -> kuradb::Result<T> + Send + 'static,
) -> PyResult<PyFuture>
where
    T: Into<Answer> + Send + 'static,
{
    adb.get().queue(shape, move |workers| workers.execute(move |_: &Db| f()))
}

/// A serializable transaction of an AsyncDBM's database: as
/// kuradb.Transaction, but `get`, `remove`, `append`, `increment`, `items`,
/// `contains`, `commit` and `abort` answer kuradb.Futures to await (await
/// each before the next call). `async with adbm.transaction() as tx:`
/// commits on a normal exit and aborts (the exception goes on) otherwise.
#[pyclass(name = "AsyncTransaction", module = "kuradb", frozen)]
pub struct AsyncTransaction {
    adb: Py<AsyncDatabase>,
    slot: Arc<TransactionSlot>,
    durability: CommitDurability,
}

impl AsyncTransaction {
    pub(crate) fn begin(adb: &Bound<'_, AsyncDatabase>, durability: &str) -> PyResult<AsyncTransaction> {
        let durability = durability_of(durability)?;
        if adb.get().is_closed() {
            return Err(to_py(closed()));
        }
        let slot = adb.get().database.get().new_transaction(adb.py(), durability)?;
        Ok(AsyncTransaction { adb: adb.clone().unbind(), slot, durability })
    }

    fn on<T>(
        &self,
        f: impl FnOnce(&mut kuradb::dbm::txn::Transaction<'_, kuradb::dbm::poly::PolyDbm>) -> kuradb::Result<T>
            + Send
            + 'static,
    ) -> PyResult<PyFuture>
    where
        T: Into<Answer> + Send + 'static,
    {
        let slot = Arc::clone(&self.slot);
        run(&self.adb, Shape::Plain, move || slot.with(f))
    }
}

fn closed() -> kuradb::Error {
    kuradb::Error::new(kuradb::ErrorKind::Infeasible, "the AsyncDBM is closed: it takes no more operations")
}

#[pymethods]
impl AsyncTransaction {
    /// The value of `key` as this transaction sees it, or None.
    fn get(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.on(move |tx| tx.get(&key))
    }

    /// Whether `key` has a record as this transaction sees it.
    fn contains(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.on(move |tx| tx.contains(&key))
    }

    /// Sets `key` to `value` in this transaction, at once (nothing to await).
    fn set(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        py.allow_threads(|| {
            self.slot.with(|tx| {
                tx.set(&key, &value);
                Ok(())
            })
        })
        .map_err(to_py)
    }

    /// Removes `key` in this transaction; the result is whether it was there.
    fn remove(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.on(move |tx| tx.remove(&key))
    }

    /// Appends `value` to `key`'s value, after `delim` if there was one.
    #[pyo3(signature = (key, value, delim = None))]
    fn append(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        delim: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        let value = bytes_of(value, "value")?.into_owned();
        let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default().into_owned();
        self.on(move |tx| tx.append(&key, &value, &delim))
    }

    /// Adds `delta` to `key`'s number (`initial` if absent); the result is the new number.
    #[pyo3(signature = (key, delta = 1, initial = 0))]
    fn increment(&self, key: &Bound<'_, PyAny>, delta: i64, initial: i64) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.on(move |tx| tx.increment(&key, delta, initial))
    }

    /// Every `(key, value)` this transaction sees, as a list.
    fn items(&self) -> PyResult<PyFuture> {
        self.on(|tx| tx.items())
    }

    /// A point to roll back to with `rollback_to`: the writes made so far.
    fn savepoint(&self, py: Python<'_>) -> PyResult<PySavepoint> {
        let point = py.allow_threads(|| self.slot.with(|tx| Ok(tx.savepoint()))).map_err(to_py)?;
        Ok(PySavepoint { point })
    }

    /// Undoes the writes made since `savepoint`, at once; what was read stays read.
    fn rollback_to(&self, py: Python<'_>, savepoint: &PySavepoint) -> PyResult<()> {
        let point = savepoint.point;
        py.allow_threads(|| self.slot.with(|tx| tx.rollback_to(point))).map_err(to_py)
    }

    /// Applies the writes as one unit on a worker; the future raises
    /// ConflictError (nothing applied) if another commit changed what this
    /// transaction read. The transaction is finished either way.
    fn commit(&self) -> PyResult<PyFuture> {
        let slot = Arc::clone(&self.slot);
        run(&self.adb, Shape::Plain, move || slot.commit())
    }

    /// Drops the writes and finishes the transaction (nothing if finished).
    fn abort(&self) -> PyResult<PyFuture> {
        let slot = Arc::clone(&self.slot);
        run(&self.adb, Shape::Plain, move || {
            slot.abort();
            Ok(())
        })
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

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready(slf.py(), slf.clone().into_any())
    }

    /// Commits on a normal exit (unless already finished), aborts on an
    /// exception, which goes on; either way an awaitable.
    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: Option<Bound<'py, PyAny>>,
        _exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let future = match exc_type {
            Some(t) if !t.is_none() => {
                // Even with the AsyncDBM closed, the exception goes on and
                // the transaction is aborted.
                if this.adb.get().is_closed() {
                    py.allow_threads(|| this.slot.abort());
                    return ready(py, false.into_pyobject(py)?.to_owned().into_any());
                }
                this.abort()?
            }
            _ if this.slot.is_active() => this.commit()?,
            _ => return ready(py, py.None().into_bound(py)),
        };
        Ok(Bound::new(py, future)?.into_any())
    }

    fn __repr__(&self) -> String {
        let state = if self.slot.is_active() { "active" } else { "finished" };
        format!("<kuradb.AsyncTransaction {state} durability={:?}>", self.durability.name())
    }
}

/// Blind writes of an AsyncDBM's database applied as one unit by `commit`,
/// which answers a kuradb.Future; the writes gather at once. `async with
/// adbm.batch() as b:` commits on a normal exit and discards the writes on
/// an exception.
#[pyclass(name = "AsyncBatch", module = "kuradb", frozen)]
pub struct AsyncBatch {
    adb: Py<AsyncDatabase>,
    ops: Arc<BatchOps>,
    durability: CommitDurability,
}

impl AsyncBatch {
    pub(crate) fn new(adb: &Bound<'_, AsyncDatabase>, durability: &str) -> PyResult<AsyncBatch> {
        Ok(AsyncBatch {
            adb: adb.clone().unbind(),
            ops: Arc::new(BatchOps::new()),
            durability: durability_of(durability)?,
        })
    }
}

#[pymethods]
impl AsyncBatch {
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

    /// Applies the writes as one unit on a worker; the batch is finished.
    fn commit(&self) -> PyResult<PyFuture> {
        let (ops, durability) = (Arc::clone(&self.ops), self.durability);
        self.adb
            .get()
            .queue(Shape::Plain, move |workers| workers.execute(move |db: &Db| ops.commit(db, durability)))
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

    fn __len__(&self) -> usize {
        self.ops.len()
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready(slf.py(), slf.clone().into_any())
    }

    /// Commits on a normal exit (unless already finished), discards the
    /// writes on an exception, which goes on; either way an awaitable.
    #[pyo3(signature = (exc_type, _exc = None, _tb = None))]
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        exc_type: Option<Bound<'py, PyAny>>,
        _exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        match exc_type {
            Some(t) if !t.is_none() => this.discard(),
            _ if this.ops.is_active() => return Ok(Bound::new(py, this.commit()?)?.into_any()),
            _ => {}
        }
        ready(py, py.None().into_bound(py))
    }
}

/// A read view of an AsyncDBM's database at one commit: as
/// kuradb.Snapshot, but its reads answer kuradb.Futures. `async with
/// adbm.snapshot() as view:` releases it on exit; so does `release()`.
#[pyclass(name = "AsyncSnapshot", module = "kuradb", frozen)]
pub struct AsyncSnapshot {
    adb: Py<AsyncDatabase>,
    slot: Arc<SnapshotSlot>,
}

impl AsyncSnapshot {
    pub(crate) fn open(adb: &Bound<'_, AsyncDatabase>) -> PyResult<AsyncSnapshot> {
        if adb.get().is_closed() {
            return Err(to_py(closed()));
        }
        let slot = adb.get().database.get().new_snapshot(adb.py())?;
        Ok(AsyncSnapshot { adb: adb.clone().unbind(), slot })
    }

    fn on<T>(&self, f: impl FnOnce(&SnapshotSlot) -> kuradb::Result<T> + Send + 'static) -> PyResult<PyFuture>
    where
        T: Into<Answer> + Send + 'static,
    {
        let slot = Arc::clone(&self.slot);
        run(&self.adb, Shape::Plain, move || f(&slot))
    }
}

#[pymethods]
impl AsyncSnapshot {
    /// The value of `key` in this view, or None.
    fn get(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.on(move |s| s.get(&key))
    }

    /// Every `(key, value)` of this view, as a list, in the database's key
    /// order if it has one.
    fn items(&self) -> PyResult<PyFuture> {
        self.on(|s| s.items())
    }

    /// Every key of this view, as a list.
    fn keys(&self) -> PyResult<PyFuture> {
        self.on(|s| s.keys())
    }

    /// Every value of this view, as a list, in the order of its keys.
    fn values(&self) -> PyResult<PyFuture> {
        self.on(|s| Ok(s.items()?.into_iter().map(|(_, v)| v).collect::<Vec<_>>()))
    }

    /// The number of records in this view.
    fn count(&self) -> PyResult<PyFuture> {
        self.on(|s| s.count().map(|n| i64::try_from(n).unwrap_or(i64::MAX)))
    }

    /// Releases the view at once; reads then fail.
    fn release(&self, py: Python<'_>) {
        py.allow_threads(|| self.slot.release())
    }

    /// Whether the view is still held.
    #[getter]
    fn active(&self) -> bool {
        self.slot.is_active()
    }

    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        ready(slf.py(), slf.clone().into_any())
    }

    #[pyo3(signature = (*_args))]
    fn __aexit__<'py>(slf: &Bound<'py, Self>, _args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        slf.get().release(py);
        ready(py, py.None().into_bound(py))
    }

    fn __repr__(&self) -> String {
        let state = if self.slot.is_active() { "active" } else { "released" };
        format!("<kuradb.AsyncSnapshot {state}>")
    }
}

/// Adds the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AsyncTransaction>()?;
    m.add_class::<AsyncBatch>()?;
    m.add_class::<AsyncSnapshot>()?;
    Ok(())
}
