//! The databases a server serves, numbered as `SELECT` numbers them, opened
//! from `PATH#params` specs, each wrapped for transactions (MULTI/EXEC) once
//! its update log is attached, and closed cleanly at shutdown. A published
//! directory's database is [`Served::Swapped`]: `crate::published` puts a
//! new version in its place while the server runs.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;

use kuradb::dbm::comparator::KeyComparator;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::poly::{DbmClass, Params};
use kuradb::dbm::txn::{TransactionOptions, TransactionalDbm};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::{Error, ErrorKind, Result};

use crate::expiry::{off_at_open, DbExpiry};

/// A served database: the PolyDbm opened, with transactions. Plain calls go
/// straight through while no transaction, EXEC or WATCH is open; the
/// PolyDbm's own calls (prefetch) through `.inner()`.
pub type Db = TransactionalDbm<PolyDbm>;

/// A database as the server holds it: the same one for the server's life,
/// or, for a published directory, the version served now, which a newer
/// one replaces. A request takes it once ([`Served::load`]) and keeps what
/// it took to its end, so it reads one version throughout; a replaced
/// version is closed when the last request that took it is done.
pub enum Served<T> {
    /// Opened at start, closed at shutdown.
    Fixed(Arc<T>),
    /// A published directory's version served now.
    Swapped(ArcSwap<T>),
}

/// What [`Served::load`] took: a borrow of a fixed database, or a hold on
/// the version served when it was taken.
pub enum Current<'a, T> {
    /// A fixed database.
    Fixed(&'a Arc<T>),
    /// A version of a published directory.
    Swapped(arc_swap::Guard<Arc<T>>),
}

impl<T> Deref for Current<'_, T> {
    type Target = Arc<T>;

    fn deref(&self) -> &Arc<T> {
        match self {
            Current::Fixed(db) => db,
            Current::Swapped(guard) => guard,
        }
    }
}

impl<T> Served<T> {
    /// The database now, for one request: a fixed one is only borrowed, so
    /// the path of every database that is not published stays as it was.
    pub fn load(&self) -> Current<'_, T> {
        match self {
            Served::Fixed(db) => Current::Fixed(db),
            Served::Swapped(cell) => Current::Swapped(cell.load()),
        }
    }

    /// The database now, held for longer than a request (a background save,
    /// a transaction's watch).
    pub fn load_full(&self) -> Arc<T> {
        match self {
            Served::Fixed(db) => Arc::clone(db),
            Served::Swapped(cell) => cell.load_full(),
        }
    }

    /// Puts `db` in place of the version served; answers the one replaced.
    /// A fixed database is never replaced: it answers `db` back.
    pub fn swap(&self, db: Arc<T>) -> Arc<T> {
        match self {
            Served::Fixed(_) => db,
            Served::Swapped(cell) => cell.swap(db),
        }
    }

    /// The database, no longer served.
    pub fn into_inner(self) -> Arc<T> {
        match self {
            Served::Fixed(db) => db,
            Served::Swapped(cell) => cell.into_inner(),
        }
    }
}

/// One served database: `Database<PolyDbm>` as opened, `Database` (of
/// [`Db`]) once wrapped for transactions by [`transactional`].
pub struct Database<T = Db> {
    /// The database itself: take it with [`Served::load`] once per request.
    pub db: Served<T>,
    /// The spec it was opened from, for INFO and logs.
    pub spec: String,
    /// Whether its keys are ordered (range scans and key-resumed SCAN).
    pub ordered: bool,
    /// The order of its keys, for an ordered database.
    pub order: KeyComparator,
    /// Whether a call on a few keys is short enough to run in place on a
    /// reactor thread: the database is on memory, or its file is read and
    /// written through the OS page cache (no direct or synchronous I/O).
    pub fast: bool,
    /// For a published directory served read-only: where it is and which
    /// version is served (`crate::published`).
    pub published: Option<Arc<crate::published::Published>>,
    /// Whether it has expiry (the database is kept as stored; commands
    /// see it through the expiry layer: `crate::expiry`).
    pub expiry: DbExpiry,
}

/// Parses `PATH#name=value,...` into the path and PolyDbm parameters. The
/// split is at the last `#`, so a path may hold `#` when parameters follow;
/// an empty path (`#dbm=baby`) is an on-memory database of the class `dbm=`
/// names.
pub fn parse_spec(spec: &str) -> Result<(String, Params)> {
    let (path, params) = spec.rsplit_once('#').unwrap_or((spec, ""));
    let params = Params::parse(params)
        .map_err(|e| Error::new(e.kind(), format!("database {spec:?}: {}", e.message())))?;
    Ok((path.to_string(), params))
}

