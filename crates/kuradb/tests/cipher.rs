//! Authenticated encryption (`cipher_key`) of the hash and tree databases:
//! an encrypted database behaves like a `BTreeMap` across reopens, rebuilds
//! (which may change or drop the key) and crashes, on every file spec; no
//! value is stored in clear (nor any key: see `tests/cipher_keys.rs`); a wrong, missing or
//! needless key is an error at open; a changed or moved ciphertext is an
//! authentication error naming the file and the record's offset; the key is
//! never shown.

mod common;

use std::path::Path;

use common::hash::{self as h, Model};
use common::tree as t;
use kuradb::dbm::hash::{CipherKey, HashDbm, HashOptions, RebuildParams, UpdateMode};
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::{ErrorKind, Params};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const KEY: &str = "correct horse battery staple";

#[derive(Clone, Debug)]
enum Op {
    Set(u8, Vec<u8>),
    Remove(u8),
    Append(u8, Vec<u8>),
    /// The batched read path.
    GetMulti(Vec<u8>),
    Reopen,
    /// A rebuild, under a new key if given.
    Rebuild(Option<u8>),
    /// Hard-synchronize, copy the open file, close, put the copy in place
    /// and open it: the automatic restore must give back the model.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let value = proptest::collection::vec(any::<u8>(), 0..200);
    prop_oneof![
        30 => (0u8..24, value.clone()).prop_map(|(k, v)| Op::Set(k, v)),
        8 => (0u8..24).prop_map(Op::Remove),
        6 => (0u8..24, value).prop_map(|(k, v)| Op::Append(k, v)),
        6 => proptest::collection::vec(0u8..24, 1..12).prop_map(Op::GetMulti),
        1 => Just(Op::Reopen),
        1 => proptest::option::of(0u8..3).prop_map(Op::Rebuild),
        1 => Just(Op::Crash),
    ]
}

fn key_of(k: u8) -> Vec<u8> {
    format!("key-{k:02}").into_bytes()
}

/// Opens a hash or tree database with `key`.
trait Class {
    fn open(&self, path: &Path, key: &str) -> Box<dyn Dbm>;
    fn rebuild(&self, db: &dyn Dbm, key: &str) -> kuradb::Result<()>;
}

struct Hash(FileSpec, UpdateMode);
struct Tree(FileSpec, UpdateMode);

impl Class for Hash {
    fn open(&self, path: &Path, key: &str) -> Box<dyn Dbm> {
        let o = h::options(&self.0).num_buckets(7).update_mode(self.1).cipher_key(key);
        Box::new(HashDbm::open(path, Access::ReadWrite, &o).expect("open"))
    }
    fn rebuild(&self, db: &dyn Dbm, key: &str) -> kuradb::Result<()> {
        let mut p = Params::new();
        p.insert("cipher_key", key)?;
        db.rebuild_with_params(&p)
    }
}

impl Class for Tree {
    fn open(&self, path: &Path, key: &str) -> Box<dyn Dbm> {
        let o = tree_options(&self.0).cipher_key(key);
        let o = o.clone().hash(o.hash.update_mode(self.1));
        Box::new(TreeDbm::open(path, Access::ReadWrite, &o).expect("open"))
    }
    fn rebuild(&self, db: &dyn Dbm, key: &str) -> kuradb::Result<()> {
        let mut p = Params::new();
        p.insert("cipher_key", key)?;
        db.rebuild_with_params(&p)
    }
}

fn tree_options(spec: &FileSpec) -> TreeOptions {
    t::options(spec, KeyComparator::Lexical, 300, 4, 6, 31)
}

