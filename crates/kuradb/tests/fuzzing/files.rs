//! The file-format targets: arbitrary bytes written as a database's file (or
//! a shard set's files), then opened for reading, restored, opened for
//! writing, changed and rebuilt.
//!
//! An input's first byte chooses how: bits 0-1 the file implementation,
//! bit 2 whether checksums are repaired first ([`super::fixup`]), bits 3-5
//! the class where a target has a choice (the on-memory classes, which all
//! read the one flat file format; the class of a shard set). The rest is
//! the file; a shard set's files are separated by [`SHARD_SEPARATOR`].

use std::path::Path;

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Durability};
use kuradb::{DbmClass, ErrorKind, Params, Result, ShardDbm};

use super::checks::{assert_consistent, clear, read_everything, walk, Opened, Record};
use super::fixup;

/// What separates the files of a shard set in an input.
pub const SHARD_SEPARATOR: &[u8] = b"\xffSHARD\xff";

/// The most shards an input makes.
const MAX_SHARDS: usize = 4;

/// A hash database's file.
pub fn hash_file(data: &[u8]) {
    one_file(DbmClass::Hash, data);
}

/// A tree database's file (the node store, of the hash format).
pub fn tree_file(data: &[u8]) {
    one_file(DbmClass::Tree, data);
}

/// A skip database's file.
pub fn skip_file(data: &[u8]) {
    one_file(DbmClass::Skip, data);
}

/// The flat file every on-memory class reads, as the class the first byte
/// names: tiny, baby, cache, stdhash or stdtree.
pub fn flat_file(data: &[u8]) {
    let on_memory: Vec<DbmClass> = DbmClass::all().filter(|c| c.is_on_memory()).collect();
    let class = on_memory[usize::from(config(data) >> 3) % on_memory.len()];
    one_file(class, data);
}

/// A set of shard files of one class (from the first byte; each file is
/// recognised by its own header).
pub fn shard_set(data: &[u8]) {
    let classes: Vec<DbmClass> = DbmClass::all().collect();
    let class = classes[usize::from(config(data) >> 3) % classes.len()];
    let body = data.get(1..).unwrap_or_default();
    let mut parts = split(body, SHARD_SEPARATOR);
    parts.truncate(MAX_SHARDS);
    let dir = scratch();
    let path = dir.path().join(format!("set.{}", class.extensions()[0]));
    let count = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        write(&ShardDbm::shard_path(&path, i, count), part, config(data));
    }
    let limit = data.len() + 16;
    let mut params = params(data, None);
    small_tables(&mut params, class);
    exercise(
        &Shards { params },
        &path,
        &dir.path().join(format!("restored.{}", class.extensions()[0])),
        limit,
    );
}

/// A new empty directory, in memory where the system has a tmpfs there:
/// the targets synchronize often, and a disk's flushes would make them
/// hundreds of times slower without testing anything more.
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let made = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() };
    made.expect("a temporary directory")
}

/// The first byte, which chooses how the rest is opened.
fn config(data: &[u8]) -> u8 {
    data.first().copied().unwrap_or(0)
}

fn one_file(class: DbmClass, data: &[u8]) {
    let dir = scratch();
    let ext = class.extensions()[0];
    let path = dir.path().join(format!("casket.{ext}"));
    write(&path, data.get(1..).unwrap_or_default(), config(data));
    let subject = One { class, params: params(data, Some(class)) };
    exercise(&subject, &path, &dir.path().join(format!("restored.{ext}")), data.len() + 16);
}

/// Writes `bytes` to `path`, with repaired checksums if `config` asks.
fn write(path: &Path, bytes: &[u8], config: u8) {
    let mut bytes = bytes.to_vec();
    if config & 4 != 0 {
        if bytes.starts_with(b"KuraHDB\n") {
            fixup::hash(&mut bytes);
        } else if bytes.starts_with(b"KuraSkp\n") {
            fixup::skip(&mut bytes);
        } else if bytes.starts_with(b"KuraFlat") {
            fixup::flat(&mut bytes);
        }
    }
    std::fs::write(path, bytes).expect("write the input file");
}

fn split<'a>(data: &'a [u8], separator: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(separator.len()).position(|w| w == separator) {
        parts.push(&rest[..at]);
        rest = &rest[at + separator.len()..];
    }
    parts.push(rest);
    parts
}

