//! Read views at one commit.

use std::cmp::Ordering;
use std::collections::HashSet;

use super::versions::AtView;
use super::{check_view, TransactionalDbm};
use crate::dbm::comparator::KeyComparator;
use crate::dbm::{Cursor, Dbm};
use crate::error::{Error, ErrorKind, Result};

/// A read view of a [`TransactionalDbm`] at one commit: every read sees the
/// database as that commit left it, whatever is written meanwhile. Dropping
/// it releases the old values it kept.
pub struct Snapshot<'db, D: Dbm + 'static> {
    db: &'db TransactionalDbm<D>,
    at: u64,
}

impl<'db, D: Dbm + 'static> Snapshot<'db, D> {
    pub(super) fn new(db: &'db TransactionalDbm<D>, at: u64) -> Snapshot<'db, D> {
        Snapshot { db, at }
    }

    /// The commit this view shows (0 before the first commit since opening).
    pub fn seq(&self) -> u64 {
        self.at
    }

    /// The value of `key` in this view.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.read_at(key, self.at)
    }

    /// Whether `key` is present in this view.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// The values of `keys` in this view.
    pub fn get_multi(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|key| self.get(key)).collect()
    }

    /// Every record of this view, in the database's key order if it has one.
    pub fn iter(&self) -> Result<SnapshotIter<'_, D>> {
        SnapshotIter::new(self.db, self.at, None, None)
    }

    /// The records with keys from `lower` (inclusive) to `upper`
    /// (exclusive), either end open when `None`, in key order. Only for a
    /// database with a key order ([`crate::dbm::txn::TransactionOptions::key_order`]).
    pub fn range(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Result<SnapshotIter<'_, D>> {
        SnapshotIter::new(self.db, self.at, lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec))
    }

    /// The keys of the records under `index_key` in the attached index
    /// `name` (see [`TransactionalDbm::attach_index`]) in this view, in
    /// byte order.
    pub fn index_values(&self, name: &str, index_key: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(self.db.index_values_at(name, index_key, self.at, |_, _| {})?.1)
    }

    /// The number of records in this view.
    pub fn count(&self) -> Result<u64> {
        let mut n = 0;
        for item in self.iter()? {
            item?;
            n += 1;
        }
        Ok(n)
    }
}

/// A walk of the records a view at `at` sees; the caller keeps the view open.
pub(super) fn iter_at<D: Dbm + 'static>(
    db: &TransactionalDbm<D>,
    at: u64,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
) -> Result<SnapshotIter<'_, D>> {
    SnapshotIter::new(db, at, lower, upper)
}

impl<D: Dbm + 'static> Drop for Snapshot<'_, D> {
    fn drop(&mut self) {
        self.db.close_view(self.at);
    }
}

/// The records of a view, from [`Snapshot::iter`] or [`Snapshot::range`].
///
/// It walks the database's cursor and answers each record as the view saw
/// it. Records the view holds but the database no longer does come from the
/// stored old values: in key order as the walk passes them where the
/// database is ordered, else after the walk, which then remembers the keys
/// it answered (memory in proportion to them).
pub struct SnapshotIter<'db, D: Dbm + 'static> {
    db: &'db TransactionalDbm<D>,
    at: u64,
    cursor: Box<dyn Cursor + 'db>,
    order: Option<KeyComparator>,
    upper: Option<Vec<u8>>,
    lower: Option<Vec<u8>>,
    last: Option<Vec<u8>>,
    visited: HashSet<Vec<u8>>,
    /// Unordered: the records only the old values hold, once the walk ended.
    tail: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    failed: bool,
}

