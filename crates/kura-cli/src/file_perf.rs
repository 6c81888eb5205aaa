//! `kura file-perf`: the file layer's benchmark and consistency checker, with the
//! flags and output of the reference tool `tkrzw_file_perf`.

mod record;
mod sequence;
mod wicked;

use std::path::PathBuf;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Subcommand};
use kuradb::file::File;
use kuradb::{Error, ErrorKind, Result};

use crate::file_options::FileOptions;

/// Arguments of `kura file-perf`.
#[derive(Args, Debug)]
pub struct FilePerfArgs {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Subcommand, Debug)]
enum Workload {
    /// Writes then reads fixed-size records, in sequence or at random, verifying every record read.
    Sequence(sequence::SequenceArgs),
    /// Mixes writes, reads, appends, expansions and synchronizations on every thread and
    /// checks the file against a model of what each thread wrote.
    Wicked(wicked::WickedArgs),
}

/// Runs `kura file-perf`.
pub fn run(args: &FilePerfArgs) -> Result<()> {
    let json = match &args.workload {
        Workload::Sequence(args) => args.common.json,
        Workload::Wicked(args) => args.common.json,
    };
    if json {
        crate::out::keep_stdout_for_json();
    }
    match &args.workload {
        Workload::Sequence(args) => sequence::run(args),
        Workload::Wicked(args) => wicked::run(args),
    }
}

/// The flags every workload takes.
#[derive(Args, Debug)]
struct CommonArgs {
    /// The number of operations of each thread.
    #[arg(long = "iter", value_name = "NUM", default_value_t = 10000,
          value_parser = RangedU64ValueParser::<u64>::new().range(1..))]
    iter: u64,

    /// The size of each record in bytes.
    #[arg(long = "size", value_name = "NUM", default_value_t = 100,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    size: usize,

    /// The number of threads.
    #[arg(long = "threads", value_name = "NUM", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=65536))]
    threads: usize,

    /// The random seed, or negative for a seed from the operating system.
    #[arg(long = "random_seed", value_name = "NUM", default_value_t = 0, allow_negative_numbers = true)]
    random_seed: i64,

    /// Prints each phase's result as one JSON object a line on stdout, and
    /// the reference's text on stderr.
    #[arg(long = "json")]
    json: bool,

    #[command(flatten)]
    file: FileOptions,

    /// The path of the file to test (it is emptied first, except with --read_only).
    path: PathBuf,
}

impl CommonArgs {
    /// The seed from which each thread's generator is derived. A seed from the OS is
    /// drawn once, so the read phase replays the offsets the write phase used.
    fn base_seed(&self) -> u64 {
        crate::report::base_seed(self.random_seed)
    }

    /// The number of records: `--iter` times `--threads`, checked so that every
    /// offset of the workload, up to one record past the last, fits in a `u64`.
    fn records(&self) -> Result<u64> {
        (self.iter)
            .checked_mul(self.threads as u64)
            .filter(|records| records.checked_add(1).and_then(|r| r.checked_mul(self.size as u64)).is_some())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "--iter {} × --threads {} × --size {} is beyond any file's size",
                        self.iter, self.threads, self.size
                    ),
                )
            })
    }

    /// The header line of a phase, like the reference's (without its typo
    /// `num_iteratins`: nothing parses these lines but people).
    fn header(&self, title: &str) -> String {
        format!(
            "{title}: path={} num_iterations={} record_size={} num_threads={}",
            self.path.display(),
            self.iter,
            self.size,
            self.threads
        )
    }
}

/// Appends zero bytes up to a multiple of the file's block size; returns how many.
///
/// The file layer carries the padding wish but never invents bytes: the
/// layout belongs to whoever writes the data, here the benchmark. Its records never
/// reach into the padding, so the zeros are never mistaken for a record.
fn pad_to_block(file: &dyn File) -> Result<u64> {
    let block = file.block_size();
    let rest = file.size() % block;
    if rest == 0 {
        return Ok(0);
    }
    let padding = block - rest;
    file.append(&vec![0u8; padding as usize])?;
    Ok(padding)
}

/// The error for bytes that differ from what the workload wrote there: names the
/// record, its offset and the file, then any `detail`.
fn mismatch(what: impl std::fmt::Display, offset: u64, path: &std::path::Path, detail: &str) -> Error {
    Error::new(
        ErrorKind::BrokenData,
        format!("{what} at offset {offset} of {} holds unexpected bytes{detail}", path.display()),
    )
}
