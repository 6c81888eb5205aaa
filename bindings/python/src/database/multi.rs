//! Several records at once: get_multi, set_multi, remove_multi, update,
//! process_multi.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use kuradb::dbm::{Access, Dbm};

use std::borrow::Cow;

use kuradb::dbm::Action;

use super::{action_of, call_back, Database};
use crate::async_dbm::opt_pairs_of;
use crate::convert::{bytes_of, opt_bytes_of};
use crate::reference_api::ANY_DATA;

/// The pairs of a mapping, an iterable of pairs and keyword arguments.
pub(crate) fn pairs_of(
    records: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut pairs = Vec::new();
    if let Some(records) = records.filter(|r| !r.is_none()) {
        if records.hasattr("keys")? {
            for key in records.call_method0("keys")?.try_iter()? {
                let key = key?;
                let value = records.get_item(&key)?;
                pairs.push((bytes_of(&key, "key")?.into_owned(), bytes_of(&value, "value")?.into_owned()));
            }
        } else {
            for pair in records.try_iter()? {
                let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair?.extract()?;
                pairs.push((bytes_of(&key, "key")?.into_owned(), bytes_of(&value, "value")?.into_owned()));
            }
        }
    }
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            pairs.push((bytes_of(&key, "key")?.into_owned(), bytes_of(&value, "value")?.into_owned()));
        }
    }
    Ok(pairs)
}

pub(super) fn get_multi<'py>(
    db: &Database,
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let objects: Vec<Bound<'py, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
    let bytes = objects.iter().map(|k| bytes_of(k, "key")).collect::<PyResult<Vec<_>>>()?;
    let refs: Vec<&[u8]> = bytes.iter().map(|b| b.as_ref()).collect();
    let values = db.run(py, |db| db.get_multi(&refs))?;
    let out = PyDict::new(py);
    for (key, value) in objects.iter().zip(values) {
        if let Some(v) = value {
            out.set_item(key, PyBytes::new(py, &v))?;
        }
    }
    Ok(out)
}

pub(super) fn set_multi(
    db: &Database,
    py: Python<'_>,
    records: Option<&Bound<'_, PyAny>>,
    overwrite: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let pairs = pairs_of(records, kwargs)?;
    let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
    db.run(py, |db| if overwrite { db.set_multi(&refs) } else { db.insert_multi(&refs) })
}

pub(super) fn remove_multi(db: &Database, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<usize> {
    let objects: Vec<Bound<'_, PyAny>> = keys.try_iter()?.collect::<PyResult<_>>()?;
    let bytes = objects.iter().map(|k| bytes_of(k, "key")).collect::<PyResult<Vec<_>>>()?;
    let refs: Vec<&[u8]> = bytes.iter().map(|b| b.as_ref()).collect();
    db.run(py, |db| db.remove_multi(&refs))
}

pub(super) fn update(
    db: &Database,
    py: Python<'_>,
    records: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let pairs = pairs_of(records, kwargs)?;
    let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
    db.run(py, |db| refs.iter().try_for_each(|(k, v)| db.set(k, v)))
}

pub(super) fn append_multi(
    db: &Database,
    py: Python<'_>,
    records: Option<&Bound<'_, PyAny>>,
    delim: Option<Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let pairs = pairs_of(records, kwargs)?;
    let delim = opt_bytes_of(&delim, "delim")?.unwrap_or_default();
    let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| k.as_slice()).collect();
    db.run(py, |db| {
        db.process_multi(&keys, Access::ReadWrite, &mut |i, _, old| {
            let value = pairs[i].1.as_slice();
            match old {
                None => Action::set(value),
                Some(old) => Action::Set(Cow::Owned([old, &delim, value].concat())),
            }
        })
    })
}

pub(super) fn compare_exchange_multi(
    db: &Database,
    py: Python<'_>,
    expected: &Bound<'_, PyAny>,
    desired: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let (expected, desired) = (opt_pairs_of(expected)?, opt_pairs_of(desired)?);
    let keys: Vec<&[u8]> = expected.iter().chain(&desired).map(|(k, _)| k.as_slice()).collect();
    // As compare_exchange_and_get: an expected ANY_DATA is any value of an
    // existing record, which the core's compare_exchange_multi cannot say.
    let mut matched = true;
    db.run(py, |db| {
        db.process_multi(&keys, Access::ReadWrite, &mut |i, _, value| {
            if let Some((_, want)) = expected.get(i) {
                matched &= match want.as_deref() {
                    Some(ANY_DATA) => value.is_some(),
                    want => value == want,
                };
                return Action::Keep;
            }
            match (&desired[i - expected.len()].1, matched) {
                (_, false) => Action::Keep,
                (Some(v), true) => Action::set(v),
                (None, true) => Action::Remove,
            }
        })
    })?;
    Ok(matched)
}

pub(super) fn process_multi(
    db: &Database,
    py: Python<'_>,
    pairs: &Bound<'_, PyAny>,
    writable: bool,
) -> PyResult<()> {
    let mut keys = Vec::new();
    let mut funcs: Vec<PyObject> = Vec::new();
    for pair in pairs.try_iter()? {
        let (key, func): (Bound<'_, PyAny>, PyObject) = pair?.extract()?;
        keys.push(bytes_of(&key, "key")?.into_owned());
        funcs.push(func);
    }
    let wanted: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let (mut failure, guard) = (None, db.guard());
    db.run_calling_back(py, |db| {
        db.process_multi(
            &wanted,
            if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
            &mut |i, key, old| {
                call_back(guard, &mut failure, |py| {
                    let value = old.map(|v| PyBytes::new(py, v));
                    action_of(&funcs[i].call1(py, (PyBytes::new(py, key), value))?.into_bound(py))
                })
            },
        )
    })?;
    failure.map_or(Ok(()), Err)
}
