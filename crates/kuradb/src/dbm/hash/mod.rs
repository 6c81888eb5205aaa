//! HashDbm: a hash table in a file.
//!
//! The file holds a header, an array of buckets and the records (see
//! `header.rs` and `record.rs`). A key's bucket holds the offset of the first
//! record of a chain linked through the records' `next` fields.
//!
//! # Crash safety
//! A record written since the last hard synchronization (the current *epoch*)
//! may be overwritten in place; an older one never is: a new version goes to
//! fresh space and the chain is relinked. A crash therefore never tears a
//! synchronized record. A removed or replaced record is marked void (keeping
//! its key and epoch, so the mark outranks the version it ends) by the next
//! hard synchronization, after whatever replaced it is durable, in one pass
//! in file order; older space is reused only once its mark is durable. On
//! opening a file that was not closed cleanly, the index is rebuilt by
//! scanning every record: torn records fail their checksum, and of the
//! versions of a key the latest epoch wins, a live one before a void one.

mod header;
mod options;
mod params;
mod record;
mod restore;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use parking_lot::{Mutex, RwLock, RwLockReadGuard};

pub use options::{HashOptions, RestoreMode, UpdateMode};

use self::header::Header;
pub(crate) use self::header::{sniff, Kind};
use self::record::{Record, MAX_HEADER, MAX_ITEM};
use super::params::{Params, Taker};
use super::{show_key, Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};
use crate::file::{temp_beside, File, Owner};

/// Stripes of record locks: a key's bucket maps to one.
const SLOT_LOCKS: usize = 1024;

/// A hash database in a file, thread-safe.
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::hash::{HashDbm, HashOptions};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.kh");
/// let db = HashDbm::open(&path, true, &HashOptions::default())?;
/// db.set(b"japan", b"tokyo", true)?;
/// assert_eq!(db.get(b"japan")?.as_deref(), Some(&b"tokyo"[..]));
/// db.close()?;
/// let db = HashDbm::open(&path, false, &HashOptions::default())?;
/// assert_eq!(db.count()?, 1);
/// # Ok(())
/// # }
/// ```
pub struct HashDbm {
    path: PathBuf,
    options: HashOptions,
    kind: Kind,
    /// `None` once closed. Operations on records hold it shared; those that
    /// replace the file or need it quiet (rebuild, clear, hard sync, close) hold
    /// it exclusively.
    state: RwLock<Option<State>>,
    /// The process that opened the database, outside which it works not at all.
    owner: Owner,
}

struct State {
    file: Box<dyn File>,
    /// For a reader of a file not closed cleanly, whose records `file` holds
    /// restored: the file itself, held open so that its shared lock keeps
    /// writers (and their restore) out while the view lives.
    origin: Option<Box<dyn File>>,
    writable: bool,
    appending: bool,
    width: usize,
    align_pow: u32,
    num_buckets: u64,
    records_start: u64,
    epoch: AtomicU32,
    /// The last epoch whose hard synchronization completed.
    synced_epoch: AtomicU32,
    kind: Kind,
    count: AtomicU64,
    data_size: AtomicU64,
    slots: Box<[RwLock<()>]>,
    /// The bucket array in memory (with `cache_buckets`), as on disk (`width`
    /// bytes a bucket), written to the file only at hard synchronization and
    /// close: a crash loses nothing by it, because a restore rebuilds the
    /// index from the records alone. A bucket's bytes are read and written
    /// under its slot lock, which orders them; they are atomic only so that
    /// sharing them needs no unsafe code.
    buckets: Option<Box<[AtomicU8]>>,
    buckets_dirty: AtomicBool,
    free: Mutex<FreePool>,
    healthy: AtomicBool,
    record_crc: bool,
    min_read_size: usize,
    /// Pad the file to whole blocks at synchronize and close (for direct I/O).
    padding: bool,
    /// The file caches blocks itself: a first read of a record stops at the
    /// end of its block, since a further block costs a device read of its own
    /// whether it is read now or later (and often is not needed).
    cached_blocks: bool,
}

/// Space that later records may reuse.
#[derive(Default)]
struct FreePool {
    /// Reusable now: size -> offsets.
    ready: std::collections::BTreeMap<u64, Vec<u64>>,
    ready_len: usize,
    /// Records no chain reaches that still look live on disk, each as its
    /// offset and its size (with [`REUSABLE`] set if it went to `ready` at
    /// once). Each is marked void at the next hard synchronization, after the
    /// data that replaced it is durable (a restore would otherwise take it for
    /// the latest version of its key), unless reused first.
    doomed: Vec<(u64, u64)>,
    /// Offsets of doomed records that were reused since the last marking:
    /// they hold new records now, which a void mark would destroy.
    reused: std::collections::HashSet<u64>,
    cap: usize,
}

/// The flag on a doomed record's size saying its space was reusable at once.
const REUSABLE: u64 = 1 << 63;

impl FreePool {
    fn put(&mut self, offset: u64, size: u64) {
        if self.ready_len < self.cap {
            self.ready.entry(size).or_default().push(offset);
            self.ready_len += 1;
        }
    }

    /// A free region of at least `size` bytes and at most twice that.
    fn take(&mut self, size: u64) -> Option<(u64, u64)> {
        let (&found, offsets) = self.ready.range_mut(size..=size.saturating_mul(2)).next()?;
        let offset = offsets.pop()?;
        if offsets.is_empty() {
            self.ready.remove(&found);
        }
        self.ready_len -= 1;
        self.reused.insert(offset);
        Some((offset, found))
    }

