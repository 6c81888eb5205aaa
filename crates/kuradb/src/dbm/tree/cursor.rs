//! [`TreeCursor`]: the shared ordered cursor over the tree's leaves, and the
//! places in a leaf it keeps between moves.

use std::cmp::Ordering;
use std::sync::Arc;

use super::cache::Cell;
use super::state::Tree;
use super::KeyComparator;
use super::TreeDbm;
use crate::dbm::ordered_cursor::{Ordered, OrderedCursor, SeenRecord, Spot};
use crate::dbm::tree_node::{Leaf, Node};
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
    /// Where the next record starts in the spot's buffer, which holds the
    /// record at `index` and copies of records after it, as the leaf packed
    /// them at `version` ([`Leaf::packed_from`]): while the version holds,
    /// they are the leaf's, and a step forward points the spot at the next
    /// of them. At the buffer's end when none is left.
    next_at: usize,
}

/// Bytes of the records from a cursor's on that a seek or a step copies
/// (the record itself whole, whatever its size): the next steps forward
/// find their records in the copy, and take no hold of the leaf (a shared
/// lock's two atomic writes cost a walk more than its copies). Both ask the
/// CPU to load them before they copy: a walk from a lookup reads on through
/// a leaf that is seldom in the CPU's cache, and the hardware prefetcher
/// takes a few lines to follow.
const AHEAD: usize = 1024;

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
        let (id, found_leaf) = match key {
            Some(k) => {
                let (id, cell) = self.descend(k, None)?;
                (id, Some(cell))
            }
            None if forward => (self.meta.lock().first, None),
            None => (self.meta.lock().last, None),
        };
        self.walk_from(id, found_leaf, forward, key, inclusive, recycled)
    }

    /// The first record at or after `key` (or before it, backward; at it
    /// only if `inclusive`), looked for from leaf `id` (whose cell is
    /// `found_leaf` if the caller has it) along the leaves' links. The
    /// caller knows no record of the leaves before `id` qualifies.
    fn walk_from(
        &self,
        mut id: u64,
        mut found_leaf: Option<Arc<Cell>>,
        forward: bool,
        key: Option<&[u8]>,
        inclusive: bool,
        recycled: Option<Spot<LeafPlace>>,
    ) -> Result<Option<Spot<LeafPlace>>> {
        if id == 0 {
            return Ok(None);
        }
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
                if forward {
                    leaf.prefetch_from(index, AHEAD);
                }
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
                let mut record = recycled.map(|spot| spot.record).unwrap_or_default();
                let next_at = copy_run(&mut record, leaf, index, if forward { AHEAD } else { 0 });
                let place =
                    LeafPlace { leaf: cell.clone(), cmp: self.cmp, version: cell.version(), index, next_at };
                return Ok(Some(Spot { record, place }));
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

    /// The id of the leaf beside this one, after it if `step` is positive
    /// (0 if there is none), while the leaf is unchanged since it was seen;
    /// `None` once it changed, when only a seek can tell.
    fn neighbour(&self, step: isize) -> Option<u64> {
        let slot = self.leaf.read();
        let Node::Leaf(leaf) = &slot.node else { return None };
        self.holds().then_some(if step > 0 { leaf.next } else { leaf.prev })
    }
}

/// Copies record `index` of `leaf` into `record`'s buffer, and after it the
/// records that follow within `ahead` bytes in all, and points `record` at
/// it; answers where the next record copied starts (the buffer's end if
/// none). The caller holds the leaf.
fn copy_run(record: &mut SeenRecord, leaf: &Leaf, index: usize, ahead: usize) -> usize {
    let buf = record.buffer();
    buf.clear();
    buf.extend_from_slice(leaf.packed_from(index, ahead));
    point_at(record, 0)
}

/// Points `record` at the record packed at `at` of its buffer; answers
/// where the next starts.
fn point_at(record: &mut SeenRecord, at: usize) -> usize {
    let (key_start, key_end, end) = Leaf::unpack_at(record.bytes(), at);
    record.point(key_start, key_end, end);
    end
}

