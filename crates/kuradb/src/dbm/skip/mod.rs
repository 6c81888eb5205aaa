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

mod build;
mod format;
mod params;

pub(crate) use format::sniff;

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use self::build::{Builder, MemoryRun, OldFile, Run, UpperIndex};
use self::format::{Header, Record, Window, HEADER_SIZE};
use super::params::{Params, Taker};
use super::{show_key, Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};
use crate::file::{temp_beside, File, FileSpec, FileWrapper, OpenOptions, Owner};

/// How a synchronization reduces the records of each key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reducer {
    /// Keeps every record, in the order they were added.
    #[default]
    All,
    /// Keeps the oldest record.
    First,
    /// Keeps the newest record.
    Last,
    /// Keeps one record holding every value, oldest first, with the
    /// delimiter between them.
    Concat(Vec<u8>),
    /// Keeps one record holding the sum of the values read as decimal
    /// numbers (integers, or real numbers if any value has a fraction or an
    /// exponent); a value that is not a number counts as zero.
    Total,
}

impl Reducer {
    /// The reducer of a name: `none` (or `all`), `first`, `last`, `concat`,
    /// `concat_null`, `concat_tab`, `concat_line`, `total` (or `sum`); the
    /// reference's `ReduceToFirst`-style names are accepted too.
    pub fn from_name(name: &str) -> Result<Reducer> {
        let lower = name.trim().to_ascii_lowercase();
        let short = lower.strip_prefix("reduce").map(|s| s.trim_start_matches("to")).unwrap_or(&lower);
        Ok(match short {
            "none" | "all" | "" => Reducer::All,
            "first" => Reducer::First,
            "last" => Reducer::Last,
            "concat" => Reducer::Concat(Vec::new()),
            "concatwithnull" | "concat_null" => Reducer::Concat(vec![0]),
            "concatwithtab" | "concat_tab" => Reducer::Concat(vec![b'\t']),
            "concatwithline" | "concat_line" => Reducer::Concat(vec![b'\n']),
            "total" | "sum" => Reducer::Total,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown reducer {name:?}: expected none, first, last, concat, concat_null, \
                         concat_tab, concat_line or total"
                    ),
                ))
            }
        })
    }

    fn reduce(&self, key: &[u8], group: &build::Group, out: &mut Builder) -> Result<()> {
        if group.len() == 0 {
            return Ok(());
        }
        match self {
            Reducer::All => (0..group.len()).try_for_each(|i| out.add(key, group.get(i))),
            Reducer::First => out.add(key, group.get(0)),
            Reducer::Last => out.add(key, group.get(group.len() - 1)),
            Reducer::Concat(delimiter) if delimiter.is_empty() => out.add(key, group.all()),
            Reducer::Concat(delimiter) => {
                let joined = (0..group.len()).map(|i| group.get(i)).collect::<Vec<_>>().join(&delimiter[..]);
                out.add(key, &joined)
            }
            Reducer::Total => out.add(key, total((0..group.len()).map(|i| group.get(i))).as_bytes()),
        }
    }
}

/// The sum of decimal numbers, as decimal text.
fn total<'a>(values: impl Iterator<Item = &'a [u8]>) -> String {
    let (mut integers, mut reals, mut any_real) = (0i128, 0f64, false);
    for value in values {
        let text = std::str::from_utf8(value).unwrap_or("").trim();
        if let Ok(n) = text.parse::<i64>() {
            integers += i128::from(n);
            reals += n as f64;
        } else if let Ok(x) = text.parse::<f64>() {
            any_real = true;
            reals += x;
        }
    }
    if any_real {
        reals.to_string()
    } else {
        integers.to_string()
    }
}

