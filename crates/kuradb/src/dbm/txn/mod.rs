//! Transactions over any database: atomic durable batches, snapshots, and
//! serializable transactions with savepoints.
//!
//! [`TransactionalDbm`] wraps a database (any class, a
//! [`crate::dbm::shard::ShardDbm`] or a [`crate::dbm::poly::PolyDbm`]) and
//! is itself a [`Dbm`], so plain calls keep working beside the new ones (a
//! skip database, whose updates show only after a synchronization, takes
//! only those):
//! - [`TransactionalDbm::batch`] gathers sets, removes, appends and
//!   increments and applies them as one unit: readers never see a part of
//!   it, and a crash leaves it whole or absent.
//! - [`TransactionalDbm::snapshot`] is a read view at one commit; writers go on.
//! - [`TransactionalDbm::begin`] starts a transaction: it reads a snapshot
//!   plus its own writes, commits only if nothing it read (keys, ranges, a
//!   whole scan) was changed by another commit since it began, and else
//!   fails with [`ErrorKind::Conflict`]; [`TransactionalDbm::run`] retries.
//!
//! # How it works
//! Every commit (batch or transaction) passes one path: it takes the commit
//! lock, works out its final changes, writes them as one record of the
//! commit log (`log.rs`) with the durability asked for, and applies them,
//! storing each key's previous value first (`versions.rs`) while any view
//! is open; a view reads the database and then the stored versions newer
//! than its commit. A plain write outside a transaction goes straight to
//! the database while no view is open, and through the commit lock (as a
//! commit of its own, not logged) while one is; the switch waits for plain
//! calls in flight, so no view misses a change. After a crash the database
//! is restored as its class restores it and the log's commits are applied
//! again, in order; a hard synchronization of the wrapper is a checkpoint
//! that empties the log. docs/transactions.md gives the guarantees.
//!
//! ```
//! use kuradb::dbm::hash::HashDbm;
//! use kuradb::dbm::Dbm;
//! use kuradb::dbm::txn::{CommitDurability, TransactionalDbm, TransactionOptions};
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("accounts.kdb");
//! let db = TransactionalDbm::open(HashDbm::builder().open(&path)?, TransactionOptions::default())?;
//! db.set(b"alice", b"100")?;
//! db.set(b"bob", b"0")?;
//!
//! // Move 30 from alice to bob, or nothing if another commit got in first.
//! db.run(CommitDurability::Sync, 3, |tx| {
//!     let alice: i64 = String::from_utf8_lossy(&tx.get(b"alice")?.unwrap()).parse().unwrap();
//!     let bob: i64 = String::from_utf8_lossy(&tx.get(b"bob")?.unwrap()).parse().unwrap();
//!     tx.set(b"alice", (alice - 30).to_string().as_bytes());
//!     tx.set(b"bob", (bob + 30).to_string().as_bytes());
//!     Ok(())
//! })?;
//!
//! let view = db.snapshot()?;
//! db.set(b"alice", b"0")?;
//! assert_eq!(view.get(b"alice")?.as_deref(), Some(&b"70"[..]));
//! assert_eq!(db.get(b"alice")?.as_deref(), Some(&b"0"[..]));
//! # Ok::<(), kuradb::Error>(())
//! ```

mod expiring;
mod indexes;
mod log;
mod pending;
mod snapshot;
#[cfg(test)]
mod tests;
mod transaction;
mod versions;
mod watch;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

pub use self::indexes::IndexKeys;
use self::indexes::{apply_deltas, index_deltas, AttachedIndex};
pub use self::log::CommitDurability;
use self::log::{Change, CommitLog};
use self::pending::Pending;
pub use self::snapshot::{Snapshot, SnapshotIter};
pub use self::transaction::{Batch, Savepoint, Transaction};
use self::versions::{AtView, Versions};
pub use self::watch::Watch;
use crate::dbm::comparator::KeyComparator;
use crate::dbm::params::Params;
use crate::dbm::{
    Access, Action, Cursor, Dbm, Durability, EachProcessor, FinalChange, MultiProcessor, Processor, UnitPart,
};
use crate::error::{Error, ErrorKind, Result};
use crate::file::{FileKind, FileSpec, OpenOptions};

/// How a [`TransactionalDbm`] keeps its log and bounds its memory.
#[derive(Clone, Debug)]
pub struct TransactionOptions {
    /// Bytes of old values kept for open snapshots and transactions. Past
    /// it the oldest views are expired: their next read or commit fails
    /// with an error saying so, rather than showing newer data.
    pub max_version_bytes: usize,
    /// The commit log's size past which a commit makes a checkpoint (a
    /// hard synchronization of the database, which empties the log).
    pub max_log_size: u64,
    /// How long a commit waits for the commit lock, and how long a
    /// transaction may stay open before its commit is refused; `None`
    /// waits and lives as long as it takes.
    pub timeout: Option<Duration>,
    /// The database's key order, for the ranges a transaction reads; `None`
    /// counts any change after a transaction began as touching a range it read.
    pub key_order: Option<KeyComparator>,
    /// Where the commit log is; `None` puts it beside the database
    /// (its path plus `.txlog`), or keeps none for a database without a path.
    pub log_path: Option<PathBuf>,
    /// Whether the database was opened for writing (a reader applies no log).
    pub access: Access,
    /// Bytes of keys and values of commits logged and shown to readers but
    /// not yet applied to the database (a hash database applies its commits
    /// in the background, like a peer's memtable): past it a commit waits
    /// for the applier before it returns, so memory stays bounded.
    pub max_unapplied_bytes: usize,
}

impl Default for TransactionOptions {
    fn default() -> TransactionOptions {
        TransactionOptions {
            max_version_bytes: 64 << 20,
            max_log_size: 64 << 20,
            timeout: Some(Duration::from_secs(30)),
            key_order: None,
            log_path: None,
            access: Access::ReadWrite,
            max_unapplied_bytes: 16 << 20,
        }
    }
}

impl TransactionOptions {
    /// The options that fit a [`crate::dbm::poly::PolyDbm`]: its key order.
    pub fn for_poly(db: &crate::dbm::poly::PolyDbm) -> Result<TransactionOptions> {
        Ok(TransactionOptions { key_order: db.key_order()?, ..TransactionOptions::default() })
    }
}

/// A write-ahead commit whose turn to show has passed, waiting for the applier.
struct Queued {
    seq: u64,
    /// `None` for a commit that failed before it showed: only its turn is taken.
    changes: Option<Arc<Vec<Change>>>,
    /// Bytes of its keys and values, against `max_unapplied_bytes`.
    bytes: usize,
}

