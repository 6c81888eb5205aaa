//! The cursors of a shard set: merged in key order over ordered classes,
//! chained shard after shard over the others. Each checks that the record
//! it stands on belongs to its shard, so files mixed up between sets show
//! as an error naming both, not as a record seen twice.

use std::cmp::Ordering;

use super::ShardDbm;
use crate::dbm::comparator::KeyComparator;
use crate::dbm::ordered_cursor::past_end;
use crate::dbm::{Cursor, Edge};
use crate::error::Result;

/// A cursor over an ordered set: each shard's cursor, merged.
///
/// Moving forward, every shard's cursor but the current one stands on its
/// first record after the current key; moving backward, on its last record
/// before it. A key lives in one shard, so the shards never tie.
pub(super) struct MergeCursor<'a> {
    db: &'a ShardDbm,
    cursors: Vec<Box<dyn Cursor + 'a>>,
    /// What each cursor stands on.
    heads: Vec<Option<(Vec<u8>, Vec<u8>)>>,
    current: Option<usize>,
    order: KeyComparator,
    forward: bool,
}

impl<'a> MergeCursor<'a> {
    /// A cursor over `db` merging `cursors`, one per shard, not yet positioned.
    pub(super) fn new(db: &'a ShardDbm, cursors: Vec<Box<dyn Cursor + 'a>>, order: KeyComparator) -> Self {
        MergeCursor { db, cursors, heads: Vec::new(), current: None, order, forward: true }
    }

    /// Reads every cursor's record and picks the least (forward) or the
    /// greatest.
    fn pick(&mut self, forward: bool) -> Result<()> {
        self.heads = self.cursors.iter_mut().map(|c| c.get()).collect::<Result<_>>()?;
        self.forward = forward;
        self.current = None;
        for (i, head) in self.heads.iter().enumerate() {
            let Some((key, _)) = head else { continue };
            let better = match self.current.and_then(|c| self.heads[c].as_ref()) {
                None => true,
                Some((best, _)) => {
                    let order = self.order.compare(key, best);
                    if forward {
                        order == Ordering::Less
                    } else {
                        order == Ordering::Greater
                    }
                }
            };
            if better {
                self.current = Some(i);
            }
        }
        Ok(())
    }

    fn all(&mut self, forward: bool, f: impl Fn(&mut dyn Cursor) -> Result<()>) -> Result<()> {
        for cursor in &mut self.cursors {
            f(cursor.as_mut())?;
        }
        self.pick(forward)
    }

    fn current_key(&self) -> Option<Vec<u8>> {
        self.current.and_then(|c| self.heads[c].as_ref()).map(|(k, _)| k.clone())
    }
}

impl Cursor for MergeCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.all(true, |c| c.first())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.all(true, |c| c.jump(key))
    }

    fn next(&mut self) -> Result<()> {
        let (Some(current), Some(key)) = (self.current, self.current_key()) else { return Ok(()) };
        if !self.forward {
            for (i, cursor) in self.cursors.iter_mut().enumerate() {
                if i != current {
                    cursor.jump_upper(&key, Edge::Exclusive)?;
                }
            }
        }
        self.cursors[current].next()?;
        self.pick(true)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some(current) = self.current else { return Ok(None) };
        // The shard's own cursor answers: it sees the record as it is now.
        let record = self.cursors[current].get()?;
        let stood_on = self.heads[current].as_ref().map(|(key, _)| key.as_slice());
        if record.as_ref().map(|(key, _)| key.as_slice()) == stood_on {
            return placed(self.db, current, record);
        }
        // Someone else removed the record it stood on, and the shard's
        // cursor went on to that shard's next one: another shard's record
        // may come first now, or the shard may have none left.
        if !self.forward {
            if let Some(key) = stood_on.map(<[u8]>::to_vec) {
                self.cursors[current].jump_lower(&key, Edge::Exclusive)?;
            }
        }
        self.pick(self.forward)?;
        match self.current {
            Some(current) => placed(self.db, current, self.heads[current].clone()),
            None => Ok(None),
        }
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.current {
            Some(current) => self.cursors[current].set(value),
            None => Err(past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        let (Some(current), Some(key)) = (self.current, self.current_key()) else {
            return Err(past_end());
        };
        // The shard's own cursor goes on to its next record (another of
        // the same key, in a class that keeps duplicates); the others, which
        // hold no record of the key, stand after it already if the cursor
        // was moving forward.
        self.cursors[current].remove()?;
        if !self.forward {
            for (i, cursor) in self.cursors.iter_mut().enumerate() {
                if i != current {
                    cursor.jump_upper(&key, Edge::Exclusive)?;
                }
            }
        }
        self.pick(true)
    }

    fn last(&mut self) -> Result<()> {
        self.all(false, |c| c.last())
    }

    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.all(false, |c| c.jump_lower(key, edge))
    }

    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.all(true, |c| c.jump_upper(key, edge))
    }

    fn previous(&mut self) -> Result<()> {
        let (Some(current), Some(key)) = (self.current, self.current_key()) else { return Ok(()) };
        if self.forward {
            for (i, cursor) in self.cursors.iter_mut().enumerate() {
                if i != current {
                    cursor.jump_lower(&key, Edge::Exclusive)?;
                }
            }
        }
        self.cursors[current].previous()?;
        self.pick(false)
    }
}

/// `record`, which shard `index`'s cursor stands on, if it belongs there.
fn placed(
    db: &ShardDbm,
    index: usize,
    record: Option<(Vec<u8>, Vec<u8>)>,
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    if let Some((key, _)) = &record {
        db.check_placed(index, key)?;
    }
    Ok(record)
}

/// A cursor over an unordered set: the shards one after another.
pub(super) struct ChainCursor<'a> {
    db: &'a ShardDbm,
    cursors: Vec<Box<dyn Cursor + 'a>>,
    current: usize,
}

impl<'a> ChainCursor<'a> {
    /// A cursor over `db` walking `cursors`, one per shard, in turn.
    pub(super) fn new(db: &'a ShardDbm, cursors: Vec<Box<dyn Cursor + 'a>>) -> Self {
        ChainCursor { db, cursors, current: 0 }
    }

    /// Moves on to the next shard with a record while the current one has
    /// none, and answers the record it then stands on. A shard's cursor can
    /// also run out under the walk, when someone else removes the records
    /// it had left: the walk goes on in the next shard.
    fn settle(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        while let Some(cursor) = self.cursors.get_mut(self.current) {
            if let Some(record) = cursor.get()? {
                return Ok(Some(record));
            }
            self.current += 1;
            if let Some(next) = self.cursors.get_mut(self.current) {
                next.first()?;
            }
        }
        Ok(None)
    }
}

impl Cursor for ChainCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.current = 0;
        if let Some(cursor) = self.cursors.first_mut() {
            cursor.first()?;
        }
        self.settle().map(drop)
    }

    /// Moves to `key` itself, in its shard; then on through the shards after it.
    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let n = self.db.shards.len() as u64;
        self.current = (xxhash_rust::xxh3::xxh3_64(key) % n) as usize;
        self.cursors[self.current].jump(key)
    }

    fn next(&mut self) -> Result<()> {
        if self.current >= self.cursors.len() {
            return Ok(());
        }
        self.cursors[self.current].next()?;
        self.settle().map(drop)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let record = self.settle()?;
        placed(self.db, self.current, record)
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.cursors.get_mut(self.current) {
            Some(cursor) => cursor.set(value),
            None => Err(past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.cursors.get_mut(self.current) {
            Some(cursor) => cursor.remove()?,
            None => return Err(past_end()),
        }
        self.settle().map(drop)
    }
}
