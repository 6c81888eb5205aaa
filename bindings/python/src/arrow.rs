//! Whole Arrow columns in one call: `DBM.set_arrow` writes a batch's keys
//! and values, `kuradb.shard_of_arrow` routes a batch's keys, without a
//! Python call per row. The arrays are read through pyarrow's `buffers()`
//! (validity, offsets, data), so the binding needs no Arrow library: only
//! pyarrow's binary and string layouts are taken. The extension is built
//! for the stable ABI from Python 3.9, which has no buffer protocol, so each
//! buffer's part the array uses is copied once into a `bytes` (a copy per
//! batch, not per row).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use kuradb::dbm::Dbm;

use crate::database::Database;

/// One pyarrow binary or string array: its offsets and data, copied out of
/// its buffers, and the offset of its first element in the data.
struct Column<'py> {
    /// What the column is called in errors ("key", "value").
    what: &'static str,
    /// The `len + 1` element boundaries, 4 or 8 bytes each (little-endian).
    offsets: Bound<'py, PyBytes>,
    data: Bound<'py, PyBytes>,
    /// The first boundary: where the data copied starts in the buffer.
    base: i64,
    len: usize,
    /// 8-byte offsets (large_binary, large_string) rather than 4.
    wide: bool,
}

/// Bytes `from..from + len` of a pyarrow buffer (or None, an empty one).
fn copy_of<'py>(
    py: Python<'py>,
    buffer: &Bound<'py, PyAny>,
    from: usize,
    len: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    if buffer.is_none() || len == 0 {
        return Ok(PyBytes::new(py, &[]));
    }
    let size: usize = buffer.getattr("size")?.extract()?;
    if from.checked_add(len).is_none_or(|end| end > size) {
        return Err(PyValueError::new_err("an Arrow buffer shorter than its array says"));
    }
    Ok(buffer.call_method1("slice", (from, len))?.call_method0("to_pybytes")?.downcast_into::<PyBytes>()?)
}

impl<'py> Column<'py> {
    /// Takes the buffers of `array`, a pyarrow array of type binary, string,
    /// large_binary or large_string without nulls.
    fn of(array: &Bound<'py, PyAny>, what: &'static str) -> PyResult<Column<'py>> {
        let py = array.py();
        if !array.hasattr("buffers")? || !array.hasattr("type")? || !array.hasattr("offset")? {
            return Err(PyTypeError::new_err(format!(
                "the {what} column must be a pyarrow Array (binary or string), not {}",
                array.get_type().name()?
            )));
        }
        let type_name = array.getattr("type")?.str()?.to_string();
        let wide = match type_name.as_str() {
            "binary" | "string" => false,
            "large_binary" | "large_string" => true,
            other => {
                return Err(PyTypeError::new_err(format!(
                "the {what} column is of Arrow type {other}; kuradb takes binary, string, large_binary or \
                     large_string"
            )))
            }
        };
        let start: usize = array.getattr("offset")?.extract()?;
        let len: usize = array.len()?;
        let null_count: usize = array.getattr("null_count")?.extract()?;
        let buffers = array.call_method0("buffers")?;
        if null_count > 0 {
            let bits = copy_of(py, &buffers.get_item(0)?, start / 8, (start + len).div_ceil(8) - start / 8)?;
            let bits = bits.as_bytes();
            let row = (0..len).find(|&i| {
                let bit = start % 8 + i;
                !matches!(bits.get(bit / 8), Some(b) if b & (1 << (bit % 8)) != 0)
            });
            return Err(PyValueError::new_err(format!(
                "the {what} column has a null at row {}: kuradb records have no null keys or values",
                row.unwrap_or(0)
            )));
        }
        let width = if wide { 8 } else { 4 };
        let offsets = copy_of(py, &buffers.get_item(1)?, start * width, (len + 1) * width)?;
        if offsets.as_bytes().len() != (len + 1) * width {
            return Err(PyValueError::new_err(format!("the {what} column has no offsets buffer")));
        }
        let mut column = Column { what, offsets, data: PyBytes::new(py, &[]), base: 0, len, wide };
        let (first, last) = (column.offset(0), column.offset(len));
        if first < 0 || last < first {
            return Err(PyValueError::new_err(format!("the {what} column's offsets go backwards")));
        }
        column.base = first;
        column.data = copy_of(py, &buffers.get_item(2)?, first as usize, (last - first) as usize)?;
        column.check()?;
        Ok(column)
    }

    /// The raw boundary `i` (from 0 to `len`), as the buffer holds it.
    fn offset(&self, i: usize) -> i64 {
        let offsets = self.offsets.as_bytes();
        if self.wide {
            let b = &offsets[i * 8..i * 8 + 8];
            i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
        } else {
            let b = &offsets[i * 4..i * 4 + 4];
            i64::from(i32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
        }
    }

    /// Refuses offsets that lie outside the data or go backwards, so that
    /// [`Column::value`] never reads out of bounds.
    fn check(&self) -> PyResult<()> {
        let end = self.base + self.data.as_bytes().len() as i64;
        let mut previous = self.base;
        for i in 1..=self.len {
            let next = self.offset(i);
            if next < previous || next > end {
                return Err(PyValueError::new_err(format!(
                    "the {} column's offsets lie outside its data",
                    self.what
                )));
            }
            previous = next;
        }
        Ok(())
    }

    /// The columns' rows as slices, for use without the GIL.
    fn rows(&self) -> Vec<&[u8]> {
        let data = self.data.as_bytes();
        (0..self.len)
            .map(|i| {
                let (from, to) =
                    ((self.offset(i) - self.base) as usize, (self.offset(i + 1) - self.base) as usize);
                &data[from..to]
            })
            .collect()
    }
}