/// The parameters the first byte names: the file implementation, and
/// `dbm=` for a class that shares its format with others.
fn params(data: &[u8], class: Option<DbmClass>) -> Params {
    let file = match config(data) & 3 {
        0 => "file=mmap-para",
        1 => "file=pos-para",
        2 => "file=pos-atom,block_size=512,access=pagecache",
        _ => "file=mmap-atom",
    };
    let mut params = Params::new();
    if let Some(class) = class {
        params.insert("dbm", class.name()).expect("a class name");
        if !class.is_on_memory() {
            params = Params::parse(&format!("{file},dbm={}", class.name())).expect("valid parameters");
        } else {
            small_tables(&mut params, class);
        }
    }
    params
}

/// Small hash tables for the on-memory classes: the defaults (a million
/// buckets) cost each run milliseconds and test nothing more. A cache's cap
/// is still below the records a large input can hold, so loading evicts.
fn small_tables(params: &mut Params, class: DbmClass) {
    if class.takes("num_buckets") {
        params.insert("num_buckets", "64").expect("a number");
    }
    if class.takes("cap_rec_num") {
        params.insert("cap_rec_num", "4000").expect("a number");
    }
}

/// How a target opens and restores what it fuzzes.
trait Subject {
    fn open(&self, path: &Path, writable: bool) -> Result<Opened>;
    fn restore(&self, src: &Path, dest: &Path) -> Result<u64>;
    /// Whether a restore writes every record it keeps through kuradb's own
    /// writes, so that the restored database must be consistent. A tree's
    /// restore keeps the node records that pass their checksums, and a
    /// tree of nodes that were written damaged is not checked whole.
    fn restore_rewrites(&self) -> bool;
}

struct One {
    class: DbmClass,
    params: Params,
}

impl Subject for One {
    fn open(&self, path: &Path, writable: bool) -> Result<Opened> {
        let db = PolyDbm::open_class(
            self.class,
            Some(path),
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &self.params,
        )?;
        let order = db.key_order()?;
        Ok(Opened { db: Box::new(db), order, repeats: self.class == DbmClass::Skip })
    }

    fn restore(&self, src: &Path, dest: &Path) -> Result<u64> {
        self.class.restore(src, dest, &self.params)
    }

    fn restore_rewrites(&self) -> bool {
        self.class != DbmClass::Tree
    }
}

struct Shards {
    params: Params,
}

impl Subject for Shards {
    fn open(&self, path: &Path, writable: bool) -> Result<Opened> {
        let db =
            ShardDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &self.params)?;
        let (order, repeats) = (db.key_order(), db.class() == DbmClass::Skip);
        Ok(Opened { db: Box::new(db), order, repeats })
    }

    fn restore(&self, src: &Path, dest: &Path) -> Result<u64> {
        ShardDbm::restore(src, dest, &self.params)
    }

    fn restore_rewrites(&self) -> bool {
        false
    }
}

/// Reads the file at `path`, restores it to `restored`, then opens it for
/// writing (which restores it in place if it was not closed cleanly),
/// changes and rebuilds it. `limit` bounds the records any walk may show.
fn exercise(subject: &dyn Subject, path: &Path, restored: &Path, limit: usize) {
    match subject.open(path, false) {
        Ok(opened) => {
            read_everything(&opened, limit);
            close(opened);
        }
        Err(e) => clear(&e, "a read-only open"),
    }
    match subject.restore(path, restored) {
        Ok(kept) => {
            let opened =
                subject.open(restored, true).unwrap_or_else(|e| panic!("the restored database: {e}"));
            match walk(opened.db.as_ref(), limit) {
                Ok(records) => {
                    if subject.restore_rewrites() {
                        assert_consistent(&opened, &records, "the restored database");
                        assert_eq!(kept, records.len() as u64, "the restore's count of records kept");
                    }
                    change_and_rebuild(subject, opened, restored, limit);
                }
                // What a restore copies as it is (a tree's nodes, a set's
                // shards) may still be broken, and must say so.
                Err(e) if !subject.restore_rewrites() && e.kind() == ErrorKind::BrokenData => {
                    clear(&e, "a walk of the restored database");
                    close(opened);
                }
                Err(e) => panic!("a walk of the restored database: {e}"),
            }
        }
        Err(e) => clear(&e, "a restore"),
    }
    match subject.open(path, true) {
        Ok(opened) => {
            read_everything(&opened, limit);
            change_and_rebuild(subject, opened, path, limit);
        }
        Err(e) => clear(&e, "an open for writing"),
    }
}

