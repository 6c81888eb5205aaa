//! The native half of `kuradb.compat.tkrzw`: its `Status` class and the base
//! of its `DBM`, whose record calls (`Get`, `GetStr`, `Set`, `Remove` and
//! the dict protocol) are written here rather than in Python.
//!
//! The reference's `tkrzw.DBM.Get` is a C method; the same call written in
//! Python ran one more interpreter frame per record, and `Set`'s answer, a
//! Python `Status`, one more for its `__init__`: together more than the
//! lookup itself. Here each is one native call, with the semantics of the
//! Python methods they replace (`python/kuradb/compat/tkrzw.py` keeps the
//! rest of the class, and the rarely taken paths call back into it: keys
//! of unusual types through its `_bytes`, errors through its `_status_of`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyModule, PyString};

use kuradb::dbm::Dbm;
use kuradb_binding::compat_open::compat_open_params;
use kuradb_binding::params::{rebuild_params, reference_params};

use crate::convert::{params_of, FsPath};
use crate::database::Database;
use crate::error::{to_py, Error as KuraError};

/// The Python module whose helpers the rare paths use.
const MODULE: &str = "kuradb.compat.tkrzw";
/// The message of the TypeError a call on an unopened DBM raises.
const NOT_OPENED: &str = "invalid arguments: not opened database";

/// The reference's status codes, by number.
const CODE_NAMES: [&str; 14] = [
    "SUCCESS",
    "UNKNOWN_ERROR",
    "SYSTEM_ERROR",
    "NOT_IMPLEMENTED_ERROR",
    "PRECONDITION_ERROR",
    "INVALID_ARGUMENT_ERROR",
    "CANCELED_ERROR",
    "NOT_FOUND_ERROR",
    "PERMISSION_ERROR",
    "INFEASIBLE_ERROR",
    "DUPLICATION_ERROR",
    "BROKEN_DATA_ERROR",
    "NETWORK_ERROR",
    "APPLICATION_ERROR",
];
const SUCCESS: i64 = 0;
const NOT_FOUND_ERROR: i64 = 7;

/// An attribute of the Python module `kuradb.compat.tkrzw`.
fn helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import(MODULE)?.getattr(name)
}

/// The outcome of an operation, as the reference's `tkrzw.Status`: a code
/// and a message.
#[pyclass(name = "Status", module = "kuradb.compat.tkrzw", subclass)]
pub struct CompatStatus {
    code: i64,
    message: String,
}

impl CompatStatus {
    fn new_bound(py: Python<'_>, code: i64, message: String) -> PyResult<Bound<'_, CompatStatus>> {
        Bound::new(py, CompatStatus { code, message })
    }
}

/// A message as the Python class kept it: a str as it is, anything else as
/// its `str()` (which is how the class showed it).
fn message_of(message: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    match message {
        None => Ok(String::new()),
        Some(m) if m.is_none() => Ok(String::new()),
        Some(m) => match m.downcast::<PyString>() {
            Ok(s) => Ok(s.to_cow()?.into_owned()),
            Err(_) => Ok(m.str()?.to_cow()?.into_owned()),
        },
    }
}

#[pymethods]
impl CompatStatus {
    #[classattr]
    const SUCCESS: i64 = 0;
    #[classattr]
    const UNKNOWN_ERROR: i64 = 1;
    #[classattr]
    const SYSTEM_ERROR: i64 = 2;
    #[classattr]
    const NOT_IMPLEMENTED_ERROR: i64 = 3;
    #[classattr]
    const PRECONDITION_ERROR: i64 = 4;
    #[classattr]
    const INVALID_ARGUMENT_ERROR: i64 = 5;
    #[classattr]
    const CANCELED_ERROR: i64 = 6;
    #[classattr]
    const NOT_FOUND_ERROR: i64 = 7;
    #[classattr]
    const PERMISSION_ERROR: i64 = 8;
    #[classattr]
    const INFEASIBLE_ERROR: i64 = 9;
    #[classattr]
    const DUPLICATION_ERROR: i64 = 10;
    #[classattr]
    const BROKEN_DATA_ERROR: i64 = 11;
    #[classattr]
    const NETWORK_ERROR: i64 = 12;
    #[classattr]
    const APPLICATION_ERROR: i64 = 13;

    /// A status of `code` (default SUCCESS) and `message`.
    #[new]
    #[pyo3(signature = (code = 0, message = None))]
    fn new(code: i64, message: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(CompatStatus { code, message: message_of(message)? })
    }

    /// Sets the code and the message.
    #[pyo3(name = "Set", signature = (code = 0, message = None))]
    fn set(&mut self, code: i64, message: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.message = message_of(message)?;
        self.code = code;
        Ok(())
    }

