//! `kura file-perf wicked`: every thread mixes writes, reads, appends, expansions
//! and synchronizations on one file, checking each read against a model of what
//! it wrote; at the end the whole file is checked, before closing and after
//! reopening.
//!
//! The file starts with a slot area, expanded before the threads start, so that
//! appends and expansions land past it: slot `s` belongs to thread `s % threads`,
//! which alone writes it, so each thread's model is exact without locks. Regions
//! reserved by appends and expansions are logged with their offsets; together
//! they must tile the file from the slot area to its end, with no overlap and no
//! gap.

use std::time::Instant;

use clap::Args;
use kuradb::dbm::Durability;
use kuradb::file::{File, FileSpec, OpenOptions};
use kuradb::{Error, ErrorKind, Result};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use super::{mismatch, pad_to_block, record, CommonArgs};
use crate::report::{run_workers, say, thread_rng, PhaseReport, Progress, Stop};

/// Arguments of `kura file-perf wicked`.
#[derive(Args, Debug)]
pub struct WickedArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// Operations are drawn from `0..OP_SCALE`; each kind takes the draws below its
/// bound and above the previous one: 70% slot writes, 25% slot reads, 3% appends,
/// 0.9% expansions, about 1% soft synchronizations and 0.01% hard ones (each waits
/// for the device, so they stay rare).
const OP_SCALE: u32 = 10_000;
const WRITE_BELOW: u32 = 7_000;
const READ_BELOW: u32 = 9_500;
const APPEND_BELOW: u32 = 9_800;
const EXPAND_BELOW: u32 = 9_890;
const SOFT_SYNC_BELOW: u32 = 9_999;

struct Plan<'a> {
    args: &'a CommonArgs,
    spec: FileSpec,
    /// The length of every slot and every appended or expanded region.
    size: u64,
    slots: u64,
    slot_area: u64,
    seed: u64,
}

/// A region past the slot area, reserved by one thread.
#[derive(Clone, Copy, Debug)]
struct Region {
    offset: u64,
    len: u64,
    content: Content,
}

#[derive(Clone, Copy, Debug)]
enum Content {
    /// An appended record, in the sequence workload's format with this id.
    Appended(u64),
    /// Expanded space or padding.
    Zeros,
}

/// What one thread did: the seed of the content of each of its slots (0 for a
/// slot never written) and the regions it reserved.
struct Log {
    model: Vec<u64>,
    regions: Vec<Region>,
}

/// Runs `kura file-perf wicked`.
pub fn run(args: &WickedArgs) -> Result<()> {
    let common = &args.common;
    let spec = common.file.spec()?;
    let size = common.size as u64;
    let slots = common.records()?;
    let plan = Plan { args: common, spec, size, slots, slot_area: slots * size, seed: common.base_seed() };

    let mut file = plan.spec.open(&common.path, &OpenOptions::writer().truncating())?;
    file.expand(plan.slot_area)?;
    say(format_args!("{}", common.header("Doing")));
    let start = Instant::now();
    let mut logs = run_workers(common.threads, |id, stop| churn(&*file, &plan, id, stop))?;
    let elapsed = start.elapsed();
    if plan.spec.padding {
        let offset = file.size();
        let len = pad_to_block(&*file)?;
        if len > 0 {
            logs[0].regions.push(Region { offset, len, content: Content::Zeros });
        }
    }
    let file_size = file.size();
    verify(&*file, &plan, &logs, "before closing")?;
    file.close()?;
    let mut reopened = plan.spec.open(&common.path, &OpenOptions::reader())?;
    verify(&*reopened, &plan, &logs, "after reopening")?;
    reopened.close()?;

    PhaseReport::new("wicked", "", elapsed, common.iter * common.threads as u64)
        .field("file_size", file_size)
        .json_field("iterations", common.iter)
        .json_field("threads", common.threads)
        .json_field("record_size", common.size)
        .json_field("file", plan.spec.kind.name())
        .print(common.json);
    Ok(())
}

