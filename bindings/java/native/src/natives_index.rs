//! The natives of the reference's `Index` and `IndexIterator`: kuradb's
//! [`AnyIndex`], a file index for a path, a memory one for an empty path.
//!
//! An iterator keeps its position in Java, as the pair it is at: each move
//! makes a short-lived cursor, jumps to that pair and steps from there (as
//! the Python binding's iterator does). So it borrows nothing between calls,
//! and pairs added or removed meanwhile never invalidate it.

use jni::objects::{JByteArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use kuradb::index::AnyIndex;
use kuradb::ErrorKind;

use crate::convert::{bytes, new_byte_arrays, opt_bytes, params, string};
use crate::handle::{free, object};
use crate::shared::{unshared, Shared};
use crate::throw::{check, fail, native};

type IndexHandle = Shared<AnyIndex>;

/// Moves a fresh cursor of `index` as `step` says and answers the pair it
/// is at.
fn move_cursor(
    index: &AnyIndex,
    step: jint,
    at: Option<(&[u8], &[u8])>,
) -> kuradb::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut cursor = index.index().cursor()?;
    match (step, at) {
        (STEP_FIRST, _) => cursor.first()?,
        (STEP_LAST, _) => cursor.last()?,
        (STEP_JUMP, Some((k, v))) => cursor.jump(k, Some(v))?,
        (STEP_NEXT, Some((k, v))) => {
            cursor.jump(k, Some(v))?;
            // At the pair itself, step past it; at a later one (the pair
            // was removed meanwhile), that one is the next.
            if cursor.get()?.is_some_and(|(ck, cv)| ck == k && cv == v) {
                cursor.next()?;
            }
        }
        (STEP_PREVIOUS, Some((k, v))) => {
            cursor.jump(k, Some(v))?;
            if cursor.get()?.is_some() {
                cursor.previous()?;
            } else {
                cursor.last()?;
            }
        }
        _ => return Ok(None),
    }
    cursor.get()
}

/// The steps of `indexStep`, as `tkrzw.IndexIterator` numbers them.
const STEP_FIRST: jint = 0;
const STEP_LAST: jint = 1;
const STEP_JUMP: jint = 2;
const STEP_NEXT: jint = 3;
const STEP_PREVIOUS: jint = 4;

native! {
    /// Opens an index (an empty path: in memory).
    fn Java_io_kuradb_Native_indexOpen(env, path: JString<'l>, writable: jboolean, pairs: JObjectArray<'l, JString<'l>>) -> jlong {
        let path = string(env, &path, "the path")?;
        let params = params(env, &pairs)?;
        let index = check(env, AnyIndex::open(&path, if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly }, &params))?;
        Ok(Shared::into_handle(index, "index"))
    }
}

native! {
    /// Closes the index; a closed one is left as it is.
    fn Java_io_kuradb_Native_indexClose(env, handle: jlong) -> () {
        let shared: &IndexHandle = object(env, handle)?;
        let Some(index) = shared.take() else { return Ok(()) };
        let closed = unshared(index, shared.what()).and_then(AnyIndex::close);
        check(env, closed)
    }
}

native! {
    /// Frees the handle's memory; the Java object's Cleaner calls it once.
    fn Java_io_kuradb_Native_indexFree(_env, handle: jlong) -> () {
        free::<IndexHandle>(handle);
        Ok(())
    }
}

native! {
    /// Whether the pair is there.
    fn Java_io_kuradb_Native_indexContains(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.index().check(&key, &value)))
    }
}

native! {
    /// The values of `key`, in order; at most `max` (0: all).
    fn Java_io_kuradb_Native_indexGetValues(env, handle: jlong, key: JByteArray<'l>, max: jint) -> JObjectArray<'l, JByteArray<'l>> {
        let key = bytes(env, &key, "the key")?;
        let max = usize::try_from(max.max(0)).unwrap_or(0);
        let values = object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.index().get_values(&key, max)))?;
        new_byte_arrays(env, values.iter().map(|v| Some(v.as_slice())))
    }
}

native! {
    /// Adds the pair.
    fn Java_io_kuradb_Native_indexAdd(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.index().add(&key, &value)))
    }
}

native! {
    /// Removes the pair; answers whether it was there.
    fn Java_io_kuradb_Native_indexRemove(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.index().remove(&key, &value)))
    }
}

native! {
    /// The number of pairs.
    fn Java_io_kuradb_Native_indexCount(env, handle: jlong) -> jlong {
        let n = object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.index().count()))?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

native! {
    /// The index file's path ("" in memory).
    fn Java_io_kuradb_Native_indexPath(env, handle: jlong) -> JString<'l> {
        let path = object::<IndexHandle>(env, handle)?.with(env, |_, i| {
            Ok(i.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default())
        })?;
        env.new_string(path)
    }
}

native! {
    /// Removes every pair.
    fn Java_io_kuradb_Native_indexClear(env, handle: jlong) -> () {
        object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.index().clear()))
    }
}

native! {
    /// Rewrites the index compactly.
    fn Java_io_kuradb_Native_indexRebuild(env, handle: jlong) -> () {
        object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.rebuild()))
    }
}

native! {
    /// Makes the changes reach the OS (`hard`: the device); nothing in memory.
    fn Java_io_kuradb_Native_indexSynchronize(env, handle: jlong, hard: jboolean) -> () {
        object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, i.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })))
    }
}

native! {
    /// Whether the index takes changes (one in memory always does).
    fn Java_io_kuradb_Native_indexIsWritable(env, handle: jlong) -> jboolean {
        object::<IndexHandle>(env, handle)?.with(env, |_, i| Ok(i.is_writable()))
    }
}

native! {
    /// Moves an iterator: `step` 0 first, 1 last, 2 jump to (`key`,
    /// `value`), 3 next after it, 4 previous before it; answers the pair
    /// reached as `{key, value}`, or null past either end.
    fn Java_io_kuradb_Native_indexStep(env, handle: jlong, step: jint, key: JByteArray<'l>, value: JByteArray<'l>) -> JObjectArray<'l, JByteArray<'l>> {
        let key = opt_bytes(env, &key)?;
        let value = opt_bytes(env, &value)?;
        if (STEP_JUMP..=STEP_PREVIOUS).contains(&step) && (key.is_none() || value.is_none()) {
            return fail(env, ErrorKind::InvalidArgument, "this step needs the pair the iterator is at");
        }
        let at = key.as_deref().zip(value.as_deref());
        let pair = object::<IndexHandle>(env, handle)?.with(env, |env, i| check(env, move_cursor(i, step, at)))?;
        match pair {
            Some((k, v)) => new_byte_arrays(env, [Some(k.as_slice()), Some(v.as_slice())].into_iter()),
            None => Ok(JObjectArray::default()),
        }
    }
}
