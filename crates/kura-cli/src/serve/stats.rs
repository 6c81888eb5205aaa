//! Counters INFO reports: per command, calls, failures and time spent;
//! for the server, connections and commands. Lock-free, so counting costs
//! the hot path a few atomic additions.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::commands::COMMANDS;

/// One command's counters.
#[derive(Default)]
pub struct CommandStats {
    /// Calls, failed or not.
    pub calls: AtomicU64,
    /// Calls that answered an error.
    pub failed: AtomicU64,
    /// Microseconds spent in the calls.
    pub usec: AtomicU64,
    /// Requests refused before running: wrong arity, no AUTH, read-only.
    pub rejected: AtomicU64,
}

/// The server's counters.
pub struct Stats {
    /// One entry per command of [`COMMANDS`], in its order.
    pub commands: Vec<CommandStats>,
    /// Connections accepted.
    pub connections_received: AtomicU64,
    /// Connections refused for `--max_clients`.
    pub rejected_connections: AtomicU64,
    /// Connections ended for a protocol error or an oversized request.
    pub protocol_errors: AtomicU64,
    /// Requests naming no known command.
    pub unknown_commands: AtomicU64,
    /// Bytes read from clients.
    pub input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub output_bytes: AtomicU64,
}

impl Stats {
    /// Zeroed counters.
    pub fn new() -> Stats {
        Stats {
            commands: COMMANDS.iter().map(|_| CommandStats::default()).collect(),
            connections_received: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            unknown_commands: AtomicU64::new(0),
            input_bytes: AtomicU64::new(0),
            output_bytes: AtomicU64::new(0),
        }
    }

    /// Counts one call of command `index` that took `spent`.
    pub fn record(&self, index: usize, spent: Duration, failed: bool) {
        let entry = &self.commands[index];
        entry.calls.fetch_add(1, Relaxed);
        entry.usec.fetch_add(spent.as_micros() as u64, Relaxed);
        if failed {
            entry.failed.fetch_add(1, Relaxed);
        }
    }

    /// Commands processed in all.
    pub fn total_commands(&self) -> u64 {
        self.commands.iter().map(|c| c.calls.load(Relaxed)).sum()
    }
}
