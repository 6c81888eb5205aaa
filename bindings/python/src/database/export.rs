//! Records out and in: to another open database, and to and from the
//! reference's flat record files.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kuradb::dbm::{flat_records, Dbm};

use super::Database;
use crate::convert::FsPath;
use crate::error::to_py;
use crate::reference_api::{io_error, write_file};

pub(super) fn export(slf: &Bound<'_, Database>, dest: &Bound<'_, Database>) -> PyResult<()> {
    if slf.is(dest) {
        return Err(PyValueError::new_err("a database cannot be exported to itself"));
    }
    let (this, other) = (slf.get(), dest.get());
    slf.py().allow_threads(|| this.with(|db| other.with(|dest| db.export(dest)))).map_err(to_py)
}

pub(super) fn export_to_flat_records(db: &Database, py: Python<'_>, path: FsPath) -> PyResult<()> {
    db.run(py, |db| write_file(&path, |out| flat_records::export_to_flat_records(db, out)))
}

pub(super) fn import_from_flat_records(db: &Database, py: Python<'_>, path: FsPath) -> PyResult<u64> {
    db.run(py, |db| {
        let file = std::fs::File::open(&path).map_err(|e| io_error("opening", &path, e))?;
        flat_records::import_from_flat_records(db, &mut std::io::BufReader::new(file))
    })
}

pub(super) fn export_keys_as_lines(db: &Database, py: Python<'_>, path: FsPath) -> PyResult<()> {
    db.run(py, |db| write_file(&path, |out| flat_records::export_keys_as_lines(db, out)))
}