    /// Takes `rhs`'s code and message if this is a success.
    #[pyo3(name = "Join")]
    fn join(slf: &Bound<'_, Self>, rhs: &Bound<'_, CompatStatus>) {
        // Read first: `rhs` may be this very status.
        let (code, message) = {
            let rhs = rhs.borrow();
            (rhs.code, rhs.message.clone())
        };
        let mut this = slf.borrow_mut();
        if this.code == SUCCESS {
            this.code = code;
            this.message = message;
        }
    }

    /// The code.
    #[pyo3(name = "GetCode")]
    fn get_code(&self) -> i64 {
        self.code
    }

    /// The message.
    #[pyo3(name = "GetMessage")]
    fn get_message(&self) -> &str {
        &self.message
    }

    /// Whether this is a success.
    #[pyo3(name = "IsOK")]
    fn is_ok(&self) -> bool {
        self.code == SUCCESS
    }

    /// Raises StatusException unless this is a success.
    #[pyo3(name = "OrDie")]
    fn or_die(slf: &Bound<'_, Self>) -> PyResult<()> {
        if slf.borrow().code == SUCCESS {
            return Ok(());
        }
        Err(PyErr::from_value(helper(slf.py(), "StatusException")?.call1((slf,))?))
    }

    /// The name of a status code ("unknown" for a number that is none).
    #[staticmethod]
    #[pyo3(name = "CodeName")]
    fn code_name(code: i64) -> &'static str {
        usize::try_from(code).ok().and_then(|i| CODE_NAMES.get(i)).copied().unwrap_or("unknown")
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyObject {
        match self.equals(other) {
            Some(equal) => PyBool::new(py, equal).to_owned().into_any().unbind(),
            None => py.NotImplemented(),
        }
    }

    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyObject {
        match self.equals(other) {
            Some(equal) => PyBool::new(py, !equal).to_owned().into_any().unbind(),
            None => py.NotImplemented(),
        }
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        // As hash(code): equal statuses and codes hash alike.
        self.code.into_pyobject(py)?.hash()
    }

    fn __str__(&self) -> String {
        let name = Self::code_name(self.code);
        if self.message.is_empty() {
            name.to_string()
        } else {
            format!("{name}: {}", self.message)
        }
    }

    fn __repr__(&self) -> String {
        format!("<tkrzw.Status: {}>", self.__str__())
    }
}

impl CompatStatus {
    /// Whether `other` (a Status or an int code) equals this; None for any
    /// other type, which Python then compares by identity.
    fn equals(&self, other: &Bound<'_, PyAny>) -> Option<bool> {
        if let Ok(status) = other.downcast::<CompatStatus>() {
            return Some(status.borrow().code == self.code);
        }
        if let Ok(int) = other.downcast::<PyInt>() {
            return Some(int.extract::<i64>().is_ok_and(|code| code == self.code));
        }
        None
    }
}

/// A key or value as the compat module's `_bytes` makes it: bytes as they
/// are, str as UTF-8, anything else through `_bytes` itself.
fn data_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(bytes) = obj.downcast::<PyBytes>() {
        return Ok(bytes.clone());
    }
    if let Ok(text) = obj.downcast_exact::<PyString>() {
        return text.encode_utf8();
    }
    Ok(helper(obj.py(), "_bytes")?.call1((obj,))?.downcast_into::<PyBytes>()?)
}

/// `value` decoded as the compat module decodes, UTF-8 with errors replaced.
fn text_of<'py>(py: Python<'py>, value: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(value) {
        Ok(text) => Ok(PyString::new(py, text)),
        // Python's decoder, for its replacements (`PyString::from_object`
        // of pyo3 0.23 reads its encoding names past their end).
        Err(_) => Ok(PyBytes::new(py, value)
            .call_method1(intern!(py, "decode"), (intern!(py, "utf-8"), intern!(py, "replace")))?
            .downcast_into::<PyString>()?),
    }
}

/// Whether `err` is one the compat methods answer with a Status: a kuradb
/// error, or (`arguments`) a TypeError or ValueError from the arguments.
fn is_reported(py: Python<'_>, err: &PyErr, arguments: bool) -> bool {
    err.is_instance_of::<KuraError>(py)
        || (arguments && (err.is_instance_of::<PyTypeError>(py) || err.is_instance_of::<PyValueError>(py)))
}

/// The Status the compat module makes of an exception.
fn status_of<'py>(py: Python<'py>, err: PyErr) -> PyResult<Bound<'py, PyAny>> {
    helper(py, "_status_of")?.call1((err.into_value(py),))
}

