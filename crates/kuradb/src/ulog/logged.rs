//! The database wrapper that tells an update logger every change.

use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::logged_cursor::LoggedCursor;
use super::UpdateLogger;
use crate::dbm::params::Params;
use crate::dbm::{
    duplication, Access, Action, Cursor, Dbm, Durability, EachProcessor, MultiProcessor, Processor,
};
use crate::error::{Error, Result};

/// How many locks the keys are spread over.
const STRIPES: usize = 256;

/// A database whose every change is told to an [`UpdateLogger`] first.
///
/// # Order
/// A change is logged, then made. Every writing operation first takes a
/// lock of its key's stripe (of every key's, for several; all of them for a
/// clear or a writable walk) and holds it until the change is made, and the
/// log is written from inside the database's processor, where the final
/// value is known (an append's or an increment's result). So the entries
/// of one key are in the order of its changes, and each change appears
/// once: a set as the value it stored, a remove, a clear. A processor that
/// answers [`Action::Keep`] logs nothing; one that answers a removal is
/// logged even if the record was absent (the skip database cannot tell
/// before its next synchronization), which replaying makes no difference to.
///
/// A log write that fails fails the change, which is not made; the error
/// says so and why. A change the database then fails to make (a full disk)
/// stays in the log.
///
/// # Crashes
/// A crash after the log write and before the change leaves the log one
/// change ahead of the database; a crash after both, with the database not
/// synchronized, leaves it further behind. Either way, applying the log
/// ([`apply_update_logs`](super::apply_update_logs)) from a time before the
/// database's last synchronization brings it to what the log says: an
/// entry sets a value or removes a key outright, so replaying one the
/// database already has changes nothing. [`Dbm::synchronize`] synchronizes
/// the log first, so a synchronized database never holds a change its
/// synchronized log lacks.
pub struct LoggedDbm {
    db: Box<dyn Dbm>,
    logger: Arc<dyn UpdateLogger>,
    stripes: Box<[Mutex<()>]>,
}

impl LoggedDbm {
    /// Wraps `db` so that `logger` is told every change made through it.
    pub fn new(db: impl Dbm + 'static, logger: Arc<dyn UpdateLogger>) -> LoggedDbm {
        LoggedDbm::boxed(Box::new(db), logger)
    }

    /// Like [`LoggedDbm::new`] for a database already boxed.
    pub fn boxed(db: Box<dyn Dbm>, logger: Arc<dyn UpdateLogger>) -> LoggedDbm {
        LoggedDbm { db, logger, stripes: (0..STRIPES).map(|_| Mutex::new(())).collect() }
    }

    /// The logger.
    pub fn logger(&self) -> &Arc<dyn UpdateLogger> {
        &self.logger
    }

    /// The wrapped database; changes made straight to it are not logged.
    pub fn inner(&self) -> &dyn Dbm {
        self.db.as_ref()
    }

    /// Closes the database, then synchronizes the log.
    pub fn close(self) -> Result<()> {
        let closed = self.db.close();
        let synced = self.logger.synchronize(Durability::Soft);
        closed.and(synced)
    }

    fn stripe_of(key: &[u8]) -> usize {
        (xxhash_rust::xxh3::xxh3_64(key) % STRIPES as u64) as usize
    }

    pub(super) fn lock_key(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        self.stripes[LoggedDbm::stripe_of(key)].lock()
    }

    /// Locks the stripes of `keys`, always in stripe order, so that two
    /// operations on the same keys cannot each hold one the other waits for.
    fn lock_keys(&self, keys: &[&[u8]]) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = keys.iter().map(|k| LoggedDbm::stripe_of(k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|i| self.stripes[i].lock()).collect()
    }

    fn lock_all(&self) -> Vec<MutexGuard<'_, ()>> {
        self.stripes.iter().map(|s| s.lock()).collect()
    }

    /// Logs `action` on `key`; on failure notes the error in `failure` and
    /// answers `Keep` instead, so the change is not made.
    fn log<'b>(&self, key: &[u8], action: Action<'b>, failure: &mut Option<Error>) -> Action<'b> {
        if failure.is_some() {
            return Action::Keep;
        }
        let written = match &action {
            Action::Keep => return action,
            Action::Set(value) => self.logger.write_set(key, value),
            Action::Remove => self.logger.write_remove(key),
        };
        match written {
            Ok(()) => action,
            Err(e) => {
                *failure = Some(refused(e));
                Action::Keep
            }
        }
    }
}