/// Runs `ops` against a database of `class` and a model side by side.
fn run(class: &dyn Class, dir: &Path, ops: &[Op]) -> Result<(), TestCaseError> {
    let path = dir.join("casket");
    let _ = std::fs::remove_file(&path);
    let mut key = KEY.to_string();
    let mut db = class.open(&path, &key);
    let mut model = Model::new();
    for (step, op) in ops.iter().enumerate() {
        let at = |e: kuradb::Error| TestCaseError::fail(format!("step {step} {op:?}: {e}"));
        match op {
            Op::Set(k, v) => {
                db.set(&key_of(*k), v).map_err(at)?;
                model.insert(key_of(*k), v.clone());
            }
            Op::Remove(k) => {
                let removed = db.remove(&key_of(*k)).map_err(at)?;
                prop_assert_eq!(removed, model.remove(&key_of(*k)).is_some());
            }
            Op::Append(k, v) => {
                db.append(&key_of(*k), v, b":").map_err(at)?;
                let mut value = match model.get(&key_of(*k)) {
                    Some(old) => [old.as_slice(), b":"].concat(),
                    None => Vec::new(),
                };
                value.extend_from_slice(v);
                model.insert(key_of(*k), value);
            }
            Op::GetMulti(ks) => {
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key_of(k)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let got = db.get_multi(&refs).map_err(at)?;
                for (k, got) in keys.iter().zip(&got) {
                    prop_assert_eq!(got.as_ref(), model.get(k), "step {} get_multi", step);
                }
            }
            Op::Reopen => {
                db.close().map_err(at)?;
                db = class.open(&path, &key);
            }
            Op::Rebuild(new) => {
                if let Some(n) = new {
                    key = format!("key number {n}");
                    class.rebuild(db.as_ref(), &key).map_err(at)?;
                } else {
                    db.rebuild().map_err(at)?;
                }
            }
            Op::Crash => {
                let copy = dir.join("crashed");
                db.synchronize(Durability::Hard).map_err(at)?;
                std::fs::copy(&path, &copy).expect("copy");
                db.close().map_err(at)?;
                std::fs::rename(&copy, &path).expect("rename");
                db = class.open(&path, &key);
            }
        }
        h::compare(db.as_ref(), &model)
            .map_err(|e| TestCaseError::fail(format!("after step {step} {op:?}: {e}")))?;
    }
    db.close().map_err(|e| TestCaseError::fail(format!("close: {e}")))?;
    let bytes = std::fs::read(&path).expect("read");
    for value in model.values().filter(|v| v.len() >= 12) {
        prop_assert!(
            !bytes.windows(value.len()).any(|w| w == value.as_slice()),
            "a value is stored in clear"
        );
    }
    Ok(())
}

fn check(
    name: &str,
    cases: u32,
    class: impl Fn(FileSpec, UpdateMode) -> Box<dyn Class>,
    specs: Vec<(String, FileSpec)>,
) {
    for (spec_name, spec) in specs {
        let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
        let strategy = (proptest::collection::vec(op(), 1..30), any::<bool>());
        let result = runner.run(&strategy, |(ops, appending)| {
            let dir = tempfile::tempdir().expect("tempdir");
            let mode = if appending { UpdateMode::Appending } else { UpdateMode::InPlace };
            run(class(spec.clone(), mode).as_ref(), dir.path(), &ops)
        });
        if let Err(e) = result {
            panic!("{name} on {spec_name}: {e}");
        }
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(4)
}

#[test]
fn an_encrypted_hash_database_matches_a_model_on_every_file_spec() {
    let specs = common::matrix_without_sync().into_iter().map(|s| (s.to_string(), s)).collect();
    // Fewer cases a spec: the specs are many, and each case's reopens and
    // crashes synchronize hard.
    check("hash", cases().div_ceil(2), |s, m| Box::new(Hash(s, m)), specs);
}

#[test]
fn an_encrypted_tree_database_matches_a_model() {
    let specs = h::specs().into_iter().map(|(n, s)| (n.to_string(), s)).collect();
    check("tree", cases(), |s, m| Box::new(Tree(s, m)), specs);
}

fn hash_at(path: &Path, o: &HashOptions) -> kuradb::Result<HashDbm> {
    HashDbm::open(path, Access::ReadWrite, o)
}

#[test]
fn a_wrong_missing_or_needless_key_is_an_error_at_open_that_never_shows_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let db = hash_at(&path, &HashOptions::default().num_buckets(11).cipher_key(KEY)).unwrap();
    db.set(b"japan", b"tokyo").unwrap();
    db.close().unwrap();
    let wrong = hash_at(&path, &HashOptions::default().cipher_key("Tr0ub4dor&3")).err().unwrap();
    assert_eq!(wrong.kind(), ErrorKind::InvalidArgument);
    assert!(
        wrong.to_string().contains("wrong cipher_key") && wrong.to_string().contains("casket.kh"),
        "{wrong}"
    );
    assert!(!wrong.to_string().contains("Tr0ub4dor"), "{wrong}");
    for writable in [true, false] {
        let missing = HashDbm::open(
            &path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &HashOptions::default(),
        )
        .err()
        .unwrap();
        assert!(missing.to_string().contains("is encrypted: give cipher_key"), "{missing}");
    }
    // An empty key is no key.
    let empty = hash_at(&path, &HashOptions::default().cipher_key("")).err().unwrap();
    assert!(empty.to_string().contains("is encrypted: give cipher_key"), "{empty}");
    let plain = dir.path().join("plain.kh");
    hash_at(&plain, &HashOptions::default().num_buckets(11)).unwrap().close().unwrap();
    let needless = hash_at(&plain, &HashOptions::default().cipher_key(KEY)).err().unwrap();
    assert!(needless.to_string().contains("is not encrypted, but a cipher_key was given"), "{needless}");
    assert!(!needless.to_string().contains(KEY), "{needless}");
    // Trees alike, through their node store.
    let tree = dir.path().join("casket.kt");
    let db = TreeDbm::open(&tree, Access::ReadWrite, &TreeOptions::default().cipher_key(KEY)).unwrap();
    db.set(b"japan", b"tokyo").unwrap();
    db.close().unwrap();
    let wrong =
        TreeDbm::open(&tree, Access::ReadOnly, &TreeOptions::default().cipher_key("other")).err().unwrap();
    assert!(wrong.to_string().contains("wrong cipher_key"), "{wrong}");
    let missing = TreeDbm::open(&tree, Access::ReadOnly, &TreeOptions::default()).err().unwrap();
    assert!(missing.to_string().contains("is encrypted: give cipher_key"), "{missing}");
    let db = TreeDbm::open(&tree, Access::ReadOnly, &TreeOptions::default().cipher_key(KEY)).unwrap();
    assert_eq!(db.get(b"japan").unwrap().as_deref(), Some(&b"tokyo"[..]));
}

