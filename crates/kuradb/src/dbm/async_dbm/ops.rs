//! The operations of [`AsyncDbm`]: the reference's AsyncDBM list, each
//! mapped to the [`Dbm`] method of the same meaning.
//!
//! Keys and values are copied when the operation is queued, so the caller's
//! buffers are free at once. Left out, because [`Dbm`] has no such
//! operation: `PopFirst`/`PushLast` (kuradb has no queue operations),
//! `Search` (no pattern search), `ExportToFlatRecords` /
//! `ImportFromFlatRecords` (kuradb's flat files belong to the on-memory
//! databases' persistence, not to export). [`AsyncDbm::execute`] runs any
//! other function of the database on a worker.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use super::{AsyncDbm, DbmFuture};
use crate::dbm::params::Params;
use crate::dbm::{Access, Action, Dbm, Durability, OnDuplicate, Rekey};

/// Owned copies of keys.
fn owned_keys<K: AsRef<[u8]>>(keys: &[K]) -> Vec<Vec<u8>> {
    keys.iter().map(|k| k.as_ref().to_vec()).collect()
}

/// Owned copies of key/value pairs.
fn owned_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: &[(K, V)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    pairs.iter().map(|(k, v)| (k.as_ref().to_vec(), v.as_ref().to_vec())).collect()
}

/// Owned copies of key/optional-value pairs.
fn owned_opt_pairs<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    pairs: &[(K, Option<V>)],
) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    pairs.iter().map(|(k, v)| (k.as_ref().to_vec(), v.as_ref().map(|v| v.as_ref().to_vec()))).collect()
}