const NEW_KEY: &[u8] = b"\x00fuzz: a new key";
const NEW_VALUE: &[u8] = b"fuzz: its value";

/// Sets a new record and removes the first one, then rebuilds: after a
/// rebuild that succeeds the database must be consistent, hold the changes
/// that succeeded, and reopen as it was closed.
fn change_and_rebuild(subject: &dyn Subject, opened: Opened, path: &Path, limit: usize) {
    let db = opened.db.as_ref();
    let limit = limit + 2;
    let first = walk(db, limit).ok().and_then(|records| records.into_iter().next().map(|(k, _)| k));
    let set = db.set(NEW_KEY, NEW_VALUE).map_err(|e| clear(&e, "a set")).is_ok();
    let removed = match &first {
        Some(key) if key.as_slice() != NEW_KEY => db.remove(key).map_err(|e| clear(&e, "a remove")).is_ok(),
        _ => false,
    };
    // A skip database shows its changes from its next synchronization.
    if let Err(e) = db.synchronize(Durability::Soft) {
        clear(&e, "a synchronization");
        return close(opened);
    }
    let seen_set = match db.get(NEW_KEY) {
        Ok(value) if set => {
            assert_eq!(value.as_deref(), Some(NEW_VALUE), "a get after a set that succeeded");
            true
        }
        Ok(_) => false,
        Err(e) => {
            clear(&e, "a get");
            false
        }
    };
    let seen_removed = match (&first, removed) {
        (Some(key), true) => match db.get(key) {
            Ok(value) => {
                assert_eq!(value, None, "a get after a remove that succeeded");
                true
            }
            Err(e) => {
                clear(&e, "a get");
                false
            }
        },
        _ => false,
    };
    if let Err(e) = db.rebuild() {
        clear(&e, "a rebuild");
        return close(opened);
    }
    assert_files_bounded(path);
    // A rebuild copies what it reads; a set whose shards hold each other's
    // records stays broken, and says so.
    let records: Vec<Record> = match walk(db, limit) {
        Ok(records) => records,
        Err(e) if e.kind() == ErrorKind::BrokenData => {
            clear(&e, "a walk after a rebuild");
            return close(opened);
        }
        Err(e) => panic!("a walk after a rebuild that succeeded: {e}"),
    };
    assert_consistent(&opened, &records, "after a rebuild");
    if seen_set {
        assert!(
            records.iter().any(|(k, v)| k == NEW_KEY && v == NEW_VALUE),
            "the set record after a rebuild"
        );
    }
    if let (Some(key), true) = (&first, seen_removed) {
        assert!(records.iter().all(|(k, _)| k != key), "the removed record is back after a rebuild");
    }
    let order = opened.order;
    if let Err(e) = opened.db.close() {
        return clear(&e, "a close after a rebuild");
    }
    let reopened = subject.open(path, false).unwrap_or_else(|e| panic!("a reopen after a rebuild: {e}"));
    let again = walk(reopened.db.as_ref(), limit).unwrap_or_else(|e| panic!("a walk after a reopen: {e}"));
    assert_eq!(sorted(again, order.is_some()), sorted(records, order.is_some()), "the database reopened");
    close(reopened);
}

/// The most bytes the files beside `path` may hold after a rebuild. Every
/// input is at most 32 KB; the default allocation of a new file is 1 MiB,
/// and a rebuild's table is sized by the records, which a damaged header
/// must not inflate (a claimed count once made an 18 GB file).
const FILES_LIMIT: u64 = 64 << 20;

#[track_caller]
fn assert_files_bounded(path: &Path) {
    let dir = path.parent().expect("a file in a directory");
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("list the scratch directory") {
        let entry = entry.expect("a directory entry");
        total += entry.metadata().map_or(0, |m| m.len());
    }
    assert!(
        total <= FILES_LIMIT,
        "the files after a rebuild hold {total} bytes, more than any input justifies"
    );
}

fn sorted(mut records: Vec<Record>, ordered: bool) -> Vec<Record> {
    if !ordered {
        records.sort();
    }
    records
}

fn close(opened: Opened) {
    if let Err(e) = opened.db.close() {
        clear(&e, "a close");
    }
}
