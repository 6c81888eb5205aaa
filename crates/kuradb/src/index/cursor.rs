//! Cursors over an index's pairs: the [`IndexCursor`] trait, and
//! [`PairCursor`], the one over a pair-ordered database.

use crate::dbm::pair::{decode_pair, encode_pair};
use crate::dbm::{show_key, Cursor};
use crate::error::{Error, ErrorKind, Result};

/// A position among an index's pairs, in their order. Moving past either
/// end leaves the cursor nowhere: [`IndexCursor::get`] answers `None`
/// until it is positioned again.
pub trait IndexCursor<K: ?Sized + ToOwned, V: ?Sized + ToOwned>: Send {
    /// Moves to the first pair.
    fn first(&mut self) -> Result<()>;
    /// Moves to the last pair.
    fn last(&mut self) -> Result<()>;
    /// Moves to the first pair at or after (`key`, `value`); with `value`
    /// `None`, to the first pair of `key` (or after it, if it has none).
    fn jump(&mut self, key: &K, value: Option<&V>) -> Result<()>;
    /// Moves to the next pair.
    fn next(&mut self) -> Result<()>;
    /// Moves to the previous pair.
    fn previous(&mut self) -> Result<()>;
    /// The pair at the position, or `None` if there is none.
    fn get(&mut self) -> Result<Option<(K::Owned, V::Owned)>>;
}

/// The cursor of [`FileIndex`](super::FileIndex) and
/// [`MemIndex`](super::MemIndex): a cursor of their database that decodes
/// each record's key into its pair.
pub struct PairCursor<'a> {
    inner: Box<dyn Cursor + 'a>,
}

impl<'a> PairCursor<'a> {
    pub(super) fn new(inner: Box<dyn Cursor + 'a>) -> PairCursor<'a> {
        PairCursor { inner }
    }
}

impl IndexCursor<[u8], [u8]> for PairCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.inner.first()
    }

    fn last(&mut self) -> Result<()> {
        self.inner.last()
    }

    fn jump(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.inner.jump(&encode_pair(key, value.unwrap_or(b"")))
    }

    fn next(&mut self) -> Result<()> {
        self.inner.next()
    }

    fn previous(&mut self) -> Result<()> {
        self.inner.previous()
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some((record, _)) = self.inner.get()? else { return Ok(None) };
        let (key, value) = decode_record(&record)?;
        Ok(Some((key.to_vec(), value.to_vec())))
    }
}

/// The pair a record's key holds, or an error naming a record that holds
/// none (one written into the index's file by other means).
pub(super) fn decode_record(record: &[u8]) -> Result<(&[u8], &[u8])> {
    decode_pair(record).ok_or_else(|| {
        Error::new(
            ErrorKind::BrokenData,
            format!("the index holds a record that is not a (key, value) pair: {}", show_key(record)),
        )
    })
}
