//! Opening whatever database a path names: [`PolyDbm`] takes a path and
//! parameters (a map, or a string like
//! `dbm=tree,file=pos-para,max_cached_pages=1000`) and opens the database they
//! describe, through the class registry ([`DbmClass`]), so that programs, the
//! CLI, the server and the bindings share one way to say which database, file
//! and tuning they want, and never ask which kind they got.
//!
//! A path names a set of shard files ([`ShardDbm`], one [`SingleDbm`] per
//! shard) when `num_shards` is given, or when no file but a set of shard
//! files exists at it; a directory holding `CURRENT` is a published
//! directory, whose current version opens read-only as a [`ShardDbm`] (see
//! [`published`](super::published)); else one database, a [`SingleDbm`].
//!
//! The class of a new file comes from `dbm=` or from the path's extension; an
//! existing file is recognised by its header, whatever its name. Every
//! parameter must be one the chosen class takes: an unknown name, or a known
//! one with a value of the wrong type, is an error that names it.
//!
//! A file the reference implementation (Tkrzw) wrote is recognised by its
//! magic too and opened read-only as a
//! [`ReferenceDbm`](super::tkrzw::ReferenceDbm): its class is the matching
//! kuradb class, opening it writable is an error suggesting
//! `kura util convert`, and [`PolyDbm::restore`] salvages it into a kuradb
//! database.
//!
//! An empty path names no file: it opens an on-memory database that lives
//! and dies with the handle, as the reference's `PolyDBM` does — of the class
//! `dbm=` names (an on-memory one: tiny, baby, cache, stdhash, stdtree), a
//! [`TinyDbm`](super::tiny::TinyDbm) without it. It is writable whatever
//! `writable` says (there is no file to protect), and closing it writes
//! nothing. A file class with an empty path is a
//! [`NotFound`](crate::ErrorKind::NotFound) error, as the reference's "no
//! such file".
//!
//! `ulog_prefix` (with `ulog_max_file_size`, `ulog_server_id`,
//! `ulog_dbm_index`) makes a writer log every change into update-log files
//! at that prefix (see [`crate::ulog`]).
//!
//! A database with expiry (one holding the [expiry layer's
//! marker](super::expiry::EXPIRY_MARKER)) opens with that layer, an
//! [`ExpiringDbm`] over the database, whatever the parameters say, so every
//! read hides expired records and shows values without their expiry tag.
//! `expiry=true` turns expiry on for a new (empty) database; `expiry=false`
//! refuses a database with expiry, for a program that must not meet one.

mod single;

use std::path::Path;
use std::sync::Arc;

pub use super::class::DbmClass;
pub use super::params::Params;
pub use single::SingleDbm;

use super::comparator::KeyComparator;
use super::expiry::{ExpiringDbm, ExpiryState, SystemClock};
use super::params::parse_flag;
use super::shard::ShardDbm;
use super::Dbm;
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};
use crate::ulog::UpdateLogger;

/// Whatever database a path names: one database of any class, or a set of
/// shard files.
///
/// ```
/// use kuradb::dbm::poly::{Params, PolyDbm};
/// use kuradb::dbm::{Access, Cursor, Dbm};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.tkt");
/// let params = Params::parse("file=pos-para,max_cached_pages=100,key_comparator=decimal")?;
/// let db = PolyDbm::open(&path, Access::ReadWrite, &params)?;
/// assert_eq!(db.class().name(), "tree"); // from the extension
/// db.set(b"10", b"ten")?;
/// db.set(b"9", b"nine")?;
/// let mut cursor = db.iter()?;
/// cursor.first()?;
/// assert_eq!(cursor.get()?.unwrap().0, b"9"); // decimal order
/// drop(cursor);
/// db.close()?;
/// // Reopened by its header, whatever its name says.
/// std::fs::rename(&path, dir.path().join("casket.dat")).unwrap();
/// let db = PolyDbm::builder().open_read_only(dir.path().join("casket.dat"))?;
/// assert_eq!(db.get(b"10")?.as_deref(), Some(&b"ten"[..]));
/// assert!(PolyDbm::builder().param("max_level", 3).open(dir.path().join("x.tkh")).is_err());
/// # Ok(())
/// # }
/// ```
///
/// A shard set is one more kind of database a path names:
///
/// ```
/// use kuradb::dbm::poly::PolyDbm;
/// use kuradb::dbm::Dbm;
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.tkh");
/// let db = PolyDbm::builder().param("num_shards", 4).open(&path)?;
/// db.set(b"japan", b"tokyo")?;
/// assert!(db.is_sharded());
/// db.close()?;
/// // Reopened by its shard files, without num_shards.
/// let db = PolyDbm::builder().open_read_only(&path)?;
/// assert_eq!(db.get(b"japan")?.as_deref(), Some(&b"tokyo"[..]));
/// # Ok(())
/// # }
/// ```
pub enum PolyDbm {
    /// One database: a file, or an on-memory database.
    One(SingleDbm),
    /// A set of shard files.
    Shards(ShardDbm),
    /// A database with expiry: one or a set of shards, under the expiry
    /// layer (see [`PolyDbm::expiring`]).
    Expiring(Box<ExpiringDbm<PolyDbm>>),
}