/// Sets `status` (a Status the caller gave, or None) to `code` with an empty
/// message, as `status.Set(code, "")` does.
fn report(status: Option<&Bound<'_, PyAny>>, code: i64) -> PyResult<()> {
    let Some(status) = status.filter(|s| !s.is_none()) else { return Ok(()) };
    if let Ok(exact) = status.downcast_exact::<CompatStatus>() {
        let mut exact = exact.try_borrow_mut()?;
        exact.code = code;
        exact.message.clear();
        return Ok(());
    }
    status.call_method1(intern!(status.py(), "Set"), (code, ""))?;
    Ok(())
}

/// `overwrite` as the reference reads it: absent means true, anything given
/// counts by its truth value (so an explicit `None` or `0` means false). A
/// type of its own, since pyo3 hands an `Option` argument an explicit `None`
/// as if it were absent.
struct Truth(bool);

impl<'py> FromPyObject<'py> for Truth {
    fn extract_bound(o: &Bound<'py, PyAny>) -> PyResult<Truth> {
        o.is_truthy().map(Truth)
    }
}

/// The base of `kuradb.compat.tkrzw.DBM`: the open `kuradb.DBM` (the
/// attribute `_db`, None until opened) and the record calls.
#[pyclass(name = "DBM", module = "kuradb.compat.tkrzw", subclass)]
pub struct CompatDbm {
    db: Option<Py<Database>>,
}

impl CompatDbm {
    /// The open database; TypeError if there is none, as the reference says
    /// of an unopened one. The object is taken out of `slf` so that a call
    /// that releases the GIL holds no borrow of it (another thread may close).
    fn opened(slf: &Bound<'_, Self>) -> PyResult<Py<Database>> {
        let py = slf.py();
        match &slf.borrow().db {
            Some(db) => Ok(db.clone_ref(py)),
            None => Err(PyTypeError::new_err(NOT_OPENED)),
        }
    }

    /// The value of `key` (None if absent), with `status` set as `Get` does.
    fn get_value(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        status: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Vec<u8>>> {
        let py = slf.py();
        let db = Self::opened(slf)?;
        let key = data_of(key)?;
        let key = key.as_bytes();
        match db.get().run(py, |d| d.get(key)) {
            Ok(value) => {
                report(status, if value.is_some() { SUCCESS } else { NOT_FOUND_ERROR })?;
                Ok(value)
            }
            Err(err) if is_reported(py, &err, false) => {
                let outcome = status_of(py, err)?;
                if let Some(status) = status.filter(|s| !s.is_none()) {
                    let code = outcome.call_method0(intern!(py, "GetCode"))?;
                    let message = outcome.call_method0(intern!(py, "GetMessage"))?;
                    status.call_method1(intern!(py, "Set"), (code, message))?;
                }
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// `Set`'s work: a new SUCCESS Status, or the Status of what went wrong.
    fn set_record<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
        overwrite: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let db = Self::opened(slf)?;
        let done = (|| {
            let key = data_of(key)?;
            let value = data_of(value)?;
            let (key, value) = (key.as_bytes(), value.as_bytes());
            db.get().run(py, |d| if overwrite { d.set(key, value) } else { d.insert(key, value) })
        })();
        match done {
            Ok(()) => Ok(CompatStatus::new_bound(py, SUCCESS, String::new())?.into_any()),
            Err(err) if is_reported(py, &err, true) => status_of(py, err),
            Err(err) => Err(err),
        }
    }

    /// `Remove`'s work: SUCCESS, NOT_FOUND_ERROR, or what went wrong.
    fn remove_record<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let db = Self::opened(slf)?;
        let done = (|| {
            let key = data_of(key)?;
            let key = key.as_bytes();
            db.get().run(py, |d| d.remove(key))
        })();
        match done {
            Ok(true) => Ok(CompatStatus::new_bound(py, SUCCESS, String::new())?.into_any()),
            Ok(false) => {
                Ok(CompatStatus::new_bound(py, NOT_FOUND_ERROR, "no record".to_string())?.into_any())
            }
            Err(err) if is_reported(py, &err, true) => status_of(py, err),
            Err(err) => Err(err),
        }
    }

    /// Raises StatusException for a status that is not a success.
    fn or_die(status: Bound<'_, PyAny>) -> PyResult<()> {
        status.call_method0(intern!(status.py(), "OrDie"))?;
        Ok(())
    }
}

#[pymethods]
impl CompatDbm {
    /// An unopened database.
    #[new]
    fn new() -> Self {
        CompatDbm { db: None }
    }

    /// The open `kuradb.DBM`, or None.
    #[getter(_db)]
    fn db(&self, py: Python<'_>) -> Option<Py<Database>> {
        self.db.as_ref().map(|db| db.clone_ref(py))
    }

    /// Sets the open `kuradb.DBM` (None: unopened).
    #[setter(_db)]
    fn set_db(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.db = if value.is_none() { None } else { Some(value.downcast::<Database>()?.clone().unbind()) };
        Ok(())
    }

    /// The value of `key` as bytes, or None; `status` (a Status) is set to
    /// SUCCESS, NOT_FOUND_ERROR or the error.
    #[pyo3(name = "Get", signature = (key, status = None))]
    fn get_py<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        status: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        Ok(Self::get_value(slf, key, status)?.map(|v| PyBytes::new(slf.py(), &v)))
    }

    /// `Get`, the value decoded as UTF-8 (invalid bytes replaced).
    #[pyo3(name = "GetStr", signature = (key, status = None))]
    fn get_str<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        status: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        Self::get_value(slf, key, status)?.map(|v| text_of(slf.py(), &v)).transpose()
    }

