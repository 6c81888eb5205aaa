//! The one list of database classes, the class registry: their names, the
//! extensions that choose them, which parameters each takes, how to open or
//! restore one, the order of its keys and whether its rebuild takes tuning.
//! Every tool and binding opens databases through [`DbmClass`] (or
//! [`PolyDbm`](super::poly::PolyDbm), which asks it each of these facts), so
//! a new class is its own module plus one variant of [`DbmClass`] and one
//! entry in the registry below; nothing else in this crate matches on the
//! class (the test-only `DbmClass::Model` is added just so).
//!
//! Two facts are not in the entry yet. A class that writes a file of its
//! own adds its header's sniff to [`DbmClass::of_file`], where the sniffs
//! run in a fixed order. And `kura`'s per-class tuning flags are written
//! per class in the CLI, not read from here.

use std::path::Path;

use super::baby::{BabyDbm, BabyOptions};
use super::cache::{CacheDbm, CacheOptions};
use super::comparator::KeyComparator;
use super::hash::{HashDbm, HashOptions, Kind};
use super::params::{Params, Taker};
use super::skip::{SkipDbm, SkipOptions};
use super::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use super::tiny::{TinyDbm, TinyOptions};
use super::tree::{TreeDbm, TreeOptions};
use super::{flat, Dbm};
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};

/// A class of database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DbmClass {
    /// [`HashDbm`].
    Hash,
    /// [`TreeDbm`].
    Tree,
    /// [`SkipDbm`].
    Skip,
    /// [`TinyDbm`], on memory.
    Tiny,
    /// [`BabyDbm`], on memory.
    Baby,
    /// [`CacheDbm`], on memory.
    Cache,
    /// [`StdHashDbm`], on memory.
    StdHash,
    /// [`StdTreeDbm`], on memory.
    StdTree,
    /// A test-only class over a `BTreeMap`: it shows that a class is its
    /// module plus its registry entry.
    #[cfg(test)]
    Model,
}

/// What the registry knows of a class besides its code.
struct Entry {
    class: DbmClass,
    /// The short name (`dbm=hash`, `--dbm hash`).
    name: &'static str,
    /// The reference's class name, accepted as a name too.
    reference: &'static str,
    /// The extensions that choose the class for a new file, kuradb's and the
    /// reference's.
    extensions: &'static [&'static str],
    on_memory: bool,
    /// What a refusal of a parameter says it was for: "a hash database".
    what: &'static str,
    /// The order of the keys.
    order: Order,
    /// Whether a rebuild takes tuning parameters
    /// ([`Dbm::rebuild_with_params`]); a class without refuses every
    /// parameter by name.
    tuned_rebuild: bool,
    /// Whether updates show to readers only at the next synchronization
    /// (the skip database sorts and merges them then).
    updates_at_sync: bool,
    /// Whether a file's first bytes ([`HEAD_SIZE`] at most) are a file of
    /// the class; `None` for a class with no file of its own. The first
    /// class that claims a head owns the file (the on-memory classes share
    /// the flat file: tiny, the first of them, claims it).
    sniff: Option<fn(&[u8]) -> bool>,
    /// Reads the class's options from parameters.
    options: fn(&mut Taker<'_>) -> Result<Box<dyn ClassOptions>>,
}

/// The order of a class's keys.
#[derive(Clone, Copy)]
enum Order {
    /// No order: a hash database.
    Hashed,
    /// Byte-wise.
    Lexical,
    /// The comparator the database's `inspect` names (`key_comparator`),
    /// byte-wise without one.
    Inspected,
}

/// A class's options, read from parameters: how to open and restore a
/// database of the class.
pub(crate) trait ClassOptions {
    /// Opens a database: at `path`, or without one purely in memory (an
    /// error for a class that keeps its records in a file).
    fn open(&self, class: DbmClass, path: Option<&Path>, access: Access) -> Result<Box<dyn Dbm>>;

