//! A first check of the tree database: many records in random order with
//! tiny pages, against a BTreeMap, across reopening.

use std::collections::BTreeMap;

use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Cursor, Dbm, Durability};

#[test]
fn random_sets_and_removes_match_a_btreemap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kt");
    let mut o = TreeOptions::default().max_page_size(128).max_branches(4).max_cached_pages(8);
    o.hash.num_buckets = 101;
    let db = TreeDbm::open(&path, Access::ReadWrite, &o).unwrap();
    let mut model = BTreeMap::new();
    let mut x = 1u64;
    for i in 0..5000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = format!("{:05}", (x >> 33) % 2000).into_bytes();
        if i % 3 == 2 {
            assert_eq!(db.remove(&k).unwrap(), model.remove(&k).is_some());
        } else {
            let v = format!("v{i}").into_bytes();
            db.set(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i % 1000 == 999 {
            db.synchronize(if i % 2000 == 1999 { Durability::Hard } else { Durability::Soft }).unwrap();
        }
    }
    let check = |db: &TreeDbm, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
        assert_eq!(db.count().unwrap(), model.len() as u64);
        let all: Vec<_> = db.range::<&[u8]>(..).unwrap().map(|r| r.unwrap()).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all, want);
        let mut c = db.cursor();
        c.last().unwrap();
        let mut back = Vec::new();
        while let Some((k, _)) = c.get().unwrap() {
            back.push(k);
            c.previous().unwrap();
        }
        back.reverse();
        assert_eq!(back, model.keys().cloned().collect::<Vec<_>>());
    };
    check(&db, &model);
    db.close().unwrap();
    let db = TreeDbm::open(&path, Access::ReadWrite, &o).unwrap();
    check(&db, &model);
    for k in model.keys().cloned().collect::<Vec<_>>() {
        db.remove(&k).unwrap();
    }
    model.clear();
    check(&db, &model);
    db.close().unwrap();
}
