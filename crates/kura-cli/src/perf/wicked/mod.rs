//! `kura perf wicked`: every thread mixes every database operation — get, set,
//! remove, append, compare-exchange, increment, the `*_multi` forms, rekey,
//! process, process_each, the housekeeping calls — with, by flag, iterator walks
//! that read, set and remove at the cursor, rebuilds, clears and synchronizations.
//!
//! With `--validate` the database is checked against a [`Model`] exactly, under
//! concurrency, by ownership: thread `id` changes only the keys `k` with
//! `k % threads == id`, so each thread's model of its keys is exact without
//! locks, and every read of an own key (get, get_multi, cursors, process_each)
//! is checked at once. Reads still go to every key. A clear empties every
//! thread's keys at once, so with `--clear` operations take a shared gate and a
//! clear takes it exclusively, then bumps an epoch; a thread that sees the epoch
//! move empties its model. At the end the models together must be the database,
//! before closing and after reopening. Without `--validate` keys are drawn from
//! the whole range by every thread, so threads contend for the same records.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use kuradb::dbm::{Dbm, Durability};
use kuradb::{Error, ErrorKind, Result};
use parking_lot::RwLock;
use rand::rngs::SmallRng;
use rand::Rng;

mod operations;

use super::keys::{KeyFormatter, ValuePattern};
use super::model::{Model, Outcome};
use super::phase::{validating, Bench, Phase};
use super::tally::Tally;
use super::CommonArgs;
use crate::dbm_options::{OpenMode, Updates};
use crate::report::{say, thread_rng, Progress, Stop};

/// Arguments of `kura perf wicked`.
#[derive(Args, Debug)]
pub struct WickedArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,

    /// Walks iterators occasionally, reading, setting and removing at the cursor.
    #[arg(long = "iterator")]
    iterator: bool,

    /// Synchronizes the database occasionally.
    #[arg(long = "sync")]
    sync: bool,

    /// Clears the database occasionally.
    #[arg(long = "clear")]
    clear: bool,

    /// Rebuilds the database occasionally.
    #[arg(long = "rebuild")]
    rebuild: bool,

    /// Checks every operation and the final database against a model.
    #[arg(long = "validate")]
    validate: bool,

    /// Runs each thread's operations over and over until this many seconds
    /// have passed, rather than once: `--iter` still sets the number of keys
    /// and how often the rare operations come (about two rebuilds, clears and
    /// synchronizations per thread in every `--iter` operations). For a
    /// stress run that holds the database open for a known time.
    #[arg(long = "seconds", value_name = "NUM", value_parser = parse_seconds)]
    seconds: Option<Duration>,
}

fn parse_seconds(text: &str) -> std::result::Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds > 0.0 && seconds <= 1e9 => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(format!("expected a positive number of seconds, not {text:?}")),
    }
}

/// The operations of the mix, each with its weight out of [`TOTAL_WEIGHT`]. The
/// rare ones (rebuild, clear, synchronize, process_each) are drawn apart.
#[derive(Clone, Copy, Debug)]
enum Op {
    Get,
    Set,
    Remove,
    Append,
    CompareExchange,
    Increment,
    GetMulti,
    SetMulti,
    RemoveMulti,
    CompareExchangeMulti,
    Rekey,
    Process,
    Housekeeping,
}

const WEIGHTS: [(Op, u32); 13] = [
    (Op::Get, 240),
    (Op::Set, 160),
    (Op::Remove, 100),
    (Op::Append, 80),
    (Op::CompareExchange, 80),
    (Op::Increment, 50),
    (Op::GetMulti, 50),
    (Op::SetMulti, 40),
    (Op::RemoveMulti, 30),
    (Op::CompareExchangeMulti, 20),
    (Op::Rekey, 30),
    (Op::Process, 30),
    (Op::Housekeeping, 10),
];
const TOTAL_WEIGHT: u32 = {
    let (mut total, mut i) = (0, 0);
    while i < WEIGHTS.len() {
        total += WEIGHTS[i].1;
        i += 1;
    }
    total
};

/// Out of this many operations, one walks an iterator (with `--iterator`).
const ITERATOR_ONE_IN: u32 = 100;
/// Steps of each iterator walk.
const ITERATOR_STEPS: usize = 3;
/// The most keys of one `*_multi` operation.
const MAX_MULTI: usize = 4;

