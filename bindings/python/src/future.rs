//! `kuradb.Future`: the result of an `AsyncDBM` operation, awaitable under
//! asyncio and also waitable by blocking, like the reference's `tkrzw.Future`.
//!
//! Each Python future holds the binding core's [`BlockingFuture`] and
//! registers one waker with it when made. The waker runs on the worker that
//! finished the operation and, for each coroutine awaiting, asks that
//! coroutine's event loop (`call_soon_threadsafe`, the only step that takes
//! the GIL) to hand the result to its asyncio future. Threads blocked in
//! `get` or `wait` wait in the core future with the GIL released. The result
//! becomes a Python object on the thread that asks for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

use parking_lot::Mutex;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use kuradb::DbmFuture;
use kuradb_binding::future::BlockingFuture;

use crate::error::to_py;

/// What an operation answers, before it becomes a Python object.
pub enum Answer {
    /// Nothing (set, clear, …): Python `None`.
    Unit,
    /// A flag (remove, compare_exchange).
    Bool(bool),
    /// A number (increment).
    Int(i64),
    /// A count (remove_multi).
    Count(usize),
    /// A value or its absence (get).
    Value(Option<Vec<u8>>),
    /// Values in the order of the keys asked for (get_multi).
    Values(Vec<Option<Vec<u8>>>),
    /// A record or its absence (pop_first).
    Record(Option<(Vec<u8>, Vec<u8>)>),
    /// Keys (search).
    Keys(Vec<Vec<u8>>),
    /// Records (a snapshot's or transaction's items): a list of pairs.
    Records(Vec<(Vec<u8>, Vec<u8>)>),
}

macro_rules! answer_from {
    ($($t:ty => $variant:ident),*) => {
        $(impl From<$t> for Answer {
            fn from(v: $t) -> Answer {
                Answer::$variant(v)
            }
        })*
    };
}
answer_from!(
    bool => Bool,
    i64 => Int,
    usize => Count,
    Option<Vec<u8>> => Value,
    Vec<Option<Vec<u8>>> => Values,
    Option<(Vec<u8>, Vec<u8>)> => Record,
    Vec<Vec<u8>> => Keys,
    Vec<(Vec<u8>, Vec<u8>)> => Records
);

impl From<()> for Answer {
    fn from(_: ()) -> Answer {
        Answer::Unit
    }
}

/// How an answer becomes a Python object.
pub enum Shape {
    /// As it is: bytes for values.
    Plain,
    /// Values decoded from UTF-8 to str.
    Str,
    /// A dict from each key object asked for that has a value to its value.
    Dict(Vec<PyObject>),
}

/// What the worker's waker and the Python side share.
struct Shared {
    future: BlockingFuture<Answer>,
    /// The awaiting coroutines: their event loop, `Future._deliver` and their
    /// asyncio future. Pushed only while the operation has not run, under
    /// this lock, which the waker takes after it has.
    waiters: Mutex<Vec<(PyObject, PyObject, PyObject)>>,
    /// The waker saw the operation run: set before it takes `waiters`, so
    /// that an awaiter who finds it unset under that lock is handed the
    /// result by the waker. Read under the lock without letting go of the
    /// GIL, which a thread holding `waiters` must never wait for.
    completed: AtomicBool,
}

/// The waker registered with the operation's future.
struct Notify(Arc<Shared>);

impl Wake for Notify {
    fn wake(self: Arc<Self>) {
        let shared = Arc::clone(&self.0);
        if !shared.future.poll_ready(&Waker::from(self)) {
            return;
        }
        shared.completed.store(true, Ordering::Release);
        let waiters = std::mem::take(&mut *shared.waiters.lock());
        if waiters.is_empty() {
            return;
        }
        Python::with_gil(|py| {
            for (event_loop, deliver, target) in waiters {
                // A loop closed meanwhile refuses; its coroutine is gone with it.
                let _ = event_loop.call_method1(py, "call_soon_threadsafe", (deliver, target));
            }
        });
    }
}

/// The result of an `AsyncDBM` operation, to come: await it in a coroutine,
/// or block for it with get().
#[pyclass(name = "Future", module = "kuradb", frozen)]
pub struct PyFuture {
    shared: Arc<Shared>,
    shape: Shape,
    /// The answer as a Python object (or exception), once made.
    outcome: Mutex<Option<PyResult<PyObject>>>,
}

