//! A damaged hash database file gives a clear error (a broken-data error that
//! names the file, and the offset where a record is at fault) or a successful
//! restore, never a panic and never a value that was not written: empty,
//! garbage, foreign, truncated files, wild bucket offsets, flipped bytes in
//! records, and files that were not closed cleanly.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::hash::{self as h, show, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCrcMode, RestoreMode, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::{Error, ErrorKind};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The header's size and where the bucket array starts (docs of `header.rs`).
const HEADER: usize = 128;

/// The specs these tests open files with: mapping, positional calls, and
/// atomic block I/O through a page cache.
fn specs() -> Vec<(&'static str, FileSpec)> {
    h::specs()
        .into_iter()
        .filter(|(n, _)| ["mmap-para", "pos-para", "pos-atom-block512-pagecache"].contains(n))
        .collect()
}

/// Seven buckets, so chains are long; the default alignment (8 bytes); the
/// offset width the byte surgery below is written for (five bytes, the
/// default until it became the reference's four).
fn options(file: &FileSpec) -> HashOptions {
    h::options(file).num_buckets(7).offset_width(5)
}

/// The offset of the first record, from the header (docs of `header.rs`).
fn records_start(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[48..56].try_into().expect("a header"))
}

/// The value written for `key` in version `version`: distinct, 0 to 300 bytes.
fn value_of(key: usize, version: usize) -> Vec<u8> {
    let len = (key * 37 + version * 101) % 301;
    let mut v = format!("value of {key} v{version}|").into_bytes();
    v.extend((0..len).map(|i| (i * 13 + key) as u8));
    v
}

fn key_of(i: usize) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

/// Builds and closes a new database of `n` keys at `path`, each key written once
/// or twice, every fifth one removed again; answers what it holds.
fn build(path: &Path, options: &HashOptions, n: usize) -> Model {
    let _ = std::fs::remove_file(path);
    let db = HashDbm::open(path, Access::ReadWrite, options).expect("create the database");
    let mut model = Model::new();
    for i in 0..n {
        db.set(&key_of(i), &value_of(i, 0)).expect("set");
        model.insert(key_of(i), value_of(i, 0));
    }
    for i in (0..n).step_by(3) {
        db.set(&key_of(i), &value_of(i, 1)).expect("overwrite");
        model.insert(key_of(i), value_of(i, 1));
    }
    for i in (0..n).step_by(5) {
        db.remove(&key_of(i)).expect("remove");
        model.remove(&key_of(i));
    }
    db.close().expect("close");
    model
}

/// Every value ever written for each key by [`build`].
fn history(n: usize) -> BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>> {
    (0..n).map(|i| (key_of(i), [value_of(i, 0), value_of(i, 1)].into_iter().collect())).collect()
}

/// What is wrong with `err` as the error of damaged data in `path`: it must be
/// broken data naming the file, and with `offset` name an offset too.
fn broken_problem(err: &Error, path: &Path, offset: bool, what: &str) -> Option<String> {
    let text = err.to_string();
    if err.kind() != ErrorKind::BrokenData {
        Some(format!("{what}: not a broken-data error: {text}"))
    } else if !text.contains(&path.display().to_string()) {
        Some(format!("{what}: the error does not name the file: {text}"))
    } else if offset && !text.contains("offset") {
        Some(format!("{what}: the error does not name the offset: {text}"))
    } else {
        None
    }
}

/// The error must be broken data naming `path`.
#[track_caller]
fn assert_broken(err: &Error, path: &Path, what: &str) {
    if let Some(problem) = broken_problem(err, path, false, what) {
        panic!("{problem}");
    }
}

/// Panics listing `problems`, if there are any.
#[track_caller]
fn assert_no_problems(problems: &[String]) {
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// Opening `path` read-only and for writing both fail with broken data naming
/// it, and leave its bytes as they were; so does an explicit restore of it.
#[track_caller]
fn assert_refused(path: &Path, file: &FileSpec, name: &str, case: &str) -> Vec<Error> {
    let before = std::fs::read(path).expect("read the file");
    let mut errors = Vec::new();
    for writable in [false, true] {
        let what = format!("[{name}] {case}: open with writable={writable}");
        match HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, &options(file))
        {
            Ok(_) => panic!("{what} succeeded"),
            Err(e) => {
                assert_broken(&e, path, &what);
                errors.push(e);
            }
        }
        assert!(std::fs::read(path).expect("read the file") == before, "{what} changed the file");
    }
    let dest = path.with_extension("restored");
    match HashDbm::restore(path, &dest, &options(file)) {
        Ok(n) => panic!("[{name}] {case}: restore succeeded with {n} records"),
        Err(e) => assert_broken(&e, path, &format!("[{name}] {case}: restore")),
    }
    errors
}

