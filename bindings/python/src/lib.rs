//! The Python binding of kuradb: the native module `kuradb._kuradb`, which
//! the `kuradb` package re-exports (see `python/kuradb/`).
//!
//! It maps the Rust API one to one ([`database`]: `kuradb.DBM` over a
//! `PolyDbm`; [`cursor`]: its iterators; [`ordered`]: the walks of an
//! ordered database (range, prefix, reversed); [`error`]: one exception per error
//! kind; [`index`]: `kuradb.Index`, a secondary index; [`async_dbm`]: `kuradb.AsyncDBM`, its operations answering
//! [`future`]s that asyncio awaits; [`update_log`]: `kuradb.UpdateLogReader`, the entries of update-log files; [`published`]: `kuradb.PublishJob`, versions of a published directory; [`txn`]: `kuradb.Transaction`, `Batch` and `Snapshot`; [`async_txn`]: their `AsyncDBM` forms) and adds only what Python idiom needs (the dict protocol, str keys,
//! a context manager). `dbm` and `compat.tkrzw` are written in Python on top.

#![deny(unsafe_code)]

mod arrow;
mod async_dbm;
mod async_txn;
mod compat;
mod convert;
mod cursor;
mod database;
mod error;
mod future;
mod index;
mod ordered;
mod published;
mod reference_api;
mod txn;
mod update_log;
mod utility;

use pyo3::prelude::*;

#[pymodule]
fn _kuradb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<database::Database>()?;
    m.add_class::<async_dbm::AsyncDatabase>()?;
    m.add_class::<future::PyFuture>()?;
    m.add_class::<cursor::PyCursor>()?;
    m.add_class::<cursor::RecordIterator>()?;
    m.add_class::<index::PyIndex>()?;
    m.add_class::<index::PyIndexIterator>()?;
    error::register(m)?;
    utility::register(m)?;
    update_log::register(m)?;
    published::register(m)?;
    arrow::register(m)?;
    compat::register(m)?;
    txn::register(m)?;
    async_txn::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ANY_DATA", pyo3::types::PyBytes::new(m.py(), reference_api::ANY_DATA))?;
    Ok(())
}
