//! Record compression (`record_comp_mode`) of the hash and tree databases:
//! every mode keeps what a model holds through reopen (with no option: the
//! mode is the file's), rebuild and restore after an unclean close, on
//! several file implementations; incompressible values cost a byte each;
//! the zstd dictionary outlives reopen, rebuild (which trains a new one)
//! and restore; damage to a compressed value or to the dictionary is an
//! error naming its offset, and an unknown mode byte is refused.

mod common;

use std::collections::BTreeMap;

use common::hash::{self as h, Model};
use common::tree as t;
use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCompMode};
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::ErrorKind;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// Every mode that compresses.
fn modes() -> impl Iterator<Item = RecordCompMode> {
    RecordCompMode::compressing()
}

fn specs() -> Vec<(&'static str, FileSpec)> {
    h::specs()
        .into_iter()
        .filter(|(n, _)| {
            ["mmap-para", "pos-atom-block512-pagecache", "pos-para-block4096-padding"].contains(n)
        })
        .collect()
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

fn random_value(rng: &mut impl Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.gen()).collect()
}

#[derive(Clone, Debug)]
enum Op {
    Set(u16, u8, u16),
    Remove(u16),
    Append(u16, u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0u16..60, 0u8..3, 0u16..1500).prop_map(|(k, kind, len)| Op::Set(k, kind, len)),
        1 => (0u16..60).prop_map(Op::Remove),
        1 => (0u16..60, any::<u8>()).prop_map(|(k, b)| Op::Append(k, b)),
    ];
    proptest::collection::vec(op, 1..80)
}

/// The value an op sets: compressible text, random bytes or nothing.
fn value_for(kind: u8, len: u16, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    match kind {
        0 => json_value(&mut rng, len as usize)[..].to_vec(),
        1 => random_value(&mut rng, len as usize),
        _ => Vec::new(),
    }
}