/// A zero-length file is no database: a reader is refused with a broken-data
/// error naming it (and the file stays empty), while a writer makes a new
/// database of it.
#[test]
fn an_empty_file_is_refused_to_a_reader_and_initialized_by_a_writer() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (name, file) in specs() {
        let path = dir.path().join(format!("{name}.kh"));
        std::fs::write(&path, b"").expect("create an empty file");
        match HashDbm::open(&path, Access::ReadOnly, &options(&file)) {
            Ok(_) => panic!("[{name}] opening an empty file read-only succeeded"),
            Err(e) => assert_broken(&e, &path, &format!("[{name}] open an empty file read-only")),
        }
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 0, "[{name}] the reader wrote the file");
        let db =
            HashDbm::open(&path, Access::ReadWrite, &options(&file)).expect("open an empty file for writing");
        db.set(b"k", b"v").expect("set");
        db.close().expect("close");
        let db = HashDbm::open(&path, Access::ReadOnly, &options(&file)).expect("reopen read-only");
        assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v"[..]), "[{name}] the new database");
    }
}

/// A file that is not a kuradb hash database is refused, naming the file and
/// left untouched: random bytes, a short file, a wrong magic, a Tkrzw file
/// (with a hint at how to convert it), a damaged header, an unknown format
/// version and impossible tuning parameters.
#[test]
fn foreign_and_damaged_headers_are_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let valid_path = dir.path().join("valid.kh");
    build(&valid_path, &options(&FileSpec::default()), 10);
    let valid = std::fs::read(&valid_path).expect("read the valid file");
    let with_crc = |mut b: Vec<u8>| {
        let crc = crc32fast::hash(&b[..124]);
        b[124..128].copy_from_slice(&crc.to_le_bytes());
        b
    };
    let mut rng = SmallRng::seed_from_u64(7);
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("random bytes", (0..8192).map(|_| rng.gen()).collect()),
        ("a file shorter than the header", valid[..100].to_vec()),
        ("a wrong magic", [b"NotAKura".as_slice(), &valid[8..]].concat()),
        ("a Tkrzw magic", [b"TkrzwHDB".as_slice(), &valid[8..]].concat()),
    ];
    let mut count_changed = valid.clone();
    count_changed[24] ^= 0x01;
    cases.push(("a header whose checksum does not match", count_changed));
    let mut version = valid.clone();
    version[8] = 99;
    cases.push(("format version 99", with_crc(version)));
    let mut width = valid.clone();
    width[10] = 9;
    cases.push(("offset width 9", with_crc(width)));
    let mut buckets = valid.clone();
    buckets[16..24].copy_from_slice(&0u64.to_le_bytes());
    cases.push(("zero buckets", with_crc(buckets)));
    let mut start = valid.clone();
    start[48..56].copy_from_slice(&100u64.to_le_bytes());
    cases.push(("records inside the header", with_crc(start)));
    for (name, file) in specs() {
        for (case, bytes) in &cases {
            let path = dir.path().join(format!("{name}-{}.kh", case.replace(' ', "-")));
            std::fs::write(&path, bytes).expect("write the damaged file");
            let errors = assert_refused(&path, &file, name, case);
            if *case == "a Tkrzw magic" {
                for e in errors {
                    assert!(e.to_string().contains("Tkrzw"), "[{name}] the error does not say Tkrzw: {e}");
                }
            }
        }
    }
}

/// A file cut inside its header or its bucket array is refused, naming the
/// file, and left untouched.
#[test]
fn a_file_cut_before_its_records_is_refused() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (name, file) in specs() {
        let o = options(&file).num_buckets(1000);
        let path = dir.path().join(format!("{name}.kh"));
        build(&path, &o, 30);
        let whole = std::fs::read(&path).expect("read");
        for (case, cut) in [("inside the header", 64), ("inside the bucket array", HEADER + 1000)] {
            let cut_path = dir.path().join(format!("{name}-cut-{cut}.kh"));
            std::fs::write(&cut_path, &whole[..cut]).expect("write the cut file");
            let before = std::fs::read(&cut_path).expect("read");
            for writable in [false, true] {
                match HashDbm::open(
                    &cut_path,
                    if writable { Access::ReadWrite } else { Access::ReadOnly },
                    &o,
                ) {
                    Ok(_) => panic!("[{name}] opening a file cut {case} (writable={writable}) succeeded"),
                    Err(e) => assert_broken(&e, &cut_path, &format!("[{name}] open a file cut {case}")),
                }
                assert!(
                    std::fs::read(&cut_path).expect("read") == before,
                    "[{name}] the open changed the file"
                );
            }
        }
    }
}

