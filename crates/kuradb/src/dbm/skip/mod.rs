//! The skip database: records sorted in one file, found through skip
//! pointers, and updated in batches.
//!
//! The file holds the records in key order; the record at position `i`
//! points to those `step_unit`, `step_unit²` … `step_unit^max_level`
//! positions on (see `format.rs`). A lookup starts in the cache of the upper
//! levels (the records whose positions are multiples of a power of the step,
//! kept in memory), follows the pointers of the levels below it, and ends
//! with one read of the few records of level 0 between two level-1 records.
//!
//! The file is never changed in place. [`Dbm::set`] and [`Dbm::remove`] go
//! to a buffer in memory, which is sorted and spilled to a temporary file
//! whenever it passes `sort_mem_size`; [`Dbm::synchronize`] (and closing)
//! merge the old file, the spills and the buffer into a new file written
//! sequentially, then rename it over the old one. Readers see the state of
//! the last synchronization; a crash during a build leaves the previous file
//! as it was.
//!
//! Keys may repeat: a set adds a record beside the key's others, a remove
//! removes them all, and a [`Reducer`] chosen at synchronization can reduce
//! each key's records to one (the first, the last, their concatenation or
//! their sum).
//!
//! # Changes
//!
//! Every change goes through `SkipDbm::change` (in `pending.rs`), under the
//! lock of the pending changes and in the order the database applies them:
//! an update log, an index or a statistics counter attaches there. It sees
//!
//! - `Change::Add` from [`Dbm::set`] and [`SkipDbm::restore`] (one per
//!   record it saves), and `Change::Remove` then `Change::Add` from every
//!   answer that sets a value, as that replaces the key's records:
//!   [`Dbm::process`], [`Dbm::process_multi`], [`Dbm::process_each`] (and
//!   the methods built on them, such as append, compare_exchange, increment
//!   and the `_multi` forms) and a [`SkipCursor`]'s `set`;
//! - `Change::Remove` from [`Dbm::remove`], from every answer that removes,
//!   and from a cursor's `remove`;
//! - `Change::Clear` from [`Dbm::clear`];
//! - `Change::Reduce` from every build that reduces by a reducer other than
//!   [`Reducer::All`], just before it takes the changes queued so far:
//!   [`Dbm::rebuild`], [`SkipDbm::rebuild_with`],
//!   [`SkipDbm::synchronize_with`], and [`Dbm::synchronize`] and closing
//!   when the options' reducer is one.
//!
//! A build applies the changes it took, in order. One that fails gives them
//! back to wait for the next, ahead of newer ones, and its reduction is not
//! done (its error says so); a clear whose build fails waits likewise.
//!
//! # Values
//!
//! Every value a caller stores passes through `encode_value` (in
//! `value.rs`) as `SkipDbm::change` queues it, and every stored value handed
//! out passes through `decode_value`: to lookups ([`Dbm::get`],
//! [`Dbm::process`] and what is built on them), [`Dbm::process_each`], a
//! cursor's `get` (and so [`SkipDbm::range`]), [`SkipDbm::restore`] (the
//! records it reads from a damaged file, which it stores anew) and the
//! reducers, which read a key's values decoded and encode each one they
//! write. A codec (compression, encryption) attaches there; both are the
//! identity today.

mod build;
mod cursor;
mod format;
mod lockstep;
mod multi;
mod options;
mod params;
mod pending;
mod range;
mod reducer;
mod search;
mod synchronize;
mod value;

