//! What StdHashDbm and StdTreeDbm both are: a standard set of records
//! behind one reader-writer lock, and its flat file.

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::packed::Packed;
use super::set::StdSet;
use crate::dbm::flat::{self, refused_change, FlatWriter};
use crate::dbm::persistence::{FlatLock, Persistence};
use crate::dbm::{duplication, Access, Action, Durability, EachProcessor, MultiProcessor, Processor};
use crate::error::Result;

/// A caller's value as the set stores it: the one place a value codec
/// (compression, encryption) would encode. The identity for now.
#[inline(always)]
fn encode_value(value: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    value
}

/// A stored value as a caller sees it: the one place a value codec would
/// decode. The identity for now.
#[inline(always)]
pub(super) fn decode_value(stored: &[u8]) -> &[u8] {
    stored
}

/// A set and its flat file.
pub(super) struct Store<S: StdSet> {
    set: RwLock<Records<S>>,
    /// Bumped by every writer as it takes the lock, before it changes
    /// anything: a cursor that reads the number it saw with its record knows
    /// that record still holds, without taking the lock.
    version: AtomicU64,
    pub(super) persistence: Persistence,
    closed: bool,
}

/// The records: the set and what they take.
pub(super) struct Records<S> {
    pub(super) set: S,
    /// The records' heap bytes.
    bytes: usize,
}

/// A change to the records, as [`Records::change`] takes it.
enum Change<'k, 'a> {
    /// What a processor answered for `key`.
    Record { key: &'k [u8], action: Action<'a> },
    /// Every record goes.
    Clear,
}

impl<S: StdSet> Records<S> {
    /// Carries out a change; answers whether it removed or replaced a
    /// record. Every change of the records passes here (a process, a
    /// rewrite, a set, a remove, a clear, a load from the flat file), and
    /// nothing else changes them: an update log, an index or a statistics
    /// counter attaches here.
    fn change(&mut self, change: Change<'_, '_>) -> bool {
        match change {
            Change::Record { action: Action::Keep, .. } => false,
            Change::Record { key, action: Action::Set(value) } => {
                let record = Packed::new(key, &encode_value(value));
                self.bytes += record.heap_size();
                let old = self.set.put(record);
                old.inspect(|old| self.bytes -= old.heap_size()).is_some()
            }
            Change::Record { key, action: Action::Remove } => {
                let old = self.set.take(key);
                old.inspect(|old| self.bytes -= old.heap_size()).is_some()
            }
            Change::Clear => {
                let any = self.set.count() > 0;
                self.set.wipe();
                self.bytes = 0;
                any
            }
        }
    }

    /// The value of `key`, as a caller sees it.
    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.set.find(key).map(|r| decode_value(r.value()))
    }

    fn put_all(&self, w: &mut FlatWriter) -> std::io::Result<()> {
        self.set.each().try_for_each(|r| w.put(r.key(), decode_value(r.value())))
    }
}

impl<S: StdSet> Store<S> {
    pub(super) fn new() -> Store<S> {
        Store {
            set: RwLock::new(Records { set: S::default(), bytes: 0 }),
            version: AtomicU64::new(0),
            persistence: Persistence::none(),
            closed: false,
        }
    }

    /// Opens the flat file at `path`, reading it unless `truncate`; each
    /// record is stored as a set would store it.
    pub(super) fn open(path: &Path, access: Access, truncate: bool, lock: &FlatLock) -> Result<Store<S>> {
        let mut records = Records { set: S::default(), bytes: 0 };
        let persistence = Persistence::open(path, access, truncate, lock, |key, value| {
            records.change(Change::Record { key, action: Action::set(value) });
            Ok(())
        })?;
        Ok(Store { set: RwLock::new(records), version: AtomicU64::new(0), persistence, closed: false })
    }

