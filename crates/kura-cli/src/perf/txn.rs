//! `kura perf txn`: committed batches or transactions per second, each of
//! `--keys_per_txn` random keys, at the durability `--durability` asks for,
//! from every thread at once. Batches set their keys blindly; with
//! `--update` each commit is a transaction that increments its keys (reads
//! then writes, retried on a conflict), which is what contends.
//!
//! `--prefill` sets every key of the range before the timed run, so commits
//! overwrite; `--snapshot` holds a snapshot taken before the run open until
//! its end and reports the old values the database kept for it
//! (`version_bytes`) beside what it needs at least: one old value of each
//! key changed since (`snapshot_needs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use clap::builder::RangedU64ValueParser;
use clap::Args;
use kuradb::dbm::txn::{CommitDurability, TransactionalDbm};
use kuradb::dbm::Dbm;
use kuradb::{Error, ErrorKind, Result};
use rand::Rng;

use super::keys::{KeyFormatter, ValuePattern};
use super::CommonArgs;
use crate::dbm_options::OpenMode;
use crate::report::{
    base_seed, peak_resident_bytes, run_workers, say, thread_rng, MemoryBaseline, PhaseReport, Progress,
};

/// Arguments of `kura perf txn`.
#[derive(Args, Debug)]
pub struct TxnArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,

    /// The number of keys each commit writes.
    #[arg(long = "keys_per_txn", value_name = "NUM", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    keys_per_txn: usize,

    /// How durable each commit is: none, os or sync.
    #[arg(long = "durability", value_name = "LEVEL", default_value = "os",
          value_parser = |s: &str| s.parse::<CommitDurability>().map_err(|e| e.to_string()))]
    durability: CommitDurability,

    /// Commits transactions that increment their keys instead of blind batches.
    #[arg(long = "update")]
    update: bool,

    /// The number of distinct keys (0: --iter times --threads times --keys_per_txn).
    #[arg(long = "keys", value_name = "NUM", default_value_t = 0)]
    keys: u64,

    /// Sets every key of the range before the timed run, so that its
    /// commits overwrite records.
    #[arg(long = "prefill")]
    prefill: bool,

    /// Holds a snapshot taken before the run open until its end and
    /// reports the memory kept for it.
    #[arg(long = "snapshot")]
    snapshot: bool,

    /// Bytes of old values kept for open views before the oldest expires
    /// (0: the library's default).
    #[arg(long = "max_version_bytes", value_name = "NUM", default_value_t = 0)]
    max_version_bytes: usize,
}

/// The widest key range `--snapshot` tracks: one bit a key.
const MAX_TRACKED_KEYS: u64 = 1 << 30;

/// Which keys the run changed, one bit each, and what a snapshot taken
/// before it needs to keep of them: each key changed since, and its value
/// from before.
struct ChangedKeys {
    bits: Vec<AtomicU64>,
    needed_bytes: AtomicUsize,
    count: AtomicU64,
    /// The length of the value every key held when the snapshot was taken
    /// (`None`: the keys were absent).
    old_value_len: Option<usize>,
}

impl ChangedKeys {
    fn new(key_range: u64, old_value_len: Option<usize>) -> Result<ChangedKeys> {
        if key_range > MAX_TRACKED_KEYS {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("--snapshot tracks at most {MAX_TRACKED_KEYS} keys; the run draws from {key_range}"),
            ));
        }
        let words = key_range.div_ceil(64) as usize;
        Ok(ChangedKeys {
            bits: (0..words).map(|_| AtomicU64::new(0)).collect(),
            needed_bytes: AtomicUsize::new(0),
            count: AtomicU64::new(0),
            old_value_len,
        })
    }

    /// Notes that key `n`, formatted as `key`, was changed.
    fn mark(&self, n: u64, key: &[u8]) {
        let bit = 1u64 << (n % 64);
        if self.bits[(n / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            self.count.fetch_add(1, Ordering::Relaxed);
            self.needed_bytes.fetch_add(key.len() + self.old_value_len.unwrap_or(0), Ordering::Relaxed);
        }
    }
}

/// How many times `--update` runs a transaction again after a conflict.
const RETRIES: u32 = 1000;