/// Sets one record per row of `keys` and `values` (pyarrow arrays of equal
/// length) with the GIL released; answers the number of rows.
pub(crate) fn set_arrow(
    db: &Database,
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    values: &Bound<'_, PyAny>,
) -> PyResult<usize> {
    let (keys, values) = (Column::of(keys, "key")?, Column::of(values, "value")?);
    if keys.len != values.len {
        return Err(PyValueError::new_err(format!(
            "the key column has {} rows but the value column {}",
            keys.len, values.len
        )));
    }
    let (keys, values) = (keys.rows(), values.rows());
    db.run(py, |db| {
        for (key, value) in keys.iter().zip(&values) {
            db.set(key, value)?;
        }
        Ok(keys.len())
    })
}

/// The shard of `num_shards` each key of `keys` (a pyarrow binary or string
/// array without nulls) lives in, as a pyarrow int32 array: what
/// `kuradb.shard_of` answers for each, in one call.
#[pyfunction]
pub fn shard_of_arrow<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    num_shards: i64,
) -> PyResult<Bound<'py, PyAny>> {
    let count = crate::utility::shard_count(num_shards)?;
    let column = Column::of(keys, "key")?;
    let rows = column.rows();
    let ids: Vec<u8> = py.allow_threads(|| {
        let mut out = Vec::with_capacity(rows.len() * 4);
        for key in &rows {
            // The count was checked above, so routing cannot fail.
            let shard = kuradb::dbm::shard::shard_of(key, count).unwrap_or(0) as i32;
            out.extend_from_slice(&shard.to_le_bytes());
        }
        out
    });
    let pyarrow = py.import("pyarrow")?;
    let buffer = pyarrow.call_method1("py_buffer", (PyBytes::new(py, &ids),))?;
    let buffers = PyList::new(py, [py.None().into_bound(py), buffer])?;
    pyarrow
        .getattr("Array")?
        .call_method1("from_buffers", (pyarrow.call_method0("int32")?, rows.len(), buffers))
}

/// Adds the function to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(shard_of_arrow, m)?)
}
