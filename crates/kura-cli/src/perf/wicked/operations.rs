//! The operations of one wicked thread: the weighted mix of every database
//! call, compare-exchanges single and multi, housekeeping, walks of every
//! record and iterator walks, each checked against the thread's model of its
//! own keys when validating.

use kuradb::dbm::{Access, Action, OnDuplicate, Rekey, INCREMENT_UNCHANGED};
use kuradb::{ErrorKind, Result};
use rand::Rng;

use super::{Op, Worker, ITERATOR_STEPS, MAX_MULTI, TOTAL_WEIGHT, WEIGHTS};
use crate::perf::keys::{parse_key, KeyFormatter};
use crate::perf::model::{grow_or_drop, trim, Model, Outcome};

impl<'a> Worker<'a> {
    /// One operation of the weighted mix.
    pub(super) fn operate(&mut self) -> Result<()> {
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
                let text = self.keys[0].format(key);
                let stored = if overwrite { self.db.set(text, value) } else { self.db.insert(text, value) };
                let actual = allow(stored, &[ErrorKind::Duplication])?;
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
                let stored = if overwrite {
                    self.db.set_multi(&text_pairs)
                } else {
                    self.db.insert_multi(&text_pairs)
                };
                let actual = allow(stored, &[ErrorKind::Duplication])?;
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
                let rekey = if copying { Rekey::Copy } else { Rekey::Move };
                let on_duplicate = if overwrite { OnDuplicate::Replace } else { OnDuplicate::Fail };
                let result = self.db.rekey(old_text.format(old), new_text.format(new), rekey, on_duplicate);
                let actual = allow(result, &[ErrorKind::NotFound, ErrorKind::Duplication])?;
                let predicted = self.model.as_mut().map(|m| m.rekey(old, new, overwrite, copying));
                self.expect("rekey", old, &actual, predicted)
            }
            Op::Process => {
                let key = self.mutable_key();
                let limit = self.plan.pattern.size();
                let mut seen = None;
                self.db.process(self.keys[0].format(key), Access::ReadWrite, &mut |old| {
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
    pub(super) fn process_each(&mut self) -> Result<()> {
        let limit = self.plan.pattern.size();
        let (id, threads, records) = (self.id, self.threads, self.plan.records);
        let mut model = self.model.take();
        let mut own_seen = 0usize;
        let mut problem = None;
        let result = self.db.process_each(Access::ReadWrite, &mut |key, value| {
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
    pub(super) fn walk_iterator(&mut self) -> Result<()> {
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
