//! The provided methods of [`Dbm`], checked on a model database that
//! implements only the required ones over a `BTreeMap`.

use super::*;

use super::model::Model;

fn contents(db: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.map.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[test]
fn set_get_remove_and_duplication() {
    let db = Model::default();
    assert_eq!(db.get(b"a").unwrap(), None);
    db.set(b"a", b"1").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    let err = db.insert(b"a", b"2").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Duplication);
    assert!(err.to_string().contains("\"a\""), "{err}");
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(db.remove(b"a").unwrap());
    assert!(!db.remove(b"a").unwrap());
}

#[test]
fn append_uses_the_delimiter_only_between_values() {
    let db = Model::default();
    db.append(b"k", b"x", b",").unwrap();
    db.append(b"k", b"y", b",").unwrap();
    assert_eq!(db.get(b"k").unwrap().unwrap(), b"x,y");
}

#[test]
fn compare_exchange_covers_absent_on_both_sides() {
    let db = Model::default();
    assert!(db.compare_exchange(b"k", None, Some(b"v1")).unwrap());
    assert!(!db.compare_exchange(b"k", None, Some(b"v2")).unwrap());
    assert!(!db.compare_exchange(b"k", Some(b"zz"), Some(b"v2")).unwrap());
    assert!(db.compare_exchange(b"k", Some(b"v1"), None).unwrap());
    assert_eq!(db.get(b"k").unwrap(), None);
}

#[test]
fn increment_counts_from_initial_and_refuses_non_numbers() {
    let db = Model::default();
    assert_eq!(db.increment(b"n", 5, 100).unwrap(), 105);
    assert_eq!(db.increment(b"n", -6, 100).unwrap(), 99);
    assert_eq!(db.increment(b"n", INCREMENT_UNCHANGED, 0).unwrap(), 99);
    assert_eq!(db.get(b"n").unwrap().unwrap(), 99i64.to_be_bytes());
    db.set(b"s", b"text").unwrap();
    let err = db.increment(b"s", 1, 0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(db.get(b"s").unwrap().unwrap(), b"text");
}

#[test]
fn multi_operations_are_all_or_nothing() {
    let db = Model::default();
    db.insert_multi(&[(b"a", b"1"), (b"b", b"2")]).unwrap();
    let err = db.insert_multi(&[(b"c", b"3"), (b"b", b"9")]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Duplication);
    assert_eq!(db.get(b"c").unwrap(), None, "a failed set_multi sets nothing");
    assert_eq!(
        db.get_multi(&[b"a", b"x", b"b"]).unwrap(),
        vec![Some(b"1".to_vec()), None, Some(b"2".to_vec())]
    );
    assert_eq!(db.contains_multi(&[b"b", b"x", b"a", b"b"]).unwrap(), [true, false, true, true]);
    assert!(!db.compare_exchange_multi(&[(b"a", Some(b"1")), (b"b", None)], &[(b"a", None)]).unwrap());
    assert!(db.get(b"a").unwrap().is_some());
    assert!(db
        .compare_exchange_multi(&[(b"a", Some(b"1")), (b"z", None)], &[(b"a", None), (b"z", Some(b"26"))])
        .unwrap());
    assert_eq!(contents(&db), vec![(b"b".to_vec(), b"2".to_vec()), (b"z".to_vec(), b"26".to_vec())]);
    assert_eq!(db.remove_multi(&[b"b", b"q"]).unwrap(), 1);
}

#[test]
fn rekey_moves_copies_and_refuses() {
    let db = Model::default();
    db.set(b"old", b"v").unwrap();
    db.set(b"taken", b"t").unwrap();
    assert_eq!(
        db.rekey(b"old", b"taken", Rekey::Move, OnDuplicate::Fail).unwrap_err().kind(),
        ErrorKind::Duplication
    );
    assert_eq!(
        db.rekey(b"none", b"new", Rekey::Move, OnDuplicate::Replace).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    db.rekey(b"old", b"copy", Rekey::Copy, OnDuplicate::Fail).unwrap();
    db.rekey(b"old", b"new", Rekey::Move, OnDuplicate::Fail).unwrap();
    assert_eq!(
        contents(&db),
        vec![
            (b"copy".to_vec(), b"v".to_vec()),
            (b"new".to_vec(), b"v".to_vec()),
            (b"taken".to_vec(), b"t".to_vec())
        ]
    );
    db.rekey(b"new", b"new", Rekey::Move, OnDuplicate::Fail).unwrap();
    assert_eq!(db.get(b"new").unwrap().unwrap(), b"v", "rekey onto itself keeps the record");
}

#[test]
fn export_copies_every_record() {
    let db = Model::default();
    for i in 0..10u8 {
        db.set(&[i], &[i, i]).unwrap();
    }
    let other = Model::default();
    other.set(b"extra", b"x").unwrap();
    db.export(&other).unwrap();
    assert_eq!(other.count().unwrap(), 11);
    assert_eq!(other.get(&[7]).unwrap().unwrap(), vec![7, 7]);
}

#[test]
fn keys_in_messages_are_quoted_or_hex_and_cut() {
    assert_eq!(show_key(b"abc"), "\"abc\"");
    assert_eq!(show_key(&[0, 255]), "0x00ff");
    assert!(show_key(&[b'x'; 100]).ends_with('…'));
}
