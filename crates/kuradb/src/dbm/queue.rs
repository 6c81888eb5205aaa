//! A queue over any database: [`Dbm::push_last`](super::Dbm::push_last)
//! stores a value under a key made from the time, so that records sort in
//! the order they were pushed, and [`Dbm::pop_first`](super::Dbm::pop_first)
//! takes the first record out, waiting for one if asked.
//!
//! A key is the push's wall-clock time in units of 10 ns since the Unix
//! epoch, as 8 big-endian bytes, the reference's layout: pushes made at one
//! instant take the next free unit, so no push replaces another. In an
//! ordered database with the lexical order the first record is the oldest
//! push; an unordered database pops in its own order.
//!
//! A waiting pop sleeps on a signal of the database it was called on, which
//! every push to that database raises. The signals live in a registry keyed
//! by the database's address rather than in the databases, so that every
//! class gets waiting without a field of its own; an entry exists only
//! while a pop waits. Only [`Dbm::push_last`](super::Dbm::push_last) wakes
//! a waiter: a record stored otherwise (a plain `set`, another process) is
//! taken by the next pop, or by the waiting one when it is woken or its
//! time runs out.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Action, Dbm};
use crate::dbm::Access;
use crate::error::{ErrorKind, Result};

/// Units of the key's timestamp in a second (10 ns each).
const KEY_UNITS_PER_SECOND: f64 = 100_000_000.0;

/// Stores `value` under a new key made from `wtime` (seconds since the Unix
/// epoch; `None` or negative: now) and answers the key.
pub(crate) fn push_last<D: Dbm + ?Sized>(db: &D, value: &[u8], wtime: Option<f64>) -> Result<Vec<u8>> {
    let seconds = wtime.filter(|t| *t >= 0.0).unwrap_or_else(now);
    // The float-to-int cast saturates: a time past year 7800 takes the last key.
    let base = (seconds * KEY_UNITS_PER_SECOND) as u64;
    let mut seq = 0u64;
    loop {
        let key = base.wrapping_add(seq).to_be_bytes();
        match db.insert(&key, value) {
            Ok(()) => {
                wake(address(db));
                return Ok(key.to_vec());
            }
            Err(e) if e.kind() == ErrorKind::Duplication => seq += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Takes the first record out of `db`; with `retry_wait`, waits up to that
/// long for one to be pushed while the database is empty.
pub(crate) fn pop_first<D: Dbm + ?Sized>(
    db: &D,
    retry_wait: Option<Duration>,
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let pop = || {
        let mut taken = None;
        db.process_first(Access::ReadWrite, &mut |key, value| {
            taken = Some((key.to_vec(), value.to_vec()));
            Action::Remove
        })?;
        Ok(taken)
    };
    let Some(wait) = retry_wait.filter(|w| !w.is_zero()) else { return pop() };
    // A wait too long to add to the clock is a wait for ever.
    let deadline = Instant::now().checked_add(wait);
    let waiter = Waiter::register(address(db));
    loop {
        // The count is read before looking, so a push between the look and
        // the sleep is not missed: the sleep returns at once.
        let pushes = waiter.pushes();
        if let Some(record) = pop()? {
            return Ok(Some(record));
        }
        if !waiter.sleep(pushes, deadline) {
            return pop();
        }
    }
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The registry's key for a database: its address, which the pushing and
/// the waiting calls share since both borrow the same database.
fn address<D: ?Sized>(db: &D) -> usize {
    db as *const D as *const () as usize
}

/// One database's signal: how many pushes there have been while someone waited.
struct Signal {
    pushes: Mutex<u64>,
    raised: Condvar,
}

/// A database's signal and how many pops wait on it.
type Entry = (Arc<Signal>, usize);

/// The signals of the databases someone waits on, by address.
static SIGNALS: LazyLock<Mutex<HashMap<usize, Entry>>> = LazyLock::new(Default::default);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave a counter half changed: go on with it.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn wake(address: usize) {
    let signal = lock(&SIGNALS).get(&address).map(|entry| Arc::clone(&entry.0));
    if let Some(signal) = signal {
        *lock(&signal.pushes) += 1;
        signal.raised.notify_all();
    }
}

/// A pop's registration as a waiter on one database, undone when dropped.
struct Waiter {
    address: usize,
    signal: Arc<Signal>,
}

impl Waiter {
    fn register(address: usize) -> Waiter {
        let mut signals = lock(&SIGNALS);
        let entry = signals
            .entry(address)
            .or_insert_with(|| (Arc::new(Signal { pushes: Mutex::new(0), raised: Condvar::new() }), 0));
        entry.1 += 1;
        Waiter { address, signal: Arc::clone(&entry.0) }
    }

    fn pushes(&self) -> u64 {
        *lock(&self.signal.pushes)
    }

    /// Sleeps until a push after the count `seen`, or the deadline (`None`:
    /// none). Answers false if the deadline passed first.
    fn sleep(&self, seen: u64, deadline: Option<Instant>) -> bool {
        let mut pushes = lock(&self.signal.pushes);
        while *pushes == seen {
            match deadline {
                None => pushes = self.signal.raised.wait(pushes).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    pushes =
                        self.signal.raised.wait_timeout(pushes, left).unwrap_or_else(|p| p.into_inner()).0;
                }
            }
        }
        true
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut signals = lock(&SIGNALS);
        if let Some(entry) = signals.get_mut(&self.address) {
            entry.1 -= 1;
            if entry.1 == 0 {
                signals.remove(&self.address);
            }
        }
    }
}

/// Shows the first record of `db` (in its cursor's order) to `f` under the
/// record's lock. Answers whether there was one.
pub(crate) fn process_first<'a, D: Dbm + ?Sized>(
    db: &D,
    access: Access,
    f: &mut super::EachProcessor<'a>,
) -> Result<bool> {
    loop {
        let key = {
            let mut cursor = db.iter()?;
            cursor.first()?;
            match cursor.get()? {
                None => return Ok(false),
                Some((key, _)) => key,
            }
        };
        let mut shown = false;
        db.process(&key, access, &mut |value| match value {
            // Another thread removed it between the look and the lock: look again.
            None => Action::Keep,
            Some(value) => {
                shown = true;
                f(&key, value)
            }
        })?;
        if shown {
            return Ok(true);
        }
    }
}
