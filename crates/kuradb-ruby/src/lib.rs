//! The Ruby binding of kuradb: the native extension `kuradb/kuradb_ext`,
//! which `bindings/ruby/lib/kuradb.rb` loads (see docs/ruby.md).
//!
//! It maps the Rust API one to one ([`database`]: `Kuradb::DBM` over an
//! [`AnyDbm`](kuradb::dbm::any::AnyDbm); [`cursor`]: `Kuradb::Cursor`;
//! [`error`]: one exception class per error kind) and leaves Ruby idiom
//! (blocks, `Enumerable`, keyword parameters) and the reference's API
//! (`require "tkrzw"`) to Ruby files on top.
//!
//! Ruby's global VM lock stays held during every call into the database:
//! magnus has no safe way to release it. [`guard`] keeps that from
//! deadlocking while a `process` block runs under a record lock.

#![deny(unsafe_code)]

mod async_dbm;
mod convert;
mod cursor;
mod database;
mod error;
mod guard;
mod utility;

use magnus::{Error, Ruby};

/// Defines `Kuradb::DBM`, `Kuradb::Cursor` and `Kuradb::Utility` (the exception classes and
/// the Ruby methods come from `kuradb.rb`, which requires this first).
#[magnus::init(name = "kuradb_ext")]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let module = ruby.define_module("Kuradb")?;
    database::define(ruby, module)?;
    cursor::define(ruby, module)?;
    utility::define(ruby, module)?;
    async_dbm::define(ruby, module)?;
    Ok(())
}