/// A file cut inside its records answers each key with its value or a broken
/// data error naming the file and the offset, never with "absent" or a wrong
/// value; walks fail the same way; an explicit restore keeps every record that
/// could still be read, with its value.
#[test]
fn a_file_cut_inside_its_records_gives_values_or_errors_and_restores() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut problems = Vec::new();
    for (name, file) in specs() {
        for cache_buckets in [false, true] {
            let o = options(&file).cache_buckets(cache_buckets);
            let path = dir.path().join(format!("{name}.kh"));
            let model = build(&path, &o, 60);
            let whole = std::fs::read(&path).expect("read");
            let start = HEADER + 7 * 5;
            for cut in [whole.len() - 1, whole.len() * 3 / 4, whole.len() / 2, start + 20] {
                let what = format!("[{name}] cache_buckets={cache_buckets}, cut at {cut} of {}", whole.len());
                let cut_path = dir.path().join(format!("{name}-cut.kh"));
                std::fs::write(&cut_path, &whole[..cut]).expect("write the cut file");
                let db = HashDbm::open(&cut_path, Access::ReadOnly, &o)
                    .unwrap_or_else(|e| panic!("{what}: open: {e}"));
                let mut readable = Model::new();
                for (key, value) in &model {
                    match db.get(key) {
                        Ok(Some(got)) if &got == value => {
                            readable.insert(key.clone(), got);
                        }
                        Ok(got) => problems.push(format!(
                            "{what}: get {} answered {:?}",
                            show(key),
                            got.as_deref().map(show)
                        )),
                        Err(e) => {
                            problems.extend(broken_problem(&e, &cut_path, true, &format!("{what}: get")))
                        }
                    }
                }
                if let Err(e) = h::records(&db) {
                    if !e.contains(&cut_path.display().to_string()) {
                        problems.push(format!("{what}: the walk's error does not name the file: {e}"));
                    }
                }
                drop(db);
                let dest = dir.path().join(format!("{name}-restored.kh"));
                let kept = match HashDbm::restore(&cut_path, &dest, &o) {
                    Ok(kept) => kept,
                    Err(e) => {
                        problems.push(format!("{what}: restore: {e}"));
                        continue;
                    }
                };
                let restored = HashDbm::open(&dest, Access::ReadOnly, &o).expect("open the restored file");
                let got =
                    h::records(&restored).unwrap_or_else(|e| panic!("{what}: walk the restored file: {e}"));
                if kept != got.len() as u64 {
                    problems.push(format!("{what}: restore answered {kept}, the copy holds {}", got.len()));
                }
                for (key, value) in &got {
                    if model.get(key) != Some(value) {
                        problems.push(format!("{what}: the restore made up {} = {}", show(key), show(value)));
                    }
                }
                for key in readable.keys().filter(|k| !got.contains_key(*k)) {
                    problems.push(format!("{what}: the restore lost the readable {}", show(key)));
                }
            }
        }
    }
    assert_no_problems(&problems);
}

/// Bucket offsets that point past the end of the file, into the bucket array
/// or into the middle of a record give broken-data errors naming the file and
/// the offset (and mark the database unhealthy); a restore, which ignores the
/// buckets, gets every record back.
#[test]
fn wild_bucket_offsets_are_broken_data_and_restore_ignores_them() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut problems = Vec::new();
    for (name, file) in specs() {
        for cache_buckets in [false, true] {
            for case in ["past the end", "into the bucket array", "into a record"] {
                let o = options(&file).cache_buckets(cache_buckets);
                let path = dir.path().join(format!("{name}.kh"));
                let model = build(&path, &o, 40);
                let mut bytes = std::fs::read(&path).expect("read");
                // Buckets hold offset >> align_pow in five bytes.
                let wild = match case {
                    "past the end" => u64::MAX,
                    "into the bucket array" => 1,
                    _ => (records_start(&bytes) + 8) >> o.align_pow,
                };
                for b in 0..7 {
                    bytes[HEADER + b * 5..HEADER + b * 5 + 5].copy_from_slice(&wild.to_le_bytes()[..5]);
                }
                std::fs::write(&path, &bytes).expect("write");
                let what = format!("[{name}] cache_buckets={cache_buckets}, buckets {case}");
                let db = HashDbm::open(&path, Access::ReadOnly, &o)
                    .unwrap_or_else(|e| panic!("{what}: open: {e}"));
                for key in model.keys() {
                    match db.get(key) {
                        Ok(got) => problems.push(format!(
                            "{what}: get {} answered {:?}",
                            show(key),
                            got.as_deref().map(show)
                        )),
                        Err(e) => problems.extend(broken_problem(&e, &path, true, &format!("{what}: get"))),
                    }
                }
                if h::records(&db).is_ok() {
                    problems.push(format!("{what}: the walk succeeded"));
                }
                if db.is_healthy() {
                    problems.push(format!("{what}: the database still says it is healthy"));
                }
                drop(db);
                let dest = dir.path().join(format!("{name}-restored.kh"));
                match HashDbm::restore(&path, &dest, &o) {
                    Err(e) => problems.push(format!("{what}: restore: {e}")),
                    Ok(kept) => {
                        let restored =
                            HashDbm::open(&dest, Access::ReadOnly, &o).expect("open the restored file");
                        if let Err(e) = h::compare(&restored, &model) {
                            problems.push(format!("{what}: the restored file ({kept} records): {e}"));
                        }
                    }
                }
            }
        }
    }
    problems.dedup();
    assert_no_problems(&problems);
}

