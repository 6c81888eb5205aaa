//! `Kuradb::Index` and `Kuradb::IndexCursor`: a secondary index
//! (`kuradb::index`), in a file ([`FileIndex`]) or, with an empty path, in
//! memory ([`MemIndex`]); `Tkrzw::Index` is written in Ruby over them.
//!
//! A cursor holds a handle of the open index together with the core's
//! cursor borrowing it (a `self_cell` pair, as `Kuradb::Cursor` does); the
//! index keeps a weak reference to every cursor and empties them when it
//! closes, so no cursor outlives an open index.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use magnus::encoding::Index as Encoding;
use magnus::prelude::*;
use magnus::{function, method, Error, RArray, RModule, RString, Ruby};
use parking_lot::{Mutex, RwLock};
use self_cell::self_cell;

use kuradb::index::{AnyIndex, Index, IndexCursor};
use kuradb::{ErrorKind, Params};

use crate::convert::{bytes, opt_bytes, string};
use crate::error::to_rb;
use crate::handle;
use crate::nogvl::released_if;

fn closed() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the index is not open")
}

type BoxedCursor<'a> = Box<dyn IndexCursor<[u8], [u8]> + 'a>;

self_cell!(
    /// A cursor and the index it borrows.
    struct LiveCursor {
        owner: Arc<AnyIndex>,
        #[not_covariant]
        dependent: BoxedCursor,
    }
);

/// Where a cursor object keeps its cursor; `None` once the index closed.
type CursorSlot = Mutex<Option<LiveCursor>>;

/// A secondary index: (key, value) pairs, many values to a key, in order.
#[magnus::wrap(class = "Kuradb::Index", free_immediately, size)]
pub struct RbIndex {
    open: RwLock<Option<Arc<AnyIndex>>>,
    cursors: Mutex<Vec<Weak<CursorSlot>>>,
    writable: AtomicBool,
    concurrent: AtomicBool,
    encoding: Mutex<Option<Encoding>>,
}

/// A position among an index's pairs (`Index#cursor`).
#[magnus::wrap(class = "Kuradb::IndexCursor", free_immediately, size)]
pub struct RbIndexCursor {
    slot: Arc<CursorSlot>,
    concurrent: bool,
    encoding: Option<Encoding>,
}

impl RbIndex {
    fn new() -> RbIndex {
        RbIndex {
            open: RwLock::new(None),
            cursors: Mutex::new(Vec::new()),
            writable: AtomicBool::new(false),
            concurrent: AtomicBool::new(false),
            encoding: Mutex::new(None),
        }
    }

    /// Runs `f` on the open index (without the VM lock if `concurrent`;
    /// the read lock is taken and dropped on the far side).
    fn with<R: Send>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&dyn Index<Key = [u8], Value = [u8]>) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        self.with_open(ruby, |open| f(open.index()))
    }

    fn out(&self, ruby: &Ruby, data: &[u8]) -> Result<RString, Error> {
        string(ruby, *self.encoding.lock(), data)
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
        let encoding = encoding.map(|name| ruby.find_encindex(&name)).transpose()?;
        let mut p = Params::new();
        for (name, value) in &params {
            p.insert(name, value).map_err(|e| to_rb(ruby, e))?;
        }
        let already =
            || kuradb::Error::new(ErrorKind::Infeasible, "the index is already open: close it first");
        if rb_self.is_open() {
            return Err(to_rb(ruby, already()));
        }
        // Opened before the lock is taken: a thread holding it must never
        // wait for the VM lock, which another thread may hold while it
        // waits for this lock.
        let open = released_if(concurrent, || {
            AnyIndex::open(
                &path,
                if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
                &p,
            )
        })
        .map_err(|e| to_rb(ruby, e))?;
        let mut slot = rb_self.open.write();
        if slot.is_some() {
            drop(slot);
            let _ = open.close();
            return Err(to_rb(ruby, already()));
        }
        *slot = Some(Arc::new(open));
        *rb_self.encoding.lock() = encoding;
        rb_self.writable.store(writable, Ordering::Relaxed);
        rb_self.concurrent.store(concurrent, Ordering::Relaxed);
        Ok(())
    }

    fn close(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let concurrent = rb_self.concurrent.load(Ordering::Relaxed);
        let slot = &rb_self.open;
        let Some(open) = released_if(concurrent, || slot.write().take()) else { return Ok(()) };
        for cursor in rb_self.cursors.lock().drain(..) {
            if let Some(cursor) = cursor.upgrade() {
                cursor.lock().take();
            }
        }
        match Arc::try_unwrap(open) {
            Ok(index) => released_if(concurrent, move || index.close()).map_err(|e| to_rb(ruby, e)),
            // Only a call of another thread holds a handle, for a moment.
            Err(open) => {
                *rb_self.open.write() = Some(open);
                Err(to_rb(ruby, kuradb::Error::new(ErrorKind::Infeasible, "the index is in use: try again")))
            }
        }
    }

    fn is_open(&self) -> bool {
        self.open.read_recursive().is_some()
    }

    fn is_writable(&self) -> bool {
        self.is_open() && self.writable.load(Ordering::Relaxed)
    }

    fn add(ruby: &Ruby, rb_self: &Self, key: RString, value: RString) -> Result<(), Error> {
        let (key, value) = (bytes(key), bytes(value));
        rb_self.with(ruby, |i| i.add(&key, &value))
    }

    fn remove(ruby: &Ruby, rb_self: &Self, key: RString, value: RString) -> Result<bool, Error> {
        let (key, value) = (bytes(key), bytes(value));
        rb_self.with(ruby, |i| i.remove(&key, &value))
    }

    fn check(ruby: &Ruby, rb_self: &Self, key: RString, value: RString) -> Result<bool, Error> {
        let (key, value) = (bytes(key), bytes(value));
        rb_self.with(ruby, |i| i.check(&key, &value))
    }

    fn get_values(ruby: &Ruby, rb_self: &Self, key: RString, max: usize) -> Result<RArray, Error> {
        let key = bytes(key);
        let values = rb_self.with(ruby, |i| i.get_values(&key, max))?;
        let list = ruby.ary_new_capa(values.len());
        for value in values {
            list.push(rb_self.out(ruby, &value)?)?;
        }
        Ok(list)
    }

    fn count(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        rb_self.with(ruby, |i| i.count())
    }

    fn clear(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |i| i.clear())
    }

    /// Runs `f` on the open index as what it is, a file or memory index.
    fn with_open<R: Send>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&AnyIndex) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        handle::call(ruby, &self.open, self.concurrent.load(Ordering::Relaxed), closed, f)
    }

    fn rebuild(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with_open(ruby, |open| open.rebuild())
    }

    fn synchronize(ruby: &Ruby, rb_self: &Self, hard: bool) -> Result<(), Error> {
        rb_self.with_open(ruby, |open| {
            open.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
        })
    }

    /// The index file's path, or nil for an index in memory.
    fn path(ruby: &Ruby, rb_self: &Self) -> Result<Option<PathBuf>, Error> {
        rb_self.with_open(ruby, |open| Ok(open.path().map(Path::to_path_buf)))
    }

    fn cursor(ruby: &Ruby, rb_self: &Self) -> Result<RbIndexCursor, Error> {
        let open =
            rb_self.open.read_recursive().as_ref().map(Arc::clone).ok_or_else(|| to_rb(ruby, closed()))?;
        let live = LiveCursor::try_new(open, |open| open.index().cursor()).map_err(|e| to_rb(ruby, e))?;
        let slot = Arc::new(Mutex::new(Some(live)));
        let mut cursors = rb_self.cursors.lock();
        if cursors.len() >= 64 && cursors.len().is_power_of_two() {
            cursors.retain(|w| w.strong_count() > 0);
        }
        cursors.push(Arc::downgrade(&slot));
        Ok(RbIndexCursor {
            slot,
            concurrent: rb_self.concurrent.load(Ordering::Relaxed),
            encoding: *rb_self.encoding.lock(),
        })
    }
}

