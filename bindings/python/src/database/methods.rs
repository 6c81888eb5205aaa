//! The one `#[pymethods]` block of `kuradb.DBM`: each method's signature
//! and docstring, and a call into the module of its concern.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::{expiry, export, iteration, maintenance, multi, open, records, Database};
use crate::convert::FsPath;
use crate::cursor::{PyCursor, RecordIterator};

#[pymethods]
impl Database {
    /// Starts a serializable transaction whose commit has `durability`
    /// ("none": applied and atomic, kept in the process until a later write
    /// of the log; "os": written to the operating system, surviving the
    /// process's crash; "sync": on the device, surviving a power cut). Use it
    /// as a context manager: `with db.transaction() as tx:` commits on a
    /// normal exit and aborts on an exception. A commit that finds another
    /// commit changed what the transaction read raises ConflictError.
    #[pyo3(signature = (durability = "os"))]
    fn transaction(&self, py: Python<'_>, durability: &str) -> PyResult<crate::txn::PyTransaction> {
        crate::txn::PyTransaction::begin(self, py, durability)
    }

    /// Starts a batch of blind writes (set, remove, append, increment)
    /// applied as one unit by its commit, with `durability` as for
    /// `transaction`; as a context manager it commits on a normal exit.
    #[pyo3(signature = (durability = "os"))]
    fn batch(slf: &Bound<'_, Self>, durability: &str) -> PyResult<crate::txn::PyBatch> {
        crate::txn::PyBatch::new(slf.clone().unbind(), durability)
    }

