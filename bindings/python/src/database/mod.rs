//! `kuradb.DBM`: a [`PolyDbm`](kuradb::dbm::poly::PolyDbm) (with transactions: [`Db`]) for Python, with the `Dbm` methods one to one
//! and the dict protocol on top.
//!
//! The GIL is released around every call into the database, so Python
//! threads use one database in parallel; callbacks (`process`) take it back.
//!
//! PyO3 takes one `#[pymethods]` block per class (see Cargo.toml), so
//! [`methods`] holds every method's signature and docstring, each a call
//! into the module of its concern: [`open`] (opening, closing, what the
//! database says of itself), [`records`] (one record at a time), [`multi`]
//! (several records at once), [`iteration`] (cursors, walks, callbacks over
//! every record, search), [`expiry`] (times to live),
//! [`maintenance`] (count, rebuild, synchronize) and
//! [`export`] (to another database or a file).

mod expiry;
mod export;
mod iteration;
mod maintenance;
mod methods;
mod multi;
mod open;
mod records;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBool;

use kuradb::dbm::Action;
use kuradb::Result;
use kuradb_binding::handle::Db;

use kuradb_binding::guard::CallbackGuard;
use kuradb_binding::handle::OpenHandle;

use crate::convert::bytes_of;
use crate::cursor::{Bounds, RecordIterator, Slot, Yield};
use crate::error::{not_open, to_py};

pub(crate) use multi::pairs_of;

/// A database of any class (hash, tree, skip, …), chosen when it is opened.
#[pyclass(name = "DBM", module = "kuradb", frozen, subclass)]
pub struct Database {
    /// The open database with its cursors' slots and its callback guard (the
    /// binding core's). The guard also counts the calls that run Python
    /// callbacks under a record's lock (`process` and its kin) in progress;
    /// while any call is, no call keeps the GIL: see [`Database::run`]. An
    /// `AsyncDBM` shares the database, so closing fails while one is open.
    handle: OpenHandle,
    /// Whether calls release the GIL (the `release_gil` keyword of `open`).
    /// Written under the handle's write lock but read before a call takes
    /// the read lock: a call racing a reopen may keep or release the GIL as
    /// the other session asked, which changes only who waits, since calls
    /// running callbacks never keep it.
    release_gil: AtomicBool,
}

impl Database {
    /// A database object with nothing open.
    fn closed() -> Database {
        Database { handle: OpenHandle::default(), release_gil: AtomicBool::new(true) }
    }

    /// The callback guard of the database.
    fn guard(&self) -> &CallbackGuard {
        self.handle.guard()
    }

    /// Runs `f` on the open database, with the GIL released unless the
    /// database was opened with `release_gil=False`.
    ///
    /// Keeping the GIL while waiting for a record's lock deadlocks if the
    /// lock's holder needs the GIL: a callback holds its record's lock while
    /// its Python code runs, and that code gives the GIL up at every switch
    /// interval (or in `time.sleep`). So the GIL is kept only while no
    /// callback call is in progress; calls are counted with the GIL held, so
    /// none can start while a call that kept it runs. Every other holder of
    /// a record's lock finishes without the GIL. A wait for the handle itself
    /// (an `open` or `close` in progress, which may need the GIL for Ctrl-C)
    /// is done with it released too.
    pub(crate) fn run<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Db) -> Result<R> + Send,
    ) -> PyResult<R> {
        if !self.guard().is_running() && !self.release_gil.load(Ordering::Relaxed) {
            match self.handle.try_with(|db| f(db)) {
                Ok(done) => return done.map_err(to_py),
                Err(f) => return py.allow_threads(|| self.handle.with(f)).map_err(to_py),
            }
        }
        py.allow_threads(|| self.with(f)).map_err(to_py)
    }

    /// [`Database::run`] for a call whose `f` runs Python callbacks under a
    /// record's lock. It never keeps the GIL: between two callbacks it may
    /// wait for another record's lock, whose holder may be another thread's
    /// callback call waiting for the GIL.
    fn run_calling_back<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Db) -> Result<R> + Send,
    ) -> PyResult<R> {
        self.guard().count_running(|| py.allow_threads(|| self.with(f))).map_err(to_py)
    }

    /// Runs `f` on the open database, keeping the GIL.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Db) -> Result<R>) -> Result<R> {
        self.handle.with(|db| f(db))
    }

    /// The open database for an `AsyncDBM`'s workers; closing fails while
    /// they hold it.
    pub(crate) fn share(&self) -> Result<Arc<Db>> {
        self.handle.share()
    }

    /// A new transaction's slot, which `close` empties (aborting it).
    pub(crate) fn new_transaction(
        &self,
        py: Python<'_>,
        durability: kuradb::dbm::txn::CommitDurability,
    ) -> PyResult<Arc<kuradb_binding::txn::TransactionSlot>> {
        // Starting a view waits for the plain calls in flight: without the GIL.
        py.allow_threads(|| self.handle.begin(durability)).map_err(to_py)
    }

    /// A new snapshot's slot, which `close` empties.
    pub(crate) fn new_snapshot(&self, py: Python<'_>) -> PyResult<Arc<kuradb_binding::txn::SnapshotSlot>> {
        py.allow_threads(|| self.handle.snapshot()).map_err(to_py)
    }

    /// A new cursor's slot, which `close` empties.
    pub(crate) fn new_slot(&self, py: Python<'_>) -> PyResult<Arc<Slot>> {
        py.allow_threads(|| self.handle.new_cursor()).map_err(to_py)
    }

    /// A record iterator from the first record.
    fn records_from_first(&self, py: Python<'_>, yields: Yield) -> PyResult<RecordIterator> {
        let slot = self.new_slot(py)?;
        let start = Arc::clone(&slot);
        py.allow_threads(move || match start.lock().as_mut() {
            Some(live) => live.with_cursor(|c| c.first()),
            None => Err(not_open()),
        })
        .map_err(to_py)?;
        Ok(RecordIterator::new(slot, yields, Bounds::Whole))
    }
}

/// The value a Python callback returned, as what to do with the record.
pub(crate) fn action_of(result: &Bound<'_, PyAny>) -> PyResult<Action<'static>> {
    if result.is_none() {
        return Ok(Action::Keep);
    }
    if let Ok(b) = result.downcast::<PyBool>() {
        return Ok(if b.is_true() { Action::Keep } else { Action::Remove });
    }
    Ok(Action::Set(bytes_of(result, "the callback's result")?.into_owned().into()))
}

/// Calls a Python callback of the database of `guard` from inside it with
/// the GIL taken back; an exception is kept in `failure` and the record left
/// as it was.
pub(crate) fn call_back(
    guard: &CallbackGuard,
    failure: &mut Option<PyErr>,
    f: impl FnOnce(Python<'_>) -> PyResult<Action<'static>>,
) -> Action<'static> {
    if failure.is_some() {
        return Action::Keep;
    }
    Python::with_gil(|py| {
        let result = guard.mark_inside(|| f(py));
        result.unwrap_or_else(|e| {
            *failure = Some(e);
            Action::Keep
        })
    })
}