    /// Restores the class's damaged file at `src` into `dest`, keeping what
    /// its own recovery finds; `None` for a class whose file is whole or
    /// refused, whose restore is a copy of what reading finds.
    fn restore(&self, _src: &Path, _dest: &Path) -> Option<Result<u64>> {
        None
    }

    /// Restores the file at `src` into `dest` as it was at `end` bytes (a
    /// point-in-time restore); `None` for a class that has none.
    fn restore_to_offset(&self, _src: &Path, _dest: &Path, _end: u64) -> Option<Result<u64>> {
        None
    }
}

/// The error for a file class opened without a path.
fn needs_path(class: DbmClass) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("the {} database keeps its records in a file: give its path", class.name()),
    )
}

impl ClassOptions for HashOptions {
    fn open(&self, class: DbmClass, path: Option<&Path>, access: Access) -> Result<Box<dyn Dbm>> {
        Ok(Box::new(HashDbm::open(path.ok_or_else(|| needs_path(class))?, access, self)?))
    }
    fn restore(&self, src: &Path, dest: &Path) -> Option<Result<u64>> {
        Some(HashDbm::restore(src, dest, self))
    }
    fn restore_to_offset(&self, src: &Path, dest: &Path, end: u64) -> Option<Result<u64>> {
        Some(HashDbm::restore_to_offset(src, dest, self, end))
    }
}

impl ClassOptions for TreeOptions {
    fn open(&self, class: DbmClass, path: Option<&Path>, access: Access) -> Result<Box<dyn Dbm>> {
        Ok(Box::new(TreeDbm::open(path.ok_or_else(|| needs_path(class))?, access, self)?))
    }
    fn restore(&self, src: &Path, dest: &Path) -> Option<Result<u64>> {
        Some(TreeDbm::restore(src, dest, self))
    }
}

impl ClassOptions for SkipOptions {
    fn open(&self, class: DbmClass, path: Option<&Path>, access: Access) -> Result<Box<dyn Dbm>> {
        Ok(Box::new(SkipDbm::open(path.ok_or_else(|| needs_path(class))?, access, self)?))
    }
    fn restore(&self, src: &Path, dest: &Path) -> Option<Result<u64>> {
        Some(SkipDbm::restore(src, dest, self))
    }
}

/// The options of an on-memory class, whose database opens a flat file or
/// starts empty without one.
macro_rules! on_memory_options {
    ($options:ty, $dbm:ty, $new:expr) => {
        impl ClassOptions for $options {
            fn open(&self, _: DbmClass, path: Option<&Path>, access: Access) -> Result<Box<dyn Dbm>> {
                Ok(match path {
                    Some(p) => Box::new(<$dbm>::open(p, access, self)?),
                    None => Box::new($new(self)?),
                })
            }
        }
    };
}

on_memory_options!(TinyOptions, TinyDbm, |o| Ok::<_, Error>(TinyDbm::new(o)));
on_memory_options!(BabyOptions, BabyDbm, BabyDbm::new);
on_memory_options!(CacheOptions, CacheDbm, CacheDbm::new);

/// The options of [`StdHashDbm`] (`hashed`) or [`StdTreeDbm`].
struct StdClassOptions {
    options: StdOptions,
    hashed: bool,
}

impl ClassOptions for StdClassOptions {
    fn open(&self, _: DbmClass, path: Option<&Path>, access: Access) -> Result<Box<dyn Dbm>> {
        let o = &self.options;
        Ok(match (self.hashed, path) {
            (true, Some(p)) => Box::new(StdHashDbm::open(p, access, o)?),
            (true, None) => Box::new(StdHashDbm::new(o)),
            (false, Some(p)) => Box::new(StdTreeDbm::open(p, access, o)?),
            (false, None) => Box::new(StdTreeDbm::new(o)),
        })
    }
}

/// Reads options of type `O` with its `take_params`.
macro_rules! take {
    ($options:ty) => {
        |t| Ok(Box::new(<$options>::default().take_params(t)?))
    };
}

