//! One database of one class, opened from a path and parameters: what
//! [`PolyDbm`] holds for a single file (or an on-memory database), and what
//! each shard of a [`ShardDbm`](crate::dbm::shard::ShardDbm) is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::class::DbmClass;
use super::super::params::Params;

use super::super::comparator::KeyComparator;
use super::super::params::Taker;
#[cfg(feature = "tkrzw")]
use super::super::tkrzw::ReferenceDbm;
use super::super::tkrzw::ReferenceFormat;
use super::super::Dbm;
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};
use crate::ulog::params::UlogParams;
use crate::ulog::{LoggedDbm, UpdateLogger};

/// One database of one class (a file, a file of the reference read-only,
/// or an on-memory database): [`PolyDbm::One`](super::PolyDbm::One).
/// Programs open it through [`PolyDbm`](super::PolyDbm), which documents
/// how the class is chosen.
pub struct SingleDbm {
    db: Box<dyn Dbm>,
    class: DbmClass,
    path: Option<PathBuf>,
    /// For a file of the reference, the order its reader keeps.
    reference_order: Option<Option<KeyComparator>>,
}

crate::dbm::builder::params_builder!(SingleDbm);

impl SingleDbm {
    /// Opens or creates the one database at `path` as `params` say, as
    /// [`PolyDbm::open`](super::PolyDbm::open) does when the path names no
    /// shard set.
    pub fn open(path: impl AsRef<Path>, access: Access, params: &Params) -> Result<SingleDbm> {
        let path = path.as_ref();
        if path.as_os_str().is_empty() {
            return SingleDbm::open_without_file(access, params);
        }
        // A writer that truncates discards the old contents whatever wrote
        // them, as it would any other file: it makes a kuradb database in
        // the reference's file's place.
        let truncating = access.is_writable() && params.flag("truncate")?.unwrap_or(false);
        let class = if is_reference_file(path)? {
            if !truncating {
                return SingleDbm::open_reference(path, access, params);
            }
            DbmClass::for_new_file(path, params)?
        } else {
            DbmClass::for_path(path, params)?
        };
        SingleDbm::open_class(class, Some(path), access, params)
    }