    fn doom(&mut self, offset: u64, size: u64, reusable: bool) {
        // Dead again: whatever reused the space is doomed in its turn.
        self.reused.remove(&offset);
        self.doomed.push((offset, if reusable { size | REUSABLE } else { size }));
    }

    /// The doomed records still to be marked, in file order, each once.
    fn take_doomed(&mut self) -> Vec<(u64, u64)> {
        let mut doomed = std::mem::take(&mut self.doomed);
        let reused = std::mem::take(&mut self.reused);
        doomed.retain(|(offset, _)| !reused.contains(offset));
        doomed.sort_unstable();
        doomed.dedup_by_key(|(offset, _)| *offset);
        doomed
    }

    fn clear(&mut self) {
        self.ready.clear();
        self.ready_len = 0;
        self.doomed = Vec::new();
        self.reused = Default::default();
    }
}

/// Where the offset of a chain's record is stored.
#[derive(Clone, Copy)]
enum Link {
    Bucket(u64),
    Record(u64),
}

/// A record found in a chain.
struct Found {
    link: Link,
    offset: u64,
    header: record::Header,
    /// The record as read, holding the value at `value_at` unless it was
    /// found without its value (then [`Found::value`] must not be called).
    buf: Vec<u8>,
    value_at: usize,
}

impl Found {
    fn value(&self) -> &[u8] {
        &self.buf[self.value_at..self.value_at + self.header.value_size]
    }
}

impl HashDbm {
    /// Opens or creates the database at `path`. The tuning parameters of
    /// `options` apply to a new file; an existing one keeps its own. A file not
    /// closed cleanly is restored first if `options.restore` allows.
    pub fn open(path: impl AsRef<Path>, writable: bool, options: &HashOptions) -> Result<HashDbm> {
        let path = path.as_ref().to_path_buf();
        HashDbm::open_kind(path, writable, options, Kind::Hash)
    }

    /// Opens or creates a file of the hash format holding `kind`; a file
    /// holding another kind is refused.
    pub(crate) fn open_kind(
        path: PathBuf,
        writable: bool,
        options: &HashOptions,
        kind: Kind,
    ) -> Result<HashDbm> {
        check_options(options)?;
        let state = open_state(&path, writable, options, kind)?;
        let db = HashDbm {
            path,
            options: options.clone(),
            kind,
            state: RwLock::new(Some(state)),
            owner: Owner::unclaimed(),
        };
        Ok(db)
    }

    /// Makes the first read of a record take at least `size` bytes, so that
    /// a caller who knows its records' usual size reads each in one call.
    pub(crate) fn set_min_read_size(&mut self, size: usize) {
        self.options.min_read_size = size;
        if let Some(state) = self.state.get_mut() {
            state.min_read_size = size.max(MAX_HEADER);
        }
    }

    /// Writes everything back, marks the file closed cleanly and closes it.
    pub fn close(self) -> Result<()> {
        let mut guard = self.state.write();
        match guard.take() {
            Some(state) => state.close(),
            None => Ok(()),
        }
    }

    fn state(&self) -> Result<RwLockReadGuard<'_, Option<State>>> {
        self.owner.check(&self.path)?;
        let guard = self.state.read();
        if guard.is_none() {
            return Err(Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display())));
        }
        Ok(guard)
    }
}

impl Drop for HashDbm {
    fn drop(&mut self) {
        if let Some(state) = self.state.get_mut().take() {
            let _ = state.close();
        }
    }
}

fn check_options(o: &HashOptions) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if !(3..=8).contains(&o.offset_width) {
        return bad(format!("offset_width must be 3 to 8, not {}", o.offset_width));
    }
    if o.align_pow > 16 {
        return bad(format!("align_pow must be at most 16, not {}", o.align_pow));
    }
    if o.num_buckets == 0 || o.num_buckets > 1 << 40 {
        return bad(format!("num_buckets must be 1 to 2^40, not {}", o.num_buckets));
    }
    o.file.validate()
}

fn open_state(path: &Path, writable: bool, o: &HashOptions, kind: Kind) -> Result<State> {
    let mut open = o.open.clone();
    open.writable = writable;
    let file = o.open_file(path, &open)?;
    if file.size() == 0 {
        if !writable {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!("{} is empty: not a database", path.display()),
            ));
        }
        create(file.as_ref(), o, kind)?;
    }
    let mut head = vec![0u8; header::SIZE.min(file.size() as usize)];
    file.read(0, &mut head)?;
    let header = Header::decode(&head, path)?;
    if header.kind != kind {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{} holds {}, not {}: open it as one", path.display(), header.kind.name(), kind.name()),
        ));
    }
    if header.open_for_writing && !writable && !open.no_lock {
        // A reader sees what the next writer's restore will make of the
        // file, never the half-written chains the crash left.
        return restore::open_restored_view(path, o, kind, file);
    }
    if header.open_for_writing && writable {
        match o.restore {
            RestoreMode::Refuse => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("{} was not closed cleanly: restore it first", path.display()),
                ))
            }
            RestoreMode::Automatic => {
                drop(file);
                restore::restore_in_place(path, o)?;
                return open_state(path, writable, &keeping(o), kind);
            }
        }
    }
    let table_end = header::SIZE as u64 + header.num_buckets * u64::from(header.width);
    if file.size() < table_end {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!("{} is truncated: shorter than its bucket array", path.display()),
        ));
    }
    let state = State {
        origin: None,
        writable,
        appending: header.appending,
        width: header.width as usize,
        align_pow: u32::from(header.align_pow),
        num_buckets: header.num_buckets,
        records_start: header.records_start,
        epoch: AtomicU32::new(header.epoch.wrapping_add(1)),
        synced_epoch: AtomicU32::new(header.synced_epoch),
        kind,
        count: AtomicU64::new(header.count),
        data_size: AtomicU64::new(header.data_size),
        slots: (0..SLOT_LOCKS).map(|_| RwLock::new(())).collect(),
        buckets: None,
        buckets_dirty: AtomicBool::new(false),
        free: Mutex::new(FreePool { cap: o.fbp_cap, ..Default::default() }),
        healthy: AtomicBool::new(!header.open_for_writing),
        record_crc: o.record_crc,
        min_read_size: o.min_read_size.max(MAX_HEADER),
        padding: o.file.padding,
        cached_blocks: o.file.pagecache,
        file,
    };
    let state = if o.cache_buckets { state.with_cached_buckets()? } else { state };
    if writable {
        // Marked open and made durable before any record changes, so a crash
        // from here on is always detected at the next open.
        state.write_header(true)?;
        state.file.synchronize(true)?;
    }
    Ok(state)
}