impl<'db, D: Dbm + 'static> SnapshotIter<'db, D> {
    fn new(
        db: &'db TransactionalDbm<D>,
        at: u64,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Result<SnapshotIter<'db, D>> {
        let order = if db.inner.is_ordered() { db.options.key_order } else { None };
        if order.is_none() && (lower.is_some() || upper.is_some()) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a range needs a database with a key order (a tree or skip database, with \
                 TransactionOptions::key_order set)",
            ));
        }
        // The walk reads the database itself, which must hold the commits
        // the view sees; later ones are in the stored versions.
        db.flow.wait_applied(at);
        let mut cursor = db.inner.iter()?;
        match &lower {
            Some(lower) => cursor.jump(lower)?,
            None => cursor.first()?,
        }
        Ok(SnapshotIter {
            db,
            at,
            cursor,
            order,
            upper,
            lower,
            last: None,
            visited: HashSet::new(),
            tail: None,
            failed: false,
        })
    }

    fn in_range(&self, order: KeyComparator, key: &[u8]) -> bool {
        self.lower.as_ref().is_none_or(|lower| order.compare(key, lower) != Ordering::Less)
            && self.upper.as_ref().is_none_or(|upper| order.compare(key, upper) == Ordering::Less)
    }

    /// The database's next record, or `None` past the end (or the range).
    fn next_in_database(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some((key, value)) = self.cursor.get()? else {
            return Ok(None);
        };
        if let (Some(order), Some(upper)) = (self.order, &self.upper) {
            if order.compare(&key, upper) != Ordering::Less {
                return Ok(None);
            }
        }
        Ok(Some((key, value)))
    }

    fn next_ordered(&mut self, order: KeyComparator) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let current = self.next_in_database()?;
            let versions = self.db.versions.lock();
            check_view(&versions, self.at)?;
            // The smallest record only the old values still hold that the
            // walk is about to pass.
            let mut pick: Option<(&[u8], &[u8])> = None;
            if versions.newest() > self.at {
                for (key, version) in versions.changed_keys_since(self.at) {
                    let Some(before) = version.before.as_deref() else { continue };
                    let after_last =
                        self.last.as_ref().is_none_or(|last| order.compare(key, last) == Ordering::Greater);
                    let before_current =
                        current.as_ref().is_none_or(|(k, _)| order.compare(key, k) == Ordering::Less);
                    let smaller = pick.is_none_or(|(p, _)| order.compare(key, p) == Ordering::Less);
                    if after_last && before_current && smaller && self.in_range(order, key) {
                        pick = Some((key, before));
                    }
                }
            }
            if let Some((key, value)) = pick {
                let record = (key.to_vec(), value.to_vec());
                self.last = Some(record.0.clone());
                return Ok(Some(record));
            }
            let Some((key, value)) = current else {
                return Ok(None);
            };
            let seen = match versions.value_at(&key, self.at) {
                AtView::Current => Some(value),
                AtView::Before(before) => before.map(<[u8]>::to_vec),
            };
            drop(versions);
            self.cursor.next()?;
            if self.last.as_ref().is_some_and(|last| order.compare(&key, last) != Ordering::Greater) {
                continue;
            }
            self.last = Some(key.clone());
            if let Some(value) = seen {
                return Ok(Some((key, value)));
            }
        }
    }

    fn next_unordered(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if self.tail.is_none() {
            while let Some((key, value)) = self.next_in_database()? {
                self.cursor.next()?;
                let versions = self.db.versions.lock();
                check_view(&versions, self.at)?;
                let seen = match versions.value_at(&key, self.at) {
                    AtView::Current => Some(value),
                    AtView::Before(before) => before.map(<[u8]>::to_vec),
                };
                drop(versions);
                if !self.visited.insert(key.clone()) {
                    continue;
                }
                if let Some(value) = seen {
                    return Ok(Some((key, value)));
                }
            }
            let versions = self.db.versions.lock();
            check_view(&versions, self.at)?;
            let tail = versions
                .changed_keys_since(self.at)
                .filter(|(key, _)| !self.visited.contains(*key))
                .filter_map(|(key, version)| {
                    version.before.as_ref().map(|before| (key.to_vec(), before.clone()))
                })
                .collect();
            self.tail = Some(tail);
            self.visited = HashSet::new();
        }
        Ok(self.tail.as_mut().and_then(Vec::pop))
    }
}

impl<D: Dbm + 'static> Iterator for SnapshotIter<'_, D> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = match self.order {
            Some(order) => self.next_ordered(order),
            None => self.next_unordered(),
        };
        match next {
            Ok(record) => record.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
