//! A writer of records with expiry times killed at any moment leaves a
//! database whose records are exactly those of a synchronization: nothing
//! that had expired comes back, nothing that had not is lost, and every
//! record keeps the expiry time it was given.
//!
//! The writer is this test binary run again for the ignored test
//! [`expiry_crash_writer`]: a tree or hash database opened by `PolyDbm` with
//! `expiry=true`, to which it applies numbered batches of sets that never
//! expire, that expire far in the future, or that expire a millisecond
//! later; expiries set and taken away; appends (which keep the expiry) and
//! removals; each batch ends with a hard synchronization. The shared loop of
//! `common::crash` kills it after a random 5 to 150 ms. The database, opened
//! again, must hold the state after the last batch reported or after the
//! next one, the short-lived records gone in both.
//!
//! `KURA_KILLS` sets the number of kills (`scripts/kill-loop N
//! expiry_crash`); `KURADB_EXPIRY_CRASH_REPLAY` replays a run.

mod common;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::Path;
use std::time::Duration;

use common::crash::{self, Crash};
use common::hash::show;
use kuradb::dbm::expiry::Expiry;
use kuradb::dbm::params::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Dbm, Durability};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Set to reproduce a run.
const ENV_REPLAY: &str = "KURADB_EXPIRY_CRASH_REPLAY";
/// Kills per configuration in CI's run.
const KILLS: usize = 6;
const KEYS: u32 = 64;
/// An expiry time no run reaches: 2100-01-01.
const FAR: u64 = 4_102_444_800_000;
/// The life of a short-lived record: over before any check reads it.
const SHORT: Duration = Duration::from_millis(1);

/// A record as reads show it: its value and expiry time.
type Record = (Vec<u8>, Option<u64>);
type State = BTreeMap<Vec<u8>, Record>;

