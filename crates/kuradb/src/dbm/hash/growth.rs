//! Growing the bucket array with no call by the user: a hash database
//! filled past its bucket count copies itself, in a thread of its own, into
//! a new file with several times the buckets, while readers and writers go
//! on with the old one, then puts the copy in the old file's place.
//!
//! # The copy
//! The copier walks the old bucket array in order, a bucket at a time under
//! the bucket's slot lock (shared), putting each live record into the new
//! file, and notes how far it has come (`Growing::copied`). A writer, under
//! the same slot lock (exclusive), changes the old file as always; if the
//! copier has passed its bucket, it makes the same change in the new file
//! too. The slot lock orders the two, so every change is either seen by the
//! copy of its bucket or made in the new file after it. The copier lets go
//! of the database's lock between chunks of buckets, so an operation that
//! needs the database exclusively (a hard synchronization, a clear) waits
//! for one chunk at most.
//!
//! # Durability
//! Before the new file takes the old one's name it must hold, durably,
//! every record the old one was synchronized with. The copier writes the
//! new file back to the device (no lock held, a step at a time, so that the
//! writers' own reads of the device never queue behind the whole copy),
//! then makes it durable with a
//! hard synchronization of its own; during that one, writers note the keys
//! they change instead of writing to the new file, and the copier copies
//! those keys afterwards. At the swap, under the database's exclusive lock,
//! the new file is synchronized once more if the old one was synchronized
//! since; then it is renamed over the old file's path and the directory is
//! made durable. A crash before the rename leaves the old file, as it was
//! (the temporary file is removed by the next writer's open); after it,
//! the new file, which a restore treats like any other.
//!
//! The new file is an ordinary hash file of the same format, so every
//! reader of the old one reads it. A database in appending mode never grows
//! this way: its records are its history, which a copy would drop.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockReadGuard};

use super::buckets::bucket_of;
use super::chain::PREFETCH_AHEAD;
use super::change::Change;
use super::header::{Header, Kind};
use super::options::HashOptions;
use super::rebuild::RebuildParams;
use super::record::Coverage;
use super::restore::{self, Keys};
use super::state::State;
use super::HashDbm;
use crate::dbm::{Action, Durability};
use crate::error::{Error, ErrorKind, Result};
use crate::file::temp_beside;

/// Fewer records than this never start a growth, whatever the bucket
/// count: their chains are short enough to walk, and a copy would cost more
/// than it saves.
pub(crate) const MIN_RECORDS: u64 = 1024;

/// Buckets the copier copies between two lets-go of the database's lock:
/// few enough that an exclusive operation waits a short time for it.
const CHUNK: u64 = 512;

/// How far past the new file's end the copier prepares its pages (see
/// [`crate::file::File::prepare_writes`]): a few read-ahead windows.
const PREPARE_AHEAD: u64 = 16 << 20;

/// What the temporary file of a growth is named after (see [`temp_beside`]).
const TEMP: &str = "grow";

/// A state's part in growth, shared with the copier.
#[derive(Default)]
pub(super) struct GrowthSlot {
    /// A growth of this state was started and has not ended.
    claimed: AtomicBool,
    /// Whether `job` is set: a writer's cheap check.
    active: AtomicBool,
    /// The copy under way, once the copier has made its file.
    job: RwLock<Option<Arc<Growing>>>,
    /// Asked to stop (a close, a clear, a rebuild): the copier gives up at
    /// its next step.
    cancelled: AtomicBool,
    /// No growth is started before the count reaches this (after one
    /// failed, so that a full device is not tried at every write).
    retry_at: AtomicU64,
    /// A set met more records than buckets since a growth was last
    /// started: only a set starts one, so that a database being emptied
    /// (removals alone) is not copied into a larger table on the way.
    due: AtomicBool,
}

/// A copy under way.
pub(super) struct Growing {
    target: State,
    /// Buckets of the old file copied so far, from bucket 0.
    copied: AtomicU64,
    /// Writers note the keys they change in `held` instead of changing the
    /// new file, which the copier is synchronizing.
    holding: AtomicBool,
    held: Mutex<HashSet<Vec<u8>>>,
    /// A writer's change of the new file failed: the growth is given up.
    failed: Mutex<Option<Error>>,
}

