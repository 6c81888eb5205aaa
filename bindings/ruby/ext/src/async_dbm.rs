//! `Kuradb::AsyncDBM` and `Kuradb::Future`: a DBM's operations run by the
//! core's [`AsyncDbm`] worker threads, each answering a future.
//!
//! The workers run without Ruby's VM lock (they never touch Ruby objects),
//! and `Future#get` waits without it ([`crate::future`]), so a Ruby thread
//! waiting on a future does not stop the others.

use std::path::PathBuf;

use magnus::encoding::Index;
use magnus::prelude::*;
use magnus::{function, method, Error, RArray, RModule, RString, Ruby, Value};
use parking_lot::Mutex;

use kuradb::dbm::async_dbm::AsyncDbm;
use kuradb::dbm::params::Params;
use kuradb::dbm::{Dbm, Desired, Expected, SearchMode, INCREMENT_UNCHANGED};
use kuradb::ErrorKind;
use kuradb_binding::handle::Db;

use crate::convert::{byte_list, byte_pairs, bytes, opt_bytes};
use crate::database::Database;
use crate::error::to_rb;
use crate::exchange_queue::{exchange_multi, retry_wait};
use crate::flat_records::{export_records, import_records, Target};
use crate::future::{Future, Reply};
use crate::nogvl::without_gvl;

/// A DBM behind worker threads; made by `Kuradb::AsyncDBM.new(dbm, workers)`.
#[magnus::wrap(class = "Kuradb::AsyncDBM", free_immediately, size)]
pub struct AsyncDatabase {
    inner: Mutex<Option<AsyncDbm<Db>>>,
    encoding: Option<Index>,
}

fn closed() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the AsyncDBM is closed")
}

impl AsyncDatabase {
    fn new(ruby: &Ruby, db: &Database, workers: usize) -> Result<AsyncDatabase, Error> {
        let (shared, encoding) = db.share(ruby)?;
        let inner = AsyncDbm::new(shared, workers).map_err(|e| to_rb(ruby, e))?;
        Ok(AsyncDatabase { inner: Mutex::new(Some(inner)), encoding })
    }

    /// Queues `f` and answers its future (an already failed one if closed).
    fn run(&self, f: impl FnOnce(&Db) -> kuradb::Result<Reply> + Send + 'static) -> Future {
        match self.inner.lock().as_ref() {
            Some(adb) if !adb.is_closed() => Future::pending(adb.execute(f), self.encoding),
            _ => Future::failed(closed(), self.encoding),
        }
    }

    /// Waits for the queued operations, stops the workers and lets the DBM
    /// close again. Waits without the VM lock: an operation may wait for
    /// another Ruby thread (a `pop_first` for its push).
    fn close(&self) {
        if let Some(adb) = self.inner.lock().take() {
            without_gvl(move || adb.close());
        }
    }

    fn get(&self, key: RString) -> Future {
        let key = bytes(key);
        self.run(move |db| db.get(&key).map(Reply::Value))
    }

    fn set(&self, key: RString, value: RString, overwrite: bool) -> Future {
        let (key, value) = (bytes(key), bytes(value));
        self.run(move |db| {
            (if overwrite { db.set(&key, &value) } else { db.insert(&key, &value) }).map(|()| Reply::Nil)
        })
    }

    fn remove(&self, key: RString) -> Future {
        let key = bytes(key);
        self.run(move |db| db.remove(&key).map(Reply::Bool))
    }

    fn append(&self, key: RString, value: RString, delim: RString) -> Future {
        let (key, value, delim) = (bytes(key), bytes(value), bytes(delim));
        self.run(move |db| db.append(&key, &value, &delim).map(|()| Reply::Nil))
    }

    fn increment(&self, key: RString, delta: Option<i64>, initial: i64) -> Future {
        let key = bytes(key);
        let delta = delta.unwrap_or(INCREMENT_UNCHANGED);
        self.run(move |db| db.increment(&key, delta, initial).map(Reply::Int))
    }

    /// As `increment`, reading a stored value of any length as the
    /// reference does (its first 8 bytes, big-endian): Tkrzw::AsyncDBM#increment.
    fn increment_as_reference(&self, key: RString, delta: i64, initial: i64) -> Future {
        let key = bytes(key);
        self.run(move |db| {
            kuradb_binding::increment::reference_increment(db, &key, delta, initial).map(Reply::Int)
        })
    }