pub(crate) use format::sniff;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use self::build::UpperIndex;
use self::format::{Header, Window, HEADER_SIZE};
use self::pending::{Change, Pending};
use self::search::Snapshot;
use self::value::decode_value;
use super::params::{Params, Taker};
use super::{show_key, Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::dbm::{Access, Durability};
use crate::error::{Error, ErrorKind, Result};
use crate::file::{OpenOptions, Owner};

pub use self::cursor::SkipCursor;
pub use self::options::SkipOptions;
pub use self::range::SkipRange;
pub use self::reducer::Reducer;

/// A skip-list database on a file.
///
/// ```
/// use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
/// use kuradb::dbm::{Cursor, Dbm, Durability};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let db = SkipDbm::builder().open(dir.path().join("casket.skip"))?;
/// db.set(b"tokyo", b"13")?;
/// db.set(b"osaka", b"27")?;
/// db.set(b"tokyo", b"ward")?;
/// assert_eq!(db.get(b"tokyo")?, None); // not yet: readers see the last build
/// db.synchronize(Durability::Soft)?;
/// assert_eq!(db.count()?, 3); // a key may have several records
/// assert_eq!(db.get(b"tokyo")?.as_deref(), Some(&b"13"[..]));
/// db.synchronize_with(Durability::Soft, &Reducer::Last)?;
/// assert_eq!(db.get(b"tokyo")?.as_deref(), Some(&b"ward"[..]));
/// let keys: Vec<Vec<u8>> = db.range(&b"a"[..]..)?.map(|r| r.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"osaka".to_vec(), b"tokyo".to_vec()]);
/// db.close()?;
/// # Ok(())
/// # }
/// ```
pub struct SkipDbm {
    path: PathBuf,
    options: SkipOptions,
    /// The layout and memory tuning of the next build, from the options at
    /// open and changed by a rebuild with parameters.
    tuning: RwLock<Tuning>,
    writable: bool,
    current: RwLock<Option<Arc<Snapshot>>>,
    pending: Mutex<Pending>,
    /// Held by a build from start to swap: one build at a time.
    building: Mutex<()>,
    generation: AtomicU64,
    healthy: AtomicBool,
    /// The process that opened the database, outside which it works not at
    /// all (a build there would rename a new file over the parent's).
    owner: Owner,
}

crate::dbm::builder::options_builder!(SkipDbm, SkipOptions);

/// What of [`SkipOptions`] a rebuild may change: how builds lay out the
/// file and how much they hold in memory.
#[derive(Clone, Copy, Debug)]
struct Tuning {
    step_unit: u32,
    max_level: u8,
    offset_width: u8,
    max_cached_records: usize,
    sort_mem_size: usize,
}

impl Tuning {
    fn of(options: &SkipOptions) -> Tuning {
        Tuning {
            step_unit: options.step_unit,
            max_level: options.max_level,
            offset_width: options.offset_width,
            max_cached_records: options.max_cached_records,
            sort_mem_size: options.sort_mem_size,
        }
    }

    fn put(self, options: &mut SkipOptions) {
        options.step_unit = self.step_unit;
        options.max_level = self.max_level;
        options.offset_width = self.offset_width;
        options.max_cached_records = self.max_cached_records;
        options.sort_mem_size = self.sort_mem_size;
    }
}

impl SkipDbm {
    /// Opens or creates the database at `path`. A writer that finds the
    /// temporary files of a build or spill cut short by a crash removes them.
    pub fn open(path: impl AsRef<Path>, access: Access, options: &SkipOptions) -> Result<SkipDbm> {
        options.check()?;
        let path = path.as_ref().to_path_buf();
        let mut open = options.open.clone();
        open.writable = access.is_writable();
        let file = options.open_file(&path, &open)?;
        let db = SkipDbm {
            path,
            options: options.clone(),
            tuning: RwLock::new(Tuning::of(options)),
            writable: access.is_writable(),
            current: RwLock::new(None),
            pending: Mutex::new(Pending::default()),
            building: Mutex::new(()),
            generation: AtomicU64::new(0),
            healthy: AtomicBool::new(true),
            owner: Owner::unclaimed(),
        };
        let snapshot = if file.size() == 0 {
            if !access.is_writable() {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("{} is empty: not a database", db.path.display()),
                ));
            }
            // A new file: it holds no records yet, so nothing is lost if
            // this first build does not reach the device.
            let (file, header, index) = db.file_builder(file).finish()?;
            Snapshot { file, header, index, durable: AtomicBool::new(false), generation: 0 }
        } else {
            let mut head = vec![0u8; (HEADER_SIZE.min(file.size())) as usize];
            file.read(0, &mut head)?;
            let header = Header::decode(&head, file.size(), &db.path)?;
            let mut index = UpperIndex::load(file.as_ref(), &header, &db.path)?;
            index.fit(options.max_cached_records, u64::from(header.step_unit), header.max_level);
            Snapshot { file, header, index, durable: AtomicBool::new(true), generation: 0 }
        };
        if access.is_writable() {
            db.remove_leftovers();
        }
        *db.current.write() = Some(Arc::new(snapshot));
        Ok(db)
    }

    /// Removes the temporary files a crashed writer left. Only a writer, which
    /// holds the file's lock, may: no other process is building meanwhile.
    fn remove_leftovers(&self) {
        let Some(dir) = self.path.parent() else { return };
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        let Some(name) = self.path.file_name().and_then(|n| n.to_str()) else { return };
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(other) = file_name.to_str() else { continue };
            if let Some(rest) = other.strip_prefix(name).and_then(|r| r.strip_prefix('.')) {
                let ours = rest == "build-tmp"
                    || rest
                        .strip_prefix("spill-")
                        .and_then(|r| r.strip_suffix("-tmp"))
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if ours {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    fn snapshot(&self) -> Result<Arc<Snapshot>> {
        self.owner.check(&self.path)?;
        self.current.read().clone().ok_or_else(|| self.closed())
    }

    fn closed(&self) -> Error {
        Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display()))
    }

    fn read_only(&self) -> Error {
        Error::new(ErrorKind::ReadOnly, format!("{} is opened read-only", self.path.display()))
    }

    /// Writes pending updates to a new file and closes the database.
    pub fn close(self) -> Result<()> {
        self.shut()
    }

    fn shut(&self) -> Result<()> {
        let mut result = Ok(());
        if self.writable && self.current.read().is_some() {
            result = self.build(false, &self.options.reducer, false);
        }
        let Some(snapshot) = self.current.write().take() else { return result };
        match Arc::try_unwrap(snapshot) {
            Ok(mut snapshot) => result.and(snapshot.file.close()),
            // A reader of another thread still holds it: it closes when dropped.
            Err(_) => result,
        }
    }

    /// Copies the readable records of the damaged skip database at `src`, in
    /// order, up to the first that is broken or out of order, into a new
    /// database at `dest` built with `options`. Answers the number kept.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, options: &SkipOptions) -> Result<u64> {
        let src = src.as_ref();
        let mut open = OpenOptions::reader();
        open.no_lock = options.open.no_lock;
        open.lock_wait = options.open.lock_wait;
        let file = options.open_file(src, &open)?;
        let mut head = vec![0u8; HEADER_SIZE.min(file.size()) as usize];
        file.read(0, &mut head)?;
        let header = Header::decode(&head, u64::MAX, src).ok();
        let width = header.as_ref().map_or(options.offset_width, |h| h.width);
        let end = header.as_ref().map_or(file.size(), |h| h.records_end.min(file.size()));
        let mut dest_options = options.clone();
        dest_options.open = OpenOptions::writer().truncating();
        let db = SkipDbm::open(dest.as_ref(), Access::ReadWrite, &dest_options)?;
        let count = build::salvage(file.as_ref(), end, width, |key, value| db.set(key, decode_value(value)))?;
        db.close()?;
        Ok(count)
    }

    /// Adds a record at the next synchronization: [`Dbm::set`] and
    /// [`Dbm::insert`].
    fn store(&self, key: &[u8], value: &[u8], overwrite: bool) -> Result<()> {
        if !self.writable {
            return Err(self.read_only());
        }
        let mut pending = self.pending.lock();
        if !overwrite {
            let mut exists = false;
            self.lookup(key, |v| exists = v.is_some())?;
            if exists {
                return Err(Error::new(
                    ErrorKind::Duplication,
                    format!("record {} exists and overwriting was not asked for", show_key(key)),
                ));
            }
        }
        self.change(&mut pending, Change::Add { key, value })
    }
}

