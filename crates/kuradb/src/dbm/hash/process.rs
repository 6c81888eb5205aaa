//! The processors: each locks its records' slots, finds the records, shows
//! their values to the caller's function and hands its answers to
//! [`State::apply`].

use std::borrow::Cow;
use std::collections::HashSet;

use parking_lot::{RwLockReadGuard, RwLockWriteGuard};

use super::buckets::bucket_of;
use super::chain::Found;
use super::change::Change;
use super::state::{slot_index, State};
use crate::dbm::{Access, Action, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

impl State {
    pub(super) fn process(&self, key: &[u8], access: Access, f: &mut Processor<'_>) -> Result<()> {
        if access.is_writable() && !self.writable {
            return Err(self.read_only());
        }
        if !access.is_writable() {
            return match self.read_value(key, |value| f(value.as_deref()))? {
                Action::Keep => Ok(()),
                _ => Err(refused()),
            };
        }
        let stored = self.codec.seal_key(key)?;
        let key = &*stored;
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        let found = self.find(key, bucket)?;
        let value = self.value_of(found.as_ref())?;
        let action = f(value.as_deref());
        drop(value);
        self.apply(Change::Record { key, bucket, found, action })
    }

    /// Calls `f` with the value of `key` (as a caller sees it), under its
    /// slot's read lock: the read-only lookup of [`State::process`] and
    /// [`State::get`].
    fn read_value<R>(&self, key: &[u8], f: impl FnOnce(Option<Cow<'_, [u8]>>) -> R) -> Result<R> {
        let stored = self.codec.seal_key(key)?;
        let key = &*stored;
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).read();
        let found = self.find(key, bucket)?;
        Ok(f(self.value_of(found.as_ref())?))
    }

    /// The value of `key`, as a read-only [`State::process`] would show it,
    /// owned: a value the codec decoded (decompressed, opened) is handed
    /// over as it came out, where `Dbm::get`'s default copies what its
    /// function is shown, which copied such a value twice.
    pub(super) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.codec.compression.is_some() || self.codec.cipher.is_some() {
            return self.read_value(key, |value| value.map(Cow::into_owned));
        }
        // A plain value is the tail of the buffer its record was read into:
        // that buffer, cut to it, is handed over, where a copy cost an
        // allocation and a free more a lookup.
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).read();
        let Some(Found { header, mut buf, .. }) = self.find(key, bucket)? else { return Ok(None) };
        let at = header.header_size + header.key_size;
        buf.truncate(at + header.value_size);
        buf.drain(..at);
        Ok(Some(buf))
    }

    /// Like a writable [`State::process`] whose function needs only to know
    /// whether the record exists: the old value is not read.
    pub(super) fn process_presence<'a>(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(bool) -> Action<'a>,
    ) -> Result<()> {
        if !self.writable {
            return Err(self.read_only());
        }
        let stored = self.codec.seal_key(key)?;
        let key = &*stored;
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        // A node store's digest takes out the hash of a record of this epoch
        // that is rewritten or given up: read with its value, the record
        // need not be read again for it.
        let found = self.find_record(key, bucket, self.epoch_records.is_some())?;
        let action = f(found.is_some());
        self.apply(Change::Record { key, bucket, found, action })
    }

    /// Like [`State::process`] for several keys, under every key's slot
    /// lock at once. The records are found a chunk of keys at a time, each
    /// chunk's reads batched (`batch.rs`); a key whose bucket an earlier
    /// answer of the chunk changed is looked up again, alone, so that it sees
    /// what that answer left.
    pub(super) fn process_multi(
        &self,
        keys: &[&[u8]],
        access: Access,
        f: &mut MultiProcessor<'_>,
    ) -> Result<()> {
        if access.is_writable() && !self.writable {
            return Err(self.read_only());
        }
        let sealed = self.seal_keys(keys)?;
        let stored: Vec<&[u8]> = sealed.iter().map(|k| &**k).collect();
        let buckets: Vec<u64> = stored.iter().map(|k| bucket_of(k, self.num_buckets)).collect();
        let _locks = self.lock_slots(&buckets, access.is_writable());
        let mut changed = HashSet::new();
        let mut hinting = keys.len() >= 2;
        for start in (0..keys.len()).step_by(BATCH_KEYS) {
            let end = keys.len().min(start + BATCH_KEYS);
            hinting = hinting && self.prefetch_chains(&stored[start..end], &buckets[start..end]);
            let mut finds = self.find_many(&stored[start..end], &buckets[start..end], true)?;
            changed.clear();
            for (i, (&key, &bucket)) in stored[start..end].iter().zip(&buckets[start..end]).enumerate() {
                let batched = finds.take(i);
                let found = match changed.contains(&bucket) {
                    true => self.find(key, bucket)?,
                    false => {
                        self.check_untorn()?;
                        batched?
                    }
                };
                let value = self.value_of(found.as_ref())?;
                let action = f(start + i, keys[start + i], value.as_deref());
                drop(value);
                if access.is_writable() {
                    if action != Action::Keep {
                        changed.insert(bucket);
                    }
                    self.apply(Change::Record { key, bucket, found, action })?;
                } else if action != Action::Keep {
                    return Err(refused());
                }
            }
        }
        Ok(())
    }

    /// Whether each of `keys` has a record, found as
    /// [`State::process_multi`] finds them but without reading the values.
    pub(super) fn contains_multi(&self, keys: &[&[u8]]) -> Result<Vec<bool>> {
        let sealed = self.seal_keys(keys)?;
        let stored: Vec<&[u8]> = sealed.iter().map(|k| &**k).collect();
        let buckets: Vec<u64> = stored.iter().map(|k| bucket_of(k, self.num_buckets)).collect();
        let _locks = self.lock_slots(&buckets, false);
        let mut found = Vec::with_capacity(keys.len());
        let mut hinting = keys.len() >= 2;
        for start in (0..keys.len()).step_by(BATCH_KEYS) {
            let end = keys.len().min(start + BATCH_KEYS);
            hinting = hinting && self.prefetch_chains(&stored[start..end], &buckets[start..end]);
            let mut finds = self.find_many(&stored[start..end], &buckets[start..end], false)?;
            for i in 0..end - start {
                self.check_untorn()?;
                found.push(finds.take(i)?.is_some());
            }
        }
        Ok(found)
    }

    /// The bytes the records of `keys` store (see `Codec::seal_key`).
    fn seal_keys<'k>(&self, keys: &[&'k [u8]]) -> Result<Vec<Cow<'k, [u8]>>> {
        keys.iter().map(|k| self.codec.seal_key(k)).collect()
    }

    /// Locks the slots of `buckets`, each once, in one global order, so that
    /// two multi-key calls never deadlock.
    fn lock_slots(&self, buckets: &[u64], writable: bool) -> SlotLocks<'_> {
        let mut slots: Vec<usize> = buckets.iter().map(|&b| slot_index(b)).collect();
        slots.sort_unstable();
        slots.dedup();
        match writable {
            true => SlotLocks {
                _write: slots.iter().map(|&i| self.slots[i].write()).collect(),
                _read: Vec::new(),
            },
            false => {
                SlotLocks { _write: Vec::new(), _read: slots.iter().map(|&i| self.slots[i].read()).collect() }
            }
        }
    }

    /// Shows every record to `f`, bucket by bucket. The caller holds the
    /// database exclusively.
    pub(super) fn process_each(&self, access: Access, f: &mut EachProcessor<'_>) -> Result<()> {
        if access.is_writable() && !self.writable {
            return Err(self.read_only());
        }
        if !access.is_writable() {
            // Nothing changes under the exclusive lock: each record is read
            // once, with its value.
            return self.for_each(|key, value| match f(key, value) {
                Action::Keep => Ok(()),
                _ => Err(refused()),
            });
        }
        for bucket in 0..self.num_buckets {
            for key in self.chain_keys(bucket)? {
                let found = self.find(&key.stored, bucket)?;
                let Some(value) = self.value_of(found.as_ref())?.map(Cow::into_owned) else { continue };
                let action = f(key.plain(), &value);
                if access.is_writable() {
                    self.apply(Change::Record { key: &key.stored, bucket, found, action })?;
                } else if action != Action::Keep {
                    return Err(refused());
                }
            }
        }
        Ok(())
    }
}

impl State {
    /// The value of `found`, decoded, as the functions see it.
    #[inline]
    fn value_of<'a>(&self, found: Option<&'a Found>) -> Result<Option<Cow<'a, [u8]>>> {
        found.map(|f| f.value(self)).transpose()
    }
}

/// The most keys whose records a multi-key process finds in one batch: the
/// device's queue is full long before, and the records found wait in memory
/// until their keys' turn.
const BATCH_KEYS: usize = 256;

/// The slot locks a multi-key process holds, released when dropped.
struct SlotLocks<'a> {
    _write: Vec<RwLockWriteGuard<'a, ()>>,
    _read: Vec<RwLockReadGuard<'a, ()>>,
}

/// The error of a read-only process whose function asked for a change.
fn refused() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a read-only process asked to change a record")
}