/// With record checksums, a flipped byte in a record's value makes reading
/// that record a broken-data error naming the file and the offset, while the
/// other records read as written; a restore drops just that record.
#[test]
fn a_flipped_byte_fails_the_record_checksum_and_restore_skips_the_record() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (name, file) in specs() {
        let o = options(&file).record_crc_mode(RecordCrcMode::Crc32);
        let path = dir.path().join(format!("{name}.kh"));
        let model = build(&path, &o, 30);
        let victim = key_of(7);
        let value = model[&victim].clone();
        let mut bytes = std::fs::read(&path).expect("read");
        let at = bytes
            .windows(value.len())
            .position(|w| w == value.as_slice())
            .expect("the victim's value is in the file");
        bytes[at + value.len() / 2] ^= 0x20;
        std::fs::write(&path, &bytes).expect("write");
        let db = HashDbm::open(&path, Access::ReadOnly, &o).expect("open");
        for (key, value) in &model {
            let got = db.get(key);
            if *key == victim {
                let e = got.expect_err(&format!("[{name}] reading the damaged record succeeded"));
                assert_broken(&e, &path, &format!("[{name}] get the damaged record"));
                assert!(e.to_string().contains("offset"), "[{name}] no offset in: {e}");
            } else {
                let got = got.unwrap_or_else(|e| panic!("[{name}] get {}: {e}", show(key)));
                assert_eq!(got.as_ref(), Some(value), "[{name}] get {}", show(key));
            }
        }
        assert!(!db.is_healthy(), "[{name}] the database still says it is healthy");
        drop(db);
        let dest = dir.path().join(format!("{name}-restored.kh"));
        let kept = HashDbm::restore(&path, &dest, &o).unwrap_or_else(|e| panic!("[{name}] restore: {e}"));
        let mut expected = model.clone();
        expected.remove(&victim);
        assert_eq!(kept, expected.len() as u64, "[{name}] records restored");
        let restored = HashDbm::open(&dest, Access::ReadOnly, &o).expect("open the restored file");
        h::compare(&restored, &expected).unwrap_or_else(|e| panic!("[{name}] the restored file: {e}"));
    }
}

/// Writes a database, synchronizes it hard and copies its file while it is
/// still open, `copies` times; answers the copies and what they hold.
fn unclean_copies(dir: &Path, name: &str, o: &HashOptions, copies: usize) -> (Vec<PathBuf>, Model) {
    let path = dir.join(format!("{name}.kh"));
    let db = HashDbm::open(&path, Access::ReadWrite, o).expect("create");
    let mut model = Model::new();
    for i in 0..80 {
        db.set(&key_of(i), &value_of(i, 0)).expect("set");
        model.insert(key_of(i), value_of(i, 0));
    }
    db.synchronize(Durability::Hard).expect("hard synchronize");
    for i in (0..80).step_by(4) {
        db.set(&key_of(i), &value_of(i, 1)).expect("overwrite");
        model.insert(key_of(i), value_of(i, 1));
        db.remove(&key_of(i + 1)).expect("remove");
        model.remove(&key_of(i + 1));
    }
    let paths: Vec<PathBuf> = (0..copies).map(|i| dir.join(format!("{name}-unclean-{i}.kh"))).collect();
    for copy in &paths {
        h::crash_copy(&db, &path, copy).unwrap_or_else(|e| panic!("[{name}] {e}"));
    }
    db.close().expect("close");
    (paths, model)
}

/// A file not closed cleanly is refused for writing with RestoreMode::Refuse,
/// with a message naming it and saying so (the file untouched); opened
/// read-only it says it is not healthy; with RestoreMode::Automatic it is
/// restored to everything synchronized and is clean afterwards.
#[test]
fn an_unclean_file_is_refused_or_restored_automatically() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut all = specs();
    all.extend(h::direct_specs());
    for (name, file) in all {
        for update_mode in [UpdateMode::InPlace, UpdateMode::Appending] {
            let o = options(&file).update_mode(update_mode);
            let what = format!("[{name}] {update_mode:?}");
            let (copies, model) = unclean_copies(dir.path(), name, &o, 1);
            let copy = &copies[0];
            let before = std::fs::read(copy).expect("read");
            let refuse = o.clone().restore(RestoreMode::Refuse);
            match HashDbm::open(copy, Access::ReadWrite, &refuse) {
                Ok(_) => panic!("{what}: opening an unclean file with RestoreMode::Refuse succeeded"),
                Err(e) => {
                    assert_broken(&e, copy, &format!("{what}: refuse"));
                    assert!(e.to_string().contains("not closed cleanly"), "{what}: unclear message: {e}");
                }
            }
            assert!(std::fs::read(copy).expect("read") == before, "{what}: the refusal changed the file");
            match HashDbm::open(copy, Access::ReadOnly, &refuse) {
                Ok(db) => {
                    assert!(!db.is_healthy(), "{what}: an unclean file opened read-only says it is healthy")
                }
                Err(e) => assert_broken(&e, copy, &format!("{what}: open read-only")),
            }
            let db = HashDbm::open(copy, Access::ReadWrite, &o)
                .unwrap_or_else(|e| panic!("{what}: automatic restore: {e}"));
            h::compare(&db, &model).unwrap_or_else(|e| panic!("{what}: after the automatic restore: {e}"));
            assert!(db.is_healthy(), "{what}: the restored database says it is not healthy");
            db.set(b"after", b"restore").expect("set after the restore");
            db.close().expect("close");
            let db = HashDbm::open(copy, Access::ReadWrite, &refuse)
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let mut model = model;
            model.insert(b"after".to_vec(), b"restore".to_vec());
            h::compare(&db, &model).unwrap_or_else(|e| panic!("{what}: reopened after the restore: {e}"));
        }
    }
}

