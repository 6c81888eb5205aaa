//! A key range of a skip database as an iterator, over its cursor.

use std::ops::{Bound, RangeBounds};

use super::{SkipCursor, SkipDbm};
use crate::dbm::{Cursor, Edge};
use crate::error::Result;

impl SkipDbm {
    /// The records whose keys fall in `range`, in order (every record of a
    /// repeated key).
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<SkipRange<'_>> {
        let mut cursor = self.cursor();
        match range.start_bound() {
            Bound::Included(k) => cursor.jump(k.as_ref())?,
            Bound::Excluded(k) => cursor.jump_upper(k.as_ref(), Edge::Exclusive)?,
            Bound::Unbounded => cursor.first()?,
        }
        let end = range.end_bound().map(|k| k.as_ref().to_vec());
        Ok(SkipRange { cursor, end, started: false, done: false })
    }
}

/// The records of a key range, in order (see [`SkipDbm::range`]).
pub struct SkipRange<'a> {
    cursor: SkipCursor<'a>,
    end: Bound<Vec<u8>>,
    started: bool,
    done: bool,
}

impl Iterator for SkipRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = (|| {
            if self.started {
                self.cursor.next()?;
            }
            self.started = true;
            self.cursor.get()
        })();
        let record = match step {
            Ok(Some(record)) => record,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let inside = match &self.end {
            Bound::Included(end) => record.0 <= *end,
            Bound::Excluded(end) => record.0 < *end,
            Bound::Unbounded => true,
        };
        if !inside {
            self.done = true;
            return None;
        }
        Some(Ok(record))
    }
}