/// The bucket count a growth of a state with `buckets` buckets and `count`
/// records makes: a power-of-two multiple of the old count, so that every
/// old bucket's records land in buckets of the same residue (a cursor's
/// order, see `cursor.rs`), with at least twice as many buckets as records.
pub(super) fn grown_buckets(buckets: u64, count: u64) -> u64 {
    let wanted = count.saturating_mul(2).div_ceil(buckets.max(1));
    buckets.saturating_mul(wanted.max(2).next_power_of_two())
}

impl State {
    /// Whether this state should grow now: the automatic growth is on, the
    /// records outnumber the buckets, and none is under way.
    #[inline]
    pub(super) fn wants_growth(&self) -> bool {
        if !self.auto_grow {
            return false;
        }
        let count = self.count.load(Ordering::Relaxed);
        count > self.num_buckets
            && count >= MIN_RECORDS
            && count >= self.growth.retry_at.load(Ordering::Relaxed)
            && self.growth.due.load(Ordering::Relaxed)
            && !self.growth.claimed.load(Ordering::Relaxed)
    }

    /// Notes a set: with more records than buckets, a growth is due.
    #[inline]
    pub(super) fn note_set_for_growth(&self) {
        if self.auto_grow
            && self.count.load(Ordering::Relaxed) > self.num_buckets
            && !self.growth.due.load(Ordering::Relaxed)
        {
            self.growth.due.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a state opened with `o` may grow: a writer of a hash
    /// database updated in place (see the module's doc).
    pub(super) fn may_grow(o: &HashOptions, kind: Kind, writable: bool, appending: bool) -> bool {
        o.auto_grow && writable && kind == Kind::Hash && !appending
    }

    /// Whether a copy of this file (which a new file always is) keeps the
    /// file's format, so that every reader of it reads the copy: not so for
    /// the files from before records' checksums covered their epochs, the
    /// compressed ones of the format before dictionaries, nor the encrypted
    /// ones from before sealed keys. Such a file grows only when a rebuild,
    /// asked for, converts it. A file of version 6 grows too, into a copy
    /// of version 7: no released reader reads the one and not the other.
    pub(super) fn copies_keep_format(&self) -> bool {
        let encrypted = self.codec.cipher.is_some();
        let header = self.header(true);
        self.coverage != Coverage::Body
            && header.presets == Header::may_have_presets(self.comp_mode(), encrypted)
            && (!encrypted || self.codec.seals_keys())
    }

    /// Carries a change of `key` (stored), in `bucket`, just made to this
    /// state, over to the copy under way, if the copier has passed the
    /// bucket. The caller holds the bucket's slot exclusively. A failure
    /// gives up the growth, not the change.
    #[inline]
    pub(super) fn grow_along(&self, key: &[u8], bucket: u64, action: &Action<'_>) {
        if !self.growth.active.load(Ordering::Acquire) {
            return;
        }
        self.grow_along_slow(key, bucket, action);
    }

    #[cold]
    fn grow_along_slow(&self, key: &[u8], bucket: u64, action: &Action<'_>) {
        let job = self.growth.job.read();
        let Some(g) = job.as_ref() else { return };
        if bucket >= g.copied.load(Ordering::Acquire) {
            return;
        }
        if g.holding.load(Ordering::Acquire) {
            g.held.lock().insert(key.to_vec());
            return;
        }
        let done = match action {
            Action::Keep => Ok(()),
            Action::Remove => self.open_key(0, key).and_then(|k| g.target.remove_plain(&k)),
            Action::Set(value) => self.open_key(0, key).and_then(|k| g.target.put_plain(&k, value)),
        };
        if let Err(e) = done {
            g.failed.lock().get_or_insert(e);
        }
    }

    /// Stops a growth under way (a clear: what it copied is gone).
    pub(super) fn cancel_growth(&self) {
        // The copier clears the mark when it stops; with none, nothing would.
        if self.growth.claimed.load(Ordering::Acquire) {
            self.growth.cancelled.store(true, Ordering::Release);
        }
    }

    /// Sets `key` (as a caller knows it) to `value` in this state, which
    /// encodes both: the put of a copy.
    pub(super) fn put_plain(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let stored = self.codec.seal_key(key)?;
        let key = &*stored;
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        let found = self.find(key, bucket)?;
        self.apply(Change::Record { key, bucket, found, action: Action::set(value) })
    }

    /// Adds `key` (as a caller knows it), which this state does not hold,
    /// with `value`: the put of a copy that knows the key is new, which
    /// spares the walk of its chain.
    pub(super) fn put_new(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let stored = self.codec.seal_key(key)?;
        let key = &*stored;
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        self.apply(Change::Record { key, bucket, found: None, action: Action::set(value) })
    }

    /// Removes `key` (as a caller knows it) from this state, if there.
    fn remove_plain(&self, key: &[u8]) -> Result<()> {
        let stored = self.codec.seal_key(key)?;
        let key = &*stored;
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        let found = self.find_record(key, bucket, false)?;
        self.apply(Change::Record { key, bucket, found, action: Action::Remove })
    }

    /// Copies `key` (stored), in `bucket`, as this state holds it now, into
    /// `target`: its value, or its absence. The caller holds the bucket's slot.
    fn copy_key(&self, key: &[u8], bucket: u64, target: &State) -> Result<()> {
        match self.find_record(key, bucket, true)? {
            Some(found) => target.put_plain(&self.open_key(found.offset, key)?, &found.value(self)?),
            None => target.remove_plain(&self.open_key(0, key)?),
        }
    }
}

/// The database's state as the copier sees it, shared with the handle.
type Shared = Arc<RwLock<Option<State>>>;

impl HashDbm {
    /// Starts a growth of the current state in a thread of its own, unless
    /// one is under way or the last one's thread is still ending.
    pub(super) fn start_growth(&self) {
        let (slot, options) = {
            let guard = self.state.read();
            let Some(s) = guard.as_ref() else { return };
            if !s.wants_growth() || s.growth.claimed.swap(true, Ordering::AcqRel) {
                return;
            }
            // The next set marks it due again if this one does not start.
            s.growth.due.store(false, Ordering::Relaxed);
            (Arc::clone(&s.growth), self.options.clone())
        };
        let mut grower = self.grower.lock();
        if let Some(thread) = grower.take() {
            if !thread.is_finished() {
                *grower = Some(thread);
                slot.claimed.store(false, Ordering::Release);
                return;
            }
            let _ = thread.join();
        }
        let shared = Arc::clone(&self.state);
        let path = self.path.clone();
        let thread_slot = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("kuradb-grow".into())
            .spawn(move || grow(&shared, &thread_slot, &path, &options));
        match spawned {
            Ok(thread) => *grower = Some(thread),
            Err(e) => {
                log::warn!("{}: no thread to grow its hash table in: {e}", self.path.display());
                end(&slot, true, None);
            }
        }
    }

    /// Stops a growth under way and waits for its thread to end: before the
    /// state is closed or replaced.
    pub(super) fn stop_growth(&self) {
        if let Some(s) = self.state.read().as_ref() {
            s.growth.cancelled.store(true, Ordering::Release);
        }
        let thread = self.grower.lock().take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        if let Some(s) = self.state.read().as_ref() {
            s.growth.cancelled.store(false, Ordering::Release);
        }
    }

    /// Removes the temporary file a growth left when its process died.
    pub(super) fn remove_stale_growth(path: &Path) {
        let temp = temp_beside(path, TEMP);
        match std::fs::remove_file(&temp) {
            Ok(()) => log::info!("{}: removed, left by a growth that did not end", temp.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                log::warn!("{}: left by a growth that did not end, and not removed: {e}", temp.display())
            }
        }
    }

    /// Grows the database now, in the calling thread, if it wants to: for tests.
    #[cfg(test)]
    pub(super) fn grow_now(&self) {
        let slot = {
            let guard = self.state.read();
            let Some(s) = guard.as_ref() else { return };
            if s.growth.claimed.swap(true, Ordering::AcqRel) {
                return;
            }
            Arc::clone(&s.growth)
        };
        grow(&self.state, &slot, &self.path, &self.options);
    }
}

/// The copier's thread: grows the state whose slot is `slot`, logging why
/// if it cannot; the database goes on with its old file then.
fn grow(shared: &Shared, slot: &Arc<GrowthSlot>, path: &Path, options: &HashOptions) {
    let temp = temp_beside(path, TEMP);
    let mut copier = Copier { shared, slot, temp: temp.clone(), job: None };
    match copier.run(path, options) {
        Ok(Some(old)) => {
            // Unnamed now: what its close would write is lost with it.
            let _ = old.abandon();
        }
        Ok(None) => {}
        Err(e) => log::warn!(
            "{}: growing its hash table failed; it goes on with the old one: {}",
            path.display(),
            e.message()
        ),
    }
}

/// Ends a growth of the state whose slot is `slot`: clears its marks, and
/// after a failure puts the next try off until the count doubles.
fn end(slot: &GrowthSlot, failed: bool, count: Option<u64>) {
    if failed {
        let count = count.unwrap_or(0).max(MIN_RECORDS);
        slot.retry_at.store(count.saturating_mul(2), Ordering::Release);
    }
    slot.cancelled.store(false, Ordering::Release);
    slot.claimed.store(false, Ordering::Release);
}

struct Copier<'a> {
    shared: &'a Shared,
    slot: &'a Arc<GrowthSlot>,
    temp: PathBuf,
    job: Option<Arc<Growing>>,
}

impl Copier<'_> {
    /// The state being grown, if it still is (not closed, replaced, cleared
    /// or asked to stop).
    fn current<'g>(&self, guard: &'g Option<State>) -> Result<&'g State> {
        match guard.as_ref() {
            Some(s) if Arc::ptr_eq(&s.growth, self.slot) && !self.slot.cancelled.load(Ordering::Acquire) => {
                Ok(s)
            }
            _ => Err(Error::new(ErrorKind::Canceled, "the growth was stopped")),
        }
    }

    fn job(&self) -> &Growing {
        self.job.as_deref().expect("the copy's file is made first")
    }

    /// A writer's failure to change the new file, if any.
    fn check_failed(&self) -> Result<()> {
        match self.job().failed.lock().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Grows the state and answers the old one, which the caller closes;
    /// `None` if the growth was stopped.
    fn run(&mut self, path: &Path, options: &HashOptions) -> Result<Option<State>> {
        let mut count = None;
        let result = self.copy_and_swap(path, options, &mut count);
        match result {
            Ok(old) => {
                end(self.slot, false, None);
                Ok(Some(old))
            }
            Err(e) => {
                self.give_up();
                let stopped = e.kind() == ErrorKind::Canceled;
                end(self.slot, !stopped, count);
                if stopped {
                    Ok(None)
                } else {
                    Err(e)
                }
            }
        }
    }

    fn copy_and_swap(
        &mut self,
        path: &Path,
        options: &HashOptions,
        count: &mut Option<u64>,
    ) -> Result<State> {
        let (o, dict, old_buckets) = {
            let guard = self.shared.read();
            let s = self.current(&guard)?;
            let n = s.count.load(Ordering::Acquire);
            *count = Some(n);
            // The file's own tuning, in place (an appending file never grows).
            let grown = grown_buckets(s.num_buckets, s.plausible_count());
            let o =
                s.copy_options(options, &RebuildParams { num_buckets: Some(grown), ..Default::default() })?;
            let dict = s.codec.compression.as_ref().and_then(|c| c.dictionary()).map(|d| d.duplicate());
            log::info!(
                "{}: {n} records in {} buckets: growing its hash table to {} buckets",
                path.display(),
                s.num_buckets,
                o.num_buckets
            );
            (o, dict, s.num_buckets)
        };
        let target = restore::copy_into(&self.temp, &o, Kind::Hash, dict, Keys::Distinct, |_| Ok(()))?;
        let job = Arc::new(Growing {
            target,
            copied: AtomicU64::new(0),
            holding: AtomicBool::new(false),
            held: Mutex::new(HashSet::new()),
            failed: Mutex::new(None),
        });
        self.job = Some(Arc::clone(&job));
        {
            let guard = self.shared.read();
            self.current(&guard)?;
            *self.slot.job.write() = Some(job);
            self.slot.active.store(true, Ordering::Release);
        }
        self.copy_buckets(old_buckets)?;
        // Most of the new file goes to the device now, while writers go on,
        // so that the synchronization below, during which they hold their
        // keys back, has little left to write. Its pages leave the process's
        // page tables first: writing back a mapped page write-protects it in
        // every processor running the process (an interrupt of the writers'
        // per page), and few of them are touched again before the swap.
        if let Err(e) = self.job().target.file.unmap_pages() {
            log::debug!("{}: the grown file's pages stayed mapped: {e}", self.temp.display());
        }
        // In steps: a writer's read of the device meanwhile (the file
        // system's bitmaps, when the old file takes space) waits behind one
        // step of the copy's writes on the device's queue, not all of them
        // (bench/results/2026-12-07-growth-write-back.md).
        self.job().target.file.write_back()?;
        self.job().target.file.synchronize(Durability::Hard)?;
        let synced_epoch = self.exclusively(|s, job| {
            job.holding.store(true, Ordering::Release);
            Ok(s.synced_epoch.load(Ordering::Acquire))
        })?;
        self.job().target.synchronize(Durability::Hard)?;
        let held = self.exclusively(|_, job| {
            job.holding.store(false, Ordering::Release);
            Ok(std::mem::take(&mut *job.held.lock()))
        })?;
        self.copy_keys(held.into_iter().collect())?;
        self.swap(path, synced_epoch)
    }

    /// Runs `f` on the state and the job under the database's exclusive lock.
    fn exclusively<R>(&self, f: impl FnOnce(&State, &Growing) -> Result<R>) -> Result<R> {
        let guard = self.shared.write();
        let s = self.current(&guard)?;
        self.check_failed()?;
        f(s, self.job())
    }

    /// The database's shared lock, once the growth is known to go on, and the job.
    fn share(&self) -> Result<(RwLockReadGuard<'_, Option<State>>, &Growing)> {
        let guard = self.shared.read();
        self.current(&guard)?;
        self.check_failed()?;
        Ok((guard, self.job()))
    }

    /// Copies every bucket of the old file, a chunk at a time.
    fn copy_buckets(&self, old_buckets: u64) -> Result<()> {
        let mut bucket = 0;
        let mut prepared = 0;
        while bucket < old_buckets {
            // The new file's pages (its bucket array first, then those past
            // its end) are brought in here, holding no lock: a copy's write
            // that faulted them in itself would hold a bucket of each file
            // while the system zeroes a read-ahead window, and a writer
            // reaching either bucket would wait for it.
            let target = &self.job().target.file;
            let size = target.size();
            if size.saturating_add(PREPARE_AHEAD / 2) > prepared {
                let ahead = size.saturating_add(PREPARE_AHEAD);
                if let Err(e) = target.prepare_writes(prepared, ahead) {
                    log::debug!(
                        "{}: the grown file's next pages were not prepared: {e}",
                        self.temp.display()
                    );
                }
                prepared = ahead;
            }
            let (guard, job) = self.share()?;
            let s = guard.as_ref().expect("checked by `share`");
            let end = (bucket + CHUNK).min(old_buckets);
            while bucket < end {
                s.prefetch_head(bucket + PREFETCH_AHEAD);
                let _slot = s.slot(bucket).read();
                // No key of a bucket not yet copied is in the new file:
                // writers change it only for buckets copied before.
                s.for_each_in(bucket, |key, value| job.target.put_new(key, value))?;
                job.copied.store(bucket + 1, Ordering::Release);
                bucket += 1;
            }
        }
        Ok(())
    }

    /// Copies `keys` (stored) as the old file holds them now, a chunk at a time.
    fn copy_keys(&self, keys: Vec<Vec<u8>>) -> Result<()> {
        for chunk in keys.chunks(CHUNK as usize) {
            let (guard, job) = self.share()?;
            let s = guard.as_ref().expect("checked by `share`");
            for key in chunk {
                let bucket = bucket_of(key, s.num_buckets);
                let _slot = s.slot(bucket).read();
                s.copy_key(key, bucket, &job.target)?;
            }
        }
        Ok(())
    }

    /// Puts the new file in the old one's place and answers the old state.
    fn swap(&mut self, path: &Path, synced_epoch: u32) -> Result<State> {
        let shared = self.shared;
        let mut guard = shared.write();
        let held = std::time::Instant::now();
        self.current(&guard)?;
        self.check_failed()?;
        let s = guard.as_ref().expect("checked by `current`");
        if s.synced_epoch.load(Ordering::Acquire) != synced_epoch {
            // The old file was synchronized since the new one was: what
            // that made durable must be durable in the new file too.
            self.job().target.synchronize(Durability::Hard)?;
        }
        let mut target = self
            .take_target()
            .ok_or_else(|| Error::new(ErrorKind::Infeasible, "the new file of a growth is still in use"))?;
        if let Err(e) = target.file.rename(path) {
            let _ = target.abandon();
            let _ = std::fs::remove_file(&self.temp);
            return Err(e);
        }
        if let Err(e) = crate::sys::sync_parent_dir(path) {
            // The new file has the name now; only a power cut before the
            // directory reaches the device could take it back.
            log::warn!("{}: the directory of the grown file was not made durable: {e}", path.display());
        }
        log::info!(
            "{}: its hash table has {} buckets now (the swap held the database for {:.3} ms)",
            path.display(),
            target.num_buckets,
            held.elapsed().as_secs_f64() * 1e3
        );
        let old = guard.replace(target).expect("checked by `current`");
        Ok(old)
    }

    /// Takes the job off the state, so that no writer reaches the new file
    /// any more, and answers the new file's state.
    fn take_target(&mut self) -> Option<State> {
        self.slot.active.store(false, Ordering::Release);
        // Writers hold the job only while its lock is held.
        self.slot.job.write().take();
        let job = self.job.take()?;
        Arc::try_unwrap(job).ok().map(|g| g.target)
    }

    /// Ends a growth that failed or was stopped: the old file stays the
    /// database's, and the new one is removed.
    fn give_up(&mut self) {
        if self.job.is_none() {
            let _ = std::fs::remove_file(&self.temp);
            return;
        }
        if let Some(target) = self.take_target() {
            let _ = target.abandon();
        }
        let _ = std::fs::remove_file(&self.temp);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::{Duration, Instant};

    use super::super::UpdateMode;
    use super::*;
    use crate::dbm::Dbm;
    use crate::file::{FaultFile, FaultKind, FileWrapper};

    fn buckets(db: &HashDbm) -> u64 {
        db.state.read().as_ref().map_or(0, |s| s.num_buckets)
    }

    fn key(n: usize) -> Vec<u8> {
        format!("key{n:07}").into_bytes()
    }

    fn value(n: usize, round: usize) -> Vec<u8> {
        format!("value {n} of round {round}").into_bytes()
    }

    /// Waits until no growth is under way (or one was wanted and is not
    /// started: a write starts it), and answers the bucket count.
    fn settled(db: &HashDbm) -> u64 {
        let started = Instant::now();
        loop {
            let busy = db.state.read().as_ref().is_some_and(|s| s.growth.claimed.load(Ordering::Acquire));
            if !busy {
                return buckets(db);
            }
            assert!(started.elapsed() < Duration::from_secs(60), "a growth did not end in a minute");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn grown_counts_are_multiples_with_room() {
        assert_eq!(grown_buckets(1021, 1025), 1021 * 4);
        assert_eq!(grown_buckets(1_048_583, 1_048_584), 1_048_583 * 4);
        assert_eq!(grown_buckets(1_000, 10_000), 1_000 * 32);
        // Asked with fewer records than buckets (a test's growth), it doubles.
        assert_eq!(grown_buckets(1_000, 10), 2_000);
    }

    #[test]
    fn grows_by_itself_while_readers_and_writers_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        let db = HashDbm::builder().num_buckets(61).open(&path).unwrap();
        let written = AtomicU64::new(0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // A reader checks what is written as the table grows under it.
                let mut n = 0usize;
                while written.load(Ordering::Acquire) < 20_000 {
                    let upto = written.load(Ordering::Acquire) as usize;
                    if upto > 0 {
                        n = (n + 7919) % upto;
                        assert_eq!(db.get(&key(n)).unwrap(), Some(value(n, 0)), "key {n} of {upto}");
                    }
                }
            });
            for n in 0..20_000 {
                db.set(&key(n), &value(n, 0)).unwrap();
                written.store(n as u64 + 1, Ordering::Release);
            }
        });
        let grown = settled(&db);
        // At least one growth ran by itself; the last may wait for a later write.
        assert!(grown >= 61 * 64 && grown.is_multiple_of(61), "{grown} buckets");
        assert_eq!(db.count().unwrap(), 20_000);
        db.close().unwrap();
        assert!(!temp_beside(&path, TEMP).exists());
        let db = HashDbm::builder().open_read_only(&path).unwrap();
        assert_eq!(buckets(&db), grown);
        for n in 0..20_000 {
            assert_eq!(db.get(&key(n)).unwrap(), Some(value(n, 0)));
        }
    }

    #[test]
    fn changes_made_during_a_growth_reach_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        let db = HashDbm::builder().num_buckets(97).auto_grow(false).open(&path).unwrap();
        let mut model = BTreeMap::new();
        for n in 0..3_000 {
            db.set(&key(n), &value(n, 0)).unwrap();
            model.insert(key(n), value(n, 0));
        }
        let done = AtomicBool::new(false);
        let model = std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                let mut model = model;
                for round in 1..40 {
                    for n in (round % 3..6_000).step_by(3) {
                        if (n + round) % 5 == 0 {
                            db.remove(&key(n)).unwrap();
                            model.remove(&key(n));
                        } else {
                            db.set(&key(n), &value(n, round)).unwrap();
                            model.insert(key(n), value(n, round));
                        }
                    }
                    if round % 10 == 0 {
                        db.synchronize(Durability::Hard).unwrap();
                    }
                }
                done.store(true, Ordering::Release);
                model
            });
            let mut growths = 0;
            while !done.load(Ordering::Acquire) && growths < 6 {
                db.grow_now();
                growths += 1;
            }
            writer.join().unwrap()
        });
        assert!(buckets(&db) > 97, "no growth ran");
        assert_eq!(db.count().unwrap(), model.len() as u64);
        let mut found = BTreeMap::new();
        db.process_each(crate::dbm::Access::ReadOnly, &mut |k, v| {
            found.insert(k.to_vec(), v.to_vec());
            Action::Keep
        })
        .unwrap();
        assert!(found == model, "the database differs from the model");
        db.close().unwrap();
    }

    #[test]
    fn a_clear_during_a_growth_stops_it_and_loses_nothing_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        let db = HashDbm::builder().num_buckets(97).auto_grow(false).open(&path).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // Each round's keys are its own: one that a growth brought
                // back after its clear would show in the count.
                for round in 1..17 {
                    for n in round * 2_000..(round + 1) * 2_000 {
                        db.set(&key(n), &value(n, round)).unwrap();
                    }
                    db.clear().unwrap();
                }
                for n in 0..2_000 {
                    db.set(&key(n), &value(n, 99)).unwrap();
                }
                done.store(true, Ordering::Release);
            });
            while !done.load(Ordering::Acquire) {
                db.grow_now();
            }
        });
        assert_eq!(db.count().unwrap(), 2_000);
        for n in 0..2_000 {
            assert_eq!(db.get(&key(n)).unwrap(), Some(value(n, 99)));
        }
        assert!(!db.state.read().as_ref().unwrap().growth.cancelled.load(Ordering::Acquire));
        db.close().unwrap();
        let db = HashDbm::builder().restore(super::super::RestoreMode::Refuse).open(&path).unwrap();
        assert_eq!(db.count().unwrap(), 2_000);
        assert!(!temp_beside(&path, TEMP).exists());
    }

    #[test]
    fn a_cursor_walks_across_a_growth_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        let db = HashDbm::builder().num_buckets(101).auto_grow(false).open(&path).unwrap();
        for n in 0..5_000 {
            db.set(&key(n), &value(n, 0)).unwrap();
        }
        let mut seen = Vec::new();
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        for round in 0..3 {
            for _ in 0..1_500 {
                let (k, _) = cursor.get().unwrap().expect("a record");
                seen.push(k);
                cursor.next().unwrap();
            }
            let before = buckets(&db);
            db.grow_now();
            assert!(buckets(&db) > before, "growth {round} ran");
        }
        while let Some((k, _)) = cursor.get().unwrap() {
            seen.push(k);
            cursor.next().unwrap();
        }
        let unique: BTreeSet<_> = seen.iter().cloned().collect();
        assert_eq!(unique.len(), seen.len(), "a record was shown twice");
        assert_eq!(unique, (0..5_000).map(key).collect::<BTreeSet<_>>());
        drop(cursor);
        db.close().unwrap();
    }

    #[test]
    fn a_failed_growth_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        // Every write to the growth's new file after its header fails as
        // on a full device.
        let wrapper = FileWrapper(Arc::new(|inner| {
            if inner.path().to_string_lossy().ends_with("grow-tmp") {
                let file = FaultFile::new(inner);
                file.control().fail_writes_from(3, FaultKind::NoSpace);
                Box::new(file)
            } else {
                inner
            }
        }));
        let options = HashOptions::default().num_buckets(61).auto_grow(false).wrap_file(Some(wrapper));
        let db = options.open(&path).unwrap();
        for n in 0..2_000 {
            db.set(&key(n), &value(n, 0)).unwrap();
        }
        db.grow_now();
        assert_eq!(buckets(&db), 61);
        assert!(!temp_beside(&path, TEMP).exists(), "the new file was left");
        let retry = db.state.read().as_ref().unwrap().growth.retry_at.load(Ordering::Acquire);
        assert_eq!(retry, 4_000, "the next try waits for twice the records");
        for n in 0..2_000 {
            assert_eq!(db.get(&key(n)).unwrap(), Some(value(n, 0)));
        }
        db.set(b"after", b"still writable").unwrap();
        db.close().unwrap();
        let db = HashDbm::builder().restore(super::super::RestoreMode::Refuse).open(&path).unwrap();
        assert_eq!(db.count().unwrap(), 2_001);
    }

    #[test]
    fn off_or_appending_it_keeps_its_buckets() {
        let dir = tempfile::tempdir().unwrap();
        for (name, options) in [
            ("off", HashOptions::default().num_buckets(61).auto_grow(false)),
            ("appending", HashOptions::default().num_buckets(61).update_mode(UpdateMode::Appending)),
        ] {
            let path = dir.path().join(format!("{name}.kh"));
            let db = options.open(&path).unwrap();
            for n in 0..3_000 {
                db.set(&key(n), &value(n, 0)).unwrap();
            }
            assert_eq!(settled(&db), 61, "{name}");
            db.close().unwrap();
        }
    }

    #[test]
    fn removals_alone_start_no_growth_and_a_set_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        let db = HashDbm::builder().num_buckets(61).auto_grow(false).open(&path).unwrap();
        for n in 0..3_000 {
            db.set(&key(n), &value(n, 0)).unwrap();
        }
        db.close().unwrap();
        // Reopened with growth on and emptied: never copied on the way.
        let db = HashDbm::builder().open(&path).unwrap();
        for n in 0..1_500 {
            db.remove(&key(n)).unwrap();
            assert_eq!(settled(&db), 61, "a removal started a growth");
        }
        db.set(&key(0), &value(0, 1)).unwrap();
        assert!(settled(&db) > 61, "a set over the bucket count started no growth");
        assert_eq!(db.get(&key(1_500)).unwrap(), Some(value(1_500, 0)));
        db.close().unwrap();
    }

    #[test]
    fn a_stale_temporary_file_is_removed_by_the_next_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        HashDbm::builder().open(&path).unwrap().close().unwrap();
        std::fs::write(temp_beside(&path, TEMP), b"left by a killed process").unwrap();
        let db = HashDbm::builder().open_read_only(&path).unwrap();
        assert!(temp_beside(&path, TEMP).exists(), "a reader leaves it");
        drop(db);
        HashDbm::builder().open(&path).unwrap().close().unwrap();
        assert!(!temp_beside(&path, TEMP).exists());
    }
}