fn run(db: &dyn Dbm, model: &mut Model, ops: &[Op]) {
    for (n, op) in ops.iter().enumerate() {
        match *op {
            Op::Set(k, kind, len) => {
                let key = format!("k{k}").into_bytes();
                let value = value_for(kind, len, n as u64);
                db.set(&key, &value).unwrap();
                model.insert(key, value);
            }
            Op::Remove(k) => {
                let key = format!("k{k}").into_bytes();
                db.remove(&key).ok();
                model.remove(&key);
            }
            Op::Append(k, b) => {
                let key = format!("k{k}").into_bytes();
                db.append(&key, &[b; 7], b",").unwrap();
                match model.get_mut(&key) {
                    Some(v) => {
                        v.push(b',');
                        v.extend_from_slice(&[b; 7]);
                    }
                    None => {
                        model.insert(key, vec![b; 7]);
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Every mode and file keeps the model's records through a reopen that
    /// gives no mode, a rebuild, and a restore of a copy taken as a crash
    /// would leave it.
    #[test]
    fn hash_keeps_the_model_in_every_mode(ops in ops()) {
        let dir = tempfile::tempdir().unwrap();
        for (name, spec) in specs() {
            for mode in modes() {
                let path = dir.path().join(format!("{name}-{mode}.kh"));
                let db = HashDbm::open(&path, Access::ReadWrite, &h::options(&spec).record_comp_mode(mode)).unwrap();
                let mut model = BTreeMap::new();
                run(&db, &mut model, &ops);
                h::compare(&db, &model).map_err(|e| TestCaseError::fail(format!("{name} {mode}: {e}")))?;
                let crashed = dir.path().join(format!("{name}-{mode}-crashed.kh"));
                h::crash_copy(&db, &path, &crashed).unwrap();
                db.close().unwrap();
                let db = HashDbm::open(&path, Access::ReadWrite, &h::options(&spec)).unwrap();
                prop_assert_eq!(db.record_comp_mode().unwrap(), mode);
                h::compare(&db, &model).map_err(|e| TestCaseError::fail(format!("{name} {mode} reopened: {e}")))?;
                db.rebuild().unwrap();
                h::compare(&db, &model).map_err(|e| TestCaseError::fail(format!("{name} {mode} rebuilt: {e}")))?;
                db.close().unwrap();
                let restored = dir.path().join(format!("{name}-{mode}-restored.kh"));
                HashDbm::restore(&crashed, &restored, &h::options(&spec)).unwrap();
                let db = HashDbm::open(&restored, Access::ReadOnly, &h::options(&spec)).unwrap();
                prop_assert_eq!(db.record_comp_mode().unwrap(), mode);
                h::compare(&db, &model).map_err(|e| TestCaseError::fail(format!("{name} {mode} restored: {e}")))?;
            }
        }
    }

    /// A tree's pages are compressed likewise; reopen, rebuild and restore
    /// keep the mode and the records.
    #[test]
    fn tree_keeps_the_model_in_every_mode(ops in ops()) {
        let dir = tempfile::tempdir().unwrap();
        for (name, spec) in specs().into_iter().take(2) {
            for mode in modes() {
                let o = tree_options(&spec, mode);
                let path = dir.path().join(format!("{name}-{mode}.kt"));
                let db = TreeDbm::open(&path, Access::ReadWrite, &o).unwrap();
                let mut model = BTreeMap::new();
                run(&db, &mut model, &ops);
                t::compare(&db, &model, KeyComparator::Lexical).map_err(|e| TestCaseError::fail(format!("{name} {mode}: {e}")))?;
                db.synchronize(Durability::Hard).unwrap();
                let crashed = dir.path().join(format!("{name}-{mode}-crashed.kt"));
                std::fs::copy(&path, &crashed).unwrap();
                db.close().unwrap();
                let db = TreeDbm::open(&path, Access::ReadWrite, &tree_options(&spec, RecordCompMode::None)).unwrap();
                prop_assert_eq!(info(&db, "record_comp_mode"), mode.name());
                t::compare(&db, &model, KeyComparator::Lexical).map_err(|e| TestCaseError::fail(format!("{name} {mode} reopened: {e}")))?;
                db.rebuild().unwrap();
                prop_assert_eq!(info(&db, "record_comp_mode"), mode.name());
                t::compare(&db, &model, KeyComparator::Lexical).map_err(|e| TestCaseError::fail(format!("{name} {mode} rebuilt: {e}")))?;
                db.close().unwrap();
                let restored = dir.path().join(format!("{name}-{mode}-restored.kt"));
                TreeDbm::restore(&crashed, &restored, &tree_options(&spec, RecordCompMode::None)).unwrap();
                let db = TreeDbm::open(&restored, Access::ReadOnly, &tree_options(&spec, RecordCompMode::None)).unwrap();
                prop_assert_eq!(info(&db, "record_comp_mode"), mode.name());
                t::compare(&db, &model, KeyComparator::Lexical).map_err(|e| TestCaseError::fail(format!("{name} {mode} restored: {e}")))?;
            }
        }
    }
}

fn tree_options(spec: &FileSpec, mode: RecordCompMode) -> TreeOptions {
    let o = t::options(spec, KeyComparator::Lexical, 2000, 8, 16, 211);
    let hash = o.hash.clone().record_comp_mode(mode);
    o.hash(hash)
}

fn info(db: &dyn Dbm, name: &str) -> String {
    db.inspect().unwrap().into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap_or_default()
}

/// Random bytes do not shrink: each is stored raw with its flag byte, so the
/// file grows by a byte a record over a plain one (no alignment here).
#[test]
fn incompressible_values_cost_one_byte_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut sizes = Vec::new();
    for mode in RecordCompMode::all() {
        let path = dir.path().join(format!("{mode}.kh"));
        let o = HashOptions::default().num_buckets(1000).align_pow(0).record_comp_mode(mode);
        let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for i in 0..500 {
            db.set(format!("{i:05}").as_bytes(), &random_value(&mut rng, 300)).unwrap();
        }
        db.close().unwrap();
        sizes.push((mode, std::fs::metadata(&path).unwrap().len()));
    }
    let plain = sizes[0].1;
    for (mode, size) in &sizes[1..] {
        assert!(*size <= plain + 500, "{mode}: {size} bytes against {plain} plain");
        assert!(*size >= plain, "{mode}: {size} bytes against {plain} plain");
    }
}

/// Writes enough JSON-like values to train a dictionary; answers the model.
fn fill_json(db: &dyn Dbm, n: usize, seed: u64) -> Model {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut model = BTreeMap::new();
    for i in 0..n {
        let (key, value) = (format!("rec{i:05}").into_bytes(), json_value(&mut rng, i));
        db.set(&key, &value).unwrap();
        model.insert(key, value);
    }
    model
}

/// The dictionary trained from the first values is in the file: a reopen
/// finds it, a rebuild trains the next, a restore keeps it; values written
/// before and after it read back. With it, small values shrink more than
/// without.
#[test]
fn the_dictionary_outlives_reopen_rebuild_and_restore() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dict.kh");
    let o = HashOptions::default().num_buckets(4000).record_comp_mode(RecordCompMode::Zstd);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    let model = fill_json(&db, 1600, 1);
    assert!(info(&db, "record_comp_dict").starts_with("2 ("), "{:?}", db.inspect());
    h::compare(&db, &model).unwrap();
    db.close().unwrap();
    let db = HashDbm::open(&path, Access::ReadWrite, &HashOptions::default()).unwrap();
    assert!(info(&db, "record_comp_dict").starts_with("2 ("));
    h::compare(&db, &model).unwrap();
    let before = db.file_size().unwrap();
    db.rebuild().unwrap();
    assert!(info(&db, "record_comp_dict").starts_with("3 ("), "{:?}", db.inspect());
    h::compare(&db, &model).unwrap();
    // Every value now uses the dictionary: the file shrank.
    assert!(db.file_size().unwrap() < before, "{} -> {}", before, db.file_size().unwrap());
    let crashed = dir.path().join("crashed.kh");
    h::crash_copy(&db, &path, &crashed).unwrap();
    db.close().unwrap();
    let restored = dir.path().join("restored.kh");
    HashDbm::restore(&crashed, &restored, &HashOptions::default()).unwrap();
    let db = HashDbm::open(&restored, Access::ReadWrite, &HashOptions::default()).unwrap();
    assert!(info(&db, "record_comp_dict").starts_with("3 ("));
    h::compare(&db, &model).unwrap();
    // A clear keeps the dictionary for the values written after it.
    db.clear().unwrap();
    db.set(b"after", &model[&b"rec00001".to_vec()]).unwrap();
    db.close().unwrap();
    let db = HashDbm::open(&restored, Access::ReadOnly, &HashOptions::default()).unwrap();
    assert!(info(&db, "record_comp_dict").starts_with("3 ("));
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&model[&b"rec00001".to_vec()][..]));
}

/// A compressed file says so in byte 14 and takes format version 2 (3 for
/// lz4, zlib and lzma, whose values may use a dictionary), which a reader that
/// knows only version 1 refuses; a plain file is as before.
/// An unknown mode byte is refused, naming it.
#[test]
fn the_mode_is_byte_14_and_an_unknown_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for mode in RecordCompMode::all() {
        let path = dir.path().join(format!("{mode}.kh"));
        let db = HashDbm::open(
            &path,
            Access::ReadWrite,
            &HashOptions::default().num_buckets(10).record_comp_mode(mode),
        )
        .unwrap();
        db.close().unwrap();
        let b = std::fs::read(&path).unwrap();
        // Every new file is version 7, whatever its mode.
        assert_eq!((b[8], b[14]), (7, mode.byte()), "{mode}");
    }
    let path = dir.path().join("zstd.kh");
    h::patch_header(&path, 14, 9);
    let err = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).err().expect("an unknown mode");
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.to_string().contains("unknown record compression mode 9"), "{err}");
    // lzma came with dictionaries: a plain lzma file is version 3, never 2.
    let path = dir.path().join("lzma.kh");
    h::patch_header(&path, 8, 2);
    let err =
        HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).err().expect("lzma at version 2");
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.to_string().contains("format version 2 with compression mode 4"), "{err}");
}

