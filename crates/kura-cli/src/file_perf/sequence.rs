//! `kura file-perf sequence`: a write phase, then a read phase that checks every
//! record it reads. Each of the threads does `--iter` operations of `--size` bytes.
//!
//! Offsets follow the reference: record `i * threads + id` for operation `i` of
//! thread `id` (the threads interleave over one sequential sweep); with `--random`,
//! a uniformly random record from each thread's generator, which the read phase
//! replays; with `--append`, wherever [`File::append`] puts it, read back in order.

use std::time::Instant;

use clap::Args;
use kuradb::dbm::Durability;
use kuradb::file::{File, FileSpec, OpenOptions, ReadRequest};
use kuradb::{Error, ErrorKind, Result};
use rand::rngs::SmallRng;
use rand::Rng;

use super::{mismatch, pad_to_block, record, CommonArgs};
use crate::report::{run_workers, say, thread_rng, PhaseReport, Progress, Stop};

/// Arguments of `kura file-perf sequence`.
#[derive(Args, Debug)]
pub struct SequenceArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,

    /// Uses random offsets rather than pre-defined ones.
    #[arg(long = "random")]
    random: bool,

    /// Writes by appending rather than at pre-defined offsets (over --random).
    #[arg(long = "append")]
    append: bool,

    /// Does only the write phase.
    #[arg(long = "write_only", conflicts_with = "read_only")]
    write_only: bool,

    /// Does only the read phase, on a file an earlier run wrote with the same flags.
    #[arg(long = "read_only")]
    read_only: bool,

    /// Reads this many records per call in the read phase, with `File::read_many`
    /// (1: one `File::read` per record).
    #[arg(long = "batch", value_name = "NUM", default_value_t = 1,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
    batch: usize,
}

/// How the workload picks the records it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Sequential,
    Random,
    Append,
}

/// Everything a worker needs, fixed before the threads start.
struct Plan<'a> {
    args: &'a CommonArgs,
    spec: FileSpec,
    order: Order,
    /// The record size, as an offset.
    size: u64,
    records: u64,
    seed: u64,
    /// Records per read call.
    batch: usize,
}

/// Runs `kura file-perf sequence`.
pub fn run(args: &SequenceArgs) -> Result<()> {
    let common = &args.common;
    let spec = common.file.spec()?;
    let order = match (args.append, args.random) {
        (true, _) => Order::Append,
        (false, true) => Order::Random,
        (false, false) => Order::Sequential,
    };
    let plan = Plan {
        args: common,
        order,
        size: common.size as u64,
        records: common.records()?,
        seed: common.base_seed(),
        batch: args.batch,
        spec,
    };
    if !args.read_only {
        write_phase(&plan)?;
    }
    if !args.write_only {
        read_phase(&plan)?;
    }
    Ok(())
}

impl Plan<'_> {
    /// The offsets of thread `id`: the same in both phases, except that appended
    /// records are read back in sequence.
    fn picker(&self, id: usize) -> Picker {
        Picker {
            rng: (self.order == Order::Random).then(|| thread_rng(self.seed, id)),
            id: id as u64,
            threads: self.args.threads as u64,
            records: self.records,
        }
    }

    fn report(&self, phase: &'static str, title: &'static str, start: Instant, size: u64) -> PhaseReport {
        let ops = self.args.iter * self.args.threads as u64;
        PhaseReport::new(phase, title, start.elapsed(), ops)
            .field("file_size", size)
            .json_field("iterations", self.args.iter)
            .json_field("threads", self.args.threads)
            .json_field("record_size", self.args.size)
            .json_field("file", self.spec.kind.name())
            .json_field("batch", self.batch)
    }
}

/// Chooses the record of each operation of one thread.
struct Picker {
    rng: Option<SmallRng>,
    id: u64,
    threads: u64,
    records: u64,
}

impl Picker {
    #[inline]
    fn next(&mut self, i: u64) -> u64 {
        match &mut self.rng {
            Some(rng) => rng.gen_range(0..self.records),
            None => i * self.threads + self.id,
        }
    }
}

fn write_phase(plan: &Plan) -> Result<()> {
    let args = plan.args;
    let mut file = plan.spec.open(&args.path, &OpenOptions::writer().truncating())?;
    say(format_args!("{}", args.header("Writing")));
    let start = Instant::now();
    run_workers(args.threads, |id, stop| write_records(&*file, plan, id, stop))?;
    if plan.spec.padding {
        pad_to_block(&*file)?;
    }
    // A soft sync ends the phase so buffered writes (page cache, head buffer) are
    // counted in it rather than hidden in the close.
    file.synchronize(Durability::Soft)?;
    let report = plan.report("write", "Writing", start, file.size());
    file.close()?;
    report.print(args.json);
    Ok(())
}

fn write_records(file: &dyn File, plan: &Plan, id: usize, stop: &Stop) -> Result<()> {
    let (iter, size) = (plan.args.iter, plan.args.size);
    let mut buf = vec![0u8; size];
    let mut picker = plan.picker(id);
    let mut progress = Progress::new(iter, id == 0);
    for i in 0..iter {
        if stop.is_set() {
            return Ok(());
        }
        if plan.order == Order::Append {
            // Appended records cannot know their position, so they carry a unique id.
            record::fill(&mut buf, iter * id as u64 + i);
            file.append(&buf)?;
        } else {
            let index = picker.next(i);
            record::fill(&mut buf, index);
            file.write(index * plan.size, &buf)?;
        }
        progress.tick(i + 1);
    }
    progress.finish();
    Ok(())
}

