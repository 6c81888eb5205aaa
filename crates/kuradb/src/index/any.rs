//! An index of byte strings that is a file or, for an empty path, memory:
//! what the bindings' `Index(path, writable, **params)` opens, so that the
//! rule for the parameters a memory index takes is written once.

use std::path::Path;

use super::{FileIndex, Index, MemIndex};
use crate::dbm::comparator::KeyComparator;
use crate::dbm::params::Params;
use crate::dbm::{Access, Durability};
use crate::error::{Error, ErrorKind, Result};

/// A byte-string index in a file ([`FileIndex`]) or in memory
/// ([`MemIndex`]), chosen by the path it is opened with.
///
/// ```
/// use kuradb::index::{AnyIndex, Index};
/// use kuradb::dbm::Access;
/// use kuradb::Params;
/// # fn main() -> kuradb::Result<()> {
/// let params = Params::parse("key_comparator=PairDecimalKeyComparator")?;
/// let index = AnyIndex::open("", Access::ReadWrite, &params)?;
/// index.index().add(b"10", b"user:3")?;
/// index.index().add(b"9", b"user:8")?;
/// {
///     let mut cursor = index.index().cursor()?;
///     cursor.first()?;
///     assert_eq!(cursor.get()?, Some((b"9".to_vec(), b"user:8".to_vec())));
/// }
/// assert!(index.path().is_none());
/// index.close()?;
/// # Ok(())
/// # }
/// ```
pub enum AnyIndex {
    /// An index file (boxed: it is several times the size of a memory
    /// index).
    File(Box<FileIndex>),
    /// An index in memory.
    Mem(MemIndex),
}

impl AnyIndex {
    /// Opens or creates the index file at `path` ([`FileIndex::open`]), or,
    /// if `path` is empty, makes an index in memory. A memory index takes
    /// `key_comparator` (a pair comparator, `PairLexicalKeyComparator` by
    /// default) and lets the flags of opening a file through (`truncate`,
    /// `wait`, `no_wait`, `lock_timeout`, `no_lock`, `no_create`, `sync_hard`: they mean nothing to
    /// it); any other parameter is refused, naming it.
    pub fn open(path: impl AsRef<Path>, access: Access, params: &Params) -> Result<AnyIndex> {
        let path = path.as_ref();
        if !path.as_os_str().is_empty() {
            return Ok(AnyIndex::File(Box::new(FileIndex::open(path, access, params)?)));
        }
        let mut cmp = KeyComparator::PairLexical;
        for (name, value) in params.iter() {
            match name {
                "key_comparator" => cmp = KeyComparator::from_name(value)?,
                "truncate" | "wait" | "no_wait" | "lock_timeout" | "no_lock" | "no_create" | "sync_hard" => {}
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("an index in memory takes key_comparator only, not {name}"),
                    ))
                }
            }
        }
        Ok(AnyIndex::Mem(MemIndex::with_comparator(cmp)?))
    }

    /// The index's operations.
    pub fn index(&self) -> &dyn Index<Key = [u8], Value = [u8]> {
        match self {
            AnyIndex::File(i) => &**i,
            AnyIndex::Mem(i) => i,
        }
    }

    /// Closes the file (writing everything back); a memory index is dropped.
    pub fn close(self) -> Result<()> {
        match self {
            AnyIndex::File(i) => i.close(),
            AnyIndex::Mem(_) => Ok(()),
        }
    }

    /// Makes every change so far reach the OS (`hard == false`) or the
    /// device; nothing to do for a memory index.
    pub fn synchronize(&self, durability: Durability) -> Result<()> {
        match self {
            AnyIndex::File(i) => i.synchronize(durability),
            AnyIndex::Mem(_) => Ok(()),
        }
    }

    /// Rewrites the file compactly, or reorganizes the memory index.
    pub fn rebuild(&self) -> Result<()> {
        match self {
            AnyIndex::File(i) => i.rebuild(),
            AnyIndex::Mem(i) => i.rebuild(),
        }
    }

    /// Whether the index takes changes: a file opened for writing, or
    /// memory.
    pub fn is_writable(&self) -> bool {
        match self {
            AnyIndex::File(i) => i.is_writable(),
            AnyIndex::Mem(_) => true,
        }
    }

    /// The file's path; `None` for a memory index.
    pub fn path(&self) -> Option<&Path> {
        match self {
            AnyIndex::File(i) => Some(i.path()),
            AnyIndex::Mem(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory index takes its comparator and the file flags, and refuses
    /// any other parameter by name; a path opens a file that reopens with
    /// its pairs.
    #[test]
    fn an_empty_path_is_memory_and_a_path_a_file() {
        let flags =
            Params::parse("truncate=true,no_wait=true,no_lock=true,no_create=false,sync_hard=true").unwrap();
        let mem = AnyIndex::open("", Access::ReadWrite, &flags).unwrap();
        assert!(matches!(mem, AnyIndex::Mem(_)) && mem.is_writable() && mem.path().is_none());
        let err = AnyIndex::open("", Access::ReadWrite, &Params::parse("max_page_size=4096").unwrap())
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("max_page_size"), "{}", err.message());
        let bad = AnyIndex::open(
            "",
            Access::ReadWrite,
            &Params::parse("key_comparator=LexicalKeyComparator").unwrap(),
        );
        assert!(bad.is_err(), "a key comparator that is not a pair comparator");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.kt");
        let file = AnyIndex::open(&path, Access::ReadWrite, &Params::default()).unwrap();
        file.index().add(b"tokyo", b"user:1").unwrap();
        file.synchronize(Durability::Soft).unwrap();
        assert_eq!(file.path(), Some(path.as_path()));
        file.close().unwrap();
        let file = AnyIndex::open(&path, Access::ReadOnly, &Params::default()).unwrap();
        assert!(!file.is_writable());
        assert!(file.index().check(b"tokyo", b"user:1").unwrap());
        file.close().unwrap();
    }
}