const CLASSES: &[Entry] = &[
    Entry {
        class: DbmClass::Hash,
        name: "hash",
        reference: "HashDBM",
        extensions: &["kh", "hash", "tkh"],
        on_memory: false,
        what: "a hash database",
        order: Order::Hashed,
        tuned_rebuild: true,
        updates_at_sync: false,
        sniff: Some(|head| super::hash::sniff(head) == Some(Kind::Hash)),
        options: take!(HashOptions),
    },
    Entry {
        class: DbmClass::Tree,
        name: "tree",
        reference: "TreeDBM",
        extensions: &["kt", "tree", "tkt"],
        on_memory: false,
        what: "a tree database",
        order: Order::Inspected,
        tuned_rebuild: true,
        updates_at_sync: false,
        sniff: Some(|head| super::hash::sniff(head) == Some(Kind::TreeNodes)),
        options: take!(TreeOptions),
    },
    Entry {
        class: DbmClass::Skip,
        name: "skip",
        reference: "SkipDBM",
        extensions: &["ks", "skip", "tks"],
        on_memory: false,
        what: "a skip database",
        order: Order::Lexical,
        tuned_rebuild: true,
        updates_at_sync: true,
        sniff: Some(super::skip::sniff),
        options: take!(SkipOptions),
    },
    Entry {
        class: DbmClass::Tiny,
        name: "tiny",
        reference: "TinyDBM",
        extensions: &["flat", "tiny", "tkmt"],
        on_memory: true,
        what: "a tiny database",
        order: Order::Hashed,
        tuned_rebuild: true,
        updates_at_sync: false,
        sniff: Some(flat::sniff),
        options: take!(TinyOptions),
    },
    Entry {
        class: DbmClass::Baby,
        name: "baby",
        reference: "BabyDBM",
        extensions: &["baby", "tkmb"],
        on_memory: true,
        what: "a baby database",
        order: Order::Inspected,
        tuned_rebuild: false,
        updates_at_sync: false,
        sniff: None,
        options: take!(BabyOptions),
    },
    Entry {
        class: DbmClass::Cache,
        name: "cache",
        reference: "CacheDBM",
        extensions: &["cache", "tkmc"],
        on_memory: true,
        what: "a cache database",
        order: Order::Hashed,
        tuned_rebuild: true,
        updates_at_sync: false,
        sniff: None,
        options: take!(CacheOptions),
    },
    Entry {
        class: DbmClass::StdHash,
        name: "stdhash",
        reference: "StdHashDBM",
        extensions: &["stdhash", "tksh"],
        on_memory: true,
        what: "a stdhash database",
        order: Order::Hashed,
        tuned_rebuild: true,
        updates_at_sync: false,
        sniff: None,
        options: |t| {
            Ok(Box::new(StdClassOptions {
                options: StdOptions::default().take_params(t, true)?,
                hashed: true,
            }))
        },
    },
    Entry {
        class: DbmClass::StdTree,
        name: "stdtree",
        reference: "StdTreeDBM",
        extensions: &["stdtree", "tkst"],
        on_memory: true,
        what: "a stdtree database",
        order: Order::Lexical,
        tuned_rebuild: false,
        // An ordered set has no buckets.
        updates_at_sync: false,
        sniff: None,
        options: |t| {
            Ok(Box::new(StdClassOptions {
                options: StdOptions::default().take_params(t, false)?,
                hashed: false,
            }))
        },
    },
    #[cfg(test)]
    Entry {
        class: DbmClass::Model,
        name: "model",
        reference: "ModelDBM",
        extensions: &["model"],
        on_memory: true,
        what: "a model database",
        order: Order::Lexical,
        tuned_rebuild: false,
        updates_at_sync: false,
        sniff: None,
        options: super::model::take_options,
    },
];

/// How many bytes of a file's head the classes' sniffs need.
const HEAD_SIZE: usize = 16;

