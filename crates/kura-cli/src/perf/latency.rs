//! `kura perf sequence --report_every N`: the rate of every N operations and
//! the longest single operation, so a stall a phase's average hides (a
//! database rebuilding itself, a flush of the page cache) shows where it
//! happened and how long it held an operation up.
//!
//! Every thread times each of its operations; thread 0 prints a line every N
//! of its operations, and its intervals go into the phase's JSON object. The
//! worst operation of the phase is the worst of every thread's, and the
//! counts of operations longer than a millisecond and than ten are every
//! thread's together: a single worst operation may be the machine's (a
//! thread descheduled), where a count shows how often the tail is reached.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::report::say;

/// One interval of thread 0: the figures of its line.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// Operations the thread has done, the interval's included.
    pub ops: u64,
    /// Seconds from the thread's first operation to the interval's end.
    pub elapsed: f64,
    /// Operations a second over the interval alone.
    pub interval_qps: f64,
    /// Operations a second from the thread's first operation.
    pub qps: f64,
    /// Seconds of the interval's longest operation.
    pub max_latency: f64,
}

impl Interval {
    /// The text line, in the manner of the phase's report line.
    fn text(&self) -> String {
        format!(
            "  ops={} elapsed_time={:.6} interval_qps={:.0} qps={:.0} max_latency={:.6}",
            self.ops, self.elapsed, self.interval_qps, self.qps, self.max_latency
        )
    }

    /// The JSON object of the phase's `intervals` array.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ops": self.ops,
            "elapsed": self.elapsed,
            "interval_qps": self.interval_qps,
            "qps": self.qps,
            "max_latency": self.max_latency,
        })
    }
}

/// The bounds of the slow-operation counts: an operation longer than
/// `SLOW[i]` counts in the `i`th.
pub const SLOW: [Duration; 2] = [Duration::from_millis(1), Duration::from_millis(10)];

/// The timing of one thread's operations through a phase.
#[derive(Debug)]
pub struct ThreadTiming {
    every: u64,
    /// Whether this thread prints its intervals and keeps them (thread 0).
    shown: bool,
    start: Instant,
    interval_start: Instant,
    interval_ops: u64,
    interval_max: Duration,
    worst: Duration,
    /// The number (from 1) of the worst operation among the thread's.
    worst_op: u64,
    /// Operations longer than each bound of [`SLOW`].
    slow: [u64; 2],
    intervals: Vec<Interval>,
}

impl ThreadTiming {
    /// Starts the clock of a thread that reports every `every` operations,
    /// printing its intervals if `shown`.
    pub fn start(every: u64, shown: bool) -> ThreadTiming {
        let now = Instant::now();
        ThreadTiming {
            every,
            shown,
            start: now,
            interval_start: now,
            interval_ops: 0,
            interval_max: Duration::ZERO,
            worst: Duration::ZERO,
            worst_op: 0,
            slow: [0; 2],
            intervals: Vec::new(),
        }
    }

    /// Records that operation number `done` (from 1) took `took`.
    #[inline]
    pub fn tick(&mut self, done: u64, took: Duration) {
        if took > self.interval_max {
            self.interval_max = took;
            if took > self.worst {
                self.worst = took;
                self.worst_op = done;
            }
        }
        if took > SLOW[0] {
            self.count_slow(took);
        }
        self.interval_ops += 1;
        if self.interval_ops == self.every {
            self.close_interval(done);
        }
    }

    /// Closes the last, partial interval after operation `done`, if any.
    pub fn finish(&mut self, done: u64) {
        if self.interval_ops > 0 {
            self.close_interval(done);
        }
    }

    #[cold]
    fn count_slow(&mut self, took: Duration) {
        for (count, bound) in self.slow.iter_mut().zip(SLOW) {
            *count += u64::from(took > bound);
        }
    }

    #[cold]
    fn close_interval(&mut self, done: u64) {
        let now = Instant::now();
        if self.shown {
            let elapsed = now.duration_since(self.start).as_secs_f64();
            let span = now.duration_since(self.interval_start).as_secs_f64();
            let interval = Interval {
                ops: done,
                elapsed,
                // An interval of a few operations can end within the clock's resolution.
                interval_qps: self.interval_ops as f64 / span.max(1e-9),
                qps: done as f64 / elapsed.max(1e-9),
                max_latency: self.interval_max.as_secs_f64(),
            };
            say(format_args!("{}", interval.text()));
            self.intervals.push(interval);
        }
        self.interval_start = now;
        self.interval_ops = 0;
        self.interval_max = Duration::ZERO;
    }
}

