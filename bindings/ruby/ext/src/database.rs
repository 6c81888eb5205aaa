//! `Kuradb::DBM`: an [`PolyDbm`] for Ruby, the `Dbm` methods one to one.
//! `kuradb.rb` adds the Ruby idiom on top (`open` with a block, optional
//! arguments, `each` and `Enumerable`); the methods it wraps start with `_`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kuradb_binding::handle::OpenHandle;
use magnus::block::Proc;
use magnus::encoding::Index;
use magnus::prelude::*;
use magnus::{function, method, Error, RArray, RHash, RModule, RString, Ruby, Value};
use parking_lot::Mutex;

use kuradb::dbm::params::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Action, Dbm, SearchMode, INCREMENT_UNCHANGED};
use kuradb::ErrorKind;
use kuradb_binding::handle::Db;

use crate::convert::{byte_list, byte_pairs, bytes, opt_bytes, string};
use crate::cursor::Cursor;
use crate::error::{to_rb, type_error};
use crate::exchange_queue::exchange_multi;
use crate::guard::Gate;
use crate::nogvl::{released_if, without_gvl};

/// A database of any class (hash, tree, skip, …), chosen when it is opened.
#[magnus::wrap(class = "Kuradb::DBM", free_immediately, size)]
pub struct Database {
    /// The open database with its cursors' slots and its callback guard,
    /// the binding core's: calls hold its read lock, `open` and `close` the
    /// write lock (never contended: the VM lock orders them, see [`Gate`]).
    pub(crate) handle: OpenHandle,
    /// The encoding that keys and values come back in (`None`: binary).
    encoding: Mutex<Option<Index>>,
    pub(crate) gate: Gate,
    /// Whether calls that run no Ruby code release the VM lock (the
    /// `concurrent` open parameter; docs/ruby.md, "Threads and the VM lock").
    concurrent: AtomicBool,
}

/// A record's new state as a block returned it: `nil` or `true` keeps the
/// record, `false` removes it, a String is the new value.
fn action_of(ruby: &Ruby, result: Value) -> Result<Action<'static>, Error> {
    if result.is_nil() || result.is_kind_of(ruby.class_true_class()) {
        return Ok(Action::Keep);
    }
    if result.is_kind_of(ruby.class_false_class()) {
        return Ok(Action::Remove);
    }
    match RString::from_value(result) {
        Some(s) => Ok(Action::Set(bytes(s).into())),
        None => Err(type_error(
            ruby,
            format!(
                "a process block must return a String (the new value), nil or true (keep) or false \
                 (remove), not {}",
                class_name_of(result)
            ),
        )),
    }
}

/// The class name of a value, for messages.
fn class_name_of(value: Value) -> String {
    value.class().inspect()
}