/// How far the commits have gone. A write-ahead commit shows to readers
/// (in sequence order, once its log record is on the device) and is then
/// applied to the database by the applier thread, in the same order; the
/// other commits and the tracked writes do both at once.
#[derive(Default)]
struct Progress {
    /// The last commit whose turn to show ended (shown, or failed).
    shown: u64,
    /// The last commit applied to the database (or skipped, failed).
    applied: u64,
    queue: VecDeque<Queued>,
    queued_bytes: usize,
    /// Set when the wrapper goes: the applier ends once the queue is empty.
    stopping: bool,
    applier: Option<JoinHandle<()>>,
    /// Set while a committer applies the queue itself (no thread could start).
    draining: bool,
}

/// [`Progress`] and the condition every wait on it uses.
#[derive(Default)]
struct Flow {
    progress: Mutex<Progress>,
    /// Signalled whenever `progress` moves on.
    turn: Condvar,
    /// Mirrors of `progress.shown` and `progress.applied`, for checks
    /// that must not take its lock.
    shown: AtomicU64,
    applied: AtomicU64,
}

impl Flow {
    /// Waits until commit `seq` is applied (or skipped).
    fn wait_applied(&self, seq: u64) {
        if self.applied.load(Ordering::Acquire) >= seq {
            return;
        }
        let mut progress = self.progress.lock();
        while progress.applied < seq {
            self.turn.wait(&mut progress);
        }
    }

    /// Waits until commit `seq`'s turn to show has passed.
    fn wait_shown(&self, seq: u64) {
        if self.shown.load(Ordering::Acquire) >= seq {
            return;
        }
        let mut progress = self.progress.lock();
        while progress.shown < seq {
            self.turn.wait(&mut progress);
        }
    }

    /// Ends commit `seq`'s turns to show and to apply at once.
    fn finish(&self, progress: &mut Progress, seq: u64) {
        progress.shown = seq;
        progress.applied = seq;
        self.shown.store(seq, Ordering::Release);
        self.applied.store(seq, Ordering::Release);
        self.turn.notify_all();
    }
}

/// The applier thread's share of the wrapper.
struct Applier<D: Dbm> {
    inner: Arc<D>,
    flow: Arc<Flow>,
    pending: Arc<Mutex<Pending>>,
    failed: Arc<AtomicBool>,
    tracking: Arc<AtomicUsize>,
    versions: Arc<Mutex<Versions>>,
    visible: Arc<AtomicU64>,
    max_version_bytes: usize,
}

impl<D: Dbm + 'static> Applier<D> {
    /// Applies the queued commits in order until the queue is empty and,
    /// with `until_stopped`, the wrapper goes.
    fn run(&self, until_stopped: bool) {
        let mut progress = self.flow.progress.lock();
        loop {
            let Some(next) = progress.queue.pop_front() else {
                if !until_stopped {
                    progress.draining = false;
                    return;
                }
                if progress.stopping {
                    return;
                }
                self.flow.turn.wait(&mut progress);
                continue;
            };
            drop(progress);
            let mut keep_tracking = false;
            if let Some(changes) = &next.changes {
                if self.apply(changes) {
                    self.pending.lock().remove(next.seq);
                } else {
                    // The commit returned as durable and its record is in
                    // the log, which the next open applies: its values stay
                    // for reads, which stay on the tracked path to see them.
                    self.failed.store(true, Ordering::Release);
                    keep_tracking = true;
                }
            }
            progress = self.flow.progress.lock();
            progress.applied = next.seq;
            progress.queued_bytes -= next.bytes;
            self.flow.applied.store(next.seq, Ordering::Release);
            self.flow.turn.notify_all();
            if !keep_tracking {
                self.tracking.fetch_sub(1, Ordering::AcqRel);
            }
            drop(progress);
            settle_versions(&self.versions, self.visible.load(Ordering::Acquire), self.max_version_bytes);
            progress = self.flow.progress.lock();
        }
    }

    /// Applies one commit's changes; false if they could not be applied whole.
    fn apply(&self, changes: &[Change]) -> bool {
        if self.failed.load(Ordering::Acquire) {
            return false;
        }
        // Handed down whole: an update log below writes the commit as one
        // entry, and a shard set makes it under its exclusive gate.
        let finals: Vec<FinalChange<'_>> = changes.iter().map(Change::as_final).collect();
        let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.inner.apply_changes(&finals, UnitPart::WHOLE, &mut |_, _| {})
        }));
        match applied {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                ::log::error!(
                    "a logged commit could not be applied to the database ({e}); it stays in the commit \
                     log, and the next open applies it"
                );
                false
            }
            Err(_) => {
                ::log::error!(
                    "applying a logged commit to the database panicked; it stays in the commit log, and \
                     the next open applies it"
                );
                false
            }
        }
    }
}

/// Ends the applier thread, once it has applied every queued commit, when
/// the wrapper goes (it is the wrapper's first field, so the database is
/// still open while it waits).
struct ApplierStop(Arc<Flow>);

impl ApplierStop {
    fn stop(&self) {
        let handle = {
            let mut progress = self.0.progress.lock();
            progress.stopping = true;
            self.0.turn.notify_all();
            progress.applier.take()
        };
        if let Some(handle) = handle {
            // A panic inside was caught per commit; one outside has
            // nothing left to apply.
            let _ = handle.join();
        }
    }
}

impl Drop for ApplierStop {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Drops versions no view needs and expires views past the memory cap.
fn settle_versions(versions: &Mutex<Versions>, visible: u64, cap: usize) {
    let mut versions = versions.lock();
    if !versions.has_views() {
        versions.collect(visible);
    } else if versions.bytes() > cap {
        versions.enforce_cap(cap, visible);
    }
}

/// Shown each change's index and the value its key held before it.
type Seen<'a> = &'a mut dyn FnMut(usize, Option<&[u8]>);

/// Reads a record's newest value, logged commits not yet applied included:
/// what a commit's changes are worked out from.
pub(super) type ReadNewest<'a> = dyn Fn(&[u8]) -> Result<Option<Vec<u8>>> + 'a;

/// A database with batches, snapshots and transactions: see the [module](self).
pub struct TransactionalDbm<D: Dbm + 'static> {
    /// First, so that the applier has applied every commit shown and ended
    /// before the database goes.
    stop: ApplierStop,
    /// Shared with the applier thread, as are the other `Arc`s.
    inner: Arc<D>,
    /// Held shared by plain calls on the fast path, taken exclusively for a
    /// moment when views start, so none starts while such a call is in flight.
    gate: RwLock<()>,
    /// Open views plus commits not yet applied: while above zero, every
    /// change stores the previous value first (while a view is open) and
    /// plain calls take the tracked path, which sees the commits shown but
    /// not applied.
    tracking: Arc<AtomicUsize>,
    /// The last sequence number given to a commit.
    commit: Mutex<u64>,
    /// How far the commits have shown and applied, and the applier's queue.
    flow: Arc<Flow>,
    /// The values of write-ahead commits logged but not applied yet, with
    /// the sequence number of the commit that set each: what reads between
    /// a commit's log and its apply see, and what the next commit's changes
    /// are worked out from.
    pending: Arc<Mutex<Pending>>,
    /// The newest commit shown: what a new view sees.
    visible: Arc<AtomicU64>,
    versions: Arc<Mutex<Versions>>,
    /// The newest write-ahead commit that stored no previous values, as no
    /// view was open when it was logged: a view may open only once its
    /// turn to show has passed, at it or after it (set under `versions`).
    unkept_through: AtomicU64,
    log: OnceLock<CommitLog>,
    /// Where a log is made when the first commit needs one.
    log_path: Option<PathBuf>,
    /// Set when a commit was logged but could not be applied whole: the
    /// next open applies it from the log; until then nothing more commits.
    failed: Arc<AtomicBool>,
    /// Set when a commit's log record could not be written to the device:
    /// the commits logged after it fail too (a commit whose apply failed
    /// leaves the log whole, so the commits synced after it still stand).
    unsynced: AtomicBool,
    /// Whether the database shows updates only after a synchronization (a
    /// skip database): plain calls work, but snapshots and commits are refused.
    /// A commit's changes would not show to the views and transactions begun
    /// after it, which read the database itself, and a new transaction could
    /// overwrite them unseen (found by the model test in tests/transactions.rs:
    /// a committed set read back absent).
    deferred_updates: bool,
    /// Whether a crash takes the database back to its last hard
    /// synchronization: commits then apply at once (`commit_in_place`),
    /// else only once logged to the device (`commit_write_ahead`).
    restores_to_last_sync: bool,
    /// The secondary indexes every change keeps (`indexes.rs`).
    indexes: RwLock<Vec<Arc<AttachedIndex>>>,
    options: TransactionOptions,
}