/// Everything the threads share.
struct Plan<'a> {
    bench: &'a Bench<'a>,
    args: &'a WickedArgs,
    records: u64,
    pattern: ValuePattern,
    /// Taken shared by every validated operation and exclusively by a clear.
    gate: RwLock<()>,
    /// The number of clears so far.
    epoch: AtomicU64,
    /// When the threads stop, with `--seconds`.
    deadline: Option<Instant>,
    tally: Tally,
}

/// Runs `kura perf wicked`.
pub fn run(args: &WickedArgs) -> Result<()> {
    let common = &args.common;
    let bench = Bench::new(common)?;
    if args.validate && bench.opener.updates() != Updates::Immediate {
        return Err(Error::new(
            ErrorKind::NotImplemented,
            format!(
                "wicked --validate checks every operation as it happens, but the {} database shows \
                 updates only at its next synchronization: validate it with `kura perf sequence --validate`",
                bench.opener.name()
            ),
        ));
    }
    let plan = Plan {
        bench: &bench,
        args,
        records: common.records()?,
        pattern: ValuePattern::new(common.size),
        gate: RwLock::new(()),
        epoch: AtomicU64::new(0),
        deadline: args.seconds.map(|seconds| Instant::now() + seconds),
        tally: Tally::default(),
    };
    let phase = Phase { name: "wicked", title: "", mode: OpenMode::Create };
    let model = bench.run_phase(
        phase,
        |db, id, stop| Worker::new(db, &plan, id).run(stop),
        |db, results| {
            bench.count_ops(plan.tally.operations.load(Ordering::Relaxed));
            if !args.validate {
                return Ok(None);
            }
            let model = plan.merge(results);
            validating(|| plan.compare(db, &model, "before closing"))?;
            Ok(Some(model))
        },
    )?;
    say(format_args!("{}", plan.tally.line()));
    if let Some(model) = model {
        let db = bench.opener.open(OpenMode::Read)?;
        let compared = plan.compare(&*db, &model, "after reopening");
        bench.opener.close(db, OpenMode::Read)?;
        compared?;
        say(format_args!("Validated after reopening: {} records", model.len()));
    }
    Ok(())
}

impl Plan<'_> {
    /// The database's expected content: the threads' models, less those a clear
    /// emptied after their thread's last operation.
    fn merge(&self, results: Vec<(Model, u64)>) -> Model {
        let last_epoch = self.epoch.load(Ordering::Acquire);
        let mut merged = Model::default();
        for (model, epoch) in results {
            if epoch == last_epoch {
                merged.absorb(model);
            }
        }
        merged
    }

    fn compare(&self, db: &dyn Dbm, model: &Model, stage: &str) -> Result<()> {
        match model.compare(db)? {
            None => Ok(()),
            Some(problem) => Err(self.bench.broken(format!("{stage}: {problem}"))),
        }
    }
}

/// One thread's state.
struct Worker<'a> {
    db: &'a dyn Dbm,
    plan: &'a Plan<'a>,
    id: u64,
    threads: u64,
    rng: SmallRng,
    keys: [KeyFormatter; 2],
    /// The model of the thread's own keys, with `--validate`.
    model: Option<Model>,
    /// The clears the model has seen.
    epoch: u64,
    /// The chance of a rebuild, clear, synchronization or process_each at each
    /// operation: about two of each per thread and run, as in the reference.
    rare_one_in: u64,
}

