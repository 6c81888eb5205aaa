//! Keeping the database: count and size, clear, rebuild, synchronize,
//! copies of its file, and replaying update logs.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use kuradb::dbm::Dbm;
use kuradb_binding::synchronize::synchronize_with;

use super::Database;
use crate::convert::{params_of, FsPath};

pub(super) fn count(db: &Database, py: Python<'_>) -> PyResult<u64> {
    db.run(py, |db| db.count())
}

pub(super) fn file_size(db: &Database, py: Python<'_>) -> PyResult<u64> {
    db.run(py, |db| db.file_size())
}

pub(super) fn clear(db: &Database, py: Python<'_>) -> PyResult<()> {
    db.run(py, |db| db.clear())
}

pub(super) fn rebuild(db: &Database, py: Python<'_>, params: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let params = params_of(params)?;
    db.run(py, |db| db.inner().rebuild_with(&params))
}

pub(super) fn apply_update_logs(
    db: &Database,
    py: Python<'_>,
    prefix: FsPath,
    timestamp: u64,
    server_id: Option<u32>,
    dbm_index: Option<u32>,
) -> PyResult<u64> {
    let filter = kuradb::ulog::ApplyFilter { min_timestamp: timestamp, server_id, dbm_index };
    db.run(py, |db| {
        // The log of a database with expiry holds values as stored, with
        // their expiry tags: it goes into the database under the layer.
        let target: &dyn kuradb::dbm::Dbm = match db.inner().expiring() {
            Some(_) => db.inner().stored(),
            None => db,
        };
        kuradb::ulog::apply_update_logs(target, &prefix, &filter).map(|r| r.applied)
    })
}

pub(super) fn should_be_rebuilt(db: &Database, py: Python<'_>) -> PyResult<bool> {
    db.run(py, |db| db.should_be_rebuilt())
}

pub(super) fn synchronize(
    db: &Database,
    py: Python<'_>,
    hard: bool,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let params = params_of(params)?;
    if params.iter().next().is_none() {
        return db.run(py, |db| {
            db.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
        });
    }
    db.run(py, |db| synchronize_with(db, hard, &params))
}

pub(super) fn copy_file_data(db: &Database, py: Python<'_>, dest: FsPath, hard: bool) -> PyResult<()> {
    db.run(py, |db| {
        db.copy_file_data(
            &dest,
            if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft },
        )
    })
}

pub(super) fn len(db: &Database, py: Python<'_>) -> PyResult<usize> {
    Ok(count(db, py)? as usize)
}

pub(super) fn bool(db: &Database, py: Python<'_>) -> PyResult<bool> {
    Ok(count(db, py)? > 0)
}