crate::dbm::builder::params_builder!(PolyDbm);

impl PolyDbm {
    /// Opens or creates what `path` names: a published directory's current
    /// version, read-only (a writable open is refused); with `num_shards`, or where a set
    /// of shard files exists at `path` (and no file does), a [`ShardDbm`];
    /// else one database (see the module's documentation for how its class
    /// is chosen). An empty path opens an on-memory database with no file:
    ///
    /// ```
    /// use kuradb::dbm::poly::{DbmClass, PolyDbm};
    /// use kuradb::dbm::Dbm;
    /// # fn main() -> kuradb::Result<()> {
    /// let db = PolyDbm::builder().param("dbm", "baby").open("")?;
    /// db.set(b"k", b"v")?;
    /// assert_eq!((db.class(), db.file_path()), (DbmClass::Baby, None));
    /// db.close()?; // writes nothing
    /// let err = PolyDbm::builder().param("dbm", "hash").open("").err().unwrap();
    /// assert_eq!(err.kind(), kuradb::ErrorKind::NotFound);
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(path: impl AsRef<Path>, access: Access, params: &Params) -> Result<PolyDbm> {
        let path = path.as_ref();
        let (expiry, params) = PolyDbm::take_expiry(params)?;
        let params = &params;
        let db = if super::published::is_published(path) {
            PolyDbm::Shards(super::published::open(path, access, params)?)
        } else if PolyDbm::names_shards(path, params)? {
            PolyDbm::Shards(ShardDbm::open(path, access, params)?)
        } else {
            PolyDbm::One(SingleDbm::open(path, access, params)?)
        };
        db.with_expiry(expiry)
    }

    /// The `expiry` parameter (`None`: not given) and the others.
    fn take_expiry(params: &Params) -> Result<(Option<bool>, Params)> {
        match params.get("expiry") {
            None => Ok((None, params.clone())),
            Some(value) => Ok((Some(parse_flag("expiry", value)?), params.without("expiry"))),
        }
    }

    /// The database under the expiry layer if it has expiry or `wanted`
    /// asks for it (see the module's documentation).
    fn with_expiry(self, wanted: Option<bool>) -> Result<PolyDbm> {
        let clock = Arc::new(SystemClock);
        let state = match wanted {
            // The marker read, or made for an empty database.
            Some(true) => ExpiryState::open(&self, clock).map(Some),
            Some(false) => ExpiryState::existing(&self, clock).and_then(|state| match state {
                Some(_) => Err(Error::new(
                    ErrorKind::Infeasible,
                    "the database has expiry (it holds the expiry layer's record), and expiry=false refuses it",
                )),
                None => Ok(None),
            }),
            None => ExpiryState::existing(&self, clock),
        };
        match state {
            Ok(Some(state)) => Ok(PolyDbm::Expiring(Box::new(ExpiringDbm::with_state(self, state)))),
            Ok(None) => Ok(self),
            Err(e) => {
                // The database opened; closing it reports nothing new.
                let _ = self.close();
                Err(e)
            }
        }
    }

    /// The expiry layer, for a database with expiry: its calls set and read
    /// records' expiry times (see [`Expiry`](super::expiry::Expiry)).
    pub fn expiring(&self) -> Option<&ExpiringDbm<PolyDbm>> {
        match self {
            PolyDbm::Expiring(db) => Some(db),
            _ => None,
        }
    }

    /// The database as stored: for a database with expiry, the one under
    /// the layer (values with their expiry tags, the layer's record among
    /// them), else the database itself. An update log of a database with
    /// expiry holds the values as stored, so it is replayed into this.
    pub fn stored(&self) -> &PolyDbm {
        match self {
            PolyDbm::Expiring(db) => db.inner(),
            db => db,
        }
    }

