//! An empty path opens an on-memory database with no file, as the
//! reference's PolyDBM does: `dbm=` picks the on-memory class (TinyDbm
//! without it), a file class is a NotFound error naming the problem, and
//! `num_shards` makes a set of on-memory shards. Nothing is ever written to
//! disk, neither at synchronize nor at close.

use kuradb::dbm::poly::{DbmClass, Params, PolyDbm};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::ErrorKind;

fn params(text: &str) -> Params {
    Params::parse(text).unwrap()
}

/// The names of the entries of the working directory.
fn entries() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(".")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_on_memory_class_opens_without_a_file_and_writes_none() {
    // The only test of this file that looks at the working directory: it is
    // an empty one of its own, so any file an open, synchronize, rebuild or
    // close made would show.
    let dir = tempfile::tempdir().unwrap();
    std::env::set_current_dir(dir.path()).unwrap();
    let cases = [
        ("", DbmClass::Tiny),
        ("dbm=TinyDBM", DbmClass::Tiny),
        ("dbm=BabyDBM,key_comparator=decimal", DbmClass::Baby),
        ("dbm=cache,cap_rec_num=100", DbmClass::Cache),
        ("dbm=StdHashDBM", DbmClass::StdHash),
        ("dbm=stdtree,truncate=true", DbmClass::StdTree),
    ];
    for (text, class) in cases {
        // Read-only or not: with no file to protect, both take writes.
        for writable in [true, false] {
            let db =
                PolyDbm::open("", if writable { Access::ReadWrite } else { Access::ReadOnly }, &params(text))
                    .unwrap();
            assert_eq!((db.class(), db.file_path()), (class, None), "{text}");
            db.set(b"b", b"2").unwrap();
            db.set(b"a", b"1").unwrap();
            db.synchronize(Durability::Hard).unwrap();
            db.rebuild().unwrap();
            assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "{text}");
            assert_eq!(db.count().unwrap(), 2, "{text}");
            let inspect: Vec<(String, String)> = db.inspect().unwrap();
            assert!(inspect.contains(&("num_records".to_string(), "2".to_string())), "{inspect:?}");
            db.close().unwrap();
            assert_eq!(entries(), Vec::<String>::new(), "{text}: a file was written");
        }
    }
    // Each open is a new, empty database.
    let db = PolyDbm::open("", Access::ReadWrite, &Params::new()).unwrap();
    assert_eq!(db.count().unwrap(), 0);
    db.close().unwrap();
    let shards = PolyDbm::open("", Access::ReadWrite, &params("num_shards=3,dbm=baby")).unwrap();
    assert!(shards.is_sharded() && shards.class() == DbmClass::Baby);
    for k in ["c", "a", "b", "d"] {
        shards.set(k.as_bytes(), b"v").unwrap();
    }
    let mut cursor = shards.iter().unwrap();
    cursor.first().unwrap();
    assert_eq!(cursor.get().unwrap().unwrap().0, b"a", "the shards merge in order");
    drop(cursor);
    shards.synchronize(Durability::Soft).unwrap();
    shards.close().unwrap();
    assert_eq!(entries(), Vec::<String>::new(), "the shard set wrote a file");
}

#[test]
fn a_file_class_with_an_empty_path_is_not_found() {
    for text in ["dbm=hash", "dbm=TreeDBM", "dbm=skip,num_buckets=10", "dbm=HashDBM,num_shards=2"] {
        let err = PolyDbm::open("", Access::ReadWrite, &params(text)).err().unwrap();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{text}: {err}");
        assert!(err.message().contains("the path is empty"), "{err}");
        assert!(err.message().contains("tiny, baby, cache, stdhash, stdtree"), "{err}");
    }
    let err = PolyDbm::open("", Access::ReadWrite, &params("dbm=floppy")).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // An on-memory class still refuses a parameter it does not take.
    let err = PolyDbm::open("", Access::ReadWrite, &params("max_level=3")).err().unwrap();
    assert!(err.message().contains("unknown parameter max_level for a tiny database"), "{err}");
}
