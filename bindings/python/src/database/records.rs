//! One record at a time: get, set, remove, compare-exchange, increment,
//! process, the dict protocol's item access, and the queue calls.

use std::time::Duration;

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use kuradb::dbm::{Access, Action, Dbm, Desired, Expected, INCREMENT_UNCHANGED};

use super::{action_of, call_back, Database};
use crate::convert::{bytes_of, opt_bytes_of};
use crate::reference_api::ANY_DATA;

pub(super) fn get<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    lookup(db, py, key, default, |v| Ok(PyBytes::new(py, &v).into_any()))
}

pub(super) fn get_str<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    lookup(db, py, key, default, |v| {
        let text = std::str::from_utf8(&v).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyString::new(py, text).into_any())
    })
}

/// The value of `key` as `shown` makes it, or `default` where there is none.
fn lookup<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    shown: impl FnOnce(Vec<u8>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let key = bytes_of(key, "key")?;
    match db.run(py, |db| db.get(&key))? {
        Some(v) => shown(v).map(Some),
        None => Ok(default),
    }
}

pub(super) fn set(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    overwrite: bool,
) -> PyResult<()> {
    let key = bytes_of(key, "key")?;
    let value = bytes_of(value, "value")?;
    db.run(py, |db| if overwrite { db.set(&key, &value) } else { db.insert(&key, &value) })
}

pub(super) fn remove(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let key = bytes_of(key, "key")?;
    db.run(py, |db| db.remove(&key))
}

pub(super) fn append(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    delim: Option<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let key = bytes_of(key, "key")?;
    let value = bytes_of(value, "value")?;
    let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default();
    db.run(py, |db| db.append(&key, &value, &delim))
}

pub(super) fn compare_exchange(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    expected: Option<Bound<'_, PyAny>>,
    desired: Option<Bound<'_, PyAny>>,
) -> PyResult<bool> {
    let key = bytes_of(key, "key")?;
    let expected = opt_bytes_of(&expected, "expected")?;
    let desired = opt_bytes_of(&desired, "desired")?;
    db.run(py, |db| db.compare_exchange(&key, expected.as_deref(), desired.as_deref()))
}

pub(super) fn increment_as_reference(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    delta: i64,
    initial: i64,
) -> PyResult<i64> {
    let key = bytes_of(key, "key")?;
    db.run(py, |db| kuradb_binding::increment::reference_increment(db, &key, delta, initial))
}

pub(super) fn increment(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    delta: Option<i64>,
    initial: i64,
) -> PyResult<i64> {
    let key = bytes_of(key, "key")?;
    let delta = delta.unwrap_or(INCREMENT_UNCHANGED);
    db.run(py, |db| db.increment(&key, delta, initial))
}

pub(super) fn process(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    func: PyObject,
    writable: bool,
) -> PyResult<()> {
    let key = bytes_of(key, "key")?;
    let (mut failure, guard) = (None, db.guard());
    db.run_calling_back(py, |db| {
        db.process(
            &key,
            if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
            &mut |old| {
                call_back(guard, &mut failure, |py| {
                    let arg = old.map(|v| PyBytes::new(py, v));
                    action_of(&func.call1(py, (arg,))?.into_bound(py))
                })
            },
        )
    })?;
    failure.map_or(Ok(()), Err)
}

pub(super) fn contains(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let key = bytes_of(key, "key")?;
    db.run(py, |db| db.contains(&key))
}

pub(super) fn getitem<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = bytes_of(key, "key")?;
    match db.run(py, |db| db.get(&bytes))? {
        Some(v) => Ok(PyBytes::new(py, &v)),
        None => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}

pub(super) fn setitem(
    db: &Database,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    set(db, py, key, value, true)
}

pub(super) fn delitem(db: &Database, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
    if remove(db, py, key)? {
        Ok(())
    } else {
        Err(PyKeyError::new_err(key.clone().unbind()))
    }
}

