//! Opening any database by name: [`PolyDbm`] takes a path and parameters (a
//! map, or a string like `dbm=tree,file=pos-para,max_cached_pages=1000`) and
//! opens the database they describe, so the CLI, the Python binding and
//! programs share one way to say which database, file and tuning they want.
//!
//! The class of a new file comes from `dbm=` or from the path's extension; an
//! existing file is recognised by its header, whatever its name. Every
//! parameter must be one the chosen class takes: an unknown name, or a known
//! one with a value of the wrong type, is an error that names it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::baby::{BabyDbm, BabyOptions};
use super::cache::{CacheDbm, CacheOptions};
use super::hash::{HashDbm, HashOptions, RebuildParams, RestoreMode, UpdateMode};
use super::shard::ShardDbm;
use super::skip::{Reducer, SkipDbm, SkipOptions};
use super::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use super::tiny::{TinyDbm, TinyOptions};
use super::tree::{KeyComparator, TreeDbm, TreeOptions};
use super::{Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};
use crate::file::{FileSpec, OpenOptions};

/// A database class [`PolyDbm`] can open.
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
}

impl DbmClass {
    /// Every class, with its short name, the reference's class name and the
    /// extensions that choose it for a new file.
    const ALL: [(DbmClass, &'static str, &'static str, &'static [&'static str]); 8] = [
        (DbmClass::Hash, "hash", "HashDBM", &["hash", "tkh", "kh"]),
        (DbmClass::Tree, "tree", "TreeDBM", &["tree", "tkt", "kt"]),
        (DbmClass::Skip, "skip", "SkipDBM", &["skip", "tks", "ks"]),
        (DbmClass::Tiny, "tiny", "TinyDBM", &["tiny", "flat", "tkmt"]),
        (DbmClass::Baby, "baby", "BabyDBM", &["baby", "tkmb"]),
        (DbmClass::Cache, "cache", "CacheDBM", &["cache", "tkmc"]),
        (DbmClass::StdHash, "stdhash", "StdHashDBM", &["stdhash", "tksh"]),
        (DbmClass::StdTree, "stdtree", "StdTreeDBM", &["stdtree", "tkst"]),
    ];

    /// Whether the class keeps its records in memory (and its file, if it
    /// has one, is a flat file any of these classes reads).
    pub fn is_on_memory(self) -> bool {
        !matches!(self, DbmClass::Hash | DbmClass::Tree | DbmClass::Skip)
    }

    /// The short name (`hash`, `tree`, `skip`).
    pub fn name(self) -> &'static str {
        DbmClass::ALL.iter().find(|c| c.0 == self).map_or("?", |c| c.1)
    }

    /// The class of a name: the short name or the reference's class name, in
    /// any case.
    pub fn from_name(name: &str) -> Result<DbmClass> {
        let lower = name.trim().to_ascii_lowercase();
        DbmClass::ALL
            .iter()
            .find(|c| c.1 == lower || c.2.eq_ignore_ascii_case(&lower))
            .map(|c| c.0)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown database class {name:?}: expected hash, tree, skip, tiny, baby, cache, \
                         stdhash or stdtree"
                    ),
                )
            })
    }

    /// The class a new file of this extension gets.
    pub fn from_extension(path: &Path) -> Option<DbmClass> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        DbmClass::ALL.iter().find(|c| c.3.contains(&ext.as_str())).map(|c| c.0)
    }

    /// The class of an existing file, from its first bytes; `None` for an
    /// empty file. A flat file, which every on-memory class reads, answers
    /// [`DbmClass::Tiny`]; [`PolyDbm::class_of`] lets `dbm=` or the extension
    /// choose another on-memory class for it.
    pub fn of_file(path: &Path) -> Result<Option<DbmClass>> {
        let mut head = [0u8; 16];
        let n = {
            use std::io::Read;
            let mut file = std::fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
            let mut n = 0;
            while n < head.len() {
                match file.read(&mut head[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) => return Err(Error::io("reading the header of", path, e)),
                }
            }
            n
        };
        let head = &head[..n];
        if head.is_empty() {
            return Ok(None);
        }
        if head.starts_with(b"KuraHDB\n") && head.len() > 12 {
            return Ok(Some(if head[12] == 1 { DbmClass::Tree } else { DbmClass::Hash }));
        }
        if head.starts_with(b"KuraSkp\n") {
            return Ok(Some(DbmClass::Skip));
        }
        if head.starts_with(b"KuraFlat") {
            return Ok(Some(DbmClass::Tiny));
        }
        if head.starts_with(b"Tkrzw") {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} is a database of the reference implementation (Tkrzw), whose format kuradb does \
                     not read: export it with `tkrzw_dbm_util export --dbm auto {} data.tsv` and load \
                     that with `kura util import`",
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
}

