//! The Rust objects behind the `long` handles Java holds, and the one place
//! that turns a handle back into a reference.
//!
//! A handle is the address of a boxed [`Database`] or [`CursorHandle`].
//! Closing empties the box (the database or cursor is closed and its memory
//! returned) but leaves the box itself, so a call racing with `close` or made
//! after it finds it empty and throws instead of reading freed memory. The
//! box is freed by `free`, which the Java object's `Cleaner` calls once the
//! object is unreachable, so once no Java thread can pass the handle again.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use jni::sys::jlong;
use jni::Env;
use kuradb::dbm::any::AnyDbm;
use kuradb::ErrorKind;
use parking_lot::{Mutex, RwLock};

use crate::cursor::Slot;
use crate::throw::{fail, JResult};

thread_local! {
    /// The databases (by handle) whose Java callbacks this thread is inside.
    /// A call back into such a database would wait for ever for the record
    /// lock the callback's own call holds, so it is refused instead.
    static IN_CALLBACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// An open (or closed) database, as a Java `Dbm` holds it.
pub struct Database {
    /// The database; operations take the read lock, `close` the write lock.
    pub db: RwLock<Option<Arc<AnyDbm>>>,
    /// Every cursor opened on it, emptied when it closes.
    pub cursors: Mutex<Vec<Weak<Slot>>>,
}

/// A cursor, as a Java cursor holds it.
pub struct CursorHandle {
    /// The cursor's slot, which the database empties when it closes.
    pub slot: Arc<Slot>,
}

impl Database {
    /// A new handle for `db`.
    pub fn into_handle(db: AnyDbm) -> jlong {
        let boxed =
            Box::new(Database { db: RwLock::new(Some(Arc::new(db))), cursors: Mutex::new(Vec::new()) });
        Box::into_raw(boxed) as jlong
    }

    /// Runs `f` on the open database; throws if it is closed or if this
    /// thread is inside one of its callbacks.
    pub fn with<R>(
        &self,
        env: &mut Env<'_>,
        f: impl FnOnce(&mut Env<'_>, &Arc<AnyDbm>) -> JResult<R>,
    ) -> JResult<R> {
        if self.in_callback() {
            return fail(
                env,
                ErrorKind::Infeasible,
                "a database cannot be used or closed inside one of its callbacks: the callback runs \
                 under the record's lock, which the call would wait for; return the new value instead",
            );
        }
        let guard = self.db.read_recursive();
        match guard.as_ref() {
            Some(db) => f(env, db),
            None => fail(env, ErrorKind::Infeasible, "the database is not open"),
        }
    }

    /// Whether this thread is inside one of this database's callbacks.
    pub fn in_callback(&self) -> bool {
        let id = self as *const Database as usize;
        IN_CALLBACK.with(|ids| ids.borrow().contains(&id))
    }

    /// Runs `f` marked as inside this database's callbacks.
    pub fn as_callback<R>(&self, f: impl FnOnce() -> R) -> R {
        let id = self as *const Database as usize;
        IN_CALLBACK.with(|ids| ids.borrow_mut().push(id));
        let result = f();
        IN_CALLBACK.with(|ids| {
            let mut ids = ids.borrow_mut();
            if let Some(at) = ids.iter().rposition(|&x| x == id) {
                ids.remove(at);
            }
        });
        result
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
    Ok(unsafe { &*(handle as *const T) })
}

/// Frees the box behind a handle of type `T` (0 is ignored).
pub fn free<T>(handle: jlong) {
    if handle != 0 {
        // SAFETY: as in `object`: the handle came from `Box::into_raw` of a
        // `Box<T>`, and the Cleaner calls this once, when nothing else can use it.
        drop(unsafe { Box::from_raw(handle as *mut T) });
    }
}
