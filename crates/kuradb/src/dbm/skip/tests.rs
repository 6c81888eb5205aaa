use super::pending::MAX_SPILLS;
use super::reducer::total;
use super::*;

fn open(dir: &tempfile::TempDir, options: &SkipOptions) -> SkipDbm {
    SkipDbm::open(dir.path().join("casket.skip"), Access::ReadWrite, options).unwrap()
}

fn records(db: &SkipDbm) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range::<&[u8]>(..).unwrap().collect::<Result<_>>().unwrap()
}

#[test]
fn reducers_have_names_and_sum_numbers() {
    assert_eq!(Reducer::from_name("none").unwrap(), Reducer::All);
    assert_eq!(Reducer::from_name("ReduceToFirst").unwrap(), Reducer::First);
    assert_eq!(Reducer::from_name("LAST").unwrap(), Reducer::Last);
    assert_eq!(Reducer::from_name("concat_tab").unwrap(), Reducer::Concat(b"\t".to_vec()));
    assert_eq!(Reducer::from_name("ReduceConcatWithLine").unwrap(), Reducer::Concat(b"\n".to_vec()));
    assert_eq!(Reducer::from_name("total").unwrap(), Reducer::Total);
    assert_eq!(Reducer::from_name("ReduceToSecond").unwrap(), Reducer::Second);
    let err = Reducer::from_name("third").unwrap_err();
    assert!(err.message().contains("unknown reducer \"third\""), "{err}");
    let sum = |values: &[&str]| total(values.iter().map(|v| v.as_bytes()));
    assert_eq!(sum(&["1", " 2 ", "-10", "x"]), "-7");
    assert_eq!(sum(&["9223372036854775807", "1"]), "9223372036854775808");
    assert_eq!(sum(&["1.5", "2", "nope"]), "3.5");
    assert_eq!(sum(&[]), "0");
}

#[test]
fn every_reducer_applies_to_old_and_new_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir, &SkipOptions { step_unit: 2, max_level: 3, ..SkipOptions::default() });
    for (k, v) in [("a", "1"), ("b", "2"), ("a", "3")] {
        db.set(k.as_bytes(), v.as_bytes()).unwrap();
    }
    db.synchronize(Durability::Soft).unwrap();
    db.set(b"a", b"5").unwrap();
    let all = |pairs: &[(&str, &str)]| -> Vec<(Vec<u8>, Vec<u8>)> {
        pairs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    };
    db.synchronize_with(Durability::Soft, &Reducer::Concat(b"+".to_vec())).unwrap();
    assert_eq!(records(&db), all(&[("a", "1+3+5"), ("b", "2")]));
    db.set(b"b", b"40").unwrap();
    db.set(b"b", b"x").unwrap();
    db.synchronize_with(Durability::Soft, &Reducer::All).unwrap();
    assert_eq!(records(&db), all(&[("a", "1+3+5"), ("b", "2"), ("b", "40"), ("b", "x")]));
    db.synchronize_with(Durability::Soft, &Reducer::Total).unwrap();
    assert_eq!(records(&db), all(&[("a", "0"), ("b", "42")]));
    db.set(b"a", b"7").unwrap();
    db.synchronize_with(Durability::Soft, &Reducer::Last).unwrap();
    assert_eq!(records(&db), all(&[("a", "7"), ("b", "42")]));
    db.set(b"a", b"8").unwrap();
    db.synchronize_with(Durability::Soft, &Reducer::First).unwrap();
    assert_eq!(records(&db), all(&[("a", "7"), ("b", "42")]));
    // As the reference's ReduceToSecond: the first value set since the
    // last synchronization replaces the old one, a later one does not.
    db.set(b"a", b"9").unwrap();
    db.set(b"a", b"10").unwrap();
    db.synchronize_with(Durability::Soft, &Reducer::Second).unwrap();
    assert_eq!(records(&db), all(&[("a", "9"), ("b", "42")]));
    db.close().unwrap();
}