/// Named parameters, as a map or parsed from `name=value,name=value`.
///
/// Names are compared in lower case. A word without `=` continues the value
/// before it, so `access=direct,padding` works as it does for [`FileSpec`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    entries: BTreeMap<String, String>,
}

impl Params {
    /// No parameters: every default.
    pub fn new() -> Params {
        Params::default()
    }

    /// Parses `name=value` pairs separated by commas; an empty text is no
    /// parameters. A name given twice is an error.
    pub fn parse(text: &str) -> Result<Params> {
        let mut params = Params::new();
        let mut last: Option<String> = None;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.split_once('=') {
                Some((name, value)) => {
                    let name = name.trim().to_ascii_lowercase();
                    params.insert(&name, value.trim())?;
                    last = Some(name);
                }
                None => match &last {
                    Some(name) => {
                        let value = params.entries.get_mut(name).expect("the last name");
                        value.push(',');
                        value.push_str(word);
                    }
                    None => {
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!("parameter {word:?} has no value: write it as name=value"),
                        ))
                    }
                },
            }
        }
        Ok(params)
    }

    /// Adds one parameter; a name given twice is an error.
    pub fn insert(&mut self, name: &str, value: &str) -> Result<()> {
        let name = name.trim().to_ascii_lowercase();
        if self.entries.insert(name.clone(), value.to_string()).is_some() {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("parameter {name} is given twice")));
        }
        Ok(())
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    /// Every parameter, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The parameters without `name`.
    pub fn without(&self, name: &str) -> Params {
        let mut out = self.clone();
        out.entries.remove(&name.to_ascii_lowercase());
        out
    }
}

impl std::fmt::Display for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = self.entries.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&words.join(","))
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Params {
    /// Collects pairs; of a name given twice, the last value counts.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Params {
        let entries = iter
            .into_iter()
            .map(|(k, v)| (k.as_ref().trim().to_ascii_lowercase(), v.as_ref().to_string()))
            .collect();
        Params { entries }
    }
}

/// Takes parameters one by one, so that whatever is left at the end can be
/// refused by name.
struct Taker<'a> {
    params: &'a Params,
    taken: Vec<&'a str>,
    class: DbmClass,
}

impl<'a> Taker<'a> {
    fn take(&mut self, names: &[&str]) -> Option<(&'a str, &'a str)> {
        for (name, value) in &self.params.entries {
            if names.contains(&name.as_str()) {
                self.taken.push(name.as_str());
                return Some((name.as_str(), value.as_str()));
            }
        }
        None
    }

    fn number<T: std::str::FromStr>(&mut self, names: &[&str]) -> Result<Option<T>> {
        match self.take(names) {
            None => Ok(None),
            Some((name, value)) => value.trim().parse::<T>().map(Some).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("parameter {name} must be a number, not {value:?}"),
                )
            }),
        }
    }

    fn flag(&mut self, names: &[&str]) -> Result<Option<bool>> {
        match self.take(names) {
            None => Ok(None),
            Some((name, value)) => parse_flag(name, value).map(Some),
        }
    }

    /// Refuses every parameter not taken, naming them.
    fn finish(self) -> Result<()> {
        let left: Vec<&str> =
            self.params.entries.keys().map(String::as_str).filter(|k| !self.taken.contains(k)).collect();
        if left.is_empty() {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "unknown parameter{} {} for a {} database",
                if left.len() > 1 { "s" } else { "" },
                left.join(", "),
                self.class.name()
            ),
        ))
    }
}

/// A true-or-false parameter's value.
pub(crate) fn parse_flag(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("parameter {name} must be true or false, not {value:?}"),
        )),
    }
}

/// What `open` makes of the parameters: the class and its options.
#[derive(Clone, Debug)]
enum Options {
    Hash(HashOptions),
    Tree(TreeOptions),
    Skip(SkipOptions),
    Tiny(TinyOptions),
    Baby(BabyOptions),
    Cache(CacheOptions),
    StdHash(StdOptions),
    StdTree(StdOptions),
}

