//! Transactions, snapshots and batches as a foreign object holds them.
//!
//! A [`Transaction`] or [`Snapshot`] borrows its [`Db`]; a Python, Java or
//! Ruby object cannot hold a borrow, so each slot owns an `Arc` of the
//! database together with the view that borrows it, as one
//! self-referential value built by `self_cell` (as [`crate::cursor`] keeps
//! cursors): no lifetime is forged. The database's
//! [`OpenHandle`](crate::handle::OpenHandle) keeps a weak reference to every
//! slot and empties it when it closes (aborting a transaction, releasing a
//! snapshot), so none keeps a closed database.
//!
//! A batch borrows nothing until its commit, so [`BatchOps`] only gathers
//! the operations and hands them to [`TransactionalDbm::batch`] at once.
//!
//! [`TransactionalDbm::batch`]: kuradb::dbm::txn::TransactionalDbm::batch

use std::sync::Arc;

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::txn::{CommitDurability, Savepoint, Snapshot, Transaction};
use kuradb::ErrorKind;
use parking_lot::Mutex;
use self_cell::self_cell;

use crate::handle::Db;

type MaybeTransaction<'a> = Option<Transaction<'a, PolyDbm>>;

self_cell!(
    /// A transaction and the database it borrows; `None` once committed.
    struct OwnedTransaction {
        owner: Arc<Db>,
        #[not_covariant]
        dependent: MaybeTransaction,
    }
);

type BorrowedSnapshot<'a> = Snapshot<'a, PolyDbm>;

self_cell!(
    /// A snapshot and the database it borrows.
    struct OwnedSnapshot {
        owner: Arc<Db>,
        #[not_covariant]
        dependent: BorrowedSnapshot,
    }
);

/// What the handle's `close` does to a transaction's or snapshot's slot:
/// empty it, so the database it held can close.
pub trait Release: Send + Sync {
    /// Aborts the transaction or releases the snapshot, if not done yet.
    fn release(&self);
}

/// The error of a call on a finished transaction.
pub fn finished() -> kuradb::Error {
    kuradb::Error::new(
        ErrorKind::Infeasible,
        "the transaction is finished (committed or aborted), or its database was closed",
    )
}

/// The error of a call on a released snapshot.
pub fn released() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the snapshot was released, or its database was closed")
}

/// A transaction as a foreign object holds it: `None` inside once it is
/// committed, aborted, or its database closed.
pub struct TransactionSlot {
    live: Mutex<Option<OwnedTransaction>>,
    /// The savepoints taken, which a binding names by their index: Java
    /// and Ruby hand back a number rather than hold a Rust value.
    savepoints: Mutex<Vec<Savepoint>>,
}

impl TransactionSlot {
    /// A new transaction of `db` whose commit has `durability`.
    pub fn begin(db: Arc<Db>, durability: CommitDurability) -> TransactionSlot {
        let live = OwnedTransaction::new(db, |db| Some(db.begin(durability)));
        TransactionSlot { live: Mutex::new(Some(live)), savepoints: Mutex::new(Vec::new()) }
    }

    /// A savepoint of the writes made so far, named by a number that
    /// [`TransactionSlot::rollback_to_index`] takes.
    pub fn savepoint_index(&self) -> kuradb::Result<u64> {
        let point = self.with(|tx| Ok(tx.savepoint()))?;
        let mut savepoints = self.savepoints.lock();
        savepoints.push(point);
        Ok(savepoints.len() as u64 - 1)
    }

    /// Undoes the writes made since the savepoint numbered `index`.
    pub fn rollback_to_index(&self, index: u64) -> kuradb::Result<()> {
        let point = usize::try_from(index).ok().and_then(|i| self.savepoints.lock().get(i).copied());
        let Some(point) = point else {
            return Err(kuradb::Error::new(
                ErrorKind::InvalidArgument,
                format!("no savepoint numbered {index} was taken in this transaction"),
            ));
        };
        self.with(|tx| tx.rollback_to(point))
    }

