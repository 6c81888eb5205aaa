//! `Kuradb::Cursor`: a position among a database's records (`DBM#cursor`).
//!
//! A cursor borrows its database, but a Ruby object cannot hold a borrow,
//! so the binding core's `Live` keeps the cursor together with an `Arc` of
//! the database. The database's open handle (the core's `OpenHandle`) keeps
//! a weak reference to every [`Slot`] and empties them when it closes, so no
//! cursor outlives an open database: a cursor of a closed database raises.

use std::sync::Arc;

use magnus::encoding::Index;
use magnus::prelude::*;
use magnus::{method, Error, RArray, RModule, RString, Ruby};

use kuradb::dbm::Cursor as DbmCursor;

use crate::convert::{bytes, string};
use crate::error::not_open;
use crate::handle;

pub use kuradb_binding::cursor::Slot;

/// A cursor over the records of a database: position it with `first`,
/// `last`, `jump`, `jump_lower` or `jump_upper`, move with `next` and
/// `previous`, read with `get`, `key` and `value`, change with `set` and
/// `remove`. `last`, `jump_lower`, `jump_upper` and `previous` need an
/// ordered database (tree, skip, baby, std_tree).
#[magnus::wrap(class = "Kuradb::Cursor", free_immediately, size)]
pub struct Cursor {
    slot: Arc<Slot>,
    encoding: Option<Index>,
    /// Whether moves release the VM lock, as the database's calls do.
    concurrent: bool,
}

impl Cursor {
    pub fn new(slot: Arc<Slot>, encoding: Option<Index>, concurrent: bool) -> Cursor {
        Cursor { slot, encoding, concurrent }
    }

    /// Runs `f` on the cursor, without the VM lock if the database is
    /// `concurrent`. Cursor calls never run Ruby code under a database
    /// lock, so they need no gate; they hold only their own, taken and
    /// dropped on the far side (as `Database::with` does).
    fn with<R: Send>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&mut dyn DbmCursor) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        handle::call(ruby, &*self.slot, self.concurrent, not_open, |live| live.with_cursor(f))
    }

    fn out(&self, ruby: &Ruby, data: &[u8]) -> Result<RString, Error> {
        string(ruby, self.encoding, data)
    }

    fn first(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.first())
    }

    fn last(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.last())
    }

    fn jump(ruby: &Ruby, rb_self: &Self, key: RString) -> Result<(), Error> {
        let key = bytes(key);
        rb_self.with(ruby, |c| c.jump(&key))
    }

    fn jump_lower(ruby: &Ruby, rb_self: &Self, key: RString, inclusive: bool) -> Result<(), Error> {
        let key = bytes(key);
        rb_self.with(ruby, |c| {
            c.jump_lower(
                &key,
                if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive },
            )
        })
    }

    fn jump_upper(ruby: &Ruby, rb_self: &Self, key: RString, inclusive: bool) -> Result<(), Error> {
        let key = bytes(key);
        rb_self.with(ruby, |c| {
            c.jump_upper(
                &key,
                if inclusive { kuradb::dbm::Edge::Inclusive } else { kuradb::dbm::Edge::Exclusive },
            )
        })
    }

    fn next(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.next())
    }

    fn previous(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.previous())
    }

    /// The record at the position as `[key, value]`, or nil past the end.
    fn get(ruby: &Ruby, rb_self: &Self) -> Result<Option<RArray>, Error> {
        match rb_self.with(ruby, |c| c.get())? {
            None => Ok(None),
            Some((k, v)) => {
                Ok(Some(ruby.ary_new_from_values(&[rb_self.out(ruby, &k)?, rb_self.out(ruby, &v)?])))
            }
        }
    }

    /// The record at the position, and moves to the next one (one call
    /// per record for `each`).
    fn step(ruby: &Ruby, rb_self: &Self) -> Result<Option<RArray>, Error> {
        let record = rb_self.with(ruby, |c| {
            let record = c.get()?;
            if record.is_some() {
                c.next()?;
            }
            Ok(record)
        })?;
        match record {
            None => Ok(None),
            Some((k, v)) => {
                Ok(Some(ruby.ary_new_from_values(&[rb_self.out(ruby, &k)?, rb_self.out(ruby, &v)?])))
            }
        }
    }

    fn key(ruby: &Ruby, rb_self: &Self) -> Result<Option<RString>, Error> {
        let record = rb_self.with(ruby, |c| c.get())?;
        record.map(|(k, _)| rb_self.out(ruby, &k)).transpose()
    }

    fn value(ruby: &Ruby, rb_self: &Self) -> Result<Option<RString>, Error> {
        let record = rb_self.with(ruby, |c| c.get())?;
        record.map(|(_, v)| rb_self.out(ruby, &v)).transpose()
    }

    fn set(ruby: &Ruby, rb_self: &Self, value: RString) -> Result<(), Error> {
        let value = bytes(value);
        rb_self.with(ruby, |c| c.set(&value))
    }

    fn remove(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.with(ruby, |c| c.remove())
    }

    fn is_live(&self) -> bool {
        self.slot.lock().is_some()
    }
}

/// Defines `Kuradb::Cursor` and its methods (`DBM#cursor` makes them).
pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("Cursor", ruby.class_object())?;
    class.undef_default_alloc_func();
    class.define_method("first", method!(Cursor::first, 0))?;
    class.define_method("last", method!(Cursor::last, 0))?;
    class.define_method("jump", method!(Cursor::jump, 1))?;
    class.define_method("_jump_lower", method!(Cursor::jump_lower, 2))?;
    class.define_method("_jump_upper", method!(Cursor::jump_upper, 2))?;
    class.define_method("next", method!(Cursor::next, 0))?;
    class.define_method("previous", method!(Cursor::previous, 0))?;
    class.define_method("get", method!(Cursor::get, 0))?;
    class.define_method("step", method!(Cursor::step, 0))?;
    class.define_method("key", method!(Cursor::key, 0))?;
    class.define_method("value", method!(Cursor::value, 0))?;
    class.define_method("set", method!(Cursor::set, 1))?;
    class.define_method("remove", method!(Cursor::remove, 0))?;
    class.define_method("live?", method!(Cursor::is_live, 0))?;
    Ok(())
}