impl Database {
    fn new() -> Database {
        Database {
            handle: OpenHandle::default(),
            encoding: Mutex::new(None),
            gate: Gate,
            concurrent: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the open database (after waiting for other threads'
    /// blocks, see [`Gate::enter`]), with the VM lock released if the
    /// database was opened `concurrent`. `f` is `Send`, so it holds no Ruby
    /// object: callers copy keys and values out before.
    pub(crate) fn with<R: Send>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&Db) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        self.with_released(ruby, self.is_concurrent(), f)
    }

    /// Like [`Database::with`], releasing the VM lock if `release` (as for
    /// a call that may wait long) whatever the `concurrent` parameter.
    pub(crate) fn with_released<R: Send>(
        &self,
        ruby: &Ruby,
        release: bool,
        f: impl FnOnce(&Db) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        self.gate.enter(ruby, self.handle.guard())?;
        let handle = &self.handle;
        released_if(release, || handle.with(|db| f(db))).map_err(|e| to_rb(ruby, e))
    }

    /// Whether the open database releases the VM lock around its calls.
    pub fn is_concurrent(&self) -> bool {
        self.concurrent.load(Ordering::Relaxed)
    }

    /// A key or value as a Ruby String in the database's encoding.
    pub(crate) fn out(&self, ruby: &Ruby, data: &[u8]) -> Result<RString, Error> {
        string(ruby, *self.encoding.lock(), data)
    }

    pub(crate) fn opt_out(&self, ruby: &Ruby, data: Option<Vec<u8>>) -> Result<Option<RString>, Error> {
        data.map(|d| self.out(ruby, &d)).transpose()
    }

    /// Runs `call` on the open database, which shows records through the
    /// visitor it is given: each visit calls `block` with the key and the
    /// value (or nil) under the records' locks and does what it returns.
    /// Blocks run gated (see [`Gate`]); the first exception (or `break`,
    /// `throw`) a block raises leaves the records still to come as they
    /// are, and is raised once the locks are released.
    pub(crate) fn with_block<R>(
        &self,
        ruby: &Ruby,
        block: &Proc,
        call: impl FnOnce(&Db, &mut dyn FnMut(&[u8], Option<&[u8]>) -> Action<'static>) -> kuradb::Result<R>,
    ) -> Result<R, Error> {
        let mut failure = None;
        self.gate.enter(ruby, self.handle.guard())?;
        let result = self.handle.with(|db| {
            self.handle.guard().run_callbacks(|| {
                call(db, &mut |key, value| {
                    if failure.is_some() {
                        return Action::Keep;
                    }
                    let answer = (|| {
                        let value = value.map(|v| self.out(ruby, v)).transpose()?;
                        let result: Value = block.call((self.out(ruby, key)?, value))?;
                        action_of(ruby, result)
                    })();
                    answer.unwrap_or_else(|e| {
                        failure = Some(e);
                        Action::Keep
                    })
                })
            })
        });
        if let Some(e) = failure {
            return Err(e);
        }
        result.map_err(|e| to_rb(ruby, e))
    }

    fn open(
        ruby: &Ruby,
        rb_self: &Self,
        path: PathBuf,
        writable: bool,
        params: Vec<(String, String)>,
        encoding: Option<String>,
        concurrent: bool,
    ) -> Result<(), Error> {
        rb_self.gate.enter(ruby, rb_self.handle.guard())?;
        // kuradb.rb has checked the name with Encoding.find.
        let encoding = encoding.map(|name| ruby.find_encindex(&name)).transpose()?;
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        // An empty path: an on-memory database of the class `dbm=` names (see
        // PolyDbm). The open may wait for another process's lock (`wait`,
        // `lock_timeout`, and Tkrzw's default): other Ruby threads run
        // meanwhile, among them the one that lets the lock go.
        let handle = &rb_self.handle;
        without_gvl(|| {
            handle.install(|| {
                let access =
                    if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly };
                kuradb_binding::handle::transactional(PolyDbm::open(&path, access, &p)?, access)
            })
        })
        .map_err(|e| to_rb(ruby, e))?;
        *rb_self.encoding.lock() = encoding;
        rb_self.concurrent.store(concurrent, Ordering::Relaxed);
        Ok(())
    }

    fn close(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.gate.enter(ruby, rb_self.handle.guard())?;
        // Another thread may be in a call without the VM lock, holding the
        // read lock (any call if `concurrent`, a waiting `pop_first` in any
        // mode): wait for it without the VM lock too. A database still
        // shared by an AsyncDBM's workers stays open, with an error.
        let handle = &rb_self.handle;
        let closed = match rb_self.is_concurrent() {
            true => without_gvl(|| handle.close()),
            false => handle.try_close().unwrap_or_else(|| without_gvl(|| handle.close())),
        };
        closed.map_err(|e| to_rb(ruby, e))
    }

    /// The open database and its encoding, for an AsyncDBM's workers.
    pub fn share(&self, ruby: &Ruby) -> Result<(Arc<Db>, Option<Index>), Error> {
        self.gate.enter(ruby, self.handle.guard())?;
        let db = self.handle.share().map_err(|e| to_rb(ruby, e))?;
        Ok((db, *self.encoding.lock()))
    }

    fn is_open(&self) -> bool {
        self.handle.is_open()
    }

    fn get(ruby: &Ruby, rb_self: &Self, key: RString) -> Result<Option<RString>, Error> {
        let key = bytes(key);
        let value = rb_self.with(ruby, |db| db.get(&key))?;
        rb_self.opt_out(ruby, value)
    }

    fn store(ruby: &Ruby, rb_self: &Self, key: RString, value: RString) -> Result<RString, Error> {
        let (k, v) = (bytes(key), bytes(value));
        rb_self.with(ruby, |db| db.set(&k, &v))?;
        Ok(value)
    }

    fn set(ruby: &Ruby, rb_self: &Self, key: RString, value: RString, overwrite: bool) -> Result<(), Error> {
        let (key, value) = (bytes(key), bytes(value));
        rb_self.with(ruby, |db| if overwrite { db.set(&key, &value) } else { db.insert(&key, &value) })
    }

    fn set_and_get(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        value: RString,
        overwrite: bool,
    ) -> Result<Option<RString>, Error> {
        let (key, value) = (bytes(key), bytes(value));
        let old = rb_self.with(ruby, |db| {
            if overwrite {
                db.set_and_get(&key, &value)
            } else {
                db.insert_and_get(&key, &value)
            }
        })?;
        rb_self.opt_out(ruby, old)
    }

    fn remove(ruby: &Ruby, rb_self: &Self, key: RString) -> Result<bool, Error> {
        let key = bytes(key);
        rb_self.with(ruby, |db| db.remove(&key))
    }

    fn remove_and_get(ruby: &Ruby, rb_self: &Self, key: RString) -> Result<Option<RString>, Error> {
        let key = bytes(key);
        let old = rb_self.with(ruby, |db| db.remove_and_get(&key))?;
        rb_self.opt_out(ruby, old)
    }

    fn contains(ruby: &Ruby, rb_self: &Self, key: RString) -> Result<bool, Error> {
        let key = bytes(key);
        rb_self.with(ruby, |db| db.contains(&key))
    }

    fn append(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        value: RString,
        delim: RString,
    ) -> Result<(), Error> {
        let (key, value, delim) = (bytes(key), bytes(value), bytes(delim));
        rb_self.with(ruby, |db| db.append(&key, &value, &delim))
    }

    fn compare_exchange(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        expected: Option<RString>,
        desired: Option<RString>,
    ) -> Result<bool, Error> {
        let (key, expected, desired) = (bytes(key), opt_bytes(expected), opt_bytes(desired));
        rb_self.with(ruby, |db| db.compare_exchange(&key, expected.as_deref(), desired.as_deref()))
    }

    fn increment(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        delta: Option<i64>,
        initial: i64,
    ) -> Result<i64, Error> {
        let (key, delta) = (bytes(key), delta.unwrap_or(INCREMENT_UNCHANGED));
        rb_self.with(ruby, |db| db.increment(&key, delta, initial))
    }

    /// As `increment`, reading a stored value of any length as the
    /// reference does (its first 8 bytes, big-endian): Tkrzw::DBM#increment.
    fn increment_as_reference(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        delta: i64,
        initial: i64,
    ) -> Result<i64, Error> {
        let key = bytes(key);
        rb_self.with(ruby, |db| kuradb_binding::increment::reference_increment(db, &key, delta, initial))
    }

    fn get_multi(ruby: &Ruby, rb_self: &Self, keys: RArray) -> Result<RHash, Error> {
        let keys = byte_list(keys)?;
        let values = rb_self.with(ruby, |db| {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            db.get_multi(&refs)
        })?;
        let found = ruby.hash_new();
        for (key, value) in keys.iter().zip(values) {
            if let Some(value) = value {
                found.aset(rb_self.out(ruby, key)?, rb_self.out(ruby, &value)?)?;
            }
        }
        Ok(found)
    }

    fn set_multi(ruby: &Ruby, rb_self: &Self, pairs: RArray, overwrite: bool) -> Result<(), Error> {
        let pairs = byte_pairs(ruby, pairs, false)?;
        let refs: Vec<(&[u8], &[u8])> =
            pairs.iter().map(|(k, v)| (k.as_slice(), v.as_deref().unwrap_or_default())).collect();
        rb_self.with(ruby, |db| if overwrite { db.set_multi(&refs) } else { db.insert_multi(&refs) })
    }

    fn remove_multi(ruby: &Ruby, rb_self: &Self, keys: RArray) -> Result<usize, Error> {
        let keys = byte_list(keys)?;
        rb_self.with(ruby, |db| {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            db.remove_multi(&refs)
        })
    }

    /// `any[i]` says the i-th expected value is the reference's `ANY_DATA`.
    fn compare_exchange_multi(
        ruby: &Ruby,
        rb_self: &Self,
        expected: RArray,
        any: Vec<bool>,
        desired: RArray,
    ) -> Result<bool, Error> {
        let (expected, desired) = (byte_pairs(ruby, expected, true)?, byte_pairs(ruby, desired, true)?);
        rb_self.with(ruby, |db| exchange_multi(db, &expected, &any, &desired))
    }

    /// Calls `block` with the key and the value (or nil) under the record's
    /// lock and does what it returns; an exception (or `break`, `throw`)
    /// from the block leaves the record as it was and goes on after the
    /// lock is released.
    fn process(ruby: &Ruby, rb_self: &Self, key: RString, writable: bool, block: Proc) -> Result<(), Error> {
        let key = bytes(key);
        rb_self.with_block(ruby, &block, |db, visit| {
            db.process(
                &key,
                if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
                &mut |value| visit(&key, value),
            )
        })
    }

    /// Calls `block` with every record under the database's lock, like
    /// [`Database::process`]; an exception stops the walk.
    fn process_each(ruby: &Ruby, rb_self: &Self, writable: bool, block: Proc) -> Result<(), Error> {
        rb_self.with_block(ruby, &block, |db, visit| {
            db.process_each(
                if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
                &mut |key, value| visit(key, Some(value)),
            )
        })
    }

    fn count(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        rb_self.with(ruby, |db| db.count())
    }

    fn file_size(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        rb_self.with(ruby, |db| db.file_size())
    }

    fn path(ruby: &Ruby, rb_self: &Self) -> Result<Option<PathBuf>, Error> {
        rb_self.with(ruby, |db| Ok(db.path().map(PathBuf::from)))
    }

    fn clear(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |db| db.clear())
    }