/// Everything [`SkipDbm::open`] takes. `step_unit`, `max_level` and
/// `offset_width` apply when a file is built; a reopen reads them from the file
/// until the next rebuild.
#[derive(Clone, Debug)]
pub struct SkipOptions {
    /// The file implementation and its options (reads are random; builds
    /// write sequentially through the same implementation).
    pub file: FileSpec,
    /// Locking and creation of the file (its `writable` field is set by `open`).
    pub open: OpenOptions,
    /// Each level's pointers skip step_unit times as many records as the
    /// level below's (tuning, at build; at least 2).
    pub step_unit: u32,
    /// The number of levels of pointers (tuning, at build; 1 to 31).
    pub max_level: u8,
    /// Bytes of a skip pointer, 3 to 8: 2^(8 × width) bytes of records at
    /// most (tuning, at build).
    pub offset_width: u8,
    /// Records of the upper levels kept in memory: the highest levels whose
    /// records number at most this many.
    pub max_cached_records: usize,
    /// Bytes of updates held in memory before they are sorted and spilled
    /// to a temporary file.
    pub sort_mem_size: usize,
    /// The caller promises updates in ascending key order: they are checked
    /// as they arrive (an update out of order is refused) and never sorted.
    pub insert_in_order: bool,
    /// How [`Dbm::synchronize`] and closing reduce each key's records.
    pub reducer: Reducer,
    /// Wraps every file the database opens (for tests).
    pub wrap_file: Option<FileWrapper>,
}

impl Default for SkipOptions {
    fn default() -> SkipOptions {
        SkipOptions {
            file: FileSpec::default(),
            open: OpenOptions::writer(),
            step_unit: 4,
            max_level: 14,
            offset_width: 5,
            max_cached_records: 65_536,
            sort_mem_size: 256 << 20,
            insert_in_order: false,
            reducer: Reducer::All,
            wrap_file: None,
        }
    }
}

impl SkipOptions {
    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
        if self.step_unit < 2 {
            return bad(format!("step_unit must be at least 2, not {}", self.step_unit));
        }
        if self.max_level == 0 || self.max_level > format::MAX_LEVEL {
            return bad(format!("max_level must be 1 to {}, not {}", format::MAX_LEVEL, self.max_level));
        }
        if !(3..=8).contains(&self.offset_width) {
            return bad(format!("offset_width must be 3 to 8, not {}", self.offset_width));
        }
        self.file.validate()
    }

    fn open_file(&self, path: &Path, open: &OpenOptions) -> Result<Box<dyn File>> {
        crate::file::open_wrapped(&self.file, self.wrap_file.as_ref(), path, open)
    }
}

/// One built file and what is known of it.
struct Snapshot {
    file: Box<dyn File>,
    header: Header,
    index: UpperIndex,
    /// Whether the file is known to be on the device, name and all (it was
    /// there when opened, or it was synchronized hard, at its build or
    /// later): replacing it then requires the new file to be on the device
    /// first.
    durable: AtomicBool,
    generation: u64,
}

/// A record's place in a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Position {
    index: u64,
    offset: u64,
}

impl Snapshot {
    fn width(&self) -> usize {
        usize::from(self.header.width)
    }

    fn step(&self) -> u64 {
        u64::from(self.header.step_unit)
    }

    fn read(&self, window: &mut Window, offset: u64, value: bool) -> Result<Record> {
        window.record(self.file.as_ref(), self.header.records_end, offset, self.width(), value)
    }

    /// Bytes a lookup's last step reads at once: the level-0 records between
    /// two level-1 records, by the file's average record size. From a memory
    /// map, only what each record's key needs: reading ahead there is copying.
    fn span(&self) -> usize {
        let average = (self.header.records_end - HEADER_SIZE) / self.header.count.max(1);
        (average.saturating_mul(self.step() + 1) + 64).min(1 << 16) as usize
    }

