//! The reference's utility functions (`kuradb::utility`) for the compat
//! module's `Utility` class.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The reference's primary hash; `num_buckets` 0 is the whole 64-bit range.
#[pyfunction]
#[pyo3(signature = (data, num_buckets = 0))]
pub fn primary_hash(data: &[u8], num_buckets: u64) -> u64 {
    kuradb::utility::primary_hash(data, num_buckets)
}

/// The reference's secondary hash; `num_shards` 0 is the whole 64-bit range.
#[pyfunction]
#[pyo3(signature = (data, num_shards = 0))]
pub fn secondary_hash(data: &[u8], num_shards: u64) -> u64 {
    kuradb::utility::secondary_hash(data, num_shards)
}

/// The shard of a set of `num_shards` that `key` (bytes, or str as UTF-8)
/// lives in: the function a shard set and a published directory route keys
/// with, so a writer of one shard keeps the keys it answers that shard for.
#[pyfunction]
pub fn shard_of(key: &Bound<'_, PyAny>, num_shards: i64) -> PyResult<usize> {
    let key = crate::convert::bytes_of(key, "key")?;
    kuradb::dbm::shard::shard_of(&key, shard_count(num_shards)?).map_err(crate::error::to_py)
}

/// `num_shards` as given from Python, refused unless a shard set may have
/// that many shards (1 to `MAX_SHARDS`).
pub(crate) fn shard_count(num_shards: i64) -> PyResult<usize> {
    let max = kuradb::dbm::shard::MAX_SHARDS;
    usize::try_from(num_shards).ok().filter(|n| (1..=max).contains(n)).ok_or_else(|| {
        crate::error::to_py(kuradb::Error::new(
            kuradb::ErrorKind::InvalidArgument,
            format!("the number of shards must be from 1 to {max}, not {num_shards}"),
        ))
    })
}

/// The Levenshtein distance of two strings, in characters.
#[pyfunction]
pub fn edit_distance_lev(a: &str, b: &str) -> usize {
    kuradb::utility::edit_distance_lev(a, b)
}

/// The process's resident memory in bytes.
#[pyfunction]
pub fn memory_usage() -> u64 {
    kuradb::utility::memory_usage()
}

/// The machine's total memory in bytes.
#[pyfunction]
pub fn memory_capacity() -> u64 {
    kuradb::utility::memory_capacity()
}

/// An integer as the reference's 8 big-endian bytes.
#[pyfunction]
fn serialize_int(py: Python<'_>, num: i64) -> Bound<'_, PyBytes> {
    PyBytes::new(py, &kuradb_binding::serialize::serialize_int(num))
}

/// The integer of a big-endian sequence, as the reference reads it.
#[pyfunction]
fn deserialize_int(data: &[u8]) -> i64 {
    kuradb_binding::serialize::deserialize_int(data)
}

/// A floating-point number as the reference's 8 big-endian bytes.
#[pyfunction]
fn serialize_float(py: Python<'_>, num: f64) -> Bound<'_, PyBytes> {
    PyBytes::new(py, &kuradb_binding::serialize::serialize_float(num))
}

/// The number of a big-endian IEEE single or double (else NaN).
#[pyfunction]
fn deserialize_float(data: &[u8]) -> f64 {
    kuradb_binding::serialize::deserialize_float(data)
}

/// The lines of `text` matching `pattern` in the search `mode` (the
/// reference's names: "contain", "begin", "end", "regex", "edit",
/// "editbin", …), at most `capacity` (0: all), without their line feeds.
#[pyfunction]
#[pyo3(signature = (text, mode, pattern, capacity = 0))]
fn search_lines<'py>(
    py: Python<'py>,
    text: &[u8],
    mode: &str,
    pattern: &[u8],
    capacity: usize,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let mode: kuradb::dbm::SearchMode = mode.parse().map_err(crate::error::to_py)?;
    let lines = py
        .allow_threads(|| kuradb::dbm::search::search_lines(text, mode, pattern, capacity))
        .map_err(crate::error::to_py)?;
    Ok(lines.iter().map(|line| PyBytes::new(py, line)).collect())
}

/// Adds the functions to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serialize_int, m)?)?;
    m.add_function(wrap_pyfunction!(deserialize_int, m)?)?;
    m.add_function(wrap_pyfunction!(serialize_float, m)?)?;
    m.add_function(wrap_pyfunction!(deserialize_float, m)?)?;
    m.add_function(wrap_pyfunction!(primary_hash, m)?)?;
    m.add_function(wrap_pyfunction!(secondary_hash, m)?)?;
    m.add_function(wrap_pyfunction!(shard_of, m)?)?;
    m.add_function(wrap_pyfunction!(edit_distance_lev, m)?)?;
    m.add_function(wrap_pyfunction!(memory_usage, m)?)?;
    m.add_function(wrap_pyfunction!(memory_capacity, m)?)?;
    m.add_function(wrap_pyfunction!(search_lines, m)?)?;
    Ok(())
}
