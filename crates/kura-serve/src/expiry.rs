//! Expiry (time to live) in the server: whether each database has it, the
//! view of a database through the library's expiry layer, the master's
//! background sweeper, and INFO's estimates.
//!
//! A database is kept as stored (values carry their expiry tag, the
//! layer's marker among the records) and every command sees it through
//! [`ExpiringDbm::with_state`] laid over the plain database or, inside
//! EXEC, over the transaction's view; so the update log and the replicas
//! carry the stored values as they are. A replica hides expired records on
//! reads and removes them only when the master's removal arrives: the
//! sweeper runs on a master only. docs/serve.md, "Expiry", is the user's
//! guide.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use kuradb::dbm::expiry::{ExpiringDbm, ExpiryState, SystemClock, EXPIRY_MARKER};
use kuradb::dbm::Dbm;
use kuradb::Result;
use parking_lot::{Condvar, Mutex};

use crate::databases::parse_spec;
use crate::state::Server;

/// The sweeper's default bound: records looked at per second, per database.
pub const DEFAULT_SWEEP_RATE: usize = 200_000;

/// How often the sweeper wakes; each time it looks at a tenth of its
/// second's budget, so no burst of removals is larger than that.
const TICK: Duration = Duration::from_millis(100);

/// Why a database has no expiry, for the error its expiry commands answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Off {
    /// It holds records written without expiry.
    OldRecords,
    /// Its spec says `expiry=false`.
    Refused,
    /// A replica whose master's database has no expiry (yet).
    Replica,
    /// Served read-only, and written without expiry.
    ReadOnly,
}

/// Whether a database has expiry, and the sweeper's estimates for INFO.
pub struct DbExpiry {
    /// The layer's state, once expiry is on; kept when it goes off again
    /// (a replica's full resync), so reads need no lock.
    state: OnceLock<Arc<ExpiryState>>,
    /// Whether expiry is on now.
    on: AtomicBool,
    /// Why it is off, when it is.
    off: Mutex<Off>,
    /// Live records with an expiry time at the sweeper's last full pass.
    expires: AtomicU64,
    /// Their average time left then, in milliseconds.
    avg_ttl: AtomicU64,
    /// The pass in progress: records with an expiry and their time left.
    pass: Mutex<(u64, u64)>,
    /// Where a replica's census (a pass that counts, removing nothing)
    /// stopped: the key to resume at (`None`: the beginning).
    census_from: Mutex<Option<Vec<u8>>>,
}

impl DbExpiry {
    /// Expiry on with `state`, or off for `off`.
    pub fn new(state: Option<Arc<ExpiryState>>, off: Off) -> DbExpiry {
        let expiry = DbExpiry {
            state: OnceLock::new(),
            on: AtomicBool::new(false),
            off: Mutex::new(off),
            expires: AtomicU64::new(0),
            avg_ttl: AtomicU64::new(0),
            pass: Mutex::new((0, 0)),
            census_from: Mutex::new(None),
        };
        if let Some(state) = state {
            expiry.turn_on(state);
        }
        expiry
    }

    /// The layer's state while expiry is on.
    pub fn state(&self) -> Option<&Arc<ExpiryState>> {
        if self.on.load(Ordering::Acquire) {
            self.state.get()
        } else {
            None
        }
    }

    fn turn_on(&self, state: Arc<ExpiryState>) {
        // A state met before (a replica resynchronized) keeps serving: its
        // clock's high-water mark is as good a floor as the marker's.
        let _ = self.state.set(state);
        self.on.store(true, Ordering::Release);
    }

    /// Turns expiry off (a replica's database was cleared for a full resync).
    pub fn turn_off(&self, why: Off) {
        *self.off.lock() = why;
        self.on.store(false, Ordering::Release);
    }