    /// The records, for reading.
    pub(super) fn read(&self) -> RwLockReadGuard<'_, Records<S>> {
        self.set.read()
    }

    /// The records, for a change.
    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Records<S>> {
        let records = self.set.write();
        self.version.fetch_add(1, Ordering::AcqRel);
        records
    }

    /// The version now: see [`Store::version`].
    pub(super) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Writes the flat file (if there is one and it may change) and marks the store closed.
    pub(super) fn close(&mut self) -> Result<()> {
        self.closed = true;
        self.synchronize(Durability::Soft)
    }

    pub(super) fn synchronize(&self, durability: Durability) -> Result<()> {
        let records = self.set.read();
        self.persistence.save(durability.is_hard(), |w| records.put_all(w))
    }

    pub(super) fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        let records = self.set.read();
        flat::write(dest, durability.is_hard(), |w| records.put_all(w))
    }

    pub(super) fn process(&self, key: &[u8], access: Access, f: &mut Processor<'_>) -> Result<()> {
        if !access.is_writable() {
            self.persistence.check_process()?;
            return match f(self.set.read().get(key)) {
                Action::Keep => Ok(()),
                _ => Err(refused_change()),
            };
        }
        self.persistence.check_writable(true)?;
        let mut records = self.write();
        let action = f(records.get(key));
        records.change(Change::Record { key, action });
        Ok(())
    }

    pub(super) fn process_multi(
        &self,
        keys: &[&[u8]],
        access: Access,
        f: &mut MultiProcessor<'_>,
    ) -> Result<()> {
        self.persistence.check_writable(access.is_writable())?;
        let mut records = self.write();
        for (i, key) in keys.iter().enumerate() {
            let action = f(i, key, records.get(key));
            if !access.is_writable() && action != Action::Keep {
                return Err(refused_change());
            }
            records.change(Change::Record { key, action });
        }
        Ok(())
    }

    pub(super) fn process_each(&self, access: Access, f: &mut EachProcessor<'_>) -> Result<()> {
        self.persistence.check_writable(access.is_writable())?;
        let mut records = self.write();
        // Changes wait until the walk is over: the set cannot change under its iterator.
        let mut changes: Vec<(Vec<u8>, Action<'static>)> = Vec::new();
        for record in records.set.each() {
            match f(record.key(), decode_value(record.value())) {
                Action::Keep => {}
                _ if !access.is_writable() => return Err(refused_change()),
                Action::Remove => changes.push((record.key().to_vec(), Action::Remove)),
                Action::Set(v) => {
                    changes.push((record.key().to_vec(), Action::Set(Cow::Owned(v.into_owned()))))
                }
            }
        }
        for (key, action) in changes {
            records.change(Change::Record { key: &key, action });
        }
        Ok(())
    }

    /// Stores `value` under `key`, unless the key has a record and not `overwrite`.
    pub(super) fn put(&self, key: &[u8], value: &[u8], overwrite: bool) -> Result<()> {
        self.persistence.check_writable(true)?;
        let mut records = self.write();
        if !overwrite && records.set.find(key).is_some() {
            return Err(duplication(key));
        }
        records.change(Change::Record { key, action: Action::set(value) });
        Ok(())
    }

    /// Removes `key`'s record; answers whether there was one.
    pub(super) fn remove(&self, key: &[u8]) -> Result<bool> {
        self.persistence.check_writable(true)?;
        Ok(self.write().change(Change::Record { key, action: Action::Remove }))
    }

    pub(super) fn clear(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.write().change(Change::Clear);
        Ok(())
    }

    pub(super) fn count(&self) -> Result<u64> {
        self.persistence.check_process()?;
        Ok(self.set.read().set.count() as u64)
    }

    /// The records' bytes and the set's own.
    pub(super) fn mem_size(&self) -> usize {
        let records = self.set.read();
        records.bytes + records.set.overhead()
    }

    pub(super) fn rebuild(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.write().set.compact();
        Ok(())
    }

    pub(super) fn inspect(&self) -> Vec<(String, String)> {
        let records = self.set.read();
        vec![
            ("class".to_string(), S::CLASS.to_string()),
            ("num_records".to_string(), records.set.count().to_string()),
            ("mem_size".to_string(), (records.bytes + records.set.overhead()).to_string()),
            (
                "path".to_string(),
                self.persistence.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
            ),
        ]
    }
}

impl<S: StdSet> Drop for Store<S> {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.synchronize(Durability::Soft);
        }
    }
}
