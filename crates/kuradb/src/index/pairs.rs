//! The index operations over any pair-ordered database: what [`FileIndex`]
//! (over a tree) and [`MemIndex`] (over a BabyDbm) share.
//!
//! [`FileIndex`]: super::FileIndex
//! [`MemIndex`]: super::MemIndex

use super::cursor::{decode_record, PairCursor};
use crate::dbm::pair::encode_pair;
use crate::dbm::Dbm;
use crate::error::Result;

/// A database whose records are encoded pairs with empty values.
pub(super) struct Pairs<D> {
    pub db: D,
}

impl<D: Dbm> Pairs<D> {
    pub fn add(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.set(&encode_pair(key, value), b"")
    }

    pub fn remove(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.db.remove(&encode_pair(key, value))
    }

    pub fn check(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.db.contains(&encode_pair(key, value))
    }

    pub fn get_values(&self, key: &[u8], max: usize) -> Result<Vec<Vec<u8>>> {
        let mut cursor = self.db.iter()?;
        // The empty value is the least: the first pair of `key`, if any.
        cursor.jump(&encode_pair(key, b""))?;
        let mut values = Vec::new();
        while max == 0 || values.len() < max {
            let Some((record, _)) = cursor.get()? else { break };
            let (found, value) = decode_record(&record)?;
            // A numeric order keeps keys equal as numbers but different in
            // bytes apart ("1" and "01"), so a byte comparison ends the run.
            if found != key {
                break;
            }
            values.push(value.to_vec());
            cursor.next()?;
        }
        Ok(values)
    }

    pub fn cursor(&self) -> Result<PairCursor<'_>> {
        Ok(PairCursor::new(self.db.iter()?))
    }
}

/// Implements [`Index`](super::Index) for a type whose field `pairs` is a
/// [`Pairs`]: the file and memory indexes answer alike.
macro_rules! index_over_pairs {
    ($index:ty) => {
        impl $crate::index::Index for $index {
            type Key = [u8];
            type Value = [u8];

            fn add(&self, key: &[u8], value: &[u8]) -> $crate::error::Result<()> {
                self.pairs.add(key, value)
            }

            fn remove(&self, key: &[u8], value: &[u8]) -> $crate::error::Result<bool> {
                self.pairs.remove(key, value)
            }

            fn check(&self, key: &[u8], value: &[u8]) -> $crate::error::Result<bool> {
                self.pairs.check(key, value)
            }

            fn get_values(&self, key: &[u8], max: usize) -> $crate::error::Result<Vec<Vec<u8>>> {
                self.pairs.get_values(key, max)
            }

            fn count(&self) -> $crate::error::Result<u64> {
                self.pairs.db.count()
            }

            fn clear(&self) -> $crate::error::Result<()> {
                self.pairs.db.clear()
            }

            fn cursor(&self) -> $crate::error::Result<Box<dyn $crate::index::IndexCursor<[u8], [u8]> + '_>> {
                Ok(Box::new(self.pairs.cursor()?))
            }
        }
    };
}
pub(super) use index_over_pairs;
