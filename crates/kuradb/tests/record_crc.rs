//! Record checksums (`record_crc_mode`) of the hash and tree databases: with
//! a mode on, a flipped byte in a stored value makes every read of its record
//! a broken-data error naming the file and the offset, never the damaged
//! value, while the other records read as written (but for those whose
//! lookup passes it: a hash chain's later records, a tree page's others); a restore skips the
//! damaged record (for a tree, the page holding it) and keeps the rest; the
//! mode is kept in the file, shown by `inspect`, and outlives a reopen that
//! gives another, a restore and a rebuild (which may change it). With the
//! mode none, reads do not check, and the damaged value reads back as it is.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::hash::{self as h, show, Model};
use common::tree as t;
use kuradb::dbm::hash::{HashDbm, HashOptions, RebuildParams, RecordCrcMode, UpdateMode};
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm};
use kuradb::file::FileSpec;
use kuradb::{ErrorKind, Params};

const RECORDS: usize = 120;

/// Mapping, positional calls, and atomic block I/O through a page cache.
fn specs() -> Vec<(&'static str, FileSpec)> {
    h::specs()
        .into_iter()
        .filter(|(n, _)| ["mmap-para", "pos-para", "pos-atom-block512-pagecache"].contains(n))
        .collect()
}

fn key_of(i: usize) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A value found nowhere else in the file: its number twice, and padding.
fn value_of(i: usize) -> Vec<u8> {
    format!("<value {i:04} {}|{i:04}>", "#".repeat(i % 50)).into_bytes()
}

/// A bucket for about every record: most chains hold one.
fn hash_options(spec: &FileSpec, mode: RecordCrcMode) -> HashOptions {
    h::options(spec).num_buckets(101).record_crc_mode(mode)
}

/// Small pages, so the records spread over many leaves.
fn tree_options(spec: &FileSpec, mode: RecordCrcMode) -> TreeOptions {
    let o = t::options(spec, KeyComparator::Lexical, 512, 4, 8, 31);
    let hash = o.hash.clone().record_crc_mode(mode);
    o.hash(hash)
}

/// Writes `RECORDS` records into `db` (some overwritten, a few removed) and
/// answers what it holds.
fn fill(db: &dyn Dbm) -> Model {
    let mut model = Model::new();
    for i in 0..RECORDS {
        db.set(&key_of(i), format!("old {i}").as_bytes()).expect("set");
        db.set(&key_of(i), &value_of(i)).expect("overwrite");
        model.insert(key_of(i), value_of(i));
    }
    for i in (0..RECORDS).step_by(11) {
        db.remove(&key_of(i)).expect("remove");
        model.remove(&key_of(i));
    }
    model
}

/// Flips one bit in the middle of every copy of `value` in the file at
/// `path` (older versions too, so the live one is surely among them).
fn damage(path: &Path, value: &[u8]) {
    let mut bytes = std::fs::read(path).expect("read the file");
    let at: Vec<usize> =
        bytes.windows(value.len()).enumerate().filter(|(_, w)| *w == value).map(|(i, _)| i).collect();
    assert!(!at.is_empty(), "{} is not in {}", show(value), path.display());
    for i in at {
        bytes[i + value.len() / 2] ^= 0x10;
    }
    std::fs::write(path, &bytes).expect("write the file");
}

/// The value `value` with the bit [`damage`] flips.
fn damaged(value: &[u8]) -> Vec<u8> {
    let mut v = value.to_vec();
    v[value.len() / 2] ^= 0x10;
    v
}

/// The figure `name` of `db`'s inspection.
fn figure(db: &dyn Dbm, name: &str) -> String {
    let figures: BTreeMap<String, String> = db.inspect().expect("inspect").into_iter().collect();
    figures.get(name).cloned().unwrap_or_else(|| panic!("no figure {name} in {figures:?}"))
}

