//! `kuradb.AsyncDBM`: a `kuradb.DBM` behind a pool of worker threads
//! ([`kuradb::AsyncDbm`]), its methods answering `kuradb.Future`s.
//!
//! A method converts its arguments with the GIL, queues the operation and
//! returns at once; the worker runs it without the GIL. The `AsyncDBM`
//! shares the `DBM`'s database, so the `DBM` refuses to close while an
//! `AsyncDBM` on it is open.

use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use kuradb::dbm::expiry::Expiry;
use kuradb::dbm::{flat_records, Dbm, SearchMode, INCREMENT_UNCHANGED};
use kuradb::{AsyncDbm, ErrorKind};
use kuradb_binding::expiry::{store_with_ttl, ttl_of_seconds};
use kuradb_binding::handle::Db;
use kuradb_binding::synchronize::synchronize_with;

use crate::convert::{bytes_of, opt_bytes_of, params_of, FsPath};
use crate::database::{pairs_of, Database};
use crate::error::to_py;
use crate::future::{PyFuture, Shape};
use crate::reference_api::{io_error, write_file};

/// A database behind a pool of worker threads; every method queues its
/// operation and returns a kuradb.Future to await (or to block on with get()).
#[pyclass(name = "AsyncDBM", module = "kuradb", frozen)]
pub struct AsyncDatabase {
    pub(crate) database: Py<Database>,
    /// The workers; `None` once closed.
    adb: RwLock<Option<AsyncDbm<Db>>>,
}

impl AsyncDatabase {
    /// Queues `op` on the workers, or fails at once if closed.
    pub(crate) fn queue<T>(
        &self,
        shape: Shape,
        op: impl FnOnce(&AsyncDbm<Db>) -> kuradb::DbmFuture<T>,
    ) -> PyResult<PyFuture>
    where
        T: Into<crate::future::Answer> + Send + 'static,
    {
        let guard = self.adb.read();
        let adb = guard.as_ref().ok_or_else(|| {
            to_py(kuradb::Error::new(
                ErrorKind::Infeasible,
                "the AsyncDBM is closed: it takes no more operations",
            ))
        })?;
        Ok(PyFuture::new(op(adb), shape))
    }

    /// Drains and stops the workers with the GIL released, then lets the DBM close.
    fn shut(&self, py: Python<'_>) {
        let Some(adb) = self.adb.write().take() else { return };
        py.allow_threads(|| adb.close());
    }
}

/// Owned keys of a Python iterable, with the key objects as given.
fn keys_of(keys: &Bound<'_, PyAny>) -> PyResult<(Vec<PyObject>, Vec<Vec<u8>>)> {
    let objects: Vec<Bound<'_, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
    let bytes =
        objects.iter().map(|k| bytes_of(k, "key").map(|b| b.into_owned())).collect::<PyResult<_>>()?;
    Ok((objects.into_iter().map(Bound::unbind).collect(), bytes))
}

/// A key and its value or absence.
type OptPair = (Vec<u8>, Option<Vec<u8>>);

/// Pairs of key and optional value: a mapping or an iterable of pairs.
pub(crate) fn opt_pairs_of(records: &Bound<'_, PyAny>) -> PyResult<Vec<OptPair>> {
    let items = if records.hasattr("items")? { records.call_method0("items")? } else { records.clone() };
    let mut pairs = Vec::new();
    for pair in items.try_iter()? {
        let (key, value): (Bound<'_, PyAny>, Option<Bound<'_, PyAny>>) = pair?.extract()?;
        pairs.push((
            bytes_of(&key, "key")?.into_owned(),
            opt_bytes_of(&value, "value")?.map(|v| v.into_owned()),
        ));
    }
    Ok(pairs)
}

#[pymethods]
impl AsyncDatabase {
    /// Puts the open database `db` behind `num_workers` worker threads.
    #[new]
    fn new(py: Python<'_>, db: Py<Database>, num_workers: usize) -> PyResult<AsyncDatabase> {
        let shared = db.get().share().map_err(to_py)?;
        let adb = py.allow_threads(|| AsyncDbm::new(shared, num_workers)).map_err(to_py)?;
        Ok(AsyncDatabase { database: db, adb: RwLock::new(Some(adb)) })
    }

    /// Waits until every queued operation has run (their futures complete),
    /// then stops the workers; later calls raise InfeasibleError. The DBM
    /// stays open. Closing again does nothing.
    fn close(&self, py: Python<'_>) {
        self.shut(py);
    }

    /// Whether close() has been called.
    pub(crate) fn is_closed(&self) -> bool {
        self.adb.read().is_none()
    }

    /// The value of `key` as bytes, or None.
    fn get(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?;
        self.queue(Shape::Plain, |adb| adb.get(&key))
    }

