//! What kuradb's Python, Java and Ruby bindings share, written once.
//!
//! Each binding crate is a thin layer over this one: it converts its
//! language's values to bytes and back and raises errors its language's
//! way; everything else a binding needs lives here, free of any FFI:
//!
//! - [`handle`]: an open (or closed) database as a foreign object holds it,
//!   with the slots of its cursors;
//! - [`guard`]: the guard that refuses a call back into a database from one
//!   of its own callbacks;
//! - [`cursor`]: a cursor kept together with the database it borrows;
//! - [`txn`]: transactions and snapshots kept together with the database
//!   they borrow, and batches gathered until their commit;
//! - [`status`]: the reference's status codes, from an [`kuradb::ErrorKind`];
//! - [`params`]: the reference's open and rebuild parameters in kuradb's
//!   terms, [`compat_open`]: the reference's defaults of an open (waiting
//!   for the lock, a reopened tree's own order), and [`synchronize`]: its
//!   synchronize with parameters;
//! - [`future`]: an `AsyncDBM` task's future, waited for by blocking;
//! - [`expiry`]: times to live and expiry times as the bindings take
//!   them, checked;
//! - [`increment`]: the reference's `Increment`, which reads values of any
//!   length;
//! - [`file`]: the reference's `File` checks; [`serialize`]: its `Utility`
//!   serialization of numbers; [`utility`]: its page size.

#![deny(unsafe_code)]

pub mod compat_open;
pub mod cursor;
pub mod expiry;
pub mod file;
pub mod future;
pub mod guard;
pub mod handle;
pub mod increment;
pub mod params;
pub mod serialize;
pub mod status;
pub mod synchronize;
pub mod txn;
pub mod utility;