/// Writes the header and an empty bucket array of a new database.
fn create(file: &dyn File, o: &HashOptions, kind: Kind) -> Result<()> {
    let align = 1u64 << o.align_pow;
    let unit = align.max(file.block_size());
    let table_end = header::SIZE as u64 + o.num_buckets * u64::from(o.offset_width);
    let records_start = table_end.div_ceil(unit) * unit;
    let header = Header {
        appending: o.update_mode == UpdateMode::Appending,
        width: o.offset_width,
        align_pow: o.align_pow,
        open_for_writing: false,
        num_buckets: o.num_buckets,
        count: 0,
        data_size: 0,
        epoch: 0,
        synced_epoch: 0,
        kind,
        records_start,
    };
    file.truncate(records_start)?;
    file.write(0, &header.encode())
}

fn bucket_of(key: &[u8], num_buckets: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key) % num_buckets
}

thread_local! {
    static ENCODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl State {
    fn with_cached_buckets(mut self) -> Result<State> {
        let len = (self.num_buckets as usize) * self.width;
        let cached: Box<[AtomicU8]> = (0..len).map(|_| AtomicU8::new(0)).collect();
        // In pieces, so no second copy of the whole array is ever allocated.
        let mut piece = vec![0u8; len.min(1 << 20)];
        for (i, cells) in cached.chunks(piece.len()).enumerate() {
            let bytes = &mut piece[..cells.len()];
            self.file.read(header::SIZE as u64 + (i << 20) as u64, bytes)?;
            cells.iter().zip(bytes.iter()).for_each(|(cell, &b)| cell.store(b, Ordering::Relaxed));
        }
        self.buckets = Some(cached);
        Ok(self)
    }

    fn decode_offset(&self, bytes: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b[..self.width].copy_from_slice(bytes);
        u64::from_le_bytes(b) << self.align_pow
    }

    fn encode_offset(&self, offset: u64) -> [u8; 8] {
        (offset >> self.align_pow).to_le_bytes()
    }

    fn bucket_offset(&self, index: u64) -> u64 {
        header::SIZE as u64 + index * self.width as u64
    }

    fn read_bucket(&self, index: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        if let Some(cached) = &self.buckets {
            let at = index as usize * self.width;
            for (byte, cell) in b.iter_mut().zip(&cached[at..at + self.width]) {
                *byte = cell.load(Ordering::Relaxed);
            }
            return Ok(self.decode_offset(&b[..self.width]));
        }
        self.file.read(self.bucket_offset(index), &mut b[..self.width])?;
        Ok(self.decode_offset(&b[..self.width]))
    }

    fn write_link(&self, link: Link, target: u64) -> Result<()> {
        let bytes = self.encode_offset(target);
        match link {
            Link::Bucket(index) => match &self.buckets {
                Some(cached) => {
                    let at = index as usize * self.width;
                    for (cell, &byte) in cached[at..at + self.width].iter().zip(&bytes) {
                        cell.store(byte, Ordering::Relaxed);
                    }
                    self.buckets_dirty.store(true, Ordering::Release);
                    Ok(())
                }
                None => self.file.write(self.bucket_offset(index), &bytes[..self.width]),
            },
            Link::Record(offset) => self.file.write(offset + 1, &bytes[..self.width]),
        }
    }

    /// Writes the cached bucket array to the file if it changed.
    fn flush_buckets(&self) -> Result<()> {
        let Some(cached) = &self.buckets else { return Ok(()) };
        if !self.buckets_dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        const CHUNK: usize = 1 << 20;
        let mut bytes = Vec::with_capacity(CHUNK);
        for (i, chunk) in cached.chunks(CHUNK).enumerate() {
            bytes.clear();
            bytes.extend(chunk.iter().map(|b| b.load(Ordering::Relaxed)));
            let at = header::SIZE as u64 + (i * CHUNK) as u64;
            if let Err(e) = self.file.write(at, &bytes) {
                self.buckets_dirty.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }

    fn slot(&self, bucket: u64) -> &RwLock<()> {
        &self.slots[(bucket % SLOT_LOCKS as u64) as usize]
    }

    /// Reads the record at `offset`: its header and key and, if `value` says
    /// so, its value too (if `key` is given, only when the record is `key`'s).
    fn read_record(&self, offset: u64, key: Option<&[u8]>, value: bool) -> Result<(record::Header, Vec<u8>)> {
        let size = self.file.size();
        if offset < self.records_start || offset >= size {
            return Err(self.broken(offset, "a chain points outside the records"));
        }
        // A value is most often wanted with its header, so read enough for
        // both; without it, just what the header and key take. With block I/O
        // the whole block is read anyway: take all of it. Through a page
        // cache, each block more is one more to load and evict, so a first
        // read stops at the first block, unless the least read size is a
        // block or more: then the records are that large (tree nodes), and a
        // read that stopped short would cost a second call.
        let value = value || self.record_crc;
        let least = if value { self.min_read_size } else { MAX_HEADER };
        let block = self.file.block_size();
        let needed = offset + (MAX_HEADER + key.map_or(0, <[u8]>::len)) as u64;
        let wanted = offset + (least + key.map_or(0, <[u8]>::len)) as u64;
        let wanted = match self.cached_blocks {
            true if (least as u64) < block => needed.max((offset / block + 1) * block),
            _ => wanted,
        };
        let first = (wanted.div_ceil(block) * block).min(size) - offset;
        let mut buf = vec![0u8; first as usize];
        self.file.read(offset, &mut buf)?;
        let header =
            record::parse_header(&buf, self.width, self.align_pow).map_err(|why| self.broken(offset, why))?;
        if offset + header.size > size {
            return Err(self.broken(offset, "the record runs past the end of the file"));
        }
        let key_end = header.header_size + header.key_size;
        if let Some(key) = key {
            if key.len() != header.key_size
                || (buf.len() >= key_end && &buf[header.header_size..key_end] != key)
            {
                return Ok((header, buf));
            }
        }
        let end = if value { key_end + header.value_size } else { key_end };
        if buf.len() < end {
            let more = buf.len();
            buf.resize(end, 0);
            self.file.read(offset + more as u64, &mut buf[more..])?;
        }
        if self.record_crc && !record::crc_matches(&header, &buf, self.width) {
            return Err(self.broken(offset, "its checksum does not match"));
        }
        Ok((header, buf))
    }

    fn broken(&self, offset: u64, what: &str) -> Error {
        self.healthy.store(false, Ordering::Release);
        Error::new(
            ErrorKind::BrokenData,
            format!("the record at offset {offset} of {} is broken: {what}", self.file.path().display()),
        )
    }

    /// Walks `key`'s chain.
    fn find(&self, key: &[u8], bucket: u64) -> Result<Option<Found>> {
        self.find_record(key, bucket, true)
    }

    /// Walks `key`'s chain, reading the value of the record found if `value` says so.
    fn find_record(&self, key: &[u8], bucket: u64, value: bool) -> Result<Option<Found>> {
        let mut link = Link::Bucket(bucket);
        let mut offset = self.read_bucket(bucket)?;
        let mut steps = 0u64;
        while offset != 0 {
            let (header, buf) = self.read_record(offset, Some(key), value)?;
            let key_end = header.header_size + header.key_size;
            if header.key_size == key.len()
                && buf.len() >= key_end
                && &buf[header.header_size..key_end] == key
            {
                return Ok(Some(Found { link, offset, header, buf, value_at: key_end }));
            }
            link = Link::Record(offset);
            offset = header.next;
            steps += 1;
            if steps > self.count.load(Ordering::Relaxed) + 1024 {
                return Err(self.broken(offset, "a chain loops"));
            }
        }
        Ok(None)
    }

    /// Writes a new record, reusing free space if allowed; answers its offset.
    fn put_new(&self, key: &[u8], value: &[u8], next: u64) -> Result<u64> {
        let align = 1u64 << self.align_pow;
        let mut size = record::size_for(self.width, align, key.len(), value.len());
        let reused = if self.appending { None } else { self.free.lock().take(size) };
        if let Some((_, whole)) = reused {
            size = whole;
        }
        let epoch = self.epoch.load(Ordering::Acquire);
        ENCODED.with_borrow_mut(|buf| {
            let rec = Record { live: true, next, epoch, key, value, size };
            record::encode(buf, self.width, self.align_pow, &rec);
            match reused {
                Some((offset, _)) => self.file.write(offset, buf).map(|_| offset),
                None => {
                    let offset = self.file.append(buf)?;
                    if u128::from(offset + size) > self.max_file_size() {
                        // Unreachable by any chain; void so a restore skips it too.
                        self.file.write(offset, &[record::MAGIC_VOID])?;
                        return Err(self.full());
                    }
                    Ok(offset)
                }
            }
        })
    }

    /// The largest file the offsets of this database address.
    fn max_file_size(&self) -> u128 {
        (1u128 << (8 * self.width)) << self.align_pow
    }

    fn full(&self) -> Error {
        Error::new(
            ErrorKind::Infeasible,
            format!(
                "{} is full: offset_width {} with align_pow {} addresses {} bytes; rebuild it with a larger offset_width or align_pow",
                self.file.path().display(),
                self.width,
                self.align_pow,
                self.max_file_size()
            ),
        )
    }

    /// Frees the space of a record that no chain reaches any more (replaced
    /// or removed). It is marked void only after what replaced it is durable
    /// (see [`State::make_durable`]): marked sooner, a crash could leave
    /// neither version; left live, a crash before the next hard
    /// synchronization brings back a version that was written, which is
    /// allowed. Space of the current epoch is reusable at once, since no hard
    /// synchronization has covered it; older space once its void mark is
    /// durable.
    fn release(&self, offset: u64, header: &record::Header) {
        let mut free = self.free.lock();
        let reusable = !self.appending && header.epoch == self.epoch.load(Ordering::Acquire);
        free.doom(offset, header.size, reusable);
        if reusable {
            free.put(offset, header.size);
        }
    }

    /// Writes the void marks of `marks`. On failure every record not yet
    /// marked, and every one of `later`, is doomed again for the next try.
    fn mark_void(&self, marks: &[(u64, u64)], later: &[(u64, u64)]) -> Result<()> {
        for (i, &(offset, _)) in marks.iter().enumerate() {
            if let Err(e) = self.file.write(offset, &[record::MAGIC_VOID]) {
                let mut free = self.free.lock();
                free.doomed.extend_from_slice(&marks[i..]);
                free.doomed.extend_from_slice(later);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Makes everything written durable, then every doomed record's void mark,
    /// so that a crash at any moment leaves a file a restore reads right; the
    /// current epoch is synchronized from then on.
    ///
    /// A tree's restore goes back to the epoch its header names and needs
    /// every version that epoch used, so a tree's store marks in two steps:
    /// versions replaced within this epoch first, then the header names this
    /// epoch, and only then are versions of older epochs marked. A crash
    /// before the header is durable restores the previous epoch whole; one
    /// after it restores this one (a node removed in it may come back as an
    /// orphan no link reaches, which costs space and nothing else).
    fn make_durable(&self) -> Result<()> {
        self.file.synchronize(true)?;
        let doomed = self.free.lock().take_doomed();
        let epoch = self.epoch.load(Ordering::Acquire);
        if self.kind == Kind::TreeNodes {
            let (current, older): (Vec<_>, Vec<_>) =
                doomed.iter().partition(|(_, size)| size & REUSABLE != 0);
            self.mark_void(&current, &older)?;
            self.file.synchronize(true)?;
            self.synced_epoch.store(epoch, Ordering::Release);
            self.write_header(true)?;
            self.file.synchronize(true)?;
            self.mark_void(&older, &[])?;
        } else {
            self.mark_void(&doomed, &[])?;
        }
        self.file.synchronize(true)?;
        self.synced_epoch.store(epoch, Ordering::Release);
        if !self.appending {
            let mut free = self.free.lock();
            for (offset, size) in doomed {
                if size & REUSABLE == 0 {
                    free.put(offset, size);
                }
            }
        }
        Ok(())
    }

    /// Carries out `action` on `key`, whose slot the caller holds exclusively.
    fn apply(&self, key: &[u8], bucket: u64, found: Option<Found>, action: Action<'_>) -> Result<()> {
        match (action, found) {
            (Action::Keep, _) | (Action::Remove, None) => Ok(()),
            (Action::Remove, Some(f)) => {
                self.write_link(f.link, f.header.next)?;
                self.count.fetch_sub(1, Ordering::AcqRel);
                self.data_size.fetch_sub((key.len() + f.header.value_size) as u64, Ordering::AcqRel);
                self.release(f.offset, &f.header);
                Ok(())
            }
            (Action::Set(value), found) => {
                if key.len() as u64 > MAX_ITEM || value.len() as u64 > MAX_ITEM {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "the record {} is too large (at most 4 GiB each for key and value)",
                            show_key(key)
                        ),
                    ));
                }
                let Some(f) = found else {
                    let head = self.read_bucket(bucket)?;
                    let offset = self.put_new(key, &value, head)?;
                    self.write_link(Link::Bucket(bucket), offset)?;
                    self.count.fetch_add(1, Ordering::AcqRel);
                    self.data_size.fetch_add((key.len() + value.len()) as u64, Ordering::AcqRel);
                    return Ok(());
                };
                self.data_size.fetch_add(value.len() as u64, Ordering::AcqRel);
                self.data_size.fetch_sub(f.header.value_size as u64, Ordering::AcqRel);
                let align = 1u64 << self.align_pow;
                let fits = record::size_for(self.width, align, key.len(), value.len()) <= f.header.size;
                // Only a record no hard synchronization has covered may be torn by a crash.
                if !self.appending && fits && f.header.epoch == self.epoch.load(Ordering::Acquire) {
                    return ENCODED.with_borrow_mut(|buf| {
                        let rec = Record {
                            live: true,
                            next: f.header.next,
                            epoch: f.header.epoch,
                            key,
                            value: &value,
                            size: f.header.size,
                        };
                        record::encode(buf, self.width, self.align_pow, &rec);
                        self.file.write(f.offset, buf)
                    });
                }
                let offset = self.put_new(key, &value, f.header.next)?;
                self.write_link(f.link, offset)?;
                self.release(f.offset, &f.header);
                Ok(())
            }
        }
    }

    fn process(&self, key: &[u8], writable: bool, f: &mut Processor<'_>) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        let bucket = bucket_of(key, self.num_buckets);
        if writable {
            let _slot = self.slot(bucket).write();
            let found = self.find(key, bucket)?;
            let action = f(found.as_ref().map(Found::value));
            self.apply(key, bucket, found, action)
        } else {
            let _slot = self.slot(bucket).read();
            let found = self.find(key, bucket)?;
            match f(found.as_ref().map(Found::value)) {
                Action::Keep => Ok(()),
                _ => Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "a read-only process asked to change a record",
                )),
            }
        }
    }

    /// Like a writable [`State::process`] whose function needs only to know
    /// whether the record exists: the old value is not read.
    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> Action<'a>) -> Result<()> {
        if !self.writable {
            return Err(self.read_only());
        }
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        let found = self.find_record(key, bucket, false)?;
        let action = f(found.is_some());
        self.apply(key, bucket, found, action)
    }

    fn read_only(&self) -> Error {
        Error::new(ErrorKind::Infeasible, format!("{} is open for reading only", self.file.path().display()))
    }

    /// Writes the header; `open` says whether the file stays open for writing.
    fn write_header(&self, open: bool) -> Result<()> {
        self.file.write(header::SIZE as u64 / 2, &self.header(open).encode_state())
    }

    fn header(&self, open: bool) -> Header {
        Header {
            appending: self.appending,
            width: self.width as u8,
            align_pow: self.align_pow as u8,
            open_for_writing: open,
            num_buckets: self.num_buckets,
            count: self.count.load(Ordering::Acquire),
            data_size: self.data_size.load(Ordering::Acquire),
            epoch: self.epoch.load(Ordering::Acquire),
            synced_epoch: self.synced_epoch.load(Ordering::Acquire),
            kind: self.kind,
            records_start: self.records_start,
        }
    }

    /// Copies the file to `dest` as a cleanly closed database. The caller
    /// keeps every other operation out.
    fn copy_file(&self, dest: &Path, hard: bool) -> Result<()> {
        if self.writable {
            // Every replaced version marked void first, so the copy holds one
            // live version of each key even for a restore.
            self.synchronize(true)?;
        }
        crate::dbm::copy_file_to(self.file.as_ref(), dest, hard, |at, buf| {
            if at == 0 {
                // The copy is closed cleanly whatever this file's state says.
                let clean = self.header(false).encode_state();
                buf[header::SIZE / 2..header::SIZE].copy_from_slice(&clean);
            }
        })
    }

    /// Pads the file to a whole number of blocks with a filler record, where the
    /// file asks for padding; the filler is reused by nothing and skipped by restores.
    fn pad(&self) -> Result<()> {
        let block = self.file.block_size();
        let size = self.file.size();
        if !self.padding || block <= 1 || size.is_multiple_of(block) {
            return Ok(());
        }
        let mut gap = block - size % block;
        let align = 1u64 << self.align_pow;
        let least = record::size_for(self.width, align, 0, 0);
        while gap < least {
            gap += block;
        }
        let mut buf = Vec::new();
        record::encode(
            &mut buf,
            self.width,
            self.align_pow,
            &Record { live: false, next: 0, epoch: 0, key: b"", value: b"", size: gap },
        );
        buf[0] = record::MAGIC_PAD;
        self.file.append(&buf).map(|_| ())
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        if self.writable {
            // A soft synchronization leaves the cached bucket array in memory:
            // no other process reads the file while this writer holds its lock,
            // and a crash is repaired from the records alone.
            if hard {
                self.flush_buckets()?;
            }
            self.pad()?;
            self.write_header(true)?;
        }
        if !hard || !self.writable {
            return self.file.synchronize(hard);
        }
        self.make_durable()?;
        // Records written from now on may be torn by a crash; older ones may not.
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    fn close(mut self) -> Result<()> {
        let mut result = Ok(());
        if self.writable {
            // The data must be durable before the header says the file is clean.
            result = self
                .flush_buckets()
                .and_then(|_| self.pad())
                .and_then(|_| self.make_durable())
                .and_then(|_| self.write_header(false))
                .and_then(|_| self.file.synchronize(true));
        }
        let closed = self.file.close();
        let origin_closed = self.origin.as_mut().map_or(Ok(()), |origin| origin.close());
        result.and(closed).and(origin_closed)
    }
}

impl State {
    /// The keys of a bucket's chain, in chain order.
    fn chain_keys(&self, bucket: u64) -> Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        let mut offset = self.read_bucket(bucket)?;
        while offset != 0 {
            let (header, buf) = self.read_record(offset, None, false)?;
            keys.push(buf[header.header_size..header.header_size + header.key_size].to_vec());
            offset = header.next;
            if keys.len() as u64 > self.count.load(Ordering::Relaxed) + 1024 {
                return Err(self.broken(offset, "a chain loops"));
            }
        }
        Ok(keys)
    }

    /// Calls `f` with every live record, walking the buckets in order. The
    /// caller keeps other writers out.
    fn for_each(&self, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        for bucket in 0..self.num_buckets {
            let mut offset = self.read_bucket(bucket)?;
            while offset != 0 {
                let (header, buf) = self.read_record(offset, None, true)?;
                let key_end = header.header_size + header.key_size;
                f(&buf[header.header_size..key_end], &buf[key_end..key_end + header.value_size])?;
                offset = header.next;
            }
        }
        Ok(())
    }

    fn clear(&self) -> Result<()> {
        let zeros = vec![0u8; 1 << 16];
        let mut at = header::SIZE as u64;
        while at < self.records_start {
            let n = (self.records_start - at).min(zeros.len() as u64) as usize;
            self.file.write(at, &zeros[..n])?;
            at += n as u64;
        }
        self.file.truncate(self.records_start)?;
        if let Some(cached) = &self.buckets {
            cached.iter().for_each(|b| b.store(0, Ordering::Relaxed));
            self.buckets_dirty.store(false, Ordering::Release);
        }
        self.count.store(0, Ordering::Release);
        self.data_size.store(0, Ordering::Release);
        self.free.lock().clear();
        Ok(())
    }
}

