//! Whatever database a path names: one file of any class ([`PolyDbm`]) or a
//! set of shard files ([`ShardDbm`]). The CLI, the bindings and the server
//! open databases as [`AnyDbm`], so a program never asks which it got.

use std::path::Path;

use super::class::DbmClass;
use super::comparator::KeyComparator;
use super::params::Params;
use super::poly::PolyDbm;
use super::shard::ShardDbm;
use super::Dbm;
use crate::error::Result;

/// One database or a shard set, opened from a path and parameters.
///
/// ```
/// use kuradb::dbm::any::AnyDbm;
/// use kuradb::dbm::poly::Params;
/// use kuradb::dbm::Dbm;
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.tkh");
/// let db = AnyDbm::open(&path, true, &Params::parse("num_shards=4")?)?;
/// db.set(b"japan", b"tokyo", true)?;
/// assert!(db.is_sharded());
/// db.close()?;
/// // Reopened by its shard files, without num_shards.
/// let db = AnyDbm::open(&path, false, &Params::new())?;
/// assert_eq!(db.get(b"japan")?.as_deref(), Some(&b"tokyo"[..]));
/// # Ok(())
/// # }
/// ```
pub enum AnyDbm {
    /// One file (or an on-memory database).
    One(PolyDbm),
    /// A set of shard files.
    Shards(ShardDbm),
}

impl AnyDbm {
    /// Opens or creates what `path` names: with `num_shards`, or where a set
    /// of shard files exists at `path` (and no file does), a [`ShardDbm`];
    /// else a [`PolyDbm`].
    pub fn open(path: impl AsRef<Path>, writable: bool, params: &Params) -> Result<AnyDbm> {
        let path = path.as_ref();
        if AnyDbm::names_shards(path, params)? {
            return Ok(AnyDbm::Shards(ShardDbm::open(path, writable, params)?));
        }
        Ok(AnyDbm::One(PolyDbm::open(path, writable, params)?))
    }

    /// Opens a database of `class` as [`PolyDbm::open_class`] does.
    pub fn open_class(
        class: DbmClass,
        path: Option<&Path>,
        writable: bool,
        params: &Params,
    ) -> Result<AnyDbm> {
        Ok(AnyDbm::One(PolyDbm::open_class(class, path, writable, params)?))
    }

    fn names_shards(path: &Path, params: &Params) -> Result<bool> {
        Ok(params.get("num_shards").is_some()
            || (!path.exists() && ShardDbm::existing_count(path)?.is_some()))
    }

    /// Restores what `src` names (a file or a shard set) into `dest`; answers
    /// the number of records kept.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, params: &Params) -> Result<u64> {
        let (src, dest) = (src.as_ref(), dest.as_ref());
        if !src.exists() && ShardDbm::existing_count(src)?.is_some() {
            return ShardDbm::restore(src, dest, params);
        }
        PolyDbm::restore(src, dest, params)
    }

    /// The class of the database (of every shard).
    pub fn class(&self) -> DbmClass {
        match self {
            AnyDbm::One(db) => db.class(),
            AnyDbm::Shards(db) => db.class(),
        }
    }

    /// The order of the keys of an ordered database (`None` for a hash one).
    pub fn key_order(&self) -> Result<Option<KeyComparator>> {
        match self {
            AnyDbm::One(db) => db.key_order(),
            AnyDbm::Shards(db) => Ok(db.key_order()),
        }
    }

    /// Whether the database is a set of shards.
    pub fn is_sharded(&self) -> bool {
        matches!(self, AnyDbm::Shards(_))
    }

    /// Rebuilds with what `params` change of the tuning (see
    /// [`Dbm::rebuild_with_params`]).
    pub fn rebuild_with(&self, params: &Params) -> Result<()> {
        self.dbm().rebuild_with_params(params)
    }

    /// Closes the database, reporting what closing it found.
    pub fn close(self) -> Result<()> {
        match self {
            AnyDbm::One(db) => db.close(),
            AnyDbm::Shards(db) => db.close(),
        }
    }

    fn dbm(&self) -> &dyn Dbm {
        match self {
            AnyDbm::One(db) => db,
            AnyDbm::Shards(db) => db,
        }
    }
}

impl Dbm for AnyDbm {
    fn close(self: Box<Self>) -> Result<()> {
        AnyDbm::close(*self)
    }
    fn path(&self) -> Option<&Path> {
        self.dbm().path()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        self.dbm().rebuild_with_params(params)
    }
    super::forward_dbm!(|this| this.dbm());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_sets_open_by_num_shards_and_reopen_by_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.tks");
        let db = AnyDbm::open(&path, true, &Params::parse("num_shards=2,step_unit=2,reducer=last").unwrap())
            .unwrap();
        assert!(db.is_sharded() && db.class() == DbmClass::Skip && db.is_ordered());
        for k in ["b", "a", "c", "a"] {
            db.set(k.as_bytes(), k.as_bytes(), true).unwrap();
        }
        db.close().unwrap();
        assert!(!path.exists());
        let db = AnyDbm::open(&path, false, &Params::new()).unwrap();
        assert_eq!(db.count().unwrap(), 3);
        let mut cursor = db.iter().unwrap();
        cursor.last().unwrap();
        assert_eq!(cursor.get().unwrap().unwrap().0, b"c");
        drop(cursor);
        db.close().unwrap();
        let kept = AnyDbm::restore(&path, dir.path().join("copy.tks"), &Params::new()).unwrap();
        assert_eq!(kept, 3);
        let err =
            AnyDbm::open(&path, true, &Params::parse("num_shards=2,max_page_size=9").unwrap()).err().unwrap();
        assert!(err.message().contains("unknown parameter max_page_size for a skip database"), "{err}");
    }
}
