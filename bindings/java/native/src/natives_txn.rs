//! The natives of transactions, snapshots and batches.
//!
//! A transaction or snapshot handle holds the binding core's slot, which
//! closing the database empties; a batch handle holds the core's gathered
//! writes until its commit. Keys and values are copied out of Java before a
//! slot is locked, and answers are made into Java arrays after it is
//! unlocked, so no slot stays locked across a JNI call.

use std::sync::Arc;

use jni::objects::{JByteArray, JObjectArray};
use jni::sys::{jboolean, jint, jlong};
use jni::Env;
use kuradb::dbm::txn::CommitDurability;
use kuradb::ErrorKind;
use kuradb_binding::txn::{BatchOp, BatchOps, Release, SnapshotSlot, TransactionSlot};

use crate::convert::{bytes, new_byte_arrays, new_bytes, opt_bytes};
use crate::handle::{free, object, Database};
use crate::throw::{check, fail, native, JResult};

/// A transaction, as a Java `Transaction` holds it.
pub struct TransactionHandle {
    slot: Arc<TransactionSlot>,
}

/// A snapshot, as a Java `Snapshot` holds it.
pub struct SnapshotHandle {
    slot: Arc<SnapshotSlot>,
}

/// A batch's writes, as a Java `Batch` holds them.
pub struct BatchHandle {
    ops: BatchOps,
}

/// The durability `io.kuradb.Durability`'s ordinal names.
fn durability(env: &mut Env<'_>, ordinal: jint) -> JResult<CommitDurability> {
    match ordinal {
        0 => Ok(CommitDurability::Memory),
        1 => Ok(CommitDurability::Os),
        2 => Ok(CommitDurability::Sync),
        _ => fail(env, ErrorKind::InvalidArgument, &format!("no durability has the ordinal {ordinal}")),
    }
}

/// The transaction of `handle`.
fn transaction<'a>(env: &mut Env<'_>, handle: jlong) -> JResult<&'a TransactionSlot> {
    object::<TransactionHandle>(env, handle).map(|h| &*h.slot)
}

/// The snapshot of `handle`.
fn snapshot<'a>(env: &mut Env<'_>, handle: jlong) -> JResult<&'a SnapshotSlot> {
    object::<SnapshotHandle>(env, handle).map(|h| &*h.slot)
}

/// The records of `items` as one Java `byte[][]`: key, value, key, value, …
fn flat_items<'l>(
    env: &mut Env<'l>,
    items: &[(Vec<u8>, Vec<u8>)],
) -> JResult<JObjectArray<'l, JByteArray<'l>>> {
    let flat = items.iter().flat_map(|(k, v)| [Some(k.as_slice()), Some(v.as_slice())]);
    new_byte_arrays(env, flat.collect::<Vec<_>>().into_iter())
}

native! {
    /// A new transaction of the database whose commit has the durability
    /// of ordinal `level`.
    fn Java_io_kuradb_Native_txBegin(env, db: jlong, level: jint) -> jlong {
        let level = durability(env, level)?;
        let database: &Database = object(env, db)?;
        let slot = check(env, database.open.begin(level))?;
        Ok(Box::into_raw(Box::new(TransactionHandle { slot })) as jlong)
    }
}

native! {
    /// Frees the transaction handle's memory (aborting it if unfinished);
    /// the Cleaner calls it once.
    fn Java_io_kuradb_Native_txFree(_env, handle: jlong) -> () {
        free::<TransactionHandle>(handle);
        Ok(())
    }
}