    /// The error an expiry command answers while expiry is off.
    pub fn off_error(&self) -> String {
        let why = match *self.off.lock() {
            Off::OldRecords => "it holds records written without expiry",
            Off::Refused => "its spec says expiry=false",
            Off::Replica => "this replica's master database has none",
            Off::ReadOnly => "it was written without expiry and is served read-only",
        };
        format!("ERR expiry is off for this database: {why} (see docs/serve.md)")
    }

    /// `expires` and `avg_ttl` for INFO keyspace, as of the sweeper's last
    /// full pass.
    pub fn estimates(&self) -> (u64, u64) {
        (self.expires.load(Ordering::Relaxed), self.avg_ttl.load(Ordering::Relaxed))
    }

    /// Adds a sweep's findings to the pass; publishes the pass when it ends.
    fn note(&self, expiring: usize, ttl_ms: u64, finished: bool) {
        let mut pass = self.pass.lock();
        pass.0 += expiring as u64;
        pass.1 = pass.1.saturating_add(ttl_ms);
        if finished {
            self.expires.store(pass.0, Ordering::Relaxed);
            self.avg_ttl.store(pass.1.checked_div(pass.0).unwrap_or(0), Ordering::Relaxed);
            *pass = (0, 0);
        }
    }

    /// A replica's stand-in for the sweep: looks at up to `max_records`
    /// records of `db` from where the last call stopped and counts the
    /// live ones with an expiry time, for INFO; removes nothing (the
    /// master's removals arrive by the log).
    fn census(&self, db: &dyn Dbm, state: &ExpiryState, max_records: usize) -> Result<()> {
        let now = state.now_ms();
        let (mut expiring, mut ttl_ms, mut finished) = (0usize, 0u64, false);
        let mut from = self.census_from.lock();
        let mut cursor = db.iter()?;
        match from.take() {
            // A hash database jumps only to a key it holds: one removed since
            // starts the pass over.
            Some(key) => match cursor.jump(&key) {
                Err(e) if e.kind() == kuradb::ErrorKind::NotFound => cursor.first()?,
                other => other?,
            },
            None => cursor.first()?,
        }
        let mut visited = 0;
        loop {
            let Some((key, stored)) = cursor.get()? else {
                finished = true;
                break;
            };
            if visited == max_records {
                *from = Some(key);
                break;
            }
            visited += 1;
            if key != EXPIRY_MARKER {
                if let Ok((Some(at), _)) = kuradb::dbm::expiry::stored_value(&stored) {
                    if at > now {
                        expiring += 1;
                        ttl_ms = ttl_ms.saturating_add(at - now);
                    }
                }
            }
            cursor.next()?;
        }
        drop(from);
        self.note(expiring, ttl_ms, finished);
        Ok(())
    }

    /// On a replica, after a batch of the master's changes: expiry is on
    /// once the master's marker has arrived.
    pub fn follow_marker(&self, db: &dyn Dbm) -> Result<()> {
        if self.on.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(state) = ExpiryState::existing(db, Arc::new(SystemClock))? {
            self.turn_on(state);
        }
        Ok(())
    }
}

/// Whether the spec's parameters turn expiry off.
fn refused_by(spec: &str) -> bool {
    parse_spec(spec).is_ok_and(|(_, params)| params.get("expiry").is_some_and(|v| v == "false"))
}

/// The reason a database opened without the marker has no expiry yet.
pub fn off_at_open(spec: &str, read_only: bool) -> Off {
    if refused_by(spec) {
        Off::Refused
    } else if read_only {
        Off::ReadOnly
    } else {
        Off::OldRecords
    }
}

/// Turns expiry on for every new (empty) writable database of `server`
/// whose spec does not refuse it; a replica's are left for its master's
/// marker. The marker is written through the update log, so replicas get it.
pub fn turn_on_for_new(server: &Server, replica: bool) -> Result<()> {
    if server.settings.read_only {
        return Ok(());
    }
    for database in &server.databases {
        if database.expiry.state().is_some() || refused_by(&database.spec) {
            continue;
        }
        if replica {
            database.expiry.turn_off(Off::Replica);
            continue;
        }
        let db = database.db.load();
        if db.count()? == 0 {
            let state = ExpiryState::open(&**db, Arc::new(SystemClock))?;
            database.expiry.turn_on(state);
        }
    }
    Ok(())
}

