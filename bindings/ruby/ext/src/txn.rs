//! `Kuradb::Transaction`, `Kuradb::Snapshot` and `Kuradb::Batch`: the
//! database's transactions for Ruby, from `DBM#transaction`, `DBM#snapshot`
//! and `DBM#batch` (`transaction.rb` adds the Ruby methods and blocks).
//!
//! Each object holds the binding core's slot ([`kuradb_binding::txn`]),
//! which closing the database empties, or a batch's gathered writes. Their
//! reads and writes are natives of `Kuradb::DBM` taking the object, so they
//! pass the database's gate (a `process` block of another thread holds a
//! record lock they may need) and return Strings in its encoding. A
//! commit with `sync` durability waits for the device, so it releases the
//! VM lock whatever the `concurrent` parameter; the other calls release it
//! as the database's own calls do.

use std::sync::Arc;

use magnus::prelude::*;
use magnus::{method, Error, RArray, RModule, RString, Ruby};

use kuradb::dbm::txn::CommitDurability;
use kuradb_binding::txn::{BatchOp, BatchOps, Release, SnapshotSlot, TransactionSlot};

use crate::convert::bytes;
use crate::database::Database;
use crate::error::to_rb;
use crate::nogvl::released_if;

/// A serializable transaction's slot (`DBM#transaction`).
#[magnus::wrap(class = "Kuradb::Transaction", free_immediately, size)]
pub struct Transaction {
    slot: Arc<TransactionSlot>,
    durability: CommitDurability,
}

/// A read view's slot (`DBM#snapshot`).
#[magnus::wrap(class = "Kuradb::Snapshot", free_immediately, size)]
pub struct Snapshot {
    slot: Arc<SnapshotSlot>,
}

/// A batch's gathered writes (`DBM#batch`).
#[magnus::wrap(class = "Kuradb::Batch", free_immediately, size)]
pub struct Batch {
    ops: BatchOps,
    durability: CommitDurability,
}

/// The commit durability a Ruby name gives: "none", "os" or "sync".
fn durability_of(ruby: &Ruby, name: String) -> Result<CommitDurability, Error> {
    match name.as_str() {
        "none" => Ok(CommitDurability::Memory),
        "os" => Ok(CommitDurability::Os),
        "sync" => Ok(CommitDurability::Sync),
        _ => Err(Error::new(
            ruby.exception_arg_error(),
            format!("durability must be :none, :os or :sync, not {name:?}"),
        )),
    }
}

/// Runs `f` past the database's gate, with the VM lock released if `release`.
fn run<R: Send>(
    ruby: &Ruby,
    db: &Database,
    release: bool,
    f: impl FnOnce() -> kuradb::Result<R> + Send,
) -> Result<R, Error> {
    db.gate.enter(ruby, db.handle.guard())?;
    released_if(release, f).map_err(|e| to_rb(ruby, e))
}

