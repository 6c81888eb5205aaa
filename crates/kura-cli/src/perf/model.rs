//! The model `kura perf wicked --validate` checks a database against: a map of
//! key numbers to values, and for every operation the outcome the database must
//! give, derived from the same rules the [`Dbm`] trait documents.

use std::borrow::Cow;
use std::collections::HashMap;

use kuradb::dbm::{Action, Dbm, INCREMENT_UNCHANGED};
use kuradb::ErrorKind;

use super::keys::parse_key;

/// What an operation answers when it succeeds, or the kind of its expected failure.
pub type Outcome<T> = std::result::Result<T, ErrorKind>;

/// The records of the keys one thread owns (or, merged, of the whole database).
#[derive(Debug, Default)]
pub struct Model {
    records: HashMap<u64, Vec<u8>>,
}

impl Model {
    /// The value of `key`.
    pub fn get(&self, key: u64) -> Option<&[u8]> {
        self.records.get(&key).map(Vec::as_slice)
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Forgets every record, as a clear of the database does.
    pub fn clear(&mut self) {
        self.records.clear();
    }

    /// Adds every record of `other` (the keys of different threads are disjoint).
    pub fn absorb(&mut self, other: Model) {
        self.records.extend(other.records);
    }

    /// Stores `value` (cursor set, and the other operations' common step).
    pub fn put(&mut self, key: u64, value: &[u8]) {
        self.records.insert(key, value.to_vec());
    }

    /// Removes `key`; answers whether it existed.
    pub fn remove(&mut self, key: u64) -> bool {
        self.records.remove(&key).is_some()
    }

    /// [`Dbm::set`].
    pub fn set(&mut self, key: u64, value: &[u8], overwrite: bool) -> Outcome<()> {
        if !overwrite && self.records.contains_key(&key) {
            return Err(ErrorKind::Duplication);
        }
        self.put(key, value);
        Ok(())
    }

    /// [`Dbm::append`].
    pub fn append(&mut self, key: u64, value: &[u8], delimiter: &[u8]) {
        match self.records.get_mut(&key) {
            Some(old) => {
                old.extend_from_slice(delimiter);
                old.extend_from_slice(value);
            }
            None => self.put(key, value),
        }
    }

    /// [`Dbm::compare_exchange`].
    pub fn compare_exchange(&mut self, key: u64, expected: Option<&[u8]>, desired: Option<&[u8]>) -> bool {
        if self.get(key) != expected {
            return false;
        }
        match desired {
            Some(value) => self.put(key, value),
            None => {
                self.remove(key);
            }
        }
        true
    }

    /// [`Dbm::increment`].
    pub fn increment(&mut self, key: u64, delta: i64, initial: i64) -> Outcome<i64> {
        let current = match self.get(key) {
            None => initial,
            Some(value) => i64::from_be_bytes(value.try_into().map_err(|_| ErrorKind::InvalidArgument)?),
        };
        if delta == INCREMENT_UNCHANGED {
            return Ok(current);
        }
        let next = current.wrapping_add(delta);
        self.put(key, &next.to_be_bytes());
        Ok(next)
    }

    /// [`Dbm::set_multi`].
    pub fn set_multi(&mut self, pairs: &[(u64, &[u8])], overwrite: bool) -> Outcome<()> {
        if !overwrite && pairs.iter().any(|(key, _)| self.records.contains_key(key)) {
            return Err(ErrorKind::Duplication);
        }
        for (key, value) in pairs {
            self.put(*key, value);
        }
        Ok(())
    }

    /// [`Dbm::remove_multi`].
    pub fn remove_multi(&mut self, keys: &[u64]) -> usize {
        keys.iter().filter(|&&key| self.remove(key)).count()
    }

    /// [`Dbm::compare_exchange_multi`].
    pub fn compare_exchange_multi(
        &mut self,
        expected: &[(u64, Option<&[u8]>)],
        desired: &[(u64, Option<&[u8]>)],
    ) -> bool {
        if !expected.iter().all(|(key, value)| self.get(*key) == *value) {
            return false;
        }
        for (key, value) in desired {
            match value {
                Some(value) => self.put(*key, value),
                None => {
                    self.remove(*key);
                }
            }
        }
        true
    }

    /// [`Dbm::rekey`].
    pub fn rekey(&mut self, old: u64, new: u64, overwrite: bool, copying: bool) -> Outcome<()> {
        let Some(value) = self.records.get(&old).cloned() else { return Err(ErrorKind::NotFound) };
        if old != new && !overwrite && self.records.contains_key(&new) {
            return Err(ErrorKind::Duplication);
        }
        self.records.insert(new, value);
        if !copying && old != new {
            self.remove(old);
        }
        Ok(())
    }

    /// Carries out what a record processor answered for `key`.
    pub fn apply(&mut self, key: u64, action: &Action) {
        match action {
            Action::Keep => {}
            Action::Remove => {
                self.remove(key);
            }
            Action::Set(value) => self.put(key, value),
        }
    }

    /// Compares a database with the model: the same count, and a walk over every
    /// record meets exactly the model's records. Answers what differs first.
    pub fn compare(&self, db: &dyn Dbm) -> kuradb::Result<Option<String>> {
        let mut visited = 0usize;
        let mut problem = None;
        db.process_each(kuradb::dbm::Access::ReadOnly, &mut |key, value| {
            visited += 1;
            if problem.is_none() {
                let expected = parse_key(key).and_then(|n| self.get(n));
                if expected != Some(value) {
                    problem = Some(match expected {
                        None => format!("record {} should not exist", key.escape_ascii()),
                        Some(expected) => format!(
                            "record {} holds {} bytes ({}…) rather than {} bytes ({}…)",
                            key.escape_ascii(),
                            value.len(),
                            value[..value.len().min(16)].escape_ascii(),
                            expected.len(),
                            expected[..expected.len().min(16)].escape_ascii()
                        ),
                    });
                }
            }
            Action::Keep
        })?;
        if problem.is_some() {
            return Ok(problem);
        }
        if visited != self.len() {
            return Ok(Some(format!("a walk met {visited} records, but the model holds {}", self.len())));
        }
        let count = db.count()?;
        if count != self.len() as u64 {
            return Ok(Some(format!(
                "the database counts {count} records, but the model holds {}",
                self.len()
            )));
        }
        Ok(None)
    }
}

/// The change wicked's `process` operation makes: a value shorter than `limit`
/// grows by one byte, a longer one is removed, an absent record stays absent.
pub fn grow_or_drop(old: Option<&[u8]>, limit: usize) -> Action<'static> {
    match old {
        None => Action::Keep,
        Some(value) if value.len() < limit => Action::Set(Cow::Owned([value, b"+"].concat())),
        Some(_) => Action::Remove,
    }
}

