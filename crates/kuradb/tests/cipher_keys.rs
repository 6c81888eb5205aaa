//! Sealed keys of an encrypted hash database (format version 4 and later): no key is
//! in the file's bytes; every way of reading keys (lookups, batches, walks,
//! cursors, export, rebuild, restore) gives the caller's keys; a changed
//! stored key is an authentication error naming the offset; a version-2
//! file (keys in clear, `tests/data/cipher`, written before keys were
//! sealed) reads and takes writes as before, and a rebuild or restore seals
//! its keys.

mod common;

use std::path::{Path, PathBuf};

use common::hash::{self as h, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions};
use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Action, Dbm};
use kuradb::ErrorKind;

const KEY: &str = "correct horse battery staple";

fn options() -> HashOptions {
    HashOptions::default().num_buckets(64).cipher_key(KEY)
}

fn info(db: &dyn Dbm, name: &str) -> String {
    db.inspect().unwrap().into_iter().find(|(k, _)| k == name).map(|(_, v)| v).unwrap_or_default()
}

fn has(bytes: &[u8], needle: &[u8]) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// The file's format version and cipher (header bytes 8 and 15).
fn format(path: &Path) -> (u8, u8) {
    let bytes = std::fs::read(path).unwrap();
    (bytes[8], bytes[15])
}

fn secret(i: usize) -> Vec<u8> {
    format!("SECRETKEY-{i:04}").into_bytes()
}

/// Every key a cursor visits, in its order.
fn cursor_keys(db: &dyn Dbm) -> kuradb::Result<Vec<Vec<u8>>> {
    let mut cursor = db.iter()?;
    cursor.first()?;
    let mut keys = Vec::new();
    while let Some((key, _)) = cursor.get()? {
        keys.push(key);
        cursor.next()?;
    }
    Ok(keys)
}

#[test]
fn no_key_is_stored_in_clear_and_every_path_gives_the_callers_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let db = HashDbm::open(&path, Access::ReadWrite, &options()).unwrap();
    let mut model = Model::new();
    for i in 0..200 {
        db.set(&secret(i), format!("v{i}").as_bytes()).unwrap();
        model.insert(secret(i), format!("v{i}").into_bytes());
    }
    let pairs: Vec<(Vec<u8>, Vec<u8>)> =
        (200..260).map(|i| (secret(i), format!("v{i}").into_bytes())).collect();
    let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    db.set_multi(&refs).unwrap();
    model.extend(pairs.iter().cloned());
    db.append(&secret(7), b"+more", b"").unwrap();
    model.insert(secret(7), b"v7+more".to_vec());
    assert_eq!(db.remove_multi(&[&secret(3)[..], &secret(250)[..]]).unwrap(), 2);
    model.remove(&secret(3));
    model.remove(&secret(250));
    assert_eq!(info(&db, "key_cipher"), "aes-256-siv");
    h::compare(&db, &model).unwrap();
    db.close().unwrap();
    assert_eq!(format(&path), (7, 2));
    assert!(!has(&std::fs::read(&path).unwrap(), b"SECRETKEY"), "a key in clear");

    let db = HashDbm::open(&path, Access::ReadWrite, &options()).unwrap();
    h::compare(&db, &model).unwrap();
    let probe = [&secret(5)[..], b"SECRETKEY-9999", &secret(3)[..], &secret(5)[..]];
    let got = db.get_multi(&probe).unwrap();
    assert_eq!(got, vec![Some(b"v5".to_vec()), None, None, Some(b"v5".to_vec())]);
    assert_eq!(db.contains_multi(&probe).unwrap(), vec![true, false, false, true]);
    assert!(db.contains(&secret(8)).unwrap() && !db.contains(&secret(3)).unwrap());
    let mut seen = Vec::new();
    db.process_multi(&probe, Access::ReadOnly, &mut |_, key, _| {
        seen.push(key.to_vec());
        Action::Keep
    })
    .unwrap();
    assert_eq!(seen, probe.iter().map(|k| k.to_vec()).collect::<Vec<_>>());
    let mut walked = cursor_keys(&db).unwrap();
    walked.sort();
    assert_eq!(walked, model.keys().cloned().collect::<Vec<_>>());
    // A jump finds a key's bucket by its sealed form.
    let mut cursor = db.iter().unwrap();
    cursor.jump(&secret(150)).unwrap();
    assert_eq!(cursor.get().unwrap(), Some((secret(150), b"v150".to_vec())));
    cursor.set(b"jumped").unwrap();
    model.insert(secret(150), b"jumped".to_vec());
    assert!(cursor.jump(&secret(3)).is_err());
    drop(cursor);
    // A writable walk sees and changes records by the caller's keys.
    db.process_each(Access::ReadWrite, &mut |key, value| match key == &secret(9)[..] {
        true => Action::set(b"walked"),
        false => {
            assert!(key.starts_with(b"SECRETKEY-") && value.starts_with(b"v") || value == b"jumped");
            Action::Keep
        }
    })
    .unwrap();
    model.insert(secret(9), b"walked".to_vec());
    let copy = StdHashDbm::new(&StdOptions::default());
    db.export(&copy).unwrap();
    h::compare(&copy, &model).unwrap();
    db.rebuild().unwrap();
    h::compare(&db, &model).unwrap();
    let crashed = dir.path().join("crashed.kh");
    h::crash_copy(&db, &path, &crashed).unwrap();
    db.close().unwrap();
    assert!(!has(&std::fs::read(&path).unwrap(), b"SECRETKEY"), "a key in clear after a rebuild");
    let restored = dir.path().join("restored.kh");
    assert_eq!(HashDbm::restore(&crashed, &restored, &options()).unwrap(), model.len() as u64);
    assert!(!has(&std::fs::read(&restored).unwrap(), b"SECRETKEY"), "a key in clear after a restore");
    h::compare(&HashDbm::open(&restored, Access::ReadOnly, &options()).unwrap(), &model).unwrap();
    // The automatic restore at open too.
    let db = HashDbm::open(&crashed, Access::ReadWrite, &options()).unwrap();
    h::compare(&db, &model).unwrap();
    db.close().unwrap();
    assert!(!has(&std::fs::read(&crashed).unwrap(), b"SECRETKEY"));
}

