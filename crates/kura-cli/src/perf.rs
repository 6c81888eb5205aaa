//! `kura perf`: the databases' benchmark and consistency checker, with the flags
//! and output of the reference tool `tkrzw_dbm_perf`.
//!
//! Every workload is written against the [`kuradb::dbm::Dbm`] trait; the database
//! comes from [`crate::dbm_options`], so a new database joins every workload by
//! joining the opener.

mod expectations;
mod index;
mod keys;
mod latency;
mod mixed;
mod model;
mod parallel;
mod phase;
mod sequence;
mod tally;
mod txn;
mod wicked;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Subcommand};
use kuradb::{Error, ErrorKind, Result};

use crate::dbm_options::DbmOptions;

/// Arguments of `kura perf`.
#[derive(Args, Debug)]
pub struct PerfArgs {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Subcommand, Debug)]
enum Workload {
    /// Sets, gets, iterates over and removes records, one phase after another.
    Sequence(sequence::SequenceArgs),
    /// Mixes sets, gets, removes and compare-exchanges from every thread at once.
    Parallel(parallel::ParallelArgs),
    /// Mixes every database operation, iterators, rebuilds and clears, and with
    /// --validate checks the database against a model.
    Wicked(wicked::WickedArgs),
    /// Random gets while other threads scan the whole database, with the gets'
    /// cache hit rates with and without the scan.
    Mixed(mixed::MixedArgs),
    /// Adds, checks and removes pairs of a secondary index (file, mem or a
    /// typed one), as `tkrzw_dbm_perf index` does.
    Index(index::IndexArgs),
    /// Commits batches (or, with --update, transactions) of random keys from
    /// every thread at once, at the durability asked for.
    Txn(txn::TxnArgs),
}

/// Runs `kura perf`.
pub fn run(args: &PerfArgs) -> Result<()> {
    let json = match &args.workload {
        Workload::Sequence(args) => args.common.json,
        Workload::Parallel(args) => args.common.json,
        Workload::Wicked(args) => args.common.json,
        Workload::Mixed(args) => args.common.json,
        Workload::Index(args) => args.json,
        Workload::Txn(args) => args.common.json,
    };
    if json {
        crate::out::keep_stdout_for_json();
    }
    match &args.workload {
        Workload::Sequence(args) => sequence::run(args),
        Workload::Parallel(args) => parallel::run(args),
        Workload::Wicked(args) => wicked::run(args),
        Workload::Mixed(args) => mixed::run(args),
        Workload::Index(args) => index::run(args),
        Workload::Txn(args) => txn::run(args),
    }
}

/// The flags every workload takes.
#[derive(Args, Debug)]
struct CommonArgs {
    /// The number of operations of each thread.
    #[arg(long = "iter", value_name = "NUM", default_value_t = 10000,
          value_parser = RangedU64ValueParser::<u64>::new().range(1..))]
    iter: u64,

    /// The size of each value in bytes.
    #[arg(long = "size", value_name = "NUM", default_value_t = 8,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1 << 30))]
    size: usize,

    /// The number of threads.
    #[arg(long = "threads", value_name = "NUM", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=65536))]
    threads: usize,

    /// The random seed, or negative for a seed from the operating system.
    #[arg(long = "random_seed", value_name = "NUM", default_value_t = 0, allow_negative_numbers = true)]
    random_seed: i64,

    /// Also prints every figure the database reports about itself after each phase.
    #[arg(long = "verbose")]
    verbose: bool,

    /// Prints each phase's result as one JSON object a line on stdout, and
    /// the reference's text and the progress dots on stderr.
    #[arg(long = "json")]
    json: bool,

    #[command(flatten)]
    dbm: DbmOptions,
}

impl CommonArgs {
    /// The number of distinct keys of the workload, `--iter` times `--threads`,
    /// checked so that every key number fits in a `u64`.
    fn records(&self) -> Result<u64> {
        self.iter.checked_mul(self.threads as u64).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("--iter {} × --threads {} is beyond any key count", self.iter, self.threads),
            )
        })
    }
}