    /// Sets the value of `key`; with `overwrite` false an existing record
    /// stays and the answer is DUPLICATION_ERROR.
    #[pyo3(name = "Set", signature = (key, value, overwrite = Truth(true)))]
    fn set_py<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
        overwrite: Truth,
    ) -> PyResult<Bound<'py, PyAny>> {
        Self::set_record(slf, key, value, overwrite.0)
    }

    /// Removes the record of `key`; NOT_FOUND_ERROR if there is none.
    #[pyo3(name = "Remove")]
    fn remove_py<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        Self::remove_record(slf, key)
    }

    fn __getitem__<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let db = Self::opened(slf)?;
        let bytes = data_of(key)?;
        let bytes = bytes.as_bytes();
        match db.get().run(py, |d| d.get(bytes))? {
            Some(v) if key.is_instance_of::<PyString>() => Ok(text_of(py, &v)?.into_any()),
            Some(v) => Ok(PyBytes::new(py, &v).into_any()),
            None => {
                let status = CompatStatus::new_bound(py, NOT_FOUND_ERROR, String::new())?;
                Err(PyErr::from_value(helper(py, "StatusException")?.call1((status,))?))
            }
        }
    }

    fn __setitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::or_die(Self::set_record(slf, key, value, true)?)
    }

    fn __delitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::or_die(Self::remove_record(slf, key)?)
    }

    fn __contains__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = slf.py();
        let bytes = data_of(key)?;
        let db = Self::opened(slf)?;
        let bytes = bytes.as_bytes();
        db.get().run(py, |d| d.contains(bytes))
    }
}

/// Adds the classes to the module.
/// The reference's open or rebuild keyword parameters as kuradb's, by the
/// binding core (the translation the Java and Ruby layers share): values as
/// text, `concurrent` dropped, colon-separated access options, the AES mode
/// folded into `cipher_key`, RC4 refused.
#[pyfunction]
#[pyo3(signature = (params=None))]
fn _reference_params<'py>(
    py: Python<'py>,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let text = params_of(params)?;
    let translated =
        reference_params(text.iter().map(|(k, v)| (k.to_string(), v.to_string()))).map_err(to_py)?;
    let out = PyDict::new(py);
    for (name, value) in translated {
        out.set_item(name, value)?;
    }
    Ok(out)
}

/// The reference's rebuild keyword parameters as kuradb's, by the binding
/// core (as the Java and Ruby layers get them): those of `_reference_params`
/// without the tuning of a running database (`fbp_capacity`, ...), which
/// kuradb takes at open.
#[pyfunction]
#[pyo3(signature = (params=None))]
fn _rebuild_params<'py>(
    py: Python<'py>,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let text = params_of(params)?;
    let translated =
        rebuild_params(text.iter().map(|(k, v)| (k.to_string(), v.to_string()))).map_err(to_py)?;
    let out = PyDict::new(py);
    for (name, value) in translated {
        out.set_item(name, value)?;
    }
    Ok(out)
}

/// The parameters of a compat open of `path`, by the binding core (as the
/// Java and Ruby layers get them): those of `_reference_params`, waiting for
/// another process's lock unless told `no_wait`, as the reference does;
/// without `key_comparator` when the open reopens an existing tree (the
/// reference reads the order from the file); `no_create` of a missing
/// database raising NotFoundError.
#[pyfunction]
#[pyo3(signature = (path, params=None))]
fn _compat_open_params<'py>(
    py: Python<'py>,
    path: FsPath,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let text = params_of(params)?;
    let pairs: Vec<(String, String)> = text.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let translated = py.allow_threads(|| compat_open_params(&path, pairs)).map_err(to_py)?;
    let out = PyDict::new(py);
    for (name, value) in translated {
        out.set_item(name, value)?;
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_reference_params, m)?)?;
    m.add_function(wrap_pyfunction!(_compat_open_params, m)?)?;
    m.add_function(wrap_pyfunction!(_rebuild_params, m)?)?;
    m.add("_CompatStatus", m.py().get_type::<CompatStatus>())?;
    m.add("_CompatDBM", m.py().get_type::<CompatDbm>())?;
    Ok(())
}
