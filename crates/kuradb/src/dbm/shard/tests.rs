//! ShardDbm's own tests: placement, merged order, restore of a set.

use super::*;
use crate::dbm::Edge;
use std::collections::BTreeMap;

fn params(text: &str) -> Params {
    Params::parse(text).unwrap()
}

#[test]
fn keys_spread_over_the_shards_and_come_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkt");
    let db =
        ShardDbm::open(&path, Access::ReadWrite, &params("num_shards=4,key_comparator=decimal")).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..500u32 {
        let key = (i * 7919 % 1000).to_string();
        db.set(key.as_bytes(), format!("v{i}").as_bytes()).unwrap();
        model.insert(key.parse::<u32>().unwrap(), format!("v{i}"));
    }
    assert!(db.shards().iter().all(|s| s.count().unwrap() > 50), "every shard takes its share");
    assert_eq!(db.count().unwrap(), model.len() as u64);
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    let mut walked = Vec::new();
    while let Some((k, v)) = cursor.get().unwrap() {
        walked.push((String::from_utf8(k).unwrap().parse::<u32>().unwrap(), String::from_utf8(v).unwrap()));
        cursor.next().unwrap();
    }
    assert_eq!(walked, model.clone().into_iter().collect::<Vec<_>>());
    // Backward from the last, turning around in the middle.
    cursor.last().unwrap();
    let last = *model.keys().last().unwrap();
    assert_eq!(cursor.get().unwrap().unwrap().0, last.to_string().into_bytes());
    cursor.jump(b"500").unwrap();
    let at: Vec<u32> = model.range(500..).map(|(k, _)| *k).take(3).collect();
    assert_eq!(cursor.get().unwrap().unwrap().0, at[0].to_string().into_bytes());
    cursor.next().unwrap();
    cursor.previous().unwrap();
    cursor.previous().unwrap();
    let before = *model.range(..500).next_back().unwrap().0;
    assert_eq!(cursor.get().unwrap().unwrap().0, before.to_string().into_bytes());
    cursor.next().unwrap();
    cursor.next().unwrap();
    assert_eq!(cursor.get().unwrap().unwrap().0, at[1].to_string().into_bytes());
    cursor.jump_lower(b"500", Edge::Inclusive).unwrap();
    assert_eq!(
        cursor.get().unwrap().unwrap().0,
        model.range(..=500).next_back().unwrap().0.to_string().into_bytes()
    );
    cursor.remove().unwrap();
    drop(cursor);
    db.close().unwrap();
    let db = ShardDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!((db.num_shards(), db.count().unwrap()), (4, model.len() as u64 - 1));
    db.close().unwrap();
}

#[test]
fn a_set_must_be_whole_and_of_one_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkh");
    let db = ShardDbm::open(&path, Access::ReadWrite, &params("num_shards=3")).unwrap();
    db.set(b"a", b"1").unwrap();
    db.close().unwrap();
    let err = ShardDbm::open(&path, Access::ReadWrite, &params("num_shards=5")).err().unwrap();
    assert!(err.message().contains("has 3 shards, not 5"), "{err}");
    std::fs::remove_file(ShardDbm::shard_path(&path, 1, 3)).unwrap();
    let err = ShardDbm::open(&path, Access::ReadOnly, &Params::new()).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(
        err.message().contains("incomplete") && err.message().contains("casket.tkh-00001-of-00003"),
        "{err}"
    );
    let err = ShardDbm::open(dir.path().join("none.tkh"), Access::ReadOnly, &Params::new()).err().unwrap();
    assert!(err.message().contains("give num_shards"), "{err}");
    let err = ShardDbm::open(&path, Access::ReadWrite, &params("num_shards=0")).err().unwrap();
    assert!(err.message().contains("num_shards must be a number from 1"), "{err}");
}

#[test]
fn an_unordered_set_walks_shard_after_shard() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkh");
    let db = ShardDbm::open(&path, Access::ReadWrite, &params("num_shards=3,num_buckets=17")).unwrap();
    for i in 0..100u32 {
        db.set(&i.to_be_bytes(), b"x").unwrap();
    }
    assert!(!db.is_ordered());
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    let mut seen = Vec::new();
    while let Some((k, _)) = cursor.get().unwrap() {
        seen.push(u32::from_be_bytes(k.try_into().unwrap()));
        cursor.next().unwrap();
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..100).collect::<Vec<_>>());
    cursor.jump(&7u32.to_be_bytes()).unwrap();
    assert_eq!(cursor.get().unwrap().unwrap().0, 7u32.to_be_bytes());
    assert!(db.get_multi(&[&1u32.to_be_bytes(), b"none"]).unwrap()[0].is_some());
    drop(cursor);
    db.clear().unwrap();
    assert_eq!(db.count().unwrap(), 0);
    db.close().unwrap();
}

/// Every key a set stores is in the shard `shard_of` names, so a program
/// that writes shards itself puts each key where the set looks for it.
#[test]
fn the_set_stores_each_key_in_the_shard_shard_of_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkh");
    let db = ShardDbm::open(&path, Access::ReadWrite, &params("num_shards=5")).unwrap();
    let keys: Vec<Vec<u8>> = (0..300u32).map(|i| format!("key{i}").into_bytes()).collect();
    for key in &keys {
        db.set(key, b"v").unwrap();
    }
    for key in &keys {
        let home = shard_of(key, 5).unwrap();
        for (i, shard) in db.shards().iter().enumerate() {
            assert_eq!(shard.get(key).unwrap().is_some(), i == home, "key {key:?} in shard {i}");
        }
    }
    assert_eq!(shard_of(b"", 1).unwrap(), 0);
    let err = shard_of(b"k", MAX_SHARDS + 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("from 1 to"), "{err}");
    db.close().unwrap();
}

/// A cursor's record removed by someone else: reading it again moves on to
/// the next record of the whole set, in the set's order, not only of the
/// shard it stood in; a walk that removes each record it reads empties the
/// set.
#[test]
fn a_walk_goes_on_past_records_removed_under_it() {
    for (name, text) in [
        ("chained", "num_shards=3,num_buckets=3"),
        ("merged", "num_shards=3,key_comparator=decimal,max_page_size=96,max_branches=3"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(if name == "chained" { "casket.tkh" } else { "casket.tkt" });
        let db = ShardDbm::open(&path, Access::ReadWrite, &params(text)).unwrap();
        for i in 0..60u32 {
            db.set(i.to_string().as_bytes(), b"v").unwrap();
        }
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        let mut seen = Vec::new();
        while let Some((key, _)) = cursor.get().unwrap() {
            seen.push(String::from_utf8(key.clone()).unwrap().parse::<u32>().unwrap());
            assert!(db.remove(&key).unwrap(), "{name}: {key:?} read twice");
        }
        if name == "chained" {
            seen.sort_unstable();
        }
        assert_eq!(seen, (0..60).collect::<Vec<_>>(), "{name}");
        assert_eq!(db.count().unwrap(), 0, "{name}");
        if name == "merged" {
            // Backward too.
            for i in 0..60u32 {
                db.set(i.to_string().as_bytes(), b"v").unwrap();
            }
            cursor.last().unwrap();
            let mut seen = Vec::new();
            while let Some((key, _)) = cursor.get().unwrap() {
                seen.push(String::from_utf8(key.clone()).unwrap().parse::<u32>().unwrap());
                assert!(db.remove(&key).unwrap(), "{name}: {key:?} read twice");
            }
            assert_eq!(seen, (0..60).rev().collect::<Vec<_>>(), "{name} backward");
        }
        drop(cursor);
        db.close().unwrap();
    }
}