    /// `expected_any` and `desired_any` stand for the reference's
    /// `ANY_DATA` (see `Kuradb::DBM#compare_exchange_and_get`).
    fn compare_exchange(
        &self,
        key: RString,
        expected: Option<RString>,
        expected_any: bool,
        desired: Option<RString>,
        desired_any: bool,
    ) -> Future {
        let (key, expected, desired) = (bytes(key), opt_bytes(expected), opt_bytes(desired));
        self.run(move |db| {
            let expected = if expected_any { Expected::Any } else { Expected::from(expected.as_deref()) };
            let desired = if desired_any { Desired::Keep } else { Desired::from(desired.as_deref()) };
            db.compare_exchange_and_get(&key, expected, desired).map(|(done, _)| Reply::Bool(done))
        })
    }

    fn get_multi(&self, keys: RArray) -> Result<Future, Error> {
        let keys = byte_list(keys)?;
        Ok(self.run(move |db| {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let values = db.get_multi(&refs)?;
            let found = keys.iter().zip(values).filter_map(|(k, v)| v.map(|v| (k.clone(), v))).collect();
            Ok(Reply::Records(found))
        }))
    }

    fn set_multi(ruby: &Ruby, rb_self: &Self, pairs: RArray, overwrite: bool) -> Result<Future, Error> {
        let pairs = byte_pairs(ruby, pairs, false)?;
        Ok(rb_self.run(move |db| {
            let refs: Vec<(&[u8], &[u8])> =
                pairs.iter().map(|(k, v)| (k.as_slice(), v.as_deref().unwrap_or_default())).collect();
            (if overwrite { db.set_multi(&refs) } else { db.insert_multi(&refs) }).map(|()| Reply::Nil)
        }))
    }

    /// Stores, atomically, every pair whose key has no record; the future
    /// answers the keys that had one, which keep their values.
    fn set_absent_multi(ruby: &Ruby, rb_self: &Self, pairs: RArray) -> Result<Future, Error> {
        let pairs = byte_pairs(ruby, pairs, false)?;
        Ok(rb_self.run(move |db| {
            let refs: Vec<(&[u8], &[u8])> =
                pairs.iter().map(|(k, v)| (k.as_slice(), v.as_deref().unwrap_or_default())).collect();
            db.set_absent_multi(&refs).map(Reply::Keys)
        }))
    }

    fn remove_multi(&self, keys: RArray) -> Result<Future, Error> {
        let keys = byte_list(keys)?;
        Ok(self.run(move |db| {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            db.remove_multi(&refs).map(|n| Reply::Count(n as u64))
        }))
    }

    fn compare_exchange_multi(
        ruby: &Ruby,
        rb_self: &Self,
        expected: RArray,
        any: Vec<bool>,
        desired: RArray,
    ) -> Result<Future, Error> {
        let (expected, desired) = (byte_pairs(ruby, expected, true)?, byte_pairs(ruby, desired, true)?);
        Ok(rb_self.run(move |db| exchange_multi(db, &expected, &any, &desired).map(Reply::Bool)))
    }

    fn rekey(&self, old_key: RString, new_key: RString, overwrite: bool, copying: bool) -> Future {
        let (old_key, new_key) = (bytes(old_key), bytes(new_key));
        self.run(move |db| {
            db.rekey(
                &old_key,
                &new_key,
                if copying { kuradb::dbm::Rekey::Copy } else { kuradb::dbm::Rekey::Move },
                if overwrite { kuradb::dbm::OnDuplicate::Replace } else { kuradb::dbm::OnDuplicate::Fail },
            )
            .map(|()| Reply::Nil)
        })
    }

    /// A waiting pop occupies one worker for up to `wait` seconds.
    fn pop_first(&self, wait: Option<f64>) -> Future {
        let wait = retry_wait(wait);
        self.run(move |db| db.pop_first(wait).map(Reply::Record))
    }

    /// The future answers the new record's key.
    fn push_last(&self, value: RString, wtime: Option<f64>) -> Future {
        let value = bytes(value);
        self.run(move |db| db.push_last(&value, wtime).map(|key| Reply::Value(Some(key))))
    }

    fn clear(&self) -> Future {
        self.run(|db| db.clear().map(|()| Reply::Nil))
    }

    fn synchronize(&self, hard: bool) -> Future {
        self.run(move |db| {
            db.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
                .map(|()| Reply::Nil)
        })
    }

    /// Synchronizes with the reference's parameters, as `DBM#synchronize`
    /// does (the binding core's `synchronize_with`: a skip database merges
    /// and reduces first).
    fn synchronize_with(
        ruby: &Ruby,
        rb_self: &Self,
        hard: bool,
        params: Vec<(String, String)>,
    ) -> Result<Future, Error> {
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        Ok(rb_self
            .run(move |db| kuradb_binding::synchronize::synchronize_with(db, hard, &p).map(|()| Reply::Nil)))
    }