    /// The first record `below` does not hold for, or `None`.
    fn seek(&self, window: &mut Window, below: Below<'_>) -> Result<Option<Position>> {
        if self.header.count == 0 {
            return Ok(None);
        }
        let before = |k: &[u8]| below.holds(k);
        let index = &self.index;
        // Most comparisons end at the first eight bytes, kept apart so the
        // search reads one compact array.
        let prefix = build::prefix_of(below.key);
        let p = index.partition_point(|i| match index.prefixes[i].cmp(&prefix) {
            std::cmp::Ordering::Equal => before(index.key(i)),
            order => order == std::cmp::Ordering::Less,
        });
        if p == 0 {
            return Ok(Some(Position { index: 0, offset: HEADER_SIZE }));
        }
        let mut at = Position { index: (p as u64 - 1) * index.stride, offset: index.offsets[p - 1] };
        window.set_chunk(self.span());
        for level in (1..index.level.min(self.header.max_level + 1)).rev() {
            let stride = format::stride(self.step(), level);
            loop {
                // Read again: the window may have moved to a rejected target.
                let record = self.read(window, at.offset, false)?;
                let next = window.pointer(&record, level, self.width(), self.header.records_end)?;
                if next == 0 {
                    break;
                }
                if at.index.saturating_add(stride) >= self.header.count {
                    return Err(self.broken("a skip pointer leads past the last record"));
                }
                let target = self.read(window, next, false)?;
                if !before(window.key(&target)) {
                    break;
                }
                at = Position { index: at.index + stride, offset: next };
            }
        }
        // Level 0: at most step_unit records, usually in the window already.
        let mut record = self.read(window, at.offset, false)?;
        loop {
            let next = record.end();
            if next >= self.header.records_end {
                return Ok(None);
            }
            record = self.read(window, next, false)?;
            at = Position { index: at.index + 1, offset: next };
            if !before(window.key(&record)) {
                return Ok(Some(at));
            }
        }
    }

    /// The record at position `target`, or `None` past the last.
    fn locate(&self, window: &mut Window, target: u64) -> Result<Option<Position>> {
        if target >= self.header.count {
            return Ok(None);
        }
        let index = &self.index;
        let j = (target / index.stride) as usize;
        let offset = *index.offsets.get(j).ok_or_else(|| self.broken("its index is too short"))?;
        let mut at = Position { index: j as u64 * index.stride, offset };
        let mut record = self.read(window, at.offset, false)?;
        for level in (1..index.level.min(self.header.max_level + 1)).rev() {
            let stride = format::stride(self.step(), level);
            while at.index + stride <= target {
                let next = window.pointer(&record, level, self.width(), self.header.records_end)?;
                if next == 0 {
                    return Err(self.broken("a skip pointer is missing"));
                }
                record = self.read(window, next, false)?;
                at = Position { index: at.index + stride, offset: next };
            }
        }
        while at.index < target {
            let next = record.end();
            record = self.read(window, next, false)?;
            at = Position { index: at.index + 1, offset: next };
        }
        Ok(Some(at))
    }

    /// The first record of `key`'s, with its value.
    fn get(&self, window: &mut Window, key: &[u8]) -> Result<Option<Record>> {
        let Some(at) = self.seek(window, Below { key, or_equal: false })? else { return Ok(None) };
        let record = self.read(window, at.offset, true)?;
        Ok((window.key(&record) == key).then_some(record))
    }

    fn broken(&self, what: &str) -> Error {
        Error::new(
            ErrorKind::BrokenData,
            format!("the skip database {} is damaged: {what}", self.file.path().display()),
        )
    }
}

/// The records a seek passes over: those whose keys are below `key`, or
/// not above it (`or_equal`).
#[derive(Clone, Copy)]
struct Below<'k> {
    key: &'k [u8],
    or_equal: bool,
}

impl Below<'_> {
    fn holds(&self, k: &[u8]) -> bool {
        if self.or_equal {
            k <= self.key
        } else {
            k < self.key
        }
    }
}

/// Updates since the last synchronization.
#[derive(Default)]
struct Pending {
    spills: Vec<PathBuf>,
    memory: MemoryRun,
    /// Names the next spill file.
    next_spill: u64,
}

/// Spills beyond this many are merged into one before the next is written.
const MAX_SPILLS: usize = 32;

/// A skip-list database on a file.
///
/// ```
/// use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
/// use kuradb::dbm::{Cursor, Dbm};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let db = SkipDbm::open(dir.path().join("casket.skip"), true, &SkipOptions::default())?;
/// db.set(b"tokyo", b"13", true)?;
/// db.set(b"osaka", b"27", true)?;
/// db.set(b"tokyo", b"ward", true)?;
/// assert_eq!(db.get(b"tokyo")?, None); // not yet: readers see the last build
/// db.synchronize(false)?;
/// assert_eq!(db.count()?, 3); // a key may have several records
/// assert_eq!(db.get(b"tokyo")?.as_deref(), Some(&b"13"[..]));
/// db.synchronize_with(false, &Reducer::Last)?;
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