/// Borrowed views of key/optional-value pairs.
fn view(pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<(&[u8], Option<&[u8]>)> {
    pairs.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect()
}

/// Borrowed views of keys.
fn borrowed(keys: &[Vec<u8>]) -> Vec<&[u8]> {
    keys.iter().map(Vec::as_slice).collect()
}

impl<D: Dbm + ?Sized + 'static> AsyncDbm<D> {
    /// [`Dbm::get`]: the value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> DbmFuture<Option<Vec<u8>>> {
        let key = key.as_ref().to_vec();
        self.submit("get", move |db| db.get(&key))
    }

    /// [`Dbm::contains`]: whether `key` has a record.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> DbmFuture<bool> {
        let key = key.as_ref().to_vec();
        self.submit("contains", move |db| db.contains(&key))
    }

    /// [`Dbm::get_multi`]: the values of `keys`, in their order, read atomically.
    pub fn get_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> DbmFuture<Vec<Option<Vec<u8>>>> {
        let keys = owned_keys(keys);
        self.submit("get_multi", move |db| db.get_multi(&borrowed(&keys)))
    }

    /// [`Dbm::set`]: stores `value` under `key`, replacing its value.
    pub fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> DbmFuture<()> {
        let (key, value) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        self.submit("set", move |db| db.set(&key, &value))
    }

    /// [`Dbm::insert`]: stores `value` under `key` if it has no record; an
    /// existing key is a duplication error.
    pub fn insert(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> DbmFuture<()> {
        let (key, value) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        self.submit("insert", move |db| db.insert(&key, &value))
    }

    /// [`Dbm::set_multi`]: stores every pair atomically.
    pub fn set_multi<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, pairs: &[(K, V)]) -> DbmFuture<()> {
        let pairs = owned_pairs(pairs);
        self.submit("set_multi", move |db| {
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            db.set_multi(&refs)
        })
    }

    /// [`Dbm::insert_multi`]: stores every pair atomically if no key has a
    /// record.
    pub fn insert_multi<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, pairs: &[(K, V)]) -> DbmFuture<()> {
        let pairs = owned_pairs(pairs);
        self.submit("insert_multi", move |db| {
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            db.insert_multi(&refs)
        })
    }

    /// [`Dbm::set_absent_multi`]: stores every pair whose key has no record,
    /// atomically; answers the keys that had one, which keep their values.
    pub fn set_absent_multi<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(K, V)],
    ) -> DbmFuture<Vec<Vec<u8>>> {
        let pairs = owned_pairs(pairs);
        self.submit("set_absent_multi", move |db| {
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            db.set_absent_multi(&refs)
        })
    }

    /// [`Dbm::remove`]: removes `key`; answers whether it existed.
    pub fn remove(&self, key: impl AsRef<[u8]>) -> DbmFuture<bool> {
        let key = key.as_ref().to_vec();
        self.submit("remove", move |db| db.remove(&key))
    }

    /// [`Dbm::remove_multi`]: removes every key atomically; answers how many existed.
    pub fn remove_multi<K: AsRef<[u8]>>(&self, keys: &[K]) -> DbmFuture<usize> {
        let keys = owned_keys(keys);
        self.submit("remove_multi", move |db| db.remove_multi(&borrowed(&keys)))
    }

    /// [`Dbm::append`]: appends `value` to the value of `key`, after
    /// `delimiter` if the key existed.
    pub fn append(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        delimiter: impl AsRef<[u8]>,
    ) -> DbmFuture<()> {
        let (key, value, delimiter) =
            (key.as_ref().to_vec(), value.as_ref().to_vec(), delimiter.as_ref().to_vec());
        self.submit("append", move |db| db.append(&key, &value, &delimiter))
    }

    /// Appends every pair's value to its key's value as [`AsyncDbm::append`]
    /// does, all atomically (one [`Dbm::process_multi`]).
    pub fn append_multi<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        pairs: &[(K, V)],
        delimiter: impl AsRef<[u8]>,
    ) -> DbmFuture<()> {
        let (pairs, delimiter) = (owned_pairs(pairs), delimiter.as_ref().to_vec());
        self.submit("append_multi", move |db| {
            let keys: Vec<&[u8]> = pairs.iter().map(|(k, _)| k.as_slice()).collect();
            db.process_multi(&keys, Access::ReadWrite, &mut |i, _, old| {
                let value = pairs[i].1.as_slice();
                match old {
                    None => Action::set(value),
                    Some(old) => Action::Set(Cow::Owned([old, &delimiter, value].concat())),
                }
            })
        })
    }

    /// [`Dbm::compare_exchange`]: replaces the value of `key` with `desired`
    /// if it is `expected` (`None`: absent); answers whether it did.
    pub fn compare_exchange<V: AsRef<[u8]>>(
        &self,
        key: impl AsRef<[u8]>,
        expected: Option<V>,
        desired: Option<V>,
    ) -> DbmFuture<bool> {
        let key = key.as_ref().to_vec();
        let expected = expected.map(|v| v.as_ref().to_vec());
        let desired = desired.map(|v| v.as_ref().to_vec());
        self.submit("compare_exchange", move |db| {
            db.compare_exchange(&key, expected.as_deref(), desired.as_deref())
        })
    }

    /// [`Dbm::increment`]: adds `delta` to the number under `key` (from
    /// `initial` if absent); answers the result.
    pub fn increment(&self, key: impl AsRef<[u8]>, delta: i64, initial: i64) -> DbmFuture<i64> {
        let key = key.as_ref().to_vec();
        self.submit("increment", move |db| db.increment(&key, delta, initial))
    }

    /// [`Dbm::compare_exchange_multi`]: if every `expected` pair holds,
    /// applies every `desired` pair, atomically; answers whether it did.
    pub fn compare_exchange_multi<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        expected: &[(K, Option<V>)],
        desired: &[(K, Option<V>)],
    ) -> DbmFuture<bool> {
        let (expected, desired) = (owned_opt_pairs(expected), owned_opt_pairs(desired));
        self.submit("compare_exchange_multi", move |db| {
            db.compare_exchange_multi(&view(&expected), &view(&desired))
        })
    }

    /// [`Dbm::rekey`]: moves (or with [`Rekey::Copy`], copies) the record of
    /// `old_key` to `new_key`.
    pub fn rekey(
        &self,
        old_key: impl AsRef<[u8]>,
        new_key: impl AsRef<[u8]>,
        rekey: Rekey,
        on_duplicate: OnDuplicate,
    ) -> DbmFuture<()> {
        let (old_key, new_key) = (old_key.as_ref().to_vec(), new_key.as_ref().to_vec());
        self.submit("rekey", move |db| db.rekey(&old_key, &new_key, rekey, on_duplicate))
    }

    /// [`Dbm::process`]: shows the value of `key` to `f` under the record's
    /// lock and carries out its answer. `f` must not use this database
    /// (see [`Dbm::process`]); a panic in it is a
    /// [`Canceled`](crate::ErrorKind::Canceled) error of the future. To
    /// get something out of `f`, use [`AsyncDbm::execute`] and call
    /// [`Dbm::process`] there.
    pub fn process<F>(&self, key: impl AsRef<[u8]>, access: Access, mut f: F) -> DbmFuture<()>
    where
        F: FnMut(Option<&[u8]>) -> Action<'static> + Send + 'static,
    {
        let key = key.as_ref().to_vec();
        self.submit("process", move |db| db.process(&key, access, &mut f))
    }

    /// [`Dbm::process_each`]: shows every record to `f` and carries out its answers.
    pub fn process_each<F>(&self, access: Access, mut f: F) -> DbmFuture<()>
    where
        F: FnMut(&[u8], &[u8]) -> Action<'static> + Send + 'static,
    {
        self.submit("process_each", move |db| db.process_each(access, &mut f))
    }

    /// [`Dbm::clear`]: removes every record.
    pub fn clear(&self) -> DbmFuture<()> {
        self.submit("clear", |db| db.clear())
    }

    /// [`Dbm::rebuild_with_params`]: rewrites the database compactly, with
    /// the tuning `params` change (empty: [`Dbm::rebuild`]).
    pub fn rebuild(&self, params: Params) -> DbmFuture<()> {
        self.submit("rebuild", move |db| {
            if params.iter().next().is_none() {
                db.rebuild()
            } else {
                db.rebuild_with_params(&params)
            }
        })
    }

    /// [`Dbm::synchronize`]: makes every change so far reach the OS, or with
    /// [`Durability::Hard`] the device.
    pub fn synchronize(&self, durability: Durability) -> DbmFuture<()> {
        self.submit("synchronize", move |db| db.synchronize(durability))
    }

    /// [`Dbm::copy_file_data`]: writes a consistent copy of the database's file to `dest`.
    pub fn copy_file_data(&self, dest: impl Into<PathBuf>, durability: Durability) -> DbmFuture<()> {
        let dest = dest.into();
        self.submit("copy_file_data", move |db| db.copy_file_data(&dest, durability))
    }

    /// [`Dbm::export`]: copies every record into `dest`.
    pub fn export(&self, dest: Arc<dyn Dbm>) -> DbmFuture<()> {
        self.submit("export", move |db| db.export(&*dest))
    }
}
