//! The Ruby binding of kuradb: the native extension `kuradb/kuradb_ext`,
//! which `bindings/ruby/lib/kuradb.rb` loads (see docs/ruby.md).
//!
//! It maps the Rust API one to one ([`database`]: `Kuradb::DBM` over an
//! [`PolyDbm`](kuradb::dbm::poly::PolyDbm); [`cursor`]: `Kuradb::Cursor`;
//! [`error`]: one exception class per error kind) and leaves Ruby idiom
//! (blocks, `Enumerable`, keyword parameters) and the reference's API
//! (`require "tkrzw"`) to Ruby files on top.
//!
//! Ruby's global VM lock stays held during calls into the database unless
//! it was opened `concurrent`: then the calls that run no Ruby code release
//! it ([`nogvl`], the crate's only `unsafe` code); a database's calls go
//! through the binding core's open handle (`Database::with`), a file's,
//! index's or cursor's through [`handle::call`] (the object's lock, the
//! release, the call).
//! [`guard`] keeps a `process` block, which runs Ruby code under a record
//! lock, from deadlocking with other threads.

#![deny(unsafe_code)]

mod async_dbm;
mod convert;
mod cursor;
mod database;
mod error;
mod exchange_queue;
mod expiry;
mod file;
mod flat_records;
mod future;
mod guard;
mod handle;
mod index;
mod nogvl;
mod txn;
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
    index::define(ruby, module)?;
    file::define(ruby, module)?;
    Ok(())
}