fn file_and_open(t: &mut Taker<'_>) -> Result<(FileSpec, OpenOptions)> {
    let mut spec = FileSpec::default();
    for (name, value) in &t.params.entries {
        if name != "dbm" && spec.set(name, value)? {
            t.taken.push(name.as_str());
        }
    }
    spec.validate()?;
    let mut open = OpenOptions::writer();
    open.no_wait = t.flag(&["no_wait"])?.unwrap_or(false);
    open.no_lock = t.flag(&["no_lock"])?.unwrap_or(false);
    open.truncate = t.flag(&["truncate"])?.unwrap_or(false);
    open.lock_timeout = lock_timeout(t)?;
    Ok((spec, open))
}

/// The `lock_timeout` parameter: the longest wait, in seconds, for a lock
/// another process holds.
fn lock_timeout(t: &mut Taker<'_>) -> Result<Option<std::time::Duration>> {
    let Some(seconds) = t.number::<f64>(&["lock_timeout"])? else { return Ok(None) };
    std::time::Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("parameter lock_timeout must be a number of seconds from 0 up, not {seconds}"),
        )
    })
}

fn hash_options(t: &mut Taker<'_>, mut o: HashOptions) -> Result<HashOptions> {
    (o.file, o.open) = file_and_open(t)?;
    if let Some(n) = t.number(&["num_buckets", "buckets"])? {
        o.num_buckets = n;
    }
    if let Some(n) = t.number(&["align_pow"])? {
        o.align_pow = n;
    }
    if let Some(n) = t.number(&["offset_width"])? {
        o.offset_width = n;
    }
    if let Some(n) = t.number(&["fbp_capacity", "fbp_cap"])? {
        o.fbp_cap = n;
    }
    if let Some(n) = t.number(&["min_read_size"])? {
        o.min_read_size = n;
    }
    if let Some(b) = t.flag(&["cache_buckets"])? {
        o.cache_buckets = b;
    }
    if let Some(mode) = update_mode(t)? {
        o.update_mode = mode;
    }
    if let Some((name, value)) = t.take(&["record_crc_mode", "record_crc"]) {
        o.record_crc = match value.trim().to_ascii_lowercase().trim_start_matches("record_crc_") {
            "none" | "0" | "false" | "default" => false,
            "8" | "16" | "32" | "true" => true,
            _ => return Err(bad_value(name, value, "none, 8, 16 or 32")),
        };
    }
    if let Some((name, value)) = t.take(&["restore_mode"]) {
        o.restore = match value.trim().to_ascii_lowercase().trim_start_matches("restore_") {
            "default" | "auto" | "automatic" => RestoreMode::Automatic,
            "noop" | "refuse" | "none" => RestoreMode::Refuse,
            _ => return Err(bad_value(name, value, "auto or refuse")),
        };
    }
    Ok(o)
}

/// The `update_mode` parameter, in kuradb's words or the reference's
/// (`UPDATE_IN_PLACE`, `UPDATE_APPENDING`).
fn update_mode(t: &mut Taker<'_>) -> Result<Option<UpdateMode>> {
    let Some((name, value)) = t.take(&["update_mode"]) else { return Ok(None) };
    match value.trim().to_ascii_lowercase().trim_start_matches("update_") {
        "in_place" | "inplace" => Ok(Some(UpdateMode::InPlace)),
        "appending" | "append" => Ok(Some(UpdateMode::Appending)),
        _ => Err(bad_value(name, value, "in_place or appending")),
    }
}

fn bad_value(name: &str, value: &str, expected: &str) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("parameter {name} must be {expected}, not {value:?}"))
}

