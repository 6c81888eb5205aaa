//! kuradb: an embedded key-value database library of the DBM family.
//!
//! A program links kuradb and gets a fast, thread-safe, persistent map of byte
//! strings. The library is built in layers, each using only the one below:
//!
//! - [`file`]: random access to one file through an interchangeable I/O
//!   strategy (memory mapping or positional calls; block I/O, direct I/O, sync
//!   I/O, a page cache and a head buffer as options), chosen at run time by a
//!   [`file::FileSpec`].
//! - [`dbm`]: the databases behind one trait, [`dbm::Dbm`]: on files the
//!   hash table ([`dbm::hash`]), the B+ tree ([`dbm::tree`]) and the skip list
//!   ([`dbm::skip`]); in memory [`dbm::tiny`], [`dbm::baby`], [`dbm::cache`]
//!   and [`dbm::std_map`]; [`dbm::poly`] opens any of them from a path and
//!   parameters, and [`dbm::shard`] spreads one over several files.
//! - [`error`]: the one error type, [`Error`], with an [`ErrorKind`].
//!
//! `unsafe` is denied crate-wide and allowed in two places only, each for
//! one reason:
//!
//! - `sys`, the platform code: system calls and memory maps.
//! - `dbm::tiny::record`, the records of TinyDbm and CacheDbm: each record
//!   is one heap allocation holding its links, key and value, which safe
//!   Rust cannot lay out without a second allocation or wider links. The
//!   module offers a safe API (records are read through borrows and
//!   changed through an exclusive entry), and each unsafe site in it is
//!   one small function marked `#[expect(unsafe_code)]` with a `SAFETY`
//!   comment.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod dbm;
pub mod error;
pub mod file;
mod sys;

pub use error::{Error, ErrorKind, Result};
