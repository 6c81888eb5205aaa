//! [`Shared`]: an object a Java handle holds that can be closed while other
//! threads use it, as the `tkrzw` package's `File`, `Index` and `AsyncDBM` are.

use std::sync::Arc;

use jni::sys::jlong;
use jni::Env;
use kuradb::ErrorKind;
use parking_lot::RwLock;

use crate::throw::{fail, JResult};

/// An open object (or, once closed, none). Calls hold the read lock while
/// they run, so `close` (the write lock) waits for them; an operation that
/// outlives its call (a task of an `AsyncDBM`) holds a clone of the `Arc`.
pub struct Shared<T> {
    inner: RwLock<Option<Arc<T>>>,
    what: &'static str,
}

impl<T> Shared<T> {
    /// A new handle for `value`, named `what` in errors ("file", "index").
    pub fn into_handle(value: T, what: &'static str) -> jlong {
        Box::into_raw(Box::new(Shared { inner: RwLock::new(Some(Arc::new(value))), what })) as jlong
    }

    /// Runs `f` on the open object; throws `INFEASIBLE` if it is closed.
    pub fn with<R>(
        &self,
        env: &mut Env<'_>,
        f: impl FnOnce(&mut Env<'_>, &Arc<T>) -> JResult<R>,
    ) -> JResult<R> {
        let guard = self.inner.read_recursive();
        match guard.as_ref() {
            Some(value) => f(env, value),
            None => fail(env, ErrorKind::Infeasible, &format!("the {} is not open", self.what)),
        }
    }

    /// A clone of the open object's `Arc`, for an operation that outlives the call.
    pub fn share(&self, env: &mut Env<'_>) -> JResult<Arc<T>> {
        self.with(env, |_, value| Ok(Arc::clone(value)))
    }

    /// Empties the handle once the calls in flight have finished; answers
    /// the object, or `None` if it was closed already.
    pub fn take(&self) -> Option<Arc<T>> {
        self.inner.write().take()
    }

    /// Whether the object is open.
    pub fn is_open(&self) -> bool {
        self.inner.read_recursive().is_some()
    }

    /// What the object is, for errors.
    pub fn what(&self) -> &'static str {
        self.what
    }
}

/// The object itself once no task shares it any more, or the error that says
/// which kind of task still does.
pub fn unshared<T>(value: Arc<T>, what: &str) -> kuradb::Result<T> {
    Arc::try_unwrap(value).map_err(|_| {
        kuradb::Error::new(
            ErrorKind::Infeasible,
            format!("the {what} is still used by a task of an AsyncDBM: wait for its future first"),
        )
    })
}