#[test]
fn the_key_is_in_no_inspect_row_nor_the_options_debug_form() {
    let dir = tempfile::tempdir().unwrap();
    let o = HashOptions::default().num_buckets(11).cipher_key(KEY);
    assert!(!format!("{o:?}").contains("horse"), "{o:?}");
    let db = hash_at(&dir.path().join("casket.kh"), &o).unwrap();
    let rows = db.inspect().unwrap();
    assert!(rows.iter().any(|(k, v)| k == "cipher" && v == "xchacha20-poly1305"), "{rows:?}");
    assert!(rows.iter().all(|(k, v)| !k.contains("horse") && !v.contains("horse")), "{rows:?}");
    let tree = TreeDbm::open(
        dir.path().join("casket.kt"),
        Access::ReadWrite,
        &TreeOptions::default().cipher_key(KEY),
    )
    .unwrap();
    let rows = tree.inspect().unwrap();
    assert!(rows.iter().any(|(k, v)| k == "cipher" && v == "xchacha20-poly1305"), "{rows:?}");
    assert!(rows.iter().all(|(_, v)| !v.contains("horse")), "{rows:?}");
    let plain = hash_at(&dir.path().join("plain.kh"), &HashOptions::default().num_buckets(11)).unwrap();
    assert!(plain.inspect().unwrap().iter().any(|(k, v)| k == "cipher" && v == "none"));
}

/// A record of a short key and value: magic, a 4-byte offset, epoch,
/// checksum and three one-byte sizes come before its key.
const RECORD_HEAD: usize = 1 + 4 + 4 + 4 + 3;

/// The offset, stored key size and stored value size of each record of a
/// small file (sizes under 128, offset_width 4), in file order: the keys are
/// sealed, so a record is found by where it is, not by its key.
fn records_of(bytes: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut at = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
    let mut records = Vec::new();
    while at < bytes.len() {
        let (key, value, pad) = (bytes[at + 13] as usize, bytes[at + 14] as usize, bytes[at + 15] as usize);
        assert!(key < 128 && value < 128 && pad < 128, "a small record at {at}");
        records.push((at, key, value));
        at += RECORD_HEAD + key + value + pad;
    }
    records
}

