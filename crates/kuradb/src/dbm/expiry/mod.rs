//! Records with a time to live: [`ExpiringDbm`] wraps any database and lets
//! each record carry an expiry time, after which every read treats it as
//! gone.
//!
//! # How it works
//! Each stored value starts with a tag byte: `0` for a record that never
//! expires, `1` for one followed by its expiry time (8 bytes, big-endian
//! milliseconds since the Unix epoch); the program's value follows. The
//! expiry thus lives in the record itself: a crash keeps a record and its
//! expiry together, and an update log or a replica carries both as they are.
//! A reserved record ([`EXPIRY_MARKER`]) marks the database as one whose
//! values are so encoded, and keeps the clock's high-water mark; reads never
//! show it and writes to it are refused.
//!
//! Expired records are hidden at once by every read (get, cursor, walk,
//! count) and removed later: by [`ExpiringDbm::sweep`], which visits a
//! bounded number of records per call and resumes where it stopped, by the
//! background sweeper of [`ExpiringDbm::start_sweeper`] (a bounded number of
//! records per second), by a writable walk, and by [`Dbm::rebuild`].
//!
//! The clock is the system's wall clock (expiry times are absolute, as
//! Redis's `EXPIREAT` takes them), never taken below the highest time the
//! database has seen: a step of the clock backwards does not bring back a
//! record a read reported gone. The high-water mark is kept in the marker at
//! every synchronization and at close.
//!
//! A plain [`Dbm::set`] (and `set_multi`, and the sets of a committed batch)
//! replaces the record and its expiry, as Redis's `SET` does; every change
//! of a record's value (append, increment, `process`, compare-exchange, a
//! cursor's set) keeps its expiry, as Redis's `APPEND` and `INCR` do.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use kuradb::dbm::expiry::{ExpiringDbm, Expiry, ManualClock};
//! use kuradb::dbm::std_map::StdHashDbm;
//! use kuradb::dbm::Dbm;
//! # fn main() -> kuradb::Result<()> {
//! let clock = Arc::new(ManualClock::new(1_000_000));
//! let db = ExpiringDbm::with_clock(StdHashDbm::new(&Default::default()), clock.clone())?;
//! db.set_with_ttl(b"session:1", b"alice", Duration::from_secs(60))?;
//! db.set(b"config", b"kept")?;
//! assert_eq!(db.ttl(b"session:1")?, Some(Some(Duration::from_secs(60))));
//! clock.advance(Duration::from_secs(61));
//! assert_eq!(db.get(b"session:1")?, None);
//! assert_eq!(db.count()?, 1);
//! assert_eq!(db.sweep(100)?.removed, 1);
//! # Ok(())
//! # }
//! ```

mod clock;
mod cursor;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

pub use self::clock::{Clock, ManualClock, SystemClock};
use self::cursor::ExpiringCursor;
use crate::dbm::params::Params;
use crate::dbm::{
    show_key, Access, Action, Cursor, Dbm, Durability, EachProcessor, FinalChange, MultiProcessor, Processor,
    UnitPart,
};
use crate::error::{Error, ErrorKind, Result};

/// The key of the reserved record that marks a database whose values carry
/// expiry times.
pub const EXPIRY_MARKER: &[u8] = b"\xFF\xFEkuradb:expiry";

/// The marker's value: a magic, a format version, the clock's high-water mark.
const MARKER_MAGIC: &[u8; 3] = b"KX\x01";
const TAG_NEVER: u8 = 0;
const TAG_EXPIRES: u8 = 1;

/// What a call to [`ExpiringDbm::sweep`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Records looked at.
    pub visited: usize,
    /// Expired records removed.
    pub removed: usize,
    /// Whether the walk reached the end of the database (the next sweep
    /// starts from the beginning).
    pub finished_pass: bool,
    /// Live records with an expiry time among those looked at: summed over
    /// the sweeps of a pass, an estimate of how many the database holds
    /// (records written meanwhile behind the walk are missed).
    pub expiring: usize,
    /// The time those live records had left, in milliseconds, summed.
    pub ttl_ms: u64,
}

