//! One phase of a database workload, as the reference runs it: open the
//! database, run every thread, synchronize, report, close. The phase's time runs
//! from the first operation through the synchronization; opening, closing and
//! validation are outside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kuradb::dbm::{Dbm, Durability};
use kuradb::{Error, ErrorKind, Result};

use super::latency::TimingSink;
use super::CommonArgs;
use crate::dbm_options::{DbmOpener, OpenMode};
use crate::report::{base_seed, run_workers, say, MemoryBaseline, PhaseReport, Stop};

/// What every phase of one run shares.
pub struct Bench<'a> {
    /// The flags of the run.
    pub args: &'a CommonArgs,
    /// Opens the database for each phase.
    pub opener: DbmOpener,
    /// The seed every thread's generators derive from, fixed for the whole run.
    pub seed: u64,
    /// Resident memory before the first phase.
    memory: MemoryBaseline,
    /// The operations the last phase made, where a workload counts them
    /// itself (one that runs for a time); 0 for `--iter` on each thread.
    counted_ops: AtomicU64,
    /// The timing of each operation of the running phase, where the workload
    /// times them (`sequence --report_every`).
    timing: TimingSink,
}

/// The names and the open mode of a phase.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    /// The JSON name (`set`).
    pub name: &'static str,
    /// The text title (`Setting`; empty for the lone phase of parallel and wicked,
    /// whose header says `Doing` and whose result line says `Done:`).
    pub title: &'static str,
    /// How the database is opened.
    pub mode: OpenMode,
}

