//! The natives of the reference's `AsyncDBM`: the core's [`AsyncDbm`] over
//! the database of a `DBM`, every operation answering a future handle
//! ([`crate::future`]).

use std::sync::Arc;

use jni::objects::{JByteArray, JObjectArray, JString};
use jni::sys::{jboolean, jdouble, jint, jlong};
use jni::Env;
use kuradb::dbm::{Dbm, SearchMode};
use kuradb::{AsyncDbm, DbmFuture, ErrorKind};
use kuradb_binding::handle::Db;

use crate::convert::{byte_arrays, bytes, keys, opt_bytes, params, string};
use crate::future::{FutureHandle, Outcome};
use crate::handle::{free, object, Database};
use crate::natives_file::{export_into, import_from, FileHandle};
use crate::natives_multi::keys_of_values;
use crate::shared::Shared;
use crate::synchronize::synchronize_with;
use crate::throw::{check, fail, native, JResult};

/// The handle type of a `tkrzw.AsyncDBM`.
type AsyncHandle = Shared<AsyncDbm<Db>>;

/// Queues `op` with `adb` (through the handle) and answers its future's handle.
fn queue<T: Send + 'static>(
    env: &mut Env<'_>,
    handle: jlong,
    op: impl FnOnce(&AsyncDbm<Db>) -> DbmFuture<T>,
    map: fn(T) -> Outcome,
) -> JResult<jlong> {
    object::<AsyncHandle>(env, handle)?.with(env, |_, adb| Ok(FutureHandle::into_handle(op(adb), map)))
}

fn done(_: ()) -> Outcome {
    Outcome::Done
}

native! {
    /// Puts the database of `db` behind `threads` worker threads.
    fn Java_io_kuradb_Native_asyncNew(env, db: jlong, threads: jint) -> jlong {
        let db = object::<Database>(env, db)?.with(env, |_, db| Ok(Arc::clone(db)))?;
        let Ok(threads) = usize::try_from(threads) else {
            return fail(env, ErrorKind::InvalidArgument, "the number of worker threads must be positive");
        };
        let adb = check(env, AsyncDbm::new(db, threads))?;
        Ok(Shared::into_handle(adb, "AsyncDBM"))
    }
}

native! {
    /// Waits for every queued task, stops the workers and lets go of the
    /// database; a destructed one is left as it is.
    fn Java_io_kuradb_Native_asyncDestruct(env, handle: jlong) -> () {
        if let Some(adb) = object::<AsyncHandle>(env, handle)?.take() {
            adb.close();
        }
        Ok(())
    }
}

native! {
    /// Frees the handle's memory; the Java object's Cleaner calls it once.
    fn Java_io_kuradb_Native_asyncFree(_env, handle: jlong) -> () {
        free::<AsyncHandle>(handle);
        Ok(())
    }
}

native! {
    /// The value of `key`: `{value or null}`.
    fn Java_io_kuradb_Native_asyncGet(env, handle: jlong, key: JByteArray<'l>) -> jlong {
        let key = bytes(env, &key, "the key")?;
        queue(env, handle, |adb| adb.get(key), Outcome::Value)
    }
}

native! {
    /// The values of `keys`, in order (null where absent).
    fn Java_io_kuradb_Native_asyncGetMulti(env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>) -> jlong {
        let keys = keys(env, &keys_array, "a key")?;
        queue(env, handle, |adb| adb.get_multi(&keys), Outcome::Values)
    }
}

native! {
    /// Stores a record; an existing key without `overwrite` is a DUPLICATION error.
    fn Java_io_kuradb_Native_asyncSet(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, overwrite: jboolean) -> jlong {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        queue(env, handle, |adb| if overwrite { adb.set(key, value) } else { adb.insert(key, value) }, done)
    }
}

native! {
    /// Stores every pair atomically.
    fn Java_io_kuradb_Native_asyncSetMulti(
        env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>, values_array: JObjectArray<'l, JByteArray<'l>>, overwrite: jboolean
    ) -> jlong {
        let keys = keys(env, &keys_array, "a key")?;
        let values = keys_of_values(env, &values_array, keys.len())?;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = keys.into_iter().zip(values).collect();
        queue(env, handle, |adb| if overwrite { adb.set_multi(&pairs) } else { adb.insert_multi(&pairs) }, done)
    }
}

native! {
    /// Stores, atomically, every pair whose key has no record:
    /// `{non-null if every key was absent}`.
    fn Java_io_kuradb_Native_asyncSetAbsentMulti(
        env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>, values_array: JObjectArray<'l, JByteArray<'l>>
    ) -> jlong {
        let keys = keys(env, &keys_array, "a key")?;
        let values = keys_of_values(env, &values_array, keys.len())?;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = keys.into_iter().zip(values).collect();
        queue(env, handle, |adb| adb.set_absent_multi(&pairs), |kept| Outcome::Flag(kept.is_empty()))
    }
}