impl SkipDbm {
    /// Opens or creates the database at `path`. A writer that finds the
    /// temporary files of a build or spill cut short by a crash removes them.
    pub fn open(path: impl AsRef<Path>, writable: bool, options: &SkipOptions) -> Result<SkipDbm> {
        options.check()?;
        let path = path.as_ref().to_path_buf();
        let mut open = options.open.clone();
        open.writable = writable;
        let file = options.open_file(&path, &open)?;
        let db = SkipDbm {
            path,
            options: options.clone(),
            writable,
            current: RwLock::new(None),
            pending: Mutex::new(Pending::default()),
            building: Mutex::new(()),
            generation: AtomicU64::new(0),
            healthy: AtomicBool::new(true),
            owner: Owner::unclaimed(),
        };
        let snapshot = if file.size() == 0 {
            if !writable {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("{} is empty: not a database", db.path.display()),
                ));
            }
            // A new file: it holds no records yet, so nothing is lost if
            // this first build does not reach the device.
            let (file, header, index) = db.builder(file).finish()?;
            Snapshot { file, header, index, durable: AtomicBool::new(false), generation: 0 }
        } else {
            let mut head = vec![0u8; (HEADER_SIZE.min(file.size())) as usize];
            file.read(0, &mut head)?;
            let header = Header::decode(&head, file.size(), &db.path)?;
            let mut index = UpperIndex::load(file.as_ref(), &header, &db.path)?;
            index.fit(options.max_cached_records, u64::from(header.step_unit), header.max_level);
            Snapshot { file, header, index, durable: AtomicBool::new(true), generation: 0 }
        };
        if writable {
            db.remove_leftovers();
        }
        *db.current.write() = Some(Arc::new(snapshot));
        Ok(db)
    }

    fn builder(&self, file: Box<dyn File>) -> Builder {
        Builder::new(
            file,
            &self.path,
            self.options.step_unit,
            self.options.max_level,
            self.options.offset_width,
            self.options.max_cached_records,
            self.options.file.padding || self.options.file.direct,
        )
    }

    fn spill_path(&self, n: u64) -> PathBuf {
        temp_beside(&self.path, &format!("spill-{n}"))
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
        Error::new(ErrorKind::Infeasible, format!("{} is opened read-only", self.path.display()))
    }

    /// Queues an update: a record (`Some`) or the removal of `key`'s records.
    fn queue(&self, pending: &mut Pending, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        if key.len() > build::MAX_ITEM || value.is_some_and(|v| v.len() > build::MAX_ITEM) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the record of {} is too large: keys and values take at most 4 GiB - 2 bytes",
                    show_key(key)
                ),
            ));
        }
        if self.options.insert_in_order {
            if let Some(last) = pending.memory.last_key() {
                if key < last {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "insert_in_order is set but {} comes after {}",
                            show_key(key),
                            show_key(last)
                        ),
                    ));
                }
            }
        }
        pending.memory.push(key, value);
        if pending.memory.memory() >= self.options.sort_mem_size {
            self.spill(pending)?;
        }
        Ok(())
    }

    /// Sorts the memory run and writes it to a temporary file.
    fn spill(&self, pending: &mut Pending) -> Result<()> {
        if pending.spills.len() >= MAX_SPILLS {
            let path = self.spill_path(pending.next_spill);
            pending.next_spill += 1;
            build::combine_spills(&pending.spills, &path)?;
            for old in std::mem::replace(&mut pending.spills, vec![path]) {
                let _ = std::fs::remove_file(old);
            }
        }
        let mut memory = std::mem::take(&mut pending.memory);
        if !self.options.insert_in_order {
            memory.sort();
        }
        let path = self.spill_path(pending.next_spill);
        pending.next_spill += 1;
        if let Err(e) = memory.spill(&path) {
            let _ = std::fs::remove_file(&path);
            pending.memory = memory;
            return Err(e);
        }
        pending.spills.push(path);
        Ok(())
    }

    /// Builds a new file from the last one and every update since, each
    /// key's records reduced by `reducer`, and puts it in the old one's
    /// place. With `hard`, the new file is on the device before this returns.
    /// A reducer other than [`Reducer::All`] rebuilds even if nothing is
    /// pending; [`Dbm::synchronize`] builds only if something is, with the
    /// options' reducer.
    pub fn synchronize_with(&self, hard: bool, reducer: &Reducer) -> Result<()> {
        if !self.writable {
            return self.snapshot()?.file.synchronize(hard);
        }
        self.build(hard, reducer, *reducer != Reducer::All)
    }

    /// Builds a new file even if nothing changed (`force`): a rebuild.
    fn build(&self, hard: bool, reducer: &Reducer, force: bool) -> Result<()> {
        let _building = self.building.lock();
        let old = self.snapshot()?;
        let (spills, mut memory) = {
            let mut pending = self.pending.lock();
            (std::mem::take(&mut pending.spills), std::mem::take(&mut pending.memory))
        };
        if spills.is_empty() && memory.is_empty() && !force {
            old.file.synchronize(hard)?;
            if hard && !old.durable.load(Ordering::Acquire) {
                // A soft build renamed this file in place without making the
                // name durable; from now on it is the state a power cut must
                // keep, so the next build has to reach the device before it
                // replaces it.
                crate::sys::sync_parent_dir(&self.path)
                    .map_err(|e| Error::io("synchronizing the directory of", &self.path, e))?;
                old.durable.store(true, Ordering::Release);
            }
            return Ok(());
        }
        if !self.options.insert_in_order {
            memory.sort();
        }
        let mut runs: Vec<Run> = spills.iter().cloned().map(Run::Spill).collect();
        runs.push(Run::Memory(memory));
        let temp = temp_beside(&self.path, "build");
        let durable = hard || (old.durable.load(Ordering::Acquire) && old.header.count > 0);
        let built = self.build_file(Some(&old), &runs, reducer, &temp, durable);
        let memory = match runs.pop() {
            Some(Run::Memory(memory)) => memory,
            _ => MemoryRun::default(),
        };
        match built {
            Ok(snapshot) => {
                *self.current.write() = Some(Arc::new(snapshot));
                for path in &spills {
                    let _ = std::fs::remove_file(path);
                }
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                // The updates wait for the next attempt, before any newer ones.
                let mut pending = self.pending.lock();
                let newer = std::mem::replace(&mut pending.memory, memory);
                pending.memory.append(newer);
                let newer_spills = std::mem::replace(&mut pending.spills, spills);
                pending.spills.extend(newer_spills);
                Err(e)
            }
        }
    }

    /// Writes a file at `temp` from `old`'s records and `runs`, makes it the
    /// database's file and answers its snapshot. With `durable` the file is
    /// on the device before it takes the old one's name, and the name after.
    fn build_file(
        &self,
        old: Option<&Snapshot>,
        runs: &[Run],
        reducer: &Reducer,
        temp: &Path,
        durable: bool,
    ) -> Result<Snapshot> {
        let mut open = self.options.open.clone();
        open.writable = true;
        open.create = true;
        open.truncate = true;
        let file = self.options.open_file(temp, &open)?;
        let mut builder = self.builder(file);
        let source = old.map(|old| OldFile { file: old.file.as_ref(), header: &old.header });
        build::merge(source, runs, reducer, &mut builder)?;
        let (file, header, index) = builder.finish()?;
        file.synchronize(durable)?;
        std::fs::rename(temp, &self.path)
            .map_err(|e| Error::io("rename of the built file", &self.path, e))?;
        if durable {
            crate::sys::sync_parent_dir(&self.path)
                .map_err(|e| Error::io("synchronizing the directory of", &self.path, e))?;
        }
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        Ok(Snapshot { file, header, index, durable: AtomicBool::new(durable), generation })
    }

    /// Rebuilds the file with the options' step, levels and offset width,
    /// reducing each key's records by `reducer` (every pending update
    /// included).
    pub fn rebuild_with(&self, reducer: &Reducer) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        self.build(false, reducer, true)
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
        let file = options.open_file(src, &open)?;
        let mut head = vec![0u8; HEADER_SIZE.min(file.size()) as usize];
        file.read(0, &mut head)?;
        let header = Header::decode(&head, u64::MAX, src).ok();
        let width = header.as_ref().map_or(options.offset_width, |h| h.width);
        let end = header.as_ref().map_or(file.size(), |h| h.records_end.min(file.size()));
        let mut dest_options = options.clone();
        dest_options.open = OpenOptions::writer().truncating();
        let db = SkipDbm::open(dest.as_ref(), true, &dest_options)?;
        let count = build::salvage(file.as_ref(), end, width, |key, value| db.set(key, value, true))?;
        db.close()?;
        Ok(count)
    }

    /// The records whose keys fall in `range`, in order (every record of a
    /// repeated key).
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<SkipRange<'_>> {
        let mut cursor = self.cursor();
        match range.start_bound() {
            Bound::Included(k) => cursor.jump(k.as_ref())?,
            Bound::Excluded(k) => cursor.jump_upper(k.as_ref(), false)?,
            Bound::Unbounded => cursor.first()?,
        }
        let end = match range.end_bound() {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Ok(SkipRange { cursor, end, started: false, done: false })
    }

    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> SkipCursor<'_> {
        SkipCursor { db: self, snapshot: None, at: None, key: Vec::new(), window: Window::new(1 << 12) }
    }

    fn lookup(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>)) -> Result<()> {
        thread_local! {
            /// A lookup's buffer, kept for the thread's next (emptied first:
            /// it may hold bytes of another file).
            static WINDOW: std::cell::RefCell<Window> = std::cell::RefCell::new(Window::new(256));
        }
        let snapshot = self.snapshot()?;
        WINDOW.with(|cell| {
            let mut guard = cell.try_borrow_mut();
            let mut own = None;
            // A processor that looks up again from inside gets a buffer of its own.
            let window = match guard.as_deref_mut() {
                Ok(window) => window,
                Err(_) => own.insert(Window::new(256)),
            };
            window.reset();
            match snapshot.get(window, key)? {
                Some(record) => f(Some(window.value(&record))),
                None => f(None),
            }
            Ok(())
        })
    }

    /// Carries out a processor's answer for `key` as updates; `pending` is
    /// `None` for a read-only process, which may answer only [`Action::Keep`].
    fn answer(&self, pending: Option<&mut Pending>, key: &[u8], action: Action<'_>) -> Result<()> {
        let Some(pending) = pending else {
            if action == Action::Keep {
                return Ok(());
            }
            return Err(Error::new(ErrorKind::InvalidArgument, "a read-only process answered a change"));
        };
        match action {
            Action::Keep => Ok(()),
            Action::Remove => self.queue(pending, key, None),
            Action::Set(value) => {
                // Replaces the key's records: they go, then the new one comes.
                self.queue(pending, key, None)?;
                self.queue(pending, key, Some(&value))
            }
        }
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
    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        if !writable {
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

    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        // Later occurrences of a key see the earlier answers, though the
        // file shows none of them until the next synchronization.
        let mut answered: HashMap<&[u8], Option<Vec<u8>>> = HashMap::new();
        let mut pending = writable.then(|| self.pending.lock());
        for (i, &key) in keys.iter().enumerate() {
            let action = match answered.get(key) {
                Some(value) => f(i, key, value.as_deref()),
                None => {
                    let mut action = Action::Keep;
                    self.lookup(key, |value| action = f(i, key, value))?;
                    action
                }
            };
            if action != Action::Keep {
                let value = match &action {
                    Action::Set(v) => Some(v.to_vec()),
                    _ => None,
                };
                self.answer(pending.as_deref_mut(), key, action)?;
                answered.insert(key, value);
            }
        }
        Ok(())
    }

    fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        let mut pending = writable.then(|| self.pending.lock());
        let snapshot = self.snapshot()?;
        let mut window = Window::new(1 << 20);
        let mut at = HEADER_SIZE;
        while at < snapshot.header.records_end {
            let record = snapshot.read(&mut window, at, true)?;
            at = record.end();
            let action = f(window.key(&record), window.value(&record));
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
    fn set(&self, key: &[u8], value: &[u8], overwrite: bool) -> Result<()> {
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
        self.queue(&mut pending, key, Some(value))
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
        self.queue(&mut pending, key, None)?;
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
    /// replaced by an empty one.
    fn clear(&self) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        let _building = self.building.lock();
        let old = self.snapshot()?;
        let (spills, memory) = {
            let mut pending = self.pending.lock();
            (std::mem::take(&mut pending.spills), std::mem::take(&mut pending.memory))
        };
        drop(memory);
        for path in spills {
            let _ = std::fs::remove_file(path);
        }
        let temp = temp_beside(&self.path, "build");
        let durable = old.durable.load(Ordering::Acquire) && old.header.count > 0;
        match self.build_file(None, &[], &Reducer::All, &temp, durable) {
            Ok(snapshot) => {
                *self.current.write() = Some(Arc::new(snapshot));
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                Err(e)
            }
        }
    }

    fn rebuild(&self) -> Result<()> {
        self.rebuild_with(&self.options.reducer)
    }

    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        let mut t = Taker::new(params, "rebuilding a skip database");
        let reducer = params::take_reducer(&mut t)?;
        t.finish()?;
        self.rebuild_with(reducer.as_ref().unwrap_or(&self.options.reducer))
    }

    /// A skip database's file is always compact: only pending updates make
    /// a build worthwhile, and synchronization does that.
    fn should_be_rebuilt(&self) -> Result<bool> {
        let pending = self.pending.lock();
        Ok(!pending.memory.is_empty() || !pending.spills.is_empty())
    }

    /// Builds a new file with every update since the last one, reduced by the
    /// options' reducer (see [`SkipDbm::synchronize_with`]).
    fn synchronize(&self, hard: bool) -> Result<()> {
        if !self.writable {
            return self.snapshot()?.file.synchronize(hard);
        }
        self.build(hard, &self.options.reducer, false)
    }

    /// Copies the file of the last synchronization: updates since then are
    /// not in the copy.
    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        let snapshot = self.snapshot()?;
        super::copy_file_to(snapshot.file.as_ref(), dest, hard, |_, _| {})
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

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.snapshot()?;
        Ok(Box::new(self.cursor()))
    }
}

