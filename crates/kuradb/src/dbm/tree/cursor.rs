//! [`TreeCursor`]: the shared ordered cursor over the tree's leaves, and the
//! places in a leaf it keeps between moves.

use std::cmp::Ordering;

use super::state::Tree;
use super::TreeDbm;
use crate::dbm::ordered_cursor::{Ordered, OrderedCursor, Spot};
use crate::dbm::tree_node::Node;
use crate::error::Result;

/// A position in a tree database: the key of its record. Every move looks the
/// key up afresh, unless the record's leaf is unchanged since it was seen, so
/// concurrent updates never invalidate it; a record removed under it leaves
/// the position at the next one.
pub type TreeCursor<'a> = OrderedCursor<'a, TreeDbm>;

/// Where a cursor saw a record: record `index` of leaf `leaf` at `version`.
pub struct LeafPlace {
    leaf: u64,
    version: u64,
    index: usize,
}

impl Tree {
    /// [`Ordered::seek`] in the tree: a descent to the leaf, then along the
    /// leaves' links.
    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot<LeafPlace>>,
    ) -> Result<Option<Spot<LeafPlace>>> {
        let (mut id, mut found_leaf) = match key {
            Some(k) => {
                let (id, cell) = self.descend(k, None)?;
                (id, Some(cell))
            }
            None if forward => (self.meta.lock().first, None),
            None => (self.meta.lock().last, None),
        };
        for _ in 0..self.leaf_bound() {
            let cell = match found_leaf.take() {
                Some(cell) => cell,
                None => self.load(id)?,
            };
            let slot = cell.slot.read();
            let Node::Leaf(leaf) = &slot.node else {
                return Err(self.broken("a leaf link is an inner node".into()));
            };
            if let Some(index) = leaf.seek_index(key, self.cmp, forward, inclusive) {
                // In a leaf whose keys are out of order (a damaged file) the
                // search may land on the wrong side of the key, and a walk
                // would go round for ever between two records.
                if let Some(key) = key {
                    let ordering = self.cmp.compare(leaf.record(index).0, key);
                    let wanted = if forward { Ordering::Greater } else { Ordering::Less };
                    if ordering != wanted && !(inclusive && ordering == Ordering::Equal) {
                        return Err(self.broken(format!("the keys of leaf {id} are out of order")));
                    }
                }
                let (key, value) = leaf.record(index);
                let place = LeafPlace { leaf: id, version: slot.version, index };
                return Ok(Some(Spot::fill(recycled, key, value, place)));
            }
            id = if forward { leaf.next } else { leaf.prev };
            if id == 0 {
                return Ok(None);
            }
        }
        Err(self.broken("the leaves' links loop".into()))
    }

    /// Whether `spot`'s leaf is cached and unchanged since, so that the
    /// record it saw is still there, as it saw it.
    fn unchanged(&self, spot: &Spot<LeafPlace>) -> bool {
        let at = &spot.place;
        self.cached(at.leaf).is_some_and(|cell| cell.slot.read().version == at.version)
    }

    /// The record `step` places (-1 or 1) from `spot` within its leaf, if
    /// the leaf is cached and unchanged since and the record is in it.
    fn step_in_leaf(
        &self,
        spot: &Spot<LeafPlace>,
        step: isize,
        recycled: &mut Option<Spot<LeafPlace>>,
    ) -> Option<Spot<LeafPlace>> {
        let at = &spot.place;
        let cell = self.cached(at.leaf)?;
        let slot = cell.slot.read();
        let Node::Leaf(leaf) = &slot.node else { return None };
        if slot.version != at.version {
            return None;
        }
        let index = at.index.checked_add_signed(step).filter(|&i| i < leaf.len())?;
        // Only in order: a broken leaf must not send a walk round in a loop.
        let wanted = if step > 0 { Ordering::Greater } else { Ordering::Less };
        let (key, value) = leaf.record(index);
        if self.cmp.compare(key, &spot.key) != wanted {
            return None;
        }
        let place = LeafPlace { leaf: at.leaf, version: at.version, index };
        Some(Spot::fill(recycled.take(), key, value, place))
    }
}

impl Ordered for TreeDbm {
    type Place = LeafPlace;

    fn seek(
        &self,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot<LeafPlace>>,
    ) -> Result<Option<Spot<LeafPlace>>> {
        self.shared()?.seek(forward, key, inclusive, recycled)
    }

    /// False on a closed database too: the seek that follows says so.
    fn holds(&self, spot: &Spot<LeafPlace>) -> bool {
        self.shared().is_ok_and(|t| t.unchanged(spot))
    }

    fn step_near(
        &self,
        spot: &Spot<LeafPlace>,
        step: isize,
        recycled: &mut Option<Spot<LeafPlace>>,
    ) -> Option<Spot<LeafPlace>> {
        self.shared().ok()?.step_in_leaf(spot, step, recycled)
    }
}
