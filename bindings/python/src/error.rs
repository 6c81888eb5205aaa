//! The exception hierarchy: `kuradb.Error` and one subclass per
//! [`kuradb::ErrorKind`], so Python code can catch a kind or all of them.
//!
//! `kuradb.Error` is an `OSError`, as the standard library's dbm errors are,
//! so `except OSError` code written for files works. Two classes also carry
//! the built-in class a Python program expects: `NoSuchFileError` (a
//! `NotFoundError` and a `FileNotFoundError`: a file that is not there) and
//! `WouldBlockError` (a `BlockingIOError`: a file another holds locked).
//! `create_exception!` takes one base, so these two are made with `type()`.

use pyo3::create_exception;
use pyo3::exceptions::{PyBlockingIOError, PyFileNotFoundError, PyOSError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};

use kuradb::ErrorKind;
use kuradb_binding::status::StatusCode;

create_exception!(kuradb, Error, PyOSError, "Any error of a kuradb database (an OSError).");
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
    ReadOnlyError,
    InfeasibleError,
    "A write to a database opened for reading only (an InfeasibleError)."
);
create_exception!(
    kuradb,
    BrokenDataError,
    Error,
    "Stored data is inconsistent: a corrupt or truncated file."
);
create_exception!(kuradb, OperatingSystemError, Error, "The operating system refused an operation.");
create_exception!(
    kuradb,
    UnsupportedError,
    Error,
    "The feature is not supported by this database or platform."
);
create_exception!(kuradb, CanceledError, Error, "A callback asked to stop, or failed.");
create_exception!(
    kuradb,
    ConflictError,
    Error,
    "A transaction's commit found that another commit changed what it read since it began; nothing was applied: run it again (DBM.run, kuradb.transactional)."
);

static NO_SUCH_FILE: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static WOULD_BLOCK: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// An exception class of the `kuradb` module with two bases.
fn class_of_two<'py>(
    py: Python<'py>,
    name: &str,
    bases: (Bound<'py, PyType>, Bound<'py, PyType>),
    doc: &str,
) -> PyResult<Py<PyType>> {
    let dict = PyDict::new(py);
    dict.set_item("__doc__", doc)?;
    dict.set_item("__module__", "kuradb")?;
    let made = py.get_type::<PyType>().call1((name, PyTuple::new(py, [bases.0, bases.1])?, dict))?;
    Ok(made.downcast_into::<PyType>()?.unbind())
}

/// `kuradb.NoSuchFileError`.
fn no_such_file(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let class = NO_SUCH_FILE.get_or_try_init(py, || {
        let bases = (py.get_type::<NotFoundError>(), py.get_type::<PyFileNotFoundError>());
        class_of_two(py, "NoSuchFileError", bases, "A file (or a directory on its path) does not exist.")
    })?;
    Ok(class.bind(py))
}

/// `kuradb.WouldBlockError`.
fn would_block(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let class = WOULD_BLOCK.get_or_try_init(py, || {
        let bases = (py.get_type::<Error>(), py.get_type::<PyBlockingIOError>());
        class_of_two(
            py,
            "WouldBlockError",
            bases,
            "Another process holds the file (the message names it), or a wait for it (wait=True, lock_timeout) gave up.",
        )
    })?;
    Ok(class.bind(py))
}

/// An exception of `class` with OSError's arguments: `(errno, text)` where
/// the operating system gave a number, so `e.errno` tells it, else `(text,)`.
fn raised(class: &Bound<'_, PyType>, errno: Option<i32>, text: String) -> PyErr {
    let made = match errno {
        Some(errno) => class.call1((errno, text)),
        None => class.call1((text,)),
    };
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(err) => err,
    }
}

/// The Python exception of a kuradb error: the subclass of its kind, with
/// the whole message (kind, operation, file and OS error), and as its
/// attribute `status_code` the reference's status code of it, as the
/// binding core maps kinds to codes (for `kuradb.compat.tkrzw`).
pub fn to_py(err: kuradb::Error) -> PyErr {
    let code = StatusCode::of(&err).number();
    let raised = exception_of(err);
    Python::with_gil(|py| {
        // An exception that refuses attributes still says its kind by class.
        let _ = raised.value(py).setattr("status_code", code);
    });
    raised
}

/// The exception of `err`'s kind.
fn exception_of(err: kuradb::Error) -> PyErr {
    let text = err.to_string();
    let errno = err.raw_os_error();
    match err.kind() {
        ErrorKind::NotFound if errno == Some(ENOENT) => Python::with_gil(|py| match no_such_file(py) {
            Ok(class) => raised(class, errno, text),
            Err(e) => e,
        }),
        ErrorKind::NotFound => NotFoundError::new_err(text),
        ErrorKind::Duplication => DuplicationError::new_err(text),
        ErrorKind::InvalidArgument => InvalidArgumentError::new_err(text),
        ErrorKind::Infeasible => InfeasibleError::new_err(text),
        ErrorKind::ReadOnly => ReadOnlyError::new_err(text),
        ErrorKind::BrokenData => BrokenDataError::new_err(text),
        ErrorKind::WouldBlock => Python::with_gil(|py| match would_block(py) {
            // The advice on waiting, spelled as this binding's keywords.
            Ok(class) => raised(class, errno, text.replace(kuradb::file::LOCK_WAIT_HINT, PYTHON_WAIT_HINT)),
            Err(e) => e,
        }),
        ErrorKind::System => OperatingSystemError::new_err(text),
        ErrorKind::NotImplemented => UnsupportedError::new_err(text),
        ErrorKind::Canceled => CanceledError::new_err(text),
        ErrorKind::Conflict => ConflictError::new_err(text),
        _ => Error::new_err(text),
    }
}

/// How a "locked" error tells a Python program to wait instead.
const PYTHON_WAIT_HINT: &str =
    "pass wait=True to wait for it, or lock_timeout=SECONDS to wait at most that long";

/// The number of "no such file or directory" (the same on every platform Python runs on).
const ENOENT: i32 = 2;

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
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("BrokenDataError", py.get_type::<BrokenDataError>())?;
    m.add("WouldBlockError", would_block(py)?)?;
    m.add("NoSuchFileError", no_such_file(py)?)?;
    m.add("OperatingSystemError", py.get_type::<OperatingSystemError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("CanceledError", py.get_type::<CanceledError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    Ok(())
}
