//! `kura perf mixed`: random gets while other threads scan the whole
//! database, the experiment of seed 004. A set phase fills the database;
//! then, in one opening of it, a `get` phase runs the random gets alone
//! (and warms the caches) and a `mixed` phase runs the same gets while
//! `--scanners` threads walk every record with cursors, again and again
//! until the gets are done. Each read phase reports the gets' throughput and
//! their hit rates in the page cache and the tree's node cache; the mixed
//! phase also the scanners' records per second.
//!
//! Hits are the getter threads' own: each cache counts every access in its
//! thread's [`ThreadCacheCounts`], which a getter takes when it starts and
//! when it ends, so the scanners' hits never mix in.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::builder::RangedU64ValueParser;
use clap::Args;
use kuradb::caching::ThreadCacheCounts;
use kuradb::dbm::Dbm;
use kuradb::{Error, ErrorKind, Result};
use rand::Rng;

use super::keys::{KeyFormatter, KeyPicker, ValuePattern};
use super::phase::{Bench, Phase};
use super::CommonArgs;
use crate::dbm_options::OpenMode;
use crate::report::{run_workers, say, thread_rng, PhaseReport, Stop};

/// Arguments of `kura perf mixed`.
#[derive(Args, Debug)]
pub struct MixedArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,

    /// Threads walking the whole database with cursors while the --threads
    /// threads do their --iter random gets each.
    #[arg(long = "scanners", value_name = "NUM", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=4096))]
    scanners: usize,

    /// The random gets draw among this many keys spread evenly over the
    /// database (its working set); 0 for every key.
    #[arg(long = "hot", value_name = "NUM", default_value_t = 0)]
    hot: u64,
}

/// What the scanners of one phase did.
struct Scans {
    scanners: usize,
    /// Records read.
    scanned: u64,
    /// Whole walks finished.
    walks: u64,
}

/// What the getters of one phase did, summed over them.
#[derive(Default)]
struct Gets {
    missing: u64,
    counts: ThreadCacheCounts,
}

/// Runs `kura perf mixed`.
pub fn run(args: &MixedArgs) -> Result<()> {
    let common = &args.common;
    let records = common.records()?;
    if args.hot > records {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("--hot {} is more than the {records} records (--iter × --threads)", args.hot),
        ));
    }
    let bench = Bench::new(common)?;
    let pattern = ValuePattern::new(common.size);
    let set = Phase { name: "set", title: "Setting", mode: OpenMode::Create };
    bench.run_phase(
        set,
        |db, id, stop| {
            let mut keys = KeyPicker::sequential(id, common.threads);
            let mut formatter = KeyFormatter::default();
            for i in 0..common.iter {
                if stop.is_set() {
                    break;
                }
                let key = keys.next(i);
                db.set(formatter.format(key), pattern.value(key, common.size))?;
            }
            Ok(())
        },
        |_, _| Ok(()),
    )?;
    let db = bench.opener.open(OpenMode::Read)?;
    let outcome = read_phases(&bench, args, &*db, records);
    let closed = bench.opener.close(db, OpenMode::Read);
    outcome?;
    closed
}

/// The get phase, then the mixed phase, on the same open database.
fn read_phases(bench: &Bench, args: &MixedArgs, db: &dyn Dbm, records: u64) -> Result<()> {
    let common = &args.common;
    let hot = if args.hot == 0 { records } else { args.hot };
    let getters = common.threads;
    for (name, title, scanners) in [("get", "Getting", 0), ("mixed", "Mixing", args.scanners)] {
        say(format_args!(
            "{title}: impl={} num_iterations={} value_size={} num_threads={getters} num_scanners={scanners} \
             hot_keys={hot}",
            bench.opener.name(),
            common.iter,
            common.size
        ));
        let getting = AtomicUsize::new(getters);
        let scanned = AtomicU64::new(0);
        let walks = AtomicU64::new(0);
        let start = Instant::now();
        let results = run_workers(getters + scanners, |id, stop| {
            if id < getters {
                let gets = get_records(bench, db, id, stop, records, hot);
                getting.fetch_sub(1, Ordering::AcqRel);
                gets
            } else {
                scan_records(db, stop, &getting, &scanned, &walks).map(|()| Gets::default())
            }
        })?;
        let elapsed = start.elapsed();
        let mut gets = Gets::default();
        for g in &results[..getters] {
            gets.missing += g.missing;
            gets.counts = gets.counts.sum(g.counts);
        }
        if gets.missing > 0 {
            return Err(bench.broken(format!("{} gets found no record the set phase stored", gets.missing)));
        }
        let scans = Scans {
            scanners,
            scanned: scanned.load(Ordering::Relaxed),
            walks: walks.load(Ordering::Relaxed),
        };
        report(bench, (name, title), elapsed, &gets, &scans).print(common.json);
    }
    Ok(())
}

