//! A leaf whose keys rise within it but not across leaves, or stray outside
//! the range its parent routes to it: every load accepts it (only the
//! order within a node is checked there), so the walks must catch it.

use super::cursor::tests::small_leaves;
use super::TreeDbm;
use crate::dbm::tree_node::Node;

/// A tree of several leaves whose first leaf ends with a key that belongs
/// in the last one.
fn misplaced_key() -> (tempfile::TempDir, TreeDbm) {
    let (dir, db) = small_leaves();
    db.exclusive(|tree| {
        let first = tree.meta.lock().first;
        let cell = tree.load(first)?;
        let mut slot = cell.write();
        let Node::Leaf(leaf) = &mut slot.node else { panic!("the first leaf is an inner node") };
        leaf.push(b"zzz", b"stray");
        slot.changed();
        Ok(())
    })
    .unwrap();
    (dir, db)
}

#[test]
fn a_key_outside_its_leafs_range_fails_the_whole_check() {
    let (_dir, db) = misplaced_key();
    let err = db.exclusive(|tree| tree.check_whole()).unwrap_err();
    assert!(err.to_string().contains("outside the range its parent gives it"), "{err}");
}

#[test]
fn keys_falling_from_one_leaf_to_the_next_fail_a_walk_along_the_links() {
    let (_dir, db) = misplaced_key();
    let err = db.exclusive(|tree| tree.each_leaf(|_| Ok(()))).unwrap_err();
    assert!(err.to_string().contains("are out of order"), "{err}");
}