    fn rebuild(ruby: &Ruby, rb_self: &Self, params: Vec<(String, String)>) -> Result<(), Error> {
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        rb_self.with(ruby, |db| db.inner().rebuild_with(&p))
    }

    fn should_be_rebuilt(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        rb_self.with(ruby, |db| db.should_be_rebuilt())
    }

    fn synchronize(ruby: &Ruby, rb_self: &Self, hard: bool) -> Result<(), Error> {
        rb_self.with(ruby, |db| {
            db.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
        })
    }

    /// Synchronizes with the reference's parameters (the binding core's
    /// `synchronize_with`: a skip database merges and reduces first).
    fn synchronize_with(
        ruby: &Ruby,
        rb_self: &Self,
        hard: bool,
        params: Vec<(String, String)>,
    ) -> Result<(), Error> {
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        rb_self.with(ruby, |db| kuradb_binding::synchronize::synchronize_with(db, hard, &p))
    }

    fn copy_file_data(ruby: &Ruby, rb_self: &Self, dest: PathBuf, hard: bool) -> Result<(), Error> {
        rb_self.with(ruby, |db| {
            db.copy_file_data(
                &dest,
                if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft },
            )
        })
    }

    fn export(ruby: &Ruby, rb_self: &Self, dest: &Database) -> Result<(), Error> {
        if std::ptr::eq(rb_self, dest) {
            return Err(to_rb(
                ruby,
                kuradb::Error::new(ErrorKind::InvalidArgument, "a database cannot be exported into itself"),
            ));
        }
        // A handle, not the read lock: the call may run without the VM
        // lock, and a lock held across it would make a close of `dest` wait
        // for this thread while this thread waits for the VM lock.
        let (target, _) = dest.share(ruby)?;
        rb_self.with(ruby, |db| db.export(&*target))
    }

    fn inspect_details(ruby: &Ruby, rb_self: &Self) -> Result<BTreeMap<String, String>, Error> {
        rb_self.with(ruby, |db| Ok(db.inner().inspect()?.into_iter().collect()))
    }

    fn is_ordered(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        rb_self.with(ruby, |db| Ok(db.is_ordered()))
    }

    fn is_healthy(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        rb_self.with(ruby, |db| Ok(db.is_healthy()))
    }

    fn dbm_class(ruby: &Ruby, rb_self: &Self) -> Result<(&'static str, &'static str), Error> {
        rb_self.with(ruby, |db| Ok((db.inner().class().name(), db.inner().class().reference_name())))
    }

    fn search(
        ruby: &Ruby,
        rb_self: &Self,
        mode: String,
        pattern: RString,
        capacity: usize,
    ) -> Result<RArray, Error> {
        let mode: SearchMode = mode.parse().map_err(|e| to_rb(ruby, e))?;
        let pattern = bytes(pattern);
        let keys = rb_self.with(ruby, |db| db.search(mode, &pattern, capacity))?;
        let found = ruby.ary_new_capa(keys.len());
        for key in keys {
            found.push(rb_self.out(ruby, &key)?)?;
        }
        Ok(found)
    }

    fn cursor(ruby: &Ruby, rb_self: &Self) -> Result<Cursor, Error> {
        rb_self.gate.enter(ruby, rb_self.handle.guard())?;
        // The cursor holds a handle of the database; close empties it.
        let slot = rb_self.handle.new_cursor().map_err(|e| to_rb(ruby, e))?;
        Ok(Cursor::new(slot, *rb_self.encoding.lock(), rb_self.is_concurrent()))
    }

    fn restore(
        ruby: &Ruby,
        src: PathBuf,
        dest: PathBuf,
        params: Vec<(String, String)>,
    ) -> Result<u64, Error> {
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        PolyDbm::restore(&src, &dest, &p).map_err(|e| to_rb(ruby, e))
    }
}

