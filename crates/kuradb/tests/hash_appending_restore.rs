//! A hash file in appending mode, copied as a killed writer left it (every
//! write in the file, the last hard synchronization some way back), restores
//! to the state of its last write: within one epoch its records are in time
//! order, so a removal written after a version removes the key, and a version
//! written after a removal brings it back.

mod common;

use common::hash as h;
use kuradb::dbm::hash::{HashDbm, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FileKind, FileSpec};
use std::collections::BTreeMap;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes `steps` (a value sets, `None` removes) on a fresh appending file of
/// `kind` after a hard synchronization, synchronizes softly (so every write is
/// in the file, as after a process kill), copies the file while the writer
/// still has it open, and answers what the copy restores to.
fn restored_after(kind: FileKind, steps: &[(&str, Option<&str>)]) -> Model {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.kh");
    let options = h::options(&FileSpec::new(kind)).num_buckets(7).update_mode(UpdateMode::Appending);
    let db = HashDbm::open(&path, Access::ReadWrite, &options).unwrap();
    db.set(b"kept", b"before").unwrap();
    db.synchronize(Durability::Hard).unwrap();
    for (key, value) in steps {
        match value {
            Some(v) => db.set(key.as_bytes(), v.as_bytes()).unwrap(),
            None => {
                db.remove(key.as_bytes()).unwrap();
            }
        }
    }
    db.synchronize(Durability::Soft).unwrap();
    let copy = dir.path().join("killed.kh");
    std::fs::copy(&path, &copy).unwrap();
    db.close().unwrap();
    let restored = HashDbm::open(&copy, Access::ReadWrite, &options).unwrap();
    let model = h::records(&restored).unwrap();
    restored.close().unwrap();
    model
}

fn model(pairs: &[(&str, &str)]) -> Model {
    pairs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
}

#[test]
fn a_removal_after_a_version_of_the_same_epoch_stays_removed() {
    for kind in [FileKind::PositionalParallel, FileKind::MmapParallel] {
        let got = restored_after(kind, &[("a", Some("1")), ("b", Some("2")), ("a", None)]);
        assert_eq!(got, model(&[("b", "2"), ("kept", "before")]), "{kind:?}");
        let got = restored_after(kind, &[("kept", None)]);
        assert_eq!(got, model(&[]), "{kind:?}: a key synchronized before its removal");
    }
}

#[test]
fn a_version_after_a_removal_of_the_same_epoch_is_the_value() {
    for kind in [FileKind::PositionalParallel, FileKind::MmapParallel] {
        let steps =
            [("a", Some("1")), ("a", None), ("a", Some("2")), ("kept", None), ("kept", Some("after"))];
        let got = restored_after(kind, &steps);
        assert_eq!(got, model(&[("a", "2"), ("kept", "after")]), "{kind:?}");
        let got = restored_after(kind, &[("a", Some("1")), ("a", Some("2")), ("a", Some("3"))]);
        assert_eq!(got, model(&[("a", "3"), ("kept", "before")]), "{kind:?}");
    }
}
