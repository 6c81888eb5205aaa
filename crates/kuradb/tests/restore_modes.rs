//! `restore_mode` at the open of a file its writer did not close: the
//! default restores every intact record, `sync` goes back to the last hard
//! synchronization (a tree always does; a hash file in appending mode through
//! its history; a hash file updated in place is refused, having no whole
//! synchronized state), and `read_only` leaves the file as it is and takes no
//! writes. The reference's names and flags work as its bindings pass them.

use std::path::{Path, PathBuf};

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::{ErrorKind, Params};

fn params(pairs: &[(&str, &str)]) -> Params {
    let mut p = Params::new();
    for (name, value) in pairs {
        p.insert(name, value).unwrap();
    }
    p
}

/// Opens a new database at `dir/name` with `tuning`, lets `before` write and
/// synchronizes hard, lets `after` write and, if `soft_sync`, synchronizes
/// softly (every write is in the file either way, as a killed writer leaves
/// it; a soft synchronization writes the header too), and answers a copy
/// of the file taken while the writer still had it open.
fn crashed_with(
    dir: &Path,
    name: &str,
    tuning: &[(&str, &str)],
    soft_sync: bool,
    before: impl FnOnce(&PolyDbm),
    after: impl FnOnce(&PolyDbm),
) -> PathBuf {
    let path = dir.join(name);
    let db = PolyDbm::open(&path, Access::ReadWrite, &params(tuning)).unwrap();
    before(&db);
    db.synchronize(Durability::Hard).unwrap();
    after(&db);
    if soft_sync {
        db.synchronize(Durability::Soft).unwrap();
    }
    let copy = dir.join(format!("crashed-{name}"));
    std::fs::copy(&path, &copy).unwrap();
    db.close().unwrap();
    copy
}

/// [`crashed_with`] a soft synchronization after `after`.
fn crashed(
    dir: &Path,
    name: &str,
    tuning: &[(&str, &str)],
    before: impl FnOnce(&PolyDbm),
    after: impl FnOnce(&PolyDbm),
) -> PathBuf {
    crashed_with(dir, name, tuning, true, before, after)
}

fn get(db: &PolyDbm, key: &str) -> Option<String> {
    db.get(key.as_bytes()).unwrap().map(|v| String::from_utf8(v).unwrap())
}

fn synced_then_changed(db_before: &PolyDbm) {
    db_before.set(b"a", b"synced").unwrap();
    db_before.set(b"gone", b"synced").unwrap();
}

fn changes_after_sync(db: &PolyDbm) {
    db.set(b"a", b"later").unwrap();
    db.set(b"b", b"later").unwrap();
    db.remove(b"gone").unwrap();
}

#[test]
fn sync_takes_an_appending_hash_file_back_to_its_last_hard_synchronization() {
    let dir = tempfile::tempdir().unwrap();
    let tuning = [("update_mode", "UPDATE_APPENDING"), ("num_buckets", "7")];
    let copy = crashed(dir.path(), "log.kh", &tuning, synced_then_changed, changes_after_sync);
    let other = dir.path().join("other.kh");
    std::fs::copy(&copy, &other).unwrap();

    let synced = params(&[("restore_mode", "RESTORE_SYNC|RESTORE_NO_SHORTCUTS|RESTORE_WITH_HARDSYNC")]);
    let db = PolyDbm::open(&copy, Access::ReadWrite, &synced).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("synced"));
    assert_eq!(get(&db, "gone").as_deref(), Some("synced"));
    assert_eq!(get(&db, "b"), None);
    assert_eq!(db.count().unwrap(), 2);
    db.set(b"c", b"new").unwrap();
    db.close().unwrap();

    // The default keeps every intact record, later ones included.
    let db =
        PolyDbm::open(&other, Access::ReadWrite, &params(&[("restore_mode", "RESTORE_DEFAULT")])).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("later"));
    assert_eq!(get(&db, "b").as_deref(), Some("later"));
    assert_eq!(get(&db, "gone"), None);
    db.close().unwrap();
}

/// The header names the epoch a hard synchronization made durable as soon
/// as it has, not at the next synchronization.
#[test]
fn sync_finds_the_last_hard_synchronization_with_no_later_header_write() {
    let dir = tempfile::tempdir().unwrap();
    let tuning = [("update_mode", "UPDATE_APPENDING"), ("num_buckets", "7")];
    let copy = crashed_with(dir.path(), "log.kh", &tuning, false, synced_then_changed, changes_after_sync);
    let db = PolyDbm::open(&copy, Access::ReadWrite, &params(&[("restore_mode", "RESTORE_SYNC")])).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("synced"));
    assert_eq!(get(&db, "gone").as_deref(), Some("synced"));
    assert_eq!(get(&db, "b"), None);
    db.close().unwrap();
}

#[test]
fn sync_is_refused_for_a_hash_file_updated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.kh");
    let synced = params(&[("restore_mode", "RESTORE_SYNC")]);
    let refused = PolyDbm::open(&path, Access::ReadWrite, &synced).err().expect("refused");
    assert_eq!(refused.kind(), ErrorKind::InvalidArgument);
    assert!(refused.message().contains("updated in place"), "{refused}");
}

#[test]
fn sync_restores_a_tree_to_its_last_hard_synchronization() {
    let dir = tempfile::tempdir().unwrap();
    let copy = crashed(dir.path(), "t.kt", &[], synced_then_changed, changes_after_sync);
    let db = PolyDbm::open(&copy, Access::ReadWrite, &params(&[("restore_mode", "RESTORE_SYNC")])).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("synced"));
    assert_eq!(get(&db, "gone").as_deref(), Some("synced"));
    assert_eq!(get(&db, "b"), None);
    db.close().unwrap();
}

/// `read_only` opens the crashed file for writing without restoring it:
/// reads see what a restore would make of it, writes are refused, the file
/// is left byte for byte, and a later open restores it.
fn read_only_leaves_the_file(name: &str, tuning: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let copy = crashed(dir.path(), name, tuning, synced_then_changed, changes_after_sync);
    let bytes = std::fs::read(&copy).unwrap();
    let read_only = params(&[("restore_mode", "RESTORE_READ_ONLY")]);
    let db = PolyDbm::open(&copy, Access::ReadWrite, &read_only).unwrap();
    assert!(get(&db, "a").is_some());
    assert!(!db.is_healthy());
    let refused = db.set(b"x", b"y").unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ReadOnly, "{refused}");
    assert_eq!(get(&db, "x"), None);
    db.close().unwrap();
    assert!(std::fs::read(&copy).unwrap() == bytes, "the file was changed");
    let db = PolyDbm::open(&copy, Access::ReadWrite, &Params::new()).unwrap();
    assert!(db.is_healthy());
    db.set(b"x", b"y").unwrap();
    db.close().unwrap();
}

#[test]
fn read_only_leaves_a_hash_file_unrestored() {
    read_only_leaves_the_file("h.kh", &[("num_buckets", "7")]);
}

#[test]
fn read_only_leaves_a_tree_file_unrestored() {
    read_only_leaves_the_file("t.kt", &[]);
}

#[test]
fn an_unknown_restore_mode_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.kh");
    let bad = PolyDbm::open(&path, Access::ReadWrite, &params(&[("restore_mode", "RESTORE_LATER")]));
    assert_eq!(bad.err().expect("refused").kind(), ErrorKind::InvalidArgument);
}