#[test]
fn many_spills_are_combined_and_merged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    // About one spill every ten updates: hundreds of them, combined in groups.
    let options = SkipOptions { sort_mem_size: 200, step_unit: 3, max_level: 4, ..SkipOptions::default() };
    let db = open(&dir, &options);
    for round in 0..3u32 {
        for i in (0..1000u32).rev() {
            db.set(format!("{:04}", i % 500).as_bytes(), format!("{round}-{i}").as_bytes()).unwrap();
        }
    }
    let spills = db.pending.lock().spills.len();
    assert!((2..=MAX_SPILLS + 1).contains(&spills), "{spills} spill files");
    db.remove(b"0007").unwrap();
    db.synchronize_with(Durability::Soft, &Reducer::Last).unwrap();
    let found = records(&db);
    assert_eq!(found.len(), 499);
    assert_eq!(found[0], (b"0000".to_vec(), b"2-0".to_vec()));
    assert!(found.iter().all(|(k, _)| k != b"0007"));
    assert_eq!(db.get(b"0499").unwrap().as_deref(), Some(&b"2-499"[..]));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    db.close().unwrap();
}

#[test]
fn insert_in_order_refuses_a_key_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir, &SkipOptions { insert_in_order: true, ..SkipOptions::default() });
    db.set(b"b", b"1").unwrap();
    db.set(b"b", b"2").unwrap();
    db.set(b"c", b"3").unwrap();
    let err = db.set(b"a", b"4").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("insert_in_order") && err.message().contains("\"a\""), "{err}");
    db.synchronize(Durability::Soft).unwrap();
    assert_eq!(db.count().unwrap(), 3);
    // Each batch starts afresh: the next may begin below the last key.
    db.set(b"a", b"5").unwrap();
    db.close().unwrap();
}

#[test]
fn readers_see_the_last_synchronization_and_writes_need_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir, &SkipOptions::default());
    db.set(b"k", b"v").unwrap();
    assert_eq!(db.get(b"k").unwrap(), None);
    assert!(!db.remove(b"k").unwrap());
    db.synchronize(Durability::Hard).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None, "the remove came after the set");
    db.insert(b"k", b"v").unwrap();
    db.synchronize(Durability::Soft).unwrap();
    let err = db.insert(b"k", b"w").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Duplication);
    assert!(db.should_be_rebuilt().is_ok_and(|b| !b));
    db.append(b"k", b"w", b",").unwrap();
    assert!(db.should_be_rebuilt().unwrap());
    db.close().unwrap();
    let reader =
        SkipDbm::open(dir.path().join("casket.skip"), Access::ReadOnly, &SkipOptions::default()).unwrap();
    assert_eq!(reader.get(b"k").unwrap().as_deref(), Some(&b"v,w"[..]));
    let err = reader.set(b"x", b"y").unwrap_err();
    assert!(err.message().contains("read-only"), "{err}");
    assert!(reader.clear().is_err() && reader.rebuild().is_err());
    reader.close().unwrap();
}

#[test]
fn clear_empties_the_file_and_the_pending_updates() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir, &SkipOptions { sort_mem_size: 64, ..SkipOptions::default() });
    for i in 0..100u32 {
        db.set(&i.to_be_bytes(), b"value").unwrap();
    }
    db.synchronize(Durability::Soft).unwrap();
    for i in 100..200u32 {
        db.set(&i.to_be_bytes(), b"value").unwrap();
    }
    db.clear().unwrap();
    assert_eq!(db.count().unwrap(), 0);
    db.synchronize(Durability::Soft).unwrap();
    assert_eq!(db.count().unwrap(), 0);
    let mut cursor = db.cursor();
    cursor.first().unwrap();
    assert_eq!(cursor.get().unwrap(), None);
    cursor.last().unwrap();
    assert_eq!(cursor.get().unwrap(), None);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    db.close().unwrap();
}