native! {
    /// The value of `key` as the transaction sees it, or null.
    fn Java_io_kuradb_Native_txGet(env, handle: jlong, key: JByteArray<'l>) -> JByteArray<'l> {
        let key = bytes(env, &key, "the key")?;
        let tx = transaction(env, handle)?;
        let value = check(env, tx.with(|tx| tx.get(&key)))?;
        new_bytes(env, value.as_deref())
    }
}

native! {
    /// Sets `key` to `value` in the transaction.
    fn Java_io_kuradb_Native_txSet(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let tx = transaction(env, handle)?;
        check(env, tx.with(|tx| {
            tx.set(&key, &value);
            Ok(())
        }))
    }
}

native! {
    /// Removes `key` in the transaction; answers whether it was there.
    fn Java_io_kuradb_Native_txRemove(env, handle: jlong, key: JByteArray<'l>) -> jboolean {
        let key = bytes(env, &key, "the key")?;
        let tx = transaction(env, handle)?;
        check(env, tx.with(|tx| tx.remove(&key)))
    }
}

native! {
    /// Appends `value` to `key`'s value, after `delimiter` (null: none) if there was one.
    fn Java_io_kuradb_Native_txAppend(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, delimiter: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let delimiter = opt_bytes(env, &delimiter)?.unwrap_or_default();
        let tx = transaction(env, handle)?;
        check(env, tx.with(|tx| tx.append(&key, &value, &delimiter)))
    }
}

native! {
    /// Adds `delta` to `key`'s number (`initial` if absent); answers the new number.
    fn Java_io_kuradb_Native_txIncrement(env, handle: jlong, key: JByteArray<'l>, delta: jlong, initial: jlong) -> jlong {
        let key = bytes(env, &key, "the key")?;
        let tx = transaction(env, handle)?;
        check(env, tx.with(|tx| tx.increment(&key, delta, initial)))
    }
}

native! {
    /// A savepoint of the writes so far, as its number.
    fn Java_io_kuradb_Native_txSavepoint(env, handle: jlong) -> jlong {
        let tx = transaction(env, handle)?;
        let index = check(env, tx.savepoint_index())?;
        Ok(index as jlong)
    }
}

native! {
    /// Undoes the writes made since the savepoint numbered `index`.
    fn Java_io_kuradb_Native_txRollbackTo(env, handle: jlong, index: jlong) -> () {
        let tx = transaction(env, handle)?;
        check(env, tx.rollback_to_index(index as u64))
    }
}

native! {
    /// Commits the transaction; it is finished whatever the outcome.
    fn Java_io_kuradb_Native_txCommit(env, handle: jlong) -> () {
        let tx = transaction(env, handle)?;
        check(env, tx.commit())
    }
}

native! {
    /// Aborts the transaction, if it is not finished.
    fn Java_io_kuradb_Native_txAbort(env, handle: jlong) -> () {
        transaction(env, handle)?.abort();
        Ok(())
    }
}

native! {
    /// Whether the transaction is neither finished nor its database closed.
    fn Java_io_kuradb_Native_txIsActive(env, handle: jlong) -> jboolean {
        Ok(transaction(env, handle)?.is_active())
    }
}

native! {
    /// A new snapshot of the database at its newest commit.
    fn Java_io_kuradb_Native_snapshotOpen(env, db: jlong) -> jlong {
        let database: &Database = object(env, db)?;
        let slot = check(env, database.open.snapshot())?;
        Ok(Box::into_raw(Box::new(SnapshotHandle { slot })) as jlong)
    }
}

native! {
    /// Frees the snapshot handle's memory (releasing it); the Cleaner calls it once.
    fn Java_io_kuradb_Native_snapshotFree(_env, handle: jlong) -> () {
        free::<SnapshotHandle>(handle);
        Ok(())
    }
}

native! {
    /// Releases the snapshot (a released one is left as it is).
    fn Java_io_kuradb_Native_snapshotRelease(env, handle: jlong) -> () {
        snapshot(env, handle)?.release();
        Ok(())
    }
}

native! {
    /// Whether the snapshot is still held.
    fn Java_io_kuradb_Native_snapshotIsActive(env, handle: jlong) -> jboolean {
        Ok(snapshot(env, handle)?.is_active())
    }
}

native! {
    /// The value of `key` in the snapshot, or null.
    fn Java_io_kuradb_Native_snapshotGet(env, handle: jlong, key: JByteArray<'l>) -> JByteArray<'l> {
        let key = bytes(env, &key, "the key")?;
        let view = snapshot(env, handle)?;
        let value = check(env, view.get(&key))?;
        new_bytes(env, value.as_deref())
    }
}

native! {
    /// Every record of the snapshot: key, value, key, value, …
    fn Java_io_kuradb_Native_snapshotItems(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        let view = snapshot(env, handle)?;
        let items = check(env, view.items())?;
        flat_items(env, &items)
    }
}

native! {
    /// Every key of the snapshot.
    fn Java_io_kuradb_Native_snapshotKeys(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        let view = snapshot(env, handle)?;
        let keys = check(env, view.keys())?;
        new_byte_arrays(env, keys.iter().map(|k| Some(k.as_slice())))
    }
}

native! {
    /// The number of records in the snapshot.
    fn Java_io_kuradb_Native_snapshotCount(env, handle: jlong) -> jlong {
        let view = snapshot(env, handle)?;
        let count = check(env, view.count())?;
        Ok(i64::try_from(count).unwrap_or(i64::MAX))
    }
}

native! {
    /// A new, empty batch.
    fn Java_io_kuradb_Native_batchNew(_env) -> jlong {
        Ok(Box::into_raw(Box::new(BatchHandle { ops: BatchOps::new() })) as jlong)
    }
}

native! {
    /// Frees the batch handle's memory; the Cleaner calls it once.
    fn Java_io_kuradb_Native_batchFree(_env, handle: jlong) -> () {
        free::<BatchHandle>(handle);
        Ok(())
    }
}

/// Adds `op` to the batch of `handle`.
fn push(env: &mut Env<'_>, handle: jlong, op: BatchOp) -> JResult<()> {
    let batch: &BatchHandle = object(env, handle)?;
    check(env, batch.ops.push(op))
}

native! {
    /// Sets `key` to `value` at the commit.
    fn Java_io_kuradb_Native_batchSet(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        push(env, handle, BatchOp::Set(key, value))
    }
}

native! {
    /// Removes `key` at the commit.
    fn Java_io_kuradb_Native_batchRemove(env, handle: jlong, key: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        push(env, handle, BatchOp::Remove(key))
    }
}

native! {
    /// Appends `value` to `key`'s value at the commit, after `delimiter` (null: none).
    fn Java_io_kuradb_Native_batchAppend(env, handle: jlong, key: JByteArray<'l>, value: JByteArray<'l>, delimiter: JByteArray<'l>) -> () {
        let key = bytes(env, &key, "the key")?;
        let value = bytes(env, &value, "the value")?;
        let delimiter = opt_bytes(env, &delimiter)?.unwrap_or_default();
        push(env, handle, BatchOp::Append(key, value, delimiter))
    }
}

native! {
    /// Adds `delta` to `key`'s number (`initial` if absent) at the commit.
    fn Java_io_kuradb_Native_batchIncrement(env, handle: jlong, key: JByteArray<'l>, delta: jlong, initial: jlong) -> () {
        let key = bytes(env, &key, "the key")?;
        push(env, handle, BatchOp::Increment(key, delta, initial))
    }
}

native! {
    /// Applies the batch's writes to the database as one unit with the
    /// durability of ordinal `level`; the batch is finished.
    fn Java_io_kuradb_Native_batchCommit(env, handle: jlong, db: jlong, level: jint) -> () {
        let level = durability(env, level)?;
        let batch: &BatchHandle = object(env, handle)?;
        object::<Database>(env, db)?.with(env, |env, db| check(env, batch.ops.commit(db, level)))
    }
}

native! {
    /// Drops the batch's writes; it is finished.
    fn Java_io_kuradb_Native_batchDiscard(env, handle: jlong) -> () {
        object::<BatchHandle>(env, handle)?.ops.discard();
        Ok(())
    }
}

native! {
    /// Whether writes can still be added to the batch.
    fn Java_io_kuradb_Native_batchIsActive(env, handle: jlong) -> jboolean {
        Ok(object::<BatchHandle>(env, handle)?.ops.is_active())
    }
}

native! {
    /// The number of writes gathered in the batch.
    fn Java_io_kuradb_Native_batchSize(env, handle: jlong) -> jint {
        Ok(jint::try_from(object::<BatchHandle>(env, handle)?.ops.len()).unwrap_or(jint::MAX))
    }
}
