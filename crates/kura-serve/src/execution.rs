//! Where a batch of requests runs: in place, on the reactor thread that
//! read it, or on tokio's blocking pool.
//!
//! Handing a batch to the pool and back costs more than a short database
//! call itself (a GET or SET on a memory-mapped HashDbm takes a few µs; the
//! hand-off wakes a pool thread, and the reactor again when it is done).
//! So a batch runs in place when it is *short*: every request in it is one
//! that needs no database (PING, ECHO, AUTH, …, but not SELECT, which points
//! the rest of the batch at another database) or a command on named keys
//! (GET, SET, MGET, DEL, INCR, …: its key positions say so), the selected
//! database is *fast* (on memory, or a file read and written through the OS
//! page cache: not direct or synchronous I/O), and the whole batch holds at
//! most [`SHORT_ARGS`] words and [`SHORT_BYTES`] bytes. Anything else —
//! SCAN, KEYS, RANGE, FLUSHDB, SAVE, INFO, DBSIZE, SHUTDOWN, a large MGET,
//! a database on direct I/O — runs on the pool, where it may take as long
//! as it needs without holding up a reactor thread. A batch with a WAIT,
//! which may wait seconds for replicas but touches no database, runs on
//! the pool too, but as a long call only if it is one for another reason:
//! a client writing with `WAIT` after each write must not send every other
//! client's short calls to the pool while it waits.
//!
//! A long call takes the database's locks for its whole length (a KEYS or
//! SAVE locks a HashDbm exclusively), and a short call waiting for such a
//! lock in place would stall its reactor thread and every connection on it.
//! The [`Gate`] prevents that: while any long call runs (a pool batch that
//! touches a database, or a BGSAVE), short batches go to the pool too, and a
//! long call starts only once the short calls already in place are done
//! (microseconds). So an in-place batch never waits for a long call of this
//! server, and a reactor thread is held by one batch for at most the time
//! of [`SHORT_ARGS`] key operations on a fast database — about a
//! millisecond on a memory-mapped HashDbm.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use super::commands::{lookup, DB, WAITS};
use super::request::Batch;
use super::state::{Server, Session};
use super::stats::{thread_slot, SLOTS};

/// The most words (command names and arguments, all requests together) of
/// a batch run in place.
pub const SHORT_ARGS: usize = 1024;

/// The most bytes of requests of a batch run in place.
pub const SHORT_BYTES: usize = 256 * 1024;

/// What a batch needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// No database: it runs in place.
    Nothing,
    /// Short calls on the selected database: in place if the gate lets it.
    Short,
    /// A long call, or calls on another database: on the pool.
    Long,
    /// A call that waits without touching a database (WAIT): on the pool,
    /// without holding short calls off the reactors meanwhile.
    Waits,
}

/// What `batch` (which took `bytes` bytes of input) needs of the database
/// selected in `session`.
pub fn need(server: &Server, session: &Session, batch: &Batch, bytes: usize) -> Need {
    let mut need = Need::Nothing;
    let mut waits = false;
    for args in batch.iter() {
        match lookup(&args[0]) {
            Some((_, command)) if command.flags & WAITS != 0 => waits = true,
            Some((_, command)) if command.flags & DB != 0 => {
                // A command on named keys touches just those keys.
                if command.keys.0 <= 0 {
                    return Need::Long;
                }
                need = Need::Short;
            }
            Some((_, command)) if command.name == "select" => return Need::Long,
            _ => {}
        }
    }
    if need == Need::Nothing {
        return if waits { Need::Waits } else { need };
    }
    let fast = server.databases.get(session.db).is_some_and(|d| d.fast);
    if fast && batch.words() <= SHORT_ARGS && bytes <= SHORT_BYTES {
        // Short calls and a WAIT (a write and its WAIT, pipelined) go to
        // the pool for the WAIT's sake, and hold nothing long there.
        if waits {
            Need::Waits
        } else {
            Need::Short
        }
    } else {
        Need::Long
    }
}

/// Keeps short calls in place from waiting behind long ones. Cloning it
/// shares it.
///
/// The count of short calls is kept per thread slot, each on its own cache
/// line: every in-place batch announces itself, and one shared count made
/// the reactor threads take its line from each other on every batch. A
/// long call, which is rare, adds the slots up.
#[derive(Clone, Default)]
pub struct Gate(Arc<Counts>);

/// A count of short calls, alone on its cache line.
#[derive(Default)]
#[repr(align(128))]
struct ShortCount(AtomicUsize);

#[derive(Default)]
struct Counts {
    /// Long calls running.
    long: AtomicUsize,
    /// Short calls running in place, per thread slot.
    short: [ShortCount; SLOTS],
}

impl Gate {
    /// Enters a short call, unless a long call runs (then the batch goes to
    /// the pool). The call ends when the guard drops.
    pub fn try_short(&self) -> Option<ShortCall<'_>> {
        // Announce first, then look: a long call announcing itself at the
        // same moment sees this one and waits for it (both orders are SeqCst).
        let count = &self.0.short[thread_slot()].0;
        count.fetch_add(1, SeqCst);
        if self.0.long.load(SeqCst) > 0 {
            count.fetch_sub(1, SeqCst);
            return None;
        }
        Some(ShortCall(count))
    }

    /// Enters a long call: from now on short batches go to the pool, and
    /// this waits for those running in place to finish. Blocks: call it
    /// off the reactor.
    pub fn long(&self) -> LongCall {
        self.0.long.fetch_add(1, SeqCst);
        while self.0.short.iter().any(|count| count.0.load(SeqCst) > 0) {
            std::thread::yield_now();
        }
        LongCall(self.clone())
    }

    /// Whether a long call runs now.
    #[cfg(test)]
    fn long_running(&self) -> bool {
        self.0.long.load(SeqCst) > 0
    }
}

/// A short call in place, while it lives.
pub struct ShortCall<'a>(&'a AtomicUsize);

impl Drop for ShortCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// A long call, while it lives.
pub struct LongCall(Gate);

impl Drop for LongCall {
    fn drop(&mut self) {
        self.0 .0.long.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_call_turns_short_ones_away_and_waits_for_those_running() {
        let gate = Gate::default();
        let short = gate.try_short().expect("no long call runs");
        let started = Arc::new(AtomicUsize::new(0));
        let long = {
            let (gate, started) = (gate.clone(), Arc::clone(&started));
            std::thread::spawn(move || {
                let _long = gate.long();
                started.store(1, SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(50));
            })
        };
        while !gate.long_running() {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(started.load(SeqCst), 0, "the long call waits for the short one in place");
        assert!(gate.try_short().is_none(), "a short call waits for no long one");
        drop(short);
        long.join().unwrap();
        assert_eq!(started.load(SeqCst), 1);
        assert!(gate.try_short().is_some());
    }
}