/// The timing of a whole phase, all threads together.
#[derive(Debug, Default)]
pub struct PhaseTiming {
    /// Seconds of the phase's longest operation.
    pub worst: f64,
    /// The thread that made it.
    pub worst_thread: usize,
    /// Its number (from 1) among that thread's operations.
    pub worst_op: u64,
    /// Operations of every thread longer than each bound of [`SLOW`].
    pub slow: [u64; 2],
    /// Thread 0's intervals.
    pub intervals: Vec<Interval>,
}

/// Gathers the threads' timings of the running phase.
#[derive(Debug, Default)]
pub struct TimingSink(Mutex<Option<PhaseTiming>>);

impl TimingSink {
    /// Adds thread `id`'s timing to the phase's.
    pub fn add(&self, id: usize, thread: ThreadTiming) {
        let mut phase = self.0.lock();
        let phase = phase.get_or_insert_with(PhaseTiming::default);
        let worst = thread.worst.as_secs_f64();
        if worst > phase.worst || phase.worst_op == 0 {
            phase.worst = worst;
            phase.worst_thread = id;
            phase.worst_op = thread.worst_op;
        }
        for (sum, count) in phase.slow.iter_mut().zip(thread.slow) {
            *sum += count;
        }
        if thread.shown {
            phase.intervals = thread.intervals;
        }
    }

    /// The phase's timing, leaving the sink empty for the next phase; `None`
    /// if no thread was timed.
    pub fn take(&self) -> Option<PhaseTiming> {
        self.0.lock().take()
    }
}

impl PhaseTiming {
    /// The line under the phase's report line.
    pub fn text(&self) -> String {
        format!(
            "  max_latency={:.6} max_latency_thread={} max_latency_op={} over_1ms={} over_10ms={}",
            self.worst, self.worst_thread, self.worst_op, self.slow[0], self.slow[1]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_close_every_n_operations_and_at_the_end() {
        let mut timing = ThreadTiming::start(3, true);
        let latencies = [1, 5, 2, 7, 1, 1, 9];
        for (i, &micros) in latencies.iter().enumerate() {
            timing.tick(i as u64 + 1, Duration::from_micros(micros));
        }
        timing.finish(latencies.len() as u64);
        let ops: Vec<u64> = timing.intervals.iter().map(|i| i.ops).collect();
        assert_eq!(ops, [3, 6, 7]);
        let maxima: Vec<f64> = timing.intervals.iter().map(|i| i.max_latency).collect();
        assert_eq!(maxima, [5e-6, 7e-6, 9e-6]);
        assert!(timing.intervals.iter().all(|i| i.qps > 0.0 && i.interval_qps > 0.0));
        assert_eq!((timing.worst, timing.worst_op), (Duration::from_micros(9), 7));
        assert_eq!(timing.slow, [0, 0]);
        // A count that is a multiple of N leaves no partial interval.
        let mut even = ThreadTiming::start(2, true);
        for done in 1..=4 {
            even.tick(done, Duration::from_micros(1));
        }
        even.finish(4);
        assert_eq!(even.intervals.len(), 2);
    }

    #[test]
    fn the_phase_keeps_the_worst_thread_and_thread_zeros_intervals() {
        let sink = TimingSink::default();
        let mut first = ThreadTiming::start(10, true);
        first.tick(1, Duration::from_micros(3));
        first.tick(2, Duration::from_millis(12));
        first.finish(2);
        let mut second = ThreadTiming::start(10, false);
        second.tick(1, Duration::from_micros(1));
        second.tick(2, Duration::from_millis(15));
        // At a bound is not over it.
        second.tick(3, Duration::from_millis(1));
        second.tick(4, Duration::from_millis(2));
        second.finish(4);
        assert!(second.intervals.is_empty());
        sink.add(1, second);
        sink.add(0, first);
        let phase = sink.take().unwrap();
        assert_eq!((phase.worst, phase.worst_thread, phase.worst_op), (0.015, 1, 2));
        assert_eq!(phase.slow, [3, 2]);
        assert_eq!(phase.intervals.len(), 1);
        assert_eq!(
            phase.text(),
            "  max_latency=0.015000 max_latency_thread=1 max_latency_op=2 over_1ms=3 over_10ms=2"
        );
        assert!(sink.take().is_none());
    }
}
