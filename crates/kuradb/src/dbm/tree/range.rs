//! [`TreeRange`]: the records of a key range, in order, by a cursor.

use std::cmp::Ordering;
use std::ops::Bound;

use super::TreeCursor;
use crate::dbm::{Cursor, Edge};
use crate::error::Result;

/// The records of a key range, in order (see [`TreeDbm::range`](super::TreeDbm::range)).
pub struct TreeRange<'a> {
    cursor: TreeCursor<'a>,
    start: Option<Bound<Vec<u8>>>,
    end: Bound<Vec<u8>>,
    /// The key last answered: each must come after it.
    last: Option<Vec<u8>>,
    done: bool,
}

impl<'a> TreeRange<'a> {
    /// The records from `start` to `end`, by `cursor`.
    pub(super) fn new(cursor: TreeCursor<'a>, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> TreeRange<'a> {
        TreeRange { cursor, start: Some(start), end, last: None, done: false }
    }
}

impl Iterator for TreeRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut step = || -> Result<Option<(Vec<u8>, Vec<u8>)>> {
            match self.start.take() {
                Some(Bound::Included(k)) => self.cursor.jump_upper(&k, Edge::Inclusive)?,
                Some(Bound::Excluded(k)) => self.cursor.jump_upper(&k, Edge::Exclusive)?,
                Some(Bound::Unbounded) => self.cursor.first()?,
                None => self.cursor.next()?,
            }
            let found = self.cursor.get()?;
            let t = self.cursor.db().shared()?;
            if let (Some((key, _)), Some(last)) = (&found, &self.last) {
                if t.cmp.compare(key, last) != Ordering::Greater {
                    return Err(t.broken("its keys are out of order".into()));
                }
            }
            self.last = found.as_ref().map(|(k, _)| k.clone());
            Ok(found.filter(|(k, _)| match &self.end {
                Bound::Included(end) => t.cmp.compare(k, end) != Ordering::Greater,
                Bound::Excluded(end) => t.cmp.compare(k, end) == Ordering::Less,
                Bound::Unbounded => true,
            }))
        };
        match step() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
