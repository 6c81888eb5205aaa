//! [`OpenHandle`]: an open (or closed) database as a foreign object holds
//! it, with the slots of its cursors and its [`CallbackGuard`].
//!
//! Calls take the read lock (recursively: a reader never waits behind a
//! closer that waits for another reader of the same thread); `install` and
//! `close` take the write lock, so a close waits for the calls in flight.
//! Closing empties every cursor's slot, so a cursor of a closed database
//! fails instead of reading it, and so does a transaction or snapshot
//! (which are aborted and released).
//!
//! The database is a [`TransactionalDbm`] over the [`PolyDbm`] opened
//! ([`Db`]): plain calls go straight to the database while no transaction
//! or snapshot is open, and every binding can start them ([`crate::txn`]).
//! Calls of the `PolyDbm` itself (its class, its key order) go through
//! [`TransactionalDbm::inner`]; closing goes through
//! [`TransactionalDbm::close`], which checkpoints and removes the commit log.

use std::sync::{Arc, Weak};

use kuradb::dbm::expiry::Sweeper;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::txn::{TransactionOptions, TransactionalDbm};
use kuradb::dbm::Access;
use kuradb::ErrorKind;
use parking_lot::{Mutex, RwLock};

use crate::cursor::{Live, Slot};
use crate::guard::CallbackGuard;
use crate::txn::{Release, SnapshotSlot, TransactionSlot};

/// The database a binding holds: a [`PolyDbm`] with transactions.
pub type Db = TransactionalDbm<PolyDbm>;

/// Wraps a database just opened with `access` for transactions, with the
/// options that fit its class ([`TransactionOptions::for_poly`]); applies
/// the commits a crash left in its log.
pub fn transactional(poly: PolyDbm, access: Access) -> kuradb::Result<Db> {
    let options = TransactionOptions { access, ..TransactionOptions::for_poly(&poly)? };
    TransactionalDbm::open(poly, options)
}

/// A database slot: the open database, or none.
#[derive(Default)]
pub struct OpenHandle {
    db: RwLock<Option<Arc<Db>>>,
    cursors: Mutex<Vec<Weak<Slot>>>,
    /// The transactions' and snapshots' slots, emptied by `close`.
    views: Mutex<Vec<Weak<dyn Release>>>,
    guard: CallbackGuard,
    /// The background sweeper of a database with expiry, stopped by `close`
    /// (its thread holds the database while it sweeps, which a close must
    /// not meet).
    sweeper: Mutex<Option<Sweeper>>,
}

/// Adds `slot` to `list`, first forgetting the slots dropped meanwhile at
/// doubling sizes, so the list stays as long as the live ones at amortised cost.
fn remember<T: ?Sized>(list: &Mutex<Vec<Weak<T>>>, slot: Weak<T>) {
    let mut list = list.lock();
    if list.len() >= 64 && list.len().is_power_of_two() {
        list.retain(|w| w.strong_count() > 0);
    }
    list.push(slot);
}

impl OpenHandle {
    /// A handle holding `db`.
    pub fn new(db: Db) -> OpenHandle {
        OpenHandle { db: RwLock::new(Some(Arc::new(db))), ..OpenHandle::default() }
    }

    /// The database's callback guard.
    pub fn guard(&self) -> &CallbackGuard {
        &self.guard
    }

    /// Whether a database is open.
    pub fn is_open(&self) -> bool {
        self.db.read_recursive().is_some()
    }

    /// Runs `f` on the open database; fails if none is open, or if this
    /// thread is inside one of its callbacks.
    pub fn with<R>(&self, f: impl FnOnce(&Arc<Db>) -> kuradb::Result<R>) -> kuradb::Result<R> {
        self.guard.check()?;
        let guard = self.db.read_recursive();
        f(guard.as_ref().ok_or_else(not_open)?)
    }

    /// [`OpenHandle::with`] if the lock can be had at once (no `install` or
    /// `close` is waiting for it), else `f` handed back uncalled: for a
    /// binding that would rather release its interpreter's lock than wait
    /// while holding it, and then run `f` after all.
    pub fn try_with<R, F>(&self, f: F) -> std::result::Result<kuradb::Result<R>, F>
    where
        F: FnOnce(&Arc<Db>) -> kuradb::Result<R>,
    {
        if let Err(e) = self.guard.check() {
            return Ok(Err(e));
        }
        match self.db.try_read_recursive() {
            Some(guard) => Ok(guard.as_ref().ok_or_else(not_open).and_then(f)),
            None => Err(f),
        }
    }