    fn rebuild(ruby: &Ruby, rb_self: &Self, params: Vec<(String, String)>) -> Result<Future, Error> {
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        Ok(rb_self.run(move |db| db.inner().rebuild_with(&p).map(|()| Reply::Nil)))
    }

    fn search(
        ruby: &Ruby,
        rb_self: &Self,
        mode: String,
        pattern: RString,
        capacity: usize,
    ) -> Result<Future, Error> {
        let mode: SearchMode = mode.parse().map_err(|e| to_rb(ruby, e))?;
        let pattern = bytes(pattern);
        Ok(rb_self.run(move |db| db.search(mode, &pattern, capacity).map(Reply::Keys)))
    }

    fn count(&self) -> Future {
        self.run(|db| db.count().map(Reply::Count))
    }

    fn copy_file_data(&self, dest: PathBuf, hard: bool) -> Future {
        self.run(move |db| {
            db.copy_file_data(
                &dest,
                if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft },
            )
            .map(|()| Reply::Nil)
        })
    }

    /// Copies every record into `dest`, an open DBM; the task holds a
    /// handle of it, so `dest` refuses to close until the task is done.
    fn export(ruby: &Ruby, rb_self: &Self, dest: &Database) -> Result<Future, Error> {
        let (target, _) = dest.share(ruby)?;
        Ok(rb_self.run(move |db| {
            if std::ptr::eq(db, &*target) {
                return Err(kuradb::Error::new(
                    ErrorKind::InvalidArgument,
                    "a database cannot be exported into itself",
                ));
            }
            db.export(&*target).map(|()| Reply::Nil)
        }))
    }

    /// `target` is a path or a `Kuradb::File`, which the task keeps open.
    fn export_to_flat_records(ruby: &Ruby, rb_self: &Self, target: Value) -> Result<Future, Error> {
        let target = Target::of(ruby, target)?;
        Ok(rb_self.run(move |db| export_records(db, &target).map(|()| Reply::Nil)))
    }

    fn import_from_flat_records(ruby: &Ruby, rb_self: &Self, source: Value) -> Result<Future, Error> {
        let source = Target::of(ruby, source)?;
        Ok(rb_self.run(move |db| import_records(db, &source).map(Reply::Count)))
    }
}

/// Defines `Kuradb::AsyncDBM` and `Kuradb::Future`.
pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("AsyncDBM", ruby.class_object())?;
    class.define_singleton_method("_new", function!(AsyncDatabase::new, 2))?;
    class.define_method("close", method!(AsyncDatabase::close, 0))?;
    class.define_method("get", method!(AsyncDatabase::get, 1))?;
    class.define_method("_set", method!(AsyncDatabase::set, 3))?;
    class.define_method("remove", method!(AsyncDatabase::remove, 1))?;
    class.define_method("_append", method!(AsyncDatabase::append, 3))?;
    class.define_method("_increment", method!(AsyncDatabase::increment, 3))?;
    class.define_method("_increment_as_reference", method!(AsyncDatabase::increment_as_reference, 3))?;
    class.define_method("_compare_exchange", method!(AsyncDatabase::compare_exchange, 5))?;
    class.define_method("_get_multi", method!(AsyncDatabase::get_multi, 1))?;
    class.define_method("_set_multi", method!(AsyncDatabase::set_multi, 2))?;
    class.define_method("_set_absent_multi", method!(AsyncDatabase::set_absent_multi, 1))?;
    class.define_method("_remove_multi", method!(AsyncDatabase::remove_multi, 1))?;
    class.define_method("_compare_exchange_multi", method!(AsyncDatabase::compare_exchange_multi, 3))?;
    class.define_method("_rekey", method!(AsyncDatabase::rekey, 4))?;
    class.define_method("_pop_first", method!(AsyncDatabase::pop_first, 1))?;
    class.define_method("_push_last", method!(AsyncDatabase::push_last, 2))?;
    class.define_method("clear", method!(AsyncDatabase::clear, 0))?;
    class.define_method("_synchronize", method!(AsyncDatabase::synchronize, 1))?;
    class.define_method("_synchronize_with", method!(AsyncDatabase::synchronize_with, 2))?;
    class.define_method("_rebuild", method!(AsyncDatabase::rebuild, 1))?;
    class.define_method("_search", method!(AsyncDatabase::search, 3))?;
    class.define_method("count", method!(AsyncDatabase::count, 0))?;
    class.define_method("_copy_file_data", method!(AsyncDatabase::copy_file_data, 2))?;
    class.define_method("export", method!(AsyncDatabase::export, 1))?;
    class.define_method("_export_to_flat_records", method!(AsyncDatabase::export_to_flat_records, 1))?;
    class.define_method("_import_from_flat_records", method!(AsyncDatabase::import_from_flat_records, 1))?;
    crate::future::define(ruby, module)
}
