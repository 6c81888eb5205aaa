//! The one way a native calls into what a Ruby object holds open (a
//! database, a file, an index, a cursor): take the handle's lock, release
//! the VM lock if asked, call, turn a core error into a Ruby exception.
//!
//! The handle's lock is taken and dropped on the far side of the release,
//! never across it: a thread holding it would otherwise wait for the VM
//! lock, which another thread may hold while it waits for this lock (a
//! `close`, say). What runs there is `Send` and holds no Ruby object (see
//! [`crate::nogvl`]): callers copy keys and values out of Ruby Strings
//! before, and make Ruby objects from the answer after.

use std::sync::Arc;

use magnus::{Error, Ruby};
use parking_lot::{Mutex, RwLock};

use crate::error::to_rb;
use crate::nogvl::released_if;

/// A Ruby object's slot for what it holds open: nothing once closed.
pub trait Handle: Sync {
    /// How a call sees the open thing while the lock is held.
    type Open<'a>
    where
        Self: 'a;

    /// Takes the lock and runs `f` on the open thing, or on `None` if closed.
    fn hold<R>(&self, f: impl FnOnce(Option<Self::Open<'_>>) -> R) -> R;
}

/// Shared by a handle's calls (the read lock; open and close take the write
/// lock). Recursive: a reader never waits behind a writer that waits for
/// another reader of the same thread.
impl<T: ?Sized + Send + Sync> Handle for RwLock<Option<Arc<T>>> {
    type Open<'a>
        = &'a T
    where
        Self: 'a;

    fn hold<R>(&self, f: impl FnOnce(Option<&T>) -> R) -> R {
        f(self.read_recursive().as_deref())
    }
}

/// Used by one call at a time (a cursor, which moves).
impl<T: Send> Handle for Mutex<Option<T>> {
    type Open<'a>
        = &'a mut T
    where
        Self: 'a;

    fn hold<R>(&self, f: impl FnOnce(Option<&mut T>) -> R) -> R {
        f(self.lock().as_mut())
    }
}

/// Runs `f` on what `handle` holds open, with the VM lock released if
/// `release`; `closed` is the error of a handle that holds nothing.
pub fn call<H: Handle + ?Sized, R: Send>(
    ruby: &Ruby,
    handle: &H,
    release: bool,
    closed: fn() -> kuradb::Error,
    f: impl FnOnce(H::Open<'_>) -> kuradb::Result<R> + Send,
) -> Result<R, Error> {
    let run = move || handle.hold(|open| open.map_or_else(|| Err(closed()), f));
    released_if(release, run).map_err(|e| to_rb(ruby, e))
}