/// The offset of the first occurrence of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).expect("the bytes are in the file")
}

/// A compressed value whose flag names a dictionary the file lacks, or
/// whose size field lies, reads as an error naming its record's offset.
#[test]
fn a_damaged_compressed_value_is_an_error_naming_its_offset() {
    for mode in modes() {
        for (what, patch) in [("flag", 0usize), ("size", 1)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("damaged.kh");
            let o = HashOptions::default().num_buckets(10).record_comp_mode(mode);
            let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
            db.set(b"the-damaged-key", "compressible ".repeat(40).as_bytes()).unwrap();
            db.set(b"other", b"fine").unwrap();
            db.close().unwrap();
            let mut b = std::fs::read(&path).unwrap();
            let at = find(&b, b"the-damaged-key") + b"the-damaged-key".len();
            assert_eq!(b[at], 1, "{mode}: compressed without a dictionary");
            b[at + patch] = if patch == 0 { 77 } else { b[at + patch] ^ 0x05 };
            std::fs::write(&path, &b).unwrap();
            let db = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).unwrap();
            let err = db.get(b"the-damaged-key").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenData, "{mode} {what}: {err}");
            assert!(err.to_string().contains("the record at offset"), "{mode} {what}: {err}");
            if patch == 0 {
                assert!(err.to_string().contains("dictionary 77"), "{err}");
            }
            assert_eq!(db.get(b"other").unwrap().as_deref(), Some(&b"fine"[..]));
        }
    }
}