/// Defines `Kuradb::DBM` and its native methods.
pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("DBM", ruby.class_object())?;
    class.define_singleton_method("new", function!(Database::new, 0))?;
    class.define_singleton_method("_restore", function!(Database::restore, 3))?;
    crate::expiry::define(&class)?;
    class.define_method("_open", method!(Database::open, 5))?;
    class.define_method("close", method!(Database::close, 0))?;
    class.define_method("open?", method!(Database::is_open, 0))?;
    class.define_method("[]", method!(Database::get, 1))?;
    class.define_method("get", method!(Database::get, 1))?;
    class.define_method("[]=", method!(Database::store, 2))?;
    class.define_method("store", method!(Database::store, 2))?;
    class.define_method("_set", method!(Database::set, 3))?;
    class.define_method("_set_and_get", method!(Database::set_and_get, 3))?;
    class.define_method("remove", method!(Database::remove, 1))?;
    class.define_method("remove_and_get", method!(Database::remove_and_get, 1))?;
    class.define_method("delete", method!(Database::remove_and_get, 1))?;
    class.define_method("key?", method!(Database::contains, 1))?;
    class.define_method("_append", method!(Database::append, 3))?;
    class.define_method("_compare_exchange", method!(Database::compare_exchange, 3))?;
    class.define_method("_increment", method!(Database::increment, 3))?;
    class.define_method("_increment_as_reference", method!(Database::increment_as_reference, 3))?;
    class.define_method("_get_multi", method!(Database::get_multi, 1))?;
    class.define_method("_set_multi", method!(Database::set_multi, 2))?;
    class.define_method("_remove_multi", method!(Database::remove_multi, 1))?;
    class.define_method("_compare_exchange_multi", method!(Database::compare_exchange_multi, 3))?;
    class.define_method("_process", method!(Database::process, 3))?;
    class.define_method("_process_each", method!(Database::process_each, 2))?;
    class.define_method("count", method!(Database::count, 0))?;
    class.define_method("file_size", method!(Database::file_size, 0))?;
    class.define_method("path", method!(Database::path, 0))?;
    class.define_method("clear", method!(Database::clear, 0))?;
    class.define_method("_rebuild", method!(Database::rebuild, 1))?;
    class.define_method("should_be_rebuilt?", method!(Database::should_be_rebuilt, 0))?;
    class.define_method("_synchronize", method!(Database::synchronize, 1))?;
    class.define_method("_synchronize_with", method!(Database::synchronize_with, 2))?;
    class.define_method("_copy_file_data", method!(Database::copy_file_data, 2))?;
    class.define_method("export", method!(Database::export, 1))?;
    class.define_method("inspect_details", method!(Database::inspect_details, 0))?;
    class.define_method("ordered?", method!(Database::is_ordered, 0))?;
    class.define_method("healthy?", method!(Database::is_healthy, 0))?;
    class.define_method("_dbm_class", method!(Database::dbm_class, 0))?;
    class.define_method("_search", method!(Database::search, 3))?;
    class.define_method("_cursor", method!(Database::cursor, 0))?;
    class.define_method("concurrent?", method!(Database::is_concurrent, 0))?;
    crate::flat_records::define(class)?;
    crate::exchange_queue::define(class)?;
    crate::txn::define(ruby, module, class)?;
    Ok(())
}
