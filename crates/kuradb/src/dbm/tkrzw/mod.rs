//! Reading the files of the reference implementation (Tkrzw 1.0): its hash,
//! tree and skip databases and its flat record files, read-only, so that a
//! Tkrzw user can look into them and convert them without Tkrzw installed.
//!
//! [`ReferenceDbm`] opens such a file (recognised by [`ReferenceFormat::of_file`])
//! and serves lookups, cursors in the file's order, `count` and `inspect`;
//! every writing method is a read-only error pointing at `kura util convert`.
//! A file its writer left unhealthy (killed before closing) is salvaged as
//! it is read, and [`ReferenceDbm::salvage`] says what was kept and lost.
//!
//! The formats are described in each module (`hash`, `tree`, `skip`,
//! `flat`) and in docs/reference-files.md. Values the reference compressed
//! (`record_comp_mode` zlib, zstd, lz4 or lzma) are decompressed as they are
//! read (`codec`). What this reader refuses, by name: values encoded by the
//! reference's extra codecs (its ciphers), and a tree ordered by a
//! comparator kuradb does not have.

//! Without the Cargo feature `tkrzw` only [`ReferenceFormat`] is built: a
//! file of the reference is still told from others by its first bytes, and
//! opening it is an error naming the feature.

#[cfg(feature = "tkrzw")]
mod bytes;
#[cfg(feature = "tkrzw")]
mod codec;
#[cfg(feature = "tkrzw")]
mod convert;
#[cfg(feature = "tkrzw")]
mod cursor;
#[cfg(feature = "tkrzw")]
mod dbm;
#[cfg(feature = "tkrzw")]
mod flat;
#[cfg(feature = "tkrzw")]
mod hash;
#[cfg(feature = "tkrzw")]
mod skip;
#[cfg(feature = "tkrzw")]
mod tree;

use std::io::Read;
use std::path::Path;

#[cfg(feature = "tkrzw")]
pub use dbm::{ReferenceDbm, Salvage};

/// The first bytes of the reference's hash (and tree) files.
const HASH_MAGIC: &[u8] = b"TkrzwHDB\n";
/// The first bytes of the reference's skip files.
const SKIP_MAGIC: &[u8] = b"TkrzwSDB\n";

use crate::error::{Error, Result};

/// The kinds of file the reference writes that kuradb reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferenceFormat {
    /// A HashDBM file.
    Hash,
    /// A TreeDBM file (a hash file of pages).
    Tree,
    /// A SkipDBM file.
    Skip,
    /// A flat record file (an export, or an on-memory database's file).
    Flat,
}

/// How much of a file's head [`ReferenceFormat::of_file`] reads.
const HEAD_SIZE: usize = 128;

impl ReferenceFormat {
    /// The format of the file at `path` if the reference wrote it, from its
    /// first bytes; `None` for any other file (or an empty one).
    pub fn of_file(path: &Path) -> Result<Option<ReferenceFormat>> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
        let size = file.metadata().map_err(|e| Error::io("reading the size", path, e))?.len();
        let mut head = Vec::with_capacity(HEAD_SIZE);
        (&mut file)
            .take(HEAD_SIZE as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::io("reading the header", path, e))?;
        Ok(ReferenceFormat::of_head(&head, size))
    }

    /// The format whose file begins with `head` (of a file of `file_size`
    /// bytes), if any.
    pub fn of_head(head: &[u8], file_size: u64) -> Option<ReferenceFormat> {
        if head.starts_with(HASH_MAGIC) {
            // A tree's metadata sits at the start of the hash header's opaque area.
            let tree = head.get(62..65) == Some(b"TDB");
            return Some(if tree { ReferenceFormat::Tree } else { ReferenceFormat::Hash });
        }
        if head.starts_with(SKIP_MAGIC) {
            return Some(ReferenceFormat::Skip);
        }
        // A flat file has no magic: its first record is read to tell it,
        // which only the reader can.
        #[cfg(feature = "tkrzw")]
        return flat::sniff(head, file_size).then_some(ReferenceFormat::Flat);
        #[cfg(not(feature = "tkrzw"))]
        {
            let _ = file_size;
            None
        }
    }

    /// The reference's name of the format's class (a flat file's own
    /// metadata may name an on-memory class instead).
    pub fn reference_name(self) -> &'static str {
        match self {
            ReferenceFormat::Hash => "HashDBM",
            ReferenceFormat::Tree => "TreeDBM",
            ReferenceFormat::Skip => "SkipDBM",
            ReferenceFormat::Flat => "FlatRecord",
        }
    }
}

/// The error every writing method answers.
#[cfg(feature = "tkrzw")]
pub(crate) fn read_only(path: &Path) -> Error {
    Error::new(
        crate::error::ErrorKind::ReadOnly,
        format!(
            "{}: a file written by the reference implementation is opened read-only; `kura util convert` \
             makes a kuradb database of it",
            path.display()
        ),
    )
}

/// The error of opening a file of the reference in a build without the
/// reader.
#[cfg(not(feature = "tkrzw"))]
pub(crate) fn not_built(path: &Path) -> Error {
    Error::needs_feature(
        format!("{} was written by the reference implementation (Tkrzw); reading it", path.display()),
        "tkrzw",
    )
}

#[cfg(all(test, feature = "tkrzw"))]
mod tests;
