//! The state of an open hash database: its file, the layout its header
//! gave, its counters, locks, bucket array and free pool. The operations on
//! it sit beside, one concern a file.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use parking_lot::{Mutex, RwLock};

use super::crc_mode::RecordCrcMode;
use super::free_pool::FreePool;
use super::header::{Header, Kind};
use super::record::{self, Coverage};
use super::value::Codec;
use crate::error::{Error, ErrorKind};
use crate::file::File;
use std::borrow::Cow;

/// Stripes of record locks: a key's bucket maps to one.
pub(super) const SLOT_LOCKS: usize = 1024;

pub(super) struct State {
    pub(super) file: Box<dyn File>,
    /// For a reader of a file not closed cleanly, whose records `file` holds
    /// restored: the file itself, held open so that its shared lock keeps
    /// writers (and their restore) out while the view lives.
    pub(super) origin: Option<Box<dyn File>>,
    pub(super) writable: bool,
    pub(super) appending: bool,
    pub(super) width: usize,
    pub(super) align_pow: u32,
    pub(super) num_buckets: u64,
    pub(super) records_start: u64,
    pub(super) epoch: AtomicU32,
    /// The last epoch whose hard synchronization completed.
    pub(super) synced_epoch: AtomicU32,
    pub(super) kind: Kind,
    pub(super) count: AtomicU64,
    pub(super) data_size: AtomicU64,
    pub(super) slots: Box<[RwLock<()>]>,
    /// One counter a slot, raised by every change to a record of its
    /// buckets (and by a clear, every one): a cursor that read a chain under
    /// the slot knows by it whether the values it kept are still current.
    pub(super) slot_versions: Box<[AtomicU64]>,
    /// This state among every state the process opened: a rebuild or a
    /// growth puts a new one in its place, whose slots count afresh.
    pub(super) serial: u64,
    /// The bucket array in memory (with `cache_buckets`), as on disk (`width`
    /// bytes a bucket), written to the file only at hard synchronization and
    /// close: a crash loses nothing by it, because a restore rebuilds the
    /// index from the records alone. A bucket's bytes are read and written
    /// under its slot lock, which orders them; they are atomic only so that
    /// sharing them needs no unsafe code.
    pub(super) buckets: Option<Box<[AtomicU8]>>,
    pub(super) buckets_dirty: AtomicBool,
    pub(super) free: Mutex<FreePool>,
    pub(super) healthy: AtomicBool,
    /// A write that a chain reaches (a record overwritten in place, a link,
    /// a clear) failed, maybe part-way: what the chains lead to is unknown,
    /// so the handle refuses every read and write of records, and closes as
    /// a crash would, leaving the file to the next open's restore.
    pub(super) torn: AtomicBool,
    /// Whether every read of a record verifies its checksum, as the header says.
    pub(super) record_crc: RecordCrcMode,
    /// What the records' checksums cover besides their bodies (format
    /// versions 6 and 7; see `record::Coverage`).
    pub(super) coverage: Coverage,
    /// What every value passes through between a record and a caller.
    pub(super) codec: Codec,
    pub(super) min_read_size: usize,
    /// Pad the file to whole blocks at synchronize and close (for direct I/O).
    pub(super) padding: bool,
    /// The file caches blocks itself: a first read of a record stops at the
    /// end of its block, since a further block costs a device read of its own
    /// whether it is read now or later (and often is not needed).
    pub(super) cached_blocks: bool,
    /// The bytes a batch needed lately of the records it found (header, key
    /// and value; see `batch.rs`): a batch's first reads take at least this
    /// much, so that records longer than `min_read_size` cost no second
    /// round of reads. Single lookups keep to `min_read_size`.
    pub(super) batch_guess: AtomicUsize,
    /// The offset of the compression dictionary's record; 0 if none.
    pub(super) dict_offset: AtomicU64,
    /// A full sample for the compression dictionary, waiting to be trained
    /// outside the locks (see `training.rs`).
    pub(super) untrained: std::sync::Arc<super::training::Untrained>,
    /// The records of the current epoch and their digest, for a tree's node
    /// store of version 5 (see `epoch_digest.rs`); `None` for other files.
    pub(super) epoch_records: Option<Mutex<super::epoch_digest::EpochRecords>>,
    /// Whether this state grows its bucket array by itself (`growth.rs`).
    pub(super) auto_grow: bool,
    /// A growth of this state: its marks, and the copy under way.
    pub(super) growth: std::sync::Arc<super::growth::GrowthSlot>,
}

impl State {
    /// The lock of `bucket`'s records.
    pub(super) fn slot(&self, bucket: u64) -> &RwLock<()> {
        &self.slots[slot_index(bucket)]
    }

