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
//!
//! A write that fails, perhaps part-way (a short write on a full device),
//! leaves the same two cases a crash does. New space is reserved before a
//! record is written into it, so the file's end stays aligned and the
//! failed region has a known size: it goes back to the free pool, doomed
//! like a replaced record. A failed write that a chain reaches (a record
//! overwritten in place, a link, a clear) leaves the records *torn*: the
//! handle refuses every further read and write of records and closes as a
//! crash would, and the next open's restore finds the older version, which
//! no void mark has touched.
//!
//! # One mutation path
//! Every change to the records goes through `State::apply` (`change.rs`), as
//! a `Change`: one record's processor answer (set, remove or keep), or the
//! removal of every record. Nothing attaches there: an update log wraps the
//! whole database instead (`ulog::LoggedDbm`, which sees each change as the
//! `process` call that makes it). The functions that write records are
//! private to that file. It is reached by:
//! - `process`, `process_presence`, `process_multi` and `process_each` with
//!   writable answers, and so by every method built on them: `set`,
//!   `remove`, `append`, `compare_exchange`, `increment`, their `*_multi`
//!   forms, a cursor's `set` and `remove` (which call `set` and `remove`),
//!   and the node writes of a tree database, whose node store this is;
//! - `clear` (`Change::Clear`);
//! - the copy a rebuild or a restore writes into its new file
//!   (`restore::copy_into`), also behind `rebuild_with`, `rebuild`, `restore`
//!   and the automatic restore at open;
//! - the copy a growth writes into its new file (`growth.rs`), where `apply`
//!   itself carries each change of a bucket already copied over to it.
//!
//! # One value codec
//! A value's bytes pass between a record and a caller through one pair of
//! functions of the state's `Codec` (`value.rs`): `Codec::decode` yields every
//! stored value handed out (to the functions of `process`, `process_multi`
//! and `process_each`, and so to `get`, a cursor's `get` and the rest built
//! on them; to the copy of a rebuild through `State::for_each`, and of a
//! restore), and `Codec::encode_with` makes the bytes stored of every value a
//! caller gives (in `State::apply`). Compression (`comp_mode.rs`,
//! `compress.rs`, with the zstd dictionary in `dictionary.rs`; see
//! docs/compression.md) and encryption (`cipher.rs`; docs/encryption.md)
//! attach there, compressing before sealing; with neither on both borrow
//! without a copy. Keys pass likewise through `Codec::seal_key` (a
//! caller's key, at the entry of every lookup and write) and
//! `Codec::open_key` (a stored key, wherever one is handed out: walks,
//! cursors, rebuild and restore), which seal and open them in an encrypted
//! hash database (`key_cipher.rs`); below them everything works on stored
//! keys.
//!
//! # Files
//! `state.rs` holds the state of an open database; `open.rs` makes it;
//! `buckets.rs` the bucket array and links; `chain.rs` reads records and
//! walks chains; `batch.rs` walks a batch's chains together, each step one
//! batched read; `process.rs` the processors; `change.rs` the one mutation
//! path; `value.rs` the value codec, `cipher.rs` its encryption and
//! `key_cipher.rs` the keys';
//! `free_pool.rs` the reusable space; `durability.rs` synchronization, epochs and closing; `rebuild.rs` rebuilding
//! and restoring; `growth.rs` growing the bucket array by itself; `restore.rs` the scan a restore makes; `cursor.rs` the cursor;
//! `crc_mode.rs` the record checksum mode, which `chain.rs` applies to every
//! record it reads; `training.rs` trains the compression dictionary once
//! an operation has let go of its locks.

mod batch;
mod buckets;
mod chain;
mod change;
mod cipher;
mod codec;
mod comp_mode;
mod compress;
mod crc_mode;
mod cursor;
mod dictionary;
mod doomed;
mod durability;
mod epoch_digest;
mod free_pool;
mod growth;
mod header;
#[cfg(feature = "cipher")]
mod key_cipher;
mod open;
mod options;
mod params;
mod process;
mod rebuild;
mod record;
mod restore;
mod state;
mod training;
mod value;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockReadGuard};

pub use options::{CipherKey, HashOptions, RecordCompMode, RecordCrcMode, RestoreMode, UpdateMode};
pub(crate) use params::cipher_key as take_cipher_key;
pub(crate) use params::record_comp_mode as take_record_comp_mode;
pub(crate) use params::record_crc_mode as take_record_crc_mode;
pub use rebuild::RebuildParams;

use self::buckets::bucket_of;
use self::change::Change;
use self::cursor::HashCursor;
pub(crate) use self::header::{sniff, Kind};
use self::open::{check_options, open_state};
use self::record::MAX_HEADER;
use self::state::State;
use super::params::{Params, Taker};
use super::{Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::dbm::retire::Retirer;
use crate::dbm::{Access, Durability};
use crate::error::{Error, ErrorKind, Result};
use crate::file::Owner;

/// A hash database in a file, thread-safe.
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::hash::{HashDbm, HashOptions};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.kh");
/// let db = HashDbm::builder().open(&path)?;
/// db.set(b"japan", b"tokyo")?;
/// assert_eq!(db.get(b"japan")?.as_deref(), Some(&b"tokyo"[..]));
/// db.close()?;
/// let db = HashDbm::builder().open_read_only(&path)?;
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
    /// it exclusively. Shared with the thread of a growth (`growth.rs`).
    state: Arc<RwLock<Option<State>>>,
    /// The thread of the last growth, joined before the state is closed.
    grower: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The process that opened the database, outside which it works not at all.
    owner: Owner,
    /// Closes a rebuild's old file off the caller's time.
    retirer: Retirer,
}

