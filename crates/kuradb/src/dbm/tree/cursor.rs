//! [`TreeCursor`]: the shared ordered cursor over the tree's leaves, and the
//! places in a leaf it keeps between moves.

use std::cmp::Ordering;
use std::sync::Arc;

use super::cache::Cell;
use super::state::Tree;
use super::KeyComparator;
use super::TreeDbm;
use crate::dbm::ordered_cursor::{copy_record, Ordered, OrderedCursor, Spot};
use crate::dbm::tree_node::Node;
use crate::error::Result;

/// A position in a tree database: the key of its record. Every move looks the
/// key up afresh, unless the record's leaf is unchanged since it was seen, so
/// concurrent updates never invalidate it; a record removed under it leaves
/// the position at the next one.
pub type TreeCursor<'a> = OrderedCursor<'a, TreeDbm>;

/// Where a cursor saw a record: record `index` of the leaf in `leaf`, whose
/// version was `version`, in a tree ordered by `cmp`.
///
/// Holding the leaf's cell, rather than its id, spares a walk the node
/// cache's lookup (a shard lock and a table probe) at every step, and keeps
/// the leaf cached while the cursor is on it: eviction passes held cells by.
/// A cell leaves the cache while held only by a discard or a clear, or with
/// its tree at a close or a rebuild, and each raises its version
/// ([`super::cache`]). So the cell alone tells whether the record holds, and
/// a step within the leaf takes no hold of the tree.
pub struct LeafPlace {
    leaf: Arc<Cell>,
    cmp: KeyComparator,
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
            let slot = cell.read();
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
                let place = LeafPlace { leaf: cell.clone(), cmp: self.cmp, version: cell.version(), index };
                return Ok(Some(Spot::fill(recycled, key, value, place)));
            }
            id = if forward { leaf.next } else { leaf.prev };
            if id == 0 {
                return Ok(None);
            }
        }
        Err(self.broken("the leaves' links loop".into()))
    }
}

impl LeafPlace {
    /// Whether the leaf is unchanged since, so that the record seen is
    /// still there, as it was seen. The version is read without the leaf's
    /// lock: the spot holds a copy of the record, so whether the leaf is
    /// changing at this moment does not matter, only whether a change has
    /// been made since.
    fn holds(&self) -> bool {
        self.leaf.version() == self.version
    }
}

/// Moves `spot` to the record `step` places (-1 or 1) from it within its
/// leaf, if the leaf is unchanged since and the record is in it; answers
/// whether it did. The spot keeps its hold on the leaf: a walk through a
/// leaf takes no hold of its own per record.
fn step_in_leaf(spot: &mut Spot<LeafPlace>, step: isize) -> bool {
    let Spot { key: seen_key, value: seen_value, place: at } = spot;
    let slot = at.leaf.read();
    let Node::Leaf(leaf) = &slot.node else { return false };
    if at.leaf.version() != at.version {
        return false;
    }
    let Some(index) = at.index.checked_add_signed(step).filter(|&i| i < leaf.len()) else {
        return false;
    };
    // Only in order: a broken leaf must not send a walk round in a loop.
    let wanted = if step > 0 { Ordering::Greater } else { Ordering::Less };
    let (key, value) = leaf.record(index);
    if at.cmp.compare(key, seen_key) != wanted {
        return false;
    }
    copy_record((seen_key, seen_value), key, value);
    drop(slot);
    at.index = index;
    true
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

    /// False on a closed database too (its cells are retired), and in a
    /// process the database does not work in: the seek that follows says so.
    fn holds(&self, spot: &Spot<LeafPlace>) -> bool {
        self.owner.is_current() && spot.place.holds()
    }

    fn step_near(&self, spot: &mut Spot<LeafPlace>, step: isize) -> bool {
        self.owner.is_current() && step_in_leaf(spot, step)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::dbm::tree::{TreeDbm, TreeOptions};
    use crate::dbm::{Access, Cursor, Dbm};

    /// A tree of many small leaves: `key0000` to `key0199`, each `value`.
    pub(in crate::dbm::tree) fn small_leaves() -> (tempfile::TempDir, TreeDbm) {
        let dir = tempfile::tempdir().unwrap();
        let options = TreeOptions::default().max_page_size(256);
        let db = TreeDbm::open(dir.path().join("t.kdbt"), Access::ReadWrite, &options).unwrap();
        for i in 0..200 {
            db.set(format!("key{i:04}").as_bytes(), b"value").unwrap();
        }
        (dir, db)
    }

    fn record(key: &str, value: &str) -> Option<(Vec<u8>, Vec<u8>)> {
        Some((key.as_bytes().to_vec(), value.as_bytes().to_vec()))
    }

    #[test]
    fn a_clear_under_a_cursor_leaves_it_on_nothing() {
        let (_dir, db) = small_leaves();
        let mut cursor = db.cursor();
        cursor.jump(b"key0010").unwrap();
        assert_eq!(cursor.get().unwrap(), record("key0010", "value"));
        // The clear drops the cursor's leaf from the cache without changing it.
        db.clear().unwrap();
        assert_eq!(cursor.get().unwrap(), None);
        db.set(b"key0011", b"after").unwrap();
        cursor.next().unwrap();
        assert_eq!(cursor.get().unwrap(), None);
        cursor.jump(b"key0010").unwrap();
        assert_eq!(cursor.get().unwrap(), record("key0011", "after"));
    }

    #[test]
    fn after_a_rebuild_a_cursor_steps_into_the_new_tree() {
        let (_dir, db) = small_leaves();
        let mut cursor = db.cursor();
        cursor.jump(b"key0010").unwrap();
        assert_eq!(cursor.get().unwrap(), record("key0010", "value"));
        // The rebuild puts a new tree in place; the cursor still holds a leaf
        // of the old one, unchanged there.
        db.rebuild().unwrap();
        db.set(b"key0011", b"new").unwrap();
        cursor.next().unwrap();
        assert_eq!(cursor.get().unwrap(), record("key0011", "new"));
    }

    #[test]
    fn a_walk_in_a_cache_smaller_than_its_tree_reads_every_record_once() {
        let dir = tempfile::tempdir().unwrap();
        let options = TreeOptions::default().max_page_size(256).max_cached_pages(4);
        let db = TreeDbm::open(dir.path().join("t.kdbt"), Access::ReadWrite, &options).unwrap();
        for i in 0..500 {
            db.set(format!("key{i:04}").as_bytes(), format!("v{i}").as_bytes()).unwrap();
        }
        let mut cursor = db.cursor();
        cursor.first().unwrap();
        let mut seen = 0;
        while let Some((key, value)) = cursor.get().unwrap() {
            assert_eq!(key, format!("key{seen:04}").into_bytes());
            assert_eq!(value, format!("v{seen}").into_bytes());
            // Lookups elsewhere evict what they can meanwhile.
            assert!(db.get(format!("key{:04}", (seen * 7 + 250) % 500).as_bytes()).unwrap().is_some());
            seen += 1;
            cursor.next().unwrap();
        }
        assert_eq!(seen, 500);
    }
}