fn options_for(class: DbmClass, params: &Params) -> Result<Options> {
    let mut t = Taker { params, taken: vec![], class };
    t.take(&["dbm"]);
    let options = match class {
        DbmClass::Hash => Options::Hash(hash_options(&mut t, HashOptions::default())?),
        DbmClass::Tree => {
            let mut o = TreeOptions::default();
            o.hash = hash_options(&mut t, o.hash)?;
            if let Some(n) = t.number(&["max_page_size"])? {
                o.max_page_size = n;
            }
            if let Some(n) = t.number(&["max_branches"])? {
                o.max_branches = n;
            }
            if let Some(n) = t.number(&["max_cached_pages"])? {
                o.max_cached_pages = n;
            }
            if let Some((_, value)) = t.take(&["key_comparator"]) {
                o.comparator = KeyComparator::from_name(value)?;
            }
            Options::Tree(o)
        }
        DbmClass::Skip => {
            let mut o = SkipOptions::default();
            (o.file, o.open) = file_and_open(&mut t)?;
            if let Some(n) = t.number(&["offset_width"])? {
                o.offset_width = n;
            }
            if let Some(n) = t.number(&["step_unit"])? {
                o.step_unit = n;
            }
            if let Some(n) = t.number(&["max_level"])? {
                o.max_level = n;
            }
            if let Some(n) = t.number(&["max_cached_records"])? {
                o.max_cached_records = n;
            }
            if let Some(n) = t.number(&["sort_mem_size"])? {
                o.sort_mem_size = n;
            }
            if let Some(b) = t.flag(&["insert_in_order"])? {
                o.insert_in_order = b;
            }
            if let Some((_, value)) = t.take(&["reducer"]) {
                o.reducer = Reducer::from_name(value)?;
            }
            Options::Skip(o)
        }
        DbmClass::Tiny => {
            let mut o = TinyOptions { truncate: memory_truncate(&mut t)?, ..TinyOptions::default() };
            if let Some(n) = t.number(&["num_buckets", "buckets"])? {
                o.num_buckets = n;
            }
            Options::Tiny(o)
        }
        DbmClass::Baby => {
            let mut o = BabyOptions { truncate: memory_truncate(&mut t)?, ..BabyOptions::default() };
            if let Some(n) = t.number(&["max_page_size"])? {
                o.max_page_size = n;
            }
            if let Some(n) = t.number(&["max_branches"])? {
                o.max_branches = n;
            }
            if let Some((_, value)) = t.take(&["key_comparator"]) {
                o.comparator = KeyComparator::from_name(value)?;
            }
            Options::Baby(o)
        }
        DbmClass::Cache => {
            let mut o = CacheOptions { truncate: memory_truncate(&mut t)?, ..CacheOptions::default() };
            if let Some(n) = t.number(&["cap_rec_num"])? {
                o.cap_rec_num = n;
            }
            if let Some(n) = t.number(&["cap_mem_size"])? {
                o.cap_mem_size = n;
            }
            Options::Cache(o)
        }
        DbmClass::StdHash | DbmClass::StdTree => {
            let mut o = StdOptions { truncate: memory_truncate(&mut t)?, ..StdOptions::default() };
            if let Some(n) = t.number(&["num_buckets", "buckets"])? {
                o.num_buckets = n;
            }
            if class == DbmClass::StdHash {
                Options::StdHash(o)
            } else {
                Options::StdTree(o)
            }
        }
    };
    t.finish()?;
    Ok(options)
}

/// The open parameters an on-memory database takes: `truncate` (and the
/// locking ones, which it accepts and has no use for: its flat file is read
/// at open and replaced whole, never held).
fn memory_truncate(t: &mut Taker<'_>) -> Result<bool> {
    t.flag(&["no_wait"])?;
    t.flag(&["no_lock"])?;
    lock_timeout(t)?;
    Ok(t.flag(&["truncate"])?.unwrap_or(false))
}

/// The database a [`PolyDbm`] opened.
enum Inner {
    Hash(Box<HashDbm>),
    Tree(Box<TreeDbm>),
    Skip(Box<SkipDbm>),
    Shard(Box<ShardDbm>),
    Tiny(Box<TinyDbm>),
    Baby(Box<BabyDbm>),
    Cache(Box<CacheDbm>),
    StdHash(Box<StdHashDbm>),
    StdTree(Box<StdTreeDbm>),
}

/// Any database, opened from a path and parameters.
///
/// ```
/// use kuradb::dbm::poly::{Params, PolyDbm};
/// use kuradb::dbm::{Cursor, Dbm};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.tkt");
/// let params = Params::parse("file=pos-para,max_cached_pages=100,key_comparator=decimal")?;
/// let db = PolyDbm::open(&path, true, &params)?;
/// assert_eq!(db.class().name(), "tree"); // from the extension
/// db.set(b"10", b"ten", true)?;
/// db.set(b"9", b"nine", true)?;
/// let mut cursor = db.iter()?;
/// cursor.first()?;
/// assert_eq!(cursor.get()?.unwrap().0, b"9"); // decimal order
/// drop(cursor);
/// db.close()?;
/// // Reopened by its header, whatever its name says.
/// std::fs::rename(&path, dir.path().join("casket.dat")).unwrap();
/// let db = PolyDbm::open(dir.path().join("casket.dat"), false, &Params::new())?;
/// assert_eq!(db.get(b"10")?.as_deref(), Some(&b"ten"[..]));
/// assert!(PolyDbm::open(dir.path().join("x.tkh"), true, &Params::parse("max_level=3")?).is_err());
/// # Ok(())
/// # }
/// ```
pub struct PolyDbm {
    inner: Inner,
    class: DbmClass,
    path: PathBuf,
    /// What a skip database reduces with when rebuilt.
    reducer: Reducer,
}

