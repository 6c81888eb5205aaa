//! The natives of a database: open, close, single-record operations and
//! housekeeping.

use std::path::Path;

use jni::objects::{JByteArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jdouble, jint, jlong};
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Dbm, Desired, Expected};
use kuradb::ErrorKind;

use crate::callback::Callback;
use crate::convert::{bytes, new_byte_arrays, new_bytes, new_strings, opt_bytes, params, string};
use crate::handle::{free, object, Database};
use crate::throw::{check, native};

native! {
    /// Opens a database: `pairs` are parameter names and values in turn.
    fn Java_io_kuradb_Native_open(env, path: JString<'l>, writable: jboolean, pairs: JObjectArray<'l, JString<'l>>) -> jlong {
        let path = string(env, &path, "the path")?;
        let params = params(env, &pairs)?;
        let access = if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly };
        let db = PolyDbm::open(&path, access, &params).and_then(|db| kuradb_binding::handle::transactional(db, access));
        let db = check(env, db)?;
        Ok(Database::into_handle(db))
    }
}

native! {
    /// Closes the database (a closed one is left as it is) and every cursor on it.
    fn Java_io_kuradb_Native_close(env, handle: jlong) -> () {
        let database: &Database = object(env, handle)?;
        check(env, database.open.close())
    }
}

native! {
    /// Frees the handle's memory; the Java object's Cleaner calls it once.
    fn Java_io_kuradb_Native_free(_env, handle: jlong) -> () {
        free::<Database>(handle);
        Ok(())
    }
}

native! {
    /// Whether the database is open.
    fn Java_io_kuradb_Native_isOpen(env, handle: jlong) -> jboolean {
        let database: &Database = object(env, handle)?;
        Ok(database.open.is_open())
    }
}

native! {
    /// The value of `key`, or null.
    fn Java_io_kuradb_Native_get(env, handle: jlong, key: JByteArray<'l>) -> JByteArray<'l> {
        let key = bytes(env, &key, "the key")?;
        let value = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.get(&key)))?;
        new_bytes(env, value.as_deref())
    }
}

native! {
    /// Whether `key` has a record.
    fn Java_io_kuradb_Native_contains(env, handle: jlong, key: JByteArray<'l>) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.contains(&key)))
    }
}

native! {
    /// Stores a record; answers false, changing nothing, where the key
    /// exists and `overwrite` is false.
    fn Java_io_kuradb_Native_set(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, overwrite: jboolean) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        object::<Database>(env, handle)?.with(env, |env, db| match if overwrite { db.set(&key, &value) } else { db.insert(&key, &value) } {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::Duplication && !overwrite => Ok(false),
            Err(e) => check(env, Err(e)),
        })
    }
}

native! {
    /// Removes a record; answers whether it existed.
    fn Java_io_kuradb_Native_remove(env, handle: jlong, key: JByteArray<'l>) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.remove(&key)))
    }
}

native! {
    /// Appends to a record's value, with `delimiter` after an existing value.
    fn Java_io_kuradb_Native_append(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, delimiter: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let delimiter = opt_bytes(env, &delimiter)?.unwrap_or_default();
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.append(&key, &value, &delimiter)))
    }
}

native! {
    /// Adds `delta` to the 8-byte big-endian number of `key`.
    fn Java_io_kuradb_Native_increment(env, handle: jlong, key: JByteArray<'l>, delta: jlong, initial: jlong) -> jlong {
        let key = bytes(env, &key, "the key")?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.increment(&key, delta, initial)))
    }
}

native! {
    /// As `increment`, reading a stored value of any length as the reference
    /// does (its first 8 bytes, big-endian): `tkrzw.DBM.increment`.
    fn Java_io_kuradb_Native_incrementAsReference(env, handle: jlong, key: JByteArray<'l>, delta: jlong, initial: jlong) -> jlong {
        let key = bytes(env, &key, "the key")?;
        object::<Database>(env, handle)?.with(env, |env, db| {
            check(env, kuradb_binding::increment::reference_increment(&**db, &key, delta, initial))
        })
    }
}