impl<D: Dbm + 'static> TransactionalDbm<D> {
    /// Wraps `inner` with its commit log beside it (its path plus
    /// `.txlog`, unless the options name another), applying the commits a
    /// crash left there. The log is made by the first commit that changes
    /// something and removed by a clean close, so a database whose
    /// transactions are not used has no log file.
    pub fn open(inner: D, options: TransactionOptions) -> Result<TransactionalDbm<D>> {
        let log_path = match &options.log_path {
            Some(path) => Some(path.clone()),
            None => inner.path().map(log_path_beside),
        };
        let existing = match &log_path {
            Some(path) if path.exists() => {
                let file_options =
                    if options.access.is_writable() { OpenOptions::writer() } else { OpenOptions::reader() };
                Some(FileSpec::new(FileKind::PositionalParallel).open(path, &file_options)?)
            }
            _ => None,
        };
        let mut db = Self::with_log_file(inner, existing, options)?;
        db.log_path = log_path;
        Ok(db)
    }

    /// Wraps `inner` with `log` as its commit log (any [`crate::file::File`],
    /// for example one that injects faults), or with none: commits are then
    /// atomic for readers but not kept across a crash.
    pub fn with_log_file(
        inner: D,
        log: Option<Box<dyn crate::file::File>>,
        options: TransactionOptions,
    ) -> Result<TransactionalDbm<D>> {
        let deferred_updates = inner.updates_show_at_sync();
        let restores_to_last_sync = inner.restores_to_last_sync();
        let opened = OnceLock::new();
        if let Some(file) = log {
            let (log, pending) = CommitLog::open(file, restores_to_last_sync)?;
            if !pending.is_empty() {
                if !options.access.is_writable() {
                    return Err(Error::new(
                        ErrorKind::Infeasible,
                        format!(
                            "{}: the commit log holds {} commits not yet applied to the database; \
                             open it for writing once to apply them",
                            log.path().display(),
                            pending.len()
                        ),
                    ));
                }
                // Each commit as one unit, so that an update log below
                // gets it as one entry again.
                for (_, changes) in &pending {
                    let changes: Vec<FinalChange<'_>> = changes.iter().map(Change::as_final).collect();
                    inner.apply_changes(&changes, UnitPart::WHOLE, &mut |_, _| {})?;
                }
                inner.synchronize(Durability::Hard)?;
            }
            if options.access.is_writable() {
                log.reset()?;
            }
            let _ = opened.set(log);
        }
        let flow = Arc::new(Flow::default());
        Ok(TransactionalDbm {
            stop: ApplierStop(Arc::clone(&flow)),
            inner: Arc::new(inner),
            gate: RwLock::new(()),
            tracking: Arc::new(AtomicUsize::new(0)),
            commit: Mutex::new(0),
            flow,
            pending: Arc::new(Mutex::new(Pending::default())),
            visible: Arc::new(AtomicU64::new(0)),
            versions: Arc::new(Mutex::new(Versions::default())),
            unkept_through: AtomicU64::new(0),
            log: opened,
            log_path: None,
            failed: Arc::new(AtomicBool::new(false)),
            unsynced: AtomicBool::new(false),
            deferred_updates,
            restores_to_last_sync,
            indexes: RwLock::new(Vec::new()),
            options,
        })
    }

    /// The commit log, made at the first commit that needs it. The caller
    /// holds the commit lock.
    fn log_for_commit(&self) -> Result<Option<&CommitLog>> {
        if let Some(log) = self.log.get() {
            return Ok(Some(log));
        }
        let Some(path) = &self.log_path else {
            return Ok(None);
        };
        if !self.options.access.is_writable() {
            return Ok(None);
        }
        let file = FileSpec::new(FileKind::PositionalParallel).open(path, &OpenOptions::writer())?;
        let (log, _) = CommitLog::open(file, self.restores_to_last_sync)?;
        Ok(Some(self.log.get_or_init(|| log)))
    }

    /// The database wrapped.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The commit log's path, if there is one.
    pub fn log_path(&self) -> Option<&Path> {
        self.log.get().map(CommitLog::path).or(self.log_path.as_deref())
    }

    /// Waits until the database itself holds every commit numbered so far
    /// (or failed to take it): a hash database's commits are applied in the
    /// background after they return, and reads through
    /// [`TransactionalDbm::inner`] see them only then.
    pub fn wait_applied(&self) {
        let numbered = *self.commit.lock();
        self.flow.wait_applied(numbered);
    }

    /// Bytes of old values held for open views now.
    pub fn version_bytes(&self) -> usize {
        self.versions.lock().bytes()
    }

    /// A read view at the newest commit. Reads through it see that state
    /// while writers go on; dropping it releases what it kept.
    pub fn snapshot(&self) -> Result<Snapshot<'_, D>> {
        self.refuse_deferred_updates()?;
        Ok(self.view())
    }

    /// A view at the newest commit, for the wrapper's own consistent reads.
    fn view(&self) -> Snapshot<'_, D> {
        let at = self.open_view();
        Snapshot::new(self, at)
    }

    /// Starts a transaction whose commit has `durability`.
    pub fn begin(&self, durability: CommitDurability) -> Transaction<'_, D> {
        let at = self.open_view();
        Transaction::new(self, at, durability)
    }

    /// Starts a batch of blind writes whose commit has `durability`.
    pub fn batch(&self, durability: CommitDurability) -> Batch<'_, D> {
        Batch::new(self, durability)
    }

    /// Runs `body` in a transaction and commits it, running it again in a
    /// new one when the commit (or a read, for an expired view) fails with
    /// [`ErrorKind::Conflict`], at most `retries` more times. An error of
    /// `body` aborts the transaction and is answered.
    pub fn run<T>(
        &self,
        durability: CommitDurability,
        retries: u32,
        body: impl FnMut(&mut Transaction<'_, D>) -> Result<T>,
    ) -> Result<T> {
        self.run_committed(durability, retries, body).map(|(value, _)| value)
    }

    /// [`TransactionalDbm::run`], answering also the sequence number of the
    /// commit that succeeded (see [`Transaction::commit`]).
    pub fn run_committed<T>(
        &self,
        durability: CommitDurability,
        retries: u32,
        mut body: impl FnMut(&mut Transaction<'_, D>) -> Result<T>,
    ) -> Result<(T, u64)> {
        let mut attempt = 0;
        loop {
            let mut tx = self.begin(durability);
            let outcome = body(&mut tx).and_then(|value| tx.commit().map(|seq| (value, seq)));
            match outcome {
                Err(e) if e.kind() == ErrorKind::Conflict && attempt < retries => {
                    attempt += 1;
                    // The commit that got in first may still be waiting for
                    // its log's sync; a new attempt begun before it shows
                    // would read the same old values and fail again.
                    self.wait_for_numbered_commits();
                }
                other => return other,
            }
        }
    }

    fn open_view(&self) -> u64 {
        self.start_tracking();
        loop {
            let mut versions = self.versions.lock();
            let unkept = self.unkept_through.load(Ordering::Acquire);
            if self.flow.shown.load(Ordering::Acquire) >= unkept {
                let at = self.visible.load(Ordering::Acquire);
                versions.open_view(at);
                return at;
            }
            // A commit logged while no view was open kept no previous
            // values, so no view may open before it; its turn to show
            // comes once its log's sync is done.
            drop(versions);
            self.flow.wait_shown(unkept);
        }
    }

    fn close_view(&self, at: u64) {
        let mut versions = self.versions.lock();
        versions.close_view(at, self.visible.load(Ordering::Acquire));
        drop(versions);
        self.tracking.fetch_sub(1, Ordering::AcqRel);
    }

    /// Makes every change store its previous value from now on, once the
    /// plain calls that did not are done.
    fn start_tracking(&self) {
        self.tracking.fetch_add(1, Ordering::AcqRel);
        drop(self.gate.write());
    }

    /// The fast path: `Some` while nothing is tracked, with the gate held
    /// shared for the duration of the call.
    fn untracked(&self) -> Option<parking_lot::RwLockReadGuard<'_, ()>> {
        let guard = self.gate.read();
        (self.tracking.load(Ordering::Acquire) == 0).then_some(guard)
    }

    fn lock_commit(&self) -> Result<MutexGuard<'_, u64>> {
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::new(
                ErrorKind::Infeasible,
                "a commit was logged but could not be applied whole; reopen the database to apply it from the log",
            ));
        }
        match self.options.timeout {
            None => Ok(self.commit.lock()),
            Some(limit) => self.commit.try_lock_for(limit).ok_or_else(|| {
                Error::new(
                    ErrorKind::WouldBlock,
                    format!("waited {limit:?} for the commit lock; another commit or a checkpoint holds it"),
                )
            }),
        }
    }

    /// The commit lock, once every commit given a number has been applied:
    /// for the writes, checkpoints and copies that touch the database
    /// itself, which must come after every commit before them.
    fn lock_settled(&self) -> Result<MutexGuard<'_, u64>> {
        let last = self.lock_commit()?;
        self.flow.wait_applied(*last);
        if self.failed.load(Ordering::Acquire) {
            return Err(Error::new(
                ErrorKind::Infeasible,
                "a commit was logged but could not be applied whole; reopen the database to apply it from the log",
            ));
        }
        Ok(last)
    }

    /// Waits until every commit given a number by now has shown (or failed).
    fn wait_for_numbered_commits(&self) {
        let numbered = *self.commit.lock();
        self.flow.wait_shown(numbered);
    }

    /// Waits until the database itself holds every commit shown by now, for
    /// the reads that walk it (cursors, snapshot walks, expiry reads).
    fn catch_up_reads(&self) {
        self.flow.wait_applied(self.visible.load(Ordering::Acquire));
    }

    /// Ends the turn of commit `seq`, applied in place: the next may go,
    /// and a view started from now on sees it unless it failed.
    fn finish_turn(&self, seq: u64, succeeded: bool) {
        let mut progress = self.flow.progress.lock();
        if succeeded {
            self.visible.store(seq, Ordering::Release);
        }
        self.flow.finish(&mut progress, seq);
    }

    /// The one commit path. `check` validates under the commit lock (a
    /// transaction's reads); `changes` works out the final changes from
    /// the records' newest values, which it reads with the function it is
    /// given. Answers the commit's sequence number.
    fn commit_changes(
        &self,
        durability: CommitDurability,
        check: impl FnOnce(&Versions) -> Result<()>,
        changes: impl FnOnce(&ReadNewest<'_>) -> Result<Vec<Change>>,
    ) -> Result<u64> {
        self.commit_observed(durability, check, changes, None)
    }

    /// [`TransactionalDbm::commit_changes`], showing `seen` (if any) each
    /// change's index and the value its key held before.
    fn commit_observed(
        &self,
        durability: CommitDurability,
        check: impl FnOnce(&Versions) -> Result<()>,
        changes: impl FnOnce(&ReadNewest<'_>) -> Result<Vec<Change>>,
        mut seen: Option<Seen<'_>>,
    ) -> Result<u64> {
        self.refuse_deferred_updates()?;
        self.start_tracking();
        let seq = if self.restores_to_last_sync {
            let outcome = self.commit_in_place(durability, check, changes, &mut |i, old| {
                if let Some(seen) = seen.as_deref_mut() {
                    seen(i, old);
                }
            });
            self.tracking.fetch_sub(1, Ordering::AcqRel);
            outcome?
        } else {
            // Once numbered, a commit's count in `tracking` goes with it to
            // the applier, which takes it off after the apply.
            self.commit_write_ahead(durability, check, changes, seen)?
        };
        if self.log.get().is_some_and(|log| log.len() > self.options.max_log_size) {
            self.checkpoint()?;
        }
        Ok(seq)
    }

    /// Gives the commit after `last` its number and writes its record to the
    /// log (if it changes something and there is a log): answers the number
    /// and the record's end, 0 for none written.
    fn log_next(&self, last: u64, changes: &[Change], durability: CommitDurability) -> Result<(u64, u64)> {
        let seq = last + 1;
        let end = match self.log_for_commit()? {
            Some(log) if !changes.is_empty() => log.add(seq, changes, durability)?,
            _ => 0,
        };
        Ok((seq, end))
    }

    /// Waits until the device holds the log up to `end` (0: nothing to wait for).
    fn sync_log_through(&self, end: u64) -> Result<()> {
        match self.log.get() {
            Some(log) if end > 0 => log.sync_through(end),
            _ => Ok(()),
        }
    }

    /// A commit on a database whose restore goes back to its last hard
    /// synchronization: nothing applied after it survives a crash unless
    /// the log holds it, so the changes apply at once, under the commit
    /// lock, and the log is synchronized after (with the commits of others
    /// that wait for it meanwhile).
    fn commit_in_place(
        &self,
        durability: CommitDurability,
        check: impl FnOnce(&Versions) -> Result<()>,
        changes: impl FnOnce(&ReadNewest<'_>) -> Result<Vec<Change>>,
        seen: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<u64> {
        let mut last = self.lock_commit()?;
        check(&self.versions.lock())?;
        let changes = changes(&|key| self.inner.get(key))?;
        let (seq, end) = self.log_next(*last, &changes, durability)?;
        let indexes = self.attached_indexes();
        // The values before, kept only for the indexes to work out their pairs.
        let mut befores = vec![None; if indexes.is_empty() { 0 } else { changes.len() }];
        // Handed down whole: an update log below writes the commit as one
        // entry, and a shard set makes it under its exclusive gate.
        let finals: Vec<FinalChange<'_>> = changes.iter().map(Change::as_final).collect();
        let applied = self.inner.apply_changes(&finals, UnitPart::WHOLE, &mut |i, old| {
            self.versions.lock().record(finals[i].key(), seq, old, seq - 1);
            if let Some(slot) = befores.get_mut(i) {
                *slot = old.map(<[u8]>::to_vec);
            }
            seen(i, old);
        });
        if let Err(e) = applied {
            self.failed.store(true, Ordering::Release);
            *last = seq;
            self.finish_turn(seq, false);
            return Err(e);
        }
        if !indexes.is_empty() {
            let changed =
                changes.iter().zip(&befores).map(|(c, before)| (c.key(), before.as_deref(), c.value()));
            // The versions' lock is let go before the pairs' is taken: a
            // reader of the index takes them the other way round.
            let deltas = index_deltas(&indexes, changed, seq, &mut self.versions.lock());
            apply_deltas(deltas);
        }
        *last = seq;
        self.finish_turn(seq, true);
        drop(last);
        self.settle_versions();
        if durability == CommitDurability::Sync {
            self.sync_log_through(end)?;
        }
        Ok(seq)
    }

    /// A commit on a database whose restore keeps records written after its
    /// last synchronization (the hash classes): the OS may write a changed
    /// page back at any moment, so a change must not reach the database
    /// before the log record that completes it after a crash has reached
    /// the device, whatever the durability asked for. The commit logs its
    /// changes and puts their values in `pending` under the commit lock,
    /// then releases it, so the commits that follow log theirs and share
    /// its device sync. Once synced, each shows in sequence order (views
    /// begun from then on see it, reads find its values in `pending`) and
    /// returns, and the applier thread applies it to the database behind,
    /// as a log-structured store's memtable reaches its files later. Its
    /// previous values are read and stored for the views only while one is
    /// open (or indexes or `seen` need them).
    fn commit_write_ahead(
        &self,
        durability: CommitDurability,
        check: impl FnOnce(&Versions) -> Result<()>,
        changes: impl FnOnce(&ReadNewest<'_>) -> Result<Vec<Change>>,
        seen: Option<Seen<'_>>,
    ) -> Result<u64> {
        let unnumbered = |e: Error| {
            self.tracking.fetch_sub(1, Ordering::AcqRel);
            e
        };
        let mut last = self.lock_commit().map_err(unnumbered)?;
        check(&self.versions.lock()).map_err(unnumbered)?;
        let newest = |key: &[u8]| match self.pending.lock().newest(key) {
            Some(value) => Ok(value),
            None => self.inner.get(key),
        };
        let changes = changes(&newest).map_err(unnumbered)?;
        let (seq, end) = self.log_next(*last, &changes, durability).map_err(unnumbered)?;
        // Shared by the values reads find and the applier's queue.
        let changes = Arc::new(changes);
        // Numbered and logged: from here the commit takes its turns to show
        // and to apply whatever happens, and the applier ends its tracking.
        let indexes = self.attached_indexes();
        let keeps_befores = seen.is_some() || !indexes.is_empty() || {
            let versions = self.versions.lock();
            let views = versions.has_views();
            if !views {
                self.unkept_through.store(seq, Ordering::Release);
            }
            views
        };
        let logged = (|| {
            let befores = match keeps_befores {
                true => changes.iter().map(|change| newest(change.key())).collect::<Result<Vec<_>>>()?,
                false => Vec::new(),
            };
            let visible = self.visible.load(Ordering::Acquire);
            let mut versions = self.versions.lock();
            if keeps_befores {
                for (change, before) in changes.iter().zip(&befores) {
                    versions.record(change.key(), seq, before.as_deref(), visible);
                }
            }
            self.pending.lock().insert(seq, &changes);
            let deltas = match indexes.is_empty() {
                true => Vec::new(),
                false => {
                    let changed = changes
                        .iter()
                        .zip(&befores)
                        .map(|(c, before)| (c.key(), before.as_deref(), c.value()));
                    index_deltas(&indexes, changed, seq, &mut versions)
                }
            };
            Ok((befores, deltas))
        })();
        drop(indexes);
        *last = seq;
        drop(last);
        let synced = logged.and_then(|logged| self.sync_log_through(end).map(|()| logged));
        let bytes = changes.iter().map(|c| c.key().len() + c.value().map_or(0, <[u8]>::len)).sum();
        let mut progress = self.flow.progress.lock();
        while progress.shown + 1 < seq {
            self.flow.turn.wait(&mut progress);
        }
        let outcome = synced.and_then(|logged| match self.unsynced.load(Ordering::Acquire) {
            true => Err(Error::new(
                ErrorKind::Infeasible,
                "an earlier commit's log record could not be written to the device, so this one is not \
                 committed either; reopen the database",
            )),
            false => Ok(logged),
        });
        let befores = match outcome {
            Ok((befores, deltas)) => {
                apply_deltas(deltas);
                self.visible.store(seq, Ordering::Release);
                Ok(befores)
            }
            Err(e) => {
                // Not committed: its values leave, and so does every later
                // commit's (worked out from them), as `unsynced` fails those.
                self.unsynced.store(true, Ordering::Release);
                self.failed.store(true, Ordering::Release);
                self.pending.lock().remove(seq);
                Err(e)
            }
        };
        progress.shown = seq;
        self.flow.shown.store(seq, Ordering::Release);
        progress.queue.push_back(Queued { seq, changes: befores.is_ok().then_some(changes), bytes });
        progress.queued_bytes += bytes;
        if progress.applier.is_none() && !progress.draining && !progress.stopping {
            self.start_applier(&mut progress);
        }
        self.flow.turn.notify_all();
        while progress.queued_bytes > self.options.max_unapplied_bytes && progress.applied < seq {
            self.flow.turn.wait(&mut progress);
        }
        drop(progress);
        let befores = befores?;
        if let Some(seen) = seen {
            for (i, before) in befores.iter().enumerate() {
                seen(i, before.as_deref());
            }
        }
        Ok(seq)
    }

    /// Starts the applier thread; if the system refuses a thread, applies
    /// the queue here instead, so no commit is left unapplied.
    fn start_applier(&self, progress: &mut MutexGuard<'_, Progress>) {
        let applier = Applier {
            inner: Arc::clone(&self.inner),
            flow: Arc::clone(&self.flow),
            pending: Arc::clone(&self.pending),
            failed: Arc::clone(&self.failed),
            tracking: Arc::clone(&self.tracking),
            versions: Arc::clone(&self.versions),
            visible: Arc::clone(&self.visible),
            max_version_bytes: self.options.max_version_bytes,
        };
        let applier = Arc::new(applier);
        let thread = Arc::clone(&applier);
        match std::thread::Builder::new().name("kuradb-apply".into()).spawn(move || thread.run(true)) {
            Ok(handle) => progress.applier = Some(handle),
            Err(e) => {
                ::log::warn!(
                    "could not start the commit applier thread ({e}); applying commits in the caller"
                );
                progress.draining = true;
                MutexGuard::unlocked(progress, || applier.run(false));
            }
        }
    }

    /// After a commit: drops versions no view needs and expires views past
    /// the memory cap.
    fn settle_versions(&self) {
        settle_versions(&self.versions, self.visible.load(Ordering::Acquire), self.options.max_version_bytes);
    }

    /// Makes every commit durable in the database itself and empties the log.
    pub fn checkpoint(&self) -> Result<()> {
        let _last = self.lock_settled()?;
        self.checkpoint_locked()
    }

    fn checkpoint_locked(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            // Emptying the log would lose the commits it still completes.
            return Err(Error::new(
                ErrorKind::Infeasible,
                "a commit was logged but could not be applied whole; reopen the database to apply it from the log",
            ));
        }
        if let Some(log) = self.log.get() {
            // Records still in the process belong to commits already applied.
            log.flush()?;
        }
        self.inner.synchronize(Durability::Hard)?;
        if let Some(log) = self.log.get() {
            log.reset()?;
        }
        Ok(())
    }

    /// What a view at `at` sees of `key`.
    fn read_at(&self, key: &[u8], at: u64) -> Result<Option<Vec<u8>>> {
        // The commits shown but not applied first: an entry leaves `pending`
        // only once the database holds it.
        let pended = self.pending.lock().at(key, at);
        let current = match pended {
            Some(value) => value,
            None => self.inner.get(key)?,
        };
        let versions = self.versions.lock();
        check_view(&versions, at)?;
        Ok(match versions.value_at(key, at) {
            AtView::Current => current,
            AtView::Before(before) => before.map(<[u8]>::to_vec),
        })
    }

    /// Runs `write` on the wrapped database as a plain write of the
    /// wrapper: while views are open or indexes attached, `write` calls
    /// `record(key, old)` before it changes each record, `old` being the
    /// value the wrapped database's `get` shows, so views keep it and the
    /// indexes follow. For a change the wrapper's own calls cannot say (an
    /// expiry layer's).
    fn write_through<T>(
        &self,
        write: impl FnOnce(&D, &dyn Fn(&[u8], Option<&[u8]>)) -> Result<T>,
    ) -> Result<T> {
        match self.untracked() {
            Some(_gate) => write(&self.inner, &|_, _| {}),
            None => self.tracked_write(write),
        }
    }

    /// A plain write while views are open: a commit of its own, not logged,
    /// storing each changed record's previous value first.
    fn tracked_write<T>(
        &self,
        write: impl FnOnce(&D, &dyn Fn(&[u8], Option<&[u8]>)) -> Result<T>,
    ) -> Result<T> {
        let mut last = self.lock_settled()?;
        let seq = *last + 1;
        let indexes = self.attached_indexes();
        // Each changed record's key and value before, for the indexes.
        let changed = RefCell::new(Vec::new());
        let record = |key: &[u8], old: Option<&[u8]>| {
            self.versions.lock().record(key, seq, old, seq - 1);
            if !indexes.is_empty() {
                changed.borrow_mut().push((key.to_vec(), old.map(<[u8]>::to_vec)));
            }
        };
        let result = write(&self.inner, &record);
        if !indexes.is_empty() {
            self.index_plain_write(&indexes, changed.into_inner(), seq);
        }
        *last = seq;
        self.finish_turn(seq, true);
        drop(last);
        self.settle_versions();
        result
    }

    /// Updates the indexes for a plain write whose changed records held
    /// `changed` before it; their values now are the ones after.
    fn index_plain_write(
        &self,
        indexes: &[Arc<AttachedIndex>],
        mut changed: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        seq: u64,
    ) {
        // A record changed twice counts once, from its value before the first.
        let mut firsts = std::collections::HashSet::new();
        changed.retain(|(key, _)| firsts.insert(key.clone()));
        let afters: Result<Vec<Option<Vec<u8>>>> =
            changed.iter().map(|(key, _)| self.inner.get(key)).collect();
        match afters {
            Ok(afters) => {
                let triples = changed
                    .iter()
                    .zip(&afters)
                    .map(|((key, before), after)| (key.as_slice(), before.as_deref(), after.as_deref()));
                let deltas = index_deltas(indexes, triples, seq, &mut self.versions.lock());
                apply_deltas(deltas);
            }
            Err(e) => indexes::mark_broken(indexes, &e),
        }
    }

    /// Closes the database, making every commit durable in it first.
    pub fn close(self) -> Result<()> {
        let writable = self.options.access.is_writable();
        let (inner, indexes, log) = self.take_apart()?;
        let closed = Self::close_indexes(indexes).and(Box::new(inner).close());
        Self::end_log(log, writable, closed)
    }

    /// Ends the transactions and hands the database back, open: every
    /// commit is made durable in it first, the attached indexes are closed,
    /// and the commit log is closed and removed, as [`close`](Self::close)
    /// does; the database is not closed, so what it has cached stays.
    ///
    /// On an error the database is dropped (a file database closes as it
    /// drops), as after a failed `close`, and a commit log that still
    /// completes it stays for the next open to apply.
    ///
    /// ```
    /// use kuradb::dbm::hash::HashDbm;
    /// use kuradb::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
    /// use kuradb::dbm::Dbm;
    /// # let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("casket.kh");
    /// let db = TransactionalDbm::open(HashDbm::builder().open(&path)?, TransactionOptions::default())?;
    /// let mut batch = db.batch(CommitDurability::Sync);
    /// batch.set(b"apple", b"red");
    /// batch.commit()?;
    ///
    /// // The hash database goes on without transactions, its map still in place.
    /// let hash = db.into_inner()?;
    /// assert_eq!(hash.get(b"apple")?.as_deref(), Some(&b"red"[..]));
    /// assert!(!dir.path().join("casket.kh.txlog").exists());
    /// hash.close()?;
    /// # Ok::<(), kuradb::Error>(())
    /// ```
    pub fn into_inner(self) -> Result<D> {
        let writable = self.options.access.is_writable();
        let (inner, indexes, log) = self.take_apart()?;
        // `take_apart`'s checkpoint made every commit durable in `inner`.
        Self::end_log(log, writable, Self::close_indexes(indexes))?;
        Ok(inner)
    }

    /// Stops the applier, makes every logged commit durable in the
    /// database, and answers the parts that need closing.
    fn take_apart(self) -> Result<(D, Vec<Arc<AttachedIndex>>, Option<CommitLog>)> {
        self.stop.stop();
        let writable = self.options.access.is_writable();
        if writable && self.log.get().is_some_and(|log| log.len() > log::HEADER_SIZE) {
            self.checkpoint_locked()?;
        }
        let TransactionalDbm { stop, inner, mut log, indexes, .. } = self;
        drop(stop);
        let inner = Arc::into_inner(inner).ok_or_else(|| {
            Error::new(ErrorKind::Infeasible, "the database is still held by its commit applier")
        })?;
        Ok((inner, indexes.into_inner(), log.take()))
    }

    /// Closes the commit log, if there is one, after the rest of the
    /// wrapper ended as `closed` says, and removes it if that went well and
    /// the log closed: once the database holds every commit, a clean end
    /// of a writer leaves no log. Answers the first error.
    fn end_log(log: Option<CommitLog>, writable: bool, closed: Result<()>) -> Result<()> {
        let Some(log) = log else {
            return closed;
        };
        let path = log.path().to_path_buf();
        let log_closed = log.close();
        if writable && closed.is_ok() && log_closed.is_ok() {
            std::fs::remove_file(&path).map_err(|e| Error::io("remove the commit log", &path, e))?;
        }
        closed.and(log_closed)
    }
}

impl<D: Dbm + 'static> TransactionalDbm<D> {
    fn refuse_deferred_updates(&self) -> Result<()> {
        if self.deferred_updates {
            return Err(Error::new(
                ErrorKind::Infeasible,
                "transactions, batches and snapshots need a database whose updates show at once; a skip \
                 database shows them only after its next synchronization: use a tree database (or a std \
                 tree or baby one) instead",
            ));
        }
        Ok(())
    }
}

fn log_path_beside(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".txlog");
    PathBuf::from(name)
}

fn check_view(versions: &Versions, at: u64) -> Result<()> {
    if versions.is_expired(at) {
        return Err(Error::new(
            ErrorKind::Conflict,
            "snapshot too old: the old values it needs passed max_version_bytes and were dropped; \
             start a new one (or raise the limit)",
        ));
    }
    Ok(())
}

/// Whether an action changes a record that held `old`.
fn changes(action: &Action<'_>, old: Option<&[u8]>) -> bool {
    match action {
        Action::Keep => false,
        Action::Remove => old.is_some(),
        Action::Set(value) => old != Some(value.as_ref()),
    }
}

/// A view of the wrapper whose primitives are the tracked ones; its
/// provided methods are the trait's, built on them.
struct Tracked<'a, D: Dbm + 'static>(&'a TransactionalDbm<D>);

impl<D: Dbm + 'static> Dbm for Tracked<'_, D> {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        let db = self.0;
        if !access.is_writable() {
            let at = db.visible.load(Ordering::Acquire);
            let value = db.read_at(key, at)?;
            f(value.as_deref());
            return Ok(());
        }
        db.tracked_write(|inner, record| {
            inner.process(key, Access::ReadWrite, &mut |old| {
                let action = f(old);
                if changes(&action, old) {
                    record(key, old);
                }
                action
            })
        })
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        let db = self.0;
        if !access.is_writable() {
            let view = db.view();
            for (i, key) in keys.iter().enumerate() {
                let value = view.get(key)?;
                f(i, key, value.as_deref());
            }
            return Ok(());
        }
        db.tracked_write(|inner, record| {
            inner.process_multi(keys, Access::ReadWrite, &mut |i, key, old| {
                let action = f(i, key, old);
                if changes(&action, old) {
                    record(key, old);
                }
                action
            })
        })
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let db = self.0;
        if !access.is_writable() {
            let view = db.view();
            for item in view.iter()? {
                let (key, value) = item?;
                f(&key, &value);
            }
            return Ok(());
        }
        db.tracked_write(|inner, record| {
            inner.process_each(Access::ReadWrite, &mut |key, old| {
                let action = f(key, old);
                if changes(&action, Some(old)) {
                    record(key, Some(old));
                }
                action
            })
        })
    }

    fn count(&self) -> Result<u64> {
        let view = self.0.view();
        view.count()
    }
    fn file_size(&self) -> Result<u64> {
        self.0.inner.file_size()
    }
    fn path(&self) -> Option<&Path> {
        self.0.inner.path()
    }
    fn clear(&self) -> Result<()> {
        let db = self.0;
        let _last = db.lock_settled()?;
        if db.versions.lock().has_views() {
            return Err(Error::new(
                ErrorKind::Infeasible,
                "cannot clear the database while a snapshot or transaction is open: it would keep \
                 every record's old value; remove the records instead, or close the views first",
            ));
        }
        db.inner.clear()?;
        db.clear_indexes()
    }
    fn rebuild(&self) -> Result<()> {
        self.0.inner.rebuild()
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        self.0.inner.should_be_rebuilt()
    }
    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.0.synchronize_all(durability)
    }
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        self.0.inner.copy_file_data(dest, durability)
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        self.0.inspect_all()
    }
    fn is_healthy(&self) -> bool {
        self.0.inner.is_healthy()
    }
    fn is_ordered(&self) -> bool {
        self.0.inner.is_ordered()
    }
    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(TrackedCursor { db: self.0, inner: self.0.inner.iter()? }))
    }
    fn close(self: Box<Self>) -> Result<()> {
        Err(Error::new(ErrorKind::Infeasible, "a tracked view is not closed"))
    }
}

