//! The natives of expiry (time to live) of `Kuradb::DBM`, for a database
//! with expiry: times in seconds as Ruby's floats give them, checked by
//! the binding core; `lib/kuradb/dbm.rb` gives them their Ruby forms.

use magnus::prelude::*;
use magnus::{method, Error, RClass, RString, Ruby};

use kuradb::dbm::expiry::Expiry;
use kuradb_binding::expiry::{expiry_of_unix_seconds, records_per_second, store_with_ttl, ttl_of_seconds};

use crate::convert::bytes;
use crate::database::Database;
use crate::error::to_rb;
use crate::nogvl::without_gvl;

/// Stores a record expiring `ttl` seconds from now.
fn set_with_ttl(
    ruby: &Ruby,
    rb_self: &Database,
    key: RString,
    value: RString,
    overwrite: bool,
    ttl: f64,
) -> Result<(), Error> {
    let (key, value) = (bytes(key), bytes(value));
    let ttl = ttl_of_seconds(ttl).map_err(|e| to_rb(ruby, e))?;
    rb_self.with(ruby, |db| store_with_ttl(db, &key, &value, ttl, overwrite))
}

fn expire(ruby: &Ruby, rb_self: &Database, key: RString, seconds: f64) -> Result<bool, Error> {
    let key = bytes(key);
    let ttl = ttl_of_seconds(seconds).map_err(|e| to_rb(ruby, e))?;
    rb_self.with(ruby, |db| db.expire_after(&key, ttl))
}

fn expire_at(ruby: &Ruby, rb_self: &Database, key: RString, unix_seconds: f64) -> Result<bool, Error> {
    let key = bytes(key);
    let at = expiry_of_unix_seconds(unix_seconds).map_err(|e| to_rb(ruby, e))?;
    rb_self.with(ruby, |db| db.expire_at(&key, Some(at)))
}

fn persist(ruby: &Ruby, rb_self: &Database, key: RString) -> Result<bool, Error> {
    let key = bytes(key);
    rb_self.with(ruby, |db| db.persist(&key))
}

/// The expiry time of `key` and the time now, in milliseconds since the
/// Unix epoch: `[nil, now]` without a record, `[-1, now]` if it never expires.
fn expiry_ms(ruby: &Ruby, rb_self: &Database, key: RString) -> Result<(Option<i64>, u64), Error> {
    let key = bytes(key);
    let (expiry, now) = rb_self.with(ruby, |db| Ok((db.expiry(&key)?, db.now_ms())))?;
    let expiry = expiry.map(|at| at.map_or(-1, |at| i64::try_from(at).unwrap_or(i64::MAX)));
    Ok((expiry, now))
}

fn has_expiry(ruby: &Ruby, rb_self: &Database) -> Result<bool, Error> {
    rb_self.with(ruby, |db| Ok(db.inner().expiring().is_some()))
}

fn sweep(ruby: &Ruby, rb_self: &Database, max_records: i64) -> Result<(usize, usize, bool), Error> {
    let report = rb_self.with(ruby, |db| kuradb_binding::expiry::sweep(db, max_records))?;
    Ok((report.visited, report.removed, report.finished_pass))
}

fn start_sweeper(ruby: &Ruby, rb_self: &Database, per_second: i64) -> Result<(), Error> {
    let per_second = records_per_second(per_second).map_err(|e| to_rb(ruby, e))?;
    rb_self.handle.start_sweeper(per_second).map_err(|e| to_rb(ruby, e))
}

fn stop_sweeper(ruby: &Ruby, rb_self: &Database) -> Result<Option<u64>, Error> {
    let handle = &rb_self.handle;
    without_gvl(|| handle.stop_sweeper()).map_err(|e| to_rb(ruby, e))
}

/// Defines the natives on `Kuradb::DBM`.
pub fn define(class: &RClass) -> Result<(), Error> {
    class.define_method("_set_with_ttl", method!(set_with_ttl, 4))?;
    class.define_method("_expire", method!(expire, 2))?;
    class.define_method("_expire_at", method!(expire_at, 2))?;
    class.define_method("persist", method!(persist, 1))?;
    class.define_method("_expiry_ms", method!(expiry_ms, 1))?;
    class.define_method("expiry?", method!(has_expiry, 0))?;
    class.define_method("_sweep", method!(sweep, 1))?;
    class.define_method("_start_sweeper", method!(start_sweeper, 1))?;
    class.define_method("stop_sweeper", method!(stop_sweeper, 0))?;
    Ok(())
}