    /// A clone of the open database's `Arc`, for what outlives the call (an
    /// `AsyncDBM`'s workers).
    pub fn share(&self) -> kuradb::Result<Arc<Db>> {
        self.with(|db| Ok(Arc::clone(db)))
    }

    /// Makes `open()`'s database the handle's, unless one is open already.
    pub fn install(&self, open: impl FnOnce() -> kuradb::Result<Db>) -> kuradb::Result<()> {
        self.guard.check()?;
        let mut slot = self.db.write();
        if slot.is_some() {
            return Err(kuradb::Error::new(
                ErrorKind::Infeasible,
                "the database is already open: close it first",
            ));
        }
        *slot = Some(Arc::new(open()?));
        Ok(())
    }

    /// A new cursor of the open database, in a slot that `close` empties.
    pub fn new_cursor(&self) -> kuradb::Result<Arc<Slot>> {
        self.with(|db| {
            let slot = Arc::new(Mutex::new(Some(Live::open(Arc::clone(db))?)));
            remember(&self.cursors, Arc::downgrade(&slot));
            Ok(slot)
        })
    }

    /// A new transaction of the open database whose commit has
    /// `durability`, in a slot that `close` empties (aborting it).
    pub fn begin(
        &self,
        durability: kuradb::dbm::txn::CommitDurability,
    ) -> kuradb::Result<Arc<TransactionSlot>> {
        self.with(|db| {
            let slot = Arc::new(TransactionSlot::begin(Arc::clone(db), durability));
            let weak: Weak<dyn Release> = Arc::downgrade(&slot) as Weak<dyn Release>;
            remember(&self.views, weak);
            Ok(slot)
        })
    }

    /// A new snapshot of the open database, in a slot that `close` empties.
    pub fn snapshot(&self) -> kuradb::Result<Arc<SnapshotSlot>> {
        self.with(|db| {
            let slot = Arc::new(SnapshotSlot::open(Arc::clone(db))?);
            let weak: Weak<dyn Release> = Arc::downgrade(&slot) as Weak<dyn Release>;
            remember(&self.views, weak);
            Ok(slot)
        })
    }

    /// Starts the background sweeper of a database with expiry, removing
    /// expired records at `records_per_second` at most (see
    /// [`kuradb::dbm::expiry::start_sweeper`]); fails if one runs already
    /// or the database has no expiry. `close` stops it.
    pub fn start_sweeper(&self, records_per_second: usize) -> kuradb::Result<()> {
        self.with(|db| {
            db.inner().expiring().ok_or_else(|| {
                kuradb::Error::new(
                    ErrorKind::Infeasible,
                    "the database has no expiry: expiry is turned on when a new database is made (the \
                     parameter expiry=true)",
                )
            })?;
            let mut slot = self.sweeper.lock();
            if slot.is_some() {
                return Err(kuradb::Error::new(
                    ErrorKind::Infeasible,
                    "a sweeper runs already: stop it first to start another",
                ));
            }
            *slot = Some(kuradb::dbm::expiry::start_sweeper(db, records_per_second)?);
            Ok(())
        })
    }

    /// Stops the background sweeper and answers how many expired records it
    /// removed (`None`: none was running), or the error that stopped it.
    pub fn stop_sweeper(&self) -> kuradb::Result<Option<u64>> {
        let Some(sweeper) = self.sweeper.lock().take() else { return Ok(None) };
        let removed = sweeper.removed();
        sweeper.stop()?;
        Ok(Some(removed))
    }

    /// Whether a background sweeper runs (one stopped by an error does not).
    pub fn is_sweeping(&self) -> bool {
        self.sweeper.lock().as_ref().is_some_and(|s| !s.has_failed())
    }

    /// Closes the database (a closed one stays closed), stopping its
    /// sweeper, and empties every cursor's slot. If something else still
    /// shares it (an `AsyncDBM`), it stays open and the error says so.
    /// An error that had stopped the sweeper is answered after the close.
    pub fn close(&self) -> kuradb::Result<()> {
        self.guard.check()?;
        let mut slot = self.db.write();
        // Under the write lock, so no call starts another meanwhile; the
        // sweeper's thread never waits for this lock.
        let swept = self.stop_sweeper();
        let taken = slot.take();
        drop(slot);
        self.finish_close(taken)?;
        swept.map(drop)
    }

    /// [`OpenHandle::close`] if the write lock can be had at once, else
    /// `None` (nothing done).
    pub fn try_close(&self) -> Option<kuradb::Result<()>> {
        if let Err(e) = self.guard.check() {
            return Some(Err(e));
        }
        let mut slot = self.db.try_write()?;
        let swept = self.stop_sweeper();
        let taken = slot.take();
        drop(slot);
        Some(self.finish_close(taken).and(swept.map(drop)))
    }