/// A damaged dictionary is an error at open naming it and its offset.
#[test]
fn a_damaged_dictionary_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dict.kh");
    let o = HashOptions::default().num_buckets(2000).record_comp_mode(RecordCompMode::Zstd);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    fill_json(&db, 1200, 2);
    assert!(!info(&db, "record_comp_dict").is_empty());
    db.close().unwrap();
    let mut b = std::fs::read(&path).unwrap();
    let offset = u64::from_le_bytes(b[96..104].try_into().unwrap());
    assert!(offset > 0);
    b[offset as usize + 100] ^= 0x40;
    std::fs::write(&path, &b).unwrap();
    let err =
        HashDbm::open(&path, Access::ReadOnly, &HashOptions::default()).err().expect("a damaged dictionary");
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.to_string().contains(&format!("compression dictionary at offset {offset}")), "{err}");
}

/// The parameter names PolyDbm takes, the reference's too; an unknown one
/// is refused with the names there are.
#[test]
fn the_parameter_takes_the_reference_names() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        ("RECORD_COMP_ZSTD", "zstd"),
        ("lz4", "lz4"),
        ("Zlib", "zlib"),
        ("none", "none"),
        ("RECORD_COMP_LZMA", "lzma"),
    ];
    for (name, mode) in names {
        let path = dir.path().join(format!("{mode}.kh"));
        let params = kuradb::Params::parse(&format!("record_comp_mode={name},num_buckets=10")).unwrap();
        let db = kuradb::dbm::poly::PolyDbm::open(&path, Access::ReadWrite, &params).unwrap();
        assert_eq!(info(&db, "record_comp_mode"), mode);
    }
    let params = kuradb::Params::parse("record_comp_mode=RECORD_COMP_BROTLI").unwrap();
    let err = kuradb::dbm::poly::PolyDbm::open(dir.path().join("brotli.kh"), Access::ReadWrite, &params)
        .err()
        .expect("brotli");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("RECORD_COMP_BROTLI") && err.to_string().contains("lzma"), "{err}");
}
