//! Counters INFO reports: per command, calls, failures and time spent;
//! for the server, connections, commands and bytes.
//!
//! The counters every request touches are kept per thread slot (one set of
//! counters for each of [`SLOTS`] slots, each on its own cache lines), and
//! INFO adds the slots up. One shared set made the reactor threads take its
//! cache lines from each other on every request.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use super::commands::COMMANDS;

/// The number of slots: threads beyond it share slots, which stays correct
/// (the counters are atomic) and only costs speed.
pub const SLOTS: usize = 16;

/// The slot of the calling thread: threads take slots in turn as they
/// first ask.
pub fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: Cell<Option<usize>> = const { Cell::new(None) };
    }
    SLOT.with(|slot| {
        slot.get().unwrap_or_else(|| {
            let taken = NEXT.fetch_add(1, Relaxed) % SLOTS;
            slot.set(Some(taken));
            taken
        })
    })
}

/// One command's counters in one slot.
#[derive(Default)]
struct CommandCounts {
    calls: AtomicU64,
    failed: AtomicU64,
    usec: AtomicU64,
    rejected: AtomicU64,
}

/// One slot's counters, apart from the other slots' cache lines.
#[repr(align(128))]
struct Slot {
    /// One entry per command of [`COMMANDS`], in its order.
    commands: Box<[CommandCounts]>,
    input_bytes: AtomicU64,
    output_bytes: AtomicU64,
}

/// One command's counters, all slots added up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandTotals {
    /// Calls, failed or not.
    pub calls: u64,
    /// Calls that answered an error.
    pub failed: u64,
    /// Microseconds spent in the calls.
    pub usec: u64,
    /// Requests refused before running: wrong arity, no AUTH, read-only.
    pub rejected: u64,
}

/// The server's counters.
pub struct Stats {
    slots: Box<[Slot]>,
    /// Connections accepted.
    pub connections_received: AtomicU64,
    /// Connections refused for `--max_clients`.
    pub rejected_connections: AtomicU64,
    /// Connections ended for a protocol error or an oversized request.
    pub protocol_errors: AtomicU64,
    /// Requests naming no known command.
    pub unknown_commands: AtomicU64,
}

impl Stats {
    /// Zeroed counters.
    pub fn new() -> Stats {
        let slot = || Slot {
            commands: COMMANDS.iter().map(|_| CommandCounts::default()).collect(),
            input_bytes: AtomicU64::new(0),
            output_bytes: AtomicU64::new(0),
        };
        Stats {
            slots: (0..SLOTS).map(|_| slot()).collect(),
            connections_received: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            unknown_commands: AtomicU64::new(0),
        }
    }

    fn mine(&self) -> &Slot {
        &self.slots[thread_slot()]
    }

    /// Counts one call of command `index` that took `spent`.
    pub fn record(&self, index: usize, spent: Duration, failed: bool) {
        let entry = &self.mine().commands[index];
        entry.calls.fetch_add(1, Relaxed);
        entry.usec.fetch_add(spent.as_micros() as u64, Relaxed);
        if failed {
            entry.failed.fetch_add(1, Relaxed);
        }
    }

    /// Counts a request for command `index` refused before it ran.
    pub fn reject(&self, index: usize) {
        self.mine().commands[index].rejected.fetch_add(1, Relaxed);
    }

    /// Counts bytes read from a client.
    pub fn add_input(&self, bytes: usize) {
        self.mine().input_bytes.fetch_add(bytes as u64, Relaxed);
    }

    /// Counts bytes written to a client.
    pub fn add_output(&self, bytes: usize) {
        self.mine().output_bytes.fetch_add(bytes as u64, Relaxed);
    }

    /// The counters of command `index`.
    pub fn command(&self, index: usize) -> CommandTotals {
        let mut totals = CommandTotals::default();
        for slot in self.slots.iter() {
            let c = &slot.commands[index];
            totals.calls += c.calls.load(Relaxed);
            totals.failed += c.failed.load(Relaxed);
            totals.usec += c.usec.load(Relaxed);
            totals.rejected += c.rejected.load(Relaxed);
        }
        totals
    }

    /// Commands processed in all.
    pub fn total_commands(&self) -> u64 {
        (0..COMMANDS.len()).map(|i| self.command(i).calls).sum()
    }

    /// Calls that answered an error, in all.
    pub fn total_failed(&self) -> u64 {
        (0..COMMANDS.len()).map(|i| self.command(i).failed).sum()
    }

    /// Bytes read from clients.
    pub fn input_bytes(&self) -> u64 {
        self.slots.iter().map(|s| s.input_bytes.load(Relaxed)).sum()
    }

    /// Bytes written to clients.
    pub fn output_bytes(&self) -> u64 {
        self.slots.iter().map(|s| s.output_bytes.load(Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_every_thread_add_up() {
        let stats = Stats::new();
        std::thread::scope(|scope| {
            for _ in 0..SLOTS + 3 {
                scope.spawn(|| {
                    stats.record(0, Duration::from_micros(5), false);
                    stats.record(0, Duration::from_micros(1), true);
                    stats.reject(1);
                    stats.add_input(10);
                    stats.add_output(7);
                });
            }
        });
        let n = SLOTS as u64 + 3;
        assert_eq!(stats.command(0), CommandTotals { calls: 2 * n, failed: n, usec: 6 * n, rejected: 0 });
        assert_eq!(stats.command(1).rejected, n);
        assert_eq!((stats.total_commands(), stats.total_failed()), (2 * n, n));
        assert_eq!((stats.input_bytes(), stats.output_bytes()), (10 * n, 7 * n));
    }
}