/// A database whose records may expire: see the [module](self).
pub struct ExpiringDbm<D: Dbm> {
    inner: D,
    state: Arc<ExpiryState>,
}

/// What an expiry layer keeps beside its database: the clock, the highest
/// time read so far, and where the sweep stopped. Every view of one
/// database shares one (see [`ExpiringDbm::with_state`]), so that a front
/// end that wraps each request's view of a database (a transaction's, say)
/// keeps one clock for all of them.
pub struct ExpiryState {
    clock: Arc<dyn Clock>,
    /// The highest time read so far: the clock is never taken below it.
    high_water: AtomicU64,
    /// The high-water mark the marker holds.
    saved_high_water: AtomicU64,
    /// The key the next sweep starts from (`None`: the beginning).
    sweep_from: Mutex<Option<Vec<u8>>>,
}

impl ExpiryState {
    /// The state of `db`, read from its marker; a database without the
    /// marker gets it if it is empty, and one holding records written
    /// without the expiry layer is refused (their values have no tag).
    pub fn open(db: &dyn Dbm, clock: Arc<dyn Clock>) -> Result<Arc<ExpiryState>> {
        if let Some(state) = ExpiryState::existing(db, Arc::clone(&clock))? {
            return Ok(state);
        }
        if db.count()? > 0 {
            return Err(Error::new(
                ErrorKind::Infeasible,
                "the database holds records written without expiry: expiry can be turned on for an empty \
                 database only (export the records and import them into a new one)",
            ));
        }
        let state = ExpiryState::new(0, clock);
        state.save_marker(db)?;
        Ok(state)
    }

    /// The state of `db` if it holds the marker (it is a database with
    /// expiry), else `None`.
    pub fn existing(db: &dyn Dbm, clock: Arc<dyn Clock>) -> Result<Option<Arc<ExpiryState>>> {
        match db.get(EXPIRY_MARKER)? {
            Some(marker) => Ok(Some(ExpiryState::new(parse_marker(&marker)?, clock))),
            None => Ok(None),
        }
    }

    fn new(high_water: u64, clock: Arc<dyn Clock>) -> Arc<ExpiryState> {
        Arc::new(ExpiryState {
            clock,
            high_water: AtomicU64::new(high_water),
            saved_high_water: AtomicU64::new(high_water),
            sweep_from: Mutex::new(None),
        })
    }

    /// The time now, in milliseconds since the Unix epoch: the clock's, or
    /// the highest seen before if the clock went back.
    pub fn now_ms(&self) -> u64 {
        let now = self.clock.now_ms();
        self.high_water.fetch_max(now, Ordering::AcqRel).max(now)
    }

    fn save_marker(&self, db: &dyn Dbm) -> Result<()> {
        let high_water = self.high_water.load(Ordering::Acquire);
        let mut marker = MARKER_MAGIC.to_vec();
        marker.extend_from_slice(&high_water.to_be_bytes());
        db.set(EXPIRY_MARKER, &marker)?;
        self.saved_high_water.fetch_max(high_water, Ordering::AcqRel);
        Ok(())
    }

    /// Keeps the high-water mark in the marker of `db` if it moved since it
    /// was kept. A database opened read-only cannot keep it, and need not:
    /// its writer keeps its own.
    pub fn keep_high_water(&self, db: &dyn Dbm) -> Result<()> {
        if self.high_water.load(Ordering::Acquire) <= self.saved_high_water.load(Ordering::Acquire) {
            return Ok(());
        }
        match self.save_marker(db) {
            Err(e) if e.kind() == ErrorKind::ReadOnly => Ok(()),
            other => other,
        }
    }
}

