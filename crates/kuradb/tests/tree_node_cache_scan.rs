//! The tree's node cache resists walks: a cursor's walk over every leaf,
//! or an export, leaves the nodes random gets use cached, and the cache
//! never holds more than `max_cached_pages` nodes, nor leaves past three
//! quarters of them. Counts, never time.

use kuradb::caching::ThreadCacheCounts;
use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Action, Cursor, Dbm, Durability};

const RECORDS: u32 = 20_000;
const MAX_CACHED: usize = 320;

fn key(i: u32) -> Vec<u8> {
    format!("{i:08}").into_bytes()
}

fn inspected(db: &TreeDbm, key: &str) -> usize {
    let found = db.inspect().unwrap().into_iter().find(|(k, _)| k == key);
    found.unwrap().1.parse().unwrap()
}

fn cached_pages(db: &TreeDbm) -> usize {
    let cached = inspected(db, "cached_pages");
    assert!(cached <= MAX_CACHED, "{cached} nodes cached, past max_cached_pages {MAX_CACHED}");
    // Each of the 16 shards keeps a quarter of its 20 nodes for inner nodes.
    let leaves = inspected(db, "cached_leaves");
    assert!(leaves <= MAX_CACHED / 4 * 3, "{leaves} leaves cached, past three quarters of {MAX_CACHED}");
    cached
}

/// A tree of many more leaves than the cache holds.
fn tree(dir: &tempfile::TempDir, protected_percent: u8) -> TreeDbm {
    let options = TreeOptions::default()
        .max_page_size(1024)
        .max_cached_pages(MAX_CACHED)
        .cached_pages_protected_percent(protected_percent);
    let db = TreeDbm::open(dir.path().join("casket.kt"), Access::ReadWrite, &options).unwrap();
    for i in 0..RECORDS {
        db.set(&key(i), &[b'v'; 100]).unwrap();
        if i.is_multiple_of(1000) {
            cached_pages(&db);
        }
    }
    db.synchronize(Durability::Soft).unwrap();
    db
}

/// 40 keys far apart: 40 leaves and the inner nodes above them, fewer than
/// the protected share of each shard's 20 nodes even if spread unevenly.
fn working_set() -> Vec<Vec<u8>> {
    (0..40).map(|i| key(i * (RECORDS / 40) + 7)).collect()
}

fn get_all(db: &TreeDbm) {
    for k in working_set() {
        assert!(db.get(&k).unwrap().is_some());
    }
    cached_pages(db);
}

/// Gets the working set twice, walks with `walk`, and answers the node
/// cache's hit rate of a last round of gets.
fn hit_rate_after(db: &TreeDbm, walk: impl Fn(&TreeDbm)) -> f64 {
    get_all(db);
    get_all(db);
    walk(db);
    ThreadCacheCounts::take();
    get_all(db);
    ThreadCacheCounts::take().node_hit_rate().unwrap()
}

fn cursor_walk(db: &TreeDbm) {
    let mut cursor = db.cursor();
    cursor.first().unwrap();
    let mut n = 0u32;
    while cursor.get().unwrap().is_some() {
        cursor.next().unwrap();
        n += 1;
        if n.is_multiple_of(500) {
            cached_pages(db);
        }
    }
    assert_eq!(n, RECORDS);
}

fn export_walk(db: &TreeDbm) {
    let mut n = 0u32;
    db.process_each(Access::ReadOnly, &mut |_, _| {
        n += 1;
        Action::Keep
    })
    .unwrap();
    assert_eq!(n, RECORDS);
    cached_pages(db);
}

#[test]
fn a_cursor_walk_keeps_the_gets_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(&dir, 80);
    let rate = hit_rate_after(&db, cursor_walk);
    assert!(rate >= 0.9, "node hit rate {rate} after a cursor walk, want at least 0.9");
    db.close().unwrap();
}

#[test]
fn an_export_keeps_the_gets_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(&dir, 80);
    let rate = hit_rate_after(&db, export_walk);
    assert!(rate >= 0.9, "node hit rate {rate} after an export, want at least 0.9");
    db.close().unwrap();
}

/// With no protected share (a plain LRU) the walk evicts the leaves the
/// gets use: at most the inner nodes above them still hit.
#[test]
fn without_a_protected_share_a_walk_evicts_the_gets_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(&dir, 0);
    let rate = hit_rate_after(&db, cursor_walk);
    assert!(rate <= 0.7, "node hit rate {rate} with a plain LRU");
    db.close().unwrap();
}

#[test]
fn the_protected_share_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let options = TreeOptions::default().cached_pages_protected_percent(101);
    let err = TreeDbm::open(dir.path().join("casket.kt"), Access::ReadWrite, &options).err().unwrap();
    assert!(err.to_string().contains("cached_pages_protected_percent must be at most 100"), "{err}");
}