#[test]
fn a_changed_ciphertext_byte_is_an_authentication_error_naming_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let o = HashOptions::default().num_buckets(11).cipher_key(KEY);
    let db = hash_at(&path, &o).unwrap();
    db.set(b"key-tampered", b"the value").unwrap();
    db.set(b"key-intact", b"another value").unwrap();
    db.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // The first record written, its key sealed (16 bytes longer).
    let (record, key_size, _) = records_of(&bytes)[0];
    assert_eq!(key_size, b"key-tampered".len() + 16);
    let at = record + RECORD_HEAD;
    bytes[at + key_size + 30] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let db = hash_at(&path, &o).unwrap();
    let err = db.get(b"key-tampered").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    let offset = format!("offset {}", at - RECORD_HEAD);
    assert!(err.to_string().contains("fails authentication") && err.to_string().contains(&offset), "{err}");
    assert!(err.to_string().contains("casket.kh"), "{err}");
    assert_eq!(db.get(b"key-intact").unwrap().as_deref(), Some(&b"another value"[..]));
    assert!(!db.is_healthy());
    // The batched path and a walk say the same.
    let err = db.get_multi(&[b"key-intact", b"key-tampered"]).unwrap_err();
    assert!(err.to_string().contains(&offset), "{err}");
    let err = h::records(&db).unwrap_err();
    assert!(err.contains("fails authentication"), "{err}");
    // A rebuild refuses to copy it rather than drop it.
    let err = db.rebuild().unwrap_err();
    assert!(err.to_string().contains("fails authentication"), "{err}");
}

#[test]
fn values_swapped_between_two_records_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let o = HashOptions::default().num_buckets(11).cipher_key(KEY);
    let db = hash_at(&path, &o).unwrap();
    db.set(b"alice", b"balance 10").unwrap();
    db.set(b"bobby", b"balance 99").unwrap();
    db.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let records = records_of(&bytes);
    let value_at = |(at, key_size, _): (usize, usize, usize)| at + RECORD_HEAD + key_size;
    let (a, b) = (value_at(records[0]), value_at(records[1]));
    let len = 10 + 40;
    assert_eq!((records[0].2, records[1].2), (len, len));
    let value_a = bytes[a..a + len].to_vec();
    let value_b = bytes[b..b + len].to_vec();
    bytes[a..a + len].copy_from_slice(&value_b);
    bytes[b..b + len].copy_from_slice(&value_a);
    std::fs::write(&path, &bytes).unwrap();
    let db = hash_at(&path, &o).unwrap();
    for key in [&b"alice"[..], b"bobby"] {
        let err = db.get(key).unwrap_err();
        assert!(err.to_string().contains("fails authentication"), "{err}");
    }
}

#[test]
fn a_rebuild_encrypts_reencrypts_and_decrypts_and_a_restore_keeps_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let db = hash_at(&path, &HashOptions::default().num_buckets(11)).unwrap();
    db.set(b"japan", b"tokyo-tokyo-tokyo").unwrap();
    let on = RebuildParams { cipher_key: Some(CipherKey::from("first")), ..RebuildParams::default() };
    db.rebuild_with(&on).unwrap();
    assert_eq!(db.get(b"japan").unwrap().as_deref(), Some(&b"tokyo-tokyo-tokyo"[..]));
    db.close().unwrap();
    // Version 6, like every new file; an encrypted hash database's keys are sealed too.
    assert_eq!(std::fs::read(&path).unwrap()[8], 7, "the format version of an encrypted hash file");
    assert!(!std::fs::read(&path).unwrap().windows(5).any(|w| w == b"tokyo"));
    let o = HashOptions::default().cipher_key("first");
    let db = hash_at(&path, &o).unwrap();
    // A rebuild with no key keeps the file's.
    db.rebuild().unwrap();
    let second = RebuildParams { cipher_key: Some(CipherKey::from("second")), ..RebuildParams::default() };
    db.rebuild_with(&second).unwrap();
    db.close().unwrap();
    assert!(hash_at(&path, &o).is_err());
    let o = HashOptions::default().cipher_key("second");
    let db = hash_at(&path, &o).unwrap();
    let crashed = dir.path().join("crashed.kh");
    h::crash_copy(&db, &path, &crashed).unwrap();
    let restored = dir.path().join("restored.kh");
    let err = HashDbm::restore(&crashed, &restored, &HashOptions::default()).unwrap_err();
    assert!(err.to_string().contains("give cipher_key"), "{err}");
    assert_eq!(HashDbm::restore(&crashed, &restored, &o).unwrap(), 1);
    let copy = HashDbm::open(&restored, Access::ReadOnly, &o).unwrap();
    assert_eq!(copy.get(b"japan").unwrap().as_deref(), Some(&b"tokyo-tokyo-tokyo"[..]));
    let off = RebuildParams { cipher_key: Some(CipherKey::from("")), ..RebuildParams::default() };
    db.rebuild_with(&off).unwrap();
    db.close().unwrap();
    assert_eq!(std::fs::read(&path).unwrap()[8], 7, "a decrypted file is at the current version");
    let db = hash_at(&path, &HashOptions::default()).unwrap();
    assert_eq!(db.get(b"japan").unwrap().as_deref(), Some(&b"tokyo-tokyo-tokyo"[..]));
}