/// Runs `f` on the transaction of `tx`, past the database's gate.
fn on_tx<R: Send>(
    ruby: &Ruby,
    db: &Database,
    tx: &Transaction,
    f: impl FnOnce(&mut kuradb::dbm::txn::Transaction<'_, kuradb::dbm::poly::PolyDbm>) -> kuradb::Result<R> + Send,
) -> Result<R, Error> {
    let slot = &*tx.slot;
    run(ruby, db, db.is_concurrent(), || slot.with(f))
}

fn begin(ruby: &Ruby, db: &Database, durability: String) -> Result<Transaction, Error> {
    let durability = durability_of(ruby, durability)?;
    db.gate.enter(ruby, db.handle.guard())?;
    let slot = db.handle.begin(durability).map_err(|e| to_rb(ruby, e))?;
    Ok(Transaction { slot, durability })
}

fn tx_get(ruby: &Ruby, db: &Database, tx: &Transaction, key: RString) -> Result<Option<RString>, Error> {
    let key = bytes(key);
    let value = on_tx(ruby, db, tx, |t| t.get(&key))?;
    db.opt_out(ruby, value)
}

fn tx_set(ruby: &Ruby, db: &Database, tx: &Transaction, key: RString, value: RString) -> Result<(), Error> {
    let (key, value) = (bytes(key), bytes(value));
    on_tx(ruby, db, tx, |t| {
        t.set(&key, &value);
        Ok(())
    })
}

fn tx_remove(ruby: &Ruby, db: &Database, tx: &Transaction, key: RString) -> Result<bool, Error> {
    let key = bytes(key);
    on_tx(ruby, db, tx, |t| t.remove(&key))
}

fn tx_contains(ruby: &Ruby, db: &Database, tx: &Transaction, key: RString) -> Result<bool, Error> {
    let key = bytes(key);
    on_tx(ruby, db, tx, |t| t.contains(&key))
}

fn tx_append(
    ruby: &Ruby,
    db: &Database,
    tx: &Transaction,
    key: RString,
    value: RString,
    delimiter: RString,
) -> Result<(), Error> {
    let (key, value, delimiter) = (bytes(key), bytes(value), bytes(delimiter));
    on_tx(ruby, db, tx, |t| t.append(&key, &value, &delimiter))
}

fn tx_increment(
    ruby: &Ruby,
    db: &Database,
    tx: &Transaction,
    key: RString,
    delta: i64,
    initial: i64,
) -> Result<i64, Error> {
    let key = bytes(key);
    on_tx(ruby, db, tx, |t| t.increment(&key, delta, initial))
}

fn tx_items(ruby: &Ruby, db: &Database, tx: &Transaction) -> Result<RArray, Error> {
    let items = on_tx(ruby, db, tx, |t| t.items())?;
    pairs(ruby, db, &items)
}

fn tx_savepoint(ruby: &Ruby, db: &Database, tx: &Transaction) -> Result<u64, Error> {
    let slot = &*tx.slot;
    run(ruby, db, false, || slot.savepoint_index())
}

fn tx_rollback_to(ruby: &Ruby, db: &Database, tx: &Transaction, index: u64) -> Result<(), Error> {
    let slot = &*tx.slot;
    run(ruby, db, false, || slot.rollback_to_index(index))
}

fn tx_commit(ruby: &Ruby, db: &Database, tx: &Transaction) -> Result<(), Error> {
    let slot = &*tx.slot;
    let release = db.is_concurrent() || tx.durability == CommitDurability::Sync;
    run(ruby, db, release, || slot.commit())
}

fn tx_abort(ruby: &Ruby, db: &Database, tx: &Transaction) -> Result<(), Error> {
    let slot = &*tx.slot;
    run(ruby, db, false, || {
        slot.abort();
        Ok(())
    })
}

impl Transaction {
    fn is_active(&self) -> bool {
        self.slot.is_active()
    }

    fn durability(&self) -> &'static str {
        self.durability.name()
    }
}

/// Records as a Ruby Array of `[key, value]` pairs in the database's encoding.
fn pairs(ruby: &Ruby, db: &Database, items: &[(Vec<u8>, Vec<u8>)]) -> Result<RArray, Error> {
    let array = ruby.ary_new_capa(items.len());
    for (k, v) in items {
        array.push(ruby.ary_new_from_values(&[db.out(ruby, k)?, db.out(ruby, v)?]))?;
    }
    Ok(array)
}

fn snapshot(ruby: &Ruby, db: &Database) -> Result<Snapshot, Error> {
    db.gate.enter(ruby, db.handle.guard())?;
    let slot = db.handle.snapshot().map_err(|e| to_rb(ruby, e))?;
    Ok(Snapshot { slot })
}

fn snapshot_get(ruby: &Ruby, db: &Database, view: &Snapshot, key: RString) -> Result<Option<RString>, Error> {
    let (key, slot) = (bytes(key), &*view.slot);
    let value = run(ruby, db, db.is_concurrent(), || slot.get(&key))?;
    db.opt_out(ruby, value)
}

fn snapshot_items(ruby: &Ruby, db: &Database, view: &Snapshot) -> Result<RArray, Error> {
    let slot = &*view.slot;
    let items = run(ruby, db, db.is_concurrent(), || slot.items())?;
    pairs(ruby, db, &items)
}

fn snapshot_keys(ruby: &Ruby, db: &Database, view: &Snapshot) -> Result<RArray, Error> {
    let slot = &*view.slot;
    let keys = run(ruby, db, db.is_concurrent(), || slot.keys())?;
    let array = ruby.ary_new_capa(keys.len());
    for k in &keys {
        array.push(db.out(ruby, k)?)?;
    }
    Ok(array)
}

fn snapshot_count(ruby: &Ruby, db: &Database, view: &Snapshot) -> Result<u64, Error> {
    let slot = &*view.slot;
    run(ruby, db, db.is_concurrent(), || slot.count())
}

impl Snapshot {
    fn release(&self) {
        self.slot.release();
    }

    fn is_active(&self) -> bool {
        self.slot.is_active()
    }
}

fn batch(ruby: &Ruby, _db: &Database, durability: String) -> Result<Batch, Error> {
    Ok(Batch { ops: BatchOps::new(), durability: durability_of(ruby, durability)? })
}