/// The error of a change not made because its log write failed.
pub(super) fn refused(e: Error) -> Error {
    let message = format!("the update log could not be written, so the change was not made: {}", e.message());
    Error::new(e.kind(), message)
}

impl Dbm for LoggedDbm {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        if !access.is_writable() {
            return self.db.process(key, Access::ReadOnly, f);
        }
        let _stripe = self.lock_key(key);
        let mut failure = None;
        self.db.process(key, Access::ReadWrite, &mut |old| self.log(key, f(old), &mut failure))?;
        failure.map_or(Ok(()), Err)
    }

    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> Action<'a>) -> Result<()> {
        let _stripe = self.lock_key(key);
        let mut failure = None;
        self.db.process_presence(key, &mut |exists| self.log(key, f(exists), &mut failure))?;
        failure.map_or(Ok(()), Err)
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        if !access.is_writable() {
            return self.db.process_multi(keys, Access::ReadOnly, f);
        }
        let _stripes = self.lock_keys(keys);
        let mut failure = None;
        self.db.process_multi(keys, Access::ReadWrite, &mut |i, key, old| {
            if failure.is_some() {
                return Action::Keep;
            }
            let action = f(i, key, old);
            self.log(key, action, &mut failure)
        })?;
        failure.map_or(Ok(()), Err)
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        if !access.is_writable() {
            return self.db.process_each(Access::ReadOnly, f);
        }
        let _stripes = self.lock_all();
        let mut failure = None;
        self.db.process_each(Access::ReadWrite, &mut |key, value| {
            if failure.is_some() {
                return Action::Keep;
            }
            let action = f(key, value);
            self.log(key, action, &mut failure)
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// Logged, then passed on: a database may set its own way (a skip
    /// database adds a record beside the key's others).
    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _stripe = self.lock_key(key);
        self.logger.write_set(key, value).map_err(refused)?;
        self.db.set(key, value)
    }

    /// Logged only if the key is absent, then passed on.
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _stripe = self.lock_key(key);
        if self.db.contains(key)? {
            return Err(duplication(key));
        }
        self.logger.write_set(key, value).map_err(refused)?;
        self.db.insert(key, value)
    }

    /// Logged, then passed on, whether the key exists or not.
    fn remove(&self, key: &[u8]) -> Result<bool> {
        let _stripe = self.lock_key(key);
        self.logger.write_remove(key).map_err(refused)?;
        self.db.remove(key)
    }

    fn clear(&self) -> Result<()> {
        let _stripes = self.lock_all();
        self.logger.write_clear().map_err(refused)?;
        self.db.clear()
    }

    /// Synchronizes the log, then the database.
    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.logger.synchronize(durability)?;
        self.db.synchronize(durability)
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(LoggedCursor::new(self, self.db.iter()?)))
    }

    fn close(self: Box<Self>) -> Result<()> {
        LoggedDbm::close(*self)
    }

    fn count(&self) -> Result<u64> {
        self.db.count()
    }
    fn file_size(&self) -> Result<u64> {
        self.db.file_size()
    }
    fn path(&self) -> Option<&Path> {
        self.db.path()
    }
    fn rebuild(&self) -> Result<()> {
        self.db.rebuild()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        self.db.rebuild_with_params(params)
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        self.db.should_be_rebuilt()
    }
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        self.db.copy_file_data(dest, durability)
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        self.db.inspect()
    }
    fn is_healthy(&self) -> bool {
        self.db.is_healthy()
    }
    fn is_ordered(&self) -> bool {
        self.db.is_ordered()
    }
    fn restores_to_last_sync(&self) -> bool {
        self.db.restores_to_last_sync()
    }
    fn updates_show_at_sync(&self) -> bool {
        self.db.updates_show_at_sync()
    }
    fn contains(&self, key: &[u8]) -> Result<bool> {
        self.db.contains(key)
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(key)
    }
    fn get_multi(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.db.get_multi(keys)
    }
    fn contains_multi(&self, keys: &[&[u8]]) -> Result<Vec<bool>> {
        self.db.contains_multi(keys)
    }
    fn prefetch(&self, keys: &[&[u8]]) {
        self.db.prefetch(keys)
    }
}
