//! `kuradb.UpdateLogReader`: the entries of update-log files (the
//! reference's message-queue format, what `ulog_prefix=` writes) over the
//! core's [`MessageQueueReader`], and `kuradb.UpdateLogEntry`, one of them.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use kuradb::ulog::{MessageQueueReader, UpdateEntry, UpdateOp};
use kuradb::ErrorKind;

use crate::convert::FsPath;
use crate::error::to_py;

/// How long one wait lasts with the GIL released before Ctrl-C is looked at.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// One entry of an update log: `op` is "SET", "REMOVE", "CLEAR" or "UNIT";
/// `key` is None for a clear and a unit, `value` None but for a set;
/// `changes`, for a unit only (a committed transaction's changes, to apply
/// together), is a list of `(key, value)` with `value` None for a removal.
#[pyclass(name = "UpdateLogEntry", module = "kuradb", frozen, get_all)]
pub struct PyUpdateLogEntry {
    /// Milliseconds since the epoch, when the entry was written.
    timestamp: u64,
    /// The server that wrote it (`ulog_server_id`).
    server_id: u32,
    /// Its database index (`ulog_dbm_index`; a shard's index).
    dbm_index: u32,
    /// "SET", "REMOVE", "CLEAR" or "UNIT".
    op: &'static str,
    key: Option<Py<PyBytes>>,
    value: Option<Py<PyBytes>>,
    /// A unit's changes: `(key, value)`, `value` None for a removal.
    changes: Option<Vec<UnitChange>>,
}

/// One change of a unit, as Python sees it: the key and the value (None
/// for a removal).
type UnitChange = (Py<PyBytes>, Option<Py<PyBytes>>);

#[pymethods]
impl PyUpdateLogEntry {
    fn __repr__(&self, py: Python<'_>) -> String {
        let show = |b: &Option<Py<PyBytes>>| match b {
            Some(b) => b.bind(py).repr().map(|r| r.to_string()).unwrap_or_default(),
            None => "None".into(),
        };
        format!(
            "UpdateLogEntry(timestamp={}, server_id={}, dbm_index={}, op={:?}, key={}, value={})",
            self.timestamp,
            self.server_id,
            self.dbm_index,
            self.op,
            show(&self.key),
            show(&self.value)
        )
    }
}

impl PyUpdateLogEntry {
    fn new(py: Python<'_>, timestamp: u64, entry: UpdateEntry) -> PyUpdateLogEntry {
        let bytes = |b: &[u8]| Some(PyBytes::new(py, b).unbind());
        let mut changes = None;
        let (op, key, value) = match &entry.op {
            UpdateOp::Set { key, value } => ("SET", bytes(key), bytes(value)),
            UpdateOp::Remove { key } => ("REMOVE", bytes(key), None),
            UpdateOp::Clear => ("CLEAR", None, None),
            UpdateOp::Unit { changes: made, .. } => {
                changes = Some(
                    made.iter()
                        .map(|(k, v)| (PyBytes::new(py, k).unbind(), v.as_deref().and_then(bytes)))
                        .collect(),
                );
                ("UNIT", None, None)
            }
        };
        PyUpdateLogEntry {
            timestamp,
            server_id: entry.server_id,
            dbm_index: entry.dbm_index,
            op,
            key,
            value,
            changes,
        }
    }
}

/// Reads the entries of the update-log files at `prefix` (`PREFIX.0000000000`,
/// …) whose timestamp (milliseconds) is at least `timestamp`, in the order
/// they were written, while another process (or this one) may go on writing
/// them. Iterating answers the entries there now; `read(timeout)` waits up
/// to `timeout` seconds for the next one.
#[pyclass(name = "UpdateLogReader", module = "kuradb", frozen)]
pub struct PyUpdateLogReader {
    reader: Mutex<Option<MessageQueueReader>>,
}

/// Reads one record with `reader`, waiting up to `wait`, and decodes it.
fn next_entry(
    reader: &Mutex<Option<MessageQueueReader>>,
    wait: Duration,
) -> kuradb::Result<Option<(u64, UpdateEntry)>> {
    let mut reader = reader.lock();
    let reader = reader
        .as_mut()
        .ok_or_else(|| kuradb::Error::new(ErrorKind::Infeasible, "the update log reader is closed"))?;
    match reader.read(wait)? {
        Some((timestamp, message)) => Ok(Some((timestamp, UpdateEntry::decode(&message)?))),
        None => Ok(None),
    }
}

#[pymethods]
impl PyUpdateLogReader {
    #[new]
    #[pyo3(signature = (prefix, timestamp = 0))]
    fn new(prefix: FsPath, timestamp: u64) -> PyUpdateLogReader {
        PyUpdateLogReader { reader: Mutex::new(Some(MessageQueueReader::new(&*prefix, timestamp))) }
    }

    /// The next entry, or None if none is written within `timeout` seconds
    /// (0: only one already there). The GIL is released while it waits, and
    /// Ctrl-C interrupts the wait.
    #[pyo3(signature = (timeout = 0.0))]
    fn read(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<PyUpdateLogEntry>> {
        if timeout.is_nan() || timeout < 0.0 {
            return Err(PyValueError::new_err(format!(
                "timeout must be a number of seconds >= 0, not {timeout}"
            )));
        }
        let deadline =
            Instant::now().checked_add(Duration::try_from_secs_f64(timeout).unwrap_or(Duration::MAX));
        loop {
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(Instant::now()));
            let got = py.allow_threads(|| next_entry(&self.reader, left.min(WAIT_SLICE))).map_err(to_py)?;
            if let Some((timestamp, entry)) = got {
                return Ok(Some(PyUpdateLogEntry::new(py, timestamp, entry)));
            }
            if left <= WAIT_SLICE {
                return Ok(None);
            }
            py.check_signals()?;
        }
    }

    /// Lets go of the files; reading afterwards is an error.
    fn close(&self, py: Python<'_>) {
        // A read of another thread may hold the reader for a moment of its wait.
        py.allow_threads(|| drop(self.reader.lock().take()));
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyUpdateLogEntry>> {
        self.read(py, 0.0)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }
}

/// Adds the classes to the native module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyUpdateLogReader>()?;
    m.add_class::<PyUpdateLogEntry>()?;
    Ok(())
}