/// A tree's node store keeps its keys (page numbers) in clear, at version 7
/// as every new file: the tree's own keys are inside its sealed pages.
#[test]
fn a_tree_keeps_its_node_keys_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    let db = TreeDbm::open(&path, Access::ReadWrite, &TreeOptions::default().cipher_key(KEY)).unwrap();
    db.set(b"SECRETKEY-tree", b"v").unwrap();
    db.close().unwrap();
    assert_eq!(format(&path), (7, 1));
    assert!(!has(&std::fs::read(&path).unwrap(), b"SECRETKEY"));
}

/// A record of a short key and value: magic, a 4-byte offset, epoch,
/// checksum and three one-byte sizes come before its key.
const RECORD_HEAD: usize = 1 + 4 + 4 + 4 + 3;

#[test]
fn a_changed_stored_key_is_an_authentication_error_naming_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kh");
    let o = HashOptions::default().num_buckets(11).cipher_key(KEY);
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    db.set(b"key-tampered", b"the value").unwrap();
    db.set(b"key-intact", b"another value").unwrap();
    db.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // The first record written starts the record area.
    let record = u64::from_le_bytes(bytes[24..32].try_into().unwrap()) as usize;
    assert_eq!(bytes[record + 13] as usize, b"key-tampered".len() + 16, "the stored key's size");
    bytes[record + RECORD_HEAD + 20] ^= 0x01;
    // Changed on purpose, its checksum made to hold: a restore's scan keeps it.
    let end = record + RECORD_HEAD + bytes[record + 13] as usize + bytes[record + 14] as usize;
    // Versions 6 and 7: a live record's checksum covers the epoch (bytes 5 to
    // 8), then the body.
    let mut covered = bytes[record + 5..record + 9].to_vec();
    covered.extend_from_slice(&bytes[record + 13..end]);
    let crc = crc32fast::hash(&covered);
    bytes[record + 9..record + 13].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let offset = format!("offset {record}");
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    assert_eq!(db.get(b"key-intact").unwrap().as_deref(), Some(&b"another value"[..]));
    // A lookup compares sealed keys: the changed one is no one's.
    assert_eq!(db.get(b"key-tampered").unwrap(), None);
    assert!(db.is_healthy());
    let err = h::records(&db).unwrap_err();
    assert!(err.contains("its key fails authentication") && err.contains(&offset), "{err}");
    assert!(err.contains("casket.kh"), "{err}");
    assert!(!db.is_healthy());
    let err = cursor_keys(&db).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.to_string().contains("key fails authentication"), "{err}");
    let err = db.rebuild().unwrap_err();
    assert!(
        err.to_string().contains("key fails authentication") && err.to_string().contains(&offset),
        "{err}"
    );
    db.close().unwrap();
    let err = HashDbm::restore(&path, dir.path().join("restored.kh"), &o).unwrap_err();
    assert!(
        err.to_string().contains("key fails authentication") && err.to_string().contains(&offset),
        "{err}"
    );
}

