//! `kura perf sequence`: a set phase, a get phase, an iterate phase and a remove
//! phase, each over `--iter` keys per thread, as the reference runs them; the
//! database is opened before and closed after each phase, outside its time.
//!
//! Keys follow the reference (see [`KeyPicker`]). Every phase replays the set
//! phase's keys, so a get that finds nothing is an error. The get phase looks
//! each record up without fetching its value ([`Dbm::contains`]), as the
//! reference's does (its gets of 8000-byte records read one 512-byte block
//! each under direct I/O); with `--validate` it reads every value. With
//! `--batch N` it looks N keys up per call ([`Dbm::contains_multi`], or
//! [`Dbm::get_multi`] with `--validate`). With `--validate`,
//! every value read is checked against what the set phase left (see
//! [`Expectations`]), the record count after each phase against the keys set,
//! and after the iterate phase a full walk checks every record.

use std::time::Instant;

use clap::Args;
use kuradb::dbm::{Access, Action, Dbm, Durability};
use kuradb::{ErrorKind, Result};

use super::expectations::Expectations;
use super::keys::{parse_key, KeyFormatter, KeyPicker, LengthPicker, ValuePattern};
use super::latency::ThreadTiming;
use super::phase::{validating, Bench, Phase};
use super::CommonArgs;
use crate::dbm_options::{OpenMode, Updates};
use crate::report::{thread_rng, Progress, Stop};

/// Arguments of `kura perf sequence`.
#[derive(Args, Debug)]
pub struct SequenceArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,

    /// Uses random keys rather than sequential ones.
    #[arg(long = "random_key")]
    random_key: bool,

    /// Uses values of random length, up to --size, rather than fixed ones.
    #[arg(long = "random_value")]
    random_value: bool,

    /// Does only the set phase (the *_only flags combine).
    #[arg(long = "set_only")]
    set_only: bool,

    /// Does only the get phase, on a database an earlier run set with the same flags.
    #[arg(long = "get_only")]
    get_only: bool,

    /// Does only the iterate phase, on a database an earlier run set with the same flags.
    #[arg(long = "iter_only", alias = "iterate_only")]
    iter_only: bool,

    /// Does only the remove phase, on a database an earlier run set with the same flags.
    #[arg(long = "remove_only")]
    remove_only: bool,

    /// Checks every value read and every phase's record count against the keys set.
    #[arg(long = "validate")]
    validate: bool,

    /// Looks the get phase's keys up NUM at a time, with one
    /// `contains_multi` (`get_multi` with --validate) call per NUM keys, so a
    /// database that batches its reads sends them to the device together.
    #[arg(long = "batch", value_name = "NUM", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    batch: u64,

    /// Makes the set phase durable as it goes: a hard synchronization after
    /// every NUM sets of each thread (0: none until the phase's end). With 1,
    /// every set is durable when it returns, as a queue or a ledger needs.
    #[arg(long = "sync_every", value_name = "NUM", default_value_t = 0)]
    sync_every: u64,

    /// Times every operation and prints, every NUM operations of thread 0,
    /// the rate of those NUM, the rate so far and the longest of them; each
    /// phase's report adds its longest operation (0: off, and the progress
    /// dots instead).
    #[arg(long = "report_every", value_name = "NUM", default_value_t = 0)]
    report_every: u64,
}

/// Mixed into the seed of the value-length generators, so they draw apart from
/// the key generators seeded with the same base.
const LENGTH_SALT: u64 = 0x6c65_6e67_7468_7321;

/// A new iterator every this many operations of the iterate phase, as the reference.
const JUMPS_PER_ITERATOR: u64 = 100;

/// Everything the phases share.
struct Plan<'a> {
    bench: Bench<'a>,
    args: &'a SequenceArgs,
    records: u64,
    pattern: ValuePattern,
    expected: Option<Expectations>,
}

/// What one thread of a reading phase found.
#[derive(Debug, Default)]
struct Tally {
    /// Keys not found, and the first of them.
    missing: u64,
    first_missing: Option<u64>,
    /// Keys holding something else than expected, and the first of them.
    wrong: u64,
    first_wrong: Option<u64>,
    /// Keys the remove phase found and removed.
    removed: u64,
}