/// HashDbm::restore copies an unclean file into a new, clean database holding
/// everything synchronized, and leaves the source as it was.
#[test]
fn an_explicit_restore_writes_a_clean_copy() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (name, file) in specs() {
        for update_mode in [UpdateMode::InPlace, UpdateMode::Appending] {
            let o = options(&file).update_mode(update_mode);
            let what = format!("[{name}] {update_mode:?}");
            let (copies, model) = unclean_copies(dir.path(), name, &o, 1);
            let before = std::fs::read(&copies[0]).expect("read");
            let dest = dir.path().join(format!("{name}-explicit.kh"));
            let kept =
                HashDbm::restore(&copies[0], &dest, &o).unwrap_or_else(|e| panic!("{what}: restore: {e}"));
            assert_eq!(kept, model.len() as u64, "{what}: records restored");
            assert!(
                std::fs::read(&copies[0]).expect("read") == before,
                "{what}: the restore changed its source"
            );
            let refuse = o.clone().restore(RestoreMode::Refuse);
            let db = HashDbm::open(&dest, Access::ReadWrite, &refuse)
                .unwrap_or_else(|e| panic!("{what}: open the copy: {e}"));
            h::compare(&db, &model).unwrap_or_else(|e| panic!("{what}: the restored copy: {e}"));
        }
    }
}

/// Random damage anywhere in a database file (header, buckets, records) never
/// panics: opening, reading, walking and cursors answer or fail with broken
/// data naming the file, and a restore either fails so or keeps only values
/// that were once written for their keys.
#[test]
fn random_damage_never_panics_or_invents_values() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let keys = 40;
    let history = history(keys);
    let mut problems = Vec::new();
    for (name, file) in specs() {
        for seed in 0..24u64 {
            let o = options(&file)
                .record_crc_mode(RecordCrcMode::ALL[seed as usize % 4])
                .cache_buckets(seed % 3 == 0);
            let what = format!(
                "[{name}] seed {seed}, record_crc_mode={}, cache_buckets={}",
                o.record_crc_mode, o.cache_buckets
            );
            let path = dir.path().join(format!("{name}-{seed}.kh"));
            let model = build(&path, &o, keys);
            let mut bytes = std::fs::read(&path).expect("read");
            let mut rng = SmallRng::seed_from_u64(seed);
            for _ in 0..rng.gen_range(1..=8) {
                // Mostly past the header, whose checksum refuses any change.
                let from = if rng.gen_ratio(1, 8) { 0 } else { HEADER };
                let at = rng.gen_range(from..bytes.len());
                bytes[at] = rng.gen();
            }
            std::fs::write(&path, &bytes).expect("write");
            let mut check = |r: Result<(), Error>, op: &str| {
                if let Err(e) = r {
                    problems.extend(broken_problem(&e, &path, false, &format!("{what}: {op}")));
                }
            };
            match HashDbm::open(&path, Access::ReadOnly, &o) {
                Err(e) => check(Err(e), "open"),
                Ok(db) => {
                    for key in model.keys() {
                        check(db.get(key).map(|_| ()), "get");
                    }
                    check(db.count().map(|_| ()), "count");
                    let walk = || -> Result<(), Error> {
                        let mut cursor = db.iter()?;
                        cursor.first()?;
                        for _ in 0..=keys * 2 {
                            if cursor.get()?.is_none() {
                                break;
                            }
                            cursor.next()?;
                        }
                        Ok(())
                    };
                    check(walk(), "cursor walk");
                    check(
                        db.process_each(Access::ReadOnly, &mut |_, _| kuradb::dbm::Action::Keep),
                        "process_each",
                    );
                }
            }
            let dest = dir.path().join(format!("{name}-{seed}-restored.kh"));
            match HashDbm::restore(&path, &dest, &o) {
                Err(e) => check(Err(e), "restore"),
                Ok(_) => {
                    let restored =
                        HashDbm::open(&dest, Access::ReadOnly, &o).expect("open the restored file");
                    let got = h::records(&restored)
                        .unwrap_or_else(|e| panic!("{what}: walk the restored file: {e}"));
                    for (key, value) in &got {
                        if !history.get(key).is_some_and(|h| h.contains(value)) {
                            problems.push(format!(
                                "{what}: the restore made up {} = {}",
                                show(key),
                                show(value)
                            ));
                        }
                    }
                }
            }
        }
    }
    assert_no_problems(&problems);
}