/// The change wicked's `process_each` walk makes: a value longer than `limit`
/// (grown by appends) is cut to it.
pub fn trim(value: &[u8], limit: usize) -> Action<'static> {
    if value.len() > limit {
        Action::Set(Cow::Owned(value[..limit].to_vec()))
    } else {
        Action::Keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_dbm_contract() {
        let mut model = Model::default();
        assert_eq!(model.set(1, b"a", false), Ok(()));
        assert_eq!(model.set(1, b"b", false), Err(ErrorKind::Duplication));
        model.append(1, b"c", b",");
        assert_eq!(model.get(1), Some(&b"a,c"[..]));
        assert!(!model.compare_exchange(1, Some(b"a"), None));
        assert!(model.compare_exchange(1, Some(b"a,c"), None));
        assert_eq!(model.increment(2, 5, 10), Ok(15));
        assert_eq!(model.increment(2, INCREMENT_UNCHANGED, 0), Ok(15));
        assert_eq!(model.increment(3, INCREMENT_UNCHANGED, 7), Ok(7));
        assert_eq!(model.get(3), None, "reading an absent number stores nothing");
        model.put(4, b"xyz");
        assert_eq!(model.increment(4, 1, 0), Err(ErrorKind::InvalidArgument));
        assert_eq!(model.set_multi(&[(5, b"e"), (2, b"f")], false), Err(ErrorKind::Duplication));
        assert_eq!(model.get(5), None);
        assert_eq!(model.remove_multi(&[2, 2, 9]), 1);
        assert_eq!(model.rekey(9, 10, true, false), Err(ErrorKind::NotFound));
        model.put(5, b"e");
        assert_eq!(model.rekey(4, 5, false, false), Err(ErrorKind::Duplication));
        assert_eq!(model.rekey(4, 5, true, true), Ok(()));
        assert_eq!((model.get(4), model.get(5)), (Some(&b"xyz"[..]), Some(&b"xyz"[..])));
        assert!(model.compare_exchange_multi(&[(4, Some(b"xyz")), (8, None)], &[(8, Some(b"h")), (4, None)]));
        assert_eq!((model.get(4), model.get(8)), (None, Some(&b"h"[..])));
        model.apply(8, &grow_or_drop(model.get(8), 2));
        assert_eq!(model.get(8), Some(&b"h+"[..]));
        model.apply(8, &grow_or_drop(model.get(8), 2));
        assert_eq!(model.get(8), None);
        assert_eq!(trim(b"abcdef", 3), Action::Set(Cow::Owned(b"abc".to_vec())));
        assert_eq!(trim(b"abc", 3), Action::Keep);
    }
}