/// Reads every key of `model`: answers the keys whose reads failed, each
/// failure checked to be broken data naming `path` and an offset, and each
/// success checked to be the model's value.
fn read_all(db: &dyn Dbm, model: &Model, path: &Path, what: &str) -> Vec<Vec<u8>> {
    let mut failed = Vec::new();
    for (key, value) in model {
        match db.get(key) {
            Ok(got) => assert_eq!(got.as_ref(), Some(value), "{what}: get {}", show(key)),
            Err(e) => {
                let text = e.to_string();
                assert_eq!(e.kind(), ErrorKind::BrokenData, "{what}: get {}: {text}", show(key));
                assert!(text.contains(&path.display().to_string()), "{what}: the file is not named: {text}");
                assert!(text.contains("offset") && text.contains("checksum"), "{what}: {text}");
                failed.push(key.clone());
            }
        }
    }
    failed
}

#[test]
fn a_damaged_hash_record_fails_every_read_and_restore_skips_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, spec) in specs() {
        for mode in [RecordCrcMode::Crc8, RecordCrcMode::Crc16, RecordCrcMode::Crc32] {
            for update in [UpdateMode::InPlace, UpdateMode::Appending] {
                let what = format!("[{name} {mode} {update:?}]");
                let path = dir.path().join(format!("{name}-{}-{update:?}.kh", mode.bits()));
                let o = hash_options(&spec, mode).update_mode(update);
                let db = HashDbm::open(&path, Access::ReadWrite, &o).expect("create");
                let model = fill(&db);
                db.close().expect("close");
                let victim = key_of(7);
                damage(&path, &model[&victim]);

                // Opened with no mode given, the file's own applies.
                let plain = hash_options(&spec, RecordCrcMode::None);
                let db = HashDbm::open(&path, Access::ReadOnly, &plain).expect("open");
                assert_eq!(figure(&db, "record_crc_mode"), mode.name(), "{what}");
                // A walk along a chain verifies each record it passes (a damaged
                // key would otherwise read as absent), so the keys behind the
                // damaged record in its chain fail too: a few at most.
                let failed = read_all(&db, &model, &path, &what);
                assert!(failed.contains(&victim), "{what}: the damaged record read");
                assert!(failed.len() <= 4, "{what}: {} reads failed", failed.len());
                for op in ["contains", "walk"] {
                    let e = match op {
                        "contains" => db.contains(&victim).map(drop),
                        _ => db.process_each(Access::ReadOnly, &mut |_, _| kuradb::Action::Keep),
                    };
                    let e = e.expect_err(&format!("{what}: {op} read the damaged record"));
                    assert_eq!(e.kind(), ErrorKind::BrokenData, "{what}: {op}: {e}");
                }
                assert!(!db.is_healthy(), "{what}: still healthy after a failed checksum");
                db.close().expect("close");

                let dest = dir.path().join(format!("{name}-{}-{update:?}-restored.kh", mode.bits()));
                let kept = HashDbm::restore(&path, &dest, &plain).expect("restore");
                let mut expected = model.clone();
                expected.remove(&victim);
                assert_eq!(kept, expected.len() as u64, "{what}: records restored");
                let restored =
                    HashDbm::open(&dest, Access::ReadOnly, &plain).expect("open the restored file");
                h::compare(&restored, &expected).unwrap_or_else(|e| panic!("{what}: the restored file: {e}"));
                assert_eq!(figure(&restored, "record_crc_mode"), mode.name(), "{what}: the restored mode");
            }
        }
    }
}

