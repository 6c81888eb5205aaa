//! The helpers of the reference's remaining `DBM` methods on `kuradb.DBM`
//! (the get forms of set, remove and compare-exchange, the first record and
//! the queue over it, search, and the flat record exports), whose methods
//! sit in `database.rs`'s one `#[pymethods]` block: pyo3's
//! `multiple-pymethods`, which let them sit here, made every call of every
//! method look its class up through a boxed iterator (an allocation each).
//!
//! `ANY_DATA` (`b"\0[ANY]\0"`, the reference's value) stands for "any value"
//! as `expected` and "leave it" as `desired` of `compare_exchange_and_get`.

use kuradb::Error;

/// The reference's sentinel for "any value" / "no update".
pub const ANY_DATA: &[u8] = b"\x00[ANY]\x00";

pub(crate) fn io_error(what: &str, path: &std::path::Path, e: std::io::Error) -> Error {
    Error::io(what, path, e)
}

pub(crate) fn write_file(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> kuradb::Result<()>,
) -> kuradb::Result<()> {
    let file = std::fs::File::create(path).map_err(|e| io_error("creating", path, e))?;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)?;
    std::io::Write::flush(&mut out).map_err(|e| io_error("writing", path, e))
}