    /// The value of `key` as str (decoded from UTF-8), or None.
    fn get_str(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?;
        self.queue(Shape::Str, |adb| adb.get(&key))
    }

    /// The values of `keys` that exist, as a dict from each key as given.
    fn get_multi(&self, keys: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let (objects, keys) = keys_of(keys)?;
        self.queue(Shape::Dict(objects), |adb| adb.get_multi(&keys))
    }

    /// Whether `key` has a record.
    fn contains(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?;
        self.queue(Shape::Plain, |adb| adb.contains(&key))
    }

    /// Stores `value` under `key`; with overwrite=False an existing key
    /// makes the future raise DuplicationError. `ttl` (seconds) makes the
    /// record expire, as `DBM.set`'s does.
    #[pyo3(signature = (key, value, overwrite = true, *, ttl = None))]
    fn set(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        overwrite: bool,
        ttl: Option<f64>,
    ) -> PyResult<PyFuture> {
        let (key, value) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let (key, value) = (key.into_owned(), value.into_owned());
        match ttl.map(ttl_of_seconds).transpose().map_err(to_py)? {
            Some(ttl) => self.queue(Shape::Plain, |adb| {
                adb.execute(move |db: &Db| store_with_ttl(db, &key, &value, ttl, overwrite))
            }),
            None => self.queue(Shape::Plain, |adb| {
                if overwrite {
                    adb.set(&key, &value)
                } else {
                    adb.insert(&key, &value)
                }
            }),
        }
    }

    /// Makes `key` expire `seconds` from now; the result is whether the
    /// record was there.
    fn expire(&self, key: &Bound<'_, PyAny>, seconds: f64) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        let ttl = ttl_of_seconds(seconds).map_err(to_py)?;
        self.queue(Shape::Plain, |adb| adb.execute(move |db: &Db| db.expire_after(&key, ttl)))
    }

    /// Makes `key` never expire; the result is whether it had an expiry.
    fn persist(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.queue(Shape::Plain, |adb| adb.execute(move |db: &Db| db.persist(&key)))
    }

    /// Stores every record of `records` (a mapping, or pairs) and of the
    /// keyword arguments, atomically.
    #[pyo3(signature = (records = None, overwrite = true, **kwargs))]
    fn set_multi(
        &self,
        records: Option<&Bound<'_, PyAny>>,
        overwrite: bool,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyFuture> {
        let pairs = pairs_of(records, kwargs)?;
        self.queue(
            Shape::Plain,
            |adb| if overwrite { adb.set_multi(&pairs) } else { adb.insert_multi(&pairs) },
        )
    }

    /// Stores, as one task and atomically, every record whose key has none;
    /// the result is the keys that had one, which keep their values (the
    /// compat layer's SetMulti without overwrite).
    fn _set_absent_multi(&self, records: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let pairs = pairs_of(Some(records), None)?;
        self.queue(Shape::Plain, |adb| adb.set_absent_multi(&pairs))
    }

    /// As `increment`, reading a stored value of any length as the
    /// reference does (its first 8 bytes, big-endian): the compat layer's
    /// Increment.
    fn _increment_as_reference(
        &self,
        key: &Bound<'_, PyAny>,
        delta: i64,
        initial: i64,
    ) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?.into_owned();
        self.queue(Shape::Plain, |adb| {
            adb.execute(move |db: &Db| {
                kuradb_binding::increment::reference_increment(db, &key, delta, initial)
            })
        })
    }

    /// Removes `key`; the result is whether it existed.
    fn remove(&self, key: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?;
        self.queue(Shape::Plain, |adb| adb.remove(&key))
    }

    /// Removes the records of `keys` atomically; the result is how many existed.
    fn remove_multi(&self, keys: &Bound<'_, PyAny>) -> PyResult<PyFuture> {
        let (_, keys) = keys_of(keys)?;
        self.queue(Shape::Plain, |adb| adb.remove_multi(&keys))
    }

