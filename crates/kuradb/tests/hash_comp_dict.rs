//! Compression dictionaries in every mode (zstd's own, the preset
//! dictionaries of lz4 and zlib): values round-trip with and without one,
//! through reopen and rebuild; lz4 and zlib files of the format before
//! their dictionaries (version 2, made by the code of that time: the files
//! in `tests/data/compression`) read unchanged and take no dictionary until
//! a rebuild; a damaged value compressed with a dictionary is a broken-data
//! error, never a panic; an encrypted file keeps none; and a dictionary
//! shrinks JSON-like values.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::hash::{self as h, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCompMode};
use kuradb::dbm::{Access, Dbm};
use kuradb::ErrorKind;
use rand::{Rng, SeedableRng};

/// Every mode that compresses.
fn modes() -> impl Iterator<Item = RecordCompMode> {
    RecordCompMode::compressing()
}

/// A JSON-like record of 200 to 2000 bytes: repeated field names, varying
/// numbers and strings.
fn json_value(rng: &mut impl Rng, i: usize) -> Vec<u8> {
    let mut s = format!("{{\"id\":{i},\"user\":\"user{}\",\"items\":[", rng.gen_range(0..5000));
    let target = rng.gen_range(200..2000);
    while s.len() + 60 < target {
        let sku = rng.gen_range(0..100_000);
        let price = rng.gen_range(100..99_999);
        s += &format!("{{\"sku\":\"SKU-{sku:06}\",\"price\":{price},\"status\":\"shipped\"}},");
    }
    s += "],\"note\":\"ok\"}";
    s.into_bytes()
}

/// Sets `n` JSON-like records from `first` on (about 1.1 KB each: 1,000
/// complete a zstd dictionary's sample of 1 MiB, 240 an lz4 or zlib one's
/// of 256 KiB); answers them.
fn fill_json(db: &dyn Dbm, first: usize, n: usize, seed: u64) -> Model {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut model = BTreeMap::new();
    for i in first..first + n {
        let (key, value) = (format!("rec{i:05}").into_bytes(), json_value(&mut rng, i));
        db.set(&key, &value).unwrap();
        model.insert(key, value);
    }
    model
}

fn info(db: &dyn Dbm, name: &str) -> String {
    db.inspect().unwrap().into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap_or_default()
}

fn version(path: &Path) -> u8 {
    std::fs::read(path).unwrap()[8]
}

/// Record `i` of the files in `tests/data/compression`, as the program that
/// made them wrote it: JSON-like, 150 to 700 bytes; every seventh random
/// (stored raw). `key005` was removed.
fn fixture_value(i: u64) -> Vec<u8> {
    if i % 7 == 3 {
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        return (0..120)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
    }
    let mut s = format!("{{\"id\":{i},\"user\":\"user{}\",\"items\":[", i * 37 % 1000);
    for j in 0..(i % 9 + 1) {
        s += &format!(
            "{{\"sku\":\"SKU-{:06}\",\"price\":{},\"status\":\"shipped\"}},",
            (i * 7919 + j * 104729) % 1_000_000,
            (i + j) * 13 % 9999
        );
    }
    s += "],\"note\":\"ok\"}";
    s.into_bytes()
}

fn fixture_model() -> Model {
    (0..40u64).filter(|&i| i != 5).map(|i| (format!("key{i:03}").into_bytes(), fixture_value(i))).collect()
}

/// A copy of the version-2 fixture of `mode` in `dir`.
fn fixture(dir: &Path, mode: RecordCompMode) -> PathBuf {
    let name = format!("main-v2-{mode}.kh");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compression").join(&name);
    let dest = dir.join(name);
    std::fs::copy(src, &dest).unwrap();
    dest
}

/// In every mode: values written before the dictionary (flag 1) and after
/// it read back, through reopen and a rebuild that trains the next one; an
/// lz4, zlib or lzma file is version 3 and its dictionary raw content of
/// 4 KiB (lz4) or 2 KiB (zlib, lzma).
#[test]
fn every_mode_round_trips_with_and_without_a_dictionary() {
    for mode in modes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dict.kh");
        let o = HashOptions::default().num_buckets(3000).record_comp_mode(mode);
        let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
        let mut model = fill_json(&db, 0, 150, 1);
        assert_eq!(info(&db, "record_comp_dict"), "", "{mode}: too few values for a dictionary");
        h::compare(&db, &model).unwrap();
        model.extend(fill_json(&db, 150, 1300, 2));
        let dict = info(&db, "record_comp_dict");
        assert!(dict.starts_with("2 ("), "{mode}: {dict}");
        match mode {
            RecordCompMode::Lz4 => assert_eq!(dict, "2 (4096 bytes)"),
            RecordCompMode::Zlib | RecordCompMode::Lzma => assert_eq!(dict, "2 (2048 bytes)"),
            _ => {}
        }
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        assert_eq!(version(&path), 7, "{mode}: every new file is version 7");
        let db = HashDbm::open(&path, Access::ReadWrite, &HashOptions::default()).unwrap();
        assert!(info(&db, "record_comp_dict").starts_with("2 ("), "{mode}");
        h::compare(&db, &model).unwrap();
        db.rebuild().unwrap();
        assert!(info(&db, "record_comp_dict").starts_with("3 ("), "{mode}: {:?}", db.inspect());
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
        h::compare(&db, &model).unwrap();
    }
}

