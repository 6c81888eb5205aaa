//! The natives of a cursor.

use jni::objects::{JByteArray, JObjectArray};
use jni::sys::{jboolean, jlong};
use jni::Env;
use kuradb::dbm::Cursor;
use kuradb::ErrorKind;

use crate::convert::{bytes, new_byte_arrays};
use crate::handle::{free, object, CursorHandle, Database};
use crate::throw::{check, native, JResult};
use kuradb_binding::cursor::with_slot;

/// The error of a cursor whose cursor or database closed.
fn closed() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the cursor or its database is closed")
}

/// Runs `f` on the cursor of `handle`; throws if it or its database closed.
fn with_cursor<R>(
    env: &mut Env<'_>,
    handle: jlong,
    f: impl FnOnce(&mut dyn Cursor) -> kuradb::Result<R>,
) -> JResult<R> {
    let cursor: &CursorHandle = object(env, handle)?;
    check(env, with_slot(&cursor.slot, closed, f))
}

native! {
    /// A new cursor on the database, not yet positioned.
    fn Java_io_kuradb_Native_cursorNew(env, handle: jlong) -> jlong {
        let database: &Database = object(env, handle)?;
        let slot = check(env, database.open.new_cursor())?;
        Ok(CursorHandle::into_handle(slot))
    }
}

native! {
    /// Closes the cursor (a closed one is left as it is).
    fn Java_io_kuradb_Native_cursorClose(env, handle: jlong) -> () {
        let cursor: &CursorHandle = object(env, handle)?;
        let live = cursor.slot.lock().take();
        drop(live);
        Ok(())
    }
}

native! {
    /// Frees the cursor handle's memory; the Cleaner calls it once.
    fn Java_io_kuradb_Native_cursorFree(_env, handle: jlong) -> () {
        free::<CursorHandle>(handle);
        Ok(())
    }
}

native! {
    /// Moves to the first record.
    fn Java_io_kuradb_Native_cursorFirst(env, handle: jlong) -> () {
        with_cursor(env, handle, |c| c.first())
    }
}

native! {
    /// Moves to the last record (ordered databases).
    fn Java_io_kuradb_Native_cursorLast(env, handle: jlong) -> () {
        with_cursor(env, handle, |c| c.last())
    }
}

native! {
    /// Moves to `key` (or, in an ordered database, the first key after it).
    fn Java_io_kuradb_Native_cursorJump(env, handle: jlong, key: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        with_cursor(env, handle, |c| c.jump(&key))
    }
}

native! {
    /// Moves to the last key before `key` (or equal, if `inclusive`).
    fn Java_io_kuradb_Native_cursorJumpLower(env, handle: jlong, key: JByteArray<'l>, inclusive: jboolean) -> () {
        let key = bytes(env, &key, "the key")?;
        with_cursor(env, handle, |c| c.jump_lower(&key, if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive }))
    }
}

native! {
    /// Moves to the first key after `key` (or equal, if `inclusive`).
    fn Java_io_kuradb_Native_cursorJumpUpper(env, handle: jlong, key: JByteArray<'l>, inclusive: jboolean) -> () {
        let key = bytes(env, &key, "the key")?;
        with_cursor(env, handle, |c| c.jump_upper(&key, if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive }))
    }
}

native! {
    /// Moves to the next record.
    fn Java_io_kuradb_Native_cursorNext(env, handle: jlong) -> () {
        with_cursor(env, handle, |c| c.next())
    }
}

native! {
    /// Moves to the previous record (ordered databases).
    fn Java_io_kuradb_Native_cursorPrevious(env, handle: jlong) -> () {
        with_cursor(env, handle, |c| c.previous())
    }
}

native! {
    /// The current record as `{key, value}`, or null past the end.
    fn Java_io_kuradb_Native_cursorGet(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        match with_cursor(env, handle, |c| c.get())? {
            Some((k, v)) => new_byte_arrays(env, [Some(k.as_slice()), Some(v.as_slice())].into_iter()),
            None => Ok(JObjectArray::default()),
        }
    }
}

native! {
    /// Gets the current record and moves to the next: `{key, value}`, or null.
    fn Java_io_kuradb_Native_cursorStep(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        let record = with_cursor(env, handle, |c| {
            let record = c.get()?;
            if record.is_some() {
                c.next()?;
            }
            Ok(record)
        })?;
        match record {
            Some((k, v)) => new_byte_arrays(env, [Some(k.as_slice()), Some(v.as_slice())].into_iter()),
            None => Ok(JObjectArray::default()),
        }
    }
}

native! {
    /// Replaces the current record's value.
    fn Java_io_kuradb_Native_cursorSet(env, handle: jlong, value: JByteArray<'l>) -> () {
        let value = bytes(env, &value, "the value")?;
        with_cursor(env, handle, |c| c.set(&value))
    }
}

native! {
    /// Removes the current record.
    fn Java_io_kuradb_Native_cursorRemove(env, handle: jlong) -> () {
        with_cursor(env, handle, |c| c.remove())
    }
}
