//! Secondary indexes kept by the commits of a [`TransactionalDbm`].
//!
//! An attached index is derived from the records: a function of the
//! program's names each record's index keys (a user's city, a document's
//! tags), and the index holds a pair (index key, record key) for each. Every
//! change to the database (commit, batch, plain write, replica unit) goes
//! through the commit lock while an index is attached, works out which pairs
//! the change adds and removes from the record's value before and after, and
//! applies them as one step per index, so a reader of the index sees each
//! commit whole or not at all.
//!
//! Nothing of an index is logged: attaching one rebuilds it from the
//! database, which is what makes it consistent after any crash (the commit
//! log is applied to the database at open, before any index is attached).
//!
//! Reads of an index through a snapshot or a transaction see it as of the
//! view's commit: the pairs of records no commit changed since are the
//! index's own, and those of the changed records come from the values the
//! view keeps (`versions.rs`). A transaction's read of an index key counts
//! as a read of that predicate: a commit since it began that added or
//! removed a pair under that index key makes its commit conflict.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::versions::Versions;
use super::TransactionalDbm;
use crate::dbm::{Access, Action, Dbm};
use crate::error::{Error, ErrorKind, Result};
use crate::index::AnyIndex;

/// The function naming a record's index keys from its key and value: it is
/// called under the commit lock for every change, so it must be quick and
/// give the same answer for the same record every time.
pub type IndexKeys = dyn Fn(&[u8], &[u8]) -> Vec<Vec<u8>> + Send + Sync;

/// An index attached to a database.
pub(super) struct AttachedIndex {
    /// Unique for the database's lifetime, so a re-attached index under the
    /// same name is not mistaken for the old one by a transaction's reads.
    pub id: u64,
    pub name: String,
    /// The sequence number attaching it took: a view older than this never
    /// saw the index and cannot read it.
    pub attached_at: u64,
    keys_of: Box<IndexKeys>,
    /// The pairs: held shared by readers and exclusively while one commit's
    /// pairs change, so that readers see commits whole; taken out when the
    /// index is detached.
    pairs: RwLock<Option<AnyIndex>>,
    /// Why updating the index failed, if it did: it no longer matches the
    /// database, and every read of it says so until it is attached again.
    broken: Mutex<Option<String>>,
}