/// Tuning parameters a rebuild may change; `None` keeps the file's own
/// (for `num_buckets`: twice the record count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebuildParams {
    /// Buckets of the new hash table.
    pub num_buckets: Option<u64>,
    /// Records aligned to 2^align_pow bytes.
    pub align_pow: Option<u8>,
    /// Bytes of an offset.
    pub offset_width: Option<u8>,
    /// In-place or appending updates.
    pub update_mode: Option<UpdateMode>,
}

impl HashDbm {
    /// Rewrites the database into a compact new file with the tuning of
    /// `params`, then replaces the old file with it atomically: a crash leaves
    /// either the old or the new file.
    pub fn rebuild_with(&self, params: &RebuildParams) -> Result<()> {
        self.owner.check(&self.path)?;
        let mut guard = self.state.write();
        let state = guard
            .take()
            .ok_or_else(|| Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display())))?;
        if !state.writable {
            let err = state.read_only();
            *guard = Some(state);
            return Err(err);
        }
        let count = state.count.load(Ordering::Acquire);
        let mut options = self.options.clone();
        options.num_buckets = params.num_buckets.unwrap_or((count * 2 + 1).max(1021));
        options.offset_width = params.offset_width.unwrap_or(state.width as u8);
        options.align_pow = params.align_pow.unwrap_or(state.align_pow as u8);
        let mode = if state.appending { UpdateMode::Appending } else { UpdateMode::InPlace };
        options.update_mode = params.update_mode.unwrap_or(mode);
        if let Err(e) = check_options(&options).and_then(|_| check_capacity(&state, &options)) {
            *guard = Some(state);
            return Err(e);
        }
        let temp = temp_beside(&self.path, "rebuild");
        let built = restore::copy_into(&temp, &options, self.kind, |put| state.for_each(|k, v| put(k, v)));
        let result = built.and_then(|_| state.close()).and_then(|_| {
            std::fs::rename(&temp, &self.path)
                .map_err(|e| Error::io("rename of the rebuilt file", &self.path, e))
        });
        // Whatever happened, the database goes on with the file at its path
        // (kept as it is, whatever the options said at the first open).
        let reopened = open_state(&self.path, true, &keeping(&self.options), self.kind);
        match reopened {
            Ok(state) => {
                *guard = Some(state);
                result
            }
            Err(e) => result.and(Err(e)),
        }
    }

    /// Restores the database at `src`, which was not closed cleanly (or is
    /// damaged), into a new database at `dest`: every record whose checksum
    /// holds is kept, in its latest version. Answers the number of records kept.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, options: &HashOptions) -> Result<u64> {
        restore::restore(src.as_ref(), dest.as_ref(), options)
    }
}