#[test]
fn a_damaged_tree_page_fails_every_read_of_it_and_restore_keeps_the_other_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, spec) in specs() {
        for mode in [RecordCrcMode::Crc8, RecordCrcMode::Crc16, RecordCrcMode::Crc32] {
            let what = format!("[{name} {mode}]");
            let path = dir.path().join(format!("{name}-{}.kt", mode.bits()));
            let db = TreeDbm::open(&path, Access::ReadWrite, &tree_options(&spec, mode)).expect("create");
            let model = fill(&db);
            db.close().expect("close");
            let victim = key_of(50);
            damage(&path, &model[&victim]);

            let plain = tree_options(&spec, RecordCrcMode::None);
            let db = TreeDbm::open(&path, Access::ReadOnly, &plain).expect("open");
            assert_eq!(figure(&db, "record_crc_mode"), mode.name(), "{what}");
            // Every record of the damaged page fails, and only those.
            let failed = read_all(&db, &model, &path, &what);
            assert!(failed.contains(&victim), "{what}: the damaged record read");
            assert!(
                failed.len() < model.len() / 4,
                "{what}: {} of {} reads failed",
                failed.len(),
                model.len()
            );
            db.close().expect("close");

            let dest = dir.path().join(format!("{name}-{}-restored.kt", mode.bits()));
            let kept = TreeDbm::restore(&path, &dest, &plain).expect("restore");
            let expected: Model = model
                .iter()
                .filter(|(k, _)| !failed.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(kept, expected.len() as u64, "{what}: records restored");
            let restored = TreeDbm::open(&dest, Access::ReadOnly, &plain).expect("open the restored tree");
            t::compare(&restored, &expected, KeyComparator::Lexical)
                .unwrap_or_else(|e| panic!("{what}: the restored tree: {e}"));
            assert_eq!(figure(&restored, "record_crc_mode"), mode.name(), "{what}: the restored mode");
            assert!(restored.is_healthy(), "{what}: the restored tree is not healthy");
        }
    }
}

/// Without a mode, reads trust the records: the damaged value reads back as
/// it is (this is what the modes are for), and a restore, which always checks,
/// still drops it.
#[test]
fn without_a_mode_reads_do_not_check_but_a_restore_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = &specs()[0].1;
    let path = dir.path().join("none.kh");
    let o = hash_options(spec, RecordCrcMode::None);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).expect("create");
    let model = fill(&db);
    db.close().expect("close");
    let victim = key_of(7);
    damage(&path, &model[&victim]);
    let db = HashDbm::open(&path, Access::ReadOnly, &o).expect("open");
    assert_eq!(figure(&db, "record_crc_mode"), "none");
    assert_eq!(db.get(&victim).expect("get"), Some(damaged(&model[&victim])));
    db.close().expect("close");
    let dest = dir.path().join("none-restored.kh");
    assert_eq!(HashDbm::restore(&path, &dest, &o).expect("restore"), model.len() as u64 - 1);

    let path = dir.path().join("none.kt");
    let o = tree_options(spec, RecordCrcMode::None);
    let db = TreeDbm::open(&path, Access::ReadWrite, &o).expect("create");
    let model = fill(&db);
    db.close().expect("close");
    let victim = key_of(50);
    damage(&path, &model[&victim]);
    let db = TreeDbm::open(&path, Access::ReadOnly, &o).expect("open");
    assert_eq!(db.get(&victim).expect("get"), Some(damaged(&model[&victim])));
    db.close().expect("close");
    let dest = dir.path().join("none-restored.kt");
    let kept = TreeDbm::restore(&path, &dest, &o).expect("restore");
    assert!(kept < model.len() as u64, "the damaged page was kept");
    let restored = TreeDbm::open(&dest, Access::ReadOnly, &o).expect("open the restored tree");
    assert_eq!(restored.get(&victim).expect("get"), None);
}