impl PolyDbm {
    /// Opens or creates the database at `path` as `params` say (see the
    /// module's documentation for how the class is chosen). With
    /// `num_shards`, or where a set of shard files exists at `path` (and no
    /// file does), it opens a [`ShardDbm`].
    pub fn open(path: impl AsRef<Path>, writable: bool, params: &Params) -> Result<PolyDbm> {
        let path = path.as_ref().to_path_buf();
        if params.get("num_shards").is_some()
            || (!path.exists() && ShardDbm::existing_count(&path)?.is_some())
        {
            let db = ShardDbm::open(&path, writable, params)?;
            let first = &db.shards()[0];
            let (class, reducer) = (first.class, first.reducer.clone());
            return Ok(PolyDbm { inner: Inner::Shard(Box::new(db)), class, path, reducer });
        }
        let class = PolyDbm::class_of(&path, params)?;
        let mut reducer = Reducer::All;
        let inner = match options_for(class, params)? {
            Options::Hash(o) => Inner::Hash(Box::new(HashDbm::open(&path, writable, &o)?)),
            Options::Tree(o) => Inner::Tree(Box::new(TreeDbm::open(&path, writable, &o)?)),
            Options::Skip(o) => {
                reducer = o.reducer.clone();
                Inner::Skip(Box::new(SkipDbm::open(&path, writable, &o)?))
            }
            Options::Tiny(o) => Inner::Tiny(Box::new(TinyDbm::open(&path, writable, &o)?)),
            Options::Baby(o) => Inner::Baby(Box::new(BabyDbm::open(&path, writable, &o)?)),
            Options::Cache(o) => Inner::Cache(Box::new(CacheDbm::open(&path, writable, &o)?)),
            Options::StdHash(o) => Inner::StdHash(Box::new(StdHashDbm::open(&path, writable, &o)?)),
            Options::StdTree(o) => Inner::StdTree(Box::new(StdTreeDbm::open(&path, writable, &o)?)),
        };
        Ok(PolyDbm { inner, class, path, reducer })
    }

    /// The order of the keys of an ordered database (`None` for a hash one).
    pub fn key_order(&self) -> Result<Option<KeyComparator>> {
        Ok(match &self.inner {
            Inner::Hash(_) | Inner::Tiny(_) | Inner::Cache(_) | Inner::StdHash(_) => None,
            Inner::Skip(_) | Inner::StdTree(_) => Some(KeyComparator::Lexical),
            Inner::Shard(db) => db.key_order(),
            Inner::Tree(_) | Inner::Baby(_) => {
                let named = self.dbm().inspect()?.into_iter().find(|(k, _)| k == "key_comparator");
                Some(named.map_or(Ok(KeyComparator::Lexical), |(_, name)| KeyComparator::from_name(&name))?)
            }
        })
    }

    /// Whether the database is a set of shards.
    pub fn is_sharded(&self) -> bool {
        matches!(self.inner, Inner::Shard(_))
    }

