//! The cursor of a [`ReferenceDbm`]: a position in its records, which are
//! in the file's order (for a tree or skip file, the key order).

use std::cmp::Ordering;
use std::path::Path;

use super::dbm::ReferenceDbm;
use super::read_only;
use crate::dbm::comparator::KeyComparator;
use crate::dbm::{Cursor, Edge};
use crate::error::Result;

pub(super) struct RecordCursor<'a> {
    db: &'a ReferenceDbm,
    path: &'a Path,
    order: Option<KeyComparator>,
    /// The index of the current record; past the end when there is none.
    at: usize,
}

impl<'a> RecordCursor<'a> {
    pub(super) fn new(
        db: &'a ReferenceDbm,
        path: &'a Path,
        order: Option<KeyComparator>,
    ) -> RecordCursor<'a> {
        RecordCursor { db, path, order, at: usize::MAX }
    }

    fn len(&self) -> usize {
        self.db.records().len()
    }

    /// The index of the first record whose key is not before `key` (or,
    /// with `after`, is after it), in an ordered file.
    fn bound(&self, order: KeyComparator, key: &[u8], after: bool) -> usize {
        self.db.records().partition_point(|(k, _)| match order.compare(k, key) {
            Ordering::Less => true,
            Ordering::Equal => after,
            Ordering::Greater => false,
        })
    }

    fn ordered(&self, what: &str) -> Result<KeyComparator> {
        self.order.ok_or_else(|| {
            crate::error::Error::new(
                crate::error::ErrorKind::NotImplemented,
                format!("{what} needs an ordered database; this one keeps no key order"),
            )
        })
    }
}

impl Cursor for RecordCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.at = 0;
        Ok(())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.at = match self.order {
            Some(order) => self.bound(order, key, false),
            None => self.db.records().iter().position(|(k, _)| &**k == key).unwrap_or(usize::MAX),
        };
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if self.at < self.len() {
            self.at += 1;
        }
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.db.records().get(self.at).map(|(k, v)| (k.to_vec(), v.to_vec())))
    }

    fn set(&mut self, _value: &[u8]) -> Result<()> {
        Err(read_only(self.path))
    }

    fn remove(&mut self) -> Result<()> {
        Err(read_only(self.path))
    }

    fn last(&mut self) -> Result<()> {
        self.ordered("last")?;
        self.at = self.len().checked_sub(1).unwrap_or(usize::MAX);
        Ok(())
    }

    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        let order = self.ordered("jump_lower")?;
        // The last record before `key` (or at it, if edge.is_inclusive()).
        self.at = self.bound(order, key, edge.is_inclusive()).checked_sub(1).unwrap_or(usize::MAX);
        Ok(())
    }

    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        let order = self.ordered("jump_upper")?;
        self.at = self.bound(order, key, !edge.is_inclusive());
        Ok(())
    }

    fn previous(&mut self) -> Result<()> {
        self.ordered("previous")?;
        self.at =
            if self.at < self.len() { self.at.checked_sub(1).unwrap_or(usize::MAX) } else { usize::MAX };
        Ok(())
    }
}