/// A stored value taken apart: the expiry time (`None`: never) and the value.
fn decode(stored: &[u8]) -> Result<(Option<u64>, &[u8])> {
    match stored.split_first() {
        Some((&TAG_NEVER, value)) => Ok((None, value)),
        Some((&TAG_EXPIRES, rest)) if rest.len() >= 8 => {
            let (time, value) = rest.split_at(8);
            Ok((Some(u64::from_be_bytes(time.try_into().expect("8 bytes"))), value))
        }
        _ => Err(Error::new(
            ErrorKind::BrokenData,
            "a value of a database with expiry lacks its expiry tag: the record was written without the \
             expiry layer",
        )),
    }
}

/// A value as a database with expiry stores it, taken apart: its expiry
/// time (milliseconds since the Unix epoch; `None`: never) and the value.
/// For a front end that walks the stored records itself (a `SCAN` that
/// skips expired keys) rather than through [`ExpiringDbm`]. The marker's
/// value is not one: skip [`EXPIRY_MARKER`] first.
pub fn stored_value(stored: &[u8]) -> Result<(Option<u64>, &[u8])> {
    decode(stored)
}

/// A stored value: the tag, the expiry time if any, the value.
fn encode(value: &[u8], expiry: Option<u64>) -> Vec<u8> {
    match expiry {
        None => [&[TAG_NEVER][..], value].concat(),
        Some(at) => [&[TAG_EXPIRES][..], &at.to_be_bytes(), value].concat(),
    }
}

fn is_expired(expiry: Option<u64>, now: u64) -> bool {
    expiry.is_some_and(|at| at <= now)
}

/// The live value of a stored one at `now`: `None` when absent or expired.
fn live(stored: Option<&[u8]>, now: u64) -> Result<Option<(Option<u64>, &[u8])>> {
    match stored {
        None => Ok(None),
        Some(stored) => {
            let (expiry, value) = decode(stored)?;
            Ok((!is_expired(expiry, now)).then_some((expiry, value)))
        }
    }
}

fn reserved() -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("the key {} is reserved for the expiry layer's own record", show_key(EXPIRY_MARKER)),
    )
}

