//! Building a tree from records that come in key order, for a rebuild: the
//! leaves are filled whole and written one after another, then each level of
//! inner nodes is made over the one below, without a descent or a split per
//! record.

use std::cmp::Ordering;

use super::meta::Meta;
use super::state::Tree;
use crate::dbm::tree_node::{record_size, Inner, Leaf, Node, PackedSeparators, INNER_BASE};
use crate::error::Result;

/// A tree being built into an empty [`Tree`] nobody else uses: records go
/// in with [`BulkLoad::push`], in strictly rising key order, and
/// [`BulkLoad::finish`] makes the inner nodes and the tree's figures.
///
/// Leaves are filled as records arriving in order fill them through `set`
/// (up to `max_page_size`, a larger record alone), so a built tree has the
/// shape an ordered copy gave it, at the cost of a push a record.
pub(super) struct BulkLoad<'t> {
    tree: &'t Tree,
    /// The leaf being filled; its id is `leaf_id`.
    leaf: Leaf,
    leaf_id: u64,
    /// Every finished leaf's id and least key (empty for the first, which
    /// no separator routes to).
    leaves: Vec<(u64, Vec<u8>)>,
    count: u64,
}

impl<'t> BulkLoad<'t> {
    /// A build into `tree`, which must be empty (as a new file opens: one
    /// empty leaf, id 1) and held by the caller alone.
    pub(super) fn new(tree: &'t Tree) -> BulkLoad<'t> {
        BulkLoad { tree, leaf: Leaf::default(), leaf_id: 1, leaves: Vec::new(), count: 0 }
    }

    /// Adds a record after every one pushed before. A key that does not
    /// follow the previous one is a broken-data error: the source's order
    /// is damaged, and a tree built from it would miss records.
    pub(super) fn push(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        // The leaf being filled is empty only before the first record: a
        // full one is put in the tree just before the record that follows
        // it, below.
        let previous = self.leaf.len().checked_sub(1).map(|last| self.leaf.key(last));
        if previous.is_some_and(|p| self.tree.cmp.compare(p, key) != Ordering::Less) {
            return Err(self
                .tree
                .broken(format!("the keys to copy are out of order at record {}", self.count + 1)));
        }
        if self.leaf.len() > 0 && self.leaf.size() + record_size(key, value) > self.tree.max_page_size {
            self.end_leaf(true)?;
        }
        self.leaf.push(key, value);
        self.count += 1;
        Ok(())
    }

    /// Puts the leaf being filled in the tree, linked to the one before it
    /// and, if `more` follow, to the next id.
    fn end_leaf(&mut self, more: bool) -> Result<()> {
        let id = self.leaf_id;
        // A copy's buffers are as long as the records, with no slack for
        // the cache to hold, and the leaf being filled keeps its room for
        // the next one: one allocation a buffer a leaf, where filling each
        // leaf afresh would grow its buffers again and again.
        let mut leaf = self.leaf.clone();
        self.leaf.clear();
        leaf.prev = id - 1;
        leaf.next = if more { id + 1 } else { 0 };
        let least = if id == 1 { Vec::new() } else { leaf.key(0).to_vec() };
        self.leaves.push((id, least));
        // Leaf 1 replaces the empty one the new tree opened with.
        self.tree.insert(id, Node::Leaf(leaf), true);
        self.tree.trim()?;
        self.leaf_id += 1;
        Ok(())
    }

    /// Writes the last leaf, the inner nodes over the leaves, level by
    /// level, and the tree's figures.
    pub(super) fn finish(mut self) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        self.end_leaf(false)?;
        let last = self.leaf_id - 1;
        let mut level = std::mem::take(&mut self.leaves);
        let mut levels = 1;
        let mut next_inner = INNER_BASE;
        while level.len() > 1 {
            level = self.parents(&level, &mut next_inner)?;
            levels += 1;
        }
        let root = level[0].0;
        *self.tree.meta.lock() =
            Meta { root, first: 1, last, next_leaf: last + 1, next_inner, level: levels };
        self.tree.count.store(self.count, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// The inner nodes over `children` (each with its least key), as few as
    /// `max_branches` allows, their children shared out evenly so that none
    /// is small enough to merge; answers them with their least keys.
    fn parents(&self, children: &[(u64, Vec<u8>)], next_inner: &mut u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let nodes = children.len().div_ceil(self.tree.max_branches);
        let mut parents = Vec::with_capacity(nodes);
        for n in 0..nodes {
            let group = &children[n * children.len() / nodes..(n + 1) * children.len() / nodes];
            let keys: Vec<&[u8]> = group[1..].iter().map(|(_, least)| least.as_slice()).collect();
            let inner = Inner {
                keys: PackedSeparators::of(&keys),
                children: group.iter().map(|(id, _)| *id).collect(),
            };
            let id = *next_inner;
            *next_inner += 1;
            self.tree.insert(id, Node::Inner(inner), true);
            self.tree.trim()?;
            parents.push((id, group[0].1.clone()));
        }
        Ok(parents)
    }
}

#[cfg(test)]
mod tests {
    use super::BulkLoad;
    use crate::dbm::tree::state::Tree;
    use crate::dbm::tree::{TreeDbm, TreeOptions};
    use crate::dbm::tree_node::Node;
    use crate::dbm::{Access, Cursor, Dbm};
    use crate::error::{ErrorKind, Result};

    fn key(i: u64) -> Vec<u8> {
        format!("key{:06}", i.wrapping_mul(7919) % 1_000_000).into_bytes()
    }

    fn value(i: u64) -> Vec<u8> {
        // Sizes from 1 to 180 bytes, so that leaves end at different counts;
        // one in 97 larger than the smallest pages, alone in its leaf.
        let size = if i % 97 == 5 { 300 } else { 1 + (i * 31 % 180) as usize };
        vec![b'a' + (i % 26) as u8; size]
    }

    /// The depth of every leaf below `id` (all the same, or an error), and
    /// checks that each inner node has from two to `max_branches` children.
    fn depth(tree: &Tree, id: u64, max_branches: usize) -> Result<usize> {
        let children = match &tree.load(id)?.read().node {
            Node::Leaf(_) => return Ok(1),
            Node::Inner(inner) => inner.children.clone(),
        };
        assert!((2..=max_branches).contains(&children.len()), "inner node {id}: {} children", children.len());
        let depths = children.iter().map(|&c| depth(tree, c, max_branches)).collect::<Result<Vec<_>>>()?;
        assert!(depths.windows(2).all(|w| w[0] == w[1]), "leaves at depths {depths:?} below {id}");
        Ok(depths[0] + 1)
    }

    /// Checks the tree of `db` as a rebuild leaves it: whole, every leaf but
    /// the last full (the next record would not have fitted), the figures'
    /// level the leaves' depth.
    fn check_shape(db: &TreeDbm, page: usize, branches: usize) {
        db.exclusive(|tree| {
            tree.check_whole()?;
            let mut leaves: Vec<(usize, usize)> = Vec::new();
            tree.each_leaf(|slot| {
                if let Node::Leaf(leaf) = &slot.node {
                    let first =
                        leaf.records().next().map_or(0, |(k, v)| crate::dbm::tree_node::record_size(k, v));
                    leaves.push((leaf.size(), first));
                }
                Ok(())
            })?;
            for (i, pair) in leaves.windows(2).enumerate() {
                assert!(pair[0].0 + pair[1].1 > page, "leaf {i} of {} is not full: {pair:?}", leaves.len());
            }
            let meta = *tree.meta.lock();
            assert_eq!(depth(tree, meta.root, branches)?, meta.level as usize);
            Ok(())
        })
        .unwrap();
    }

    fn check_records(db: &TreeDbm, expected: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
        assert_eq!(db.count().unwrap(), expected.len() as u64);
        for (k, v) in expected {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
        }
        let mut cursor = db.cursor();
        cursor.last().unwrap();
        let mut backward = Vec::new();
        while let Some((k, _)) = cursor.get().unwrap() {
            backward.push(k);
            cursor.previous().unwrap();
        }
        backward.reverse();
        assert!(backward.iter().eq(expected.keys()), "a walk backward sees every record in order");
    }

    #[test]
    fn a_rebuilt_tree_has_full_leaves_even_inner_nodes_and_takes_changes() {
        for (records, page, branches) in
            [(0, 64, 3), (1, 64, 3), (40, 64, 3), (700, 256, 3), (3000, 512, 4), (2000, 8192, 256)]
        {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("b.kt");
            // A cache of two nodes: the build writes nodes back as it goes.
            let options =
                TreeOptions::default().max_page_size(page).max_branches(branches).max_cached_pages(2);
            let db = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
            let mut expected = std::collections::BTreeMap::new();
            for i in 0..records + records / 2 {
                db.set(&key(i), &value(i)).unwrap();
                expected.insert(key(i), value(i));
            }
            for i in (0..records + records / 2).step_by(3) {
                db.remove(&key(i)).unwrap();
                expected.remove(&key(i));
            }
            db.rebuild().unwrap();
            check_shape(&db, page, branches);
            check_records(&db, &expected);
            // The built tree splits and merges as any other.
            for i in 0..records {
                let k = key(i + 5000);
                db.set(&k, b"later").unwrap();
                expected.insert(k, b"later".to_vec());
                if i % 2 == 0 {
                    db.remove(&key(i)).unwrap();
                    expected.remove(&key(i));
                }
            }
            db.exclusive(|tree| tree.check_whole()).unwrap();
            check_records(&db, &expected);
            db.close().unwrap();
            let db = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
            db.exclusive(|tree| tree.check_whole()).unwrap();
            check_records(&db, &expected);
        }
    }

    #[test]
    fn keys_out_of_order_are_broken_data() {
        let dir = tempfile::tempdir().unwrap();
        let db = TreeDbm::open(dir.path().join("o.kt"), Access::ReadWrite, &TreeOptions::default()).unwrap();
        for second in [&b"a"[..], b"b"] {
            let err = db
                .exclusive(|tree| {
                    let mut load = BulkLoad::new(tree);
                    load.push(b"b", b"1")?;
                    load.push(second, b"2")
                })
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenData);
            assert!(err.to_string().contains("out of order at record 2"), "{err}");
        }
    }
}