/// A tree database's file is a hash file of tree nodes: HashDbm::restore
/// refuses it by name (it made a file no hash open took, found by fuzzing
/// hash_file), and TreeDbm::restore restores it.
#[test]
fn a_tree_file_is_restored_as_a_tree_not_as_a_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.kt");
    let tree =
        kuradb::TreeDbm::open(&path, Access::ReadWrite, &kuradb::TreeOptions::default()).expect("open");
    tree.set(b"k", b"v").expect("set");
    tree.close().expect("close");
    let err =
        HashDbm::restore(&path, dir.path().join("h.kh"), &HashOptions::default()).expect_err("restored");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("holds a tree database") && err.to_string().contains("t.kt"), "{err}");
    let dest = dir.path().join("r.kt");
    assert_eq!(kuradb::TreeDbm::restore(&path, &dest, &kuradb::TreeOptions::default()).expect("restore"), 1);
}

/// A header claiming far more records than the file has room for (its
/// second half's checksum made to hold) does not size a rebuild's table:
/// once, a claim of 10^9 records made an 18 GB file from a few kilobytes
/// (found by fuzzing `hash_file`).
#[test]
fn a_claimed_record_count_does_not_size_a_rebuild() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, file) in specs() {
        let path = dir.path().join(format!("claims-{name}.kh"));
        let model = build(&path, &options(&file), 40);
        let mut bytes = std::fs::read(&path).expect("read the file");
        bytes[72..80].copy_from_slice(&1_000_000_000u64.to_le_bytes());
        let crc = crc32fast::hash(&bytes[64..124]);
        bytes[124..128].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write the file");
        let db = HashDbm::open(&path, Access::ReadWrite, &options(&file)).expect("open");
        db.rebuild().expect("rebuild");
        let inspected = db.inspect().expect("inspect");
        let buckets: u64 = inspected
            .iter()
            .find(|(k, _)| k == "num_buckets")
            .and_then(|(_, v)| v.parse().ok())
            .expect("num_buckets in inspect");
        assert!(buckets <= 1021, "[{name}] the rebuild made {buckets} buckets for {} records", model.len());
        for (key, value) in &model {
            assert_eq!(
                db.get(key).expect("get").as_deref(),
                Some(value.as_slice()),
                "[{name}] {}",
                show(key)
            );
        }
        db.close().expect("close");
        let size = std::fs::metadata(&path).expect("metadata").len();
        assert!(size < 1 << 20, "[{name}] the rebuilt file holds {size} bytes");
    }
}

/// A file whose records end inside an alignment unit (cut, or damaged) is
/// restored before a writer uses it, or refused with RestoreMode::Refuse
/// naming where it ends: a writer appending at that end put its record
/// where no chain could address it, and a get after a successful set
/// answered nothing (found by fuzzing `hash_file`).
#[test]
fn a_writer_restores_a_file_that_ends_inside_a_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, file) in specs() {
        for mode in [UpdateMode::InPlace, UpdateMode::Appending] {
            let what = format!("[{name}] {mode:?}");
            let o = options(&file).update_mode(mode).align_pow(6);
            let path = dir.path().join(format!("ends-{name}.kh"));
            let model = build(&path, &o, 30);
            let mut bytes = std::fs::read(&path).expect("read the file");
            bytes.truncate(bytes.len() - 5);
            std::fs::write(&path, &bytes).expect("write the cut file");
            let refused = HashDbm::open(&path, Access::ReadWrite, &o.clone().restore(RestoreMode::Refuse))
                .err()
                .unwrap_or_else(|| panic!("{what}: a writer opened the cut file with RestoreMode::Refuse"));
            assert_eq!(refused.kind(), ErrorKind::BrokenData, "{what}: {refused}");
            assert!(refused.to_string().contains("inside a record"), "{what}: {refused}");
            let db =
                HashDbm::open(&path, Access::ReadWrite, &o).unwrap_or_else(|e| panic!("{what}: open: {e}"));
            db.set(b"new key", b"new value").expect("set");
            assert_eq!(db.get(b"new key").expect("get").as_deref(), Some(&b"new value"[..]), "{what}");
            db.close().expect("close");
            let db = HashDbm::open(&path, Access::ReadOnly, &o).expect("reopen");
            assert_eq!(db.get(b"new key").expect("get").as_deref(), Some(&b"new value"[..]), "{what}");
            let records = h::records(&db).unwrap_or_else(|e| panic!("{what}: walk: {e}"));
            // The cut took the last record written; every other one is kept.
            let lost = model.iter().filter(|(k, v)| records.get(*k) != Some(*v)).count();
            assert!(lost <= 1, "{what}: {lost} records lost to a 5-byte cut");
            db.close().expect("close");
        }
    }
}