    /// Runs `f` on the transaction; fails if it is finished.
    pub fn with<R>(
        &self,
        f: impl FnOnce(&mut Transaction<'_, PolyDbm>) -> kuradb::Result<R>,
    ) -> kuradb::Result<R> {
        let mut live = self.live.lock();
        let Some(live) = live.as_mut() else { return Err(finished()) };
        live.with_dependent_mut(|_, tx| match tx.as_mut() {
            Some(tx) => f(tx),
            None => Err(finished()),
        })
    }

    /// Whether the transaction can still be used and committed.
    pub fn is_active(&self) -> bool {
        self.live.lock().is_some()
    }

    /// Commits the transaction (see [`Transaction::commit`]); it is finished
    /// whatever the outcome. Fails if it was finished already.
    pub fn commit(&self) -> kuradb::Result<()> {
        // The slot stays locked until the database's `Arc` is dropped, so a
        // close waits for the commit instead of finding the database shared.
        let mut slot = self.live.lock();
        let Some(mut live) = slot.take() else { return Err(finished()) };
        let committed = live.with_dependent_mut(|_, tx| match tx.take() {
            Some(tx) => tx.commit(),
            None => Err(finished()),
        });
        drop(live);
        drop(slot);
        committed.map(|_| ())
    }

    /// Aborts the transaction, if it is not finished.
    pub fn abort(&self) {
        self.release();
    }
}

impl Release for TransactionSlot {
    fn release(&self) {
        // Dropping the transaction aborts it, then the database's `Arc` goes.
        let taken = self.live.lock().take();
        drop(taken);
    }
}

/// A snapshot as a foreign object holds it: `None` inside once released.
pub struct SnapshotSlot {
    live: Mutex<Option<OwnedSnapshot>>,
}

impl SnapshotSlot {
    /// A new snapshot of `db` at its newest commit.
    pub fn open(db: Arc<Db>) -> kuradb::Result<SnapshotSlot> {
        let live = OwnedSnapshot::try_new(db, |db| db.snapshot())?;
        Ok(SnapshotSlot { live: Mutex::new(Some(live)) })
    }

    /// Runs `f` on the snapshot; fails if it was released.
    pub fn with<R>(&self, f: impl FnOnce(&Snapshot<'_, PolyDbm>) -> kuradb::Result<R>) -> kuradb::Result<R> {
        let live = self.live.lock();
        match live.as_ref() {
            Some(live) => live.with_dependent(|_, snapshot| f(snapshot)),
            None => Err(released()),
        }
    }

    /// Whether the snapshot is still held.
    pub fn is_active(&self) -> bool {
        self.live.lock().is_some()
    }

    /// The value of `key` in the snapshot.
    pub fn get(&self, key: &[u8]) -> kuradb::Result<Option<Vec<u8>>> {
        self.with(|s| s.get(key))
    }

    /// Every record of the snapshot, in the database's key order if it has one.
    pub fn items(&self) -> kuradb::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.with(|s| s.iter()?.collect())
    }

    /// Every key of the snapshot, in the database's key order if it has one.
    pub fn keys(&self) -> kuradb::Result<Vec<Vec<u8>>> {
        self.with(|s| s.iter()?.map(|item| item.map(|(key, _)| key)).collect())
    }

    /// The number of records in the snapshot.
    pub fn count(&self) -> kuradb::Result<u64> {
        self.with(|s| s.count())
    }
}

impl Release for SnapshotSlot {
    fn release(&self) {
        let taken = self.live.lock().take();
        drop(taken);
    }
}

/// One write of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    /// Sets a key's value.
    Set(Vec<u8>, Vec<u8>),
    /// Removes a key.
    Remove(Vec<u8>),
    /// Appends a value with a delimiter: key, value, delimiter.
    Append(Vec<u8>, Vec<u8>, Vec<u8>),
    /// Adds to a key's number: key, delta, initial.
    Increment(Vec<u8>, i64, i64),
}

/// The writes of a batch, gathered until its commit applies them as one unit.
#[derive(Debug)]
pub struct BatchOps {
    ops: Mutex<Option<Vec<BatchOp>>>,
}

impl BatchOps {
    /// An empty batch.
    pub fn new() -> BatchOps {
        BatchOps { ops: Mutex::new(Some(Vec::new())) }
    }

    /// Adds `op`; fails once the batch is committed or discarded.
    pub fn push(&self, op: BatchOp) -> kuradb::Result<()> {
        match self.ops.lock().as_mut() {
            Some(ops) => {
                ops.push(op);
                Ok(())
            }
            None => Err(batch_finished()),
        }
    }

    /// The number of writes gathered.
    pub fn len(&self) -> usize {
        self.ops.lock().as_ref().map_or(0, Vec::len)
    }

    /// Whether no write is gathered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether writes can still be added.
    pub fn is_active(&self) -> bool {
        self.ops.lock().is_some()
    }

