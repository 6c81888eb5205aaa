//! A leaf whose keys rise within it but not across leaves, or stray outside
//! the range its parent routes to it: every load accepts it (only the
//! order within a node is checked there), so the walks must catch it.

use super::cursor::tests::small_leaves;
use super::TreeDbm;
use crate::dbm::tree_node::Node;
use crate::dbm::{Cursor, Dbm};

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

/// The keys of leaf `id` and the id of the leaf after it.
fn leaf_keys(db: &TreeDbm, id: u64) -> (Vec<Vec<u8>>, u64) {
    db.exclusive(|tree| {
        let cell = tree.load(id)?;
        let slot = cell.read();
        let Node::Leaf(leaf) = &slot.node else { panic!("leaf {id} is an inner node") };
        Ok((leaf.records().map(|(k, _)| k.to_vec()).collect(), leaf.next))
    })
    .unwrap()
}

#[test]
fn a_merge_that_would_put_keys_out_of_order_is_refused_and_walks_still_end_in_order() {
    let (_dir, db) = misplaced_key();
    let first = db.exclusive(|tree| Ok(tree.meta.lock().first)).unwrap();
    // Empty the first two leaves down to a few records each, so that the
    // second merges into the first, whose last key is the stray one.
    let (keys, second) = leaf_keys(&db, first);
    let (second_keys, _) = leaf_keys(&db, second);
    let mut refused = None;
    let doomed = keys[..keys.len() - 5].iter().chain(&second_keys[..second_keys.len() - 4]);
    for key in doomed {
        if let Err(e) = db.remove(key) {
            refused.get_or_insert(e);
        }
    }
    let refused = refused.expect("a merge across the stray key is refused");
    assert!(refused.to_string().contains("out of order"), "{refused}");
    let (kept, _) = leaf_keys(&db, first);
    assert_eq!(kept.last().map(Vec::as_slice), Some(&b"zzz"[..]), "the first leaf is as it was");
    // A walk that changes each record it passes (so that its next step
    // seeks afresh) ends, in order.
    let mut cursor = db.cursor();
    cursor.first().unwrap();
    let mut seen: Vec<Vec<u8>> = Vec::new();
    while let Ok(Some((key, _))) = cursor.get() {
        assert!(seen.len() <= 300, "the walk goes round");
        if key.starts_with(b"key") {
            let _ = cursor.set(b"VALUE");
        }
        seen.push(key);
        if cursor.next().is_err() {
            break;
        }
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "the walk went out of order");
}
