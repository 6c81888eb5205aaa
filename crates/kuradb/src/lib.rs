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
//! Platform code (system calls, memory mapping) lives in one private module,
//! `sys`; it is the only place `unsafe` is allowed.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod dbm;
pub mod error;
pub mod file;
mod sys;

pub use error::{Error, ErrorKind, Result};