/// Opens the database `spec` names, writable unless `read_only`.
pub fn open(spec: &str, read_only: bool) -> Result<Database<PolyDbm>> {
    let (path, params) = parse_spec(spec)?;
    let in_spec = |e: Error| Error::new(e.kind(), format!("database {spec:?}: {}", e.message()));
    let access = if read_only { Access::ReadOnly } else { Access::ReadWrite };
    let db = if path.is_empty() {
        let Some(name) = params.get("dbm") else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "database {spec:?}: give a path, or dbm= naming an on-memory class (baby, cache, ...)"
                ),
            ));
        };
        let class = DbmClass::from_name(name).map_err(in_spec)?;
        PolyDbm::open_class(class, None, access, &params.without("dbm")).map_err(in_spec)?
    } else if !read_only && kuradb::dbm::published::is_published(Path::new(&path)) {
        // The library's refusal speaks of PublishJob; a server's user needs the flag.
        return Err(Error::new(
            ErrorKind::ReadOnly,
            format!(
                "database {spec:?} is a published directory, whose versions are immutable: \
                 serve it with --read_only"
            ),
        ));
    } else {
        PolyDbm::open(Path::new(&path), access, &params).map_err(in_spec)?
    };
    // Kept as stored: the server lays the expiry layer over each command's view.
    let (db, state) = db.into_stored().map_err(in_spec)?;
    let expiry = DbExpiry::new(state, off_at_open(spec, read_only));
    let ordered = db.is_ordered();
    let order = db.key_order().map_err(in_spec)?.unwrap_or(KeyComparator::Lexical);
    let fast = through_page_cache(&params);
    let published = match crate::published::Published::of(&path, params, &db) {
        Ok(published) => published.map(Arc::new),
        Err(e) => {
            let _ = db.close();
            return Err(in_spec(e));
        }
    };
    let db = Served::Fixed(Arc::new(db));
    Ok(Database { db, spec: spec.to_string(), ordered, order, fast, published, expiry })
}

/// Wraps each database of `opened` for transactions, its commit log beside
/// its file (the path plus `.txlog`; none on memory), applying what a crash
/// left in that log. After the update logs are attached, so that what a
/// log applies at opening reaches the replicas too. On an error, every
/// database is closed.
pub fn transactional(opened: Vec<Database<PolyDbm>>, read_only: bool) -> Result<Vec<Database>> {
    let mut done: Vec<Database> = Vec::with_capacity(opened.len());
    let mut rest = opened.into_iter();
    while let Some(Database { db, spec, ordered, order, fast, published, expiry }) = rest.next() {
        let wrapped = match Arc::try_unwrap(db.into_inner()) {
            Ok(poly) => wrap(poly, read_only)
                .map_err(|e| Error::new(e.kind(), format!("database {spec:?}: {}", e.message()))),
            Err(_) => Err(Error::new(
                ErrorKind::Infeasible,
                format!("database {spec:?} was in use while it was wrapped for transactions"),
            )),
        };
        match wrapped {
            Ok(db) => {
                let db = match published {
                    Some(_) => Served::Swapped(ArcSwap::from_pointee(db)),
                    None => Served::Fixed(Arc::new(db)),
                };
                done.push(Database { db, spec, ordered, order, fast, published, expiry })
            }
            Err(e) => {
                let _ = close_all(done);
                let _ = close_all(rest.collect());
                return Err(e);
            }
        }
    }
    Ok(done)
}

/// Wraps `poly` for transactions; on an error, `poly` is closed.
pub fn wrap(poly: PolyDbm, read_only: bool) -> Result<Db> {
    let mut options = match TransactionOptions::for_poly(&poly) {
        Ok(options) => options,
        Err(e) => {
            let _ = poly.close();
            return Err(e);
        }
    };
    options.access = if read_only { Access::ReadOnly } else { Access::ReadWrite };
    TransactionalDbm::open(poly, options)
}

/// Whether the file options in `params` leave I/O to the OS page cache:
/// neither direct (`O_DIRECT`) nor synchronous (`O_SYNC`) access, where
/// each call may wait for the device.
fn through_page_cache(params: &Params) -> bool {
    let mut file = FileSpec::default();
    for (name, value) in params.iter() {
        // The database opened with these: an error here cannot happen, and
        // would only make the database "not fast".
        if file.set(name, value).is_err() {
            return false;
        }
    }
    !file.direct && !file.sync
}

/// Synchronizes and closes every database, reporting the first failure
/// after trying them all. Each must no longer be shared (the scan cursors
/// are dropped first).
pub fn close_all<T: Dbm + 'static>(databases: Vec<Database<T>>) -> Result<()> {
    let mut first = Ok(());
    for database in databases {
        let outcome = match Arc::try_unwrap(database.db.into_inner()) {
            Ok(db) => db.synchronize(Durability::Soft).and_then(|()| Box::new(db).close()),
            Err(_) => Err(Error::new(
                ErrorKind::Infeasible,
                format!("database {:?} is still in use at shutdown; it was not closed", database.spec),
            )),
        };
        if let Err(e) = outcome {
            log::error!("closing {}: {e}", database.spec);
            if first.is_ok() {
                first = Err(e);
            }
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_spec_at_the_last_hash() {
        let (path, params) = parse_spec("/tmp/a#b.tkh#num_buckets=10,file=pos-para").unwrap();
        assert_eq!(path, "/tmp/a#b.tkh");
        assert_eq!(params.get("num_buckets"), Some("10"));
        let (path, params) = parse_spec("casket.tkt").unwrap();
        assert_eq!(path, "casket.tkt");
        assert_eq!(params.iter().count(), 0);
        assert!(parse_spec("x.tkh#oops").is_err());
    }

    #[test]
    fn direct_and_synchronous_io_are_not_fast() {
        let fast = |spec: &str| through_page_cache(&parse_spec(spec).unwrap().1);
        assert!(fast("a.tkh#file=mmap-para,num_buckets=10"));
        assert!(fast("a.tkh#file=pos-para,access=padding"));
        assert!(!fast("a.tkh#file=pos-para,block_size=512,access=direct"));
        assert!(!fast("a.tkh#file=pos-para,access=sync"));
    }

    #[test]
    fn opens_on_memory_databases_by_class() {
        let db = open("#dbm=baby", false).unwrap();
        assert!(db.ordered && db.fast);
        assert!(open("#num_buckets=3", false).is_err());
    }
}
