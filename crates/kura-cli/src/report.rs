//! Workload plumbing shared by the benchmarks: worker threads, progress dots and
//! the per-phase report, in the reference tools' format plus an optional JSON line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use kuradb::{Error, Result};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::SeedableRng;

pub use crate::out::say;

/// A flag the workers poll to give up early once one of them has failed.
#[derive(Debug, Default)]
pub struct Stop(AtomicBool);

impl Stop {
    /// Whether some worker has failed. A relaxed load: cheap enough for every operation,
    /// and a few extra operations after a failure do no harm.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work(thread_id, stop)` on `threads` scoped threads (a single worker on
/// the calling thread) and collects their results in thread order.
///
/// When a worker fails, `stop` is raised so the others can finish early, and the
/// first error to happen is returned: later ones are usually its consequences.
pub fn run_workers<R, F>(threads: usize, work: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(usize, &Stop) -> Result<R> + Sync,
{
    let stop = Stop::default();
    if threads == 1 {
        // A lone worker runs on the calling thread: a thread of its own buys
        // nothing, and starting and ending one runs code nothing else runs
        // (glibc's thread-exit clean-up among it), whose pages `mem` counts.
        return work(0, &stop).map(|result| vec![result]);
    }
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let results: Vec<Option<R>> = thread::scope(|scope| {
        let (work, stop, first_error) = (&work, &stop, &first_error);
        let handles: Vec<_> = (0..threads)
            .map(|id| {
                scope.spawn(move || match work(id, stop) {
                    Ok(result) => Some(result),
                    Err(err) => {
                        stop.set();
                        first_error.lock().get_or_insert(err);
                        None
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    match first_error.into_inner() {
        Some(err) => Err(err),
        None => Ok(results.into_iter().flatten().collect()),
    }
}

/// The seed from which every thread's generator is derived: `random_seed` itself,
/// or one drawn from the operating system once when it is negative, so that later
/// phases replay what earlier ones did.
pub fn base_seed(random_seed: i64) -> u64 {
    u64::try_from(random_seed).unwrap_or_else(|_| rand::random())
}

/// The generator of thread `id`, seeded like the reference's (seed plus thread id).
pub fn thread_rng(base_seed: u64, id: usize) -> SmallRng {
    SmallRng::seed_from_u64(base_seed.wrapping_add(id as u64))
}

/// The resident memory of the process when a benchmark started, for the `mem`
/// figure of each phase: how much the resident set grew since then.
#[derive(Clone, Copy, Debug)]
pub struct MemoryBaseline(Option<u64>);

impl MemoryBaseline {
    /// The resident memory now.
    pub fn now() -> MemoryBaseline {
        MemoryBaseline(resident_bytes())
    }

    /// Bytes of resident memory grown since the baseline: negative if it shrank,
    /// 0 where the operating system does not say.
    pub fn grown(&self) -> i64 {
        match (self.0, resident_bytes()) {
            (Some(start), Some(now)) => now as i64 - start as i64,
            _ => 0,
        }
    }
}

/// The resident set size of this process, or `None` off Linux.
fn resident_bytes() -> Option<u64> {
    vm_rss_figure(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// The peak resident set size of this process (`VmHWM`, counted as `mem`
/// is), or `None` off Linux.
pub fn peak_resident_bytes() -> Option<u64> {
    status_figure(&std::fs::read_to_string("/proc/self/status").ok()?, "VmHWM:")
}

/// The `VmRSS` line of a `/proc/PID/status` text as the reference's
/// `GetMemoryUsage` counts it: its "kB" times 1000. The kernel's unit is the
/// kibibyte, so this is 2.4% below the bytes; it is kept so that the two
/// tools' `mem=` are the same quantity (bench/results/2026-11-29-memory.md, "Units").
fn vm_rss_figure(status: &str) -> Option<u64> {
    status_figure(status, "VmRSS:")
}

/// A `/proc/PID/status` figure in kB, times 1000 (see [`vm_rss_figure`]).
fn status_figure(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find_map(|line| line.strip_prefix(name))?;
    let kb: u64 = line.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1000)
}

/// Progress dots of one worker, in the reference tools' rhythm: about 1000 dots
/// over the run, 50 to a line, each line ending with the count done so far.
///
/// Only one worker (thread 0) shows them; the others get a hidden `Progress`
/// whose [`Progress::tick`] never fires, so the hot loop pays one comparison.
#[derive(Debug)]
pub struct Progress {
    total: u64,
    dot_every: u64,
    line_every: u64,
    next_dot: u64,
    done: u64,
    midline: bool,
}

impl Progress {
    /// Progress over `total` operations, printed only if `shown`.
    pub fn new(total: u64, shown: bool) -> Progress {
        let dot_every = (total / 1000).max(1);
        Progress {
            total,
            dot_every,
            line_every: (total / 20).max(1),
            next_dot: if shown { dot_every } else { u64::MAX },
            done: 0,
            midline: false,
        }
    }

    /// Records that `done` operations are complete.
    #[inline]
    pub fn tick(&mut self, done: u64) {
        if done >= self.next_dot {
            self.dot(done);
        }
    }

    /// Marks the run complete, so the closing count is the total as in the reference.
    pub fn finish(&mut self) {
        self.done = self.total;
    }

    #[cold]
    fn dot(&mut self, done: u64) {
        self.next_dot = done + self.dot_every;
        self.done = done;
        // Dots are few (about 1000 a run), so flushing each keeps them live cheaply.
        if done.is_multiple_of(self.line_every) {
            crate::out::say_bytes(format!(". ({done:08})\n").as_bytes());
            self.midline = false;
        } else {
            crate::out::say_bytes(b".");
            self.midline = true;
        }
    }
}

impl Drop for Progress {
    /// Ends a partial line, so whatever is printed next (the phase report, or an
    /// error when a worker gave up early) starts on a line of its own.
    fn drop(&mut self) {
        if self.midline {
            say(format_args!(" ({:08})", self.done));
        }
    }
}

/// Where a field of a [`PhaseReport`] appears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// In the text line between the elapsed time and the QPS, and in the JSON.
    BeforeQps,
    /// In the text line after the QPS, and in the JSON.
    AfterQps,
    /// In the JSON object only, keeping the text line as the reference's.
    JsonOnly,
}

/// The outcome of one phase of a benchmark.
///
/// Printed as the reference tools do (`Writing done: elapsed_time=… file_size=…
/// qps=…`, or `Setting done: elapsed_time=… num_records=… qps=… mem=…` followed by
/// indented detail lines) and, with `--json`, also as one JSON object on a line of
/// its own with `phase`, `qps`, `elapsed` (seconds) and the other fields in order.
#[derive(Debug)]
pub struct PhaseReport {
    phase: &'static str,
    title: &'static str,
    elapsed: Duration,
    ops: u64,
    fields: Vec<(&'static str, serde_json::Value, Placement)>,
    /// Lines printed after the main one, as the reference prints a database's figures.
    details: Vec<String>,
}

impl PhaseReport {
    /// A report of `ops` operations done in `elapsed`. `phase` is the JSON name
    /// (`write`), `title` the text line's prefix (`Writing`; empty for a lone phase,
    /// which prints `Done:`).
    pub fn new(phase: &'static str, title: &'static str, elapsed: Duration, ops: u64) -> PhaseReport {
        PhaseReport { phase, title, elapsed, ops, fields: Vec::new(), details: Vec::new() }
    }

    /// Adds a field, printed between the elapsed time and the QPS.
    pub fn field(mut self, name: &'static str, value: impl Into<serde_json::Value>) -> PhaseReport {
        self.fields.push((name, value.into(), Placement::BeforeQps));
        self
    }

    /// Adds a field, printed after the QPS (where `tkrzw_dbm_perf` prints `mem`).
    pub fn field_after_qps(mut self, name: &'static str, value: impl Into<serde_json::Value>) -> PhaseReport {
        self.fields.push((name, value.into(), Placement::AfterQps));
        self
    }

    /// Adds a field to the JSON object only, keeping the text line as the reference's.
    pub fn json_field(mut self, name: &'static str, value: impl Into<serde_json::Value>) -> PhaseReport {
        self.fields.push((name, value.into(), Placement::JsonOnly));
        self
    }

    /// Adds a line printed under the main one (the caller indents it).
    pub fn detail(mut self, line: String) -> PhaseReport {
        self.details.push(line);
        self
    }

    /// Operations per second.
    pub fn qps(&self) -> f64 {
        // A phase of a handful of operations can finish within the clock's resolution.
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Prints the text line and the detail lines, then the JSON line if `json`
    /// (to stdout, where the text goes to stderr with `--json`: see
    /// [`crate::out`]), then a blank line.
    pub fn print(&self, json: bool) {
        say(format_args!("{}", self.text()));
        for detail in &self.details {
            say(format_args!("{detail}"));
        }
        if json {
            crate::out::json_line(format_args!("{}", self.json()));
        }
        say(format_args!(""));
    }

    /// The text line, in the reference's layout.
    fn text(&self) -> String {
        let mut line =
            if self.title.is_empty() { "Done:".to_string() } else { format!("{} done:", self.title) };
        line.push_str(&format!(" elapsed_time={:.6}", self.elapsed.as_secs_f64()));
        let push_fields = |line: &mut String, placement: Placement| {
            for (name, value, _) in self.fields.iter().filter(|(_, _, p)| *p == placement) {
                line.push_str(&format!(" {name}="));
                push_text_value(line, value);
            }
        };
        push_fields(&mut line, Placement::BeforeQps);
        line.push_str(&format!(" qps={:.0}", self.qps()));
        push_fields(&mut line, Placement::AfterQps);
        line
    }

    /// The JSON object, written by serde_json with the keys in a fixed order
    /// (the report's own, not a map's) so the line reads well to people too.
    fn json(&self) -> String {
        let head: [(&str, serde_json::Value); 3] = [
            ("phase", self.phase.into()),
            ("qps", self.qps().into()),
            ("elapsed", self.elapsed.as_secs_f64().into()),
        ];
        let fields = self.fields.iter().map(|(name, value, _)| (*name, value));
        let members: Vec<String> = head
            .iter()
            .map(|(name, value)| (*name, value))
            .chain(fields)
            .map(|(name, value)| format!("{}:{value}", serde_json::Value::from(name)))
            .collect();
        format!("{{{}}}", members.join(","))
    }
}

/// Appends a field's value as the text line shows it: a string as it is,
/// a number in its standard form. The text line is formatted with the
/// standard library's code that the run has used already, not serde_json's
/// serializer: a run without `--json` maps no page of that code, which `mem`
/// would count.
fn push_text_value(out: &mut String, value: &serde_json::Value) {
    use std::fmt::Write as _;
    let _ = match value {
        serde_json::Value::String(text) => write!(out, "{text}"),
        serde_json::Value::Bool(b) => write!(out, "{b}"),
        serde_json::Value::Null => write!(out, "null"),
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => write!(out, "{u}"),
            (None, Some(i), _) => write!(out, "{i}"),
            (None, None, Some(f)) => write!(out, "{f:?}"),
            (None, None, None) => write!(out, "{n}"),
        },
        other => write!(out, "{other}"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_parses_and_keeps_every_field() {
        let report = PhaseReport::new("write", "Writing", Duration::from_millis(500), 1000)
            .field("file_size", 4096u64)
            .json_field("file", "pos-para");
        let value: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(value["phase"], "write");
        assert_eq!(value["qps"], 2000.0);
        assert_eq!(value["elapsed"], 0.5);
        assert_eq!(value["file_size"], 4096);
        assert_eq!(value["file"], "pos-para");
        assert!(report.json().starts_with("{\"phase\":\"write\",\"qps\":"));
    }

    #[test]
    fn json_line_writes_every_scalar_as_serde_json_reads_it() {
        let odd = "quote\" backslash\\ newline\n tab\t bell\u{7} del\u{7f} é";
        let report = PhaseReport::new("get", "Getting", Duration::from_millis(1500), 3)
            .field("negative", -4096i64)
            .field("big", u64::MAX)
            .json_field("tiny", 1.5e-9)
            .json_field("whole", 2000.0)
            .json_field("missing", serde_json::Value::Null)
            .json_field("flag", true)
            .json_field("odd", odd);
        let value: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(value["negative"], -4096);
        assert_eq!(value["big"], u64::MAX);
        assert_eq!(value["tiny"], 1.5e-9);
        assert_eq!(value["whole"], 2000.0);
        assert_eq!(value["elapsed"], 1.5);
        assert_eq!(value["qps"], 2.0);
        assert!(value["missing"].is_null());
        assert_eq!(value["flag"], true);
        assert_eq!(value["odd"], odd);
        // Each member as serde_json writes it, byte for byte.
        let expected: Vec<String> = [
            ("phase", serde_json::Value::from("get")),
            ("qps", 2.0.into()),
            ("elapsed", 1.5.into()),
            ("negative", (-4096i64).into()),
            ("big", u64::MAX.into()),
            ("tiny", 1.5e-9.into()),
            ("whole", 2000.0.into()),
            ("missing", serde_json::Value::Null),
            ("flag", true.into()),
            ("odd", odd.into()),
        ]
        .iter()
        .map(|(name, value)| format!("{}:{value}", serde_json::Value::from(*name)))
        .collect();
        assert_eq!(report.json(), format!("{{{}}}", expected.join(",")));
        assert_eq!(
            report.text(),
            "Getting done: elapsed_time=1.500000 negative=-4096 big=18446744073709551615 qps=2"
        );
    }

    #[test]
    fn text_line_places_fields_around_the_qps_and_details_below() {
        let report = PhaseReport::new("set", "Setting", Duration::from_secs(2), 1000)
            .field("num_records", 600u64)
            .field_after_qps("mem", -4096i64)
            .json_field("file_size", 8192u64)
            .detail("  file_size=8192".to_string());
        assert_eq!(report.text(), "Setting done: elapsed_time=2.000000 num_records=600 qps=500 mem=-4096");
        let value: serde_json::Value = serde_json::from_str(&report.json()).unwrap();
        assert_eq!(value["num_records"], 600);
        assert_eq!(value["mem"], -4096);
        assert_eq!(value["file_size"], 8192);
        assert_eq!(report.details, ["  file_size=8192"]);
    }

    #[test]
    fn resident_memory_counts_kilobytes_as_the_reference() {
        let status = "Name:\tkura\nVmHWM:\t   9000 kB\nVmRSS:\t   8340 kB\nRssAnon:\t 7856 kB\n";
        assert_eq!(vm_rss_figure(status), Some(8_340_000));
        assert_eq!(vm_rss_figure("Name:\tkura\n"), None);
        assert_eq!(status_figure(status, "VmHWM:"), Some(9_000_000));
    }

    #[test]
    fn resident_memory_is_measured_on_linux() {
        let baseline = MemoryBaseline::now();
        if cfg!(target_os = "linux") {
            assert!(baseline.0.unwrap() > 0);
        }
        // Touching 64 MiB grows the resident set: a block that large is mapped
        // afresh, where a few megabytes could reuse memory another test of
        // this process freed and left resident.
        let block = vec![1u8; 64 << 20];
        assert!(block.iter().map(|&b| u64::from(b)).sum::<u64>() > 0);
        if cfg!(target_os = "linux") {
            assert!(baseline.grown() > 32 << 20, "grown by {}", baseline.grown());
        }
        drop(block);
    }

    #[test]
    fn a_lone_worker_runs_on_the_calling_thread() {
        let caller = thread::current().id();
        assert_eq!(run_workers(1, |_, _| Ok(thread::current().id())).unwrap(), vec![caller]);
        let ids = run_workers(2, |_, _| Ok(thread::current().id())).unwrap();
        assert!(ids.iter().all(|&id| id != caller));
        let err = run_workers(1, |_, stop| -> Result<()> {
            Err(Error::new(kuradb::ErrorKind::BrokenData, format!("failed, stop raised: {}", stop.is_set())))
        })
        .unwrap_err();
        assert_eq!(err.message(), "failed, stop raised: false");
    }

    #[test]
    fn workers_return_results_in_order_or_the_first_error() {
        let ids = run_workers(4, |id, _| Ok(id * 10)).unwrap();
        assert_eq!(ids, vec![0, 10, 20, 30]);
        let err = run_workers(3, |id, stop| {
            if id == 1 {
                return Err(Error::new(kuradb::ErrorKind::BrokenData, "worker 1 failed"));
            }
            while !stop.is_set() {
                thread::yield_now();
            }
            Ok(id)
        })
        .unwrap_err();
        assert_eq!(err.message(), "worker 1 failed");
    }
}