    fn finish_close(&self, taken: Option<Arc<Db>>) -> kuradb::Result<()> {
        let Some(db) = taken else { return Ok(()) };
        for slot in self.cursors.lock().drain(..) {
            if let Some(slot) = slot.upgrade() {
                slot.lock().take();
            }
        }
        for view in self.views.lock().drain(..) {
            if let Some(view) = view.upgrade() {
                view.release();
            }
        }
        match Arc::try_unwrap(db) {
            Ok(db) => db.close(),
            Err(db) => {
                *self.db.write() = Some(db);
                Err(kuradb::Error::new(
                    ErrorKind::Infeasible,
                    "the database is still used by an AsyncDBM: destruct the AsyncDBM before closing \
                     the database",
                ))
            }
        }
    }
}

/// The error of any use of a closed database or cursor.
pub fn not_open() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the database is not open")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::with_slot;
    use kuradb::dbm::Dbm;

    fn memory() -> Db {
        let poly =
            PolyDbm::open("", Access::ReadWrite, &kuradb::Params::parse("dbm=stdtree").unwrap()).unwrap();
        transactional(poly, Access::ReadWrite).unwrap()
    }

    #[test]
    fn closing_empties_the_cursors_and_a_closed_handle_refuses_calls() {
        let handle = OpenHandle::new(memory());
        handle.with(|db| db.set(b"k", b"v")).unwrap();
        let slot = handle.new_cursor().unwrap();
        with_slot(&slot, not_open, |c| c.first()).unwrap();
        let record = with_slot(&slot, not_open, |c| c.get()).unwrap();
        assert_eq!(record, Some((b"k".to_vec(), b"v".to_vec())));
        handle.close().unwrap();
        assert!(!handle.is_open());
        assert_eq!(with_slot(&slot, not_open, |c| c.first()).unwrap_err().kind(), ErrorKind::Infeasible);
        assert_eq!(handle.with(|db| db.count()).unwrap_err().kind(), ErrorKind::Infeasible);
        handle.close().unwrap();
        assert_eq!(handle.try_with(|db| db.count()).ok().unwrap().unwrap_err().kind(), ErrorKind::Infeasible);
        handle.install(|| Ok(memory())).unwrap();
        assert_eq!(handle.try_with(|db| db.count()).ok().unwrap().unwrap(), 0);
        let writing = handle.db.write();
        let handed_back = handle.try_with(|db| db.count()).err().unwrap();
        drop(writing);
        assert_eq!(handle.with(handed_back).unwrap(), 0);
        assert_eq!(handle.install(|| Ok(memory())).unwrap_err().kind(), ErrorKind::Infeasible);
    }

    #[test]
    fn close_stops_the_sweeper() {
        let handle = OpenHandle::new(memory());
        assert_eq!(handle.start_sweeper(100).unwrap_err().kind(), ErrorKind::Infeasible);
        handle.close().unwrap();
        let params = kuradb::Params::parse("dbm=stdtree,expiry=true").unwrap();
        handle
            .install(|| transactional(PolyDbm::open("", Access::ReadWrite, &params)?, Access::ReadWrite))
            .unwrap();
        handle.start_sweeper(1000).unwrap();
        assert!(handle.is_sweeping());
        assert!(handle.start_sweeper(1000).unwrap_err().message().contains("runs already"));
        assert_eq!(handle.stop_sweeper().unwrap(), Some(0));
        assert_eq!(handle.stop_sweeper().unwrap(), None);
        handle.start_sweeper(1000).unwrap();
        handle.close().unwrap();
        assert!(!handle.is_sweeping());
    }

    #[test]
    fn a_shared_database_stays_open_when_closed() {
        let handle = OpenHandle::new(memory());
        let shared = handle.share().unwrap();
        assert_eq!(handle.close().unwrap_err().kind(), ErrorKind::Infeasible);
        assert!(handle.is_open());
        drop(shared);
        handle.close().unwrap();
    }

    #[test]
    fn a_call_from_a_callback_is_refused() {
        let handle = OpenHandle::new(memory());
        let err = handle.guard().run_callbacks(|| handle.with(|db| db.count())).unwrap_err();
        assert!(err.message().contains("inside one of its callbacks"), "{err}");
        assert_eq!(
            handle.guard().run_callbacks(|| handle.close()).unwrap_err().kind(),
            ErrorKind::Infeasible
        );
    }
}