native! {
    /// Removes a record: `{non-null if it existed}`.
    fn Java_io_kuradb_Native_asyncRemove(env, handle: jlong, key: JByteArray<'l>) -> jlong {
        let key = bytes(env, &key, "the key")?;
        queue(env, handle, |adb| adb.remove(key), Outcome::Flag)
    }
}

native! {
    /// Removes every key atomically: `{how many existed}`.
    fn Java_io_kuradb_Native_asyncRemoveMulti(env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>) -> jlong {
        let keys = keys(env, &keys_array, "a key")?;
        queue(env, handle, |adb| adb.remove_multi(&keys), |n| Outcome::Number(i64::try_from(n).unwrap_or(i64::MAX)))
    }
}

native! {
    /// Appends to a record's value, after `delimiter` if it existed.
    fn Java_io_kuradb_Native_asyncAppend(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, delimiter: JByteArray<'l>) -> jlong {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let delimiter = opt_bytes(env, &delimiter)?.unwrap_or_default();
        queue(env, handle, |adb| adb.append(key, value, delimiter), done)
    }
}

native! {
    /// Appends to every pair's record, atomically.
    fn Java_io_kuradb_Native_asyncAppendMulti(
        env, handle: jlong, keys_array: JObjectArray<'l, JByteArray<'l>>, values_array: JObjectArray<'l, JByteArray<'l>>, delimiter: JByteArray<'l>
    ) -> jlong {
        let keys = keys(env, &keys_array, "a key")?;
        let values = keys_of_values(env, &values_array, keys.len())?;
        let delimiter = opt_bytes(env, &delimiter)?.unwrap_or_default();
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = keys.into_iter().zip(values).collect();
        queue(env, handle, |adb| adb.append_multi(&pairs, delimiter), done)
    }
}

native! {
    /// Compare-and-exchange (null expected: absent; null desired: remove):
    /// `{non-null if it matched}`.
    fn Java_io_kuradb_Native_asyncCompareExchange(env, handle: jlong, key: JByteArray<'l>, expected: JByteArray<'l>, desired: JByteArray<'l>) -> jlong {
        let key = bytes(env, &key, "the key")?;
        let expected = opt_bytes(env, &expected)?;
        let desired = opt_bytes(env, &desired)?;
        queue(env, handle, |adb| adb.compare_exchange(key, expected, desired), Outcome::Flag)
    }
}

native! {
    /// Adds `delta` to the number of `key`: `{the result, 8 bytes}`.
    fn Java_io_kuradb_Native_asyncIncrement(env, handle: jlong, key: JByteArray<'l>, delta: jlong, initial: jlong) -> jlong {
        let key = bytes(env, &key, "the key")?;
        queue(env, handle, |adb| adb.increment(key, delta, initial), Outcome::Number)
    }
}

native! {
    /// As `asyncIncrement`, reading a stored value of any length as the
    /// reference does (its first 8 bytes, big-endian): `tkrzw.AsyncDBM.increment`.
    fn Java_io_kuradb_Native_asyncIncrementAsReference(env, handle: jlong, key: JByteArray<'l>, delta: jlong, initial: jlong) -> jlong {
        let key = bytes(env, &key, "the key")?;
        queue(
            env,
            handle,
            |adb| adb.execute(move |db: &Db| kuradb_binding::increment::reference_increment(db, &key, delta, initial)),
            Outcome::Number,
        )
    }
}

native! {
    /// Several compare-and-exchanges, atomically: `{non-null if all matched}`.
    fn Java_io_kuradb_Native_asyncCompareExchangeMulti(
        env, handle: jlong, expected_keys: JObjectArray<'l, JByteArray<'l>>, expected_values: JObjectArray<'l, JByteArray<'l>>,
        desired_keys: JObjectArray<'l, JByteArray<'l>>, desired_values: JObjectArray<'l, JByteArray<'l>>
    ) -> jlong {
        let expected = optional_pairs(env, &expected_keys, &expected_values)?;
        let desired = optional_pairs(env, &desired_keys, &desired_values)?;
        queue(env, handle, |adb| adb.compare_exchange_multi(&expected, &desired), Outcome::Flag)
    }
}

/// A key and its value, or none for an absent record.
type OptionalPair = (Vec<u8>, Option<Vec<u8>>);

/// Keys and values (null: absent) as pairs.
fn optional_pairs(
    env: &mut Env<'_>,
    keys_array: &JObjectArray<'_, JByteArray<'_>>,
    values_array: &JObjectArray<'_, JByteArray<'_>>,
) -> JResult<Vec<OptionalPair>> {
    let keys = keys(env, keys_array, "a key")?;
    let values = byte_arrays(env, values_array, "the values")?;
    if values.len() != keys.len() {
        return fail(env, ErrorKind::InvalidArgument, "there must be as many values as keys");
    }
    Ok(keys.into_iter().zip(values).collect())
}

