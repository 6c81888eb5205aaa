//! The Rust objects behind the `long` handles Java holds, and the one place
//! that turns a handle back into a reference.
//!
//! A handle is the address of a boxed [`Database`] or [`CursorHandle`].
//! Closing empties the box (the database or cursor is closed and its memory
//! returned) but leaves the box itself, so a call racing with `close` or made
//! after it finds it empty and throws instead of reading freed memory. The
//! box is freed by `free`, which the Java object's `Cleaner` calls once the
//! object is unreachable, so once no Java thread can pass the handle again.

use std::sync::Arc;

use jni::sys::jlong;
use jni::Env;
use kuradb::ErrorKind;
use kuradb_binding::cursor::Slot;
use kuradb_binding::handle::Db;
use kuradb_binding::handle::OpenHandle;

use crate::throw::{fail, throw, JResult};

/// An open (or closed) database, as a Java `Dbm` holds it: the binding
/// core's handle, with its cursor slots and callback guard.
pub struct Database {
    /// The database and what it shares with its cursors.
    pub open: OpenHandle,
}

/// A cursor, as a Java cursor holds it.
pub struct CursorHandle {
    /// The cursor's slot, which the database empties when it closes.
    pub slot: Arc<Slot>,
}

impl Database {
    /// A new handle for `db`.
    pub fn into_handle(db: Db) -> jlong {
        Box::into_raw(Box::new(Database { open: OpenHandle::new(db) })) as jlong
    }

    /// Runs `f` on the open database; throws if it is closed or if this
    /// thread is inside one of its callbacks.
    pub fn with<R>(
        &self,
        env: &mut Env<'_>,
        f: impl FnOnce(&mut Env<'_>, &Arc<Db>) -> JResult<R>,
    ) -> JResult<R> {
        match self.open.with(|db| Ok(f(env, db))) {
            Ok(result) => result,
            Err(e) => Err(throw(env, &e)),
        }
    }

    /// Runs `f` marked as inside this database's callbacks.
    pub fn as_callback<R>(&self, f: impl FnOnce() -> R) -> R {
        self.open.guard().run_callbacks(f)
    }
}

impl CursorHandle {
    /// A new handle for `slot`.
    pub fn into_handle(slot: Arc<Slot>) -> jlong {
        Box::into_raw(Box::new(CursorHandle { slot })) as jlong
    }
}

/// The object behind a handle of type `T`; throws on a zero handle.
pub fn object<'a, T>(env: &mut Env<'_>, handle: jlong) -> JResult<&'a T> {
    if handle == 0 {
        return fail(env, ErrorKind::Infeasible, "the object is not open (its handle is 0)");
    }
    // SAFETY: a non-zero handle is the address `into_handle` returned for a
    // `Box<T>` of this type (the Java classes pass each handle only to the
    // natives of its own type), and the box is freed only by `free`, which
    // the Java side calls once, from the Cleaner, after the owning object is
    // unreachable: no call can pass the handle after that.
    #[allow(unsafe_code)]
    let object = unsafe { &*(handle as *const T) };
    Ok(object)
}

/// Frees the box behind a handle of type `T` (0 is ignored).
pub fn free<T>(handle: jlong) {
    if handle != 0 {
        // SAFETY: as in `object`: the handle came from `Box::into_raw` of a
        // `Box<T>`, and the Cleaner calls this once, when nothing else can use it.
        #[allow(unsafe_code)]
        let boxed = unsafe { Box::from_raw(handle as *mut T) };
        drop(boxed);
    }
}
