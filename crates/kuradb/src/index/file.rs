//! FileIndex: an index whose pairs are the records of a tree file.

use std::path::Path;

use super::pair_order;
use super::pairs::Pairs;
use crate::dbm::comparator::KeyComparator;
use crate::dbm::params::{Params, Taker};
use crate::dbm::tree::{TreeDbm, TreeOptions};
use crate::dbm::{Access, Dbm, Durability};
use crate::error::{Error, ErrorKind, Result};

/// A secondary index in a file: a [`TreeDbm`] whose records' keys are the
/// encoded pairs (see [`crate::dbm::pair`]) and whose values are empty,
/// ordered by a pair comparator. Everything a tree offers (file
/// implementations, crash recovery, rebuild) applies.
///
/// ```
/// use kuradb::index::{FileIndex, Index};
/// use kuradb::dbm::Access;
/// use kuradb::Params;
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("city.kti");
/// let index = FileIndex::open(&path, Access::ReadWrite, &Params::new())?;
/// index.add(b"tokyo", b"user:17")?;
/// index.add(b"tokyo", b"user:3")?;
/// index.close()?;
/// let index = FileIndex::open(&path, Access::ReadOnly, &Params::new())?;
/// assert_eq!(index.get_values(b"tokyo", 1)?, [b"user:17".to_vec()]);
/// assert!(index.add(b"kyoto", b"user:9").is_err(), "opened read-only");
/// # Ok(())
/// # }
/// ```
pub struct FileIndex {
    pairs: Pairs<TreeDbm>,
    writable: bool,
    cmp: KeyComparator,
}

impl FileIndex {
    /// Opens or creates the index at `path`. `params` are a tree's (the
    /// file implementation, `truncate`, `no_wait`, `max_page_size`, …, see
    /// [`PolyDbm`](crate::PolyDbm)); `key_comparator` must be a pair
    /// comparator, `PairLexicalKeyComparator` by default.
    pub fn open(path: impl AsRef<Path>, access: Access, params: &Params) -> Result<FileIndex> {
        let mut taker = Taker::new(params, "a file index");
        let options = TreeOptions::default().take_params(&mut taker)?;
        taker.finish()?;
        FileIndex::open_with(path, access, &options)
    }

    /// Opens or creates the index at `path` with a tree's options, whose
    /// comparator must be a pair comparator: by default
    /// `PairLexicalKeyComparator` for a new file, the file's own on a reopen.
    pub fn open_with(path: impl AsRef<Path>, access: Access, options: &TreeOptions) -> Result<FileIndex> {
        let path = path.as_ref();
        let mut options = options.clone();
        match options.comparator {
            Some(cmp) => {
                pair_order(cmp)?;
            }
            // A file that does not exist, or will be emptied, is new.
            None if !path.exists() || options.hash.open.truncate => {
                options.comparator = Some(KeyComparator::PairLexical)
            }
            None => {}
        }
        let db = TreeDbm::open(path, access, &options)?;
        // An existing file keeps its own order, which may be no pair order.
        let cmp = match stored_order(&db).and_then(pair_order) {
            Ok(cmp) => cmp,
            Err(e) => {
                let _ = db.close();
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("{} is not an index: {}", path.display(), e.message()),
                ));
            }
        };
        Ok(FileIndex { pairs: Pairs { db }, writable: access.is_writable(), cmp })
    }

    /// Writes everything back and closes the file.
    pub fn close(self) -> Result<()> {
        self.pairs.db.close()
    }

    /// Makes every change so far reach the OS (`hard == false`) or the device.
    pub fn synchronize(&self, durability: Durability) -> Result<()> {
        self.pairs.db.synchronize(durability)
    }

    /// Rewrites the file compactly.
    pub fn rebuild(&self) -> Result<()> {
        self.pairs.db.rebuild()
    }

    /// Whether the index was opened for writing.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The order of the pairs, as the file keeps it.
    pub fn comparator(&self) -> KeyComparator {
        self.cmp
    }

    /// The path of the file.
    pub fn path(&self) -> &Path {
        self.pairs.db.path().unwrap_or(Path::new(""))
    }

    /// The size of the file in bytes.
    pub fn file_size(&self) -> Result<u64> {
        self.pairs.db.file_size()
    }
}

/// The order the tree's file was created with.
fn stored_order(db: &TreeDbm) -> Result<KeyComparator> {
    let figures = db.inspect()?;
    let name = figures.iter().find(|(k, _)| k == "key_comparator").map_or("lexical", |(_, v)| v.as_str());
    KeyComparator::from_name(name)
}

super::pairs::index_over_pairs!(FileIndex);
