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
use kuradb::dbm::{Action, Dbm, INCREMENT_UNCHANGED};
use kuradb::{Error, ErrorKind, Result};
use parking_lot::RwLock;
use rand::rngs::SmallRng;
use rand::Rng;

use super::keys::{parse_key, KeyFormatter, ValuePattern};
use super::model::{grow_or_drop, trim, Model, Outcome};
use super::phase::{validating, Bench, Phase};
use super::tally::Tally;
use super::CommonArgs;
use crate::dbm_options::{OpenMode, Updates};
use crate::report::{say, thread_rng, Progress, Stop};

/// Arguments of `kura perf wicked`.
#[derive(Args, Debug)]
pub struct WickedArgs {
    #[command(flatten)]
    common: CommonArgs,

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
                self.db.synchronize(false)?;
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
                self.db.synchronize(false)?;
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

    /// One operation of the weighted mix.
    fn operate(&mut self) -> Result<()> {
        let mut roll = self.rng.gen_range(0..TOTAL_WEIGHT);
        let op = WEIGHTS
            .iter()
            .find(|(_, weight)| {
                let hit = roll < *weight;
                roll = roll.saturating_sub(*weight);
                hit
            })
            .map_or(Op::Get, |(op, _)| *op);
        match op {
            Op::Get => {
                let key = self.any_key();
                let value = self.db.get(self.keys[0].format(key))?;
                self.check_read("get", key, value.as_deref())
            }
            Op::Set => {
                let key = self.mutable_key();
                let value = self.value(key);
                let overwrite = self.rng.gen_ratio(2, 3);
                let actual = allow(
                    self.db.set(self.keys[0].format(key), value, overwrite),
                    &[ErrorKind::Duplication],
                )?;
                let predicted = self.model.as_mut().map(|m| m.set(key, value, overwrite));
                self.expect("set", key, &actual, predicted)
            }
            Op::Remove => {
                let key = self.mutable_key();
                let actual = Ok(self.db.remove(self.keys[0].format(key))?);
                let predicted = self.model.as_mut().map(|m| Ok(m.remove(key)));
                self.expect("remove", key, &actual, predicted)
            }
            Op::Append => {
                let key = self.mutable_key();
                let value = self.value(key);
                self.db.append(self.keys[0].format(key), value, b",")?;
                if let Some(model) = &mut self.model {
                    model.append(key, value, b",");
                }
                Ok(())
            }
            Op::CompareExchange => self.compare_exchange(),
            Op::Increment => {
                let key = self.mutable_key();
                let delta = if self.rng.gen_ratio(1, 10) {
                    INCREMENT_UNCHANGED
                } else {
                    self.rng.gen_range(-100..100)
                };
                let initial = self.rng.gen_range(-1000..1000);
                let result = self.db.increment(self.keys[0].format(key), delta, initial);
                let actual = allow(result, &[ErrorKind::InvalidArgument])?;
                let predicted = self.model.as_mut().map(|m| m.increment(key, delta, initial));
                self.expect("increment", key, &actual, predicted)
            }
            Op::GetMulti => {
                let numbers: Vec<u64> =
                    (0..self.rng.gen_range(1..=MAX_MULTI)).map(|_| self.any_key()).collect();
                let texts = texts(&numbers);
                let values = self.db.get_multi(&slices(&texts))?;
                for (key, value) in numbers.iter().zip(&values) {
                    self.check_read("get_multi", *key, value.as_deref())?;
                }
                Ok(())
            }
            Op::SetMulti => {
                let numbers: Vec<u64> =
                    (0..self.rng.gen_range(1..=MAX_MULTI)).map(|_| self.mutable_key()).collect();
                let pairs: Vec<(u64, &[u8])> = numbers.iter().map(|&key| (key, self.value(key))).collect();
                let texts = texts(&numbers);
                let text_pairs: Vec<(&[u8], &[u8])> =
                    texts.iter().zip(&pairs).map(|(k, p)| (&k[..], p.1)).collect();
                let overwrite = self.rng.gen_ratio(2, 3);
                let actual = allow(self.db.set_multi(&text_pairs, overwrite), &[ErrorKind::Duplication])?;
                let predicted = self.model.as_mut().map(|m| m.set_multi(&pairs, overwrite));
                self.expect("set_multi", numbers[0], &actual, predicted)
            }
            Op::RemoveMulti => {
                let numbers: Vec<u64> =
                    (0..self.rng.gen_range(1..=MAX_MULTI)).map(|_| self.mutable_key()).collect();
                let actual = Ok(self.db.remove_multi(&slices(&texts(&numbers)))?);
                let predicted = self.model.as_mut().map(|m| Ok(m.remove_multi(&numbers)));
                self.expect("remove_multi", numbers[0], &actual, predicted)
            }
            Op::CompareExchangeMulti => self.compare_exchange_multi(),
            Op::Rekey => {
                let (old, new) = (self.mutable_key(), self.mutable_key());
                let (overwrite, copying) = (self.rng.gen_bool(0.5), self.rng.gen_ratio(1, 4));
                let [old_text, new_text] = &mut self.keys;
                let result = self.db.rekey(old_text.format(old), new_text.format(new), overwrite, copying);
                let actual = allow(result, &[ErrorKind::NotFound, ErrorKind::Duplication])?;
                let predicted = self.model.as_mut().map(|m| m.rekey(old, new, overwrite, copying));
                self.expect("rekey", old, &actual, predicted)
            }
            Op::Process => {
                let key = self.mutable_key();
                let limit = self.plan.pattern.size();
                let mut seen = None;
                self.db.process(self.keys[0].format(key), true, &mut |old| {
                    seen = Some(old.map(<[u8]>::to_vec));
                    grow_or_drop(old, limit)
                })?;
                let seen =
                    seen.ok_or_else(|| self.plan.bench.broken("process never called its processor".into()))?;
                self.check_read("process", key, seen.as_deref())?;
                if let Some(model) = &mut self.model {
                    model.apply(key, &grow_or_drop(seen.as_deref(), limit));
                }
                Ok(())
            }
            Op::Housekeeping => self.housekeeping(),
        }
    }