#[test]
fn a_tree_hides_its_keys_and_restores_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    let o = tree_options(&FileSpec::default()).cipher_key(KEY);
    let db = TreeDbm::open(&path, Access::ReadWrite, &o).unwrap();
    for i in 0..200 {
        db.set(format!("secret-key-{i:04}").as_bytes(), format!("secret-value-{i}").as_bytes()).unwrap();
    }
    db.synchronize(Durability::Hard).unwrap();
    let crashed = dir.path().join("crashed.kt");
    std::fs::copy(&path, &crashed).unwrap();
    db.close().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.windows(7).any(|w| w == b"secret-"), "a key or value in clear");
    let restored = dir.path().join("restored.kt");
    assert_eq!(TreeDbm::restore(&crashed, &restored, &o).unwrap(), 200);
    let db = TreeDbm::open(&crashed, Access::ReadWrite, &o).unwrap();
    assert_eq!(db.count().unwrap(), 200);
    assert_eq!(db.get(b"secret-key-0150").unwrap().as_deref(), Some(&b"secret-value-150"[..]));
    let mut p = Params::new();
    p.insert("cipher_key", "").unwrap();
    db.rebuild_with_params(&p).unwrap();
    db.close().unwrap();
    let db = TreeDbm::open(&crashed, Access::ReadOnly, &tree_options(&FileSpec::default())).unwrap();
    assert_eq!(db.count().unwrap(), 200);
}

/// Compression and encryption together: values are compressed, then
/// sealed (so the file is smaller than an encrypted one of the same
/// values), read back across a reopen and a rebuild, and no dictionary is
/// trained: its record would hold the values' common strings in clear.
#[test]
fn compressed_and_encrypted_values_shrink_and_keep_no_dictionary() {
    use kuradb::dbm::hash::RecordCompMode;
    let dir = tempfile::tempdir().expect("temporary directory");
    let value = |i: usize| {
        format!(
            "{{\"id\": {i}, \"status\": \"shipped\", \"city\": \"tokyo\", \"note\": \"{}\"}}",
            "x".repeat(i % 300)
        )
        .into_bytes()
    };
    let mut sizes = Vec::new();
    for mode in [RecordCompMode::None, RecordCompMode::Zstd, RecordCompMode::Lzma] {
        let path = dir.path().join(format!("{}.kdbh", mode.name()));
        let options = HashOptions::default().record_comp_mode(mode).cipher_key(KEY);
        let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("create");
        // More than the 1 MiB a dictionary would be trained from.
        for i in 0..8_000 {
            db.set(format!("k{i}").as_bytes(), &value(i)).expect("set");
        }
        db.close().expect("close");
        let reopened =
            HashDbm::open(&path, Access::ReadWrite, &HashOptions::default().cipher_key(KEY)).expect("reopen");
        reopened.rebuild().expect("rebuild");
        for i in (0..8_000).step_by(97) {
            assert_eq!(
                reopened.get(format!("k{i}").as_bytes()).expect("get"),
                Some(value(i)),
                "{mode:?} {i}"
            );
        }
        let inspect = reopened.inspect().expect("inspect");
        assert!(!inspect.iter().any(|(k, _)| k == "record_comp_dict"), "{mode:?}: {inspect:?}");
        sizes.push(reopened.file_size().expect("size"));
        reopened.close().expect("close");
        let raw = std::fs::read(&path).expect("read the file");
        assert!(!raw.windows(7).any(|w| w == b"shipped"), "{mode:?}: a value's text is in clear");
    }
    for (mode, size) in ["zstd", "lzma"].iter().zip(&sizes[1..]) {
        assert!(size * 3 < sizes[0] * 2, "{mode}, encrypted: {size} bytes, encrypted only {}", sizes[0]);
    }
}