/// A new record written over the space of a key's replaced version and torn
/// after its first 8 bytes (its magic, link and most of its epoch new, the
/// old version's checksum and body left) fails its checksum: the restore
/// keeps the synchronized value, not the replaced one at the new epoch.
#[test]
fn a_record_torn_over_a_replaced_version_does_not_bring_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    // The default layout: 4-byte offsets, 8-byte alignment.
    let o = HashOptions::default().num_buckets(7);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    db.set(b"other", b"a neighbour").unwrap();
    db.set(b"key", b"the first value").unwrap();
    db.synchronize(Durability::Hard).unwrap();
    db.set(b"key", b"the second value, longer than the first").unwrap();
    // The second synchronization makes the first version's void mark durable.
    db.synchronize(Durability::Hard).unwrap();
    db.synchronize(Durability::Hard).unwrap();
    db.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[8], 7, "a new file's format version");
    let epoch = u32::from_le_bytes(bytes[88..92].try_into().unwrap());
    let value_at = bytes.windows(15).position(|w| w == b"the first value").expect("the first version");
    // Its record: magic, link (4), epoch, checksum, three one-byte sizes, "key".
    let old = value_at - (1 + 4 + 8 + 3 + 3);
    assert_eq!((bytes[old], &bytes[old + 16..old + 19]), (0xA5, &b"key"[..]), "the replaced version");
    // The torn write's first 8 bytes: a live record of a later epoch.
    let mut head = vec![0xC8, 0, 0, 0, 0];
    head.extend_from_slice(&(epoch + 1).to_le_bytes()[..3]);
    bytes[old..old + 8].copy_from_slice(&head);
    let crashed = dir.path().join("crashed.kh");
    std::fs::write(&crashed, &bytes).unwrap();
    let restored = dir.path().join("restored.kh");
    assert_eq!(HashDbm::restore(&crashed, &restored, &o).unwrap(), 2);
    let db = HashDbm::open(&restored, Access::ReadOnly, &o).unwrap();
    let value = db.get(b"key").unwrap();
    let want = &b"the second value, longer than the first"[..];
    assert_eq!(value.as_deref(), Some(want), "{}", h::show_opt(value.as_deref()));
    assert_eq!(db.get(b"other").unwrap().as_deref(), Some(&b"a neighbour"[..]));
}

/// A removal of a record of the current epoch rewrites it in place as a
/// void record of the same epoch. A crash that writes back the void
/// record's later bytes and not its first (a page cache's blocks) leaves
/// the live record's magic byte in front of the void record's checksum and
/// body. From format version 7 that fails its checksum, and the restore
/// goes back to the synchronized value; a file of version 6 keeps version
/// 6's checksums until rebuilt, and there it reads as the key with an
/// empty value, which no one wrote.
#[test]
fn a_removal_torn_with_its_live_magic_byte_does_not_read_as_an_empty_value() {
    for version in [7u8, 6] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.kh");
        // The default layout: 4-byte offsets, 8-byte alignment.
        let o = HashOptions::default().num_buckets(7);
        HashDbm::open(&path, Access::ReadWrite, &o).unwrap().close().unwrap();
        if version == 6 {
            assert_eq!(std::fs::read(&path).unwrap()[8], 7, "a new file's format version");
            h::patch_header(&path, 8, 6);
        }
        let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
        db.set(b"other", b"a neighbour").unwrap();
        db.set(b"key", b"the first value").unwrap();
        db.synchronize(Durability::Hard).unwrap();
        db.set(b"key", b"the second value").unwrap();
        db.remove(b"key").unwrap();
        // The file as a crash now leaves it, open for writing, the first
        // version not yet marked void.
        let mut bytes = std::fs::read(&path).unwrap();
        drop(db);
        assert_eq!(bytes[8], version, "the file keeps its version");
        // The removal: magic, link (4), epoch, checksum, sizes 3, 0 and
        // its padding's, then "key".
        let starts: Vec<usize> = bytes
            .windows(3)
            .enumerate()
            .filter(|&(at, w)| w == b"key" && at >= 16 && bytes[at - 3] == 3 && bytes[at - 2] == 0)
            .map(|(at, _)| at - 16)
            .filter(|&start| bytes[start] == 0xA5)
            .collect();
        assert_eq!(starts.len(), 1, "the removal's void record");
        bytes[starts[0]] = 0xC8;
        let crashed = dir.path().join("crashed.kh");
        std::fs::write(&crashed, &bytes).unwrap();
        let restored = dir.path().join("restored.kh");
        HashDbm::restore(&crashed, &restored, &o).unwrap();
        let db = HashDbm::open(&restored, Access::ReadOnly, &o).unwrap();
        let value = db.get(b"key").unwrap();
        let want: &[u8] = if version == 7 { b"the first value" } else { b"" };
        assert_eq!(value.as_deref(), Some(want), "version {version}: {}", h::show_opt(value.as_deref()));
        assert_eq!(db.get(b"other").unwrap().as_deref(), Some(&b"a neighbour"[..]));
    }
}