impl RbIndexCursor {
    fn with<R: Send>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&mut dyn IndexCursor<[u8], [u8]>) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        handle::call(ruby, &*self.slot, self.concurrent, closed, |live| {
            live.with_dependent_mut(|_, cursor| f(cursor.as_mut()))
        })
    }

    fn first(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.first())
    }

    fn last(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.last())
    }

    /// Moves to the first pair at or after (`key`, `value`); with `value`
    /// nil, to the first pair of `key`.
    fn jump(ruby: &Ruby, rb_self: &Self, key: RString, value: Option<RString>) -> Result<(), Error> {
        let (key, value) = (bytes(key), opt_bytes(value));
        rb_self.with(ruby, |c| c.jump(&key, value.as_deref()))
    }

    fn next(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.next())
    }

    fn previous(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.previous())
    }

    /// The pair at the position as `[key, value]`, or nil.
    fn get(ruby: &Ruby, rb_self: &Self) -> Result<Option<RArray>, Error> {
        let Some((key, value)) = rb_self.with(ruby, |c| c.get())? else { return Ok(None) };
        let key = string(ruby, rb_self.encoding, &key)?;
        let value = string(ruby, rb_self.encoding, &value)?;
        Ok(Some(ruby.ary_new_from_values(&[key, value])))
    }

    fn is_live(&self) -> bool {
        self.slot.lock().is_some()
    }
}

/// Defines `Kuradb::Index` and `Kuradb::IndexCursor`.
pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("Index", ruby.class_object())?;
    class.define_singleton_method("new", function!(RbIndex::new, 0))?;
    class.define_method("_open", method!(RbIndex::open, 5))?;
    class.define_method("close", method!(RbIndex::close, 0))?;
    class.define_method("open?", method!(RbIndex::is_open, 0))?;
    class.define_method("writable?", method!(RbIndex::is_writable, 0))?;
    class.define_method("add", method!(RbIndex::add, 2))?;
    class.define_method("remove", method!(RbIndex::remove, 2))?;
    class.define_method("check", method!(RbIndex::check, 2))?;
    class.define_method("_get_values", method!(RbIndex::get_values, 2))?;
    class.define_method("count", method!(RbIndex::count, 0))?;
    class.define_method("clear", method!(RbIndex::clear, 0))?;
    class.define_method("rebuild", method!(RbIndex::rebuild, 0))?;
    class.define_method("_synchronize", method!(RbIndex::synchronize, 1))?;
    class.define_method("path", method!(RbIndex::path, 0))?;
    class.define_method("cursor", method!(RbIndex::cursor, 0))?;
    let cursor = module.define_class("IndexCursor", ruby.class_object())?;
    cursor.undef_default_alloc_func();
    cursor.define_method("first", method!(RbIndexCursor::first, 0))?;
    cursor.define_method("last", method!(RbIndexCursor::last, 0))?;
    cursor.define_method("_jump", method!(RbIndexCursor::jump, 2))?;
    cursor.define_method("next", method!(RbIndexCursor::next, 0))?;
    cursor.define_method("previous", method!(RbIndexCursor::previous, 0))?;
    cursor.define_method("get", method!(RbIndexCursor::get, 0))?;
    cursor.define_method("live?", method!(RbIndexCursor::is_live, 0))?;
    Ok(())
}