    /// The version of `bucket`'s slot now, and the slot's index.
    pub(super) fn slot_version(&self, bucket: u64) -> (usize, u64) {
        let index = slot_index(bucket);
        (index, self.slot_versions[index].load(Ordering::Acquire))
    }

    /// Whether no record of slot `index` changed since it had `version`.
    pub(super) fn slot_unchanged(&self, index: usize, version: u64) -> bool {
        self.slot_versions[index].load(Ordering::Acquire) == version
    }

    /// Notes a change to a record of `bucket`, before it is made: a reader
    /// that still sees the old version saw no change completed.
    pub(super) fn note_change(&self, bucket: u64) {
        self.slot_versions[slot_index(bucket)].fetch_add(1, Ordering::AcqRel);
    }

    /// Notes a change to every record.
    pub(super) fn note_every_change(&self) {
        for version in &self.slot_versions {
            version.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The largest file the offsets of this database address.
    pub(super) fn max_file_size(&self) -> u128 {
        (1u128 << (8 * self.width)) << self.align_pow
    }

    /// The header describing this state; `open` says whether the file stays
    /// open for writing.
    pub(super) fn header(&self, open: bool) -> Header {
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
            record_crc: self.record_crc,
            record_comp: self.codec.compression.as_ref().map_or(Default::default(), |c| c.mode),
            dict_offset: self.dict_offset.load(Ordering::Acquire),
            sealing: self.codec.cipher.as_ref().map(|c| *c.sealing()),
            presets: self.codec.compression.as_ref().is_some_and(|c| {
                c.takes_dictionary() && Header::may_have_presets(c.mode, self.codec.cipher.is_some())
            }),
            digests: self.epoch_records.is_some(),
            // Named only by a hard synchronization (`State::make_durable`).
            pending: None,
            coverage: self.coverage,
        }
    }

    /// The value a caller sees of the record at `offset` read into `buf`
    /// (see [`Codec::decode`]); one that fails to decode is broken, in this
    /// file, which is unhealthy from now on.
    #[inline(always)]
    pub(super) fn decode<'a>(
        &self,
        offset: u64,
        header: &record::Header,
        buf: &'a [u8],
    ) -> crate::Result<Cow<'a, [u8]>> {
        match self.codec.decode(offset, header, buf) {
            Ok(value) => Ok(value),
            Err(e) => Err(self.undecodable(e)),
        }
    }

    /// The caller's key that `stored`, the key of the record at `offset`,
    /// holds (see [`Codec::open_key`]); one that fails authentication is
    /// broken, in this file, which is unhealthy from now on.
    #[inline(always)]
    pub(super) fn open_key<'a>(&self, offset: u64, stored: &'a [u8]) -> crate::Result<Cow<'a, [u8]>> {
        match self.codec.open_key(offset, stored) {
            Ok(key) => Ok(key),
            Err(e) => Err(self.undecodable(e)),
        }
    }

    #[cold]
    #[inline(never)]
    fn undecodable(&self, e: Error) -> Error {
        self.healthy.store(false, Ordering::Release);
        Error::new(e.kind(), format!("{}: {}", self.file.path().display(), e.message()))
    }

    pub(super) fn read_only(&self) -> Error {
        Error::new(ErrorKind::ReadOnly, format!("{} is open for reading only", self.file.path().display()))
    }

    /// The error of a broken record at `offset`; the database is unhealthy from now on.
    pub(super) fn broken(&self, offset: u64, what: &str) -> Error {
        self.healthy.store(false, Ordering::Release);
        Error::new(
            ErrorKind::BrokenData,
            format!("the record at offset {offset} of {} is broken: {what}", self.file.path().display()),
        )
    }

    /// Answers `result`; an error marks the records torn (see [`State::torn`]).
    pub(super) fn tear_on(&self, result: crate::Result<()>) -> crate::Result<()> {
        if result.is_err() {
            self.torn.store(true, Ordering::Release);
            self.healthy.store(false, Ordering::Release);
        }
        result
    }

    /// Refuses to go on once a write left the records torn.
    pub(super) fn check_untorn(&self) -> crate::Result<()> {
        if !self.torn.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "{}: a write failed part-way, so its records may be torn; reopen it, which restores it",
                self.file.path().display()
            ),
        ))
    }

    pub(super) fn full(&self) -> Error {
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
}

/// A serial for a state opened now (see [`State::serial`]).
pub(super) fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The index of `bucket`'s lock among the stripes.
pub(super) fn slot_index(bucket: u64) -> usize {
    (bucket % SLOT_LOCKS as u64) as usize
}