crate::dbm::builder::options_builder!(HashDbm, HashOptions);

impl HashDbm {
    /// Opens or creates the database at `path`. The tuning parameters of
    /// `options` apply to a new file; an existing one keeps its own. A file not
    /// closed cleanly is restored first if `options.restore` allows; so is,
    /// for a writer, a file whose records end inside an alignment unit (cut
    /// or damaged), where an appended record could not be addressed.
    pub fn open(path: impl AsRef<Path>, access: Access, options: &HashOptions) -> Result<HashDbm> {
        let path = path.as_ref().to_path_buf();
        HashDbm::open_kind(path, access.is_writable(), options, Kind::Hash)
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
        if state.writable && kind == Kind::Hash && !options.open.no_lock {
            // This writer holds the file's lock: no growth of it is under way.
            HashDbm::remove_stale_growth(&path);
        }
        let db = HashDbm {
            path,
            options: options.clone(),
            kind,
            state: Arc::new(RwLock::new(Some(state))),
            grower: Mutex::new(None),
            owner: Owner::unclaimed(),
            retirer: Retirer::default(),
        };
        Ok(db)
    }

    /// Whether the database takes changes: opened for writing, and not a
    /// file left unrestored for reading only (`RestoreMode::ReadOnly`).
    pub(crate) fn takes_writes(&self) -> bool {
        self.state.read().as_ref().is_some_and(|s| s.writable)
    }

    /// Makes the first read of a record take at least `size` bytes, so that
    /// a caller who knows its records' usual size reads each in one call.
    pub(crate) fn set_min_read_size(&mut self, size: usize) {
        self.options.min_read_size = size;
        if let Some(state) = self.state.write().as_mut() {
            state.min_read_size = size.max(MAX_HEADER);
        }
    }

    /// Whether every read verifies each record's checksum: the mode the file
    /// was created (or last rebuilt) with, whatever the options said.
    pub fn record_crc_mode(&self) -> Result<RecordCrcMode> {
        Ok(self.state()?.as_ref().map_or(RecordCrcMode::None, |s| s.record_crc))
    }

    /// How values are compressed: the mode the file was created (or last
    /// rebuilt) with, whatever the options said.
    pub fn record_comp_mode(&self) -> Result<RecordCompMode> {
        Ok(self.state()?.as_ref().map_or(RecordCompMode::None, |s| s.comp_mode()))
    }

    /// The record count, bounded by what the file has room for (a damaged
    /// header may claim any count): what a caller may size memory or a new
    /// file by.
    pub(crate) fn plausible_count(&self) -> Result<u64> {
        Ok(self.state()?.as_ref().map_or(0, |s| s.plausible_count()))
    }

    /// Writes everything back, marks the file closed cleanly and closes it,
    /// after the close of a rebuild's old file has ended. After a failed
    /// write left the records torn (see the module's "Crash safety"), it
    /// closes the file as a crash would, for the next open to restore, and
    /// answers why.
    pub fn close(self) -> Result<()> {
        self.stop_growth();
        self.retirer.wait();
        let mut guard = self.state.write();
        match guard.take() {
            Some(state) => state.close(),
            None => Ok(()),
        }
    }

    /// Closes the file without writing anything more, as a crash would: the
    /// next writer restores it (a tree's store: to its last hard
    /// synchronization). For a caller that could not write a consistent state.
    pub(crate) fn abandon(self) -> Result<()> {
        self.stop_growth();
        match self.state.write().take() {
            Some(state) => state.abandon(),
            None => Ok(()),
        }
    }

    fn state(&self) -> Result<RwLockReadGuard<'_, Option<State>>> {
        self.owner.check(&self.path)?;
        let guard = self.state.read();
        if guard.is_none() {
            return Err(self.closed());
        }
        Ok(guard)
    }

    fn closed(&self) -> Error {
        Error::new(ErrorKind::Infeasible, format!("{} is closed", self.path.display()))
    }
}

impl Drop for HashDbm {
    fn drop(&mut self) {
        self.stop_growth();
        if let Some(state) = self.state.write().take() {
            let _ = state.close();
        }
    }
}

