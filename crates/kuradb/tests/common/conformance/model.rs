//! What a database should hold, for every class at once: the records a
//! reader sees now, each key's values in the order they were added, and, for
//! a class whose updates wait for the next synchronization, the updates
//! queued since the last one.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::Caps;

/// A record as the database hands it out.
pub type Record = (Vec<u8>, Vec<u8>);

/// The records a database of given capabilities should hold.
#[derive(Clone, Debug)]
pub struct Model {
    caps: Caps,
    /// What readers see: each key's values, oldest first (one value unless
    /// the class keeps duplicates).
    pub records: BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
    /// Updates not yet visible: a value added, or (`None`) every value of
    /// the key removed.
    pub pending: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Model {
    /// An empty database of these capabilities.
    pub fn new(caps: Caps) -> Model {
        Model { caps, records: BTreeMap::new(), pending: Vec::new() }
    }

    /// The capabilities the model follows.
    pub fn caps(&self) -> &Caps {
        &self.caps
    }

    /// The value a reader gets for `key`: its first record's.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.records.get(key).and_then(|values| values.first()).map(Vec::as_slice)
    }

    /// Whether readers see a record of `key`.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// What [`kuradb::dbm::Dbm::set`] does: adds a record beside the key's
    /// others in a class with duplicates, replaces the key's value otherwise.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        if self.caps.duplicates {
            self.update(key, Some(value));
        } else {
            self.replace(key, value);
        }
    }

    /// What a processor's [`kuradb::dbm::Action::Set`] does: every record of
    /// the key gives way to one of `value`.
    pub fn replace(&mut self, key: &[u8], value: &[u8]) {
        self.update(key, None);
        self.update(key, Some(value));
    }

    /// Removes every record of `key`.
    pub fn remove(&mut self, key: &[u8]) {
        self.update(key, None);
    }

    fn update(&mut self, key: &[u8], value: Option<&[u8]>) {
        let update = (key.to_vec(), value.map(<[u8]>::to_vec));
        if self.caps.deferred {
            self.pending.push(update);
        } else {
            apply(&mut self.records, update);
        }
    }

    /// What a synchronization, a rebuild or a close does: the queued updates
    /// become visible, in the order they were made.
    pub fn synchronize(&mut self) {
        for update in std::mem::take(&mut self.pending) {
            apply(&mut self.records, update);
        }
    }

    /// Removes every record, queued updates included.
    pub fn clear(&mut self) {
        self.records.clear();
        self.pending.clear();
    }

    /// The number of records readers see.
    pub fn count(&self) -> usize {
        self.records.values().map(Vec::len).sum()
    }

    /// Every record readers see, in the database's key order (byte order for
    /// an unordered class), a key's records oldest first.
    pub fn flat(&self) -> Vec<Record> {
        let mut all: Vec<Record> = self
            .records
            .iter()
            .flat_map(|(k, values)| values.iter().map(move |v| (k.clone(), v.clone())))
            .collect();
        if let Some(cmp) = self.caps.order {
            // Stable: a key's records keep their order.
            all.sort_by(|a, b| cmp.compare(&a.0, &b.0));
        }
        all
    }

    /// One value per key, as a class without duplicates holds them.
    pub fn map(&self) -> BTreeMap<Vec<u8>, Vec<u8>> {
        self.records.iter().filter_map(|(k, v)| Some((k.clone(), v.first()?.clone()))).collect()
    }

    /// Compares keys in the database's order (byte order if it has none).
    pub fn compare_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.caps.order {
            Some(cmp) => cmp.compare(a, b),
            None => a.cmp(b),
        }
    }
}

fn apply(records: &mut BTreeMap<Vec<u8>, Vec<Vec<u8>>>, (key, value): (Vec<u8>, Option<Vec<u8>>)) {
    match value {
        Some(v) => records.entry(key).or_default().push(v),
        None => drop(records.remove(&key)),
    }
}