/// The random operations of thread `id`.
fn churn(file: &dyn File, plan: &Plan, id: usize, stop: &Stop) -> Result<Log> {
    let args = plan.args;
    let mut rng = thread_rng(plan.seed, id);
    let mut log = Log { model: vec![0; args.iter as usize], regions: Vec::new() };
    let mut buf = vec![0u8; plan.size as usize];
    let mut expected = vec![0u8; plan.size as usize];
    let mut progress = Progress::new(args.iter, id == 0);
    for i in 0..args.iter {
        if stop.is_set() {
            return Ok(log);
        }
        let op = rng.gen_range(0..OP_SCALE);
        if op < READ_BELOW {
            let k = rng.gen_range(0..args.iter);
            let slot = k * args.threads as u64 + id as u64;
            let offset = slot * plan.size;
            if op < WRITE_BELOW {
                // Odd, so never the 0 that marks a slot never written.
                let content = rng.gen::<u64>() | 1;
                fill_slot(&mut buf, content);
                file.write(offset, &buf)?;
                log.model[k as usize] = content;
            } else {
                file.read(offset, &mut buf)?;
                fill_slot(&mut expected, log.model[k as usize]);
                if buf != expected {
                    return Err(plan.broken(mismatch(format_args!("slot {slot}"), offset, &args.path, "")));
                }
            }
        } else if op < EXPAND_BELOW {
            let (offset, content) = if op < APPEND_BELOW {
                let record_id = args.iter * id as u64 + i;
                record::fill(&mut buf, record_id);
                (file.append(&buf)?, Content::Appended(record_id))
            } else {
                (file.expand(plan.size)?, Content::Zeros)
            };
            let region = Region { offset, len: plan.size, content };
            if offset < plan.slot_area {
                return Err(plan.broken(Error::new(
                    ErrorKind::BrokenData,
                    format!(
                        "{} at offset {offset} of {} lies inside the slot area (below {})",
                        region.describe(),
                        args.path.display(),
                        plan.slot_area
                    ),
                )));
            }
            // Read the region back at once: no other thread knows where it is.
            file.read(offset, &mut buf)?;
            fill_region(&mut expected, content);
            if buf != expected {
                return Err(plan.broken(mismatch(region.describe(), offset, &args.path, "")));
            }
            log.regions.push(region);
        } else {
            file.synchronize(if op >= SOFT_SYNC_BELOW { Durability::Hard } else { Durability::Soft })?;
        }
        progress.tick(i + 1);
    }
    progress.finish();
    Ok(log)
}

/// Checks the whole file against every thread's log: the regions tile the file
/// from the slot area to its end, and every slot and region holds what was written.
fn verify(file: &dyn File, plan: &Plan, logs: &[Log], stage: &str) -> Result<()> {
    let path = &plan.args.path;
    let mut regions: Vec<Region> = logs.iter().flat_map(|log| log.regions.iter().copied()).collect();
    regions.sort_by_key(|region| region.offset);
    let mut end = plan.slot_area;
    for region in &regions {
        if region.offset != end {
            let problem = if region.offset < end {
                format!("overlaps the region before it, which ends at {end}")
            } else {
                format!("leaves bytes {end}..{} that nobody reserved", region.offset)
            };
            return Err(plan.broken(Error::new(
                ErrorKind::BrokenData,
                format!("{} at offset {} of {} {problem}", region.describe(), region.offset, path.display()),
            )));
        }
        end = region.offset + region.len;
    }
    if file.size() != end {
        return Err(plan.broken(Error::new(
            ErrorKind::BrokenData,
            format!(
                "{} is {} bytes {stage}, but its slots and regions make {end}",
                path.display(),
                file.size()
            ),
        )));
    }
    let detail = format!(" {stage}");
    let threads = plan.args.threads as u64;
    let mut buf = vec![0u8; plan.size as usize];
    let mut expected = buf.clone();
    for slot in 0..plan.slots {
        let offset = slot * plan.size;
        file.read(offset, &mut buf)?;
        fill_slot(&mut expected, logs[(slot % threads) as usize].model[(slot / threads) as usize]);
        if buf != expected {
            return Err(plan.broken(mismatch(format_args!("slot {slot}"), offset, path, &detail)));
        }
    }
    for region in &regions {
        buf.resize(region.len as usize, 0);
        expected.resize(region.len as usize, 0);
        file.read(region.offset, &mut buf)?;
        fill_region(&mut expected, region.content);
        if buf != expected {
            return Err(plan.broken(mismatch(region.describe(), region.offset, path, &detail)));
        }
    }
    Ok(())
}

impl Plan<'_> {
    /// Adds how to replay the run to a consistency error.
    fn broken(&self, err: Error) -> Error {
        Error::new(err.kind(), format!("{} (random seed {})", err.message(), self.seed))
    }
}

impl Region {
    fn describe(&self) -> String {
        match self.content {
            Content::Appended(id) => format!("appended record {id}"),
            Content::Zeros => format!("expanded region of {} bytes", self.len),
        }
    }
}

/// Fills `buf` with the slot content that `seed` stands for: random bytes, or
/// zeros for 0 (a slot never written, which the expansion at the start zeroed).
fn fill_slot(buf: &mut [u8], seed: u64) {
    if seed == 0 {
        buf.fill(0);
    } else {
        SmallRng::seed_from_u64(seed).fill_bytes(buf);
    }
}

fn fill_region(buf: &mut [u8], content: Content) {
    match content {
        Content::Appended(id) => record::fill(buf, id),
        Content::Zeros => buf.fill(0),
    }
}