impl Dbm for HashDbm {
    fn close(self: Box<Self>) -> Result<()> {
        HashDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        let guard = self.state()?;
        let done = guard.as_ref().map_or(Ok(()), |s| s.process(key, access, f));
        self.end_writing(guard, done)
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        let guard = self.state()?;
        let done = guard.as_ref().map_or(Ok(()), |s| s.process_multi(keys, access, f));
        self.end_writing(guard, done)
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        // Exclusive: no other operation runs while every record is visited.
        self.owner.check(&self.path)?;
        let _scan = crate::caching::ScanScope::enter();
        let guard = self.state.write();
        let done = guard.as_ref().map_or_else(|| Err(self.closed()), |s| s.process_each(access, f));
        self.end_writing(guard, done)
    }

    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> Action<'a>) -> Result<()> {
        let guard = self.state()?;
        let done = guard.as_ref().map_or(Ok(()), |s| s.process_presence(key, f));
        self.end_writing(guard, done)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let guard = self.state()?;
        guard.as_ref().map_or(Ok(None), |s| s.get(key))
    }

    // `set` and `remove` are the trait's own, written out so that their
    // closures are compiled among this module's code: the trait's were laid
    // out among the other databases' code, and a run that only used a hash
    // database mapped that page of code too (kura perf's `mem` counts it).
    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        super::set_by_presence(self, key, value, true)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        super::set_by_presence(self, key, value, false)
    }

    fn remove(&self, key: &[u8]) -> Result<bool> {
        super::remove_by_presence(self, key)
    }

    fn contains(&self, key: &[u8]) -> Result<bool> {
        let guard = self.state()?;
        let Some(s) = guard.as_ref() else { return Ok(false) };
        let key = s.codec.seal_key(key)?;
        let bucket = bucket_of(&key, s.num_buckets);
        let _slot = s.slot(bucket).read();
        // The value is not read: a lookup costs the header and key alone.
        Ok(s.find_record(&key, bucket, false)?.is_some())
    }

    fn contains_multi(&self, keys: &[&[u8]]) -> Result<Vec<bool>> {
        let guard = self.state()?;
        // Batched like process_multi, but no value is read.
        guard.as_ref().map_or(Ok(vec![false; keys.len()]), |s| s.contains_multi(keys))
    }

    fn prefetch(&self, keys: &[&[u8]]) {
        // A hint never waits: while a rebuild, a close or the like holds
        // the database, there is nothing to hint at.
        if let Some(guard) = self.state.try_read() {
            if let Some(s) = guard.as_ref() {
                s.prefetch(keys);
            }
        }
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
            Some(s) if s.writable => s.apply(Change::Clear),
            Some(s) => Err(s.read_only()),
            None => Err(self.closed()),
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
        // Saturating: after an unclean close the figures are the header's,
        // which a damaged file may make anything.
        let live = s.data_size.load(Ordering::Acquire).saturating_add(count.saturating_mul(24));
        let used = s.file.size().saturating_sub(s.records_start);
        Ok(count > s.num_buckets || (used > 1 << 20 && used > live.saturating_mul(2)))
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        if durability.is_hard() {
            // Quiet, so that no update straddles the epoch boundary.
            self.owner.check(&self.path)?;
            let guard = self.state.write();
            guard.as_ref().map_or(Ok(()), |s| s.synchronize(Durability::Hard))
        } else {
            self.state()?.as_ref().map_or(Ok(()), |s| s.synchronize(Durability::Soft))
        }
    }

    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        // Exclusive, so the copy is one consistent state.
        self.owner.check(&self.path)?;
        let guard = self.state.write();
        let Some(s) = guard.as_ref() else { return Err(self.closed()) };
        if dest == self.path {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} cannot be copied onto itself", self.path.display()),
            ));
        }
        s.copy_file(dest, durability.is_hard())
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let guard = self.state()?;
        let Some(s) = guard.as_ref() else { return Ok(Vec::new()) };
        let max_file = s.max_file_size();
        let mut out = vec![
            ("class".to_string(), "HashDbm".to_string()),
            ("format_version".into(), s.header(true).format_version().to_string()),
            ("num_records".into(), s.count.load(Ordering::Acquire).to_string()),
            ("eff_data_size".into(), s.data_size.load(Ordering::Acquire).to_string()),
            ("num_buckets".into(), s.num_buckets.to_string()),
            ("offset_width".into(), s.width.to_string()),
            ("align_pow".into(), s.align_pow.to_string()),
            ("max_file_size".into(), max_file.to_string()),
            ("update_mode".into(), if s.appending { "appending" } else { "in-place" }.to_string()),
            ("record_crc_mode".into(), s.record_crc.name().to_string()),
            ("record_comp_mode".into(), s.comp_mode().name().to_string()),
            ("cipher".into(), s.codec.cipher.as_ref().map_or("none", |_| cipher::Sealing::NAME).to_string()),
            (
                "key_cipher".into(),
                if s.codec.seals_keys() { cipher::Sealing::KEYS_NAME } else { "none" }.to_string(),
            ),
            ("epoch".into(), s.epoch.load(Ordering::Acquire).to_string()),
            ("healthy".into(), s.healthy.load(Ordering::Acquire).to_string()),
        ];
        if let Some(dict) = s.codec.compression.as_ref().and_then(|c| c.dictionary()) {
            out.push(("record_comp_dict".into(), format!("{} ({} bytes)", dict.number, dict.bytes.len())));
        }
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
        Ok(Box::new(HashCursor::new(self)))
    }
}