/// Keeps each database's clock high-water mark in its marker (a master's
/// only: a replica must not write its own marker).
pub fn keep_high_water(server: &Server) {
    if server.replication.is_replica() || server.settings.read_only {
        return;
    }
    for database in &server.databases {
        if let Some(state) = database.expiry.state() {
            if let Err(e) = state.keep_high_water(&**database.db.load()) {
                log::warn!("keeping the expiry clock of {}: {e}", database.spec);
            }
        }
    }
}

/// The master's background sweeper: one thread for every database with
/// expiry, looking at no more than its rate of records a second in each.
/// On a replica it only counts (for INFO's estimates), at the same rate.
pub struct Sweeper {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Sweeper {
    /// Starts the thread; it removes only while the server is a writable
    /// master, so a replica promoted starts removing, and one demoted stops.
    pub fn start(server: &Arc<Server>, records_per_second: usize) -> Result<Sweeper> {
        let per_tick = records_per_second.div_ceil(10).max(1);
        let server: Weak<Server> = Arc::downgrade(server);
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("kura-sweeper".into())
            .spawn(move || {
                let mut passes = 0u64;
                loop {
                    {
                        let mut stopped = thread_stop.0.lock();
                        if !*stopped {
                            thread_stop.1.wait_for(&mut stopped, TICK);
                        }
                        if *stopped {
                            return;
                        }
                    }
                    let Some(server) = server.upgrade() else { return };
                    if server.settings.read_only {
                        continue;
                    }
                    let replica = server.replication.is_replica();
                    for database in &server.databases {
                        let Some(state) = database.expiry.state() else { continue };
                        let db = database.db.load();
                        if replica {
                            if let Err(e) = database.expiry.census(&**db, state, per_tick) {
                                log::warn!("counting the expiring keys of {}: {e}", database.spec);
                            }
                            continue;
                        }
                        let layer = ExpiringDbm::with_state(&**db, Arc::clone(state));
                        match layer.sweep(per_tick) {
                            Ok(report) => {
                                database.expiry.note(report.expiring, report.ttl_ms, report.finished_pass);
                                if report.finished_pass {
                                    passes += 1;
                                    // The clock's floor reaches the marker
                                    // now and then, not at every pass.
                                    if passes.is_multiple_of(64) {
                                        let _ = state.keep_high_water(&**db);
                                    }
                                }
                            }
                            Err(e) => log::warn!("sweeping the expired keys of {}: {e}", database.spec),
                        }
                    }
                }
            })
            .map_err(|e| {
                kuradb::Error::new(kuradb::ErrorKind::System, format!("starting the sweeper: {e}"))
            })?;
        Ok(Sweeper { stop, thread: Some(thread) })
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The keys `db` stores, as Redis's DBSIZE counts them: expired keys not
/// yet removed included (a count, not a walk), the expiry layer's marker
/// not (on a database `with_expiry`).
pub fn key_count(db: &dyn Dbm, with_expiry: bool) -> Result<u64> {
    let n = db.count()?;
    Ok(if with_expiry { n - u64::from(db.contains(EXPIRY_MARKER)?) } else { n })
}

/// Whether a stored record of a database with expiry is live at `now`
/// (`None`: the database has no expiry, every record is). The marker is not.
pub fn is_live(key: &[u8], stored: &[u8], now: Option<u64>) -> bool {
    let Some(now) = now else { return true };
    key != EXPIRY_MARKER
        && kuradb::dbm::expiry::stored_value(stored).is_ok_and(|(expiry, _)| expiry.is_none_or(|at| at > now))
}
