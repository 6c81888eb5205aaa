//! StdIndex: typed pairs in a `BTreeMap` of keys to their values, behind a
//! reader-writer lock.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use parking_lot::RwLock;

use super::cursor::IndexCursor;
use super::values::Values;
use super::Index;
use crate::error::Result;

/// A secondary index of typed keys and values in memory: a `BTreeMap` from
/// each key to its values (held in place while a key has one, in an ordered
/// set from the second on), behind a reader-writer lock. Nothing is encoded,
/// and a lookup compares keys alone and borrows its arguments, so it is the
/// fastest of the indexes.
///
/// ```
/// use kuradb::index::{Index, StdIndex};
/// # fn main() -> kuradb::Result<()> {
/// let ages: StdIndex<u32, String> = StdIndex::new();
/// ages.add(&31, &"carol".to_string())?;
/// ages.add(&25, &"bob".to_string())?;
/// ages.add(&31, &"alice".to_string())?;
/// assert_eq!(ages.get_values(&31, 0)?, ["alice", "carol"]);
/// let mut cursor = ages.cursor()?;
/// cursor.last()?;
/// assert_eq!(cursor.get()?, Some((31, "carol".to_string())));
/// # Ok(())
/// # }
/// ```
pub struct StdIndex<K, V> {
    pairs: RwLock<Pairs<K, V>>,
}

/// What the lock guards: the keys and their values, and the number of pairs
/// (a key may hold many, so the map's length is not it).
struct Pairs<K, V> {
    keys: BTreeMap<K, Values<V>>,
    count: u64,
}

impl<K: Ord + Clone, V: Ord + Clone> Pairs<K, V> {
    /// The first pair at or after (`key`, `value`), or at or after `key`'s
    /// first value without a value; strictly after it unless `inclusive`.
    fn seek(&self, key: &K, value: Option<&V>, inclusive: bool) -> Option<(K, V)> {
        let mut keys = self.keys.range((Included(key), Unbounded));
        let (k, values) = keys.next()?;
        if k == key {
            if let Some(value) = value {
                return match values.after(value, inclusive) {
                    Some(v) => Some((k.clone(), v.clone())),
                    None => keys.next().map(|(k, values)| (k.clone(), values.first().clone())),
                };
            }
        }
        Some((k.clone(), values.first().clone()))
    }

    /// The last pair strictly before (`key`, `value`).
    fn seek_back(&self, key: &K, value: &V) -> Option<(K, V)> {
        if let Some(v) = self.keys.get(key).and_then(|values| values.before(value)) {
            return Some((key.clone(), v.clone()));
        }
        let (k, values) = self.keys.range((Unbounded, Excluded(key))).next_back()?;
        Some((k.clone(), values.last().clone()))
    }
}

impl<K: Ord + Clone, V: Ord + Clone> StdIndex<K, V> {
    /// An empty index.
    pub fn new() -> StdIndex<K, V> {
        StdIndex { pairs: RwLock::new(Pairs { keys: BTreeMap::new(), count: 0 }) }
    }
}

impl<K: Ord + Clone, V: Ord + Clone> Default for StdIndex<K, V> {
    fn default() -> StdIndex<K, V> {
        StdIndex::new()
    }
}

impl<K, V> Index for StdIndex<K, V>
where
    K: Ord + Clone + Send + Sync,
    V: Ord + Clone + Send + Sync,
{
    type Key = K;
    type Value = V;

    fn add(&self, key: &K, value: &V) -> Result<()> {
        let mut pairs = self.pairs.write();
        // One search through the entry, though it costs a clone of the key
        // even when the key is there: a clone is cheaper than a second
        // walk down a large map.
        let added = match pairs.keys.entry(key.clone()) {
            Entry::Occupied(mut values) => values.get_mut().insert(value),
            Entry::Vacant(place) => {
                place.insert(Values::One(value.clone()));
                true
            }
        };
        pairs.count += u64::from(added);
        Ok(())
    }

    fn remove(&self, key: &K, value: &V) -> Result<bool> {
        let mut pairs = self.pairs.write();
        let Entry::Occupied(mut values) = pairs.keys.entry(key.clone()) else { return Ok(false) };
        let removed = if values.get().is_only(value) {
            values.remove();
            true
        } else {
            values.get_mut().remove(value)
        };
        pairs.count -= u64::from(removed);
        Ok(removed)
    }

    fn check(&self, key: &K, value: &V) -> Result<bool> {
        Ok(self.pairs.read().keys.get(key).is_some_and(|values| values.contains(value)))
    }

    fn get_values(&self, key: &K, max: usize) -> Result<Vec<V>> {
        let pairs = self.pairs.read();
        let Some(values) = pairs.keys.get(key) else { return Ok(Vec::new()) };
        let limit = if max == 0 { usize::MAX } else { max };
        let mut found = Vec::with_capacity(values.len().min(limit));
        found.extend(values.iter().take(limit).cloned());
        Ok(found)
    }

    fn count(&self) -> Result<u64> {
        Ok(self.pairs.read().count)
    }

    fn clear(&self) -> Result<()> {
        let mut pairs = self.pairs.write();
        pairs.keys.clear();
        pairs.count = 0;
        Ok(())
    }

    fn cursor(&self) -> Result<Box<dyn IndexCursor<K, V> + '_>> {
        Ok(Box::new(StdCursor { index: self, at: None }))
    }
}

/// The cursor of a [`StdIndex`]: it keeps the pair it is at and looks its
/// neighbours up afresh at every move, under the index's lock.
pub struct StdCursor<'a, K, V> {
    index: &'a StdIndex<K, V>,
    at: Option<(K, V)>,
}

impl<K, V> IndexCursor<K, V> for StdCursor<'_, K, V>
where
    K: Ord + Clone + Send + Sync,
    V: Ord + Clone + Send + Sync,
{
    fn first(&mut self) -> Result<()> {
        let pairs = self.index.pairs.read();
        self.at = pairs.keys.first_key_value().map(|(k, values)| (k.clone(), values.first().clone()));
        Ok(())
    }

    fn last(&mut self) -> Result<()> {
        let pairs = self.index.pairs.read();
        self.at = pairs.keys.last_key_value().map(|(k, values)| (k.clone(), values.last().clone()));
        Ok(())
    }

    fn jump(&mut self, key: &K, value: Option<&V>) -> Result<()> {
        self.at = self.index.pairs.read().seek(key, value, true);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some((key, value)) = self.at.take() else { return Ok(()) };
        self.at = self.index.pairs.read().seek(&key, Some(&value), false);
        Ok(())
    }

    fn previous(&mut self) -> Result<()> {
        let Some((key, value)) = self.at.take() else { return Ok(()) };
        self.at = self.index.pairs.read().seek_back(&key, &value);
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(K, V)>> {
        let Some((key, value)) = self.at.take() else { return Ok(None) };
        // The pair may have been removed since the cursor reached it: then
        // the cursor is at the pair after it, as a tree's cursor would be.
        self.at = self.index.pairs.read().seek(&key, Some(&value), true);
        Ok(self.at.clone())
    }
}