impl<'a> Bench<'a> {
    /// Checks the flags and fixes the seed.
    pub fn new(args: &'a CommonArgs) -> Result<Bench<'a>> {
        let opener = args.dbm.opener()?;
        args.records()?;
        Ok(Bench {
            args,
            opener,
            seed: base_seed(args.random_seed),
            memory: MemoryBaseline::now(),
            counted_ops: AtomicU64::new(0),
            timing: TimingSink::default(),
        })
    }

    /// Takes the memory baseline again, after the workload's own set-up (such as a
    /// validation model) so that `mem` counts the database's growth.
    pub fn reset_memory(&mut self) {
        self.memory = MemoryBaseline::now();
    }

    /// The number of operations of a phase: `--iter` on each thread, unless
    /// the workload counted them ([`Bench::count_ops`]).
    pub fn ops(&self) -> u64 {
        match self.counted_ops.load(Ordering::Relaxed) {
            0 => self.args.iter * self.args.threads as u64,
            counted => counted,
        }
    }

    /// Reports `ops` as the phase's operations: for a workload that runs for a
    /// time rather than a number of operations. Called from a phase's `check`.
    pub fn count_ops(&self, ops: u64) {
        self.counted_ops.store(ops, Ordering::Relaxed);
    }

    /// Where the threads of a workload that times its operations leave their
    /// timings, for the phase's report.
    pub fn timing(&self) -> &TimingSink {
        &self.timing
    }

    /// Adds the run's seed to a consistency error, so the run can be replayed.
    pub fn broken(&self, message: String) -> Error {
        Error::new(ErrorKind::BrokenData, format!("{message} (random seed {})", self.seed))
    }

    /// Runs one phase: opens the database, runs `work(db, thread_id, stop)` on
    /// every thread, synchronizes (writing phases), then hands the threads'
    /// results to `check` (outside the phase's time) before the report is
    /// printed, and closes the database whatever happened. Answers what `check`
    /// answers.
    pub fn run_phase<R, T, W, C>(&self, phase: Phase, work: W, check: C) -> Result<T>
    where
        R: Send,
        W: Fn(&dyn Dbm, usize, &Stop) -> Result<R> + Sync,
        C: FnOnce(&dyn Dbm, Vec<R>) -> Result<T>,
    {
        let db = self.opener.open(phase.mode)?;
        let outcome = self.measure(&*db, phase, work, check);
        // Close even after a failure, so the file is left closed; the first error wins.
        let closed = self.opener.close(db, phase.mode);
        let value = outcome?;
        closed?;
        Ok(value)
    }

    fn measure<R, T, W, C>(&self, db: &dyn Dbm, phase: Phase, work: W, check: C) -> Result<T>
    where
        R: Send,
        W: Fn(&dyn Dbm, usize, &Stop) -> Result<R> + Sync,
        C: FnOnce(&dyn Dbm, Vec<R>) -> Result<T>,
    {
        let args = self.args;
        say(format_args!(
            "{}: impl={} num_iterations={} value_size={} num_threads={}",
            if phase.title.is_empty() { "Doing" } else { phase.title },
            self.opener.name(),
            args.iter,
            args.size,
            args.threads
        ));
        // A phase that failed before its report leaves nothing for the next.
        self.timing.take();
        let start = Instant::now();
        let results = run_workers(args.threads, |id, stop| work(db, id, stop))?;
        if phase.mode != OpenMode::Read {
            // Soft: what the process buffers reaches the OS, as the reference's phases end.
            let sync_start = Instant::now();
            db.synchronize(Durability::Soft)?;
            say(format_args!("Synchronizing: ... done (elapsed={:.6})", sync_start.elapsed().as_secs_f64()));
        }
        let elapsed = start.elapsed();
        let num_records = db.count()?;
        let mem = self.memory.grown();
        let file_size = db.file_size()?;
        let value = check(db, results)?;
        self.report(db, phase, elapsed, num_records, mem, file_size)?.print(args.json);
        Ok(value)
    }

    fn report(
        &self,
        db: &dyn Dbm,
        phase: Phase,
        elapsed: Duration,
        num_records: u64,
        mem: i64,
        file_size: u64,
    ) -> Result<PhaseReport> {
        let args = self.args;
        let mut report = PhaseReport::new(phase.name, phase.title, elapsed, self.ops())
            .field("num_records", num_records)
            .field_after_qps("mem", mem)
            .json_field("file_size", file_size)
            .json_field("iterations", args.iter)
            .json_field("threads", args.threads)
            .json_field("value_size", args.size)
            .json_field("dbm", self.opener.name())
            .json_field("file", args.dbm.file.file.name());
        let figures = db.inspect()?;
        for line in detail_lines(&figures, num_records, file_size, args.verbose) {
            report = report.detail(line);
        }
        if let Some(timing) = self.timing.take() {
            let intervals: Vec<serde_json::Value> = timing.intervals.iter().map(|i| i.json()).collect();
            report = report
                .detail(timing.text())
                .json_field("max_latency", timing.worst)
                .json_field("max_latency_thread", timing.worst_thread)
                .json_field("max_latency_op", timing.worst_op)
                .json_field("ops_over_1ms", timing.slow[0])
                .json_field("ops_over_10ms", timing.slow[1])
                .json_field("intervals", intervals);
        }
        Ok(report)
    }
}

/// The lines the reference prints under a phase's result: the file's size and how
/// much of it is data, the buckets and their load; with `--verbose`, every figure.
fn detail_lines(
    figures: &[(String, String)],
    num_records: u64,
    file_size: u64,
    verbose: bool,
) -> Vec<String> {
    let figure = |name: &str| -> Option<u64> {
        figures.iter().find(|(key, _)| key == name).and_then(|(_, value)| value.parse().ok())
    };
    let mut lines = Vec::new();
    let mut line = format!("  file_size={file_size}");
    if let Some(data) = figure("eff_data_size") {
        let efficiency = if file_size > 0 { data as f64 * 100.0 / file_size as f64 } else { 0.0 };
        line.push_str(&format!(" eff_data_size={data} efficiency={efficiency:.2}%"));
    }
    lines.push(line);
    if let Some(buckets) = figure("num_buckets").filter(|&b| b > 0) {
        let load = num_records as f64 / buckets as f64;
        lines.push(format!("  num_buckets={buckets} load_factor={load:.2}"));
    }
    if verbose {
        lines.extend(figures.iter().map(|(name, value)| format!("  {name}={value}")));
    }
    lines
}

/// Prints `Validating records: ... done (elapsed=…)` around `validate`, as the
/// reference marks its validation.
pub fn validating<T>(validate: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let value = validate()?;
    say(format_args!("Validating records: ... done (elapsed={:.6})", start.elapsed().as_secs_f64()));
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_follow_the_reference() {
        let figures = vec![
            ("num_buckets".to_string(), "1000".to_string()),
            ("eff_data_size".to_string(), "250".to_string()),
        ];
        assert_eq!(
            detail_lines(&figures, 500, 1000, false),
            ["  file_size=1000 eff_data_size=250 efficiency=25.00%", "  num_buckets=1000 load_factor=0.50"]
        );
        assert_eq!(detail_lines(&[], 5, 10, false), ["  file_size=10"]);
        assert_eq!(detail_lines(&figures, 5, 10, true).len(), 4);
    }
}