    /// Drops the writes; the batch is finished.
    pub fn discard(&self) {
        self.ops.lock().take();
    }

    /// Applies the writes to `db` as one unit with `durability`; the batch
    /// is finished whatever the outcome.
    pub fn commit(&self, db: &Db, durability: CommitDurability) -> kuradb::Result<()> {
        let Some(ops) = self.ops.lock().take() else { return Err(batch_finished()) };
        let mut batch = db.batch(durability);
        for op in &ops {
            match op {
                BatchOp::Set(key, value) => batch.set(key, value),
                BatchOp::Remove(key) => batch.remove(key),
                BatchOp::Append(key, value, delimiter) => batch.append(key, value, delimiter),
                BatchOp::Increment(key, delta, initial) => batch.increment(key, *delta, *initial),
            };
        }
        batch.commit().map(|_| ())
    }
}

impl Default for BatchOps {
    fn default() -> BatchOps {
        BatchOps::new()
    }
}

fn batch_finished() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the batch is finished (committed or discarded)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::{transactional, OpenHandle};
    use kuradb::dbm::{Access, Dbm};

    fn open(path: &std::path::Path) -> Db {
        let poly = PolyDbm::open(path, Access::ReadWrite, &kuradb::Params::new()).unwrap();
        transactional(poly, Access::ReadWrite).unwrap()
    }

    #[test]
    fn transactions_commit_conflict_and_are_aborted_by_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tkt");
        let handle = OpenHandle::new(open(&path));
        handle.with(|db| db.set(b"a", b"1")).unwrap();
        let first = handle.begin(CommitDurability::Os).unwrap();
        let second = handle.begin(CommitDurability::Os).unwrap();
        assert_eq!(first.with(|tx| tx.get(b"a")).unwrap().as_deref(), Some(&b"1"[..]));
        let point = first.savepoint_index().unwrap();
        first
            .with(|tx| {
                tx.set(b"undone", b"x");
                Ok(())
            })
            .unwrap();
        first.rollback_to_index(point).unwrap();
        assert_eq!(first.with(|tx| tx.get(b"undone")).unwrap(), None);
        assert_eq!(first.rollback_to_index(point + 1).unwrap_err().kind(), ErrorKind::InvalidArgument);
        second.with(|tx| tx.get(b"a")).unwrap();
        first
            .with(|tx| {
                tx.set(b"a", b"2");
                Ok(())
            })
            .unwrap();
        second
            .with(|tx| {
                tx.set(b"a", b"3");
                Ok(())
            })
            .unwrap();
        let snapshot = handle.snapshot().unwrap();
        first.commit().unwrap();
        assert!(!first.is_active());
        assert_eq!(second.commit().unwrap_err().kind(), ErrorKind::Conflict);
        assert_eq!(first.commit().unwrap_err().kind(), ErrorKind::Infeasible);
        assert_eq!(snapshot.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(handle.with(|db| db.get(b"a")).unwrap().as_deref(), Some(&b"2"[..]));

        let batch = BatchOps::new();
        batch.push(BatchOp::Set(b"b".to_vec(), b"x".to_vec())).unwrap();
        batch.push(BatchOp::Append(b"b".to_vec(), b"y".to_vec(), b",".to_vec())).unwrap();
        batch.push(BatchOp::Increment(b"n".to_vec(), 5, 0)).unwrap();
        batch.push(BatchOp::Remove(b"a".to_vec())).unwrap();
        handle.with(|db| batch.commit(db, CommitDurability::Sync)).unwrap();
        assert_eq!(handle.with(|db| db.get(b"b")).unwrap().as_deref(), Some(&b"x,y"[..]));
        assert_eq!(snapshot.keys().unwrap(), vec![b"a".to_vec()]);

        let open_tx = handle.begin(CommitDurability::Memory).unwrap();
        open_tx
            .with(|tx| {
                tx.set(b"c", b"3");
                Ok(())
            })
            .unwrap();
        handle.close().unwrap();
        assert!(!open_tx.is_active() && !snapshot.is_active());
        assert_eq!(open_tx.commit().unwrap_err().kind(), ErrorKind::Infeasible);
        assert_eq!(snapshot.count().unwrap_err().kind(), ErrorKind::Infeasible);
        assert!(!dir.path().join("t.tkt.txlog").exists());
        let db = open(&path);
        assert_eq!(db.get(b"c").unwrap(), None);
        assert_eq!(db.get(b"a").unwrap(), None);
        assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"x,y"[..]));
        db.close().unwrap();
    }
}