    /// The class `open` would choose for `path` with `params`: the file's
    /// own if it exists and is not empty (a `dbm=` naming another is an
    /// error), else `dbm=`, else the extension's.
    pub fn class_of(path: &Path, params: &Params) -> Result<DbmClass> {
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
            (None, Some(named)) => Ok(named),
            (None, None) => DbmClass::from_extension(path).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "cannot tell which database {} should be: give dbm=hash, tree, skip, tiny, baby, \
                         cache, stdhash or stdtree, or use such an extension (or the reference's: .tkh, \
                         .tkt, .tks, .tkmt, .tkmb, .tkmc, .tksh, .tkst)",
                        path.display()
                    ),
                )
            }),
        }
    }

    /// The class of the database.
    pub fn class(&self) -> DbmClass {
        self.class
    }

    fn dbm(&self) -> &dyn Dbm {
        match &self.inner {
            Inner::Hash(db) => db.as_ref(),
            Inner::Tree(db) => db.as_ref(),
            Inner::Skip(db) => db.as_ref(),
            Inner::Shard(db) => db.as_ref(),
            Inner::Tiny(db) => db.as_ref(),
            Inner::Baby(db) => db.as_ref(),
            Inner::Cache(db) => db.as_ref(),
            Inner::StdHash(db) => db.as_ref(),
            Inner::StdTree(db) => db.as_ref(),
        }
    }

    /// Closes the database, reporting what closing it found.
    pub fn close(self) -> Result<()> {
        match self.inner {
            Inner::Hash(db) => (*db).close(),
            Inner::Tree(db) => (*db).close(),
            Inner::Skip(db) => (*db).close(),
            Inner::Shard(db) => (*db).close(),
            Inner::Tiny(db) => (*db).close(),
            Inner::Baby(db) => (*db).close(),
            Inner::Cache(db) => (*db).close(),
            Inner::StdHash(db) => (*db).close(),
            Inner::StdTree(db) => (*db).close(),
        }
    }

    /// Rebuilds the database with what `params` change of its tuning:
    /// `num_buckets`, `align_pow`, `offset_width` and `update_mode` for a hash
    /// database; for a skip database the step, levels and offset width it was
    /// opened with, and `reducer`. A tree is rebuilt with its own tuning;
    /// other parameters are refused by name.
    pub fn rebuild_with(&self, params: &Params) -> Result<()> {
        let mut t = Taker { params, taken: vec![], class: self.class };
        let result = match &self.inner {
            Inner::Hash(db) => {
                let rebuild = RebuildParams {
                    num_buckets: t.number(&["num_buckets", "buckets"])?,
                    align_pow: t.number(&["align_pow"])?,
                    offset_width: t.number(&["offset_width"])?,
                    update_mode: update_mode(&mut t)?,
                };
                t.finish()?;
                db.rebuild_with(&rebuild)
            }
            Inner::Tree(db) => {
                t.finish()?;
                db.rebuild()
            }
            Inner::Skip(db) => {
                let reducer = match t.take(&["reducer"]) {
                    Some((_, value)) => Reducer::from_name(value)?,
                    None => self.reducer.clone(),
                };
                t.finish()?;
                db.rebuild_with(&reducer)
            }
            Inner::Tiny(_) | Inner::Baby(_) | Inner::Cache(_) | Inner::StdHash(_) | Inner::StdTree(_) => {
                t.finish()?;
                self.dbm().rebuild()
            }
            Inner::Shard(db) => {
                // Shard by shard, each checking the parameters as above.
                for shard in db.shards() {
                    shard.rebuild_with(params)?;
                }
                Ok(())
            }
        };
        result
    }

    /// Restores the damaged or crashed database at `src` into a new one at
    /// `dest` (of the same class, tuned by `params`); answers the number of
    /// records kept.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, params: &Params) -> Result<u64> {
        let src = src.as_ref();
        if !src.exists() {
            if let Some(n) = ShardDbm::existing_count(src)? {
                let params = params.without("num_shards");
                let mut kept = 0;
                for i in 0..n {
                    let (from, to) =
                        (ShardDbm::shard_path(src, i, n), ShardDbm::shard_path(dest.as_ref(), i, n));
                    kept += PolyDbm::restore(from, to, &params)?;
                }
                return Ok(kept);
            }
        }
        let class = PolyDbm::class_of(src, params)?;
        match options_for(class, params)? {
            Options::Hash(o) => HashDbm::restore(src, dest, &o),
            Options::Tree(o) => TreeDbm::restore(src, dest, &o),
            Options::Skip(o) => SkipDbm::restore(src, dest, &o),
            // A flat file is written whole and renamed into place: it is
            // either whole, and copied, or damaged, and refused by name.
            _ => {
                let db = PolyDbm::open(src, false, &params.without("truncate"))?;
                let dest_params = params.without("truncate");
                let out = PolyDbm::open(dest.as_ref(), true, &dest_params)?;
                db.export(&out)?;
                let count = out.count()?;
                out.close()?;
                db.close()?;
                Ok(count)
            }
        }
    }

    /// The path of the database's file.
    pub fn file_path(&self) -> &Path {
        &self.path
    }
}