/// Milliseconds in `duration`, saturating.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl<D: Dbm> ExpiringDbm<D> {
    /// Wraps `inner` with the system clock. A database without the marker
    /// gets it if it is empty; one holding records written without the
    /// expiry layer is refused (their values have no tag).
    pub fn open(inner: D) -> Result<ExpiringDbm<D>> {
        ExpiringDbm::with_clock(inner, Arc::new(SystemClock))
    }

    /// Wraps `inner` with `clock` (a [`ManualClock`] for tests).
    pub fn with_clock(inner: D, clock: Arc<dyn Clock>) -> Result<ExpiringDbm<D>> {
        let state = ExpiryState::open(&inner, clock)?;
        Ok(ExpiringDbm { inner, state })
    }

    /// Wraps `inner`, a database with expiry whose state was read before
    /// (by [`ExpiryState::open`] or [`ExpiryState::existing`]): for a view of
    /// the database made anew for each request, such as a transaction's.
    pub fn with_state(inner: D, state: Arc<ExpiryState>) -> ExpiringDbm<D> {
        ExpiringDbm { inner, state }
    }

    /// Whether `inner` is a database with expiry (it holds the marker).
    pub fn is_expiring(inner: &D) -> Result<bool> {
        inner.contains(EXPIRY_MARKER)
    }

    /// The database wrapped (its values encoded, the marker among them).
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The database wrapped and the layer's state, taken apart (the
    /// high-water mark not kept: see [`ExpiryState::keep_high_water`]).
    pub fn into_parts(self) -> (D, Arc<ExpiryState>) {
        (self.inner, self.state)
    }

    /// The layer's state.
    pub fn state(&self) -> &Arc<ExpiryState> {
        &self.state
    }

    fn save_marker(&self) -> Result<()> {
        self.state.save_marker(&self.inner)
    }

    fn keep_high_water(&self) -> Result<()> {
        self.state.keep_high_water(&self.inner)
    }

    /// The time now, in milliseconds since the Unix epoch: the clock's, or
    /// the highest seen before if the clock went back.
    pub fn now_ms(&self) -> u64 {
        self.state.now_ms()
    }

    /// [`Expiry::process_expiring`], for callers without the trait in scope.
    pub fn process_expiring(&self, key: &[u8], access: Access, f: &mut ExpiringProcessor<'_>) -> Result<()> {
        if key == EXPIRY_MARKER {
            return match access {
                Access::ReadOnly => {
                    f(None);
                    Ok(())
                }
                _ => Err(reserved()),
            };
        }
        let now = self.now_ms();
        let mut failed = None;
        self.inner.process(key, access, &mut |stored| {
            let record = match live(stored, now) {
                Ok(record) => record,
                Err(e) => {
                    failed = Some(e);
                    return Action::Keep;
                }
            };
            match f(record.map(|(expiry, value)| (value, expiry))) {
                None => Action::Keep,
                Some(ExpiringAction::Remove) => Action::Remove,
                Some(ExpiringAction::Set(value, expiry)) => Action::Set(Cow::Owned(encode(&value, expiry))),
                Some(ExpiringAction::Expiry(expiry)) => match record {
                    Some((_, value)) => Action::Set(Cow::Owned(encode(value, expiry))),
                    None => Action::Keep,
                },
            }
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// Removes up to `max_records` records' worth of expired records: it
    /// looks at that many records from where the last sweep stopped, then
    /// removes the expired ones among them (each only if it is still
    /// expired, so a record rewritten meanwhile stays).
    pub fn sweep(&self, max_records: usize) -> Result<SweepReport> {
        self.sweep_with(max_records, &mut |key, now| {
            let mut removed = false;
            self.inner.process(key, Access::ReadWrite, &mut |stored| match stored.map(decode) {
                Some(Ok((expiry, _))) if is_expired(expiry, now) => {
                    removed = true;
                    Action::Remove
                }
                _ => Action::Keep,
            })?;
            Ok(removed)
        })
    }

    /// [`ExpiringDbm::sweep`], removing each expired record it found with
    /// `remove(key, now)`, which removes it only if it is still expired and
    /// answers whether it did.
    pub(crate) fn sweep_with(
        &self,
        max_records: usize,
        remove: &mut dyn FnMut(&[u8], u64) -> Result<bool>,
    ) -> Result<SweepReport> {
        let now = self.now_ms();
        let mut report = SweepReport::default();
        let mut expired = Vec::new();
        {
            let mut from = self.state.sweep_from.lock();
            let mut cursor = self.inner.iter()?;
            match from.take() {
                // An unordered database jumps only to a key it holds: when
                // the record to resume at was removed since, the walk starts
                // over (what it passed before is swept again, no harm done).
                Some(key) => match cursor.jump(&key) {
                    Err(e) if e.kind() == ErrorKind::NotFound => cursor.first()?,
                    other => other?,
                },
                None => cursor.first()?,
            }
            loop {
                let Some((key, stored)) = cursor.get()? else {
                    report.finished_pass = true;
                    break;
                };
                if report.visited == max_records {
                    *from = Some(key);
                    break;
                }
                report.visited += 1;
                if key != EXPIRY_MARKER {
                    match decode(&stored) {
                        Ok((expiry, _)) if is_expired(expiry, now) => expired.push(key),
                        Ok((Some(at), _)) => {
                            report.expiring += 1;
                            report.ttl_ms = report.ttl_ms.saturating_add(at - now);
                        }
                        _ => {}
                    }
                }
                cursor.next()?;
            }
        }
        for key in expired {
            report.removed += usize::from(remove(&key, now)?);
        }
        Ok(report)
    }
}

/// The calls of a database with expiry, built on two: the time now and
/// [`process_expiring`](Expiry::process_expiring). [`ExpiringDbm`] has
/// them, and so has a [`TransactionalDbm`](crate::dbm::txn::TransactionalDbm)
/// over a [`PolyDbm`](crate::dbm::poly::PolyDbm) opened with expiry, whose
/// changes of expiry are tracked as its plain writes are.
pub trait Expiry {
    /// The time now, in milliseconds since the Unix epoch, never below a
    /// time read before.
    fn now_ms(&self) -> u64;

    /// Shows `f` the live record of `key` (its value and expiry time) and
    /// carries out its answer (`None`: keep), under the record's lock.
    fn process_expiring(&self, key: &[u8], access: Access, f: &mut ExpiringProcessor<'_>) -> Result<()>;

    /// Removes up to `max_records` records' worth of expired records (see
    /// [`ExpiringDbm::sweep`]).
    fn sweep(&self, max_records: usize) -> Result<SweepReport>;

    /// Stores `value` under `key`, expiring at `expiry` (milliseconds since
    /// the Unix epoch; `None`: never). A time already past removes the record.
    fn set_expiring(&self, key: &[u8], value: &[u8], expiry: Option<u64>) -> Result<()> {
        let action = if is_expired(expiry, self.now_ms()) {
            ExpiringAction::Remove
        } else {
            ExpiringAction::Set(value.to_vec(), expiry)
        };
        let mut action = Some(action);
        self.process_expiring(key, Access::ReadWrite, &mut |_| action.take())
    }

    /// Stores `value` under `key` unless a live record has that key (then
    /// fails with [`ErrorKind::Duplication`], as [`Dbm::insert`] does),
    /// expiring `ttl` from now.
    fn insert_with_ttl(&self, key: &[u8], value: &[u8], ttl: Duration) -> Result<()> {
        let at = self.now_ms().saturating_add(millis(ttl));
        let mut existed = false;
        let mut value = Some(value.to_vec());
        self.process_expiring(key, Access::ReadWrite, &mut |record| match record {
            Some(_) => {
                existed = true;
                None
            }
            None => value.take().map(|value| ExpiringAction::Set(value, Some(at))),
        })?;
        if existed {
            return Err(Error::new(
                ErrorKind::Duplication,
                format!("record {} exists and overwriting was not asked for", show_key(key)),
            ));
        }
        Ok(())
    }

    /// Stores `value` under `key`, expiring `ttl` from now.
    fn set_with_ttl(&self, key: &[u8], value: &[u8], ttl: Duration) -> Result<()> {
        self.set_expiring(key, value, Some(self.now_ms().saturating_add(millis(ttl))))
    }

    /// The value of `key` and its expiry time (`None`: never), or `None`
    /// when absent or expired.
    fn get_expiring(&self, key: &[u8]) -> Result<Option<(Vec<u8>, Option<u64>)>> {
        let mut found = None;
        self.process_expiring(key, Access::ReadOnly, &mut |record| {
            found = record.map(|(value, expiry)| (value.to_vec(), expiry));
            None
        })?;
        Ok(found)
    }

    /// The expiry time of `key`: `None` when absent (or expired),
    /// `Some(None)` when it never expires.
    fn expiry(&self, key: &[u8]) -> Result<Option<Option<u64>>> {
        Ok(self.get_expiring(key)?.map(|(_, expiry)| expiry))
    }

    /// The time `key` has left: `None` when absent (or expired),
    /// `Some(None)` when it never expires.
    fn ttl(&self, key: &[u8]) -> Result<Option<Option<Duration>>> {
        let now = self.now_ms();
        Ok(self.expiry(key)?.map(|expiry| expiry.map(|at| Duration::from_millis(at.saturating_sub(now)))))
    }

    /// Sets the expiry time of `key` (`None`: never); a time already past
    /// removes it. Answers whether the record was there.
    fn expire_at(&self, key: &[u8], expiry: Option<u64>) -> Result<bool> {
        self.update_expiry(key, |_| Some(expiry))
    }

    /// Makes `key` expire `ttl` from now; answers whether it was there.
    fn expire_after(&self, key: &[u8], ttl: Duration) -> Result<bool> {
        let at = self.now_ms().saturating_add(millis(ttl));
        self.expire_at(key, Some(at))
    }

    /// Makes `key` never expire; answers whether it had an expiry time.
    fn persist(&self, key: &[u8]) -> Result<bool> {
        let mut had = false;
        self.update_expiry(key, |expiry| {
            had = expiry.is_some();
            had.then_some(None)
        })?;
        Ok(had)
    }

    /// Shows `f` the expiry time of `key` (if present and live) and sets the
    /// one it answers (`Some(None)`: never; `None`: no change), atomically;
    /// the building block of conditional expiries (Redis's `NX`, `XX`, `GT`,
    /// `LT`). Answers whether the record was there.
    fn update_expiry(&self, key: &[u8], f: impl FnOnce(Option<u64>) -> Option<Option<u64>>) -> Result<bool> {
        let now = self.now_ms();
        let mut f = Some(f);
        let mut present = false;
        self.process_expiring(key, Access::ReadWrite, &mut |record| {
            let (_, expiry) = record?;
            present = true;
            let next = (f.take().expect("called once"))(expiry)?;
            if is_expired(next, now) {
                return Some(ExpiringAction::Remove);
            }
            Some(ExpiringAction::Expiry(next))
        })?;
        Ok(present)
    }
}

impl<D: Dbm> Expiry for ExpiringDbm<D> {
    fn now_ms(&self) -> u64 {
        self.state.now_ms()
    }

    fn process_expiring(&self, key: &[u8], access: Access, f: &mut ExpiringProcessor<'_>) -> Result<()> {
        ExpiringDbm::process_expiring(self, key, access, f)
    }

    fn sweep(&self, max_records: usize) -> Result<SweepReport> {
        ExpiringDbm::sweep(self, max_records)
    }
}

/// A function shown a live record (its value and expiry time, `None`:
/// never) or `None`, answering what to do (`None`: keep it as it is).
pub type ExpiringProcessor<'a> = dyn FnMut(Option<(&[u8], Option<u64>)>) -> Option<ExpiringAction> + 'a;

/// What [`ExpiringDbm::process_expiring`]'s function asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpiringAction {
    /// Remove the record.
    Remove,
    /// Store this value with this expiry time (`None`: never).
    Set(Vec<u8>, Option<u64>),
    /// Keep the value and set this expiry time (`None`: never); nothing if
    /// the record is absent.
    Expiry(Option<u64>),
}

fn parse_marker(marker: &[u8]) -> Result<u64> {
    match marker.strip_prefix(&MARKER_MAGIC[..]) {
        Some(time) if time.len() == 8 => Ok(u64::from_be_bytes(time.try_into().expect("8 bytes"))),
        _ => Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "the expiry layer's record {} is not one this version writes (a newer format, or damaged)",
                show_key(EXPIRY_MARKER)
            ),
        )),
    }
}

