//! Writing a skip database's file: the [`Builder`] lays records down in key
//! order with their skip pointers, and [`merge`] feeds it from the old file
//! and the updates waiting since the last synchronization.
//!
//! - `index`: the cache of the upper levels the file ends with.
//! - `builder`: the writer of a new file.
//! - `run` and `sort_file`: updates waiting in memory and spilled to disk.
//! - `merge`: the sorted sources merged key by key.
//! - `salvage`: what can be read of a damaged file.

mod builder;
mod index;
mod merge;
mod run;
mod salvage;
mod sort_file;

pub(crate) use builder::Builder;
pub(crate) use index::{prefix_of, UpperIndex};
pub(crate) use merge::{combine_spills, merge, OldFile, Run};
pub(crate) use run::{MemoryRun, MAX_ITEM};
pub(crate) use salvage::salvage;

/// Bytes each sequential read of the old file takes.
const READ_CHUNK: usize = 1 << 20;