/// The passphrase of the fixture.
const FIXTURE_KEY: &str = "fixture passphrase";

/// What the program that made `tests/data/cipher/main-v2-sealed-values.kh`
/// wrote: `plainkey000` to `plainkey039`, `plainkey005` removed.
fn fixture_model() -> Model {
    (0..40usize)
        .filter(|&i| i != 5)
        .map(|i| {
            (format!("plainkey{i:03}").into_bytes(), format!("value-{i}-{}", "v".repeat(i % 7)).into_bytes())
        })
        .collect()
}

fn fixture(dir: &Path) -> PathBuf {
    let name = "main-v2-sealed-values.kh";
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cipher").join(name);
    let dest = dir.join(name);
    std::fs::copy(src, &dest).unwrap();
    dest
}

#[test]
fn a_file_with_keys_in_clear_reads_takes_writes_and_a_rebuild_seals_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture(dir.path());
    let o = HashOptions::default().cipher_key(FIXTURE_KEY);
    assert_eq!(format(&path), (2, 1));
    let err = HashDbm::open(&path, Access::ReadOnly, &HashOptions::default().cipher_key(KEY)).err().unwrap();
    assert!(err.to_string().contains("wrong cipher_key"), "{err}");
    let mut model = fixture_model();
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    assert_eq!(info(&db, "key_cipher"), "none");
    h::compare(&db, &model).unwrap();
    db.set(b"plainkey-added", b"added").unwrap();
    db.remove(b"plainkey010").unwrap();
    db.append(b"plainkey020", b"+", b"").unwrap();
    model.insert(b"plainkey-added".to_vec(), b"added".to_vec());
    model.remove(&b"plainkey010"[..]);
    model.get_mut(&b"plainkey020"[..]).unwrap().push(b'+');
    let mut cursor = db.iter().unwrap();
    cursor.jump(b"plainkey030").unwrap();
    assert_eq!(cursor.get().unwrap().map(|(k, _)| k), Some(b"plainkey030".to_vec()));
    drop(cursor);
    db.close().unwrap();
    // Still version 2, its keys in clear: what its own readers expect.
    assert_eq!(format(&path), (2, 1));
    assert!(has(&std::fs::read(&path).unwrap(), b"plainkey-added"));
    let db = HashDbm::open(&path, Access::ReadWrite, &o).unwrap();
    h::compare(&db, &model).unwrap();
    let restored = dir.path().join("restored.kh");
    assert_eq!(HashDbm::restore(&path, &restored, &o).unwrap(), model.len() as u64);
    assert_eq!(format(&restored), (7, 2));
    h::compare(&HashDbm::open(&restored, Access::ReadOnly, &o).unwrap(), &model).unwrap();
    db.rebuild().unwrap();
    assert_eq!(info(&db, "key_cipher"), "aes-256-siv");
    h::compare(&db, &model).unwrap();
    db.close().unwrap();
    assert_eq!(format(&path), (7, 2));
    assert!(!has(&std::fs::read(&path).unwrap(), b"plainkey"), "a key in clear after the rebuild");
    h::compare(&HashDbm::open(&path, Access::ReadOnly, &o).unwrap(), &model).unwrap();
}