impl AttachedIndex {
    /// The index keys of a record holding `value` (none when absent),
    /// sorted and without repeats.
    fn index_keys(&self, key: &[u8], value: Option<&[u8]>) -> Vec<Vec<u8>> {
        let Some(value) = value else {
            return Vec::new();
        };
        let mut keys = (self.keys_of)(key, value);
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Whether a record holding `value` is under `index_key`.
    pub fn holds(&self, key: &[u8], value: Option<&[u8]>, index_key: &[u8]) -> bool {
        value.is_some_and(|value| (self.keys_of)(key, value).iter().any(|k| k == index_key))
    }

    fn usable(&self) -> Result<()> {
        match &*self.broken.lock() {
            None => Ok(()),
            Some(why) => Err(Error::new(
                ErrorKind::BrokenData,
                format!(
                    "the index {} no longer matches the database: updating it failed ({why}); attach it \
                     again to rebuild it",
                    self.name
                ),
            )),
        }
    }
}

/// One commit's pairs to remove from and add to one index.
pub(super) struct IndexDelta {
    index: Arc<AttachedIndex>,
    remove: Vec<(Vec<u8>, Vec<u8>)>,
    add: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The pairs commit `seq` changes in each of `indexes`, from each changed
/// record's key and its value before and after; notes in `versions` the
/// index keys whose pairs change, for the transactions that read them.
pub(super) fn index_deltas<'a>(
    indexes: &[Arc<AttachedIndex>],
    changes: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>, Option<&'a [u8]>)> + Clone,
    seq: u64,
    versions: &mut Versions,
) -> Vec<IndexDelta> {
    let mut deltas = Vec::with_capacity(indexes.len());
    for index in indexes {
        let mut delta = IndexDelta { index: Arc::clone(index), remove: Vec::new(), add: Vec::new() };
        for (key, before, after) in changes.clone() {
            if before == after {
                continue;
            }
            let old = index.index_keys(key, before);
            let new = index.index_keys(key, after);
            for gone in old.iter().filter(|k| new.binary_search(k).is_err()) {
                versions.record_index_key(index.id, gone, seq);
                delta.remove.push((gone.clone(), key.to_vec()));
            }
            for came in new.iter().filter(|k| old.binary_search(k).is_err()) {
                versions.record_index_key(index.id, came, seq);
                delta.add.push((came.clone(), key.to_vec()));
            }
        }
        if !delta.remove.is_empty() || !delta.add.is_empty() {
            deltas.push(delta);
        }
    }
    deltas
}

/// Applies each index's pairs as one step for its readers. A failure marks
/// that index broken (its reads then fail, saying why) rather than failing
/// the commit, whose changes are already in the database.
pub(super) fn apply_deltas(deltas: Vec<IndexDelta>) {
    for delta in deltas {
        let guard = delta.index.pairs.write();
        let Some(pairs) = guard.as_ref().map(AnyIndex::index) else {
            continue;
        };
        let outcome = delta
            .remove
            .iter()
            .try_for_each(|(k, v)| pairs.remove(k, v).map(drop))
            .and_then(|()| delta.add.iter().try_for_each(|(k, v)| pairs.add(k, v)));
        if let Err(e) = outcome {
            *delta.index.broken.lock() = Some(e.message().to_string());
        }
    }
}

/// Marks every index of `indexes` broken by `error`: a plain write changed
/// records whose new values could not be read back to update them.
pub(super) fn mark_broken(indexes: &[Arc<AttachedIndex>], error: &Error) {
    for index in indexes {
        *index.broken.lock() = Some(error.message().to_string());
    }
}

/// Gives each attached index a number of its own.
static NEXT_INDEX_ID: AtomicU64 = AtomicU64::new(1);

impl<D: Dbm + 'static> TransactionalDbm<D> {
    /// Attaches `index` under `name`, kept by every later change: a record
    /// holding a value is under each index key `keys_of(key, value)` names.
    /// The index is emptied and built from the database first (one walk of
    /// every record, with commits held off meanwhile), so an index file left
    /// by a crash is made right. While any index is attached, plain writes
    /// take the tracked path (through the commit lock), as they do while a
    /// snapshot is open.
    ///
    /// ```
    /// use kuradb::dbm::std_map::StdTreeDbm;
    /// use kuradb::dbm::txn::{CommitDurability, TransactionalDbm, TransactionOptions};
    /// use kuradb::dbm::Dbm;
    /// use kuradb::index::AnyIndex;
    /// use kuradb::dbm::Access;
    /// # fn main() -> kuradb::Result<()> {
    /// let db = TransactionalDbm::open(StdTreeDbm::new(&Default::default()), TransactionOptions::default())?;
    /// db.set(b"user:1", b"tokyo")?;
    /// let by_city = AnyIndex::open("", Access::ReadWrite, &kuradb::Params::new())?;
    /// db.attach_index("city", by_city, |_key, value| vec![value.to_vec()])?;
    /// db.run(CommitDurability::Memory, 3, |tx| {
    ///     tx.set(b"user:2", b"tokyo");
    ///     assert_eq!(tx.index_values("city", b"tokyo")?, [b"user:1".to_vec(), b"user:2".to_vec()]);
    ///     Ok(())
    /// })?;
    /// db.set(b"user:1", b"osaka")?;
    /// assert_eq!(db.index_values("city", b"tokyo")?, [b"user:2".to_vec()]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn attach_index(
        &self,
        name: &str,
        index: AnyIndex,
        keys_of: impl Fn(&[u8], &[u8]) -> Vec<Vec<u8>> + Send + Sync + 'static,
    ) -> Result<()> {
        self.refuse_deferred_updates()?;
        if !index.is_writable() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the index {name} was opened read-only; an attached index is written by every commit"
                ),
            ));
        }
        if self.indexes.read().iter().any(|i| i.name == name) {
            return Err(Error::new(
                ErrorKind::Duplication,
                format!("an index named {name} is attached already"),
            ));
        }
        // Plain writes take the tracked path from now on, so none misses the
        // index; the count is given back by `detach_index` (or on failure).
        self.start_tracking();
        let attached = self.build_index(name, index, Box::new(keys_of));
        match attached {
            Ok(()) => Ok(()),
            Err(e) => {
                self.tracking.fetch_sub(1, Ordering::AcqRel);
                Err(e)
            }
        }
    }

    fn build_index(&self, name: &str, pairs: AnyIndex, keys_of: Box<IndexKeys>) -> Result<()> {
        let mut last = self.lock_settled()?;
        let mut indexes = self.indexes.write();
        if indexes.iter().any(|i| i.name == name) {
            return Err(Error::new(
                ErrorKind::Duplication,
                format!("an index named {name} is attached already"),
            ));
        }
        pairs.index().clear()?;
        let mut failed = None;
        self.inner.process_each(Access::ReadOnly, &mut |key, value| {
            if failed.is_none() {
                for index_key in keys_of(key, value) {
                    if let Err(e) = pairs.index().add(&index_key, key) {
                        failed = Some(e);
                        break;
                    }
                }
            }
            Action::Keep
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        let seq = *last + 1;
        indexes.push(Arc::new(AttachedIndex {
            id: NEXT_INDEX_ID.fetch_add(1, Ordering::Relaxed),
            name: name.to_string(),
            attached_at: seq,
            keys_of,
            pairs: RwLock::new(Some(pairs)),
            broken: Mutex::new(None),
        }));
        *last = seq;
        self.finish_turn(seq, true);
        Ok(())
    }

    /// Detaches the index `name` and gives it back; later changes no
    /// longer touch it. Refused while a snapshot or transaction is open,
    /// since a transaction that read the index checks it at its commit.
    pub fn detach_index(&self, name: &str) -> Result<AnyIndex> {
        let _last = self.lock_settled()?;
        if self.versions.lock().has_views() {
            return Err(Error::new(
                ErrorKind::Infeasible,
                format!("cannot detach the index {name} while a snapshot or transaction is open"),
            ));
        }
        let mut indexes = self.indexes.write();
        let Some(at) = indexes.iter().position(|i| i.name == name) else {
            return Err(no_index(name));
        };
        let index = indexes.remove(at);
        drop(indexes);
        self.tracking.fetch_sub(1, Ordering::AcqRel);
        let pairs = index.pairs.write().take();
        pairs.ok_or_else(|| no_index(name))
    }

    /// The names of the attached indexes, in the order they were attached.
    pub fn index_names(&self) -> Vec<String> {
        self.indexes.read().iter().map(|i| i.name.clone()).collect()
    }

    /// The keys of the records under `index_key` in the index `name`, as of
    /// the newest commit applied to it, in byte order.
    pub fn index_values(&self, name: &str, index_key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let indexes = self.indexes.read();
        let index = find(&indexes, name)?;
        index.usable()?;
        let pairs = index.pairs.read();
        let mut keys = pairs.as_ref().ok_or_else(|| no_index(name))?.index().get_values(index_key, 0)?;
        keys.sort_unstable();
        Ok(keys)
    }

    /// The keys under `index_key` in the index `name` as a view at `at`
    /// sees them; `overlay` then adjusts the set (a transaction's own
    /// writes) while the index is still held. Answers the index's number.
    pub(super) fn index_values_at(
        &self,
        name: &str,
        index_key: &[u8],
        at: u64,
        overlay: impl FnOnce(&AttachedIndex, &mut BTreeSet<Vec<u8>>),
    ) -> Result<(u64, Vec<Vec<u8>>)> {
        let indexes = self.indexes.read();
        let index = find(&indexes, name)?;
        index.usable()?;
        if at < index.attached_at {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!("the index {name} was attached after this view began; start a new one"),
            ));
        }
        let pairs = index.pairs.read();
        let current = pairs.as_ref().ok_or_else(|| no_index(name))?.index().get_values(index_key, 0)?;
        let versions = self.versions.lock();
        super::check_view(&versions, at)?;
        // Records no commit since the view changed are in the index as the
        // view saw them; the changed ones are judged by the values the view
        // sees, which the versions keep.
        let mut keys: BTreeSet<Vec<u8>> =
            current.into_iter().filter(|key| !versions.changed_since(key, at)).collect();
        for (key, version) in versions.changed_keys_since(at) {
            if index.holds(key, version.before.as_deref(), index_key) {
                keys.insert(key.to_vec());
            }
        }
        drop(versions);
        drop(pairs);
        overlay(index, &mut keys);
        Ok((index.id, keys.into_iter().collect()))
    }

    /// The attached indexes, for a commit to update.
    pub(super) fn attached_indexes(&self) -> Vec<Arc<AttachedIndex>> {
        self.indexes.read().clone()
    }

    /// Empties every attached index (the database was cleared).
    pub(super) fn clear_indexes(&self) -> Result<()> {
        for index in self.indexes.read().iter() {
            if let Some(pairs) = &*index.pairs.write() {
                pairs.index().clear()?;
            }
        }
        Ok(())
    }

    /// Closes the attached indexes (on the database's close).
    pub(super) fn close_indexes(indexes: Vec<Arc<AttachedIndex>>) -> Result<()> {
        let mut outcome = Ok(());
        for index in indexes {
            if let Some(pairs) = index.pairs.write().take() {
                outcome = outcome.and(pairs.close());
            }
        }
        outcome
    }
}

fn find<'a>(indexes: &'a [Arc<AttachedIndex>], name: &str) -> Result<&'a AttachedIndex> {
    indexes.iter().find(|i| i.name == name).map(|i| &**i).ok_or_else(|| no_index(name))
}

fn no_index(name: &str) -> Error {
    Error::new(ErrorKind::NotFound, format!("no index named {name} is attached"))
}
