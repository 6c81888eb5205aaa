//! Expiry (time to live) of a database opened with `expiry=True`: setting
//! and reading records' expiry times, sweeping expired records. Times are
//! seconds, as floats (`time.time()`'s unit).

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;

use kuradb::dbm::expiry::Expiry;
use kuradb_binding::expiry::{
    expiry_of_unix_seconds, records_per_second, seconds_of, store_with_ttl, ttl_of_seconds, unix_seconds_of,
};

use super::Database;
use crate::convert::bytes_of;
use crate::error::to_py;

pub(super) fn set(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    overwrite: bool,
    ttl: f64,
) -> PyResult<()> {
    let key = bytes_of(key, "key")?;
    let value = bytes_of(value, "value")?;
    let ttl = ttl_of_seconds(ttl).map_err(to_py)?;
    db.run(py, |db| store_with_ttl(db, &key, &value, ttl, overwrite))
}

pub(super) fn expire(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>, seconds: f64) -> PyResult<bool> {
    let key = bytes_of(key, "key")?;
    let ttl = ttl_of_seconds(seconds).map_err(to_py)?;
    db.run(py, |db| db.expire_after(&key, ttl))
}

pub(super) fn expire_at(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    unix_seconds: f64,
) -> PyResult<bool> {
    let key = bytes_of(key, "key")?;
    let at = expiry_of_unix_seconds(unix_seconds).map_err(to_py)?;
    db.run(py, |db| db.expire_at(&key, Some(at)))
}

pub(super) fn persist(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let key = bytes_of(key, "key")?;
    db.run(py, |db| db.persist(&key))
}

pub(super) fn ttl(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let bytes = bytes_of(key, "key")?;
    match db.run(py, |db| db.ttl(&bytes))? {
        Some(left) => Ok(left.map(seconds_of)),
        None => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}

pub(super) fn expiry(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let bytes = bytes_of(key, "key")?;
    match db.run(py, |db| db.expiry(&bytes))? {
        Some(at) => Ok(at.map(unix_seconds_of)),
        None => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}

pub(super) fn has_expiry(db: &Database) -> PyResult<bool> {
    db.with(|db| Ok(db.inner().expiring().is_some())).map_err(to_py)
}

pub(super) fn sweep(db: &Database, py: Python<'_>, max_records: i64) -> PyResult<(usize, usize, bool)> {
    let report = db.run(py, |db| kuradb_binding::expiry::sweep(db, max_records))?;
    Ok((report.visited, report.removed, report.finished_pass))
}

pub(super) fn start_sweeper(db: &Database, py: Python<'_>, per_second: i64) -> PyResult<()> {
    let per_second = records_per_second(per_second).map_err(to_py)?;
    py.allow_threads(|| db.handle.start_sweeper(per_second)).map_err(to_py)
}

pub(super) fn stop_sweeper(db: &Database, py: Python<'_>) -> PyResult<Option<u64>> {
    py.allow_threads(|| db.handle.stop_sweeper()).map_err(to_py)
}
