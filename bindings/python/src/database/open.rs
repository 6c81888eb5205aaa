//! Opening and closing a `kuradb.DBM`, and what it says of itself.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use kuradb::dbm::poly::{DbmClass, PolyDbm};
use kuradb::dbm::Dbm;
use kuradb_binding::handle::transactional;

use super::Database;
use crate::convert::{params_of, FsPath};
use crate::error::to_py;

pub(super) fn new(
    py: Python<'_>,
    path: Option<FsPath>,
    writable: bool,
    release_gil: bool,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Database> {
    let db = Database::closed();
    if let Some(path) = path {
        open(&db, py, path, writable, release_gil, params)?;
    }
    Ok(db)
}

pub(super) fn open(
    db: &Database,
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
            db.handle.install(|| {
                let access =
                    if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly };
                let opened = transactional(PolyDbm::open(&path, access, &params)?, access)?;
                // Under the handle's write lock: a call holding the read
                // lock sees the value of the session it runs in.
                db.release_gil.store(release_gil, Ordering::Relaxed);
                Ok(opened)
            })
        })
    });
    if let Some(err) = raised.lock().take() {
        return Err(err);
    }
    opened.map_err(to_py)
}

pub(super) fn close(db: &Database, py: Python<'_>) -> PyResult<()> {
    py.allow_threads(|| db.handle.close()).map_err(to_py)
}

pub(super) fn is_open(db: &Database) -> bool {
    db.handle.is_open()
}

pub(super) fn path(db: &Database) -> PyResult<PathBuf> {
    db.with(|db| Ok(db.path().map(Path::to_path_buf).unwrap_or_default())).map_err(to_py)
}

pub(super) fn inspect(db: &Database, py: Python<'_>) -> PyResult<std::collections::BTreeMap<String, String>> {
    db.run(py, |db| {
        let mut out: std::collections::BTreeMap<String, String> = db.inner().inspect()?.into_iter().collect();
        out.insert("dbm".into(), db.inner().class().name().into());
        Ok(out)
    })
}

pub(super) fn is_ordered(db: &Database) -> PyResult<bool> {
    db.with(|db| Ok(db.is_ordered())).map_err(to_py)
}

pub(super) fn is_healthy(db: &Database) -> PyResult<bool> {
    db.with(|db| Ok(db.is_healthy())).map_err(to_py)
}

pub(super) fn restore(
    py: Python<'_>,
    src: FsPath,
    dest: FsPath,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    let params = params_of(params)?;
    py.allow_threads(|| PolyDbm::restore(&src, &dest, &params)).map_err(to_py)
}

pub(super) fn class_for_path(path: FsPath) -> Option<&'static str> {
    DbmClass::from_extension(&path).map(DbmClass::name)
}

pub(super) fn shard_count(py: Python<'_>, path: FsPath) -> PyResult<Option<usize>> {
    py.allow_threads(|| kuradb::dbm::shard::ShardDbm::existing_count(&path)).map_err(to_py)
}

pub(super) fn dbm_class(db: &Database) -> PyResult<&'static str> {
    db.with(|db| Ok(db.inner().class().name())).map_err(to_py)
}

pub(super) fn repr(db: &Database) -> String {
    let described = db.handle.try_with(|db| {
        Ok(format!(
            "<kuradb.DBM dbm={} path={:?}>",
            db.inner().class().name(),
            db.path().unwrap_or(Path::new("")).display().to_string()
        ))
    });
    match described {
        Ok(Ok(text)) => text,
        Ok(Err(_)) if !db.handle.is_open() => "<kuradb.DBM (closed)>".to_string(),
        // Asked inside one of its callbacks, or while it opens or closes.
        _ => "<kuradb.DBM (busy)>".to_string(),
    }
}
