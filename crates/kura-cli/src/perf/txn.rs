//! `kura perf txn`: committed batches or transactions per second, each of
//! `--keys_per_txn` random keys, at the durability `--durability` asks for,
//! from every thread at once. Batches set their keys blindly; with
//! `--update` each commit is a transaction that increments its keys (reads
//! then writes, retried on a conflict), which is what contends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use clap::builder::RangedU64ValueParser;
use clap::Args;
use kuradb::dbm::txn::CommitDurability;
use kuradb::dbm::Dbm;
use kuradb::Result;
use rand::Rng;

use super::keys::{KeyFormatter, ValuePattern};
use super::CommonArgs;
use crate::dbm_options::OpenMode;
use crate::report::{base_seed, run_workers, say, thread_rng, MemoryBaseline, PhaseReport, Progress};

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
    let db = opener.transactional(opener.open(OpenMode::Create)?)?;
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
    let num_records = db.count()?;
    let mem = memory.grown();
    let file_size = db.file_size()?;
    let ops = common.iter * common.threads as u64;
    PhaseReport::new("txn", "", elapsed, ops)
        .field("num_records", num_records)
        .field_after_qps("mem", mem)
        .field_after_qps(
            "keys_per_sec",
            (ops as f64 * args.keys_per_txn as f64 / elapsed.as_secs_f64()) as u64,
        )
        .field_after_qps("conflicts", conflicts.load(Ordering::Relaxed))
        .json_field("file_size", file_size)
        .json_field("iterations", common.iter)
        .json_field("threads", common.threads)
        .json_field("value_size", common.size)
        .json_field("keys_per_txn", args.keys_per_txn)
        .json_field("durability", args.durability.name())
        .json_field("update", args.update)
        .json_field("dbm", opener.name())
        .print(common.json);
    let db: Box<dyn Dbm> = Box::new(db);
    opener.close(db, OpenMode::Create)
}