impl DbmClass {
    fn entry(self) -> &'static Entry {
        CLASSES.iter().find(|e| e.class == self).expect("every class has an entry")
    }

    /// Every class, in the order the help lists them.
    pub fn all() -> impl Iterator<Item = DbmClass> {
        CLASSES.iter().map(|e| e.class)
    }

    /// The short name (`hash`, `tree`, `skip`, …).
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// The reference's name of the class (`HashDBM`, …).
    pub fn reference_name(self) -> &'static str {
        self.entry().reference
    }

    /// The extensions that choose the class for a new file, kuradb's first.
    pub fn extensions(self) -> &'static [&'static str] {
        self.entry().extensions
    }

    /// Whether the class keeps its records in memory (and its file, if it
    /// has one, is a flat file any of these classes reads).
    pub fn is_on_memory(self) -> bool {
        self.entry().on_memory
    }

    /// Whether updates show to readers only at the next synchronization, not
    /// at once (the skip database: it sorts and merges them then).
    pub fn updates_at_sync(self) -> bool {
        self.entry().updates_at_sync
    }

    /// Every class's extensions, as the help and error messages list them:
    /// `.kh .hash .tkh (hash), .kt .tree .tkt (tree), …`.
    pub fn extension_list() -> String {
        let each = CLASSES.iter().map(|e| {
            let exts: Vec<String> = e.extensions.iter().map(|x| format!(".{x}")).collect();
            format!("{} ({})", exts.join(" "), e.name)
        });
        each.collect::<Vec<_>>().join(", ")
    }

    /// Every class's short name, as messages list them: `hash, tree, …, stdtree`.
    pub fn name_list() -> String {
        CLASSES.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
    }

    /// The class of a name: the short name or the reference's class name, in
    /// any case.
    pub fn from_name(name: &str) -> Result<DbmClass> {
        let lower = name.trim().to_ascii_lowercase();
        CLASSES
            .iter()
            .find(|e| e.name == lower || e.reference.eq_ignore_ascii_case(&lower))
            .map(|e| e.class)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("unknown database class {name:?}: expected {}", DbmClass::name_list()),
                )
            })
    }

    /// The class a new file of this extension gets.
    pub fn from_extension(path: &Path) -> Option<DbmClass> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        CLASSES.iter().find(|e| e.extensions.contains(&ext.as_str())).map(|e| e.class)
    }

    /// The class of an existing file, from its first bytes; `None` for an
    /// empty file. A flat file, which every on-memory class reads, answers
    /// [`DbmClass::Tiny`]; [`DbmClass::for_path`] lets `dbm=` or the
    /// extension choose another on-memory class for it.
    pub fn of_file(path: &Path) -> Result<Option<DbmClass>> {
        let mut head = [0u8; HEAD_SIZE];
        let n = {
            use std::io::Read;
            let mut file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
            let mut n = 0;
            while n < head.len() {
                match file.read(&mut head[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) => return Err(Error::io("reading the header", path, e)),
                }
            }
            n
        };
        let head = &head[..n];
        if head.is_empty() {
            return Ok(None);
        }
        if let Some(e) = CLASSES.iter().find(|e| e.sniff.is_some_and(|sniff| sniff(head))) {
            return Ok(Some(e.class));
        }
        if head.starts_with(b"Tkrzw") {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is a database of the reference implementation (Tkrzw) in a format kuradb does \
                     not read: export it with `tkrzw_dbm_util export {} data.flat` and load that with \
                     `kura util import NEW data.flat`",
                    path.display(),
                    path.display()
                ),
            ));
        }
        Err(Error::new(
            ErrorKind::BrokenData,
            format!("{} is not a kuradb database: its header is not one kuradb writes", path.display()),
        ))
    }

    /// The class a database at `path` opened with `params` has: the file's
    /// own if it exists and is not empty (a `dbm=` naming another is an
    /// error), else `dbm=`, else the extension's.
    pub fn for_path(path: &Path, params: &Params) -> Result<DbmClass> {
        let named = params.get("dbm").map(DbmClass::from_name).transpose()?;
        let found = match std::fs::metadata(path) {
            Ok(meta) if meta.len() > 0 => DbmClass::of_file(path)?,
            _ => None,
        };
        // A flat file serves every on-memory class: dbm= or the extension
        // says which.
        let found = match found {
            Some(found) if found.is_on_memory() => {
                let wanted = named.or_else(|| DbmClass::from_extension(path));
                Some(wanted.filter(|c| c.is_on_memory()).unwrap_or(found))
            }
            found => found,
        };
        match (found, named) {
            (Some(found), Some(named)) if found != named => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} holds a {} database, not a {} one", path.display(), found.name(), named.name()),
            )),
            (Some(found), _) => Ok(found),
            (None, _) => DbmClass::for_new_file(path, params),
        }
    }

    /// The class a new database at `path` opened with `params` has, whatever
    /// the file holds now: `dbm=`, else the extension's.
    pub fn for_new_file(path: &Path, params: &Params) -> Result<DbmClass> {
        match params.get("dbm").map(DbmClass::from_name).transpose()? {
            Some(named) => Ok(named),
            None => DbmClass::from_extension(path).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "cannot tell which database {} should be: give dbm=CLASS (one of {}), or use an \
                         extension that names one: {}",
                        path.display(),
                        DbmClass::name_list(),
                        DbmClass::extension_list()
                    ),
                )
            }),
        }
    }

    /// The class's options read from `t`.
    fn options(self, t: &mut Taker<'_>) -> Result<Box<dyn ClassOptions>> {
        t.take(&["dbm"]);
        (self.entry().options)(t)
    }

    /// Reads the class's options from `params`, refusing by name any
    /// parameter the class does not take.
    fn options_of(self, params: &Params) -> Result<Box<dyn ClassOptions>> {
        let mut t = Taker::new(params, self.entry().what);
        let options = self.options(&mut t)?;
        t.finish()?;
        Ok(options)
    }

    /// Whether the class takes the parameter `name` (at open).
    pub fn takes(self, name: &str) -> bool {
        let mut probe = Taker::probe();
        // A probe takes no value, so reading the options cannot fail on one.
        let _ = self.options(&mut probe);
        probe.was_asked(name)
    }

    /// Checks `params` against the class as an open would, without opening.
    pub fn check(self, params: &Params) -> Result<()> {
        self.options_of(params).map(drop)
    }

    /// Opens a database of this class: at `path`, or for an on-memory class
    /// without a path, purely in memory. `params` are the class's parameters
    /// (any other is refused by name).
    pub fn open(self, path: Option<&Path>, access: Access, params: &Params) -> Result<Box<dyn Dbm>> {
        self.options_of(params)?.open(self, path, access)
    }

    /// Restores the damaged or crashed database of this class at `src` into
    /// a new one at `dest`, tuned by `params`; answers the number of records
    /// kept. A hash database keeps every intact record, a tree goes back to
    /// its last hard synchronization, a skip database keeps the records
    /// before any damage; a flat file, written whole and renamed into place,
    /// is either whole and copied or damaged and refused by name.
    pub fn restore(self, src: &Path, dest: &Path, params: &Params) -> Result<u64> {
        // `end_offset`: a point-in-time restore of a hash file in appending mode.
        let end_offset =
            match params.get("end_offset") {
                None => None,
                Some(text) => Some(text.trim().parse::<u64>().map_err(|_| {
                    super::params::bad_value("end_offset", text, "a byte offset of the file")
                })?),
            };
        let params = &params.without("end_offset");
        let options = self.options_of(params)?;
        let restored = match end_offset {
            Some(end) => options.restore_to_offset(src, dest, end).or_else(|| {
                Some(Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "end_offset restores a hash database in appending mode, not a {} one",
                        self.name()
                    ),
                )))
            }),
            None => options.restore(src, dest),
        };
        if let Some(restored) = restored {
            return restored;
        }
        let params = params.without("truncate");
        let db = self.open(Some(src), Access::ReadOnly, &params)?;
        let out = self.open(Some(dest), Access::ReadWrite, &params)?;
        let copied = db.export(out.as_ref()).and_then(|_| out.count());
        let closed = out.close().and(db.close());
        let count = copied?;
        closed?;
        Ok(count)
    }

    /// The order of the keys of `db`, a database of this class (`None` for
    /// a hash one).
    pub fn key_order_of(self, db: &dyn Dbm) -> Result<Option<KeyComparator>> {
        Ok(match self.entry().order {
            Order::Hashed => None,
            Order::Lexical => Some(KeyComparator::Lexical),
            Order::Inspected => {
                let named = db.inspect()?.into_iter().find(|(k, _)| k == "key_comparator");
                Some(named.map_or(Ok(KeyComparator::Lexical), |(_, name)| KeyComparator::from_name(&name))?)
            }
        })
    }

    /// Whether a rebuild of the class takes tuning parameters (see
    /// [`Dbm::rebuild_with_params`]); one that does not refuses every
    /// parameter by name.
    pub fn has_tuned_rebuild(self) -> bool {
        self.entry().tuned_rebuild
    }

    /// What a refusal of a parameter says it was for: "a hash database".
    pub(crate) fn what(self) -> &'static str {
        self.entry().what
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_come_from_names_and_extensions() {
        assert_eq!(DbmClass::from_name("TreeDBM").unwrap(), DbmClass::Tree);
        assert_eq!(DbmClass::from_name(" skip ").unwrap(), DbmClass::Skip);
        assert!(DbmClass::from_name("poly")
            .unwrap_err()
            .message()
            .contains("expected hash, tree, skip, tiny"));
        assert_eq!(DbmClass::from_name("BabyDBM").unwrap(), DbmClass::Baby);
        assert_eq!(DbmClass::from_extension(Path::new("a.tkmc")), Some(DbmClass::Cache));
        assert_eq!(DbmClass::from_extension(Path::new("a.flat")), Some(DbmClass::Tiny));
        assert_eq!(DbmClass::from_extension(Path::new("a.TKH")), Some(DbmClass::Hash));
        assert_eq!(DbmClass::from_extension(Path::new("a.kh")), Some(DbmClass::Hash));
        assert_eq!(DbmClass::from_extension(Path::new("a.skip")), Some(DbmClass::Skip));
        assert_eq!(DbmClass::from_extension(Path::new("a")), None);
        for class in DbmClass::all() {
            assert_eq!(DbmClass::from_name(class.name()).unwrap(), class);
            assert_eq!(DbmClass::from_name(class.reference_name()).unwrap(), class);
            for ext in class.extensions() {
                assert_eq!(DbmClass::from_extension(Path::new(&format!("x.{ext}"))), Some(class));
            }
        }
        assert!(DbmClass::extension_list().starts_with(".kh .hash .tkh (hash), .kt .tree .tkt (tree)"));
    }

    #[test]
    fn each_class_says_which_parameters_it_takes() {
        assert!(DbmClass::Hash.takes("num_buckets") && DbmClass::Hash.takes("block_size"));
        assert!(!DbmClass::Hash.takes("max_page_size") && !DbmClass::Hash.takes("step_unit"));
        assert!(DbmClass::Tree.takes("max_page_size") && DbmClass::Tree.takes("buckets"));
        assert!(DbmClass::Skip.takes("reducer") && !DbmClass::Skip.takes("align_pow"));
        assert!(DbmClass::Baby.takes("key_comparator") && !DbmClass::Baby.takes("block_size"));
        assert!(DbmClass::Cache.takes("cap_rec_num") && !DbmClass::Tiny.takes("cap_rec_num"));
        assert!(DbmClass::Tiny.takes("truncate") && DbmClass::StdHash.takes("buckets"));
        for class in DbmClass::all() {
            assert!(class.takes("dbm") || class.takes("no_wait"), "{class:?}");
        }
    }

    #[test]
    fn on_memory_classes_open_without_a_path_and_file_classes_refuse() {
        for class in DbmClass::all() {
            let opened = class.open(None, Access::ReadWrite, &Params::new());
            if class.is_on_memory() {
                let db = opened.unwrap();
                db.set(b"k", b"v").unwrap();
                assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
                db.close().unwrap();
            } else {
                let err = opened.err().unwrap();
                assert!(err.message().contains("give its path"), "{err}");
            }
        }
    }
}