#[derive(Clone, Debug)]
enum Step {
    Set(Vec<u8>, Vec<u8>),
    SetFar(Vec<u8>, Vec<u8>),
    SetShort(Vec<u8>, Vec<u8>),
    ExpireFar(Vec<u8>),
    ExpireShort(Vec<u8>),
    Persist(Vec<u8>),
    Append(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
}

impl Step {
    fn key(&self) -> &[u8] {
        match self {
            Step::Set(k, _)
            | Step::SetFar(k, _)
            | Step::SetShort(k, _)
            | Step::ExpireFar(k)
            | Step::ExpireShort(k)
            | Step::Persist(k)
            | Step::Append(k, _)
            | Step::Remove(k) => k,
        }
    }
}

fn plan(seed: u64, batch: u64) -> Vec<Step> {
    let mut rng = SmallRng::seed_from_u64(seed ^ batch.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (0..12)
        .map(|i| {
            let key = format!("key{:03}", rng.gen_range(0..KEYS)).into_bytes();
            let value = format!("{batch}.{i}").into_bytes();
            match rng.gen_range(0..8) {
                0 => Step::Set(key, value),
                1 => Step::SetFar(key, value),
                2 => Step::SetShort(key, value),
                3 => Step::ExpireFar(key),
                4 => Step::ExpireShort(key),
                5 => Step::Persist(key),
                6 => Step::Append(key, value),
                _ => Step::Remove(key),
            }
        })
        .collect()
}

fn apply(state: &mut State, step: &Step) {
    match step {
        Step::Set(k, v) => drop(state.insert(k.clone(), (v.clone(), None))),
        Step::SetFar(k, v) => drop(state.insert(k.clone(), (v.clone(), Some(FAR)))),
        Step::SetShort(k, _) | Step::ExpireShort(k) | Step::Remove(k) => drop(state.remove(k)),
        Step::ExpireFar(k) => {
            if let Some(record) = state.get_mut(k) {
                record.1 = Some(FAR);
            }
        }
        Step::Persist(k) => {
            if let Some(record) = state.get_mut(k) {
                record.1 = None;
            }
        }
        Step::Append(k, v) => {
            let record = state.entry(k.clone()).or_insert((Vec::new(), None));
            record.0.extend_from_slice(v);
        }
    }
}

struct ExpiryCrash {
    name: &'static str,
    file: &'static str,
}

impl Crash for ExpiryCrash {
    type Db = PolyDbm;
    type State = State;

    const WRITER: &'static str = "expiry_crash_writer";
    const REPLAY: &'static str = ENV_REPLAY;
    const FILE: &'static str = "crash.db";
    const KILLS: usize = KILLS;
    const CONFIGS: usize = 2;
    const DELAY_MS: RangeInclusive<u64> = 5..=150;

    fn config(index: usize) -> ExpiryCrash {
        match index {
            0 => ExpiryCrash { name: "tree with expiry", file: "tree" },
            _ => ExpiryCrash { name: "hash with expiry", file: "hash" },
        }
    }

    fn name(&self) -> &str {
        self.name
    }

    fn open(&self, path: &Path, writable: bool) -> kuradb::Result<PolyDbm> {
        let access = if writable { Access::ReadWrite } else { Access::ReadOnly };
        let params = format!("dbm={},expiry=true", self.file);
        PolyDbm::open(path, access, &Params::parse(&params)?)
    }

    fn reopen(&self, path: &Path) -> kuradb::Result<PolyDbm> {
        self.open(path, false)
    }

    fn write(&self, db: &PolyDbm, seed: u64, batch: u64) {
        let layer = db.expiring().expect("opened with expiry");
        for step in plan(seed, batch) {
            match step {
                Step::Set(k, v) => db.set(&k, &v).expect("set"),
                Step::SetFar(k, v) => layer.set_expiring(&k, &v, Some(FAR)).expect("set far"),
                // The writer waits out each short life, so the next step
                // meets the record expired, as the model has it.
                Step::SetShort(k, v) => {
                    layer.set_with_ttl(&k, &v, SHORT).expect("set short");
                    std::thread::sleep(SHORT * 2);
                }
                Step::ExpireFar(k) => drop(layer.expire_at(&k, Some(FAR)).expect("expire far")),
                Step::ExpireShort(k) => {
                    layer.expire_after(&k, SHORT).expect("expire short");
                    std::thread::sleep(SHORT * 2);
                }
                Step::Persist(k) => drop(layer.persist(&k).expect("persist")),
                Step::Append(k, v) => db.append(&k, &v, b"").expect("append"),
                Step::Remove(k) => drop(db.remove(&k).expect("remove")),
            }
        }
    }

    fn synchronize(&self, db: &PolyDbm) {
        db.synchronize(Durability::Hard).expect("synchronize");
    }

    fn empty(&self) -> State {
        State::new()
    }

    fn apply(&self, state: &mut State, seed: u64, batch: u64) {
        for step in plan(seed, batch) {
            apply(state, &step);
        }
    }

    fn read(&self, db: &PolyDbm) -> Result<State, String> {
        // Every short-lived record written before the read is over by then.
        std::thread::sleep(SHORT * 2);
        let layer = db.expiring().ok_or("the database opened without its expiry layer")?;
        let mut state = State::new();
        let mut cursor = db.iter().map_err(|e| e.to_string())?;
        cursor.first().map_err(|e| e.to_string())?;
        while let Some((key, value)) = cursor.get().map_err(|e| e.to_string())? {
            let expiry = layer.expiry(&key).map_err(|e| e.to_string())?;
            let expiry = expiry.ok_or_else(|| format!("{} walked but gone for expiry()", show(&key)))?;
            state.insert(key, (value, expiry));
            cursor.next().map_err(|e| e.to_string())?;
        }
        drop(cursor);
        let count = db.count().map_err(|e| e.to_string())?;
        if count != state.len() as u64 {
            return Err(format!("count says {count}, the walk found {}", state.len()));
        }
        for (key, (value, _)) in &state {
            if db.get(key).map_err(|e| e.to_string())?.as_deref() != Some(value) {
                return Err(format!("get of {} differs from the walk", show(key)));
            }
        }
        Ok(state)
    }

    fn difference(&self, found: &State, expected: &State) -> String {
        let keys: std::collections::BTreeSet<&Vec<u8>> = found.keys().chain(expected.keys()).collect();
        let differ: Vec<String> = keys
            .into_iter()
            .filter(|k| found.get(*k) != expected.get(*k))
            .take(4)
            .map(|k| format!("{}: found {:?}, expected {:?}", show(k), found.get(k), expected.get(k)))
            .collect();
        differ.join("; ")
    }

    /// Each batch ends with a hard synchronization: the last reported state
    /// or the next one, whole.
    fn judge(&self, found: &State, last: &State, seed: u64, open_batch: u64) -> Result<String, String> {
        if found == last {
            return Ok("the reported state".to_string());
        }
        let mut next = last.clone();
        self.apply(&mut next, seed, open_batch);
        if *found == next {
            return Ok("the next batch synchronized, unreported".to_string());
        }
        if self.file == "hash" {
            // A hash updated in place restores each record on its own: every
            // key holds its synchronized record or one the next batch gave it.
            let mut during = last.clone();
            let mut allowed: BTreeMap<Vec<u8>, Vec<Option<Record>>> = BTreeMap::new();
            for step in plan(seed, open_batch) {
                apply(&mut during, &step);
                let key = step.key();
                allowed.entry(key.to_vec()).or_default().push(during.get(key).cloned());
            }
            let keys: std::collections::BTreeSet<&Vec<u8>> = found.keys().chain(last.keys()).collect();
            for key in keys {
                let got = found.get(key).cloned();
                if got != last.get(key).cloned() && !allowed.get(key).is_some_and(|a| a.contains(&got)) {
                    return Err(format!(
                        "{} holds {got:?}; it was synchronized as {:?} and batch {open_batch} did not write that",
                        show(key),
                        last.get(key)
                    ));
                }
            }
            return Ok("a state inside the next batch".to_string());
        }
        Err(format!(
            "neither the reported state ({}) nor batch {open_batch}'s ({})",
            self.difference(found, last),
            self.difference(found, &next)
        ))
    }

    fn write_after(&self, db: &PolyDbm, mut state: State, kill: usize) -> Result<State, String> {
        let layer = db.expiring().ok_or("the database opened without its expiry layer")?;
        let key = format!("after{kill}").into_bytes();
        layer
            .set_expiring(&key, b"still working", Some(FAR))
            .map_err(|e| format!("set after the kill: {e}"))?;
        state.insert(key, (b"still working".to_vec(), Some(FAR)));
        self.compare(db, &state)?;
        Ok(state)
    }

    fn compare(&self, db: &PolyDbm, state: &State) -> Result<(), String> {
        let found = self.read(db)?;
        if found != *state {
            return Err(self.difference(&found, state));
        }
        Ok(())
    }
}

/// Not a test by itself: the writer process (see `common::crash::writer`).
#[test]
#[ignore = "the child process of the expiry crash tests"]
fn expiry_crash_writer() {
    crash::writer::<ExpiryCrash>();
}

/// Killed writers of a tree with expiry lose no live record and bring back
/// no expired one.
#[test]
fn killed_tree_writer_with_expiry() {
    crash::kill_and_check::<ExpiryCrash>(0);
}

/// The same for a hash database.
#[test]
fn killed_hash_writer_with_expiry() {
    crash::kill_and_check::<ExpiryCrash>(1);
}