/// Moves `spot` to the record `step` places (-1 or 1) from it within its
/// leaf, if the leaf is unchanged since and the record is in it; answers
/// whether it did. The spot keeps its hold on the leaf: a walk through a
/// leaf takes no hold of its own per record, and a step forward takes the
/// leaf's lock only when it runs out of copies ahead.
fn step_in_leaf(spot: &mut Spot<LeafPlace>, step: isize) -> bool {
    let Spot { record, place: at } = spot;
    // The version is read without the leaf's lock, as `LeafPlace::holds`
    // reads it: unchanged, the copies ahead are the leaf's records.
    if step > 0 && at.next_at < record.bytes().len() && at.leaf.version() == at.version {
        let seen_key = cfg!(debug_assertions).then(|| record.key().to_vec());
        at.next_at = point_at(record, at.next_at);
        at.index += 1;
        debug_assert!(seen_key.is_none_or(|seen| at.cmp.compare(record.key(), &seen) == Ordering::Greater));
        return true;
    }
    let slot = at.leaf.read();
    let Node::Leaf(leaf) = &slot.node else { return false };
    if at.leaf.version() != at.version {
        return false;
    }
    let Some(index) = at.index.checked_add_signed(step).filter(|&i| i < leaf.len()) else {
        return false;
    };
    // A leaf's keys rise: every load checks that (`Node::decode`), every
    // change keeps it, and a merge refuses leaves whose keys would not
    // (`Tree::merge_leaf`), so the step needs no comparison to go forward.
    debug_assert_eq!(
        at.cmp.compare(leaf.key(index), record.key()),
        if step > 0 { Ordering::Greater } else { Ordering::Less }
    );
    let ahead = if step > 0 { AHEAD } else { 0 };
    // Asked for at once, the lines of a leaf not in the CPU's cache arrive
    // together rather than one after another as the copy reaches them.
    leaf.prefetch_from(index, ahead);
    at.next_at = copy_run(record, leaf, index, ahead);
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

    /// Off the end of a leaf unchanged since, along its link to the next
    /// (or previous) leaf rather than by a descent from the root: a walk
    /// crosses a leaf with one load. Under the tree's shared hold no leaf
    /// is discarded (that takes the exclusive hold), so the link read
    /// under the leaf's lock still leads to a leaf of the tree, and every
    /// key beyond it lies that way from the spot's.
    fn step_far(
        &self,
        spot: &Spot<LeafPlace>,
        step: isize,
        recycled: Option<Spot<LeafPlace>>,
    ) -> Result<Option<Spot<LeafPlace>>> {
        let tree = self.shared()?;
        let forward = step > 0;
        match spot.place.neighbour(step) {
            Some(id) => tree.walk_from(id, None, forward, Some(spot.key()), false, recycled),
            None => tree.seek(forward, Some(spot.key()), false, recycled),
        }
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

    /// Walks every record of `small_leaves` forward (or backward), and at
    /// each original key changes what lies ahead: a key set just beyond it
    /// (splitting its leaf) must come next, a key removed ahead (often in
    /// the next leaf, which the walk then enters by its link) must not come.
    fn walk_while_changing_ahead(forward: bool) {
        let (_dir, db) = small_leaves();
        let mut keys: std::collections::BTreeSet<String> = (0..200).map(|i| format!("key{i:04}")).collect();
        let mut cursor = db.cursor();
        if forward {
            cursor.first().unwrap();
        } else {
            cursor.last().unwrap();
        }
        let (mut seen, mut removed) = (Vec::new(), 0);
        while let Some((key, _)) = cursor.get().unwrap() {
            let key = String::from_utf8(key).unwrap();
            seen.push(key.clone());
            if let Ok(n) = key[3..].parse::<i32>() {
                // Just after the key forward, just before it backward.
                let beside = if forward {
                    Some(format!("{key}+"))
                } else {
                    (n > 0).then(|| format!("key{:04}+", n - 1))
                };
                if let Some(beside) = beside.filter(|_| n % 3 == 0) {
                    db.set(beside.as_bytes(), b"new").unwrap();
                    keys.insert(beside);
                }
                let gone = format!("key{:04}", if forward { n + 2 } else { n - 2 });
                if n % 5 == 0 && db.remove(gone.as_bytes()).unwrap() {
                    keys.remove(&gone);
                    removed += 1;
                }
            }
            if forward {
                cursor.next().unwrap();
            } else {
                cursor.previous().unwrap();
            }
        }
        let expected: Vec<String> =
            if forward { keys.into_iter().collect() } else { keys.into_iter().rev().collect() };
        assert_eq!(seen, expected);
        assert!(removed > 30, "the walk removed {removed} keys ahead of it");
    }

    #[test]
    fn a_walk_forward_sees_what_is_set_and_removed_ahead_of_it() {
        walk_while_changing_ahead(true);
    }

    #[test]
    fn a_walk_backward_sees_what_is_set_and_removed_ahead_of_it() {
        walk_while_changing_ahead(false);
    }

    /// Records larger than what a step copies ahead, smaller, and empty,
    /// mixed: a walk either way answers each whole, in order, and a walk
    /// forward that a change interrupts answers the changed record.
    #[test]
    fn a_walk_reads_records_larger_and_smaller_than_its_copies_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let options = TreeOptions::default().max_page_size(4096);
        let db = TreeDbm::open(dir.path().join("t.kdbt"), Access::ReadWrite, &options).unwrap();
        let value = |i: usize| vec![b'a' + (i % 26) as u8; [0, 7, 300, 1000, 1100, 2500][i % 6]];
        for i in 0..300 {
            db.set(format!("key{i:04}").as_bytes(), &value(i)).unwrap();
        }
        let mut cursor = db.cursor();
        cursor.first().unwrap();
        for i in 0..300 {
            assert_eq!(
                cursor.get().unwrap(),
                Some((format!("key{i:04}").into_bytes(), value(i))),
                "forward {i}"
            );
            if i == 100 {
                // The next records are copies by now; the change must show.
                db.set(b"key0101", b"changed").unwrap();
                cursor.next().unwrap();
                assert_eq!(cursor.get().unwrap(), record("key0101", "changed"));
                db.set(b"key0101", &value(101)).unwrap();
                continue;
            }
            cursor.next().unwrap();
        }
        assert_eq!(cursor.get().unwrap(), None);
        cursor.last().unwrap();
        for i in (0..300).rev() {
            assert_eq!(
                cursor.get().unwrap(),
                Some((format!("key{i:04}").into_bytes(), value(i))),
                "backward {i}"
            );
            cursor.previous().unwrap();
        }
        assert_eq!(cursor.get().unwrap(), None);
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