    /// The database without its expiry layer (its values as stored, the
    /// layer's record among them) and the layer's state, for a front end
    /// that lays the layer over each request's view of the database itself
    /// (as `kura serve` does); `None` for a database without expiry. The
    /// clock's high-water mark is kept first.
    pub fn into_stored(self) -> Result<(PolyDbm, Option<Arc<ExpiryState>>)> {
        match self {
            PolyDbm::Expiring(db) => {
                let (inner, state) = db.into_parts();
                state.keep_high_water(&inner)?;
                Ok((inner, Some(state)))
            }
            db => Ok((db, None)),
        }
    }

    /// Opens one database of `class`: at `path`, or for an on-memory class
    /// without a path, purely in memory.
    pub fn open_class(
        class: DbmClass,
        path: Option<&Path>,
        access: Access,
        params: &Params,
    ) -> Result<PolyDbm> {
        let (expiry, params) = PolyDbm::take_expiry(params)?;
        PolyDbm::One(SingleDbm::open_class(class, path, access, &params)?).with_expiry(expiry)
    }

    fn names_shards(path: &Path, params: &Params) -> Result<bool> {
        // An empty path names no files, so no existing set either.
        let existing = || -> Result<bool> {
            Ok(!path.as_os_str().is_empty() && !path.exists() && ShardDbm::existing_count(path)?.is_some())
        };
        Ok(params.get("num_shards").is_some() || existing()?)
    }

    /// Restores the damaged or crashed database (a file or a shard set) at
    /// `src` into a new one at `dest` (of the same class, tuned by
    /// `params`); answers the number of records kept (see
    /// [`DbmClass::restore`]). A file of the reference is salvaged (see
    /// [`ReferenceDbm::open_salvaging`](super::tkrzw::ReferenceDbm::open_salvaging))
    /// into a kuradb database of the matching class.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, params: &Params) -> Result<u64> {
        let (src, dest) = (src.as_ref(), dest.as_ref());
        if !src.exists() && ShardDbm::existing_count(src)?.is_some() {
            return ShardDbm::restore(src, dest, params);
        }
        SingleDbm::restore(src, dest, params)
    }

    /// The database with every change made through it told to `logger`
    /// first (see [`LoggedDbm`](crate::ulog::LoggedDbm)); what `ulog_prefix`
    /// does at open. For a shard set, every shard tells the one logger.
    pub fn with_update_logger(self, logger: Arc<dyn UpdateLogger>) -> PolyDbm {
        match self {
            PolyDbm::One(db) => PolyDbm::One(db.with_update_logger(logger)),
            PolyDbm::Shards(db) => PolyDbm::Shards(db.with_update_logger(logger)),
            PolyDbm::Expiring(db) => {
                let (inner, state) = db.into_parts();
                PolyDbm::Expiring(Box::new(ExpiringDbm::with_state(inner.with_update_logger(logger), state)))
            }
        }
    }

    /// The class `open` would choose for one database at `path` with
    /// `params` (see [`DbmClass::for_path`]).
    pub fn class_of(path: &Path, params: &Params) -> Result<DbmClass> {
        DbmClass::for_path(path, params)
    }

    /// The class of the database (of every shard).
    pub fn class(&self) -> DbmClass {
        match self {
            PolyDbm::One(db) => db.class(),
            PolyDbm::Shards(db) => db.class(),
            PolyDbm::Expiring(db) => db.inner().class(),
        }
    }

    /// The order of the keys of an ordered database (`None` for a hash one).
    pub fn key_order(&self) -> Result<Option<KeyComparator>> {
        match self {
            PolyDbm::One(db) => db.key_order(),
            PolyDbm::Shards(db) => Ok(db.key_order()),
            PolyDbm::Expiring(db) => db.inner().key_order(),
        }
    }

    /// Whether the database is a set of shards.
    pub fn is_sharded(&self) -> bool {
        match self {
            PolyDbm::Expiring(db) => db.inner().is_sharded(),
            db => matches!(db, PolyDbm::Shards(_)),
        }
    }

    /// Rebuilds the database with what `params` change of its tuning (see
    /// [`Dbm::rebuild_with_params`]): a class that changes none refuses every
    /// parameter by name.
    pub fn rebuild_with(&self, params: &Params) -> Result<()> {
        match self {
            PolyDbm::One(db) => db.rebuild_with(params),
            PolyDbm::Shards(db) => db.rebuild_with_params(params),
            // The layer sweeps the expired records first.
            PolyDbm::Expiring(db) => db.rebuild_with_params(params),
        }
    }

    /// Closes the database, reporting what closing it found.
    pub fn close(self) -> Result<()> {
        match self {
            PolyDbm::One(db) => db.close(),
            PolyDbm::Shards(db) => db.close(),
            PolyDbm::Expiring(db) => Dbm::close(db),
        }
    }

    /// The path of the database's file (or the shard set's name), if it has
    /// one.
    pub fn file_path(&self) -> Option<&Path> {
        match self {
            PolyDbm::One(db) => db.file_path(),
            PolyDbm::Shards(db) => Dbm::path(db),
            PolyDbm::Expiring(db) => db.inner().file_path(),
        }
    }

    /// The database itself (for a database with expiry, the layer).
    pub fn dbm(&self) -> &dyn Dbm {
        match self {
            PolyDbm::One(db) => db.dbm(),
            PolyDbm::Shards(db) => db,
            PolyDbm::Expiring(db) => &**db,
        }
    }

    /// The one database or the shard set, as a [`Dbm`].
    fn kind(&self) -> &dyn Dbm {
        match self {
            PolyDbm::One(db) => db,
            PolyDbm::Shards(db) => db,
            PolyDbm::Expiring(db) => &**db,
        }
    }
}

