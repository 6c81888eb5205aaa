//! The reference's remaining `DBM` methods on `kuradb.DBM`, in Python's
//! style: the get forms of set, remove and compare-exchange, the first
//! record and the queue over it, search, and the flat record exports.
//!
//! `ANY_DATA` (`b"\0[ANY]\0"`, the reference's value) stands for "any value"
//! as `expected` and "leave it" as `desired` of `compare_exchange_and_get`.

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use kuradb::dbm::flat_records::{export_keys_as_lines, export_to_flat_records, import_from_flat_records};
use kuradb::dbm::{Dbm, Desired, Expected, SearchMode};
use kuradb::Error;

use crate::convert::{bytes_of, opt_bytes_of, FsPath};
use crate::database::{action_of, call_back, Database};
use crate::error::to_py;

/// The reference's sentinel for "any value" / "no update".
pub const ANY_DATA: &[u8] = b"\x00[ANY]\x00";

fn io_error(what: &str, path: &std::path::Path, e: std::io::Error) -> Error {
    Error::io(what, path, e)
}

#[pymethods]
impl Database {
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
        let old = self.run(py, |db| db.set_and_get(&key, &value, overwrite))?;
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
        let (mut failure, id) = (None, self.id());
        let found = self.run(py, |db| {
            db.process_first(writable, &mut |key, value| {
                call_back(id, &mut failure, |py| {
                    let args = (PyBytes::new(py, key), PyBytes::new(py, value));
                    action_of(&func.call1(py, args)?.into_bound(py))
                })
            })
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
        self.run(py, |db| write_file(&path, |out| export_to_flat_records(db, out)))
    }

    /// Sets every record of the flat record file at `path`; returns how many.
    fn import_from_flat_records(&self, py: Python<'_>, path: FsPath) -> PyResult<u64> {
        self.run(py, |db| {
            let file = std::fs::File::open(&path).map_err(|e| io_error("opening", &path, e))?;
            import_from_flat_records(db, &mut std::io::BufReader::new(file))
        })
    }

    /// Writes every key, each followed by a line feed, to the file at `path` (replaced).
    fn export_keys_as_lines(&self, py: Python<'_>, path: FsPath) -> PyResult<()> {
        self.run(py, |db| write_file(&path, |out| export_keys_as_lines(db, out)))
    }
}

fn write_file(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> kuradb::Result<()>,
) -> kuradb::Result<()> {
    let file = std::fs::File::create(path).map_err(|e| io_error("creating", path, e))?;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)?;
    std::io::Write::flush(&mut out).map_err(|e| io_error("writing", path, e))
}