/// Runs `kura perf sequence`.
pub fn run(args: &SequenceArgs) -> Result<()> {
    let common = &args.common;
    let records = common.records()?;
    let bench = Bench::new(common)?;
    let mut plan = Plan { bench, args, records, pattern: ValuePattern::new(common.size), expected: None };
    if args.validate {
        let expected = Expectations::replay(records, common.threads, common.iter, |id| plan.pickers(id));
        plan.expected = Some(expected);
        // The model is the checker's memory, not the database's.
        plan.bench.reset_memory();
    }
    let all = !(args.set_only || args.get_only || args.iter_only || args.remove_only);
    if all || args.set_only {
        plan.set_phase()?;
    }
    if all || args.get_only {
        plan.get_phase()?;
    }
    if all || args.iter_only {
        plan.iterate_phase()?;
    }
    if all || args.remove_only {
        plan.remove_phase()?;
    }
    Ok(())
}

impl Plan<'_> {
    /// The key and value-length pickers of thread `id`: the same in every phase.
    fn pickers(&self, id: usize) -> (KeyPicker, LengthPicker) {
        let common = &self.args.common;
        let keys = if self.args.random_key {
            KeyPicker::random(thread_rng(self.bench.seed, id), self.records)
        } else {
            KeyPicker::sequential(id, common.threads)
        };
        let lengths = self.args.random_value.then(|| thread_rng(self.bench.seed ^ LENGTH_SALT, id));
        (keys, LengthPicker::new(lengths, common.size))
    }

    fn set_phase(&self) -> Result<()> {
        let phase = Phase { name: "set", title: "Setting", mode: OpenMode::Create };
        self.bench.run_phase(
            phase,
            |db, id, stop| self.set_records(db, id, stop),
            |db, _| self.check_count(db),
        )
    }

    /// Drives thread `id`'s share of a phase: `op` gets the operation's index,
    /// the key's number and its text, for every key in turn until the phase
    /// is done or stopped.
    fn each_key(
        &self,
        mut keys: KeyPicker,
        id: usize,
        stop: &Stop,
        mut op: impl FnMut(u64, u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let iter = self.args.common.iter;
        let mut formatter = KeyFormatter::default();
        if self.args.report_every > 0 {
            // A loop of its own, so a run without the flag reads no clock.
            let mut timing = ThreadTiming::start(self.args.report_every, id == 0);
            for i in 0..iter {
                if stop.is_set() {
                    return Ok(());
                }
                let key = keys.next(i);
                let key_text = formatter.format(key);
                let started = Instant::now();
                op(i, key, key_text)?;
                timing.tick(i + 1, started.elapsed());
            }
            timing.finish(iter);
            self.bench.timing().add(id, timing);
            return Ok(());
        }
        let mut progress = Progress::new(iter, id == 0);
        for i in 0..iter {
            if stop.is_set() {
                return Ok(());
            }
            let key = keys.next(i);
            op(i, key, formatter.format(key))?;
            progress.tick(i + 1);
        }
        progress.finish();
        Ok(())
    }

    fn set_records(&self, db: &dyn Dbm, id: usize, stop: &Stop) -> Result<()> {
        let (keys, mut lengths) = self.pickers(id);
        let every = self.args.sync_every;
        self.each_key(keys, id, stop, |i, key, key_text| {
            db.set(key_text, self.pattern.value(key, lengths.next()))?;
            if every > 0 && (i + 1) % every == 0 {
                db.synchronize(Durability::Hard)?;
            }
            Ok(())
        })
    }

    fn get_phase(&self) -> Result<()> {
        let phase = Phase { name: "get", title: "Getting", mode: OpenMode::Read };
        self.bench.run_phase(
            phase,
            |db, id, stop| self.get_records(db, id, stop),
            |db, tallies| {
                self.check_tallies(&tallies)?;
                self.check_count(db)
            },
        )
    }

    fn get_records(&self, db: &dyn Dbm, id: usize, stop: &Stop) -> Result<Tally> {
        if self.args.batch > 1 {
            return self.get_batches(db, id, stop);
        }
        let mut tally = Tally::default();
        self.each_key(self.pickers(id).0, id, stop, |_, key, key_text| {
            let Some(expected) = &self.expected else {
                // As the reference's get phase does: look the record up
                // without fetching its value.
                let found = db.contains(key_text)?.then_some(true);
                tally.record(key, found);
                return Ok(());
            };
            // Processing in place rather than `get` spares a copy of every value.
            let mut found = None;
            db.process(key_text, Access::ReadOnly, &mut |value| {
                if let Some(value) = value {
                    found = Some(expected.holds(&self.pattern, key, Some(value)));
                }
                Action::Keep
            })?;
            tally.record(key, found);
            Ok(())
        })?;
        Ok(tally)
    }

    /// The get phase with `--batch`: keys gather until a batch is full (or
    /// the thread's keys end), then one multi-key call looks them all up.
    fn get_batches(&self, db: &dyn Dbm, id: usize, stop: &Stop) -> Result<Tally> {
        let batch = self.args.batch as usize;
        let mut tally = Tally::default();
        let mut numbers: Vec<u64> = Vec::with_capacity(batch);
        let mut texts: Vec<Vec<u8>> = Vec::with_capacity(batch);
        let iter = self.args.common.iter;
        let mut look_up = |numbers: &mut Vec<u64>, texts: &mut Vec<Vec<u8>>| -> Result<()> {
            let keys: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
            match &self.expected {
                None => {
                    for (&key, found) in numbers.iter().zip(db.contains_multi(&keys)?) {
                        tally.record(key, found.then_some(true));
                    }
                }
                Some(expected) => {
                    for (&key, value) in numbers.iter().zip(db.get_multi(&keys)?) {
                        let found = value.map(|v| expected.holds(&self.pattern, key, Some(&v)));
                        tally.record(key, found);
                    }
                }
            }
            numbers.clear();
            texts.clear();
            Ok(())
        };
        self.each_key(self.pickers(id).0, id, stop, |i, key, key_text| {
            numbers.push(key);
            texts.push(key_text.to_vec());
            if numbers.len() == batch || i + 1 == iter {
                look_up(&mut numbers, &mut texts)?;
            }
            Ok(())
        })?;
        // A stopped phase leaves a partial batch: it is looked up too, so
        // every key the phase counted was read.
        if !numbers.is_empty() {
            look_up(&mut numbers, &mut texts)?;
        }
        Ok(tally)
    }

    fn iterate_phase(&self) -> Result<()> {
        let phase = Phase { name: "iterate", title: "Iterating", mode: OpenMode::Read };
        self.bench.run_phase(
            phase,
            |db, id, stop| self.jump_to_records(db, id, stop),
            |db, tallies| {
                self.check_tallies(&tallies)?;
                self.check_count(db)?;
                if self.expected.is_some() {
                    validating(|| self.walk_all(db))?;
                }
                Ok(())
            },
        )
    }

    /// The reference's iterate phase: each operation jumps an iterator to a key
    /// and reads the record there; a fresh iterator every hundred operations.
    fn jump_to_records(&self, db: &dyn Dbm, id: usize, stop: &Stop) -> Result<Tally> {
        let mut tally = Tally::default();
        let mut cursor = db.iter()?;
        self.each_key(self.pickers(id).0, id, stop, |i, key, key_text| {
            if i > 0 && i % JUMPS_PER_ITERATOR == 0 {
                cursor = db.iter()?;
            }
            // An unordered database refuses to jump to a key it lacks: a miss, tallied
            // with the others so the error counts them all.
            match cursor.jump(key_text) {
                Err(err) if err.kind() == ErrorKind::NotFound => {
                    tally.record(key, None);
                    return Ok(());
                }
                other => other?,
            }
            let found = cursor.get()?.map(|(found_key, value)| {
                if found_key == key_text {
                    self.expected.as_ref().is_none_or(|e| e.holds(&self.pattern, key, Some(&value)))
                } else {
                    // The iterator stands on another record: an error only with
                    // --validate, as the reference reads whatever it finds.
                    self.expected.is_none()
                }
            });
            tally.record(key, found);
            Ok(())
        })?;
        Ok(tally)
    }

    /// Walks every record with an iterator from the first: each must be a key the
    /// set phase stored, holding its value, and the walk must meet every one once.
    fn walk_all(&self, db: &dyn Dbm) -> Result<()> {
        let Some(expected) = &self.expected else { return Ok(()) };
        let mut seen = vec![false; self.records as usize];
        let mut visited = 0u64;
        let mut cursor = db.iter()?;
        cursor.first()?;
        while let Some((key, value)) = cursor.get()? {
            let number = parse_key(&key).filter(|&n| n < self.records);
            let Some(number) = number.filter(|&n| expected.holds(&self.pattern, n, Some(&value))) else {
                return Err(self.bench.broken(format!(
                    "the iterator found record {} with a value of {} bytes that the set phase did not store",
                    String::from_utf8_lossy(&key),
                    value.len()
                )));
            };
            let duplicates = self.bench.opener.updates() == (Updates::Deferred { duplicates: true });
            if std::mem::replace(&mut seen[number as usize], true) && !duplicates {
                return Err(self
                    .bench
                    .broken(format!("the iterator visited record {} twice", String::from_utf8_lossy(&key))));
            }
            visited += 1;
            cursor.next()?;
        }
        if visited != self.stored(expected) {
            return Err(self.bench.broken(format!(
                "the iterator visited {visited} records, but the set phase stored {}",
                self.stored(expected)
            )));
        }
        Ok(())
    }

    fn remove_phase(&self) -> Result<()> {
        let phase = Phase { name: "remove", title: "Removing", mode: OpenMode::Write };
        self.bench.run_phase(
            phase,
            |db, id, stop| self.remove_records(db, id, stop),
            |db, tallies| {
                let Some(expected) = &self.expected else { return Ok(()) };
                // Threads racing on a key: exactly one of them finds it, unless
                // removes show only at the end, when every remove finds its key.
                let removed: u64 = tallies.iter().map(|t| t.removed).sum();
                let finds = match self.bench.opener.updates() {
                    Updates::Immediate => expected.present(),
                    Updates::Deferred { .. } => self.total_ops(),
                };
                let count = db.count()?;
                if removed != finds || count != 0 {
                    return Err(self.bench.broken(format!(
                        "the remove phase found {removed} records and left {count}, but {finds} removes \
                         should have found theirs"
                    )));
                }
                Ok(())
            },
        )
    }

    fn remove_records(&self, db: &dyn Dbm, id: usize, stop: &Stop) -> Result<Tally> {
        let mut tally = Tally::default();
        self.each_key(self.pickers(id).0, id, stop, |_, _, key_text| {
            tally.removed += u64::from(db.remove(key_text)?);
            Ok(())
        })?;
        Ok(tally)
    }

    /// With `--validate`, the record count must be the number of keys set
    /// (the number of sets, for a database that keeps every record of a key).
    fn check_count(&self, db: &dyn Dbm) -> Result<()> {
        let Some(expected) = &self.expected else { return Ok(()) };
        let count = db.count()?;
        let stored = self.stored(expected);
        if count != stored {
            return Err(self
                .bench
                .broken(format!("the database counts {count} records, but the set phase stored {stored}")));
        }
        Ok(())
    }

    /// The records the set phase leaves.
    fn stored(&self, expected: &Expectations) -> u64 {
        match self.bench.opener.updates() {
            Updates::Deferred { duplicates: true } => self.total_ops(),
            _ => expected.present(),
        }
    }

    /// Operations of a phase, all threads together.
    fn total_ops(&self) -> u64 {
        self.args.common.iter * self.args.common.threads as u64
    }

    /// Turns the readers' tallies into the phase's verdict.
    fn check_tallies(&self, tallies: &[Tally]) -> Result<()> {
        let missing: u64 = tallies.iter().map(|t| t.missing).sum();
        if let Some(key) = tallies.iter().filter_map(|t| t.first_missing).min() {
            return Err(self.bench.broken(format!(
                "{missing} records the set phase stored are missing, the first being {}",
                KeyFormatter::default().format(key).escape_ascii()
            )));
        }
        let wrong: u64 = tallies.iter().map(|t| t.wrong).sum();
        if let Some(key) = tallies.iter().filter_map(|t| t.first_wrong).min() {
            return Err(self.bench.broken(format!(
                "{wrong} records hold values the set phase did not leave, the first being {}",
                KeyFormatter::default().format(key).escape_ascii()
            )));
        }
        Ok(())
    }
}

impl Tally {
    /// Notes what a read of `key` found: `None` nothing, `Some(intact)` a record.
    #[inline]
    fn record(&mut self, key: u64, found: Option<bool>) {
        match found {
            Some(true) => {}
            Some(false) => {
                self.wrong += 1;
                self.first_wrong = Some(self.first_wrong.map_or(key, |k| k.min(key)));
            }
            None => {
                self.missing += 1;
                self.first_missing = Some(self.first_missing.map_or(key, |k| k.min(key)));
            }
        }
    }
}