impl<D: Dbm + 'static> TransactionalDbm<D> {
    fn synchronize_all(&self, durability: Durability) -> Result<()> {
        if durability.is_hard() {
            return self.checkpoint();
        }
        if let Some(log) = self.log.get() {
            log.flush()?;
        }
        self.inner.synchronize(durability)
    }

    fn inspect_all(&self) -> Result<Vec<(String, String)>> {
        let mut all = self.inner.inspect()?;
        if let Some(log) = self.log.get() {
            all.push(("commit_log".into(), log.path().display().to_string()));
            all.push(("commit_log_size".into(), log.len().to_string()));
        }
        all.push(("version_bytes".into(), self.version_bytes().to_string()));
        Ok(all)
    }
}

/// A cursor of the wrapper: the database's own, whose writes store the
/// previous value first while views are open.
struct TrackedCursor<'a, D: Dbm + 'static> {
    db: &'a TransactionalDbm<D>,
    inner: Box<dyn Cursor + 'a>,
}

impl<D: Dbm + 'static> TrackedCursor<'_, D> {
    fn write(&mut self, value: Option<&[u8]>) -> Result<()> {
        if let Some(_gate) = self.db.untracked() {
            return match value {
                Some(value) => self.inner.set(value),
                None => self.inner.remove(),
            };
        }
        let cursor = &mut self.inner;
        self.db.tracked_write(|_, record| {
            if let Some((key, old)) = cursor.get()? {
                record(&key, Some(&old));
            }
            match value {
                Some(value) => cursor.set(value),
                None => cursor.remove(),
            }
        })
    }
}

