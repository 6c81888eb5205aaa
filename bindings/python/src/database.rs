//! `kuradb.DBM`: an [`PolyDbm`] for Python, with the `Dbm` methods one to one
//! and the dict protocol on top.
//!
//! The GIL is released around every call into the database, so Python
//! threads use one database in parallel; callbacks (`process`) take it back.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};

use kuradb::dbm::poly::DbmClass;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{
    flat_records, Access, Action, Dbm, Desired, Edge, Expected, SearchMode, INCREMENT_UNCHANGED,
};
use kuradb::{ErrorKind, Result};

use kuradb_binding::guard::CallbackGuard;
use kuradb_binding::synchronize::synchronize_with;

use crate::convert::{bytes_of, opt_bytes_of, params_of, FsPath};
use crate::cursor::{Bounds, Live, PyCursor, RecordIterator, Slot, Yield};
use crate::error::{not_open, to_py};
use crate::ordered::key_order;
use crate::reference_api::{io_error, write_file, ANY_DATA};

/// A database of any class (hash, tree, skip, …), chosen when it is opened.
#[pyclass(name = "DBM", module = "kuradb", frozen, subclass)]
pub struct Database {
    /// The open database; operations hold the read lock, `open` and `close`
    /// the write lock.
    db: RwLock<Option<Arc<PolyDbm>>>,
    /// Every cursor made since opening, emptied on close.
    cursors: Mutex<Vec<Weak<Slot>>>,
    /// How many open `AsyncDBM`s share the database; `close` refuses while any do.
    async_users: AtomicUsize,
    /// Counts the calls that run Python callbacks under a record's lock
    /// (`process` and its kin) in progress, and marks the threads inside a
    /// callback (the binding core's guard). While any call is, no call
    /// keeps the GIL: see [`Database::run`].
    guard: CallbackGuard,
    /// Whether calls release the GIL (the `release_gil` keyword of `open`).
    /// Written only under the write lock of `db`, so a call holding the read
    /// lock sees the value of the session it runs in.
    release_gil: AtomicBool,
}