impl Dbm for PolyDbm {
    fn close(self: Box<Self>) -> Result<()> {
        PolyDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        self.dbm().process(key, writable, f)
    }
    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.dbm().process_multi(keys, writable, f)
    }
    fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        self.dbm().process_each(writable, f)
    }
    fn count(&self) -> Result<u64> {
        self.dbm().count()
    }
    fn file_size(&self) -> Result<u64> {
        self.dbm().file_size()
    }
    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }
    fn clear(&self) -> Result<()> {
        self.dbm().clear()
    }
    fn rebuild(&self) -> Result<()> {
        self.dbm().rebuild()
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        self.dbm().should_be_rebuilt()
    }
    fn synchronize(&self, hard: bool) -> Result<()> {
        self.dbm().synchronize(hard)
    }
    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        self.dbm().copy_file_data(dest, hard)
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        self.dbm().inspect()
    }
    fn is_healthy(&self) -> bool {
        self.dbm().is_healthy()
    }
    fn is_ordered(&self) -> bool {
        self.dbm().is_ordered()
    }
    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.dbm().iter()
    }
    // The provided methods too: a database may do them its own way (a skip
    // database adds records on set rather than replacing them).
    fn contains(&self, key: &[u8]) -> Result<bool> {
        self.dbm().contains(key)
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.dbm().get(key)
    }
    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> super::Action<'a>) -> Result<()> {
        self.dbm().process_presence(key, f)
    }
    fn set(&self, key: &[u8], value: &[u8], overwrite: bool) -> Result<()> {
        self.dbm().set(key, value, overwrite)
    }
    fn remove(&self, key: &[u8]) -> Result<bool> {
        self.dbm().remove(key)
    }
    fn append(&self, key: &[u8], value: &[u8], delimiter: &[u8]) -> Result<()> {
        self.dbm().append(key, value, delimiter)
    }
    fn compare_exchange(&self, key: &[u8], expected: Option<&[u8]>, desired: Option<&[u8]>) -> Result<bool> {
        self.dbm().compare_exchange(key, expected, desired)
    }
    fn increment(&self, key: &[u8], delta: i64, initial: i64) -> Result<i64> {
        self.dbm().increment(key, delta, initial)
    }
    fn get_multi(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.dbm().get_multi(keys)
    }
    fn set_multi(&self, pairs: &[(&[u8], &[u8])], overwrite: bool) -> Result<()> {
        self.dbm().set_multi(pairs, overwrite)
    }
    fn remove_multi(&self, keys: &[&[u8]]) -> Result<usize> {
        self.dbm().remove_multi(keys)
    }
    fn compare_exchange_multi(
        &self,
        expected: &[(&[u8], Option<&[u8]>)],
        desired: &[(&[u8], Option<&[u8]>)],
    ) -> Result<bool> {
        self.dbm().compare_exchange_multi(expected, desired)
    }
    fn rekey(&self, old_key: &[u8], new_key: &[u8], overwrite: bool, copying: bool) -> Result<()> {
        self.dbm().rekey(old_key, new_key, overwrite, copying)
    }
    fn export(&self, dest: &dyn Dbm) -> Result<()> {
        self.dbm().export(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_parse_and_refuse_what_they_cannot_read() {
        let p = Params::parse("dbm=tree, FILE=pos-para,access=direct,padding ,block_size=512").unwrap();
        assert_eq!(p.get("file"), Some("pos-para"));
        assert_eq!(p.get("access"), Some("direct,padding"));
        assert_eq!(p.to_string(), "access=direct,padding,block_size=512,dbm=tree,file=pos-para");
        assert!(Params::parse("").unwrap().iter().next().is_none());
        assert!(Params::parse("padding").unwrap_err().message().contains("has no value"));
        assert!(Params::parse("a=1,a=2").unwrap_err().message().contains("given twice"));
        let p: Params = [("Num_Buckets", "7")].into_iter().collect();
        assert_eq!(p.get("num_buckets"), Some("7"));
    }

    #[test]
    fn classes_come_from_names_extensions_and_headers() {
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
        assert_eq!(DbmClass::from_extension(Path::new("a.skip")), Some(DbmClass::Skip));
        assert_eq!(DbmClass::from_extension(Path::new("a")), None);
        let dir = tempfile::tempdir().unwrap();
        let tkrzw = dir.path().join("old.tkh");
        std::fs::write(&tkrzw, b"TkrzwHDB\n\x01\x02\x03\x04\x05\x06\x07").unwrap();
        let err = PolyDbm::open(&tkrzw, false, &Params::new()).err().unwrap();
        assert!(
            err.message().contains("reference implementation") && err.message().contains("kura util import")
        );
        let junk = dir.path().join("junk.tkh");
        std::fs::write(&junk, b"hello, world, this is not a database").unwrap();
        assert_eq!(PolyDbm::open(&junk, false, &Params::new()).err().unwrap().kind(), ErrorKind::BrokenData);
        let err = PolyDbm::open(dir.path().join("noext"), true, &Params::new()).err().unwrap();
        assert!(err.message().contains("give dbm=hash, tree, skip"), "{err}");
        for (class, name) in [
            (DbmClass::Hash, "h.dat"),
            (DbmClass::Tree, "t.dat"),
            (DbmClass::Skip, "s.dat"),
            (DbmClass::Tiny, "m.dat"),
        ] {
            let path = dir.path().join(name);
            let params = Params::parse(&format!("dbm={}", class.name())).unwrap();
            let db = PolyDbm::open(&path, true, &params).unwrap();
            db.set(b"k", b"v", true).unwrap();
            db.close().unwrap();
            assert_eq!(DbmClass::of_file(&path).unwrap(), Some(class));
            let db = PolyDbm::open(&path, false, &Params::new()).unwrap();
            assert_eq!((db.class(), db.get(b"k").unwrap()), (class, Some(b"v".to_vec())));
            db.close().unwrap();
            let other = if class == DbmClass::Hash { "tree" } else { "hash" };
            let err =
                PolyDbm::open(&path, false, &Params::parse(&format!("dbm={other}")).unwrap()).err().unwrap();
            assert!(err.message().contains(&format!("not a {other} one")), "{err}");
        }
    }

    #[test]
    fn parameters_are_checked_against_the_class() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str, params: &str| {
            PolyDbm::open(dir.path().join(name), true, &Params::parse(params).unwrap())
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
        db.set(b"a", b"1", true).unwrap();
        db.rebuild_with(&Params::parse("num_buckets=101").unwrap()).unwrap();
        assert!(db.rebuild_with(&Params::parse("step_unit=2").unwrap()).is_err());
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        db.close().unwrap();
        let db = open("c.tks", "step_unit=2,max_level=3,reducer=last").unwrap();
        db.set(b"a", b"1", true).unwrap();
        db.set(b"a", b"2", true).unwrap();
        db.close().unwrap();
        let db = open("c.tks", "").unwrap();
        assert_eq!((db.count().unwrap(), db.get(b"a").unwrap()), (1, Some(b"2".to_vec())));
        db.close().unwrap();
    }

    #[test]
    fn on_memory_classes_share_the_flat_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.tkmb");
        let db =
            PolyDbm::open(&path, true, &Params::parse("key_comparator=decimal,max_page_size=64").unwrap())
                .unwrap();
        assert_eq!(db.class(), DbmClass::Baby);
        for n in [10, 9, 100] {
            db.set(n.to_string().as_bytes(), b"v", true).unwrap();
        }
        assert_eq!(db.key_order().unwrap(), Some(KeyComparator::Decimal));
        db.close().unwrap();
        // The same flat file, read as each on-memory class by dbm=.
        for class in ["tiny", "baby", "cache", "stdhash", "stdtree"] {
            let db = PolyDbm::open(&path, false, &Params::parse(&format!("dbm={class}")).unwrap()).unwrap();
            assert_eq!((db.class().name(), db.count().unwrap()), (class, 3));
            db.close().unwrap();
        }
        let err = PolyDbm::open(&path, false, &Params::parse("dbm=hash").unwrap()).err().unwrap();
        assert!(err.message().contains("not a hash one"), "{err}");
        let err = PolyDbm::open(dir.path().join("c.tkmc"), true, &Params::parse("cap_rec_num=x").unwrap())
            .err()
            .unwrap();
        assert!(err.message().contains("cap_rec_num must be a number"), "{err}");
        let copied = PolyDbm::restore(&path, dir.path().join("copy.tkst"), &Params::new()).unwrap();
        assert_eq!(copied, 3);
    }

    #[test]
    fn shard_sets_open_by_num_shards_and_reopen_by_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.tks");
        let db = PolyDbm::open(&path, true, &Params::parse("num_shards=2,step_unit=2,reducer=last").unwrap())
            .unwrap();
        assert!(db.is_sharded() && db.class() == DbmClass::Skip && db.is_ordered());
        for k in ["b", "a", "c", "a"] {
            db.set(k.as_bytes(), k.as_bytes(), true).unwrap();
        }
        db.close().unwrap();
        assert!(!path.exists());
        let db = PolyDbm::open(&path, false, &Params::new()).unwrap();
        assert_eq!(db.count().unwrap(), 3);
        let mut cursor = db.iter().unwrap();
        cursor.last().unwrap();
        assert_eq!(cursor.get().unwrap().unwrap().0, b"c");
        drop(cursor);
        db.close().unwrap();
        let kept = PolyDbm::restore(&path, dir.path().join("copy.tks"), &Params::new()).unwrap();
        assert_eq!(kept, 3);
        let err = PolyDbm::open(&path, true, &Params::parse("num_shards=2,max_page_size=9").unwrap())
            .err()
            .unwrap();
        assert!(err.message().contains("unknown parameter max_page_size for a skip database"), "{err}");
    }
}
