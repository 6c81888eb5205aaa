//! Python values to bytes, paths and parameters: str is encoded as UTF-8,
//! bytes are borrowed without copying, a path is str, bytes or any
//! `os.PathLike`, and keyword parameters become a [`Params`].

use std::borrow::Cow;
use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyString};

use kuradb::dbm::poly::Params;

use crate::error::to_py;

/// The bytes of a key or value: bytes borrowed, str as UTF-8, or any other
/// buffer (bytearray, memoryview) copied.
pub fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(match s.to_cow()? {
            Cow::Borrowed(s) => Cow::Owned(s.as_bytes().to_vec()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        });
    }
    if let Ok(b) = obj.downcast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.get_type().name()? == "memoryview" {
        let b = obj.call_method0("tobytes")?;
        return Ok(Cow::Owned(b.downcast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes or str, not {}",
        obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
    )))
}

/// A file path given from Python: `str`, `bytes` (the operating system's
/// bytes, as `os.fsencode` makes them) or any `os.PathLike` answering one of
/// them, as `open()` takes.
pub struct FsPath(pub PathBuf);

impl<'py> FromPyObject<'py> for FsPath {
    fn extract_bound(obj: &Bound<'py, PyAny>) -> PyResult<FsPath> {
        let os = obj.py().import("os")?;
        let fspath = os.call_method1("fspath", (obj,)).map_err(|_| {
            PyTypeError::new_err(format!(
                "a path must be str, bytes or os.PathLike, not {}",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
            ))
        })?;
        if let Ok(b) = fspath.downcast::<PyBytes>() {
            return Ok(FsPath(path_of_bytes(b.as_bytes())?));
        }
        Ok(FsPath(fspath.extract::<PathBuf>()?))
    }
}

impl std::ops::Deref for FsPath {
    type Target = PathBuf;

    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for FsPath {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

#[cfg(unix)]
fn path_of_bytes(bytes: &[u8]) -> PyResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

// Elsewhere a path's bytes are only meaningful as text.
#[cfg(not(unix))]
fn path_of_bytes(bytes: &[u8]) -> PyResult<PathBuf> {
    std::str::from_utf8(bytes)
        .map(PathBuf::from)
        .map_err(|_| PyTypeError::new_err("a path given as bytes must be UTF-8 on this platform"))
}

/// An optional key or value: None is absence.
pub fn opt_bytes_of<'a>(obj: &'a Option<Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Cow<'a, [u8]>>> {
    match obj {
        Some(o) if !o.is_none() => bytes_of(o, what).map(Some),
        _ => Ok(None),
    }
}

/// Keyword parameters as a [`Params`]: bool becomes true/false, int and float
/// their decimal text, str itself; any other type is refused naming the
/// parameter.
pub fn params_of(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Params> {
    let mut params = Params::new();
    let Some(kwargs) = kwargs else { return Ok(params) };
    for (name, value) in kwargs.iter() {
        let name: String = name.extract()?;
        let text = if value.is_instance_of::<PyBool>() {
            if value.is_truthy()? { "true" } else { "false" }.to_string()
        } else if value.is_instance_of::<PyInt>() {
            value.str()?.to_string()
        } else if value.is_instance_of::<PyFloat>() {
            value.repr()?.to_string()
        } else if let Ok(s) = value.downcast::<PyString>() {
            s.to_cow()?.into_owned()
        } else if let Ok(b) = value.downcast::<PyBytes>() {
            // Parameters are text: a key given as bytes is taken as its UTF-8.
            String::from_utf8(b.as_bytes().to_vec()).map_err(|_| {
                PyTypeError::new_err(format!("parameter {name} given as bytes must be UTF-8 text"))
            })?
        } else {
            return Err(PyTypeError::new_err(format!(
                "parameter {name} must be a str, bytes, int, float or bool, not {}",
                value.get_type().name()?
            )));
        };
        params.insert(&name, &text).map_err(to_py)?;
    }
    Ok(params)
}
