//! The natives of expiry (time to live), for a database with expiry: times
//! to live and expiry times in milliseconds, as `Duration` and `Instant`
//! give them, checked by the binding core.

use jni::objects::{JByteArray, JLongArray};
use jni::sys::{jboolean, jlong};
use kuradb::dbm::expiry::Expiry;
use kuradb::ErrorKind;
use kuradb_binding::expiry::{expiry_of_unix_millis, records_per_second, store_with_ttl, ttl_of_millis};

use crate::convert::bytes;
use crate::handle::{object, Database};
use crate::throw::{check, native};

/// What `ttl` answers for a key with no record, and for one that never expires.
const ABSENT: jlong = -2;
const NEVER: jlong = -1;

native! {
    /// Stores a record expiring `ttl_millis` from now; answers false,
    /// changing nothing, where the key exists and `overwrite` is false.
    fn Java_io_kuradb_Native_setWithTtl(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, overwrite: jboolean, ttl_millis: jlong) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let ttl = check(env, ttl_of_millis(ttl_millis))?;
        object::<Database>(env, handle)?.with(env, |env, db| {
            let done = store_with_ttl(db, &key, &value, ttl, overwrite);
            match done {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == ErrorKind::Duplication && !overwrite => Ok(false),
                Err(e) => check(env, Err(e)),
            }
        })
    }
}

native! {
    /// Makes `key` expire `ttl_millis` from now; answers whether it had a record.
    fn Java_io_kuradb_Native_expire(env, handle: jlong, key: JByteArray<'l>, ttl_millis: jlong) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let ttl = check(env, ttl_of_millis(ttl_millis))?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.expire_after(&key, ttl)))
    }
}

native! {
    /// Makes `key` expire at `unix_millis`; answers whether it had a record.
    fn Java_io_kuradb_Native_expireAt(env, handle: jlong, key: JByteArray<'l>, unix_millis: jlong) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let at = check(env, expiry_of_unix_millis(unix_millis))?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.expire_at(&key, Some(at))))
    }
}

native! {
    /// Makes `key` never expire; answers whether it had an expiry time.
    fn Java_io_kuradb_Native_persist(env, handle: jlong, key: JByteArray<'l>) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, db.persist(&key)))
    }
}

native! {
    /// The expiry time of `key` in milliseconds since the Unix epoch, -1
    /// if it never expires, -2 if it has no record.
    fn Java_io_kuradb_Native_expiryMillis(env, handle: jlong, key: JByteArray<'l>) -> jlong {
        let key = bytes(env, &key, "the key")?;
        let expiry = object::<Database>(env, handle)?.with(env, |env, db| check(env, db.expiry(&key)))?;
        Ok(match expiry {
            None => ABSENT,
            Some(None) => NEVER,
            Some(Some(at)) => jlong::try_from(at).unwrap_or(jlong::MAX),
        })
    }
}

native! {
    /// The time now as the database reads it, in milliseconds since the
    /// Unix epoch (never below a time it read before).
    fn Java_io_kuradb_Native_nowMillis(env, handle: jlong) -> jlong {
        let now = object::<Database>(env, handle)?.with(env, |_, db| Ok(db.now_ms()))?;
        Ok(jlong::try_from(now).unwrap_or(jlong::MAX))
    }
}

native! {
    /// Whether the database has expiry.
    fn Java_io_kuradb_Native_hasExpiry(env, handle: jlong) -> jboolean {
        object::<Database>(env, handle)?.with(env, |_, db| Ok(db.inner().expiring().is_some()))
    }
}

native! {
    /// Removes expired records among the next `max_records`: answers
    /// {visited, removed, 1 if the pass finished else 0}.
    fn Java_io_kuradb_Native_sweep(env, handle: jlong, max_records: jlong) -> JLongArray<'l> {
        let report = object::<Database>(env, handle)?
            .with(env, |env, db| check(env, kuradb_binding::expiry::sweep(db, max_records)))?;
        let array = env.new_long_array(3)?;
        let numbers = [report.visited as jlong, report.removed as jlong, jlong::from(report.finished_pass)];
        array.set_region(env, 0, &numbers)?;
        Ok(array)
    }
}

native! {
    /// Starts the background sweeper.
    fn Java_io_kuradb_Native_startSweeper(env, handle: jlong, per_second: jlong) -> () {
        let per_second = check(env, records_per_second(per_second))?;
        let database: &Database = object(env, handle)?;
        check(env, database.open.start_sweeper(per_second))
    }
}

native! {
    /// Stops the background sweeper: the records it removed, -1 if none ran.
    fn Java_io_kuradb_Native_stopSweeper(env, handle: jlong) -> jlong {
        let database: &Database = object(env, handle)?;
        let removed = check(env, database.open.stop_sweeper())?;
        Ok(removed.map_or(-1, |n| jlong::try_from(n).unwrap_or(jlong::MAX)))
    }
}
