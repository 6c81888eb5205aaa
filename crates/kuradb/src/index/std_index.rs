//! StdIndex: typed pairs in a `BTreeSet` behind a reader-writer lock.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Included, Unbounded};

use parking_lot::RwLock;

use super::cursor::IndexCursor;
use super::Index;
use crate::error::Result;

/// A pair's second part, or a place before every value of a key: what lets
/// a search start at a key's first pair without knowing the least value of
/// `V`. The variant order makes `Least` sort first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot<V> {
    Least,
    Value(V),
}

/// A secondary index of typed keys and values in memory: a `BTreeSet` of
/// pairs, ordered by key then value, behind a reader-writer lock. Nothing
/// is encoded, so it is the fastest of the indexes for numbers.
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
    pairs: RwLock<BTreeSet<(K, Slot<V>)>>,
}

impl<K: Ord + Clone, V: Ord + Clone> StdIndex<K, V> {
    /// An empty index.
    pub fn new() -> StdIndex<K, V> {
        StdIndex { pairs: RwLock::new(BTreeSet::new()) }
    }

    fn pair(key: &K, value: &V) -> (K, Slot<V>) {
        (key.clone(), Slot::Value(value.clone()))
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
        self.pairs.write().insert(StdIndex::pair(key, value));
        Ok(())
    }

    fn remove(&self, key: &K, value: &V) -> Result<bool> {
        Ok(self.pairs.write().remove(&StdIndex::pair(key, value)))
    }

    fn check(&self, key: &K, value: &V) -> Result<bool> {
        Ok(self.pairs.read().contains(&StdIndex::pair(key, value)))
    }

    fn get_values(&self, key: &K, max: usize) -> Result<Vec<V>> {
        let pairs = self.pairs.read();
        let run = pairs.range((key.clone(), Slot::Least)..).take_while(|(k, _)| k == key);
        let limit = if max == 0 { usize::MAX } else { max };
        Ok(run.take(limit).filter_map(|(_, v)| value_of(v)).collect())
    }

    fn count(&self) -> Result<u64> {
        Ok(self.pairs.read().len() as u64)
    }

    fn clear(&self) -> Result<()> {
        self.pairs.write().clear();
        Ok(())
    }

    fn cursor(&self) -> Result<Box<dyn IndexCursor<K, V> + '_>> {
        Ok(Box::new(StdCursor { index: self, at: None }))
    }
}

fn value_of<V: Clone>(slot: &Slot<V>) -> Option<V> {
    match slot {
        Slot::Value(v) => Some(v.clone()),
        Slot::Least => None,
    }
}

/// The cursor of a [`StdIndex`]: it keeps the pair it is at and looks its
/// neighbours up afresh at every move, under the index's lock.
pub struct StdCursor<'a, K, V> {
    index: &'a StdIndex<K, V>,
    at: Option<(K, Slot<V>)>,
}

impl<K, V> StdCursor<'_, K, V>
where
    K: Ord + Clone,
    V: Ord + Clone,
{
    fn settle(&mut self, found: Option<&(K, Slot<V>)>) {
        self.at = found.cloned();
    }
}

impl<K, V> IndexCursor<K, V> for StdCursor<'_, K, V>
where
    K: Ord + Clone + Send + Sync,
    V: Ord + Clone + Send + Sync,
{
    fn first(&mut self) -> Result<()> {
        let index = self.index;
        let pairs = index.pairs.read();
        self.settle(pairs.first());
        Ok(())
    }

    fn last(&mut self) -> Result<()> {
        let index = self.index;
        let pairs = index.pairs.read();
        self.settle(pairs.last());
        Ok(())
    }

    fn jump(&mut self, key: &K, value: Option<&V>) -> Result<()> {
        let from = (key.clone(), value.map_or(Slot::Least, |v| Slot::Value(v.clone())));
        let index = self.index;
        let pairs = index.pairs.read();
        self.settle(pairs.range(from..).next());
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(at) = self.at.take() else { return Ok(()) };
        let index = self.index;
        let pairs = index.pairs.read();
        self.settle(pairs.range((Excluded(at), Unbounded)).next());
        Ok(())
    }

    fn previous(&mut self) -> Result<()> {
        let Some(at) = self.at.take() else { return Ok(()) };
        let index = self.index;
        let pairs = index.pairs.read();
        self.settle(pairs.range((Unbounded, Excluded(at))).next_back());
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(K, V)>> {
        let Some(at) = &self.at else { return Ok(None) };
        // The pair may have been removed since the cursor reached it: then
        // the cursor is at the pair after it, as a tree's cursor would be.
        let index = self.index;
        let pairs = index.pairs.read();
        let found = pairs.range((Included(at), Unbounded)).next().cloned();
        drop(pairs);
        self.at = found;
        Ok(self.at.as_ref().and_then(|(k, v)| Some((k.clone(), value_of(v)?))))
    }
}