native! {
    /// Compare-and-exchange: `expected` null means absent, `expectAny` any
    /// value; `desired` null means remove, `keep` leave it. Answers
    /// `{old value, matched ? non-null : null}`.
    fn Java_io_kuradb_Native_compareExchange(
        env, handle: jlong, key: JByteArray<'l>, expected: JByteArray<'l>, expect_any: jboolean,
        desired: JByteArray<'l>, keep: jboolean
    ) -> JObjectArray<'l, JByteArray<'l>> {
        let key = bytes(env, &key, "the key")?;
        let expected = opt_bytes(env, &expected)?;
        let desired = opt_bytes(env, &desired)?;
        let expected = match (&expected, expect_any) {
            (_, true) => Expected::Any,
            (Some(v), false) => Expected::Value(v),
            (None, false) => Expected::Absent,
        };
        let desired = match (&desired, keep) {
            (_, true) => Desired::Keep,
            (Some(v), false) => Desired::Value(v),
            (None, false) => Desired::Remove,
        };
        let (matched, old) = object::<Database>(env, handle)?
            .with(env, |env, db| check(env, db.compare_exchange_and_get(&key, expected, desired)))?;
        new_byte_arrays(env, [old.as_deref(), matched.then_some(&[][..])].into_iter())
    }
}

native! {
    /// Stores a record and answers `{old value}` (null: it was absent).
    fn Java_io_kuradb_Native_setAndGet(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, overwrite: jboolean) -> JObjectArray<'l, JByteArray<'l>> {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let old = object::<Database>(env, handle)?.with(env, |env, db| check(env, if overwrite { db.set_and_get(&key, &value) } else { db.insert_and_get(&key, &value) }))?;
        new_byte_arrays(env, [old.as_deref()].into_iter())
    }
}

native! {
    /// Removes a record and answers its value, or null.
    fn Java_io_kuradb_Native_removeAndGet(env, handle: jlong, key: JByteArray<'l>) -> JByteArray<'l> {
        let key = bytes(env, &key, "the key")?;
        let old = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.remove_and_get(&key)))?;
        new_bytes(env, old.as_deref())
    }
}

native! {
    /// Shows Java's callback the record of `key` under its lock.
    fn Java_io_kuradb_Native_process(env, handle: jlong, key: JByteArray<'l>, callback: JObject<'l>, remove: JObject<'l>, writable: jboolean) -> () {
        let key = bytes(env, &key, "the key")?;
        if callback.is_null() {
            return crate::convert::null_argument(env, "the processor");
        }
        let database: &Database = object(env, handle)?;
        database.with(env, |env, db| {
            let mut callback = Callback::new(&callback, &remove);
            let result = database.as_callback(|| db.process(&key, if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly }, &mut |value| callback.call(env, 0, &key, value)));
            callback.finish(Ok(()))?;
            check(env, result)
        })
    }
}

native! {
    /// Shows Java's callback every record in turn.
    fn Java_io_kuradb_Native_processEach(env, handle: jlong, callback: JObject<'l>, remove: JObject<'l>, writable: jboolean) -> () {
        if callback.is_null() {
            return crate::convert::null_argument(env, "the processor");
        }
        let database: &Database = object(env, handle)?;
        database.with(env, |env, db| {
            let mut callback = Callback::new(&callback, &remove);
            let result = database.as_callback(|| db.process_each(if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly }, &mut |key, value| callback.call(env, 0, key, Some(value))));
            callback.finish(Ok(()))?;
            check(env, result)
        })
    }
}

native! {
    /// Shows Java's callback the first record; answers whether there was one.
    fn Java_io_kuradb_Native_processFirst(env, handle: jlong, callback: JObject<'l>, remove: JObject<'l>, writable: jboolean) -> jboolean {
        if callback.is_null() {
            return crate::convert::null_argument(env, "the processor");
        }
        let database: &Database = object(env, handle)?;
        database.with(env, |env, db| {
            let mut callback = Callback::new(&callback, &remove);
            let result = database.as_callback(|| db.process_first(if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly }, &mut |key, value| callback.call(env, 0, key, Some(value))));
            callback.finish(Ok(()))?;
            check(env, result)
        })
    }
}

native! {
    /// The number of records.
    fn Java_io_kuradb_Native_count(env, handle: jlong) -> jlong {
        let n = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.count()))?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

native! {
    /// The size of the database's file (memory use for on-memory classes).
    fn Java_io_kuradb_Native_fileSize(env, handle: jlong) -> jlong {
        let n = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.file_size()))?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