pub(super) fn setdefault<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let key = bytes_of(key, "key")?;
    let Some(default) = default.filter(|d| !d.is_none()) else {
        return Err(PyTypeError::new_err("setdefault needs a default value: records hold bytes, not None"));
    };
    let new = bytes_of(&default, "default")?;
    let mut old = None;
    db.run(py, |db| {
        db.process(&key, Access::ReadWrite, &mut |value| match value {
            Some(v) => {
                old = Some(v.to_vec());
                Action::Keep
            }
            None => Action::set(&new),
        })
    })?;
    Ok(match old {
        Some(v) => PyBytes::new(py, &v).into_any(),
        None => PyBytes::new(py, &new).into_any(),
    })
}

pub(super) fn pop<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'py, PyAny>,
    default: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    if default.len() > 1 {
        return Err(PyTypeError::new_err(format!(
            "pop expected at most 2 arguments, got {}",
            default.len() + 1
        )));
    }
    let default = default.get_item(0).ok();
    let bytes = bytes_of(key, "key")?;
    let mut old = None;
    db.run(py, |db| {
        db.process(&bytes, Access::ReadWrite, &mut |value| {
            old = value.map(<[u8]>::to_vec);
            if value.is_some() {
                Action::Remove
            } else {
                Action::Keep
            }
        })
    })?;
    match (old, default) {
        (Some(v), _) => Ok(PyBytes::new(py, &v).into_any()),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(PyKeyError::new_err(key.clone().unbind())),
    }
}

pub(super) fn set_and_get<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    overwrite: bool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let (key, value) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
    let old =
        db.run(
            py,
            |db| if overwrite { db.set_and_get(&key, &value) } else { db.insert_and_get(&key, &value) },
        )?;
    Ok(old.map(|v| PyBytes::new(py, &v)))
}

pub(super) fn remove_and_get<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let key = bytes_of(key, "key")?;
    let old = db.run(py, |db| db.remove_and_get(&key))?;
    Ok(old.map(|v| PyBytes::new(py, &v)))
}

pub(super) fn compare_exchange_and_get<'py>(
    db: &Database,
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    expected: Option<Bound<'_, PyAny>>,
    desired: Option<Bound<'_, PyAny>>,
) -> PyResult<(bool, Option<Bound<'py, PyBytes>>)> {
    let key = bytes_of(key, "key")?;
    let expected = opt_bytes_of(&expected, "expected")?;
    let desired = opt_bytes_of(&desired, "desired")?;
    let expected = match expected.as_deref() {
        Some(ANY_DATA) => Expected::Any,
        other => Expected::from(other),
    };
    let desired = match desired.as_deref() {
        Some(ANY_DATA) => Desired::Keep,
        other => Desired::from(other),
    };
    let (done, old) = db.run(py, |db| db.compare_exchange_and_get(&key, expected, desired))?;
    Ok((done, old.map(|v| PyBytes::new(py, &v))))
}

pub(super) fn pop_first<'py>(
    db: &Database,
    py: Python<'py>,
    timeout: Option<f64>,
) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let wait = match timeout {
        None => None,
        Some(t) if t.is_nan() || t < 0.0 => {
            return Err(PyValueError::new_err(format!("timeout must be a number of seconds >= 0, not {t}")))
        }
        Some(t) => Some(Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX)),
    };
    let popped = db.run(py, |db| db.pop_first(wait))?;
    Ok(popped.map(|(k, v)| (PyBytes::new(py, &k), PyBytes::new(py, &v))))
}

pub(super) fn push_last<'py>(
    db: &Database,
    py: Python<'py>,
    value: &Bound<'_, PyAny>,
    wtime: Option<f64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let value = bytes_of(value, "value")?;
    let key = db.run(py, |db| db.push_last(&value, wtime))?;
    Ok(PyBytes::new(py, &key))
}

pub(super) fn rekey(
    db: &Database,
    py: Python<'_>,
    old_key: &Bound<'_, PyAny>,
    new_key: &Bound<'_, PyAny>,
    overwrite: bool,
    copying: bool,
) -> PyResult<()> {
    let (old_key, new_key) = (bytes_of(old_key, "old_key")?, bytes_of(new_key, "new_key")?);
    db.run(py, |db| {
        db.rekey(
            &old_key,
            &new_key,
            if copying { kuradb::dbm::Rekey::Copy } else { kuradb::dbm::Rekey::Move },
            if overwrite { kuradb::dbm::OnDuplicate::Replace } else { kuradb::dbm::OnDuplicate::Fail },
        )
    })
}