/// Refuses a rebuild whose offsets could not address the records it copies.
fn check_capacity(state: &State, o: &HashOptions) -> Result<()> {
    let max_file = (1u128 << (8 * u32::from(o.offset_width))) << o.align_pow;
    // Each record grows by at most its alignment and a few header bytes.
    let needed = u128::from(state.file.size())
        + u128::from(state.count.load(Ordering::Acquire)) * ((1u128 << o.align_pow) + 16)
        + u128::from(o.num_buckets) * u128::from(o.offset_width);
    if needed > max_file {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "offset_width {} with align_pow {} addresses {max_file} bytes, too few for the records of {}",
                o.offset_width,
                o.align_pow,
                state.file.path().display()
            ),
        ));
    }
    Ok(())
}

/// The same options, opening the file as it is rather than emptying it.
fn keeping(options: &HashOptions) -> HashOptions {
    let mut o = options.clone();
    o.open.truncate = false;
    o
}

impl Dbm for HashDbm {
    fn close(self: Box<Self>) -> Result<()> {
        HashDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
        let guard = self.state()?;
        guard.as_ref().map_or(Ok(()), |s| s.process(key, writable, f))
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'a>) -> Result<()> {
        let guard = self.state()?;
        let Some(s) = guard.as_ref() else { return Ok(()) };
        if writable && !s.writable {
            return Err(s.read_only());
        }
        let buckets: Vec<u64> = keys.iter().map(|k| bucket_of(k, s.num_buckets)).collect();
        let mut slots: Vec<usize> = buckets.iter().map(|b| (b % SLOT_LOCKS as u64) as usize).collect();
        slots.sort_unstable();
        slots.dedup();
        // Locked in one global order, so two multi-key calls never deadlock.
        let (_w, _r): (Vec<_>, Vec<_>) = if writable {
            (slots.iter().map(|&i| s.slots[i].write()).collect(), Vec::new())
        } else {
            (Vec::new(), slots.iter().map(|&i| s.slots[i].read()).collect())
        };
        for (i, key) in keys.iter().enumerate() {
            let found = s.find(key, buckets[i])?;
            let action = f(i, key, found.as_ref().map(Found::value));
            if writable {
                s.apply(key, buckets[i], found, action)?;
            } else if action != Action::Keep {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "a read-only process asked to change a record",
                ));
            }
        }
        Ok(())
    }

    fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
        // Exclusive: no other operation runs while every record is visited.
        self.owner.check(&self.path)?;
        let guard = self.state.write();
        let Some(s) = guard.as_ref() else {
            return Err(Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display())));
        };
        if writable && !s.writable {
            return Err(s.read_only());
        }
        for bucket in 0..s.num_buckets {
            for key in s.chain_keys(bucket)? {
                let found = s.find(&key, bucket)?;
                let Some(value) = found.as_ref().map(|f| f.value().to_vec()) else { continue };
                let action = f(&key, &value);
                if writable {
                    s.apply(&key, bucket, found, action)?;
                } else if action != Action::Keep {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        "a read-only process asked to change a record",
                    ));
                }
            }
        }
        Ok(())
    }

    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> Action<'a>) -> Result<()> {
        let guard = self.state()?;
        guard.as_ref().map_or(Ok(()), |s| s.process_presence(key, f))
    }

    fn contains(&self, key: &[u8]) -> Result<bool> {
        let guard = self.state()?;
        let Some(s) = guard.as_ref() else { return Ok(false) };
        let bucket = bucket_of(key, s.num_buckets);
        let _slot = s.slot(bucket).read();
        // The value is not read: a lookup costs the header and key alone.
        Ok(s.find_record(key, bucket, false)?.is_some())
    }

    fn count(&self) -> Result<u64> {
        Ok(self.state()?.as_ref().map_or(0, |s| s.count.load(Ordering::Acquire)))
    }

    fn file_size(&self) -> Result<u64> {
        Ok(self.state()?.as_ref().map_or(0, |s| s.file.size()))
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn clear(&self) -> Result<()> {
        self.owner.check(&self.path)?;
        let guard = self.state.write();
        match guard.as_ref() {
            Some(s) if s.writable => s.clear(),
            Some(s) => Err(s.read_only()),
            None => Err(Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display()))),
        }
    }

    fn rebuild(&self) -> Result<()> {
        self.rebuild_with(&RebuildParams::default())
    }

    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        let mut t = Taker::new(params, "rebuilding a hash database");
        let rebuild = RebuildParams::take_params(&mut t)?;
        t.finish()?;
        self.rebuild_with(&rebuild)
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        let guard = self.state()?;
        let Some(s) = guard.as_ref() else { return Ok(false) };
        let count = s.count.load(Ordering::Acquire);
        let live = s.data_size.load(Ordering::Acquire) + count * 24;
        let used = s.file.size().saturating_sub(s.records_start);
        Ok(count > s.num_buckets || (used > 1 << 20 && used > live * 2))
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        if hard {
            // Quiet, so that no update straddles the epoch boundary.
            self.owner.check(&self.path)?;
            let guard = self.state.write();
            guard.as_ref().map_or(Ok(()), |s| s.synchronize(true))
        } else {
            self.state()?.as_ref().map_or(Ok(()), |s| s.synchronize(false))
        }
    }

    fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
        // Exclusive, so the copy is one consistent state.
        self.owner.check(&self.path)?;
        let guard = self.state.write();
        let Some(s) = guard.as_ref() else {
            return Err(Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display())));
        };
        if dest == self.path {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} cannot be copied onto itself", self.path.display()),
            ));
        }
        s.copy_file(dest, hard)
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let guard = self.state()?;
        let Some(s) = guard.as_ref() else { return Ok(Vec::new()) };
        let max_file = s.max_file_size();
        let mut out = vec![
            ("class".to_string(), "HashDbm".to_string()),
            ("num_records".into(), s.count.load(Ordering::Acquire).to_string()),
            ("eff_data_size".into(), s.data_size.load(Ordering::Acquire).to_string()),
            ("num_buckets".into(), s.num_buckets.to_string()),
            ("offset_width".into(), s.width.to_string()),
            ("align_pow".into(), s.align_pow.to_string()),
            ("max_file_size".into(), max_file.to_string()),
            ("update_mode".into(), if s.appending { "appending" } else { "in-place" }.to_string()),
            ("epoch".into(), s.epoch.load(Ordering::Acquire).to_string()),
            ("healthy".into(), s.healthy.load(Ordering::Acquire).to_string()),
        ];
        out.extend(s.file.inspect().into_iter().map(|(k, v)| (format!("file_{k}"), v)));
        Ok(out)
    }

    fn is_healthy(&self) -> bool {
        self.state.read().as_ref().is_some_and(|s| s.healthy.load(Ordering::Acquire))
    }

    fn is_ordered(&self) -> bool {
        false
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        drop(self.state()?);
        Ok(Box::new(HashCursor { db: self, bucket: 0, keys: std::collections::VecDeque::new() }))
    }
}