    /// Appends `value` to the value of `key`, after `delim` if it existed.
    #[pyo3(signature = (key, value, delim = None))]
    fn append(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        delim: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyFuture> {
        let (key, value) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default();
        self.queue(Shape::Plain, |adb| adb.append(&key, &value, &delim))
    }

    /// Appends every record's value as append() does, all atomically.
    #[pyo3(signature = (records = None, delim = None, **kwargs))]
    fn append_multi(
        &self,
        records: Option<&Bound<'_, PyAny>>,
        delim: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyFuture> {
        let pairs = pairs_of(records, kwargs)?;
        let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default();
        self.queue(Shape::Plain, |adb| adb.append_multi(&pairs, &delim))
    }

    /// Replaces the value of `key` with `desired` if it is `expected` now
    /// (None: absent on either side); the result is whether it did.
    #[pyo3(signature = (key, expected, desired))]
    fn compare_exchange(
        &self,
        key: &Bound<'_, PyAny>,
        expected: Option<Bound<'_, PyAny>>,
        desired: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?;
        let expected = opt_bytes_of(&expected, "expected")?;
        let desired = opt_bytes_of(&desired, "desired")?;
        self.queue(Shape::Plain, |adb| adb.compare_exchange(&key, expected, desired))
    }

    /// Adds `delta` to the number under `key` (from `initial` if absent);
    /// the result is the new number. delta=None reads it unchanged.
    #[pyo3(signature = (key, delta = Some(1), initial = 0))]
    fn increment(&self, key: &Bound<'_, PyAny>, delta: Option<i64>, initial: i64) -> PyResult<PyFuture> {
        let key = bytes_of(key, "key")?;
        let delta = delta.unwrap_or(INCREMENT_UNCHANGED);
        self.queue(Shape::Plain, |adb| adb.increment(&key, delta, initial))
    }

    /// If every (key, value) of `expected` holds (value None: absent),
    /// applies every (key, value) of `desired` (None: remove), atomically;
    /// each is a mapping or pairs. The result is whether it did.
    fn compare_exchange_multi(
        &self,
        expected: &Bound<'_, PyAny>,
        desired: &Bound<'_, PyAny>,
    ) -> PyResult<PyFuture> {
        let (expected, desired) = (opt_pairs_of(expected)?, opt_pairs_of(desired)?);
        self.queue(Shape::Plain, |adb| adb.compare_exchange_multi(&expected, &desired))
    }

    /// Moves the record of `old_key` to `new_key` (copies it with copying=True).
    #[pyo3(signature = (old_key, new_key, overwrite = true, copying = false))]
    fn rekey(
        &self,
        old_key: &Bound<'_, PyAny>,
        new_key: &Bound<'_, PyAny>,
        overwrite: bool,
        copying: bool,
    ) -> PyResult<PyFuture> {
        let (old_key, new_key) = (bytes_of(old_key, "old_key")?, bytes_of(new_key, "new_key")?);
        self.queue(Shape::Plain, |adb| {
            adb.rekey(
                &old_key,
                &new_key,
                if copying { kuradb::dbm::Rekey::Copy } else { kuradb::dbm::Rekey::Move },
                if overwrite { kuradb::dbm::OnDuplicate::Replace } else { kuradb::dbm::OnDuplicate::Fail },
            )
        })
    }

    /// Removes every record.
    fn clear(&self) -> PyResult<PyFuture> {
        self.queue(Shape::Plain, |adb| adb.clear())
    }

    /// Rewrites the database compactly, with the tuning parameters given.
    #[pyo3(signature = (**params))]
    fn rebuild(&self, params: Option<&Bound<'_, PyDict>>) -> PyResult<PyFuture> {
        let params = params_of(params)?;
        self.queue(Shape::Plain, |adb| adb.rebuild(params))
    }

    /// Makes every change so far reach the OS, or with hard=True the device;
    /// `params` are the reference's synchronize parameters, as
    /// `DBM.synchronize` takes them.
    #[pyo3(signature = (hard = false, params = None))]
    fn synchronize(&self, hard: bool, params: Option<&Bound<'_, PyDict>>) -> PyResult<PyFuture> {
        let params = params_of(params)?;
        if params.iter().next().is_none() {
            return self.queue(Shape::Plain, |adb| {
                adb.synchronize(if hard {
                    kuradb::dbm::Durability::Hard
                } else {
                    kuradb::dbm::Durability::Soft
                })
            });
        }
        self.queue(Shape::Plain, |adb| adb.execute(move |db: &Db| synchronize_with(db, hard, &params)))
    }

    /// Removes the first record; the result is its `(key, value)` (str with
    /// as_str=True), or None if the database is empty.
    #[pyo3(signature = (as_str = false))]
    fn pop_first(&self, as_str: bool) -> PyResult<PyFuture> {
        let shape = if as_str { Shape::Str } else { Shape::Plain };
        self.queue(shape, |adb| adb.execute(|db: &Db| db.pop_first(None)))
    }

    /// Stores `value` under a key made from the time `wtime` (seconds since
    /// the epoch; None: now); the result is the key.
    #[pyo3(signature = (value, wtime = None))]
    fn push_last(&self, value: &Bound<'_, PyAny>, wtime: Option<f64>) -> PyResult<PyFuture> {
        let value = bytes_of(value, "value")?.into_owned();
        self.queue(Shape::Plain, |adb| adb.execute(move |db: &Db| db.push_last(&value, wtime).map(Some)))
    }

    /// The keys matching `pattern` in `mode`, as `DBM.search` finds them;
    /// str if the pattern is, else bytes.
    #[pyo3(signature = (mode, pattern, capacity = 0))]
    fn search(&self, mode: &str, pattern: &Bound<'_, PyAny>, capacity: usize) -> PyResult<PyFuture> {
        let mode: SearchMode = mode.parse().map_err(to_py)?;
        let shape = if pattern.is_instance_of::<PyString>() { Shape::Str } else { Shape::Plain };
        let pattern = bytes_of(pattern, "pattern")?.into_owned();
        self.queue(shape, |adb| adb.execute(move |db: &Db| db.search(mode, &pattern, capacity)))
    }

    /// Writes every record to the file at `path` (replaced) as the
    /// reference's flat records.
    fn export_to_flat_records(&self, path: FsPath) -> PyResult<PyFuture> {
        self.queue(Shape::Plain, |adb| {
            adb.execute(move |db: &Db| write_file(&path, |out| flat_records::export_to_flat_records(db, out)))
        })
    }

    /// Sets every record of the flat record file at `path`; the result is
    /// how many.
    fn import_from_flat_records(&self, path: FsPath) -> PyResult<PyFuture> {
        self.queue(Shape::Plain, |adb| {
            adb.execute(move |db: &Db| {
                let file = std::fs::File::open(&path).map_err(|e| io_error("opening", &path, e))?;
                flat_records::import_from_flat_records(db, &mut std::io::BufReader::new(file))
                    .map(|n| n as i64)
            })
        })
    }

    /// Writes a consistent copy of the database's file to `dest`.
    #[pyo3(signature = (dest, hard = false))]
    fn copy_file_data(&self, dest: FsPath, hard: bool) -> PyResult<PyFuture> {
        self.queue(Shape::Plain, |adb| {
            adb.copy_file_data(
                dest.0,
                if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft },
            )
        })
    }

    /// Copies every record into the open kuradb.DBM `dest`.
    fn export(&self, dest: Py<Database>) -> PyResult<PyFuture> {
        if dest.is(&self.database) {
            return Err(pyo3::exceptions::PyValueError::new_err("a database cannot be exported to itself"));
        }
        self.queue(Shape::Plain, |adb| {
            adb.execute(move |db: &Db| dest.get().with(|dest: &Db| Dbm::export(db, dest)))
        })
    }

    /// Starts a serializable transaction whose commit has `durability`
    /// ("none", "os" or "sync"); its reads, commit and abort answer
    /// kuradb.Futures run on the workers. `async with adbm.transaction() as
    /// tx:` commits on a normal exit and aborts on an exception.
    #[pyo3(signature = (durability = "os"))]
    fn transaction(slf: &Bound<'_, Self>, durability: &str) -> PyResult<crate::async_txn::AsyncTransaction> {
        crate::async_txn::AsyncTransaction::begin(slf, durability)
    }

    /// A coroutine that calls `func(tx)` with a new transaction (awaiting
    /// it if it answers an awaitable) and commits it unless `func` finished
    /// it, answering what `func` answered; on ConflictError it runs `func`
    /// again in a new transaction, after a short random sleep, at most
    /// `retries` more times, as `DBM.run` does. Any other exception aborts
    /// and goes on at once.
    #[pyo3(signature = (func, retries = 10, durability = "os"))]
    fn run<'py>(
        slf: &Bound<'py, Self>,
        func: Bound<'py, PyAny>,
        retries: i64,
        durability: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let run = slf.py().import("kuradb._mapping")?.getattr("_run_async")?;
        run.call1((slf, func, retries, durability))
    }

    /// Starts a batch of blind writes applied as one unit by its commit
    /// (a kuradb.Future run on the workers); `async with adbm.batch() as
    /// b:` commits on a normal exit and discards the writes on an exception.
    #[pyo3(signature = (durability = "os"))]
    fn batch(slf: &Bound<'_, Self>, durability: &str) -> PyResult<crate::async_txn::AsyncBatch> {
        crate::async_txn::AsyncBatch::new(slf, durability)
    }

    /// A read view of the database at its newest commit, its reads answering
    /// kuradb.Futures; `async with adbm.snapshot() as view:` releases it on exit.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<crate::async_txn::AsyncSnapshot> {
        crate::async_txn::AsyncSnapshot::open(slf)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.shut(py);
        false
    }

    fn __repr__(&self) -> String {
        format!("<kuradb.AsyncDBM: {}>", if self.is_closed() { "closed" } else { "open" })
    }
}

impl Drop for AsyncDatabase {
    /// Drains like close(); the GIL is released meanwhile, since the
    /// workers' wakers take it to reach awaiting coroutines.
    fn drop(&mut self) {
        if let Some(adb) = self.adb.get_mut().take() {
            Python::with_gil(|py| py.allow_threads(|| adb.close()));
        }
    }
}