/// A position among a skip database's records. It reads the state of the
/// last synchronization; after a newer one it finds its key again in the
/// new file (the first record of the key, or the first after it).
pub struct SkipCursor<'a> {
    db: &'a SkipDbm,
    snapshot: Option<Arc<Snapshot>>,
    at: Option<Position>,
    /// The key at `at`, to find the place again in a newer file.
    key: Vec<u8>,
    window: Window,
}

impl SkipCursor<'_> {
    /// The current snapshot, the position moved into it if it is newer.
    fn fresh(&mut self) -> Result<Arc<Snapshot>> {
        let current = self.db.snapshot()?;
        if let Some(old) = &self.snapshot {
            if old.generation != current.generation {
                // The window holds bytes of the old file.
                self.window.reset();
                if self.at.is_some() {
                    let key = std::mem::take(&mut self.key);
                    let at = current.seek(&mut self.window, Below { key: &key, or_equal: false })?;
                    self.place(&current, at)?;
                }
            }
        }
        self.snapshot = Some(current.clone());
        Ok(current)
    }

    fn place(&mut self, snapshot: &Snapshot, at: Option<Position>) -> Result<()> {
        self.at = at;
        self.key.clear();
        if let Some(at) = at {
            let record = snapshot.read(&mut self.window, at.offset, false)?;
            self.key.extend_from_slice(self.window.key(&record));
        }
        Ok(())
    }

    fn past_end() -> Error {
        Error::new(ErrorKind::NotFound, "the cursor is past the last record")
    }

    fn seek_by(&mut self, below: Below<'_>) -> Result<()> {
        let snapshot = self.fresh()?;
        self.window.set_chunk(1 << 12);
        let at = snapshot.seek(&mut self.window, below)?;
        self.place(&snapshot, at)
    }

    /// Moves to the last record `below` holds for.
    fn seek_before(&mut self, below: Below<'_>) -> Result<()> {
        let snapshot = self.fresh()?;
        let at = snapshot.seek(&mut self.window, below)?;
        let target = match at {
            Some(at) if at.index == 0 => return self.place(&snapshot, None),
            Some(at) => at.index - 1,
            None if snapshot.header.count == 0 => return self.place(&snapshot, None),
            None => snapshot.header.count - 1,
        };
        let at = snapshot.locate(&mut self.window, target)?;
        self.place(&snapshot, at)
    }
}