impl<D: Dbm + 'static> Cursor for TrackedCursor<'_, D> {
    fn first(&mut self) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.first()
    }
    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.jump(key)
    }
    fn next(&mut self) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.next()
    }
    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.db.catch_up_reads();
        self.inner.get()
    }
    fn read(&mut self, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<bool> {
        self.db.catch_up_reads();
        self.inner.read(f)
    }
    fn last(&mut self) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.last()
    }
    fn jump_lower(&mut self, key: &[u8], edge: crate::dbm::Edge) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.jump_lower(key, edge)
    }
    fn jump_upper(&mut self, key: &[u8], edge: crate::dbm::Edge) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.jump_upper(key, edge)
    }
    fn previous(&mut self) -> Result<()> {
        self.db.catch_up_reads();
        self.inner.previous()
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        self.write(Some(value))
    }
    fn remove(&mut self) -> Result<()> {
        self.write(None)
    }
}

/// Runs `$fast` on the wrapped database while nothing is tracked, else
/// `$slow` on the tracked view.
macro_rules! gated {
    ($self:ident, |$db:ident| $fast:expr, |$tracked:ident| $slow:expr) => {
        match $self.untracked() {
            Some(_gate) => {
                let $db = &$self.inner;
                $fast
            }
            None => {
                let $tracked = Tracked($self);
                $slow
            }
        }
    };
}