/// A cursor over a hash database: it holds the keys of one bucket's chain and
/// looks each up again when asked, so concurrent updates never invalidate it.
struct HashCursor<'a> {
    db: &'a HashDbm,
    bucket: u64,
    /// The current key first, then the rest of the bucket's chain.
    keys: std::collections::VecDeque<Vec<u8>>,
}

impl HashCursor<'_> {
    /// Loads the first non-empty chain at or after `bucket`.
    fn load_from(&mut self, mut bucket: u64) -> Result<()> {
        let guard = self.db.state()?;
        let Some(s) = guard.as_ref() else { return Ok(()) };
        self.keys.clear();
        while bucket < s.num_buckets {
            let _slot = s.slot(bucket).read();
            let keys = s.chain_keys(bucket)?;
            if !keys.is_empty() {
                self.keys.extend(keys);
                break;
            }
            bucket += 1;
        }
        self.bucket = bucket;
        Ok(())
    }
}

impl Cursor for HashCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.load_from(0)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let num_buckets = self.db.state()?.as_ref().map_or(1, |s| s.num_buckets);
        self.load_from(bucket_of(key, num_buckets))?;
        if self.bucket != bucket_of(key, num_buckets) || !self.keys.iter().any(|k| k == key) {
            self.keys.clear();
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no record {} to jump to (a hash database jumps only to existing keys)",
                    show_key(key)
                ),
            ));
        }
        while self.keys.front().is_some_and(|k| k != key) {
            self.keys.pop_front();
        }
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if self.keys.pop_front().is_some() && self.keys.is_empty() {
            self.load_from(self.bucket + 1)?;
        }
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let Some(key) = self.keys.front().cloned() else { return Ok(None) };
            if let Some(value) = self.db.get(&key)? {
                return Ok(Some((key, value)));
            }
            // Removed since the chain was read: the position moves on.
            self.next()?;
        }
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.get()? {
            Some((key, _)) => self.db.set(&key, value, true),
            None => Err(Error::new(ErrorKind::NotFound, "the cursor is past the last record")),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.get()? {
            Some((key, _)) => {
                self.db.remove(&key)?;
                self.next()
            }
            None => Err(Error::new(ErrorKind::NotFound, "the cursor is past the last record")),
        }
    }
}
