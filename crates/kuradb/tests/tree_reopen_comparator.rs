//! A tree keeps the key order it was made with: a reopen that asks for
//! another is refused with the file's order named, one that asks for the
//! same or for none opens it in the file's order.

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm};
use kuradb::{ErrorKind, Params};

fn decimal_tree(path: &std::path::Path) {
    let db =
        TreeDbm::open(path, Access::ReadWrite, &TreeOptions::default().comparator(KeyComparator::Decimal))
            .unwrap();
    for key in ["10", "9", "100"] {
        db.set(key.as_bytes(), b"v").unwrap();
    }
    db.close().unwrap();
}

fn keys(db: &dyn Dbm) -> Vec<String> {
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    let mut keys = Vec::new();
    while let Some((key, _)) = cursor.get().unwrap() {
        keys.push(String::from_utf8(key).unwrap());
        cursor.next().unwrap();
    }
    keys
}

#[test]
fn another_comparator_is_refused_naming_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    decimal_tree(&path);
    for writable in [true, false] {
        let asked = TreeOptions::default().comparator(KeyComparator::Lexical);
        let err = TreeDbm::open(&path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &asked)
            .err()
            .expect("another comparator must be refused");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        let message = err.to_string();
        assert!(message.contains("casket.kt"), "{message}");
        assert!(message.contains("orders its keys by key_comparator=decimal"), "{message}");
        assert!(message.contains("key_comparator=lexical"), "{message}");
    }
    // The refusal left the file as it was, and unlocked.
    let db = TreeDbm::open(&path, Access::ReadWrite, &TreeOptions::default()).unwrap();
    assert_eq!(keys(&db), ["9", "10", "100"]);
    db.close().unwrap();
}

#[test]
fn the_same_comparator_or_none_opens_in_the_files_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    decimal_tree(&path);
    for options in [TreeOptions::default(), TreeOptions::default().comparator(KeyComparator::Decimal)] {
        let db = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
        assert_eq!(keys(&db), ["9", "10", "100"]);
        db.rebuild().unwrap();
        db.set(b"11", b"v").unwrap();
        assert_eq!(keys(&db), ["9", "10", "11", "100"]);
        db.remove(b"11").unwrap();
        db.close().unwrap();
    }
}

#[test]
fn a_new_tree_without_a_comparator_is_lexical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.kt");
    let db = TreeDbm::open(&path, Access::ReadWrite, &TreeOptions::default()).unwrap();
    for key in ["10", "9", "100"] {
        db.set(key.as_bytes(), b"v").unwrap();
    }
    assert_eq!(keys(&db), ["10", "100", "9"]);
    db.close().unwrap();
    let err =
        TreeDbm::open(&path, Access::ReadWrite, &TreeOptions::default().comparator(KeyComparator::Decimal))
            .err()
            .unwrap();
    assert!(err.to_string().contains("orders its keys by key_comparator=lexical"), "{err}");
}

#[test]
fn the_parameter_is_refused_through_polydbm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    decimal_tree(&path);
    let err = PolyDbm::open(
        &path,
        Access::ReadOnly,
        &Params::parse("key_comparator=LexicalKeyComparator").unwrap(),
    )
    .err()
    .expect("another comparator must be refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("key_comparator=decimal"), "{err}");
    let db =
        PolyDbm::open(&path, Access::ReadOnly, &Params::parse("key_comparator=decimal").unwrap()).unwrap();
    assert_eq!(keys(&db), ["9", "10", "100"]);
    db.close().unwrap();
}