/// A background sweeper, from [`ExpiringDbm::start_sweeper`]; dropping it
/// (or [`Sweeper::stop`]) stops the thread.
pub struct Sweeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<Result<()>>>,
    removed: Arc<AtomicU64>,
    failed: Arc<AtomicBool>,
}

/// How often the background sweeper wakes: a tenth of its budget each time,
/// so no burst of removals is larger than that.
const SWEEP_TICK: Duration = Duration::from_millis(100);

/// Starts a thread that removes the expired records of `db` (see
/// [`ExpiringDbm::start_sweeper`]; `sweep` is its [`Expiry::sweep`]).
pub fn start_sweeper<T: Expiry + Send + Sync + 'static>(
    db: &Arc<T>,
    records_per_second: usize,
) -> Result<Sweeper> {
    if records_per_second == 0 {
        return Err(Error::new(ErrorKind::InvalidArgument, "a sweeper needs records_per_second above 0"));
    }
    let per_tick = records_per_second.div_ceil(10);
    let db: Weak<T> = Arc::downgrade(db);
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let removed = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let (thread_stop, thread_removed, thread_failed) =
        (Arc::clone(&stop), Arc::clone(&removed), Arc::clone(&failed));
    let thread = std::thread::Builder::new()
        .name("kuradb-sweeper".into())
        .spawn(move || loop {
            {
                let mut stopped = thread_stop.0.lock();
                if !*stopped {
                    thread_stop.1.wait_for(&mut stopped, SWEEP_TICK);
                }
                if *stopped {
                    return Ok(());
                }
            }
            let Some(db) = db.upgrade() else {
                return Ok(());
            };
            match db.sweep(per_tick) {
                Ok(report) => {
                    thread_removed.fetch_add(report.removed as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    thread_failed.store(true, Ordering::Release);
                    return Err(e);
                }
            }
        })
        .map_err(|e| Error::new(ErrorKind::System, format!("cannot start the sweeper thread: {e}")))?;
    Ok(Sweeper { stop, thread: Some(thread), removed, failed })
}

impl<D: Dbm + Send + Sync + 'static> ExpiringDbm<D> {
    /// Starts a thread that removes expired records, looking at no more than
    /// `records_per_second` records a second (in ten slices a second), so
    /// that a mass of records expiring at once costs writers a bounded share
    /// of the database. The thread ends when the sweeper is dropped or the
    /// database is.
    pub fn start_sweeper(self: &Arc<Self>, records_per_second: usize) -> Result<Sweeper> {
        start_sweeper(self, records_per_second)
    }
}