impl Cursor for SkipCursor<'_> {
    fn first(&mut self) -> Result<()> {
        let snapshot = self.fresh()?;
        let at = (snapshot.header.count > 0).then_some(Position { index: 0, offset: HEADER_SIZE });
        self.place(&snapshot, at)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek_by(Below { key, or_equal: false })
    }

    fn next(&mut self) -> Result<()> {
        let snapshot = self.fresh()?;
        let Some(at) = self.at else { return Ok(()) };
        self.window.set_chunk(1 << 16);
        let record = snapshot.read(&mut self.window, at.offset, false)?;
        let next = record.end();
        let at =
            (next < snapshot.header.records_end).then_some(Position { index: at.index + 1, offset: next });
        self.place(&snapshot, at)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let snapshot = self.fresh()?;
        let Some(at) = self.at else { return Ok(None) };
        let record = snapshot.read(&mut self.window, at.offset, true)?;
        Ok(Some((self.window.key(&record).to_vec(), self.window.value(&record).to_vec())))
    }

    /// Replaces every record of the key at the position with one of `value`,
    /// at the next synchronization.
    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                let mut pending = self.db.pending.lock();
                self.db.answer(Some(&mut pending), &key, Action::Set(Cow::Borrowed(value)))
            }
            None => Err(Self::past_end()),
        }
    }

    /// Removes every record of the key at the position, at the next
    /// synchronization; the cursor moves to the next record.
    fn remove(&mut self) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                {
                    let mut pending = self.db.pending.lock();
                    self.db.queue(&mut pending, &key, None)?;
                }
                self.next()
            }
            None => Err(Self::past_end()),
        }
    }

    fn last(&mut self) -> Result<()> {
        let snapshot = self.fresh()?;
        let at = match snapshot.header.count {
            0 => None,
            n => snapshot.locate(&mut self.window, n - 1)?,
        };
        self.place(&snapshot, at)
    }

    fn jump_lower(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek_before(Below { key, or_equal: inclusive })
    }

    fn jump_upper(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek_by(Below { key, or_equal: !inclusive })
    }

    fn previous(&mut self) -> Result<()> {
        let snapshot = self.fresh()?;
        let Some(at) = self.at else { return Ok(()) };
        let at = match at.index {
            0 => None,
            i => snapshot.locate(&mut self.window, i - 1)?,
        };
        self.place(&snapshot, at)
    }
}

/// The records of a key range, in order (see [`SkipDbm::range`]).
pub struct SkipRange<'a> {
    cursor: SkipCursor<'a>,
    end: Bound<Vec<u8>>,
    started: bool,
    done: bool,
}

impl Iterator for SkipRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = (|| {
            if self.started {
                self.cursor.next()?;
            }
            self.started = true;
            self.cursor.get()
        })();
        let record = match step {
            Ok(Some(record)) => record,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let inside = match &self.end {
            Bound::Included(end) => record.0 <= *end,
            Bound::Excluded(end) => record.0 < *end,
            Bound::Unbounded => true,
        };
        if !inside {
            self.done = true;
            return None;
        }
        Some(Ok(record))
    }
}

#[cfg(test)]
mod tests;