/// Runs `kura perf txn`.
pub fn run(args: &TxnArgs) -> Result<()> {
    let common = &args.common;
    let opener = common.dbm.opener()?;
    let records = common.records()?;
    let key_range = match args.keys {
        0 => records.saturating_mul(args.keys_per_txn as u64).max(1),
        n => n,
    };
    let seed = base_seed(common.random_seed);
    let pattern = ValuePattern::new(common.size);
    let memory = MemoryBaseline::now();
    let mut options = opener.transaction_options();
    if args.max_version_bytes > 0 {
        options.max_version_bytes = args.max_version_bytes;
    }
    let db = TransactionalDbm::open(opener.open(OpenMode::Create)?, options)?;
    let prefill_len = if args.prefill { Some(prefill(&db, args, key_range, &pattern)?) } else { None };
    say(format_args!(
        "Doing: impl={} num_iterations={} value_size={} num_threads={} keys_per_txn={} durability={}{}",
        opener.name(),
        common.iter,
        common.size,
        common.threads,
        args.keys_per_txn,
        args.durability,
        if args.update { " update" } else { "" }
    ));
    let changed = match args.snapshot {
        true => Some(ChangedKeys::new(key_range, prefill_len)?),
        false => None,
    };
    let first_key = KeyFormatter::default().format(0).to_vec();
    let first_before = db.get(&first_key)?;
    let snapshot = if args.snapshot { Some(db.snapshot()?) } else { None };
    let conflicts = AtomicU64::new(0);
    let start = Instant::now();
    run_workers(common.threads, |id, stop| {
        let mut rng = thread_rng(seed, id);
        let mut formatter = KeyFormatter::default();
        let mut progress = Progress::new(common.iter, id == 0);
        let mut numbers = Vec::with_capacity(args.keys_per_txn);
        for i in 0..common.iter {
            if stop.is_set() {
                break;
            }
            numbers.clear();
            numbers.extend((0..args.keys_per_txn).map(|_| rng.gen_range(0..key_range)));
            if let Some(changed) = &changed {
                for &n in &numbers {
                    changed.mark(n, formatter.format(n));
                }
            }
            if args.update {
                let mut attempts = 0u64;
                db.run(args.durability, RETRIES, |tx| {
                    attempts += 1;
                    for &n in &numbers {
                        tx.increment(formatter.format(n), 1, 0)?;
                    }
                    Ok(())
                })?;
                conflicts.fetch_add(attempts - 1, Ordering::Relaxed);
            } else {
                let mut batch = db.batch(args.durability);
                for &n in &numbers {
                    batch.set(formatter.format(n), pattern.value(n, common.size));
                }
                batch.commit()?;
            }
            progress.tick(i + 1);
        }
        progress.finish();
        Ok(())
    })?;
    let elapsed = start.elapsed();
    let version_bytes = db.version_bytes();
    let mem = memory.grown();
    let peak_mem = peak_resident_bytes().unwrap_or(0);
    let snapshot_held = match &snapshot {
        Some(view) => Some(snapshot_still_holds(view, &first_key, &first_before)?),
        None => None,
    };
    drop(snapshot);
    let num_records = db.count()?;
    let file_size = db.file_size()?;
    let ops = common.iter * common.threads as u64;
    let mut report = PhaseReport::new("txn", "", elapsed, ops)
        .field("num_records", num_records)
        .field_after_qps("mem", mem)
        .field_after_qps(
            "keys_per_sec",
            (ops as f64 * args.keys_per_txn as f64 / elapsed.as_secs_f64()) as u64,
        )
        .field_after_qps("conflicts", conflicts.load(Ordering::Relaxed))
        .field_after_qps("peak_mem", peak_mem)
        .field_after_qps("version_bytes", version_bytes);
    if let (Some(changed), Some(held)) = (&changed, snapshot_held) {
        report = report
            .field_after_qps("snapshot_keys", changed.count.load(Ordering::Relaxed))
            .field_after_qps("snapshot_needs", changed.needed_bytes.load(Ordering::Relaxed) as u64)
            .field_after_qps("snapshot_held", held);
    }
    report
        .json_field("file_size", file_size)
        .json_field("iterations", common.iter)
        .json_field("threads", common.threads)
        .json_field("value_size", common.size)
        .json_field("keys_per_txn", args.keys_per_txn)
        .json_field("durability", args.durability.name())
        .json_field("update", args.update)
        .json_field("prefill", args.prefill)
        .json_field("snapshot", args.snapshot)
        .json_field("dbm", opener.name())
        .print(common.json);
    let db: Box<dyn Dbm> = Box::new(db);
    opener.close(db, OpenMode::Create)
}

/// Sets every key of `0..key_range` (untimed) and returns the length of the
/// value each then holds: the pattern's value of `--size` bytes, or for
/// `--update` runs the counter an increment makes.
fn prefill(
    db: &TransactionalDbm<Box<dyn Dbm>>,
    args: &TxnArgs,
    key_range: u64,
    pattern: &ValuePattern,
) -> Result<usize> {
    let mut formatter = KeyFormatter::default();
    let mut len = 0;
    for n in 0..key_range {
        let key = formatter.format(n);
        if args.update {
            db.increment(key, 0, 0)?;
            len = db.get(key)?.map_or(0, |v| v.len());
        } else {
            db.set(key, pattern.value(n, args.common.size))?;
            len = args.common.size;
        }
    }
    Ok(len)
}

/// Whether the snapshot still shows key 0 as it was before the run
/// (`before`), rather than having been expired by the memory cap.
fn snapshot_still_holds(
    view: &kuradb::dbm::txn::Snapshot<'_, Box<dyn Dbm>>,
    key: &[u8],
    before: &Option<Vec<u8>>,
) -> Result<bool> {
    match view.get(key) {
        Ok(found) if found == *before => Ok(true),
        Ok(found) => Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "the snapshot shows {found:?} for key {key:?}, not its value from before the run {before:?}"
            ),
        )),
        Err(e) if e.kind() == ErrorKind::Conflict => Ok(false),
        Err(e) => Err(e),
    }
}