    /// What an empty path opens: the on-memory class `dbm=` names (a
    /// [`TinyDbm`](crate::dbm::tiny::TinyDbm) without it), with no file.
    fn open_without_file(access: Access, params: &Params) -> Result<SingleDbm> {
        let class = params.get("dbm").map(DbmClass::from_name).transpose()?.unwrap_or(DbmClass::Tiny);
        if !class.is_on_memory() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no such file: the path is empty, and a {} database keeps its records in a file; \
                     give a path, or dbm= an on-memory class ({}) for a database without one",
                    class.name(),
                    on_memory_names()
                ),
            ));
        }
        SingleDbm::open_class(class, None, access, params)
    }

    /// Opens a file of the reference implementation, read-only.
    #[cfg(feature = "tkrzw")]
    fn open_reference(path: &Path, access: Access, params: &Params) -> Result<SingleDbm> {
        if access.is_writable() {
            return Err(super::super::tkrzw::read_only(path));
        }
        let db = ReferenceDbm::open(path)?;
        let class = db.class();
        check_reference_params(&db, params)?;
        let reference_order = Some(db.key_order());
        Ok(SingleDbm { db: Box::new(db), class, path: Some(path.to_path_buf()), reference_order })
    }

    /// A build without the reader: an error naming the feature.
    #[cfg(not(feature = "tkrzw"))]
    fn open_reference(path: &Path, _access: Access, _params: &Params) -> Result<SingleDbm> {
        Err(super::super::tkrzw::not_built(path))
    }

    /// Opens a database of `class`: at `path`, or for an on-memory class
    /// without a path, purely in memory.
    pub fn open_class(
        class: DbmClass,
        path: Option<&Path>,
        access: Access,
        params: &Params,
    ) -> Result<SingleDbm> {
        let (params, ulog) = UlogParams::take(params)?;
        let db = class.open(path, access, &params)?;
        let db = SingleDbm { db, class, path: path.map(Path::to_path_buf), reference_order: None };
        // A reader makes no changes, so it opens no log to write them to.
        match ulog {
            Some(ulog) if access.is_writable() => {
                let queue = ulog.open_queue()?;
                Ok(db.with_update_logger(ulog.logger(&queue, 0)))
            }
            _ => Ok(db),
        }
    }

    /// The database with every change made through it told to `logger`
    /// first (see [`LoggedDbm`]); what `ulog_prefix` does at open.
    pub fn with_update_logger(self, logger: Arc<dyn UpdateLogger>) -> SingleDbm {
        SingleDbm { db: Box::new(LoggedDbm::boxed(self.db, logger)), ..self }
    }

    /// The class `open` would choose for `path` with `params` (see
    /// [`DbmClass::for_path`]).
    pub fn class_of(path: &Path, params: &Params) -> Result<DbmClass> {
        DbmClass::for_path(path, params)
    }

    /// The class of the database.
    pub fn class(&self) -> DbmClass {
        self.class
    }

    /// The order of the keys of an ordered database (`None` for a hash one).
    pub fn key_order(&self) -> Result<Option<KeyComparator>> {
        if let Some(order) = self.reference_order {
            return Ok(order);
        }
        self.class.key_order_of(self.db.as_ref())
    }

    /// Closes the database, reporting what closing it found.
    pub fn close(self) -> Result<()> {
        self.db.close()
    }

    /// Rebuilds the database with what `params` change of its tuning (see
    /// [`Dbm::rebuild_with_params`]): a class that changes none refuses every
    /// parameter by name.
    pub fn rebuild_with(&self, params: &Params) -> Result<()> {
        if self.class.has_tuned_rebuild() {
            return self.db.rebuild_with_params(params);
        }
        Taker::new(params, &format!("rebuilding {}", self.class.what())).finish()?;
        self.db.rebuild()
    }

    /// Restores the damaged or crashed database at `src` into a new one at
    /// `dest` (of the same class, tuned by `params`); answers the number of
    /// records kept (see [`DbmClass::restore`]). A file of the reference is
    /// salvaged (see [`ReferenceDbm::open_salvaging`]) into a kuradb
    /// database of the matching class.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, params: &Params) -> Result<u64> {
        let src = src.as_ref();
        if is_reference_file(src)? {
            #[cfg(feature = "tkrzw")]
            return ReferenceDbm::open_salvaging(src)?.convert(dest.as_ref(), params, &mut |_| ());
            #[cfg(not(feature = "tkrzw"))]
            return Err(super::super::tkrzw::not_built(src));
        }
        DbmClass::for_path(src, params)?.restore(src, dest.as_ref(), params)
    }

    /// The path of the database's file, if it has one.
    pub fn file_path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The database itself.
    pub fn dbm(&self) -> &dyn Dbm {
        self.db.as_ref()
    }
}

/// The on-memory classes' names, as messages list them.
fn on_memory_names() -> String {
    DbmClass::all().filter(|c| c.is_on_memory()).map(DbmClass::name).collect::<Vec<_>>().join(", ")
}

/// Whether `path` is a non-empty file the reference implementation wrote.
fn is_reference_file(path: &Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() > 0 => Ok(ReferenceFormat::of_file(path)?.is_some()),
        _ => Ok(false),
    }
}

/// Checks the parameters given to open a reference file: `dbm=` must name
/// its class; the file and locking parameters are taken and have no effect,
/// since the reader reads the file whole at open and keeps no handle; any
/// other is refused by name.
#[cfg(feature = "tkrzw")]
fn check_reference_params(db: &ReferenceDbm, params: &Params) -> Result<()> {
    let mut t = Taker::new(params, "a file of the reference implementation, opened read-only");
    if let Some((_, name)) = t.take(&["dbm"]) {
        let named = DbmClass::from_name(name)?;
        let fits = named == db.class() || (named.is_on_memory() && db.class().is_on_memory());
        if !fits {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} holds a {} database of the reference, not a {} one",
                    db.path().map(|p| p.display().to_string()).unwrap_or_default(),
                    db.reference_class(),
                    named.name()
                ),
            ));
        }
    }
    t.file_and_open()?;
    t.finish()
}