/// lz4 and zlib files written by the format before their dictionaries read
/// unchanged; written to, they stay version 2 without a dictionary (a
/// reader of that version still reads them); a rebuild makes them version 3
/// with one.
#[test]
fn files_of_the_format_before_dictionaries_read_unchanged() {
    for mode in [RecordCompMode::Lz4, RecordCompMode::Zlib] {
        let dir = tempfile::tempdir().unwrap();
        let path = fixture(dir.path(), mode);
        assert_eq!(version(&path), 2);
        let mut model = fixture_model();
        let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
        assert_eq!(info(&db, "record_comp_mode"), mode.name());
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        let db = HashDbm::open(&path, Access::ReadWrite, &HashOptions::default()).unwrap();
        model.extend(fill_json(&db, 0, 1100, 3));
        assert_eq!(info(&db, "record_comp_dict"), "", "{mode}: a version-2 file takes no dictionary");
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        assert_eq!(version(&path), 2, "{mode}");
        let db = HashDbm::open(&path, Access::ReadWrite, &HashOptions::default()).unwrap();
        db.rebuild().unwrap();
        assert!(info(&db, "record_comp_dict").starts_with("2 ("), "{mode}: {:?}", db.inspect());
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        assert_eq!(version(&path), 7, "{mode}: rebuilt at the current version");
    }
}

/// Files with a dictionary written by the code of their time read
/// unchanged, and values written to them now read back after a reopen:
/// `main-v3-lz4-dict.kh` (lz4_flex compressing with the preset dictionary,
/// 2026-11-24) and `main-v3-lzma-dict.kh` (the first lzma code, 2026-11-29;
/// its raw LZMA2 framing and window rule are the format), each dictionary 2
/// kept over a clear, then the fixture's records (see
/// `writes_the_lzma_fixture`).
#[test]
fn files_with_a_dictionary_written_before_read_unchanged() {
    for (name, dict) in
        [("main-v3-lz4-dict.kh", "2 (4096 bytes)"), ("main-v3-lzma-dict.kh", "2 (2048 bytes)")]
    {
        let dir = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/compression").join(name);
        let path = dir.path().join("v3.kh");
        std::fs::copy(src, &path).unwrap();
        assert_eq!(version(&path), 3, "{name}");
        let bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(6).position(|w| w == b"key020").unwrap() + 6;
        assert_eq!(bytes[at], 2, "{name}: the fixture holds values compressed with dictionary 2");
        let mut model = fixture_model();
        let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
        assert_eq!(info(&db, "record_comp_dict"), dict, "{name}");
        assert_eq!(info(&db, "format_version"), "3", "{name}");
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        let db = HashDbm::open(&path, Access::ReadWrite, &HashOptions::default()).unwrap();
        model.extend(fill_json(&db, 0, 300, 8));
        h::compare(&db, &model).unwrap();
        assert_eq!(info(&db, "format_version"), "3", "{name}: written to, the file keeps its version");
        db.close().unwrap();
        assert_eq!(version(&path), 3, "{name}");
        let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        // A rebuild converts the file to the current version.
        let db = HashDbm::open(&path, Access::ReadWrite, &HashOptions::default()).unwrap();
        db.rebuild().unwrap();
        assert_eq!(info(&db, "format_version"), "7", "{name}: rebuilt");
        h::compare(&db, &model).unwrap();
        db.close().unwrap();
        assert_eq!(version(&path), 7, "{name}: rebuilt");
    }
}

