//! kuradb: an embedded key-value database library of the DBM family.
//!
//! A program links kuradb and gets a fast, thread-safe, persistent map of byte
//! strings. The library is built in layers, each using only the one below:
//!
//! - [`mod@file`]: random access to one file through an interchangeable I/O
//!   strategy (memory mapping or positional calls; block I/O, direct I/O, sync
//!   I/O, a page cache and a head buffer as options), chosen at run time by a
//!   [`file::FileSpec`].
//! - [`dbm`]: the databases behind one trait, [`dbm::Dbm`]: on files the
//!   hash table ([`dbm::hash`]), the B+ tree ([`dbm::tree`]) and the skip list
//!   ([`dbm::skip`]); in memory [`dbm::tiny`], [`dbm::baby`], [`dbm::cache`]
//!   and [`dbm::std_map`]; [`dbm::class`] is the one list of them (names,
//!   extensions, file heads, parameters), [`dbm::shard`] spreads one over
//!   several files, [`dbm::poly`] opens whichever a path names (one of them
//!   or a shard set) from a path and parameters, and [`dbm::async_dbm`] puts any of them behind worker threads.
//! - [`index`]: secondary indexes, sets of (key, value) pairs kept in a
//!   tree file ([`index::FileIndex`]), in memory ([`index::MemIndex`]) or
//!   as typed pairs ([`index::StdIndex`]).
//! - [`error`]: the one error type, [`Error`], with an [`ErrorKind`].
//! - [`utility`]: the reference's hash functions and utilities, for the
//!   bindings' compatibility layers.
//!
//! The main types are re-exported here: `kuradb::{HashDbm, TreeDbm, SkipDbm,
//! PolyDbm, Dbm, Cursor, …}`.
//!
//! `unsafe` is denied crate-wide and allowed, function by function with
//! `#[expect(unsafe_code, reason = …)]` and a `SAFETY` comment on each
//! block, in two places only, each for one reason:
//!
//! - `sys`, the platform code: system calls (`fallocate`, `pthread_atfork`,
//!   `fcntl`), copies in and out of memory maps, and calls into liblz4.
//! - `dbm::tiny::record`, the records of TinyDbm and CacheDbm: each record
//!   is one heap allocation holding its links, key and value, which safe
//!   Rust cannot lay out without a second allocation or wider links. The
//!   module offers a safe API (records are read through borrows and
//!   changed through an exclusive entry), and each unsafe site in it is
//!   one small function marked `#[expect(unsafe_code)]` with a `SAFETY`
//!   comment.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod caching;
pub mod dbm;
pub mod error;
pub mod file;
pub mod index;
mod sys;
pub mod ulog;
pub mod utility;
pub mod varint;

pub use dbm::async_dbm::{AsyncDbm, DbmFuture};
pub use dbm::baby::{BabyDbm, BabyOptions};
pub use dbm::cache::{CacheDbm, CacheOptions};
pub use dbm::class::DbmClass;
pub use dbm::comparator::KeyComparator;
pub use dbm::expiry::ExpiringDbm;
pub use dbm::hash::{HashDbm, HashOptions};
pub use dbm::params::Params;
pub use dbm::persistence::FlatLock;
pub use dbm::poly::PolyDbm;
pub use dbm::shard::ShardDbm;
pub use dbm::skip::{Reducer, SkipDbm, SkipOptions};
pub use dbm::std_map::{StdBuilder, StdHashDbm, StdOptions, StdTreeDbm};
pub use dbm::tiny::{TinyDbm, TinyOptions};
pub use dbm::tree::{TreeDbm, TreeOptions};
pub use dbm::txn::{
    Batch, CommitDurability, Snapshot, Transaction, TransactionOptions, TransactionalDbm, Watch,
};
pub use dbm::{Access, Action, Cursor, Dbm, Durability, Edge, OnDuplicate, Rekey};
pub use error::{Error, ErrorKind, Result};
pub use file::{File, FileSpec};
pub use index::{FileIndex, MemIndex, StdIndex};

/// The README's Rust snippets, compiled as doctests so they cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}

/// The transactions guide's Rust snippet, compiled likewise.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/transactions.md")]
mod transactions_guide {}

/// The scaling guide's Rust snippet, compiled likewise.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/scaling.md")]
mod scaling_guide {}

/// The expiry guide's Rust snippet, compiled likewise.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/expiry.md")]
mod expiry_guide {}