    fn compare_exchange(&mut self) -> Result<()> {
        let key = self.mutable_key();
        let value = self.value(key);
        let current = self.model.as_ref().and_then(|m| m.get(key).map(<[u8]>::to_vec));
        // Expect absence, the model's value (likely to succeed), or some other value.
        let expected: Option<&[u8]> = match self.rng.gen_range(0..3) {
            0 => None,
            1 => Some(current.as_deref().unwrap_or(value)),
            _ => Some(value),
        };
        let desired = if self.rng.gen_ratio(1, 3) { None } else { Some(self.value(key)) };
        let actual = Ok(self.db.compare_exchange(self.keys[0].format(key), expected, desired)?);
        let predicted = self.model.as_mut().map(|m| Ok(m.compare_exchange(key, expected, desired)));
        self.expect("compare_exchange", key, &actual, predicted)
    }

    fn compare_exchange_multi(&mut self) -> Result<()> {
        let count = self.rng.gen_range(1..=MAX_MULTI / 2);
        let expected_keys: Vec<u64> = (0..count).map(|_| self.mutable_key()).collect();
        let desired_keys: Vec<u64> = (0..count).map(|_| self.mutable_key()).collect();
        // Mostly what the model holds, so that some exchanges succeed.
        let expected_values: Vec<Option<Vec<u8>>> = expected_keys
            .iter()
            .map(|&key| match (&self.model, self.rng.gen_ratio(3, 4)) {
                (Some(model), true) => model.get(key).map(<[u8]>::to_vec),
                _ => None,
            })
            .collect();
        let desired_values: Vec<Option<&[u8]>> = desired_keys
            .iter()
            .map(|&key| if self.rng.gen_ratio(1, 4) { None } else { Some(self.value(key)) })
            .collect();
        let expected: Vec<(u64, Option<&[u8]>)> =
            expected_keys.iter().zip(&expected_values).map(|(k, v)| (*k, v.as_deref())).collect();
        let desired: Vec<(u64, Option<&[u8]>)> =
            desired_keys.iter().zip(&desired_values).map(|(k, v)| (*k, *v)).collect();
        let (expected_texts, desired_texts) = (texts(&expected_keys), texts(&desired_keys));
        let text_expected: Vec<(&[u8], Option<&[u8]>)> =
            expected_texts.iter().zip(&expected).map(|(t, p)| (&t[..], p.1)).collect();
        let text_desired: Vec<(&[u8], Option<&[u8]>)> =
            desired_texts.iter().zip(&desired).map(|(t, p)| (&t[..], p.1)).collect();
        let actual = Ok(self.db.compare_exchange_multi(&text_expected, &text_desired)?);
        let predicted = self.model.as_mut().map(|m| Ok(m.compare_exchange_multi(&expected, &desired)));
        self.expect("compare_exchange_multi", expected_keys[0], &actual, predicted)
    }