impl Sweeper {
    /// Expired records removed so far.
    pub fn removed(&self) -> u64 {
        self.removed.load(Ordering::Relaxed)
    }

    /// Stops the thread and answers the error that stopped it, if one did.
    pub fn stop(mut self) -> Result<()> {
        self.halt()
    }

    fn halt(&mut self) -> Result<()> {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(Error::new(ErrorKind::System, "the sweeper thread panicked")),
            None => Ok(()),
        }
    }

    /// Whether an error stopped the thread (a read or removal failed).
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

impl<D: Dbm> Dbm for ExpiringDbm<D> {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        self.process_expiring(key, access, &mut |record| {
            let (value, expiry) = match record {
                Some((value, expiry)) => (Some(value), expiry),
                None => (None, None),
            };
            match f(value) {
                Action::Keep => None,
                Action::Remove => Some(ExpiringAction::Remove),
                // A change of the value keeps the record's expiry.
                Action::Set(next) => Some(ExpiringAction::Set(next.into_owned(), expiry)),
            }
        })
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        if access.is_writable() && keys.contains(&EXPIRY_MARKER) {
            return Err(reserved());
        }
        let now = self.now_ms();
        let mut failed = None;
        self.inner.process_multi(keys, access, &mut |i, key, stored| {
            let record = if key == EXPIRY_MARKER { Ok(None) } else { live(stored, now) };
            let record = match record {
                Ok(record) => record,
                Err(e) => {
                    failed.get_or_insert(e);
                    return Action::Keep;
                }
            };
            match f(i, key, record.map(|(_, value)| value)) {
                Action::Keep => Action::Keep,
                Action::Remove => Action::Remove,
                Action::Set(next) => {
                    Action::Set(Cow::Owned(encode(&next, record.and_then(|(expiry, _)| expiry))))
                }
            }
        })?;
        failed.map_or(Ok(()), Err)
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let now = self.now_ms();
        let mut failed = None;
        self.inner.process_each(access, &mut |key, stored| {
            if key == EXPIRY_MARKER || failed.is_some() {
                return Action::Keep;
            }
            let (expiry, value) = match decode(stored) {
                Ok(decoded) => decoded,
                Err(e) => {
                    failed = Some(e);
                    return Action::Keep;
                }
            };
            if is_expired(expiry, now) {
                // A writable walk reclaims what it passes.
                return if access.is_writable() { Action::Remove } else { Action::Keep };
            }
            match f(key, value) {
                Action::Keep => Action::Keep,
                Action::Remove => Action::Remove,
                Action::Set(next) => Action::Set(Cow::Owned(encode(&next, expiry))),
            }
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// Counts the live records: a walk of the whole database, since any of
    /// them may have expired since the last sweep.
    fn count(&self) -> Result<u64> {
        let mut n = 0;
        self.process_each(Access::ReadOnly, &mut |_, _| {
            n += 1;
            Action::Keep
        })?;
        Ok(n)
    }

    fn file_size(&self) -> Result<u64> {
        self.inner.file_size()
    }

    fn path(&self) -> Option<&Path> {
        self.inner.path()
    }

    fn clear(&self) -> Result<()> {
        self.inner.clear()?;
        self.save_marker()
    }

    /// Removes every expired record, then rebuilds the database.
    fn rebuild(&self) -> Result<()> {
        self.sweep_all()?;
        self.inner.rebuild()
    }

    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        self.sweep_all()?;
        self.inner.rebuild_with_params(params)
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        self.inner.should_be_rebuilt()
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.keep_high_water()?;
        self.inner.synchronize(durability)
    }

    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        self.keep_high_water()?;
        self.inner.copy_file_data(dest, durability)
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let mut all = self.inner.inspect()?;
        all.push(("expiry".into(), "true".into()));
        all.push(("expiry_clock_ms".into(), self.now_ms().to_string()));
        Ok(all)
    }