impl PyFuture {
    /// Wraps `future`, whose answer will take `shape`.
    pub fn new<T: Into<Answer> + Send + 'static>(future: DbmFuture<T>, shape: Shape) -> PyFuture {
        let shared = Arc::new(Shared {
            future: BlockingFuture::new(future, Into::into),
            waiters: Mutex::new(Vec::new()),
            completed: AtomicBool::new(false),
        });
        if shared.future.poll_ready(&Waker::from(Arc::new(Notify(Arc::clone(&shared))))) {
            // Run already: no waker will say so.
            shared.completed.store(true, Ordering::Release);
        }
        PyFuture { shared, shape, outcome: Mutex::new(None) }
    }

    /// Whether the operation has run. Asked without the GIL: the core
    /// future's lock may be held by a thread blocked in `get`.
    fn is_done(&self, py: Python<'_>) -> bool {
        py.allow_threads(|| self.shared.future.wait_for(Some(std::time::Duration::ZERO)))
    }

    /// The outcome as Python sees it, if the answer has come.
    fn outcome(&self, py: Python<'_>) -> Option<PyResult<PyObject>> {
        // Asked before the lock is taken: `is_done` lets go of the GIL, and a
        // thread holding `outcome` while it waits for the GIL would stall
        // for ever one that holds the GIL and waits for `outcome`.
        // A statement of its own, so that the lock's guard ends with it.
        let known = self.outcome.lock().is_some();
        if !known && !self.is_done(py) {
            return None;
        }
        let mut outcome = self.outcome.lock();
        if outcome.is_none() {
            let answer = self.shared.future.collect();
            *outcome = Some(answer.map_err(to_py).and_then(|a| self.to_object(py, a)));
        }
        outcome.as_ref().map(|o| match o {
            Ok(obj) => Ok(obj.clone_ref(py)),
            Err(e) => Err(e.clone_ref(py)),
        })
    }

    fn to_object(&self, py: Python<'_>, answer: Answer) -> PyResult<PyObject> {
        let value = |v: Option<Vec<u8>>| -> PyResult<PyObject> {
            Ok(match (v, &self.shape) {
                (None, _) => py.None(),
                (Some(v), Shape::Str) => PyString::new(py, &String::from_utf8_lossy(&v)).into_any().unbind(),
                (Some(v), _) => PyBytes::new(py, &v).into_any().unbind(),
            })
        };
        Ok(match answer {
            Answer::Unit => py.None(),
            Answer::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
            Answer::Int(n) => n.into_pyobject(py)?.into_any().unbind(),
            Answer::Count(n) => n.into_pyobject(py)?.into_any().unbind(),
            Answer::Value(v) => value(v)?,
            Answer::Record(None) => py.None(),
            Answer::Record(Some((k, v))) => {
                (value(Some(k))?, value(Some(v))?).into_pyobject(py)?.into_any().unbind()
            }
            Answer::Keys(keys) => {
                let keys = keys.into_iter().map(|k| value(Some(k))).collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, keys)?.into_any().unbind()
            }
            Answer::Records(records) => {
                let pairs = records
                    .into_iter()
                    .map(|(k, v)| Ok((value(Some(k))?, value(Some(v))?).into_pyobject(py)?.into_any()))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, pairs)?.into_any().unbind()
            }
            Answer::Values(values) => {
                let dict = PyDict::new(py);
                if let Shape::Dict(keys) = &self.shape {
                    for (key, v) in keys.iter().zip(values) {
                        if v.is_some() {
                            dict.set_item(key, value(v)?)?;
                        }
                    }
                }
                dict.into_any().unbind()
            }
        })
    }

    /// Blocks, with the GIL released, until the answer comes or `timeout`
    /// seconds pass (`None`: no limit); answers whether it came.
    fn block(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let limit = match timeout {
            Some(t) if !(t >= 0.0 && t.is_finite()) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "timeout must be a finite number of seconds ≥ 0, not {t}"
                )))
            }
            Some(t) => Some(std::time::Duration::from_secs_f64(t)),
            None => None,
        };
        Ok(py.allow_threads(|| self.shared.future.wait_for(limit)))
    }
}

#[pymethods]
impl PyFuture {
    /// Whether the operation has run.
    fn done(&self, py: Python<'_>) -> bool {
        self.is_done(py)
    }

    /// Blocks until the operation has run or `timeout` seconds have passed
    /// (None: no limit); answers whether it has run.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        self.block(py, timeout)
    }

    /// Blocks until the operation has run and answers its result, or raises
    /// its error. Blocking in a coroutine stops its event loop: await instead.
    fn get(&self, py: Python<'_>) -> PyResult<PyObject> {
        self.block(py, None)?;
        self.outcome(py).unwrap_or_else(|| Err(PyRuntimeError::new_err("the future has no result")))
    }

    /// Awaiting needs a running asyncio event loop; the coroutine sleeps
    /// until a worker has run the operation.
    fn __await__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        let py = slf.py();
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop").map_err(|_| {
            PyRuntimeError::new_err(
                "awaiting a kuradb.Future needs a running asyncio event loop; outside one, call its get() method",
            )
        })?;
        let target = event_loop.call_method0("create_future")?;
        let deliver = slf.getattr("_deliver")?;
        let queued = {
            let mut waiters = slf.get().shared.waiters.lock();
            let queued = !slf.get().shared.completed.load(Ordering::Acquire);
            if queued {
                waiters.push((event_loop.unbind(), deliver.clone().unbind(), target.clone().unbind()));
            }
            queued
        };
        if !queued {
            deliver.call1((&target,))?;
        }
        Ok(target.call_method0("__await__")?.unbind())
    }

    /// Hands the result to an asyncio future, on its loop (unless cancelled).
    fn _deliver(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        if target.call_method0("done")?.is_truthy()? {
            return Ok(());
        }
        match self.outcome(py) {
            Some(Ok(obj)) => target.call_method1("set_result", (obj,))?,
            Some(Err(e)) => target.call_method1("set_exception", (e.value(py),))?,
            None => return Err(PyRuntimeError::new_err("kuradb.Future delivered before its result came")),
        };
        Ok(())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<kuradb.Future: {}>", if self.is_done(py) { "done" } else { "pending" })
    }
}