    /// The calls that report on the database rather than change a record.
    fn housekeeping(&mut self) -> Result<()> {
        match self.rng.gen_range(0..5) {
            0 => drop(self.db.count()?),
            1 => drop(self.db.file_size()?),
            2 => drop(self.db.should_be_rebuilt()?),
            3 => drop(self.db.inspect()?),
            _ => {
                if !self.db.is_healthy() {
                    return Err(self.plan.bench.broken("the database says it is not healthy".into()));
                }
            }
        }
        Ok(())
    }

    /// Visits every record, cutting values that appends made longer than the size
    /// (only own ones with `--validate`) and checking own records against the model.
    fn process_each(&mut self) -> Result<()> {
        let limit = self.plan.pattern.size();
        let (id, threads, records) = (self.id, self.threads, self.plan.records);
        let mut model = self.model.take();
        let mut own_seen = 0usize;
        let mut problem = None;
        let result = self.db.process_each(true, &mut |key, value| {
            let Some(number) = parse_key(key).filter(|&n| n < records) else {
                problem.get_or_insert_with(|| format!("process_each met a stray key {}", key.escape_ascii()));
                return Action::Keep;
            };
            match &mut model {
                None => trim(value, limit),
                Some(_) if number % threads != id => Action::Keep,
                Some(model) => {
                    own_seen += 1;
                    if model.get(number) != Some(value) {
                        problem.get_or_insert_with(|| {
                            format!(
                                "process_each met key {} with a value the model does not hold",
                                key.escape_ascii()
                            )
                        });
                    }
                    let action = trim(value, limit);
                    model.apply(number, &action);
                    action
                }
            }
        });
        let own_expected = model.as_ref().map(Model::len);
        self.model = model;
        result?;
        if let Some(problem) = problem {
            return Err(self.plan.bench.broken(problem));
        }
        match own_expected {
            Some(expected) if expected != own_seen => Err(self.plan.bench.broken(format!(
                "process_each met {own_seen} records of thread {id}, but its model holds {expected}"
            ))),
            _ => Ok(()),
        }
    }

    /// Walks an iterator a few steps from the first record or a key, reading,
    /// setting or removing at the cursor (only own records with `--validate`).
    fn walk_iterator(&mut self) -> Result<()> {
        let mut cursor = self.db.iter()?;
        if self.rng.gen_bool(0.5) {
            cursor.first()?;
        } else {
            let key = self.any_key();
            match cursor.jump(self.keys[0].format(key)) {
                Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
                other => other?,
            }
        }
        for _ in 0..ITERATOR_STEPS {
            let Some((key, value)) = cursor.get()? else { break };
            let Some(number) = parse_key(&key).filter(|&n| n < self.plan.records) else {
                return Err(self
                    .plan
                    .bench
                    .broken(format!("an iterator met a stray key {}", key.escape_ascii())));
            };
            self.check_read("an iterator", number, Some(&value))?;
            let may_change = self.model.is_none() || self.owns(number);
            let roll = self.rng.gen_range(0..15);
            if may_change && roll < 3 {
                match cursor.remove() {
                    Err(err) if err.kind() == ErrorKind::NotFound => break,
                    other => other?,
                }
                if let Some(model) = &mut self.model {
                    model.remove(number);
                }
                // Removing moved the cursor to the next record already.
                continue;
            }
            if may_change && roll < 7 {
                let new_value = self.value(number);
                match cursor.set(new_value) {
                    Err(err) if err.kind() == ErrorKind::NotFound => break,
                    other => other?,
                }
                if let Some(model) = &mut self.model {
                    model.put(number, new_value);
                }
            }
            match cursor.next() {
                Err(err) if err.kind() == ErrorKind::NotFound => break,
                other => other?,
            }
        }
        Ok(())
    }
}

/// Splits an operation's result into an outcome the model can predict (success,
/// or a failure of one of the `expected` kinds) and a real error.
fn allow<T>(result: Result<T>, expected: &[ErrorKind]) -> Result<Outcome<T>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(err) if expected.contains(&err.kind()) => Ok(Err(err.kind())),
        Err(err) => Err(err),
    }
}

/// The keys of `numbers` as owned texts, for the `*_multi` operations.
fn texts(numbers: &[u64]) -> Vec<Vec<u8>> {
    let mut formatter = KeyFormatter::default();
    numbers.iter().map(|&n| formatter.format(n).to_vec()).collect()
}

fn slices(texts: &[Vec<u8>]) -> Vec<&[u8]> {
    texts.iter().map(Vec::as_slice).collect()
}
