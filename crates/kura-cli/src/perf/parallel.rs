//! `kura perf parallel`: every thread mixes sets, gets, removes and
//! compare-exchanges at once, as the reference does: a fifth of the operations
//! are compare-exchanges, a fifth of the rest removes, and the others half sets,
//! half gets. With `--rebuild` one thread at a time rebuilds the database when it
//! says it should be.
//!
//! With `--validate`, after the run every record is checked: its key must be one
//! the workload uses and its value one some thread could have written there
//! (which one won a race only the timing says, so no exact model is kept here;
//! `wicked --validate` keeps one).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Args;
use kuradb::dbm::{Access, Action, Dbm};
use kuradb::Result;
use rand::Rng;

use super::keys::{parse_key, KeyFormatter, ValuePattern};
use super::phase::{validating, Bench, Phase};
use super::CommonArgs;
use crate::dbm_options::OpenMode;
use crate::report::{thread_rng, Progress, Stop};

/// Arguments of `kura perf parallel`.
#[derive(Args, Debug)]
pub struct ParallelArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,

    /// Uses random keys rather than sequential ones.
    #[arg(long = "random_key")]
    random_key: bool,

    /// Uses values of random length, up to --size, rather than fixed ones.
    #[arg(long = "random_value")]
    random_value: bool,

    /// The number of distinct keys: keys are taken modulo it (0: no limit).
    #[arg(long = "keys", value_name = "NUM", default_value_t = 0)]
    keys: u64,

    /// Rebuilds the database whenever it says it should be (checked by one thread
    /// at a time, every hundred operations).
    #[arg(long = "rebuild")]
    rebuild: bool,

    /// Seconds to sleep after each operation.
    #[arg(long = "sleep", value_name = "NUM", default_value_t = 0.0, allow_negative_numbers = true,
          value_parser = parse_seconds)]
    sleep: f64,

    /// Checks after the run that every record is one the workload could have written.
    #[arg(long = "validate")]
    validate: bool,
}

/// A non-negative, finite number of seconds.
fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(seconds),
        _ => Err(format!("{text:?} is not a non-negative number of seconds")),
    }
}

/// How often the rebuilding thread asks whether a rebuild is due.
const REBUILD_CHECK_EVERY: u64 = 100;

/// Runs `kura perf parallel`.
pub fn run(args: &ParallelArgs) -> Result<()> {
    let common = &args.common;
    let bench = Bench::new(common)?;
    let records = common.records()?;
    let key_range = if args.keys > 0 { args.keys.min(records) } else { records };
    let pattern = ValuePattern::new(common.size);
    // The thread whose turn it is to check for a rebuild; the turn passes on after each rebuild.
    let rebuilder = AtomicUsize::new(0);
    let phase = Phase { name: "parallel", title: "", mode: OpenMode::Create };
    bench.run_phase(
        phase,
        |db, id, stop| mix(db, &bench, args, &pattern, &rebuilder, id, stop),
        |db, _| {
            if args.validate {
                validating(|| validate(db, &bench, &pattern, key_range))?;
            }
            Ok(())
        },
    )
}

/// The operations of thread `id`.
fn mix(
    db: &dyn Dbm,
    bench: &Bench,
    args: &ParallelArgs,
    pattern: &ValuePattern,
    rebuilder: &AtomicUsize,
    id: usize,
    stop: &Stop,
) -> Result<()> {
    let common = &args.common;
    let (iter, threads, size) = (common.iter, common.threads, common.size);
    let records = iter * threads as u64;
    let mut rng = thread_rng(bench.seed, id);
    let mut formatter = KeyFormatter::default();
    let mut progress = Progress::new(iter, id == 0);
    let sleep = Duration::from_secs_f64(args.sleep);
    for i in 0..iter {
        if stop.is_set() {
            return Ok(());
        }
        let mut number =
            if args.random_key { rng.gen_range(0..records) } else { i * threads as u64 + id as u64 };
        if args.keys > 0 {
            number %= args.keys;
        }
        let len = if args.random_value { rng.gen_range(0..=size) } else { size };
        let key = formatter.format(number);
        let value = pattern.value(number, len);
        if args.rebuild && i % REBUILD_CHECK_EVERY == 0 && rebuilder.load(Ordering::Relaxed) == id {
            if db.should_be_rebuilt()? {
                db.rebuild()?;
            }
            rebuilder.store((id + 1) % threads, Ordering::Relaxed);
        }
        if rng.gen_ratio(1, 5) {
            // The reference's expected and desired values: empty, some value, or absent.
            let expected = [Some(&b""[..]), Some(value), None][rng.gen_range(0..3)];
            let desired = [Some(&b""[..]), Some(value), None][rng.gen_range(0..3)];
            db.compare_exchange(key, expected, desired)?;
        } else if rng.gen_ratio(1, 5) {
            db.remove(key)?;
        } else if rng.gen_bool(0.5) {
            db.set(key, value)?;
        } else {
            // Processing in place rather than `get` spares a copy of the value.
            db.process(key, Access::ReadOnly, &mut |_| Action::Keep)?;
        }
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
        progress.tick(i + 1);
    }
    progress.finish();
    Ok(())
}

/// Checks that every record is a key below `key_range` holding an empty value or
/// one of its values, that a walk meets as many records as the count says, and
/// that the database calls itself healthy.
fn validate(db: &dyn Dbm, bench: &Bench, pattern: &ValuePattern, key_range: u64) -> Result<()> {
    let mut visited = 0u64;
    let mut stray: Option<(Vec<u8>, usize)> = None;
    db.process_each(Access::ReadOnly, &mut |key, value| {
        visited += 1;
        let fits = parse_key(key).is_some_and(|n| n < key_range && pattern.holds(n, value));
        if !fits && stray.is_none() {
            stray = Some((key.to_vec(), value.len()));
        }
        Action::Keep
    })?;
    if let Some((key, len)) = stray {
        return Err(bench.broken(format!(
            "record {} holds a value of {len} bytes that no thread wrote there",
            key.escape_ascii()
        )));
    }
    let count = db.count()?;
    if count != visited {
        return Err(bench.broken(format!("the database counts {count} records, but a walk met {visited}")));
    }
    if !db.is_healthy() {
        return Err(bench.broken("the database says it is not healthy".to_string()));
    }
    Ok(())
}