impl Drop for SkipDbm {
    fn drop(&mut self) {
        let _ = self.shut();
    }
}

impl Dbm for SkipDbm {
    fn close(self: Box<Self>) -> Result<()> {
        SkipDbm::close(*self)
    }

    /// Shows `key`'s first record as of the last synchronization; an answer
    /// to set replaces every record of the key at the next one.
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        if !access.is_writable() {
            let mut action = Action::Keep;
            self.lookup(key, |value| action = f(value))?;
            if action != Action::Keep {
                return Err(Error::new(ErrorKind::InvalidArgument, "a read-only process answered a change"));
            }
            return Ok(());
        }
        if !self.writable {
            return Err(self.read_only());
        }
        let mut pending = self.pending.lock();
        let mut action = Action::Keep;
        self.lookup(key, |value| action = f(value))?;
        self.answer(Some(&mut pending), key, action)
    }

    /// Looks the keys up together (their device reads go out in rounds,
    /// one batch per round: see `lockstep.rs`), then shows each as
    /// [`process`](Self::process) would; a key repeated is shown the value
    /// of the earlier answers.
    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.process_batch(keys, access.is_writable(), f)
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let _scan = crate::caching::ScanScope::enter();
        if access.is_writable() && !self.writable {
            return Err(self.read_only());
        }
        let mut pending = access.is_writable().then(|| self.pending.lock());
        let snapshot = self.snapshot()?;
        let mut window = Window::new(1 << 20);
        let mut at = HEADER_SIZE;
        while at < snapshot.header.records_end {
            let record = snapshot.read(&mut window, at, true)?;
            at = record.end();
            let action = f(window.key(&record), decode_value(window.value(&record)));
            if action != Action::Keep {
                let key = window.key(&record).to_vec();
                self.answer(pending.as_deref_mut(), &key, action)?;
            }
        }
        Ok(())
    }

    /// Adds a record; the key's other records stay (until a reducer says
    /// otherwise). With `overwrite == false`, a key that has a record as of
    /// the last synchronization is refused.
    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.store(key, value, true)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.store(key, value, false)
    }

    /// Removes every record of `key` at the next synchronization; answers
    /// whether the key has a record as of the last one.
    fn remove(&self, key: &[u8]) -> Result<bool> {
        if !self.writable {
            return Err(self.read_only());
        }
        let mut pending = self.pending.lock();
        let mut existed = false;
        self.lookup(key, |v| existed = v.is_some())?;
        self.change(&mut pending, Change::Remove { key })?;
        Ok(existed)
    }

    fn count(&self) -> Result<u64> {
        Ok(self.snapshot()?.header.count)
    }

    fn file_size(&self) -> Result<u64> {
        Ok(self.snapshot()?.file.size())
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    /// Removes every record now, pending updates included: the file is
    /// replaced by an empty one. If that build fails, the clear waits with
    /// the updates that follow it for the next synchronization, as any
    /// change does.
    fn clear(&self) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        // Held from the clear to its build, so that no failed build gives
        // back updates the clear removed.
        let building = self.building.lock();
        self.change(&mut self.pending.lock(), Change::Clear)?;
        self.build_holding(&building, false, &Reducer::All, true)
    }

    fn rebuild(&self) -> Result<()> {
        self.rebuild_with(&self.options.reducer)
    }

    /// Takes `reducer` and the tuning of the new file: `step_unit`,
    /// `max_level`, `offset_width`, `max_cached_records` and
    /// `sort_mem_size`, which stay the database's for later builds.
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        let mut t = Taker::new(params, "rebuilding a skip database");
        let reducer = params::take_reducer(&mut t)?;
        let mut wanted = self.options.clone();
        let current = *self.tuning.read();
        current.put(&mut wanted);
        if let Some(n) = t.number(&["offset_width"])? {
            wanted.offset_width = n;
        }
        if let Some(n) = t.number(&["step_unit"])? {
            wanted.step_unit = n;
        }
        if let Some(n) = t.number(&["max_level"])? {
            wanted.max_level = n;
        }
        if let Some(n) = t.number(&["max_cached_records"])? {
            wanted.max_cached_records = n;
        }
        if let Some(n) = t.number(&["sort_mem_size"])? {
            wanted.sort_mem_size = n;
        }
        t.finish()?;
        wanted.check()?;
        self.rebuild_tuned(reducer.as_ref().unwrap_or(&self.options.reducer), Tuning::of(&wanted))
    }

    /// A skip database's file is always compact: only pending updates make
    /// a build worthwhile, and synchronization does that.
    fn should_be_rebuilt(&self) -> Result<bool> {
        Ok(!self.pending.lock().is_empty())
    }

    /// Builds a new file with every update since the last one, reduced by the
    /// options' reducer (see [`SkipDbm::synchronize_with`]).
    fn synchronize(&self, durability: Durability) -> Result<()> {
        if !self.writable {
            return self.snapshot()?.file.synchronize(durability);
        }
        self.build(durability.is_hard(), &self.options.reducer, false)
    }

    /// Copies the file of the last synchronization: updates since then are
    /// not in the copy.
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        let snapshot = self.snapshot()?;
        super::copy_file_to(snapshot.file.as_ref(), dest, durability.is_hard(), |_, _| {})
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let snapshot = self.snapshot()?;
        let header = &snapshot.header;
        let pending = self.pending.lock();
        let mut out = vec![
            ("class".to_string(), "SkipDbm".to_string()),
            ("path".to_string(), self.path.display().to_string()),
            ("num_records".to_string(), header.count.to_string()),
            ("eff_data_size".to_string(), header.data_size.to_string()),
            ("file_size".to_string(), snapshot.file.size().to_string()),
            ("step_unit".to_string(), header.step_unit.to_string()),
            ("max_level".to_string(), header.max_level.to_string()),
            ("offset_width".to_string(), header.width.to_string()),
            ("cached_level".to_string(), snapshot.index.level.to_string()),
            ("cached_records".to_string(), snapshot.index.len().to_string()),
            ("cache_memory".to_string(), snapshot.index.memory().to_string()),
            ("pending_updates".to_string(), pending.memory.len().to_string()),
            ("pending_memory".to_string(), pending.memory.memory().to_string()),
            ("sort_files".to_string(), pending.spills.len().to_string()),
            ("reducer".to_string(), format!("{:?}", self.options.reducer)),
        ];
        out.extend(snapshot.file.inspect().into_iter().map(|(k, v)| (format!("file_{k}"), v)));
        Ok(out)
    }

    fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire) && self.current.read().is_some()
    }

    fn is_ordered(&self) -> bool {
        true
    }

    /// Its file is rewritten whole at a synchronization; a crash leaves the last one.
    fn restores_to_last_sync(&self) -> bool {
        true
    }

    fn updates_show_at_sync(&self) -> bool {
        true
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.snapshot()?;
        Ok(Box::new(self.cursor()))
    }
}

#[cfg(test)]
mod tests;