native! {
    /// The database's path, or null.
    fn Java_io_kuradb_Native_path(env, handle: jlong) -> JString<'l> {
        let path = object::<Database>(env, handle)?.with(env, |_, db| Ok(db.path().map(|p| p.to_string_lossy().into_owned())))?;
        match path {
            Some(p) => env.new_string(p),
            None => Ok(JString::default()),
        }
    }
}

native! {
    /// The database's class: its reference name (`HashDBM`, …) if
    /// `reference`, else its short name (`hash`, …).
    fn Java_io_kuradb_Native_className(env, handle: jlong, reference: jboolean) -> JString<'l> {
        let class = object::<Database>(env, handle)?.with(env, |_, db| Ok(db.inner().class()))?;
        env.new_string(if reference { class.reference_name() } else { class.name() })
    }
}

native! {
    /// Removes every record.
    fn Java_io_kuradb_Native_clear(env, handle: jlong) -> () {
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.clear()))
    }
}

native! {
    /// Rebuilds the database with the tuning `pairs` change.
    fn Java_io_kuradb_Native_rebuild(env, handle: jlong, pairs: JObjectArray<'l, JString<'l>>) -> () {
        let params = params(env, &pairs)?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.inner().rebuild_with(&params)))
    }
}

native! {
    /// Whether a rebuild is worthwhile.
    fn Java_io_kuradb_Native_shouldBeRebuilt(env, handle: jlong) -> jboolean {
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.should_be_rebuilt()))
    }
}

native! {
    /// Makes the changes reach the OS (`hard`: the device).
    fn Java_io_kuradb_Native_synchronize(env, handle: jlong, hard: jboolean) -> () {
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })))
    }
}

native! {
    /// Copies the database's file to `dest` while it stays open.
    fn Java_io_kuradb_Native_copyFileData(env, handle: jlong, dest: JString<'l>, hard: jboolean) -> () {
        let dest = string(env, &dest, "the destination path")?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.copy_file_data(Path::new(&dest), if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })))
    }
}

native! {
    /// Internal figures, as names and values in turn.
    fn Java_io_kuradb_Native_inspect(env, handle: jlong) -> JObjectArray<'l, JString<'l>> {
        let pairs = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.inner().inspect()))?;
        let flat: Vec<String> = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
        new_strings(env, &flat)
    }
}

native! {
    /// Whether the database is healthy.
    fn Java_io_kuradb_Native_isHealthy(env, handle: jlong) -> jboolean {
        object::<Database>(env, handle)?.with(env, |_, db| Ok(db.is_healthy()))
    }
}

native! {
    /// Whether iteration is in key order.
    fn Java_io_kuradb_Native_isOrdered(env, handle: jlong) -> jboolean {
        object::<Database>(env, handle)?.with(env, |_, db| Ok(db.is_ordered()))
    }
}

native! {
    /// Keys matching `pattern` by `mode` (the reference's mode names).
    fn Java_io_kuradb_Native_search(env, handle: jlong, mode: JString<'l>, pattern: JByteArray<'l>, capacity: jint) -> JObjectArray<'l, JByteArray<'l>> {
        let mode = string(env, &mode, "the mode")?;
        let pattern = bytes(env, &pattern, "the pattern")?;
        let mode = check(env, mode.parse::<kuradb::dbm::SearchMode>())?;
        let capacity = usize::try_from(capacity.max(0)).unwrap_or(0);
        let keys = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.search(mode, &pattern, capacity)))?;
        new_byte_arrays(env, keys.iter().map(|k| Some(k.as_slice())))
    }
}

native! {
    /// Removes the first record and answers `{key, value}`, or null.
    fn Java_io_kuradb_Native_popFirst(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        let record = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.pop_first(None)))?;
        match record {
            Some((k, v)) => new_byte_arrays(env, [Some(k.as_slice()), Some(v.as_slice())].into_iter()),
            None => Ok(JObjectArray::default()),
        }
    }
}

native! {
    /// Adds a record keyed by the time (`wtime` < 0: now); answers the key.
    fn Java_io_kuradb_Native_pushLast(env, handle: jlong, value: JByteArray<'l>, wtime: jdouble) -> JByteArray<'l> {
        let value = bytes(env, &value, "the value")?;
        let wtime = (wtime >= 0.0).then_some(wtime);
        let key = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.push_last(&value, wtime)))?;
        env.byte_array_from_slice(&key)
    }
}
