//! The cursor of BabyDbm and its ranges: the ordered cursor of the
//! on-memory databases over the tree's leaves, stepping within a leaf while
//! the leaf is unchanged and seeking its key afresh otherwise.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::{decode_value, BabyDbm, Inner, LeafCell, Node, Slot};
use crate::dbm::ordered_cursor::{Ordered, OrderedCursor, Spot};
use crate::dbm::{Cursor, Edge};
use crate::error::Result;

/// A position in a [`BabyDbm`]: the key of its record, and the leaf where it
/// was seen. A move steps within that leaf while the leaf is unchanged and
/// looks the key up afresh otherwise, so concurrent updates never
/// invalidate it; a record removed under it leaves the position at the next.
pub type BabyCursor<'a> = OrderedCursor<'a, BabyDbm>;

/// Where a cursor saw a record: its leaf, the leaf's version then, and the
/// record's index in it.
pub struct LeafPlace {
    leaf: Arc<LeafCell>,
    version: u64,
    index: usize,
}

impl LeafPlace {
    /// Record `index` of the leaf, in the buffers of `recycled` if given.
    fn spot(
        slot: &Slot,
        cell: &Arc<LeafCell>,
        index: usize,
        recycled: Option<Spot<LeafPlace>>,
    ) -> Spot<LeafPlace> {
        let (key, value) = slot.leaf.record(index);
        let place = LeafPlace { leaf: cell.clone(), version: slot.version, index };
        Spot::fill(recycled, key, decode_value(value), place)
    }
}

impl BabyDbm {
    /// An ordered cursor, not yet positioned.
    pub fn cursor(&self) -> BabyCursor<'_> {
        OrderedCursor::new(self)
    }

    /// The records whose keys fall in `range`, in order. Each step moves
    /// within its leaf if the leaf is unchanged and looks its key up afresh
    /// otherwise, so concurrent updates never invalidate the iterator.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<BabyRange<'_>> {
        let owned = |b: Bound<&K>| b.map(|k| k.as_ref().to_vec());
        Ok(BabyRange {
            cursor: self.cursor(),
            start: Some(owned(range.start_bound())),
            end: owned(range.end_bound()),
            done: false,
        })
    }
}

impl Ordered for BabyDbm {
    type Place = LeafPlace;

    /// A descent to the leaf, then from leaf to leaf through the inner nodes.
    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot<LeafPlace>>,
    ) -> Result<Option<Spot<LeafPlace>>> {
        let root = self.root.read();
        // The inner nodes above the current leaf and the child taken in each.
        let mut path: Vec<(&Inner, usize)> = Vec::new();
        let edge = |inner: &Inner| if forward { 0 } else { inner.children.len() - 1 };
        let mut node: &Node = &root;
        while let Node::Inner(inner) = node {
            let i = key.map_or_else(|| edge(inner), |k| self.child_index(inner, k));
            path.push((inner, i));
            node = &inner.children[i];
        }
        loop {
            let Node::Leaf(cell) = node else { return Ok(None) };
            let slot = cell.slot.read();
            let leaf = &slot.leaf;
            if let Some(index) = leaf.seek_index(key, self.cmp, forward, inclusive) {
                return Ok(Some(LeafPlace::spot(&slot, cell, index, recycled)));
            }
            drop(slot);
            // The neighbouring leaf: up to the first ancestor with a child
            // further that way, then down its nearest edge.
            loop {
                let Some((inner, i)) = path.pop() else { return Ok(None) };
                let next = if forward { i + 1 } else { i.wrapping_sub(1) };
                if next < inner.children.len() {
                    path.push((inner, next));
                    node = &inner.children[next];
                    break;
                }
            }
            while let Node::Inner(inner) = node {
                let i = edge(inner);
                path.push((inner, i));
                node = &inner.children[i];
            }
        }
    }

    fn holds(&self, spot: &Spot<LeafPlace>) -> bool {
        // The leaf is as it was seen: so is the record.
        spot.place.leaf.slot.read().version == spot.place.version
    }

    /// Within the leaf, while it is unchanged since and the record is in it.
    fn step_near(&self, spot: &mut Spot<LeafPlace>, step: isize) -> bool {
        let Spot { record, place: at } = spot;
        let slot = at.leaf.slot.read();
        if slot.version != at.version {
            return false;
        }
        let Some(index) = at.index.checked_add_signed(step).filter(|&i| i < slot.leaf.len()) else {
            return false;
        };
        let (k, v) = slot.leaf.record(index);
        record.copy_in(k, decode_value(v));
        drop(slot);
        at.index = index;
        true
    }
}

/// The records of a key range, in order (see [`BabyDbm::range`]).
pub struct BabyRange<'a> {
    cursor: BabyCursor<'a>,
    start: Option<Bound<Vec<u8>>>,
    end: Bound<Vec<u8>>,
    done: bool,
}

impl Iterator for BabyRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let moved = match self.start.take() {
            Some(Bound::Included(k)) => self.cursor.jump_upper(&k, Edge::Inclusive),
            Some(Bound::Excluded(k)) => self.cursor.jump_upper(&k, Edge::Exclusive),
            Some(Bound::Unbounded) => self.cursor.first(),
            None => Cursor::next(&mut self.cursor),
        };
        if let Err(e) = moved {
            self.done = true;
            return Some(Err(e));
        }
        let cmp = self.cursor.db().cmp;
        let found = self.cursor.seen().filter(|(k, _)| match &self.end {
            Bound::Included(end) => cmp.compare(k, end) != std::cmp::Ordering::Greater,
            Bound::Excluded(end) => cmp.compare(k, end) == std::cmp::Ordering::Less,
            Bound::Unbounded => true,
        });
        let Some((key, value)) = found else {
            self.done = true;
            return None;
        };
        Some(Ok((key.to_vec(), value.to_vec())))
    }
}