native! {
    /// Removes every record.
    fn Java_io_kuradb_Native_asyncClear(env, handle: jlong) -> jlong {
        queue(env, handle, |adb| adb.clear(), done)
    }
}

native! {
    /// Rebuilds the database with the tuning `pairs` change.
    fn Java_io_kuradb_Native_asyncRebuild(env, handle: jlong, pairs: JObjectArray<'l, JString<'l>>) -> jlong {
        let params = params(env, &pairs)?;
        queue(env, handle, |adb| adb.rebuild(params), done)
    }
}

native! {
    /// Synchronizes with the reference's parameters (a SkipDBM's `reducer`).
    fn Java_io_kuradb_Native_asyncSynchronize(env, handle: jlong, hard: jboolean, pairs: JObjectArray<'l, JString<'l>>) -> jlong {
        let params = params(env, &pairs)?;
        queue(env, handle, |adb| adb.execute(move |db| synchronize_with(db, hard, &params)), done)
    }
}

native! {
    /// Copies the database's file to `dest`.
    fn Java_io_kuradb_Native_asyncCopyFileData(env, handle: jlong, dest: JString<'l>, hard: jboolean) -> jlong {
        let dest = string(env, &dest, "the destination path")?;
        queue(env, handle, |adb| adb.copy_file_data(dest, if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft }), done)
    }
}

native! {
    /// Copies every record into the database of `dest` (a `DBM` handle).
    fn Java_io_kuradb_Native_asyncExport(env, handle: jlong, dest: jlong) -> jlong {
        let dest: Arc<Db> = object::<Database>(env, dest)?.with(env, |_, db| Ok(Arc::clone(db)))?;
        queue(env, handle, |adb| adb.export(dest), done)
    }
}

native! {
    /// Appends every record to a `File` as flat records.
    fn Java_io_kuradb_Native_asyncExportToFile(env, handle: jlong, file: jlong) -> jlong {
        let file = object::<FileHandle>(env, file)?.share(env)?;
        queue(env, handle, |adb| adb.execute(move |db| export_into(db, &file, false)), done)
    }
}

native! {
    /// Sets every record of a `File`'s flat records: `{how many}`.
    fn Java_io_kuradb_Native_asyncImportFromFile(env, handle: jlong, file: jlong) -> jlong {
        let file = object::<FileHandle>(env, file)?.share(env)?;
        queue(env, handle, |adb| adb.execute(move |db| import_from(db, &file)), |n| Outcome::Number(i64::try_from(n).unwrap_or(i64::MAX)))
    }
}

native! {
    /// Keys matching `pattern` by `mode`.
    fn Java_io_kuradb_Native_asyncSearch(env, handle: jlong, mode: JString<'l>, pattern: JByteArray<'l>, capacity: jint) -> jlong {
        let mode = string(env, &mode, "the mode")?;
        let pattern = bytes(env, &pattern, "the pattern")?;
        let mode = check(env, mode.parse::<SearchMode>())?;
        let capacity = usize::try_from(capacity.max(0)).unwrap_or(0);
        queue(env, handle, |adb| adb.execute(move |db| db.search(mode, &pattern, capacity)), Outcome::Keys)
    }
}

native! {
    /// Moves (or with `copying`, copies) the record of `old_key` to `new_key`.
    fn Java_io_kuradb_Native_asyncRekey(
        env, handle: jlong, old_key: JByteArray<'l>, new_key: JByteArray<'l>, overwrite: jboolean, copying: jboolean
    ) -> jlong {
        let old_key = bytes(env, &old_key, "the old key")?;
        let new_key = bytes(env, &new_key, "the new key")?;
        queue(env, handle, |adb| adb.rekey(old_key, new_key, if copying { kuradb::dbm::Rekey::Copy } else { kuradb::dbm::Rekey::Move }, if overwrite { kuradb::dbm::OnDuplicate::Replace } else { kuradb::dbm::OnDuplicate::Fail }), done)
    }
}

native! {
    /// Removes the first record: `{key, value}`, or `{}` if there is none.
    fn Java_io_kuradb_Native_asyncPopFirst(env, handle: jlong) -> jlong {
        queue(env, handle, |adb| adb.execute(|db| db.pop_first(None)), |record| {
            Outcome::Values(record.map(|(k, v)| vec![Some(k), Some(v)]).unwrap_or_default())
        })
    }
}

native! {
    /// Adds a record keyed by the time (`wtime` < 0: now).
    fn Java_io_kuradb_Native_asyncPushLast(env, handle: jlong, value: JByteArray<'l>, wtime: jdouble) -> jlong {
        let value = bytes(env, &value, "the value")?;
        let wtime = (wtime >= 0.0).then_some(wtime);
        queue(env, handle, |adb| adb.execute(move |db| db.push_last(&value, wtime).map(drop)), done)
    }
}