#[test]
fn a_crashed_writers_temporary_files_are_removed_by_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.skip");
    open(&dir, &SkipOptions::default()).close().unwrap();
    for name in
        ["casket.skip.build-tmp", "casket.skip.spill-3-tmp", "casket.skip.spill-x-tmp", "other.build-tmp"]
    {
        std::fs::write(dir.path().join(name), b"junk").unwrap();
    }
    let reader = SkipDbm::open(&path, Access::ReadOnly, &SkipOptions::default()).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5, "a reader removes nothing");
    reader.close().unwrap();
    open(&dir, &SkipOptions::default()).close().unwrap();
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["casket.skip", "casket.skip.spill-x-tmp", "other.build-tmp"]);
}

#[test]
fn large_records_and_a_narrow_offset_width() {
    let dir = tempfile::tempdir().unwrap();
    let db =
        open(&dir, &SkipOptions { offset_width: 3, step_unit: 2, max_level: 2, ..SkipOptions::default() });
    let big = vec![7u8; 1 << 20];
    db.set(b"big", &big).unwrap();
    db.set(b"", b"empty key").unwrap();
    db.set(b"small", b"").unwrap();
    db.synchronize(Durability::Soft).unwrap();
    assert_eq!(db.get(b"big").unwrap(), Some(big.clone()));
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    assert_eq!(db.get(b"small").unwrap().as_deref(), Some(&b""[..]));
    // 3-byte pointers address 16 MiB: more records do not fit.
    for i in 0..20u8 {
        db.set(&[b'x', i], &big).unwrap();
    }
    let err = db.synchronize(Durability::Soft).unwrap_err();
    assert!(err.message().contains("offset_width 3"), "{err}");
    // The failed build lost nothing: the updates wait, the old file serves.
    assert_eq!(db.get(b"big").unwrap(), Some(big));
    assert!(db.should_be_rebuilt().unwrap());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    db.clear().unwrap();
    db.close().unwrap();
}

#[test]
fn options_out_of_range_are_named() {
    let dir = tempfile::tempdir().unwrap();
    for (options, name) in [
        (SkipOptions { step_unit: 1, ..SkipOptions::default() }, "step_unit"),
        (SkipOptions { max_level: 0, ..SkipOptions::default() }, "max_level"),
        (SkipOptions { max_level: 32, ..SkipOptions::default() }, "max_level"),
        (SkipOptions { offset_width: 9, ..SkipOptions::default() }, "offset_width"),
    ] {
        let err = SkipDbm::open(dir.path().join("x.skip"), Access::ReadWrite, &options).err().unwrap();
        assert!(err.message().contains(name), "{err}");
    }
}

#[test]
fn a_clear_whose_build_fails_waits_for_the_next_synchronization() {
    use crate::file::{FaultFile, FaultKind, FileWrapper};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let arm = Arc::new(AtomicBool::new(false));
    let armed = arm.clone();
    let wrap = FileWrapper(Arc::new(move |inner| {
        let file = FaultFile::new(inner);
        if armed.swap(false, Ordering::SeqCst) {
            file.control().fail_nth_operation(1, FaultKind::Io);
        }
        Box::new(file)
    }));
    let db = open(&dir, &SkipOptions { wrap_file: Some(wrap), ..SkipOptions::default() });
    db.set(b"a", b"1").unwrap();
    db.synchronize(Durability::Soft).unwrap();
    db.set(b"b", b"2").unwrap();
    arm.store(true, Ordering::SeqCst);
    assert!(db.clear().is_err(), "the armed build failed");
    assert_eq!(records(&db), [(b"a".to_vec(), b"1".to_vec())], "the old file serves until a build");
    assert!(db.should_be_rebuilt().unwrap(), "the clear waits");
    db.set(b"c", b"3").unwrap();
    db.synchronize(Durability::Soft).unwrap();
    assert_eq!(records(&db), [(b"c".to_vec(), b"3".to_vec())]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    db.close().unwrap();
}