impl<D: Dbm + 'static> Dbm for TransactionalDbm<D> {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        gated!(self, |db| db.process(key, access, f), |t| t.process(key, access, f))
    }
    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        gated!(self, |db| db.process_multi(keys, access, f), |t| t.process_multi(keys, access, f))
    }
    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        gated!(self, |db| db.process_each(access, f), |t| t.process_each(access, f))
    }
    fn count(&self) -> Result<u64> {
        gated!(self, |db| db.count(), |t| t.count())
    }
    fn file_size(&self) -> Result<u64> {
        self.inner.file_size()
    }
    fn path(&self) -> Option<&Path> {
        self.inner.path()
    }
    fn clear(&self) -> Result<()> {
        Tracked(self).clear()
    }
    fn rebuild(&self) -> Result<()> {
        self.inner.rebuild()
    }
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        self.inner.rebuild_with_params(params)
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        self.inner.should_be_rebuilt()
    }
    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.synchronize_all(durability)
    }
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        // The copy must hold every commit, not only what the log would add.
        let _last = self.lock_settled()?;
        self.inner.copy_file_data(dest, durability)
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        self.inspect_all()
    }
    fn is_healthy(&self) -> bool {
        self.inner.is_healthy()
    }
    fn is_ordered(&self) -> bool {
        self.inner.is_ordered()
    }
    fn restores_to_last_sync(&self) -> bool {
        self.restores_to_last_sync
    }
    fn updates_show_at_sync(&self) -> bool {
        self.deferred_updates
    }
    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(TrackedCursor { db: self, inner: self.inner.iter()? }))
    }
    fn close(self: Box<Self>) -> Result<()> {
        (*self).close()
    }

    fn contains(&self, key: &[u8]) -> Result<bool> {
        gated!(self, |db| db.contains(key), |t| t.contains(key))
    }
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        gated!(self, |db| db.get(key), |t| t.get(key))
    }
    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        gated!(self, |db| db.set(key, value), |t| t.set(key, value))
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        gated!(self, |db| db.insert(key, value), |t| t.insert(key, value))
    }
    fn remove(&self, key: &[u8]) -> Result<bool> {
        gated!(self, |db| db.remove(key), |t| t.remove(key))
    }
    fn append(&self, key: &[u8], value: &[u8], delimiter: &[u8]) -> Result<()> {
        gated!(self, |db| db.append(key, value, delimiter), |t| t.append(key, value, delimiter))
    }
    fn increment(&self, key: &[u8], delta: i64, initial: i64) -> Result<i64> {
        gated!(self, |db| db.increment(key, delta, initial), |t| t.increment(key, delta, initial))
    }
    fn get_multi(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        gated!(self, |db| db.get_multi(keys), |t| t.get_multi(keys))
    }
    fn set_multi(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        gated!(self, |db| db.set_multi(pairs), |t| t.set_multi(pairs))
    }
    fn remove_multi(&self, keys: &[&[u8]]) -> Result<usize> {
        gated!(self, |db| db.remove_multi(keys), |t| t.remove_multi(keys))
    }
    /// Committed as a batch (at [`CommitDurability::Memory`]: atomic, and
    /// in the commit log, as durable as a plain write until the next
    /// synchronization): what a replica applying a logged unit calls. A skip
    /// database, which takes no commits, makes the changes as its own
    /// `apply_changes` does.
    fn apply_changes(
        &self,
        changes: &[FinalChange<'_>],
        _part: UnitPart,
        seen: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        if self.deferred_updates {
            return self.inner.apply_changes(changes, UnitPart::WHOLE, seen);
        }
        let owned = || {
            changes
                .iter()
                .map(|change| match change {
                    FinalChange::Set(key, value) => Change::Set(key.to_vec(), value.to_vec()),
                    FinalChange::Remove(key) => Change::Remove(key.to_vec()),
                })
                .collect()
        };
        self.commit_observed(CommitDurability::Memory, |_| Ok(()), |_| Ok(owned()), Some(seen)).map(|_| ())
    }
}