impl Database {
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
        f: impl FnOnce(&PolyDbm) -> Result<R> + Send,
    ) -> PyResult<R> {
        if !self.guard.is_running() {
            if let Some(guard) = self.db.try_read_recursive() {
                if !self.release_gil.load(Ordering::Relaxed) {
                    self.check_not_in_callback().map_err(to_py)?;
                    return f(guard.as_deref().ok_or_else(not_open).map_err(to_py)?).map_err(to_py);
                }
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
        f: impl FnOnce(&PolyDbm) -> Result<R> + Send,
    ) -> PyResult<R> {
        self.guard.count_running(|| py.allow_threads(|| self.with(f))).map_err(to_py)
    }

    /// Fails if this thread is inside one of this database's callbacks.
    fn check_not_in_callback(&self) -> Result<()> {
        self.guard.check()
    }

    /// Runs `f` on the open database, keeping the GIL.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&PolyDbm) -> Result<R>) -> Result<R> {
        self.check_not_in_callback()?;
        let guard = self.db.read_recursive();
        f(guard.as_deref().ok_or_else(not_open)?)
    }

    /// The open database for an `AsyncDBM`'s workers, counted so `close`
    /// refuses until [`Database::unshare`] says the `AsyncDBM` is done.
    pub(crate) fn share(&self) -> Result<Arc<PolyDbm>> {
        self.check_not_in_callback()?;
        let guard = self.db.read_recursive();
        let db = guard.as_ref().ok_or_else(not_open)?;
        self.async_users.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::clone(db))
    }

    /// Ends one [`Database::share`].
    pub(crate) fn unshare(&self) {
        self.async_users.fetch_sub(1, Ordering::SeqCst);
    }

    /// A new cursor's slot, registered so `close` can empty it.
    pub(crate) fn new_slot(&self, py: Python<'_>) -> PyResult<Arc<Slot>> {
        self.check_not_in_callback().map_err(to_py)?;
        py.allow_threads(|| {
            let guard = self.db.read_recursive();
            let db = guard.as_ref().ok_or_else(not_open)?;
            let slot = Arc::new(Mutex::new(Some(Live::open(Arc::clone(db))?)));
            let mut cursors = self.cursors.lock();
            if cursors.len() >= 64 && cursors.len().is_power_of_two() {
                cursors.retain(|w| w.strong_count() > 0);
            }
            cursors.push(Arc::downgrade(&slot));
            Ok(slot)
        })
        .map_err(to_py)
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

#[pymethods]
impl Database {
    /// A database object; `open` opens it, or give the same arguments here.
    #[new]
    #[pyo3(signature = (path = None, writable = false, *, release_gil = true, **params))]
    fn new(
        py: Python<'_>,
        path: Option<FsPath>,
        writable: bool,
        release_gil: bool,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Database> {
        let db = Database {
            db: RwLock::new(None),
            cursors: Mutex::new(Vec::new()),
            async_users: AtomicUsize::new(0),
            guard: CallbackGuard::default(),
            release_gil: AtomicBool::new(true),
        };
        if let Some(path) = path {
            db.open(py, path, writable, release_gil, params)?;
        }
        Ok(db)
    }

    /// Opens or creates the database at `path`. A file this process already
    /// holds open for writing (or holds open at all, to open it for writing)
    /// raises WouldBlockError at once, and so does a file another process
    /// holds (the message names that process), unless asked to wait:
    /// wait=True waits as long as it takes, lock_timeout=SECONDS at most that
    /// long, and Ctrl-C ends a wait. Every parameter of PolyDbm
    /// is a keyword: dbm (hash, tree, skip, …), file, block_size,
    /// access_options, num_buckets, align_pow, cache_buckets, update_mode,
    /// max_page_size, max_cached_pages, key_comparator, step_unit, max_level,
    /// reducer, wait, no_wait, lock_timeout (seconds), no_lock, truncate, …; bools become true/false and
    /// numbers their decimal text. An unknown parameter, or a value of the
    /// wrong type, raises InvalidArgumentError naming it.
    ///
    /// `release_gil` (default True) lets other Python threads run while a
    /// call works in the database. False keeps the GIL through every
    /// record operation, as the reference's module does without its
    /// `concurrent` flag: a few hundred nanoseconds less per call, at the
    /// price of Python threads taking turns (cursors, `export` and
    /// `restore` release it either way).
    #[pyo3(signature = (path, writable = false, *, release_gil = true, **params))]
    fn open(
        &self,
        py: Python<'_>,
        path: FsPath,
        writable: bool,
        release_gil: bool,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let params = params_of(params)?;
        // A wait for another process's lock ends on Ctrl-C: between tries it
        // runs Python's signal handlers, and the exception they raise is the
        // one this call raises.
        let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
        let slot = raised.clone();
        let opened = py.allow_threads(|| {
            let interrupted = move || {
                Python::with_gil(|py| match py.check_signals() {
                    Ok(()) => false,
                    Err(err) => {
                        *slot.lock() = Some(err);
                        true
                    }
                })
            };
            kuradb::file::with_lock_interrupt(interrupted, || {
                let mut guard = self.db.write();
                if guard.is_some() {
                    return Err(kuradb::Error::new(ErrorKind::Infeasible, "the database is already open"));
                }
                *guard = Some(Arc::new(PolyDbm::open(
                    &path,
                    if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
                    &params,
                )?));
                self.release_gil.store(release_gil, Ordering::Relaxed);
                Ok(())
            })
        });
        if let Some(err) = raised.lock().take() {
            return Err(err);
        }
        opened.map_err(to_py)
    }

    /// Closes the database (a closed one stays closed); its iterators stop
    /// working. Not allowed inside a `process` callback.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.check_not_in_callback().map_err(to_py)?;
        py.allow_threads(|| {
            let mut guard = self.db.write();
            // `share` counts under the read lock, so the count is settled here.
            if guard.is_some() && self.async_users.load(Ordering::SeqCst) > 0 {
                return Err(kuradb::Error::new(
                    ErrorKind::Infeasible,
                    "the database is in use by an open AsyncDBM: close the AsyncDBM first",
                ));
            }
            let Some(db) = guard.take() else { return Ok(()) };
            self.release_gil.store(true, Ordering::Relaxed);
            drop(guard);
            for slot in self.cursors.lock().drain(..) {
                if let Some(slot) = slot.upgrade() {
                    slot.lock().take();
                }
            }
            match Arc::try_unwrap(db) {
                Ok(db) => db.close(),
                // Unreachable: only the lock and the emptied slots held it.
                Err(_) => Err(kuradb::Error::new(ErrorKind::Infeasible, "the database is still in use")),
            }
        })
        .map_err(to_py)
    }

    /// Whether the database is open.
    fn is_open(&self) -> bool {
        self.db.read_recursive().is_some()
    }

    /// The value of `key` as bytes, or `default` if there is none.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let key = bytes_of(key, "key")?;
        let value = self.run(py, |db| db.get(&key))?;
        Ok(match value {
            Some(v) => Some(PyBytes::new(py, &v).into_any()),
            None => default,
        })
    }

    /// The value of `key` decoded as UTF-8, or `default` if there is none.
    #[pyo3(signature = (key, default = None))]
    fn get_str<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let key = bytes_of(key, "key")?;
        let value = self.run(py, |db| db.get(&key))?;
        Ok(match value {
            Some(v) => Some(
                PyString::new(py, std::str::from_utf8(&v).map_err(|e| PyValueError::new_err(e.to_string()))?)
                    .into_any(),
            ),
            None => default,
        })
    }

    /// Sets the value of `key`; with `overwrite=False` an existing record is
    /// kept and DuplicationError raised.
    #[pyo3(signature = (key, value, overwrite = true))]
    fn set(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        overwrite: bool,
    ) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        self.run(py, |db| if overwrite { db.set(&key, &value) } else { db.insert(&key, &value) })
    }

    /// Removes the record of `key`; answers whether there was one.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = bytes_of(key, "key")?;
        self.run(py, |db| db.remove(&key))
    }

    /// Appends `value` to the value of `key` with `delim` between (or sets
    /// it, if there is no record).
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
        self.run(py, |db| db.append(&key, &value, &delim))
    }

    /// Sets `key` to `desired` if its value is `expected` (None: absent;
    /// a desired None removes it); answers whether it did.
    #[pyo3(signature = (key, expected, desired))]
    fn compare_exchange(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        expected: Option<Bound<'_, PyAny>>,
        desired: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let key = bytes_of(key, "key")?;
        let expected = opt_bytes_of(&expected, "expected")?;
        let desired = opt_bytes_of(&desired, "desired")?;
        self.run(py, |db| db.compare_exchange(&key, expected.as_deref(), desired.as_deref()))
    }

    /// Adds `delta` to the 8-byte big-endian number of `key` (starting from
    /// `initial` if absent) and answers the sum; `delta=None` only reads it.
    #[pyo3(signature = (key, delta = Some(1), initial = 0))]
    fn increment(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        delta: Option<i64>,
        initial: i64,
    ) -> PyResult<i64> {
        let key = bytes_of(key, "key")?;
        let delta = delta.unwrap_or(INCREMENT_UNCHANGED);
        self.run(py, |db| db.increment(&key, delta, initial))
    }

    /// The values of `keys` that exist, as a dict from each key as given.
    fn get_multi<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        let objects: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
        let bytes = objects.iter().map(|k| bytes_of(k, "key")).collect::<PyResult<Vec<_>>>()?;
        let refs: Vec<&[u8]> = bytes.iter().map(|b| b.as_ref()).collect();
        let values = self.run(py, |db| db.get_multi(&refs))?;
        let out = PyDict::new(py);
        for (key, value) in objects.iter().zip(values) {
            if let Some(v) = value {
                out.set_item(key, PyBytes::new(py, &v))?;
            }
        }
        Ok(out)
    }

    /// Sets every record of `records` (a mapping, or pairs) and of the
    /// keyword arguments, atomically; with `overwrite=False` nothing is set
    /// if any key exists.
    #[pyo3(signature = (records = None, overwrite = true, **kwargs))]
    fn set_multi(
        &self,
        py: Python<'_>,
        records: Option<&Bound<'_, PyAny>>,
        overwrite: bool,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let pairs = pairs_of(records, kwargs)?;
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
        self.run(py, |db| if overwrite { db.set_multi(&refs) } else { db.insert_multi(&refs) })
    }

    /// Removes the records of `keys`, atomically; answers how many existed.
    fn remove_multi(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<usize> {
        let objects: Vec<Bound<'_, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
        let bytes = objects.iter().map(|k| bytes_of(k, "key")).collect::<PyResult<Vec<_>>>()?;
        let refs: Vec<&[u8]> = bytes.iter().map(|b| b.as_ref()).collect();
        self.run(py, |db| db.remove_multi(&refs))
    }

    /// Applies `func` to the record of `key` under its lock. `func(value)`
    /// gets the value as bytes, or None if there is no record, and returns
    /// None (or True) to leave the record as it is, False to remove it, or
    /// bytes or str to set it. An exception from `func` leaves the record
    /// and is raised by `process`. `func` runs under the record's lock, so it
    /// must not use the database: such a call raises InfeasibleError.
    #[pyo3(signature = (key, func, writable = true))]
    fn process(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        func: PyObject,
        writable: bool,
    ) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let (mut failure, guard) = (None, &self.guard);
        self.run_calling_back(py, |db| {
            db.process(
                &key,
                if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
                &mut |old| {
                    call_back(guard, &mut failure, |py| {
                        let arg = old.map(|v| PyBytes::new(py, v));
                        action_of(&func.call1(py, (arg,))?.into_bound(py))
                    })
                },
            )
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// Applies `func(key, value)` to every record, with the same return
    /// convention as `process`.
    #[pyo3(signature = (func, writable = true))]
    fn process_each(&self, py: Python<'_>, func: PyObject, writable: bool) -> PyResult<()> {
        let (mut failure, guard) = (None, &self.guard);
        self.run_calling_back(py, |db| {
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

    /// The number of records.
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, |db| db.count())
    }

    /// The size of the database's file in bytes.
    fn file_size(&self, py: Python<'_>) -> PyResult<u64> {
        self.run(py, |db| db.file_size())
    }

    /// The path of the database's file.
    fn path(&self) -> PyResult<PathBuf> {
        self.with(|db| Ok(db.path().map(Path::to_path_buf).unwrap_or_default())).map_err(to_py)
    }

    /// Removes every record.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |db| db.clear())
    }

    /// Rebuilds the database into a compact file, with what the keyword
    /// parameters change of its tuning (num_buckets, align_pow, offset_width,
    /// update_mode of a hash database; reducer of a skip database).
    #[pyo3(signature = (**params))]
    fn rebuild(&self, py: Python<'_>, params: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let params = params_of(params)?;
        self.run(py, |db| db.rebuild_with(&params))
    }

    /// Replays the update-log files at `prefix` into this database, as
    /// `kura ulog apply` does: the entries from `timestamp` (milliseconds
    /// since the epoch) on, of `server_id` and `dbm_index` if given. Answers
    /// how many entries were applied.
    #[pyo3(signature = (prefix, timestamp = 0, server_id = None, dbm_index = None))]
    fn apply_update_logs(
        &self,
        py: Python<'_>,
        prefix: FsPath,
        timestamp: u64,
        server_id: Option<u32>,
        dbm_index: Option<u32>,
    ) -> PyResult<u64> {
        let filter = kuradb::ulog::ApplyFilter { min_timestamp: timestamp, server_id, dbm_index };
        self.run(py, |db| kuradb::ulog::apply_update_logs(db, &prefix, &filter).map(|r| r.applied))
    }

    /// Whether rebuilding would make the database notably smaller or faster.
    fn should_be_rebuilt(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |db| db.should_be_rebuilt())
    }

    /// Writes what is in memory to the file; `hard=True` also waits until the
    /// device holds it (it survives a power cut). A skip database shows its
    /// updates after this.
    /// `params` are the reference's synchronize parameters: a skip database
    /// merges the databases of `merge` (paths separated by colons) and
    /// reduces by `reducer` first; other classes ignore them.
    #[pyo3(signature = (hard = false, params = None))]
    fn synchronize(&self, py: Python<'_>, hard: bool, params: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let params = params_of(params)?;
        if params.iter().next().is_none() {
            return self.run(py, |db| {
                db.synchronize(if hard {
                    kuradb::dbm::Durability::Hard
                } else {
                    kuradb::dbm::Durability::Soft
                })
            });
        }
        self.run(py, |db| synchronize_with(db, hard, &params))
    }

    /// Writes a consistent, cleanly closed copy of the database's file to
    /// `dest` while it stays open.
    #[pyo3(signature = (dest, hard = false))]
    fn copy_file_data(&self, py: Python<'_>, dest: FsPath, hard: bool) -> PyResult<()> {
        self.run(py, |db| {
            db.copy_file_data(
                &dest,
                if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft },
            )
        })
    }

    /// Sets every record of this database in `dest`, another open DBM.
    fn export(slf: &Bound<'_, Self>, dest: &Bound<'_, Database>) -> PyResult<()> {
        if slf.is(dest) {
            return Err(PyValueError::new_err("a database cannot be exported to itself"));
        }
        let (this, other) = (slf.get(), dest.get());
        slf.py().allow_threads(|| this.with(|db| other.with(|dest| db.export(dest)))).map_err(to_py)
    }

    /// What the database says of itself (class, path, record count and its
    /// tuning) as a dict of strings.
    fn inspect(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, String>> {
        self.run(py, |db| {
            let mut out: std::collections::BTreeMap<String, String> = db.inspect()?.into_iter().collect();
            out.insert("dbm".into(), db.class().name().into());
            Ok(out)
        })
    }

    /// Whether the database keeps its keys in order (tree, skip).
    fn is_ordered(&self) -> PyResult<bool> {
        self.with(|db| Ok(db.is_ordered())).map_err(to_py)
    }

    /// Whether the database is in good condition (no failed write or sync).
    fn is_healthy(&self) -> PyResult<bool> {
        self.with(|db| Ok(db.is_healthy())).map_err(to_py)
    }

    /// Restores the damaged or crashed database at `src` into a new one at
    /// `dest`; answers the number of records kept.
    #[staticmethod]
    #[pyo3(signature = (src, dest, **params))]
    fn restore(
        py: Python<'_>,
        src: FsPath,
        dest: FsPath,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let params = params_of(params)?;
        py.allow_threads(|| PolyDbm::restore(&src, &dest, &params)).map_err(to_py)
    }

    /// The class a new database at `path` gets from its extension (`hash`,
    /// `tree`, …), or None if the extension names none.
    #[staticmethod]
    fn class_for_path(path: FsPath) -> Option<&'static str> {
        DbmClass::from_extension(&path).map(DbmClass::name)
    }

    /// The number of shards of the shard set whose files exist at `path`
    /// (`path-00000-of-NNNNN`, …), or None if there is none.
    #[staticmethod]
    fn shard_count(py: Python<'_>, path: FsPath) -> PyResult<Option<usize>> {
        py.allow_threads(|| kuradb::dbm::shard::ShardDbm::existing_count(&path)).map_err(to_py)
    }

    /// The class of the open database (`hash`, `tree`, `skip`, …).
    fn dbm_class(&self) -> PyResult<&'static str> {
        self.with(|db| Ok(db.class().name())).map_err(to_py)
    }

    /// A new cursor, not yet positioned: call `first`, `last` or a jump.
    fn make_iterator(&self, py: Python<'_>) -> PyResult<PyCursor> {
        Ok(PyCursor::new(self.new_slot(py)?))
    }

    /// The keys, in the database's order.
    fn keys(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        self.records_from_first(py, Yield::Keys)
    }

    /// The values, in the database's order.
    fn values(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        self.records_from_first(py, Yield::Values)
    }

    /// The `(key, value)` pairs, in the database's order.
    fn items(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        self.records_from_first(py, Yield::Items)
    }

    // The dict protocol.

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.count(py)? as usize)
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.count(py)? > 0)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = bytes_of(key, "key")?;
        self.run(py, |db| db.contains(&key))
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = bytes_of(key, "key")?;
        match self.run(py, |db| db.get(&bytes))? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.set(py, key, value, true)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.remove(py, key)? {
            Ok(())
        } else {
            Err(PyKeyError::new_err(key.clone().unbind()))
        }
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        self.records_from_first(py, Yield::Keys)
    }

    /// The value of `key` if there is one; else sets it to `default` and
    /// answers that, atomically.
    #[pyo3(signature = (key, default = None))]
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = bytes_of(key, "key")?;
        let Some(default) = default.filter(|d| !d.is_none()) else {
            return Err(PyTypeError::new_err(
                "setdefault needs a default value: records hold bytes, not None",
            ));
        };
        let new = bytes_of(&default, "default")?;
        let mut old = None;
        self.run(py, |db| {
            db.process(&key, Access::ReadWrite, &mut |value| match value {
                Some(v) => {
                    old = Some(v.to_vec());
                    Action::Keep
                }
                None => Action::set(&new),
            })
        })?;
        Ok(match old {
            Some(v) => PyBytes::new(py, &v).into_any(),
            None => PyBytes::new(py, &new).into_any(),
        })
    }

    /// Removes the record of `key` and answers its value, atomically; if
    /// there is none, answers `default` or raises KeyError.
    #[pyo3(signature = (key, *default))]
    fn pop<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if default.len() > 1 {
            return Err(PyTypeError::new_err(format!(
                "pop expected at most 2 arguments, got {}",
                default.len() + 1
            )));
        }
        let default = default.get_item(0).ok();
        let bytes = bytes_of(key, "key")?;
        let mut old = None;
        self.run(py, |db| {
            db.process(&bytes, Access::ReadWrite, &mut |value| {
                old = value.map(<[u8]>::to_vec);
                if value.is_some() {
                    Action::Remove
                } else {
                    Action::Keep
                }
            })
        })?;
        match (old, default) {
            (Some(v), _) => Ok(PyBytes::new(py, &v).into_any()),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// Sets every record of `records` (a mapping, or pairs) and of the
    /// keyword arguments, like `dict.update`.
    #[pyo3(signature = (records = None, **kwargs))]
    fn update(
        &self,
        py: Python<'_>,
        records: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let pairs = pairs_of(records, kwargs)?;
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
        self.run(py, |db| refs.iter().try_for_each(|(k, v)| db.set(k, v)))
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match self.db.read_recursive().as_deref() {
            Some(db) => format!(
                "<kuradb.DBM dbm={} path={:?}>",
                db.class().name(),
                db.path().unwrap_or(Path::new("")).display().to_string()
            ),
            None => "<kuradb.DBM (closed)>".to_string(),
        }
    }

    // The walks of an ordered database (ordered.rs has their helpers).
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
        self.walk(py, Yield::Items, bounds, move |c| match &lo {
            Some(lo) => c.jump_upper(lo, Edge::Inclusive),
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
        self.walk(py, Yield::Items, Bounds::Prefix(prefix), move |c| c.jump_upper(&start, Edge::Inclusive))
    }

    /// The keys of an ordered database from the highest down.
    fn __reversed__(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        let order = self.run(py, |db| key_order(db, "reversed()"))?;
        self.walk(py, Yield::Keys, Bounds::Backward { start: None, order }, |c| c.last())
    }

    // The reference's remaining methods (reference_api.rs has their helpers).
    /// Sets `key` to `value` and returns the value it replaced (None: it was
    /// absent). With `overwrite=False` an existing record stays, and its
    /// value is returned.
    #[pyo3(signature = (key, value, overwrite = true))]
    fn set_and_get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        overwrite: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let (key, value) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let old = self.run(py, |db| {
            if overwrite {
                db.set_and_get(&key, &value)
            } else {
                db.insert_and_get(&key, &value)
            }
        })?;
        Ok(old.map(|v| PyBytes::new(py, &v)))
    }

    /// Removes `key` and returns its value (None: it was absent).
    fn remove_and_get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_of(key, "key")?;
        let old = self.run(py, |db| db.remove_and_get(&key))?;
        Ok(old.map(|v| PyBytes::new(py, &v)))
    }

    /// If the record is `expected` (None: absent; ANY_DATA: any value), makes
    /// it `desired` (None: removed; ANY_DATA: left as it is). Returns
    /// (whether it matched, the value before or None).
    #[pyo3(signature = (key, expected, desired))]
    fn compare_exchange_and_get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        expected: Option<Bound<'_, PyAny>>,
        desired: Option<Bound<'_, PyAny>>,
    ) -> PyResult<(bool, Option<Bound<'py, PyBytes>>)> {
        let key = bytes_of(key, "key")?;
        let expected = opt_bytes_of(&expected, "expected")?;
        let desired = opt_bytes_of(&desired, "desired")?;
        let expected = match expected.as_deref() {
            Some(ANY_DATA) => Expected::Any,
            other => Expected::from(other),
        };
        let desired = match desired.as_deref() {
            Some(ANY_DATA) => Desired::Keep,
            other => Desired::from(other),
        };
        let (done, old) = self.run(py, |db| db.compare_exchange_and_get(&key, expected, desired))?;
        Ok((done, old.map(|v| PyBytes::new(py, &v))))
    }

    /// Calls `func(key, value)` with the first record (in the database's
    /// order), with `process`'s return convention; returns False if the
    /// database is empty (and `func` is not called).
    #[pyo3(signature = (func, writable = true))]
    fn process_first(&self, py: Python<'_>, func: PyObject, writable: bool) -> PyResult<bool> {
        let (mut failure, guard) = (None, &self.guard);
        let found = self.run_calling_back(py, |db| {
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

    /// Removes the first record and returns (key, value), or None if the
    /// database is empty. With `timeout` (seconds), waits up to that long,
    /// without the GIL, for a `push_last` on this database.
    #[pyo3(signature = (timeout = None))]
    fn pop_first<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let wait = match timeout {
            None => None,
            Some(t) if t.is_nan() || t < 0.0 => {
                return Err(PyValueError::new_err(format!(
                    "timeout must be a number of seconds >= 0, not {t}"
                )))
            }
            Some(t) => Some(Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX)),
        };
        let popped = self.run(py, |db| db.pop_first(wait))?;
        Ok(popped.map(|(k, v)| (PyBytes::new(py, &k), PyBytes::new(py, &v))))
    }

    /// Stores `value` under a key made from the time `wtime` (seconds since
    /// the epoch; None: now), 8 big-endian bytes that sort in push order,
    /// and returns the key. Wakes a `pop_first` waiting on this database.
    #[pyo3(signature = (value, wtime = None))]
    fn push_last<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'_, PyAny>,
        wtime: Option<f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let value = bytes_of(value, "value")?;
        let key = self.run(py, |db| db.push_last(&value, wtime))?;
        Ok(PyBytes::new(py, &key))
    }

    /// The keys matching `pattern` in `mode` ("contain", "begin", "end",
    /// "regex", "edit", "editbin", "containcase", "containword", …, "upper",
    /// "lower", …), at most `capacity` (0: all). The keys are str if the
    /// pattern is (undecodable bytes replaced), else bytes.
    #[pyo3(signature = (mode, pattern, capacity = 0))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        mode: &str,
        pattern: &Bound<'_, PyAny>,
        capacity: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let mode: SearchMode = mode.parse().map_err(to_py)?;
        let as_str = pattern.is_instance_of::<PyString>();
        let pattern = bytes_of(pattern, "pattern")?;
        let keys = self.run(py, |db| db.search(mode, &pattern, capacity))?;
        if as_str {
            PyList::new(py, keys.iter().map(|k| String::from_utf8_lossy(k)))
        } else {
            PyList::new(py, keys.iter().map(|k| PyBytes::new(py, k)))
        }
    }

    /// Writes every record to the file at `path` (replaced) as the
    /// reference's flat records.
    fn export_to_flat_records(&self, py: Python<'_>, path: FsPath) -> PyResult<()> {
        self.run(py, |db| write_file(&path, |out| flat_records::export_to_flat_records(db, out)))
    }

    /// Sets every record of the flat record file at `path`; returns how many.
    fn import_from_flat_records(&self, py: Python<'_>, path: FsPath) -> PyResult<u64> {
        self.run(py, |db| {
            let file = std::fs::File::open(&path).map_err(|e| io_error("opening", &path, e))?;
            flat_records::import_from_flat_records(db, &mut std::io::BufReader::new(file))
        })
    }

    /// Writes every key, each followed by a line feed, to the file at `path` (replaced).
    fn export_keys_as_lines(&self, py: Python<'_>, path: FsPath) -> PyResult<()> {
        self.run(py, |db| write_file(&path, |out| flat_records::export_keys_as_lines(db, out)))
    }
}

/// The pairs of a mapping, an iterable of pairs and keyword arguments.
pub(crate) fn pairs_of(
    records: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut pairs = Vec::new();
    if let Some(records) = records.filter(|r| !r.is_none()) {
        if records.hasattr("keys")? {
            for key in records.call_method0("keys")?.try_iter()? {
                let key = key?;
                let value = records.get_item(&key)?;
                pairs.push((bytes_of(&key, "key")?.into_owned(), bytes_of(&value, "value")?.into_owned()));
            }
        } else {
            for pair in records.try_iter()? {
                let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair?.extract()?;
                pairs.push((bytes_of(&key, "key")?.into_owned(), bytes_of(&value, "value")?.into_owned()));
            }
        }
    }
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            pairs.push((bytes_of(&key, "key")?.into_owned(), bytes_of(&value, "value")?.into_owned()));
        }
    }
    Ok(pairs)
}