/// Writes `main-v3-lzma-dict.kh` into the directory `KURA_WRITE_FIXTURE`
/// names: JSON-like values until dictionary 2 is trained, a clear (which
/// keeps it), then the fixture's records. Run by hand, once, when the
/// fixture is made: `KURA_WRITE_FIXTURE=DIR cargo test -p kuradb --test
/// hash_comp_dict -- --ignored writes_the_lzma_fixture`.
#[test]
#[ignore = "writes a fixture file; run by hand"]
fn writes_the_lzma_fixture() {
    let dir = PathBuf::from(std::env::var("KURA_WRITE_FIXTURE").expect("KURA_WRITE_FIXTURE=DIR"));
    let path = dir.join("main-v3-lzma-dict.kh");
    let _ = std::fs::remove_file(&path);
    let o = HashOptions::default().num_buckets(64).align_pow(0).record_comp_mode(RecordCompMode::Lzma);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    fill_json(&db, 0, 300, 3);
    assert_eq!(info(&db, "record_comp_dict"), "2 (2048 bytes)");
    db.clear().unwrap();
    for (key, value) in (0..40u64).map(|i| (format!("key{i:03}"), fixture_value(i))) {
        db.set(key.as_bytes(), &value).unwrap();
    }
    db.remove(b"key005").unwrap();
    db.close().unwrap();
}

/// A value compressed with the dictionary whose body is garbage, or whose
/// flag names another dictionary, is a broken-data error naming its
/// record; no damage to its first bytes panics.
#[test]
fn a_damaged_value_with_a_dictionary_is_broken_data() {
    for mode in modes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("damaged.kh");
        let o = HashOptions::default().num_buckets(2000).record_comp_mode(mode);
        let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
        fill_json(&db, 0, 1100, 4);
        assert!(info(&db, "record_comp_dict").starts_with("2 ("), "{mode}");
        let value = json_value(&mut rand::rngs::SmallRng::seed_from_u64(5), 7);
        db.set(b"the-damaged-key", &value).unwrap();
        db.close().unwrap();
        let clean = std::fs::read(&path).unwrap();
        let key = b"the-damaged-key";
        let at = clean.windows(key.len()).position(|w| w == key).unwrap() + key.len();
        assert_eq!(clean[at], 2, "{mode}: compressed with dictionary 2");
        let body = at + 3; // flag and a two-byte size
        let damaged = |patch: &dyn Fn(&mut Vec<u8>)| {
            let mut b = clean.clone();
            patch(&mut b);
            std::fs::write(&path, &b).unwrap();
            let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
            db.get(key)
        };
        let err = damaged(&|b| b[at] = 3).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BrokenData, "{mode}: {err}");
        assert!(err.to_string().contains("names dictionary 3, but the file holds dictionary 2"), "{err}");
        let err = damaged(&|b| b[body..body + 40].fill(0xFF)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BrokenData, "{mode}: {err}");
        assert!(err.to_string().contains("the record at offset"), "{mode}: {err}");
        for i in 0..48 {
            match damaged(&|b| b[body + i] ^= 0x5A) {
                Ok(_) => {}
                Err(e) => assert_eq!(e.kind(), ErrorKind::BrokenData, "{mode}, byte {i}: {e}"),
            }
        }
    }
}

/// An encrypted lz4 file trains no dictionary (its record would not be
/// sealed) and is version 4 (keys sealed), never 3.
#[test]
fn an_encrypted_file_keeps_no_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sealed.kh");
    let o = HashOptions::default().num_buckets(2000).record_comp_mode(RecordCompMode::Lz4).cipher_key("k");
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    let model = fill_json(&db, 0, 1100, 6);
    assert_eq!(info(&db, "record_comp_dict"), "");
    h::compare(&db, &model).unwrap();
    db.close().unwrap();
    assert_eq!(version(&path), 7);
}

/// The same JSON-like values take clearly less room with a dictionary than
/// in a file that takes none (the version-2 fixture), in lz4 and zlib.
#[test]
fn a_dictionary_shrinks_json_values() {
    for mode in [RecordCompMode::Lz4, RecordCompMode::Zlib] {
        let dir = tempfile::tempdir().unwrap();
        let without = fixture(dir.path(), mode);
        let db = HashDbm::open(&without, Access::ReadWrite, &HashOptions::default()).unwrap();
        fill_json(&db, 0, 1600, 7);
        db.close().unwrap();
        let with = dir.path().join("with.kh");
        let o = HashOptions::default().num_buckets(16).align_pow(0).record_comp_mode(mode);
        let db = HashDbm::open(&with, Access::ReadWrite, &o).unwrap();
        fill_json(&db, 0, 1600, 7);
        db.rebuild().unwrap();
        assert!(info(&db, "record_comp_dict").starts_with("3 ("), "{mode}");
        db.close().unwrap();
        let (a, b) = (std::fs::metadata(&with).unwrap().len(), std::fs::metadata(&without).unwrap().len());
        assert!((a as f64) < 0.9 * b as f64, "{mode}: {a} bytes with a dictionary, {b} without");
    }
}
