//! The exception hierarchy: `kuradb.Error` and one subclass per
//! [`kuradb::ErrorKind`], so Python code can catch a kind or all of them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use kuradb::ErrorKind;

create_exception!(kuradb, Error, PyException, "Any error of a kuradb database.");
create_exception!(kuradb, NotFoundError, Error, "A record, file or other named thing does not exist.");
create_exception!(kuradb, DuplicationError, Error, "A record or file exists and was not to be overwritten.");
create_exception!(
    kuradb,
    InvalidArgumentError,
    Error,
    "An argument or parameter is malformed or out of range."
);
create_exception!(
    kuradb,
    InfeasibleError,
    Error,
    "The operation cannot be done in the current state (a closed database, a write to a read-only one)."
);
create_exception!(
    kuradb,
    BrokenDataError,
    Error,
    "Stored data is inconsistent: a corrupt or truncated file."
);
create_exception!(
    kuradb,
    WouldBlockError,
    Error,
    "The file is locked by someone else and waiting was refused."
);
create_exception!(kuradb, OperatingSystemError, Error, "The operating system refused an operation.");
create_exception!(
    kuradb,
    UnsupportedError,
    Error,
    "The feature is not supported by this database or platform."
);
create_exception!(kuradb, CanceledError, Error, "A callback asked to stop, or failed.");

/// The Python exception of a kuradb error: the subclass of its kind, with
/// the whole message (kind, operation, file and OS error).
pub fn to_py(err: kuradb::Error) -> PyErr {
    let text = err.to_string();
    match err.kind() {
        ErrorKind::NotFound => NotFoundError::new_err(text),
        ErrorKind::Duplication => DuplicationError::new_err(text),
        ErrorKind::InvalidArgument => InvalidArgumentError::new_err(text),
        ErrorKind::Infeasible => InfeasibleError::new_err(text),
        ErrorKind::BrokenData => BrokenDataError::new_err(text),
        ErrorKind::WouldBlock => WouldBlockError::new_err(text),
        ErrorKind::System => OperatingSystemError::new_err(text),
        ErrorKind::NotImplemented => UnsupportedError::new_err(text),
        ErrorKind::Canceled => CanceledError::new_err(text),
        _ => Error::new_err(text),
    }
}

/// The error of any use of a closed database.
pub fn not_open() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the database is not open")
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("DuplicationError", py.get_type::<DuplicationError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("InfeasibleError", py.get_type::<InfeasibleError>())?;
    m.add("BrokenDataError", py.get_type::<BrokenDataError>())?;
    m.add("WouldBlockError", py.get_type::<WouldBlockError>())?;
    m.add("OperatingSystemError", py.get_type::<OperatingSystemError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("CanceledError", py.get_type::<CanceledError>())?;
    Ok(())
}