    fn is_healthy(&self) -> bool {
        self.inner.is_healthy()
    }

    fn is_ordered(&self) -> bool {
        self.inner.is_ordered()
    }

    fn restores_to_last_sync(&self) -> bool {
        self.inner.restores_to_last_sync()
    }

    fn updates_show_at_sync(&self) -> bool {
        self.inner.updates_show_at_sync()
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(ExpiringCursor::new(self.inner.iter()?, self.now_ms())))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let saved = if self.inner.path().is_some() { self.keep_high_water() } else { Ok(()) };
        let ExpiringDbm { inner, .. } = *self;
        saved.and(Box::new(inner).close())
    }

    /// Replaces the record and its expiry (the record never expires after).
    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if key == EXPIRY_MARKER {
            return Err(reserved());
        }
        self.inner.set(key, &encode(value, None))
    }

    /// Replaces the records and their expiries.
    fn set_multi(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        if pairs.iter().any(|(key, _)| *key == EXPIRY_MARKER) {
            return Err(reserved());
        }
        let encoded: Vec<Vec<u8>> = pairs.iter().map(|(_, value)| encode(value, None)).collect();
        let pairs: Vec<(&[u8], &[u8])> =
            pairs.iter().zip(&encoded).map(|((key, _), value)| (*key, &value[..])).collect();
        self.inner.set_multi(&pairs)
    }

    /// A commit's sets replace the records and their expiries, as
    /// [`Dbm::set`] does.
    fn apply_changes(
        &self,
        changes: &[FinalChange<'_>],
        part: UnitPart,
        seen: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        if changes.iter().any(|change| change.key() == EXPIRY_MARKER) {
            return Err(reserved());
        }
        let encoded: Vec<Option<Vec<u8>>> = changes
            .iter()
            .map(|change| match change {
                FinalChange::Set(_, value) => Some(encode(value, None)),
                FinalChange::Remove(_) => None,
            })
            .collect();
        let changes: Vec<FinalChange<'_>> = changes
            .iter()
            .zip(&encoded)
            .map(|(change, value)| match value {
                Some(value) => FinalChange::Set(change.key(), value),
                None => FinalChange::Remove(change.key()),
            })
            .collect();
        let now = self.now_ms();
        let mut failed = None;
        self.inner.apply_changes(&changes, part, &mut |i, old| match live(old, now) {
            Ok(record) => seen(i, record.map(|(_, value)| value)),
            Err(e) => {
                failed.get_or_insert(e);
                seen(i, None)
            }
        })?;
        failed.map_or(Ok(()), Err)
    }
}

impl<D: Dbm> ExpiringDbm<D> {
    /// Sweeps the whole database once, from the beginning.
    fn sweep_all(&self) -> Result<()> {
        *self.state.sweep_from.lock() = None;
        self.sweep(usize::MAX).map(drop)
    }
}
