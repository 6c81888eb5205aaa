//! Secondary indexes: sets of (key, value) pairs in which one key may have
//! many values, kept in the order of the pairs so that every value of a key
//! is found with one ordered walk.
//!
//! A secondary index maps what a program searches by (a city, a tag, a
//! date) to the keys of the records in its main database; the program adds
//! a pair when it stores a record and removes it when the record goes. All
//! three indexes share the [`Index`] trait and its cursor, [`IndexCursor`]:
//!
//! - [`FileIndex`]: the pairs are the records of a [`TreeDbm`](crate::TreeDbm)
//!   file, each pair encoded as the record's key by
//!   [`encode_pair`](crate::dbm::pair::encode_pair) with an empty value,
//!   ordered by a pair comparator ([`KeyComparator::PairLexical`] and its
//!   numeric forms). It persists, and reopens with its pairs.
//! - [`MemIndex`]: the same records in a [`BabyDbm`](crate::BabyDbm), in memory.
//! - [`StdIndex`]: typed pairs (`K`, `V` any `Ord` types) in a `BTreeMap`
//!   of keys to their values, behind a reader-writer lock; no encoding at all.
//!
//! [`AnyIndex`] is a [`FileIndex`] or a [`MemIndex`], chosen by the path it
//! is opened with (empty: memory), as the bindings' `Index` classes open them.
//!
//! Every operation is thread-safe. A cursor keeps its position as a pair,
//! not as a place in memory, so pairs added or removed meanwhile never
//! invalidate it.
//!
//! ```
//! use kuradb::index::{Index, MemIndex};
//! # fn main() -> kuradb::Result<()> {
//! let index = MemIndex::new()?;
//! index.add(b"tokyo", b"user:17")?;
//! index.add(b"tokyo", b"user:3")?;
//! index.add(b"osaka", b"user:8")?;
//! assert_eq!(index.get_values(b"tokyo", 0)?, [b"user:17".to_vec(), b"user:3".to_vec()]);
//! assert!(index.check(b"osaka", b"user:8")?);
//! assert!(index.remove(b"osaka", b"user:8")?);
//! assert_eq!(index.count()?, 2);
//! # Ok(())
//! # }
//! ```

mod any;
mod cursor;
mod file;
mod mem;
mod pairs;
mod std_index;
mod values;

pub use any::AnyIndex;
pub use cursor::{IndexCursor, PairCursor};
pub use file::FileIndex;
pub use mem::MemIndex;
pub use std_index::{StdCursor, StdIndex};

use crate::dbm::comparator::KeyComparator;
use crate::error::{Error, ErrorKind, Result};

/// The operations every secondary index offers. Keys and values are byte
/// strings (`[u8]`) for [`FileIndex`] and [`MemIndex`], and any `Ord` types
/// for [`StdIndex`].
pub trait Index: Send + Sync {
    /// What the index is searched by.
    type Key: ?Sized + ToOwned;
    /// What a key leads to (typically a primary key of another database).
    type Value: ?Sized + ToOwned;

    /// Adds the pair; adding a pair already there changes nothing.
    fn add(&self, key: &Self::Key, value: &Self::Value) -> Result<()>;

    /// Removes the pair; answers whether it was there.
    fn remove(&self, key: &Self::Key, value: &Self::Value) -> Result<bool>;

    /// Whether the pair is there.
    fn check(&self, key: &Self::Key, value: &Self::Value) -> Result<bool>;

    /// The values of `key`, in order; at most `max` of them, or all if
    /// `max` is 0.
    fn get_values(&self, key: &Self::Key, max: usize) -> Result<Vec<<Self::Value as ToOwned>::Owned>>;

    /// The number of pairs.
    fn count(&self) -> Result<u64>;

    /// Removes every pair.
    fn clear(&self) -> Result<()>;

    /// A cursor over the pairs in order, not yet positioned.
    fn cursor(&self) -> Result<Box<dyn IndexCursor<Self::Key, Self::Value> + '_>>;
}

/// Refuses an order that is not a pair order: an index's records are
/// encoded pairs, and any other order would scatter a key's values.
fn pair_order(cmp: KeyComparator) -> Result<KeyComparator> {
    if cmp.is_pair() {
        return Ok(cmp);
    }
    let pairs: Vec<&str> = KeyComparator::all().iter().filter(|c| c.is_pair()).map(|c| c.name()).collect();
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!("an index needs a pair comparator ({}), not {}", pairs.join(", "), cmp.name()),
    ))
}