    /// A read view at the newest commit: `get`, `items()`, `keys()`,
    /// iteration over its keys and `len()` see that state while writers go
    /// on. As a context manager it is released on exit.
    fn snapshot(&self, py: Python<'_>) -> PyResult<crate::txn::PySnapshot> {
        crate::txn::PySnapshot::open(self, py)
    }

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
        open::new(py, path, writable, release_gil, params)
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
    /// reducer, wait, no_wait, lock_timeout (seconds), no_lock, truncate,
    /// expiry (True: a new database whose records may expire), …; bools become true/false and
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
        open::open(self, py, path, writable, release_gil, params)
    }

    /// Closes the database (a closed one stays closed); its iterators stop
    /// working. Not allowed inside a `process` callback.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        open::close(self, py)
    }

    /// Whether the database is open.
    fn is_open(&self) -> bool {
        open::is_open(self)
    }

    /// The value of `key` as bytes, or `default` if there is none.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        records::get(self, py, key, default)
    }

    /// The value of `key` decoded as UTF-8, or `default` if there is none.
    #[pyo3(signature = (key, default = None))]
    fn get_str<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        records::get_str(self, py, key, default)
    }

    /// Sets the value of `key`; with `overwrite=False` an existing record is
    /// kept and DuplicationError raised. `ttl` (seconds, a database opened
    /// with `expiry=True`) makes the record expire that long from now;
    /// without it the record never expires (a set replaces an earlier
    /// expiry, as Redis's SET does).
    #[pyo3(signature = (key, value, overwrite = true, *, ttl = None))]
    fn set(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        overwrite: bool,
        ttl: Option<f64>,
    ) -> PyResult<()> {
        match ttl {
            Some(ttl) => expiry::set(self, py, key, value, overwrite, ttl),
            None => records::set(self, py, key, value, overwrite),
        }
    }

    /// Makes `key` expire `seconds` from now (0: at once); answers whether
    /// the record was there. Needs a database opened with `expiry=True`.
    fn expire(&self, py: Python<'_>, key: &Bound<'_, PyAny>, seconds: f64) -> PyResult<bool> {
        expiry::expire(self, py, key, seconds)
    }

    /// Makes `key` expire at `unix_seconds` (as `time.time()` gives it; a
    /// time past removes it); answers whether the record was there.
    fn expire_at(&self, py: Python<'_>, key: &Bound<'_, PyAny>, unix_seconds: f64) -> PyResult<bool> {
        expiry::expire_at(self, py, key, unix_seconds)
    }

    /// Makes `key` never expire; answers whether it had an expiry time.
    fn persist(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        expiry::persist(self, py, key)
    }

    /// The seconds `key` has left, or None if it never expires; KeyError
    /// if there is no record (or it has expired), as `db[key]` raises.
    fn ttl(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        expiry::ttl(self, py, key)
    }

    /// The time `key` expires, in seconds since the Unix epoch, or None if
    /// it never expires; KeyError if there is no record.
    fn expiry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        expiry::expiry(self, py, key)
    }

    /// Whether the database has expiry (it was made with `expiry=True`).
    fn has_expiry(&self) -> PyResult<bool> {
        expiry::has_expiry(self)
    }

    /// Removes expired records, looking at `max_records` records at most
    /// from where the last sweep stopped; answers (visited, removed,
    /// finished_pass), the last True when the walk reached the end.
    /// Expired records are hidden from every read before they are removed.
    fn sweep(&self, py: Python<'_>, max_records: i64) -> PyResult<(usize, usize, bool)> {
        expiry::sweep(self, py, max_records)
    }

    /// Starts a background thread removing expired records, looking at
    /// `records_per_second` records a second at most; `stop_sweeper` or
    /// `close` stops it.
    fn start_sweeper(&self, py: Python<'_>, records_per_second: i64) -> PyResult<()> {
        expiry::start_sweeper(self, py, records_per_second)
    }

    /// Stops the background sweeper; answers how many records it removed,
    /// or None if none was running. An error that stopped it is raised.
    fn stop_sweeper(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        expiry::stop_sweeper(self, py)
    }

    /// Removes the record of `key`; answers whether there was one.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        records::remove(self, py, key)
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
        records::append(self, py, key, value, delim)
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
        records::compare_exchange(self, py, key, expected, desired)
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
        records::increment(self, py, key, delta, initial)
    }

    /// As `increment`, reading a stored value of any length as the
    /// reference does (its first 8 bytes, big-endian): the compat layer's
    /// Increment.
    fn _increment_as_reference(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        delta: i64,
        initial: i64,
    ) -> PyResult<i64> {
        records::increment_as_reference(self, py, key, delta, initial)
    }

    /// The values of `keys` that exist, as a dict from each key as given.
    fn get_multi<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
        multi::get_multi(self, py, keys)
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
        multi::set_multi(self, py, records, overwrite, kwargs)
    }

    /// Sets one record per row of `keys` and `values`, pyarrow arrays of
    /// equal length (binary or string, no nulls), in one call with the GIL
    /// released; answers the number of rows. Later rows win over earlier
    /// ones with the same key.
    fn set_arrow(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        crate::arrow::set_arrow(self, py, keys, values)
    }

    /// Appends the value of each record of `records` (a mapping, or pairs)
    /// and of the keyword arguments to the record's value with `delim`
    /// between (or sets it, if there is no record), atomically.
    #[pyo3(signature = (records = None, delim = None, **kwargs))]
    fn append_multi(
        &self,
        py: Python<'_>,
        records: Option<&Bound<'_, PyAny>>,
        delim: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        multi::append_multi(self, py, records, delim, kwargs)
    }

    /// If every `(key, value)` of `expected` holds (value None: the key is
    /// absent; ANY_DATA: it has any value), applies every `(key, value)` of `desired` (value None:
    /// removed), atomically; answers whether it did. Each is a mapping or
    /// pairs.
    fn compare_exchange_multi(
        &self,
        py: Python<'_>,
        expected: &Bound<'_, PyAny>,
        desired: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        multi::compare_exchange_multi(self, py, expected, desired)
    }

    /// Moves the record of `old_key` to `new_key` atomically (copies it with
    /// `copying=True`). Raises NotFoundError if `old_key` is absent, and
    /// DuplicationError if `new_key` exists and `overwrite` is False.
    #[pyo3(signature = (old_key, new_key, overwrite = true, copying = false))]
    fn rekey(
        &self,
        py: Python<'_>,
        old_key: &Bound<'_, PyAny>,
        new_key: &Bound<'_, PyAny>,
        overwrite: bool,
        copying: bool,
    ) -> PyResult<()> {
        records::rekey(self, py, old_key, new_key, overwrite, copying)
    }

    /// Removes the records of `keys`, atomically; answers how many existed.
    fn remove_multi(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<usize> {
        multi::remove_multi(self, py, keys)
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
        records::process(self, py, key, func, writable)
    }

    /// Applies each `func(key, value or None)` of `pairs` (key, func) to
    /// its record, with the same return convention as `process`, all under
    /// the records' locks at once.
    #[pyo3(signature = (pairs, writable = true))]
    fn process_multi(&self, py: Python<'_>, pairs: &Bound<'_, PyAny>, writable: bool) -> PyResult<()> {
        multi::process_multi(self, py, pairs, writable)
    }

    /// Applies `func(key, value)` to every record, with the same return
    /// convention as `process`.
    #[pyo3(signature = (func, writable = true))]
    fn process_each(&self, py: Python<'_>, func: PyObject, writable: bool) -> PyResult<()> {
        iteration::process_each(self, py, func, writable)
    }

    /// The number of records.
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        maintenance::count(self, py)
    }

    /// The size of the database's file in bytes.
    fn file_size(&self, py: Python<'_>) -> PyResult<u64> {
        maintenance::file_size(self, py)
    }

    /// The path of the database's file.
    fn path(&self) -> PyResult<PathBuf> {
        open::path(self)
    }

    /// Removes every record.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        maintenance::clear(self, py)
    }

    /// Rebuilds the database into a compact file, with what the keyword
    /// parameters change of its tuning (num_buckets, align_pow, offset_width,
    /// update_mode of a hash database; reducer of a skip database).
    #[pyo3(signature = (**params))]
    fn rebuild(&self, py: Python<'_>, params: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        maintenance::rebuild(self, py, params)
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
        maintenance::apply_update_logs(self, py, prefix, timestamp, server_id, dbm_index)
    }

    /// Whether rebuilding would make the database notably smaller or faster.
    fn should_be_rebuilt(&self, py: Python<'_>) -> PyResult<bool> {
        maintenance::should_be_rebuilt(self, py)
    }

    /// Writes what is in memory to the file; `hard=True` also waits until the
    /// device holds it (it survives a power cut). A skip database shows its
    /// updates after this.
    /// `params` are the reference's synchronize parameters: a skip database
    /// merges the databases of `merge` (paths separated by colons) and
    /// reduces by `reducer` first; other classes ignore them.
    #[pyo3(signature = (hard = false, params = None))]
    fn synchronize(&self, py: Python<'_>, hard: bool, params: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        maintenance::synchronize(self, py, hard, params)
    }

    /// Writes a consistent, cleanly closed copy of the database's file to
    /// `dest` while it stays open.
    #[pyo3(signature = (dest, hard = false))]
    fn copy_file_data(&self, py: Python<'_>, dest: FsPath, hard: bool) -> PyResult<()> {
        maintenance::copy_file_data(self, py, dest, hard)
    }

    /// Sets every record of this database in `dest`, another open DBM.
    fn export(slf: &Bound<'_, Self>, dest: &Bound<'_, Database>) -> PyResult<()> {
        export::export(slf, dest)
    }

    /// What the database says of itself (class, path, record count and its
    /// tuning) as a dict of strings.
    fn inspect(&self, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, String>> {
        open::inspect(self, py)
    }

    /// Whether the database keeps its keys in order (tree, skip).
    fn is_ordered(&self) -> PyResult<bool> {
        open::is_ordered(self)
    }

    /// Whether the database is in good condition (no failed write or sync).
    fn is_healthy(&self) -> PyResult<bool> {
        open::is_healthy(self)
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
        open::restore(py, src, dest, params)
    }

    /// The class a new database at `path` gets from its extension (`hash`,
    /// `tree`, …), or None if the extension names none.
    #[staticmethod]
    fn class_for_path(path: FsPath) -> Option<&'static str> {
        open::class_for_path(path)
    }

    /// The number of shards of the shard set whose files exist at `path`
    /// (`path-00000-of-NNNNN`, …), or None if there is none.
    #[staticmethod]
    fn shard_count(py: Python<'_>, path: FsPath) -> PyResult<Option<usize>> {
        open::shard_count(py, path)
    }

    /// The class of the open database (`hash`, `tree`, `skip`, …).
    fn dbm_class(&self) -> PyResult<&'static str> {
        open::dbm_class(self)
    }

    /// A new cursor, not yet positioned: call `first`, `last` or a jump.
    fn make_iterator(&self, py: Python<'_>) -> PyResult<PyCursor> {
        iteration::make_iterator(self, py)
    }

    /// The keys, in the database's order.
    fn keys(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        iteration::keys(self, py)
    }

    /// The values, in the database's order.
    fn values(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        iteration::values(self, py)
    }

    /// The `(key, value)` pairs, in the database's order.
    fn items(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        iteration::items(self, py)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        maintenance::len(self, py)
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        maintenance::bool(self, py)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        records::contains(self, py, key)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        records::getitem(self, py, key)
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        records::setitem(self, py, key, value)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        records::delitem(self, py, key)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        iteration::iter(self, py)
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
        records::setdefault(self, py, key, default)
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
        records::pop(self, py, key, default)
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
        multi::update(self, py, records, kwargs)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        open::close(self, py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        open::repr(self)
    }

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
        iteration::range(self, py, lo, hi, reverse, inclusive)
    }

    /// The `(key, value)` pairs whose key starts with `prefix`, in key
    /// order. It needs an ordered database whose keys are in plain byte
    /// order (the default comparator), where such keys sit together.
    fn prefix(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<RecordIterator> {
        iteration::prefix(self, py, prefix)
    }

    /// The keys of an ordered database from the highest down.
    fn __reversed__(&self, py: Python<'_>) -> PyResult<RecordIterator> {
        iteration::reversed(self, py)
    }

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
        records::set_and_get(self, py, key, value, overwrite)
    }

    /// Removes `key` and returns its value (None: it was absent).
    fn remove_and_get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        records::remove_and_get(self, py, key)
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
        records::compare_exchange_and_get(self, py, key, expected, desired)
    }

    /// Calls `func(key, value)` with the first record (in the database's
    /// order), with `process`'s return convention; returns False if the
    /// database is empty (and `func` is not called).
    #[pyo3(signature = (func, writable = true))]
    fn process_first(&self, py: Python<'_>, func: PyObject, writable: bool) -> PyResult<bool> {
        iteration::process_first(self, py, func, writable)
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
        records::pop_first(self, py, timeout)
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
        records::push_last(self, py, value, wtime)
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
        iteration::search(self, py, mode, pattern, capacity)
    }

    /// Writes every record to the file at `path` (replaced) as the
    /// reference's flat records.
    fn export_to_flat_records(&self, py: Python<'_>, path: FsPath) -> PyResult<()> {
        export::export_to_flat_records(self, py, path)
    }

    /// Sets every record of the flat record file at `path`; returns how many.
    fn import_from_flat_records(&self, py: Python<'_>, path: FsPath) -> PyResult<u64> {
        export::import_from_flat_records(self, py, path)
    }

    /// Writes every key, each followed by a line feed, to the file at `path` (replaced).
    fn export_keys_as_lines(&self, py: Python<'_>, path: FsPath) -> PyResult<()> {
        export::export_keys_as_lines(self, py, path)
    }
}