/// What one thread's reads found.
#[derive(Default)]
struct Tally {
    mismatches: u64,
    first_mismatch: Option<u64>,
    /// The ids of appended records, in the order read.
    ids: Vec<u64>,
}

fn read_phase(plan: &Plan) -> Result<()> {
    let args = plan.args;
    let mut file = plan.spec.open(&args.path, &OpenOptions::reader())?;
    let file_size = file.size();
    say(format_args!("{}", args.header("Reading")));
    let start = Instant::now();
    let tallies = run_workers(args.threads, |id, stop| read_records(&*file, plan, id, stop, file_size))?;
    let report = plan.report("read", "Reading", start, file_size);
    file.close()?;
    report.print(args.json);
    check_tallies(plan, &tallies)
}

fn read_records(file: &dyn File, plan: &Plan, id: usize, stop: &Stop, file_size: u64) -> Result<Tally> {
    let (iter, size) = (plan.args.iter, plan.args.size);
    let batch = plan.batch.min(iter as usize).max(1);
    let mut buf = vec![0u8; size * batch];
    let mut offsets: Vec<u64> = Vec::with_capacity(batch);
    let mut tally = Tally::default();
    if plan.order == Order::Append {
        tally.ids.reserve_exact(iter as usize);
    }
    let mut picker = plan.picker(id);
    let mut progress = Progress::new(iter, id == 0);
    if batch == 1 {
        // One read per record, with no batch to gather: the loop the
        // reference runs, so the phase times the file rather than the harness.
        for i in 0..iter {
            if stop.is_set() {
                return Ok(tally);
            }
            let offset = picker.next(i) * plan.size;
            // A random record past the end was never written (another run's thread count
            // or seed): there is nothing to read, as in the reference.
            if plan.order != Order::Random || offset + plan.size <= file_size {
                file.read(offset, &mut buf)?;
                check_record(plan, &buf, offset, &mut tally);
            }
            progress.tick(i + 1);
        }
        progress.finish();
        return Ok(tally);
    }
    let mut i = 0;
    while i < iter {
        if stop.is_set() {
            return Ok(tally);
        }
        offsets.clear();
        let end = (i + batch as u64).min(iter);
        for n in i..end {
            let offset = picker.next(n) * plan.size;
            // A random record past the end was never written (another run's thread count
            // or seed): there is nothing to read, as in the reference.
            if plan.order == Order::Random && offset + plan.size > file_size {
                continue;
            }
            offsets.push(offset);
        }
        let mut reads = ReadRequest::carve(&mut buf, offsets.iter().map(|&o| (o, size)))?;
        file.read_many(&mut reads)?;
        for (k, &offset) in offsets.iter().enumerate() {
            check_record(plan, &buf[k * size..(k + 1) * size], offset, &mut tally);
        }
        i = end;
        progress.tick(i);
    }
    progress.finish();
    Ok(tally)
}

/// Checks one record read at `offset`, noting what it found in `tally`.
fn check_record(plan: &Plan, buf: &[u8], offset: u64, tally: &mut Tally) {
    let index = offset / plan.size;
    let intact = match plan.order {
        Order::Sequential => record::holds(buf, index),
        // The offsets replay the write phase's, so the record was written; zeros
        // are fine too, for a --read_only run whose seed or threads differ.
        Order::Random => record::holds(buf, index) || record::is_zero(buf),
        Order::Append if buf.len() >= record::TAG_LEN => match record::identify(buf) {
            Some(record_id) if record_id < plan.records => {
                tally.ids.push(record_id);
                true
            }
            _ => false,
        },
        // Too short to carry an id: only check that something was written.
        Order::Append => !record::is_zero(buf),
    };
    if !intact {
        tally.mismatches += 1;
        tally.first_mismatch.get_or_insert(offset);
    }
}

/// Turns what the readers found into the phase's verdict.
fn check_tallies(plan: &Plan, tallies: &[Tally]) -> Result<()> {
    let path = &plan.args.path;
    let mismatches: u64 = tallies.iter().map(|t| t.mismatches).sum();
    if let Some(offset) = tallies.iter().filter_map(|t| t.first_mismatch).min() {
        let others = match mismatches - 1 {
            0 => String::new(),
            n => format!(" (and {n} more records)"),
        };
        return Err(mismatch(format_args!("record {}", offset / plan.size), offset, path, &others));
    }
    if plan.order != Order::Append || plan.args.size < record::TAG_LEN {
        return Ok(());
    }
    // Every appended record was read once; a repeated id means two appends landed
    // on one place, or one record was written twice.
    let threads = plan.args.threads as u64;
    let mut seen = vec![0u64; plan.records.div_ceil(64) as usize];
    for (id, tally) in tallies.iter().enumerate() {
        for (i, &record_id) in tally.ids.iter().enumerate() {
            let (word, bit) = ((record_id / 64) as usize, 1u64 << (record_id % 64));
            if seen[word] & bit != 0 {
                let offset = (i as u64 * threads + id as u64) * plan.size;
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!(
                        "appended record {record_id} is found twice, the second time at offset \
                         {offset} of {}",
                        path.display()
                    ),
                ));
            }
            seen[word] |= bit;
        }
    }
    Ok(())
}