/// The offset and epoch of the record of `key` followed by `value` in `bytes`,
/// a file of `width`-byte offsets whose record sizes fit one byte each.
fn record_of(bytes: &[u8], width: usize, key: &[u8], value: &[u8]) -> Option<(usize, u32)> {
    let mut body = key.to_vec();
    body.extend_from_slice(value);
    let at = bytes.windows(body.len()).position(|w| w == &body[..])?;
    let start = at - (1 + width + 8 + 3);
    let epoch = u32::from_le_bytes(bytes[start + 1 + width..start + 5 + width].try_into().unwrap());
    Some((start, epoch))
}

/// How the record whose space is reused stops being its key's.
#[derive(Clone, Copy, Debug)]
enum Freed {
    /// Removed in a later epoch than it was written in.
    Removed,
    /// Replaced in a later epoch by a value too large for its space.
    Replaced,
    /// Replaced so in the epoch it was written in.
    ReplacedAtOnce,
}

/// Sets a record, frees it as `freed` says (synchronizing hard until its
/// space is in the pool, where its epoch is over) and `syncs` more times,
/// then sets another record of the same size: answers whether that one
/// went to the freed one's space.
fn reuses_freed_space(width: u8, align_pow: u8, freed: Freed, syncs: u32) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let o = HashOptions::default().num_buckets(7).offset_width(width).align_pow(align_pow);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    let (gone, next) = ([b'g'; 40], [b'n'; 40]);
    db.set(b"gone", &gone).unwrap();
    let mut epochs = 0;
    if !matches!(freed, Freed::ReplacedAtOnce) {
        db.synchronize(Durability::Hard).unwrap();
        epochs += 1;
    }
    match freed {
        Freed::Removed => assert!(db.remove(b"gone").unwrap()),
        Freed::Replaced | Freed::ReplacedAtOnce => db.set(b"gone", &[b'h'; 300]).unwrap(),
    }
    if !matches!(freed, Freed::ReplacedAtOnce) {
        // The first makes the void mark durable, the second its space reusable.
        for _ in 0..2 {
            db.synchronize(Durability::Hard).unwrap();
        }
        epochs += 2;
    }
    for _ in 0..syncs {
        db.synchronize(Durability::Hard).unwrap();
    }
    let (freed_at, written) =
        record_of(&std::fs::read(&path).unwrap(), width.into(), b"gone", &gone).unwrap();
    db.set(b"next", &next).unwrap();
    let (at, epoch) = record_of(&std::fs::read(&path).unwrap(), width.into(), b"next", &next).unwrap();
    assert_eq!(epoch, written + epochs + syncs, "each hard synchronization begins an epoch");
    db.close().unwrap();
    at == freed_at
}

/// A record that stopped being its key's after the hard synchronization
/// that covered it is marked void by its magic byte alone and keeps the
/// checksum it was written with. A new record written over its space and
/// torn before the end of its epoch's bytes would leave the old checksum
/// and body behind the new magic byte: read live again if the new epoch's
/// bytes there are the old one's (and once its replacement, removed
/// later, is gone too, as the key's value). Such space is not reused: never
/// where the first alignment unit ends before the epoch, and not in an
/// epoch whose bytes in that unit match. Space of the epoch's own records
/// is reused in that epoch whatever the layout.
#[test]
fn a_freed_record_s_space_is_not_reused_where_a_torn_write_could_revive_it() {
    for freed in [Freed::Removed, Freed::Replaced] {
        let reuses = |width, align_pow, syncs| reuses_freed_space(width, align_pow, freed, syncs);
        // The default layout: three of the epoch's bytes in the first 8.
        assert!(reuses(4, 3, 0), "{freed:?}");
        // Offsets of 6 bytes: one epoch byte, which repeats every 256 epochs.
        assert!(reuses(6, 3, 0), "{freed:?}");
        assert!(!reuses(6, 3, 253), "{freed:?}: the epoch's first byte as the freed record's");
        assert!(reuses(6, 3, 254), "{freed:?}");
        // None of the epoch's bytes in the first unit.
        assert!(!reuses(8, 3, 0), "{freed:?}");
        assert!(!reuses(4, 2, 0), "{freed:?}");
        // The whole epoch in the first unit: reused whatever the epochs.
        assert!(reuses(8, 4, 0), "{freed:?}");
        assert!(reuses(3, 3, 253), "{freed:?}");
    }
    for (width, align_pow) in [(8, 3), (4, 2), (4, 3)] {
        assert!(reuses_freed_space(width, align_pow, Freed::ReplacedAtOnce, 0), "{width} {align_pow}");
        // Kept in the pool past its epoch, it is checked like the others.
        assert_eq!(
            reuses_freed_space(width, align_pow, Freed::ReplacedAtOnce, 1),
            width == 4 && align_pow == 3
        );
    }
}