fn batch_commit(ruby: &Ruby, db: &Database, batch: &Batch) -> Result<(), Error> {
    let (ops, durability) = (&batch.ops, batch.durability);
    let release = db.is_concurrent() || durability == CommitDurability::Sync;
    db.with_released(ruby, release, |d| ops.commit(d, durability))
}

impl Batch {
    fn push(ruby: &Ruby, op: BatchOp, ops: &BatchOps) -> Result<(), Error> {
        ops.push(op).map_err(|e| to_rb(ruby, e))
    }

    fn set(ruby: &Ruby, rb_self: &Self, key: RString, value: RString) -> Result<(), Error> {
        Batch::push(ruby, BatchOp::Set(bytes(key), bytes(value)), &rb_self.ops)
    }

    fn remove(ruby: &Ruby, rb_self: &Self, key: RString) -> Result<(), Error> {
        Batch::push(ruby, BatchOp::Remove(bytes(key)), &rb_self.ops)
    }

    fn append(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        value: RString,
        delimiter: RString,
    ) -> Result<(), Error> {
        Batch::push(ruby, BatchOp::Append(bytes(key), bytes(value), bytes(delimiter)), &rb_self.ops)
    }

    fn increment(ruby: &Ruby, rb_self: &Self, key: RString, delta: i64, initial: i64) -> Result<(), Error> {
        Batch::push(ruby, BatchOp::Increment(bytes(key), delta, initial), &rb_self.ops)
    }

    fn discard(&self) {
        self.ops.discard();
    }

    fn is_active(&self) -> bool {
        self.ops.is_active()
    }

    fn size(&self) -> usize {
        self.ops.len()
    }

    fn durability(&self) -> &'static str {
        self.durability.name()
    }
}

/// Defines the three classes and `Kuradb::DBM`'s natives for them.
pub fn define(ruby: &Ruby, module: RModule, dbm: magnus::RClass) -> Result<(), Error> {
    let tx = module.define_class("Transaction", ruby.class_object())?;
    tx.undef_default_alloc_func();
    tx.define_method("active?", method!(Transaction::is_active, 0))?;
    tx.define_method("_durability", method!(Transaction::durability, 0))?;

    let view = module.define_class("Snapshot", ruby.class_object())?;
    view.undef_default_alloc_func();
    view.define_method("release", method!(Snapshot::release, 0))?;
    view.define_method("active?", method!(Snapshot::is_active, 0))?;

    let b = module.define_class("Batch", ruby.class_object())?;
    b.undef_default_alloc_func();
    b.define_method("_set", method!(Batch::set, 2))?;
    b.define_method("_remove", method!(Batch::remove, 1))?;
    b.define_method("_append", method!(Batch::append, 3))?;
    b.define_method("_increment", method!(Batch::increment, 3))?;
    b.define_method("discard", method!(Batch::discard, 0))?;
    b.define_method("active?", method!(Batch::is_active, 0))?;
    b.define_method("size", method!(Batch::size, 0))?;
    b.define_method("_durability", method!(Batch::durability, 0))?;

    dbm.define_method("_begin", method!(begin, 1))?;
    dbm.define_method("_tx_get", method!(tx_get, 2))?;
    dbm.define_method("_tx_set", method!(tx_set, 3))?;
    dbm.define_method("_tx_remove", method!(tx_remove, 2))?;
    dbm.define_method("_tx_key?", method!(tx_contains, 2))?;
    dbm.define_method("_tx_append", method!(tx_append, 4))?;
    dbm.define_method("_tx_increment", method!(tx_increment, 4))?;
    dbm.define_method("_tx_items", method!(tx_items, 1))?;
    dbm.define_method("_tx_savepoint", method!(tx_savepoint, 1))?;
    dbm.define_method("_tx_rollback_to", method!(tx_rollback_to, 2))?;
    dbm.define_method("_tx_commit", method!(tx_commit, 1))?;
    dbm.define_method("_tx_abort", method!(tx_abort, 1))?;
    dbm.define_method("_snapshot", method!(snapshot, 0))?;
    dbm.define_method("_snapshot_get", method!(snapshot_get, 2))?;
    dbm.define_method("_snapshot_items", method!(snapshot_items, 1))?;
    dbm.define_method("_snapshot_keys", method!(snapshot_keys, 1))?;
    dbm.define_method("_snapshot_count", method!(snapshot_count, 1))?;
    dbm.define_method("_batch", method!(batch, 1))?;
    dbm.define_method("_batch_commit", method!(batch_commit, 1))?;
    Ok(())
}