/// Getter `id`'s `--iter` random gets of the hot keys, with its cache counts.
fn get_records(bench: &Bench, db: &dyn Dbm, id: usize, stop: &Stop, records: u64, hot: u64) -> Result<Gets> {
    let mut rng = thread_rng(bench.seed, id);
    let mut formatter = KeyFormatter::default();
    let mut gets = Gets::default();
    ThreadCacheCounts::take();
    for _ in 0..bench.args.iter {
        if stop.is_set() {
            break;
        }
        // Hot key i is record i·records/hot: spread over the whole database.
        let key = (rng.gen_range(0..hot) as u128 * records as u128 / hot as u128) as u64;
        if !db.contains(formatter.format(key))? {
            gets.missing += 1;
        }
    }
    gets.counts = ThreadCacheCounts::take();
    Ok(gets)
}

/// Walks every record with a cursor, from the first, again and again until
/// no getter is left (at least once), counting the records and whole walks.
fn scan_records(
    db: &dyn Dbm,
    stop: &Stop,
    getting: &AtomicUsize,
    scanned: &AtomicU64,
    walks: &AtomicU64,
) -> Result<()> {
    loop {
        let mut cursor = db.iter()?;
        cursor.first()?;
        let mut n = 0u64;
        while cursor.get()?.is_some() {
            cursor.next()?;
            n += 1;
            if n.is_multiple_of(1024) {
                scanned.fetch_add(1024, Ordering::Relaxed);
                if stop.is_set() || getting.load(Ordering::Acquire) == 0 {
                    return Ok(());
                }
            }
        }
        scanned.fetch_add(n % 1024, Ordering::Relaxed);
        walks.fetch_add(1, Ordering::Relaxed);
        if stop.is_set() || getting.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
    }
}

/// The phase's report: the gets' qps and hit rates, and the scanners' pace.
fn report(
    bench: &Bench,
    (name, title): (&'static str, &'static str),
    elapsed: Duration,
    gets: &Gets,
    scans: &Scans,
) -> PhaseReport {
    let Scans { scanners, scanned, walks } = *scans;
    let args = bench.args;
    let rate =
        |r: Option<f64>| r.map_or(serde_json::Value::Null, |r| serde_json::json!((r * 1e4).round() / 1e4));
    let show = |r: Option<f64>| r.map_or("none".to_string(), |r| format!("{:.2}%", r * 100.0));
    let c = gets.counts;
    let mut report = PhaseReport::new(name, title, elapsed, args.iter * args.threads as u64)
        .json_field("page_hit_rate", rate(c.page_hit_rate()))
        .json_field("page_hits", c.page_hits)
        .json_field("page_misses", c.page_misses)
        .json_field("node_hit_rate", rate(c.node_hit_rate()))
        .json_field("node_hits", c.node_hits)
        .json_field("node_misses", c.node_misses)
        .json_field("scanners", scanners as u64)
        .json_field("iterations", args.iter)
        .json_field("threads", args.threads)
        .json_field("value_size", args.size)
        .json_field("dbm", bench.opener.name())
        .json_field("file", args.dbm.file.file.name());
    let mut line =
        format!("  page_hit_rate={} node_hit_rate={}", show(c.page_hit_rate()), show(c.node_hit_rate()));
    if scanners > 0 {
        let scan_qps = scanned as f64 / elapsed.as_secs_f64().max(1e-9);
        report = report
            .json_field("scan_qps", scan_qps.round())
            .json_field("scanned", scanned)
            .json_field("walks", walks);
        line.push_str(&format!(" scanned={scanned} scan_qps={scan_qps:.0} walks={walks}"));
    }
    report.detail(line)
}