impl Dbm for SingleDbm {
    fn close(self: Box<Self>) -> Result<()> {
        SingleDbm::close(*self)
    }
    fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        self.rebuild_with(params)
    }
    super::super::forward_dbm!(|this| this.db.as_ref());
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::dbm::Durability;
    use crate::error::ErrorKind;

    #[test]
    fn classes_come_from_headers_whatever_the_name() {
        let dir = tempfile::tempdir().unwrap();
        // A reference file is recognised by its magic: a truncated one is
        // an error naming the problem, and writing to a whole one is refused.
        let tkrzw = dir.path().join("old.tkh");
        std::fs::write(&tkrzw, b"TkrzwHDB\n\x01\x02\x03\x04\x05\x06\x07").unwrap();
        #[cfg(feature = "tkrzw")]
        reference_files_are_read(dir.path(), &tkrzw);
        #[cfg(not(feature = "tkrzw"))]
        for access in [Access::ReadOnly, Access::ReadWrite] {
            // Without the reader, still told by its magic, and refused by name.
            let err = SingleDbm::open(&tkrzw, access, &Params::new()).err().unwrap();
            assert_eq!(err.kind(), ErrorKind::NotImplemented);
            assert!(err.message().contains("Cargo feature `tkrzw`"), "{err}");
        }
        let junk = dir.path().join("junk.tkh");
        std::fs::write(&junk, b"hello, world, this is not a database").unwrap();
        assert_eq!(
            SingleDbm::open(&junk, Access::ReadOnly, &Params::new()).err().unwrap().kind(),
            ErrorKind::BrokenData
        );
        let err = SingleDbm::open(dir.path().join("noext"), Access::ReadWrite, &Params::new()).err().unwrap();
        assert!(err.message().contains("give dbm=CLASS (one of hash, tree, skip"), "{err}");
        for (class, name) in [
            (DbmClass::Hash, "h.dat"),
            (DbmClass::Tree, "t.dat"),
            (DbmClass::Skip, "s.dat"),
            (DbmClass::Tiny, "m.dat"),
        ] {
            let path = dir.path().join(name);
            let params = Params::parse(&format!("dbm={}", class.name())).unwrap();
            let db = SingleDbm::open(&path, Access::ReadWrite, &params).unwrap();
            db.set(b"k", b"v").unwrap();
            db.close().unwrap();
            assert_eq!(DbmClass::of_file(&path).unwrap(), Some(class));
            let db = SingleDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
            assert_eq!((db.class(), db.get(b"k").unwrap()), (class, Some(b"v".to_vec())));
            db.close().unwrap();
            let other = if class == DbmClass::Hash { "tree" } else { "hash" };
            let err =
                SingleDbm::open(&path, Access::ReadOnly, &Params::parse(&format!("dbm={other}")).unwrap())
                    .err()
                    .unwrap();
            assert!(err.message().contains(&format!("not a {other} one")), "{err}");
        }
    }

    /// The reference's files through SingleDbm: a cut one is an error naming
    /// the problem, a whole one is read, and writing to it is refused.
    #[cfg(feature = "tkrzw")]
    fn reference_files_are_read(dir: &Path, tkrzw: &Path) {
        let err = SingleDbm::open(tkrzw, Access::ReadOnly, &Params::new()).err().unwrap();
        assert_eq!(err.kind(), ErrorKind::BrokenData);
        assert!(
            err.message().contains("HashDBM file of the reference") && err.message().contains("cut short")
        );
        let err = SingleDbm::open(tkrzw, Access::ReadWrite, &Params::new()).err().unwrap();
        assert!(err.message().contains("opened read-only") && err.message().contains("kura util convert"));
        let flat = dir.join("old.flat");
        std::fs::write(&flat, b"\xff\x01k\xff\x01v").unwrap();
        let db = SingleDbm::open(&flat, Access::ReadOnly, &Params::parse("no_wait=true").unwrap()).unwrap();
        assert_eq!((db.class(), db.get(b"k").unwrap()), (DbmClass::Tiny, Some(b"v".to_vec())));
        assert!(db.set(b"k", b"w").unwrap_err().message().contains("kura util convert"));
        db.close().unwrap();
        let err =
            SingleDbm::open(&flat, Access::ReadOnly, &Params::parse("dbm=hash").unwrap()).err().unwrap();
        assert!(err.message().contains("not a hash one"), "{err}");
        assert!(SingleDbm::open(&flat, Access::ReadOnly, &Params::parse("num_buckets=3").unwrap()).is_err());
    }

    #[test]
    fn parameters_are_checked_against_the_class() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str, params: &str| {
            SingleDbm::open(dir.path().join(name), Access::ReadWrite, &Params::parse(params).unwrap())
        };
        let err = open("a.tkh", "max_page_size=100,step_unit=3").err().unwrap();
        assert_eq!(err.message(), "unknown parameters max_page_size, step_unit for a hash database");
        let err = open("a.tkt", "num_buckets=many").err().unwrap();
        assert!(err.message().contains("num_buckets must be a number, not \"many\""), "{err}");
        let err = open("a.tks", "insert_in_order=maybe").err().unwrap();
        assert!(err.message().contains("insert_in_order must be true or false"), "{err}");
        let err = open("a.tkh", "update_mode=sideways").err().unwrap();
        assert!(err.message().contains("update_mode must be in_place or appending"), "{err}");
        let err = open("a.tkh", "file=floppy").err().unwrap();
        assert!(err.message().contains("floppy"), "{err}");
        let db =
            open("b.tkh", "num_buckets=11,update_mode=UPDATE_APPENDING,file=pos-atom,no_wait=true").unwrap();
        let inspect: BTreeMap<String, String> = db.inspect().unwrap().into_iter().collect();
        assert_eq!(inspect.get("num_buckets").map(String::as_str), Some("11"), "{inspect:?}");
        db.set(b"a", b"1").unwrap();
        db.rebuild_with(&Params::parse("num_buckets=101").unwrap()).unwrap();
        assert!(db.rebuild_with(&Params::parse("step_unit=2").unwrap()).is_err());
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        db.close().unwrap();
        let db = open("c.tks", "step_unit=2,max_level=3,reducer=last").unwrap();
        db.set(b"a", b"1").unwrap();
        db.set(b"a", b"2").unwrap();
        db.close().unwrap();
        let db = open("c.tks", "").unwrap();
        assert_eq!((db.count().unwrap(), db.get(b"a").unwrap()), (1, Some(b"2".to_vec())));
        db.close().unwrap();
    }

    #[test]
    fn on_memory_classes_share_the_flat_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.tkmb");
        let db = SingleDbm::open(
            &path,
            Access::ReadWrite,
            &Params::parse("key_comparator=decimal,max_page_size=64").unwrap(),
        )
        .unwrap();
        assert_eq!(db.class(), DbmClass::Baby);
        for n in [10, 9, 100] {
            db.set(n.to_string().as_bytes(), b"v").unwrap();
        }
        assert_eq!(db.key_order().unwrap(), Some(KeyComparator::Decimal));
        db.close().unwrap();
        // The same flat file, read as each on-memory class by dbm=.
        for class in ["tiny", "baby", "cache", "stdhash", "stdtree"] {
            let db =
                SingleDbm::open(&path, Access::ReadOnly, &Params::parse(&format!("dbm={class}")).unwrap())
                    .unwrap();
            assert_eq!((db.class().name(), db.count().unwrap()), (class, 3));
            db.close().unwrap();
        }
        let err =
            SingleDbm::open(&path, Access::ReadOnly, &Params::parse("dbm=hash").unwrap()).err().unwrap();
        assert!(err.message().contains("not a hash one"), "{err}");
        let err = SingleDbm::open(
            dir.path().join("c.tkmc"),
            Access::ReadWrite,
            &Params::parse("cap_rec_num=x").unwrap(),
        )
        .err()
        .unwrap();
        assert!(err.message().contains("cap_rec_num must be a number"), "{err}");
        let copied = SingleDbm::restore(&path, dir.path().join("copy.tkst"), &Params::new()).unwrap();
        assert_eq!(copied, 3);
    }

    /// The figure `name` of the database's inspection.
    fn figure(db: &SingleDbm, name: &str) -> String {
        db.inspect().unwrap().into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap_or_default()
    }

    #[test]
    fn rebuilds_take_the_tuning_of_the_on_memory_and_skip_classes() {
        let dir = tempfile::tempdir().unwrap();
        let p = |s: &str| Params::parse(s).unwrap();
        let tiny =
            SingleDbm::open(dir.path().join("a.tkmt"), Access::ReadWrite, &p("num_buckets=16")).unwrap();
        for i in 0..10u32 {
            tiny.set(&i.to_be_bytes(), b"v").unwrap();
        }
        tiny.rebuild_with(&p("num_buckets=100000")).unwrap();
        let buckets: u64 = figure(&tiny, "num_buckets").parse().unwrap();
        assert!(buckets >= 65_536, "{buckets}");
        tiny.rebuild_with(&p("num_buckets=16")).unwrap();
        let buckets: u64 = figure(&tiny, "num_buckets").parse().unwrap();
        assert!(buckets < 1024, "{buckets}");
        assert_eq!(tiny.count().unwrap(), 10);
        let err = tiny.rebuild_with(&p("num_buckets=lots")).unwrap_err();
        assert!(err.message().contains("num_buckets must be a number"), "{err}");
        let err = tiny.rebuild_with(&p("cap_rec_num=3")).unwrap_err();
        assert_eq!(err.message(), "unknown parameter cap_rec_num for rebuilding a tiny database");

        let cache = SingleDbm::open("", Access::ReadWrite, &p("dbm=cache,cap_rec_num=100")).unwrap();
        for i in 0..50u32 {
            cache.set(&i.to_be_bytes(), b"v").unwrap();
        }
        cache.get(&0u32.to_be_bytes()).unwrap();
        cache.rebuild_with(&p("cap_rec_num=10")).unwrap();
        assert_eq!(cache.count().unwrap(), 10);
        assert_eq!(figure(&cache, "cap_rec_num"), "10");
        // The most recently used stay: the one read and the last nine set.
        assert!(cache.get(&0u32.to_be_bytes()).unwrap().is_some());
        assert!(cache.get(&49u32.to_be_bytes()).unwrap().is_some());
        assert!(cache.get(&20u32.to_be_bytes()).unwrap().is_none());
        for i in 100..120u32 {
            cache.set(&i.to_be_bytes(), b"v").unwrap();
        }
        assert_eq!(cache.count().unwrap(), 10);
        cache.rebuild_with(&p("cap_mem_size=1")).unwrap();
        assert_eq!((cache.count().unwrap(), figure(&cache, "cap_mem_size").as_str()), (1, "1"));
        let err = cache.rebuild_with(&p("cap_rec_num=0")).unwrap_err();
        assert!(err.message().contains("cap_rec_num must be at least 1"), "{err}");
        assert_eq!(figure(&cache, "cap_rec_num"), "10");

        let std_hash = SingleDbm::open("", Access::ReadWrite, &p("dbm=stdhash,num_buckets=0")).unwrap();
        std_hash.set(b"a", b"1").unwrap();
        std_hash.rebuild_with(&p("num_buckets=5000")).unwrap();
        let size: u64 = figure(&std_hash, "mem_size").parse().unwrap();
        assert!(size > 5000, "{size}");
        assert_eq!(std_hash.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        let std_tree = SingleDbm::open("", Access::ReadWrite, &p("dbm=stdtree")).unwrap();
        let err = std_tree.rebuild_with(&p("num_buckets=5")).unwrap_err();
        assert!(err.message().contains("unknown parameter num_buckets"), "{err}");

        let path = dir.path().join("s.tks");
        let skip = SingleDbm::open(&path, Access::ReadWrite, &Params::new()).unwrap();
        for i in 0..200u32 {
            skip.set(format!("{i:04}").as_bytes(), b"v").unwrap();
        }
        skip.synchronize(Durability::Soft).unwrap();
        let tuning = "step_unit=3,max_level=5,offset_width=4,max_cached_records=7,sort_mem_size=100";
        skip.rebuild_with(&p(tuning)).unwrap();
        let figures = ["step_unit", "max_level", "offset_width"].map(|n| figure(&skip, n));
        assert_eq!(figures, ["3", "5", "4"]);
        let cached: u64 = figure(&skip, "cached_records").parse().unwrap();
        assert!(cached <= 7, "{cached}");
        // A small sort_mem_size spills the next updates to a sort file.
        for i in 200..260u32 {
            skip.set(format!("{i:04}").as_bytes(), b"v").unwrap();
        }
        assert_ne!(figure(&skip, "sort_files"), "0");
        skip.synchronize(Durability::Soft).unwrap();
        assert_eq!(figure(&skip, "step_unit"), "3");
        assert_eq!(skip.count().unwrap(), 260);
        assert_eq!(skip.get(b"0150").unwrap().as_deref(), Some(&b"v"[..]));
        let err = skip.rebuild_with(&p("step_unit=1")).unwrap_err();
        assert!(err.message().contains("step_unit must be at least 2"), "{err}");
        assert_eq!(figure(&skip, "step_unit"), "3");
        skip.close().unwrap();
        let skip = SingleDbm::open(&path, Access::ReadWrite, &Params::new()).unwrap();
        assert_eq!((figure(&skip, "max_level"), skip.count().unwrap()), ("5".to_string(), 260));
        skip.close().unwrap();
    }
}