#[test]
fn the_mode_is_kept_in_the_file_and_changed_only_by_a_rebuild() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = &specs()[1].1;
    for mode in RecordCrcMode::ALL {
        let other = if mode.is_on() { RecordCrcMode::None } else { RecordCrcMode::Crc16 };
        let next = RecordCrcMode::ALL[(mode.bits() as usize / 8 + 1) % 4];

        let path = dir.path().join(format!("{}.kh", mode.bits()));
        let db = HashDbm::open(&path, Access::ReadWrite, &hash_options(spec, mode)).expect("create");
        let model = fill(&db);
        db.close().expect("close");
        for writable in [false, true] {
            let db = HashDbm::open(
                &path,
                if writable { Access::ReadWrite } else { Access::ReadOnly },
                &hash_options(spec, other),
            )
            .expect("reopen");
            assert_eq!(db.record_crc_mode().expect("mode"), mode, "hash {mode}, reopened with {other}");
            assert_eq!(figure(&db, "record_crc_mode"), mode.name());
            db.close().expect("close");
        }
        let db = HashDbm::open(&path, Access::ReadWrite, &hash_options(spec, other)).expect("reopen");
        db.rebuild().expect("rebuild");
        assert_eq!(db.record_crc_mode().expect("mode"), mode, "hash {mode}: a plain rebuild keeps it");
        db.rebuild_with(&RebuildParams { record_crc_mode: Some(next), ..RebuildParams::default() })
            .expect("rebuild with a mode");
        db.close().expect("close");
        let db = HashDbm::open(&path, Access::ReadOnly, &hash_options(spec, other)).expect("reopen");
        assert_eq!(db.record_crc_mode().expect("mode"), next, "hash {mode} rebuilt as {next}");
        h::compare(&db, &model).unwrap_or_else(|e| panic!("hash {mode} rebuilt as {next}: {e}"));
        db.close().expect("close");

        let path = dir.path().join(format!("{}.kt", mode.bits()));
        let db = TreeDbm::open(&path, Access::ReadWrite, &tree_options(spec, mode)).expect("create");
        let model = fill(&db);
        db.close().expect("close");
        let db = TreeDbm::open(&path, Access::ReadWrite, &tree_options(spec, other)).expect("reopen");
        assert_eq!(figure(&db, "record_crc_mode"), mode.name(), "tree {mode}, reopened with {other}");
        db.rebuild().expect("rebuild");
        assert_eq!(figure(&db, "record_crc_mode"), mode.name(), "tree {mode}: a plain rebuild keeps it");
        let params = Params::parse(&format!("record_crc_mode={}", next.bits())).expect("params");
        db.rebuild_with_params(&params).expect("rebuild with a mode");
        let refused = db.rebuild_with_params(&Params::parse("num_buckets=5").expect("params"));
        assert_eq!(refused.map_err(|e| e.kind()), Err(ErrorKind::InvalidArgument), "tree {mode}");
        db.close().expect("close");
        let db = TreeDbm::open(&path, Access::ReadOnly, &tree_options(spec, other)).expect("reopen");
        assert_eq!(figure(&db, "record_crc_mode"), next.name(), "tree {mode} rebuilt as {next}");
        t::compare(&db, &model, KeyComparator::Lexical).unwrap_or_else(|e| panic!("tree {mode}: {e}"));
        db.close().expect("close");
    }
}

/// The parameter reaches the classes through the registry (as `kura util`,
/// `kura perf` and Python give it), in kuradb's and the reference's words;
/// a wrong one is refused by name.
#[test]
fn the_parameter_reaches_both_classes_by_any_of_its_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (given, mode) in [("8", "crc-8"), ("RECORD_CRC_16", "crc-16"), ("crc-32", "crc-32"), ("none", "none")]
    {
        for ext in ["kh", "kt"] {
            let path = dir.path().join(format!("p-{}.{ext}", mode));
            let _ = std::fs::remove_file(&path);
            let params = Params::parse(&format!("record_crc_mode={given}")).expect("params");
            let db = kuradb::DbmClass::from_extension(&path)
                .expect("a class")
                .open(Some(&path), Access::ReadWrite, &params)
                .expect("open with the parameter");
            assert_eq!(figure(db.as_ref(), "record_crc_mode"), mode, "{ext} record_crc_mode={given}");
            db.close().expect("close");
        }
    }
    let params = Params::parse("record_crc_mode=12").expect("params");
    let path = dir.path().join("bad.kh");
    let err = kuradb::DbmClass::from_extension(&path).expect("a class").open(
        Some(&path),
        Access::ReadWrite,
        &params,
    );
    let err = err.map(drop).expect_err("record_crc_mode=12 was taken");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("record_crc_mode"), "{err}");
}