impl<'a> Worker<'a> {
    fn new(db: &'a dyn Dbm, plan: &'a Plan<'a>, id: usize) -> Worker<'a> {
        let common = &plan.args.common;
        Worker {
            db,
            plan,
            id: id as u64,
            threads: common.threads as u64,
            rng: thread_rng(plan.bench.seed, id),
            keys: Default::default(),
            model: plan.args.validate.then(Model::default),
            epoch: 0,
            rare_one_in: (common.iter / 2).max(1),
        }
    }

    /// Runs the thread's operations; answers its model and the clears it saw.
    fn run(mut self, stop: &Stop) -> Result<(Model, u64)> {
        let iter = self.plan.args.common.iter;
        let args = self.plan.args;
        let deadline = self.plan.deadline;
        let tally = &self.plan.tally;
        // A run for a time shows no progress: it has no known end.
        let mut progress = Progress::new(iter, self.id == 0 && deadline.is_none());
        let mut done = 0u64;
        loop {
            let over = match deadline {
                None => done == iter,
                // Asked now and then: the clock costs more than it tells.
                Some(deadline) => done.is_multiple_of(64) && Instant::now() >= deadline,
            };
            if over || stop.is_set() {
                break;
            }
            let i = done % iter;
            done += 1;
            if args.rebuild && self.rng.gen_range(0..self.rare_one_in) == 0 {
                self.db.rebuild()?;
                Tally::count(&tally.rebuilds);
            } else if args.clear && self.rng.gen_range(0..self.rare_one_in) == 0 {
                let _exclusive = self.plan.gate.write();
                self.db.clear()?;
                self.plan.epoch.fetch_add(1, Ordering::AcqRel);
                Tally::count(&tally.clears);
            } else if args.sync && self.rng.gen_range(0..self.rare_one_in) == 0 {
                self.db.synchronize(Durability::Soft)?;
                Tally::count(&tally.synchronizations);
            } else {
                let validated = args.validate && args.clear;
                let _shared = validated.then(|| self.plan.gate.read());
                self.catch_up_with_clears();
                if args.iterator && self.rng.gen_ratio(1, ITERATOR_ONE_IN) {
                    self.walk_iterator()?;
                    Tally::count(&tally.iterator_walks);
                } else if self.rng.gen_range(0..self.rare_one_in) == 0 {
                    // A walk over every record, locking out writers: as rare as a rebuild.
                    self.process_each()?;
                } else {
                    self.operate()?;
                }
            }
            if self.id == 0 && i == iter / 2 {
                self.db.synchronize(Durability::Soft)?;
            }
            progress.tick(i + 1);
        }
        tally.operations.fetch_add(done, Ordering::Relaxed);
        progress.finish();
        Ok((self.model.unwrap_or_default(), self.epoch))
    }

    /// Empties the model if a clear happened since the last operation.
    fn catch_up_with_clears(&mut self) {
        let epoch = self.plan.epoch.load(Ordering::Acquire);
        if epoch != self.epoch {
            self.epoch = epoch;
            if let Some(model) = &mut self.model {
                model.clear();
            }
        }
    }

    /// A key this thread may change: its own with `--validate`, any otherwise.
    fn mutable_key(&mut self) -> u64 {
        if self.model.is_some() {
            self.rng.gen_range(0..self.plan.records / self.threads) * self.threads + self.id
        } else {
            self.rng.gen_range(0..self.plan.records)
        }
    }

    /// A key to read: any.
    fn any_key(&mut self) -> u64 {
        self.rng.gen_range(0..self.plan.records)
    }

    /// Whether the model knows `key`'s value: with `--validate`, for own keys.
    fn owns(&self, key: u64) -> bool {
        self.model.is_some() && key % self.threads == self.id
    }

    /// A value for `key` of random length up to the size.
    fn value(&mut self, key: u64) -> &'a [u8] {
        let len = self.rng.gen_range(0..=self.plan.pattern.size());
        self.plan.pattern.value(key, len)
    }

    /// Checks an outcome against the model's: `model` is `None` without `--validate`.
    fn expect<T: PartialEq + std::fmt::Debug>(
        &self,
        what: &str,
        key: u64,
        actual: &Outcome<T>,
        predicted: Option<Outcome<T>>,
    ) -> Result<()> {
        match predicted {
            Some(predicted) if predicted != *actual => Err(self.plan.bench.broken(format!(
                "{what} of key {} answered {actual:?} where the model says {predicted:?}",
                KeyFormatter::default().format(key).escape_ascii()
            ))),
            _ => Ok(()),
        }
    }

    /// Checks a value read from an own key.
    fn check_read(&self, what: &str, key: u64, value: Option<&[u8]>) -> Result<()> {
        match &self.model {
            Some(model) if self.owns(key) && model.get(key) != value => {
                let shown =
                    |v: Option<&[u8]>| v.map(|v| format!("{} bytes", v.len())).unwrap_or("nothing".into());
                Err(self.plan.bench.broken(format!(
                    "{what} of key {} read {} where the model says {}",
                    KeyFormatter::default().format(key).escape_ascii(),
                    shown(value),
                    shown(model.get(key))
                )))
            }
            _ => Ok(()),
        }
    }
}