impl Dbm for PolyDbm {
    fn close(self: Box<Self>) -> Result<()> {
        PolyDbm::close(*self)
    }
    fn path(&self) -> Option<&Path> {
        self.kind().path()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        self.rebuild_with(params)
    }
    super::forward_dbm!(|this| this.kind());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_sets_open_by_num_shards_and_reopen_by_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.tks");
        let db = PolyDbm::open(
            &path,
            Access::ReadWrite,
            &Params::parse("num_shards=2,step_unit=2,reducer=last").unwrap(),
        )
        .unwrap();
        assert!(db.is_sharded() && db.class() == DbmClass::Skip && db.is_ordered());
        for k in ["b", "a", "c", "a"] {
            db.set(k.as_bytes(), k.as_bytes()).unwrap();
        }
        db.close().unwrap();
        assert!(!path.exists());
        let db = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
        assert_eq!(db.count().unwrap(), 3);
        let mut cursor = db.iter().unwrap();
        cursor.last().unwrap();
        assert_eq!(cursor.get().unwrap().unwrap().0, b"c");
        drop(cursor);
        db.close().unwrap();
        let kept = PolyDbm::restore(&path, dir.path().join("copy.tks"), &Params::new()).unwrap();
        assert_eq!(kept, 3);
        let err =
            PolyDbm::open(&path, Access::ReadWrite, &Params::parse("num_shards=2,max_page_size=9").unwrap())
                .err()
                .unwrap();
        assert!(err.message().contains("unknown parameter max_page_size for a skip database"), "{err}");
    }

    /// A class is its module plus one registry entry: the test-only model
    /// class, registered so, is named, opened, ordered, rebuilt and sharded
    /// through PolyDbm as the registry says, with no match on the class.
    #[test]
    fn a_class_registered_alone_opens_through_poly_dbm() {
        assert_eq!(DbmClass::from_name("ModelDBM").unwrap(), DbmClass::Model);
        assert_eq!(DbmClass::from_extension(Path::new("x.model")), Some(DbmClass::Model));
        assert!(DbmClass::all().any(|c| c == DbmClass::Model) && DbmClass::Model.is_on_memory());
        let db = PolyDbm::open("", Access::ReadWrite, &Params::parse("dbm=model").unwrap()).unwrap();
        assert_eq!((db.class(), db.is_sharded(), db.file_path()), (DbmClass::Model, false, None));
        for k in ["b", "a", "c"] {
            db.set(k.as_bytes(), b"v").unwrap();
        }
        assert_eq!((db.count().unwrap(), db.get(b"a").unwrap()), (3, Some(b"v".to_vec())));
        assert_eq!(db.key_order().unwrap(), Some(KeyComparator::Lexical));
        let err = db.rebuild_with(&Params::parse("num_buckets=3").unwrap()).unwrap_err();
        assert_eq!(err.message(), "unknown parameter num_buckets for rebuilding a model database");
        db.rebuild_with(&Params::new()).unwrap();
        db.close().unwrap();
        let err = PolyDbm::open("", Access::ReadWrite, &Params::parse("dbm=model,max_level=3").unwrap())
            .err()
            .unwrap();
        assert_eq!(err.message(), "unknown parameter max_level for a model database");
        let set =
            PolyDbm::open("", Access::ReadWrite, &Params::parse("num_shards=3,dbm=model").unwrap()).unwrap();
        assert!(set.is_sharded() && set.class() == DbmClass::Model);
        for i in 0..30 {
            set.set(format!("k{i}").as_bytes(), b"v").unwrap();
        }
        assert_eq!((set.count().unwrap(), set.key_order().unwrap()), (30, Some(KeyComparator::Lexical)));
        set.close().unwrap();
    }
}
