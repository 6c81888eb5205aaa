//! The flat file of every on-memory database: records survive close and
//! reopen (empty keys and values, binary bytes, a 1 MB value), synchronize
//! writes the file while the records stay in memory, a file written by one
//! database opens in another, and a truncated or damaged file is a clear
//! error at open, never a panic.

use std::path::Path;

use kuradb::dbm::baby::{BabyDbm, BabyOptions};
use kuradb::dbm::cache::{CacheDbm, CacheOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions, StdTreeDbm};
use kuradb::dbm::tiny::{TinyDbm, TinyOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::{ErrorKind, Result};

const NAMES: [&str; 5] = ["stdhash", "stdtree", "tiny", "baby", "cache"];

fn open(name: &str, path: &Path, writable: bool) -> Result<Box<dyn Dbm>> {
    Ok(match name {
        "stdhash" => Box::new(StdHashDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &StdOptions::default(),
        )?),
        "stdtree" => Box::new(StdTreeDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &StdOptions::default(),
        )?),
        "tiny" => Box::new(TinyDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &TinyOptions::default(),
        )?),
        "baby" => Box::new(BabyDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &BabyOptions::default(),
        )?),
        _ => Box::new(CacheDbm::open(
            path,
            if writable { Access::ReadWrite } else { Access::ReadOnly },
            &CacheOptions::default(),
        )?),
    })
}

fn records() -> Vec<(Vec<u8>, Vec<u8>)> {
    let big: Vec<u8> = (0..1u32 << 20).map(|i| (i ^ (i >> 8)) as u8).collect();
    let mut r = vec![
        (vec![], vec![]),
        (b"empty value".to_vec(), vec![]),
        (vec![0, 0xff, 0x80, b'\n', 0], vec![0xff; 300]),
        (b"large".to_vec(), big),
    ];
    r.extend((0..2000u32).map(|i| (i.to_be_bytes().to_vec(), format!("value {i}").into_bytes())));
    r
}

fn check(db: &dyn Dbm, records: &[(Vec<u8>, Vec<u8>)], what: &str) {
    assert_eq!(db.count().unwrap(), records.len() as u64, "{what}: count");
    for (k, v) in records {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()), "{what}: key {k:?}");
    }
}

#[test]
fn records_survive_close_and_synchronize_keeps_them_in_memory() {
    for name in NAMES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.flat");
        let records = records();
        let db = open(name, &path, true).unwrap();
        for (k, v) in &records {
            db.set(k, v).unwrap();
        }
        db.synchronize(Durability::Hard).unwrap();
        check(&*db, &records, &format!("[{name}] after synchronize"));
        // The file already holds everything: a reader sees it while the writer is open.
        check(&*open(name, &path, false).unwrap(), &records, &format!("[{name}] synchronized file"));
        db.remove(b"large").unwrap();
        drop(db);
        let kept: Vec<_> = records.iter().filter(|(k, _)| k != b"large").cloned().collect();
        let reopened = open(name, &path, false).unwrap();
        check(&*reopened, &kept, &format!("[{name}] reopened"));
        assert_eq!(reopened.get(b"large").unwrap(), None, "[{name}] a removal reaches the file at close");
        // Every database reads every other's file.
        for other in NAMES {
            check(&*open(other, &path, false).unwrap(), &kept, &format!("[{name} read by {other}]"));
        }
        let copy = dir.path().join("copy.flat");
        reopened.copy_file_data(&copy, Durability::Hard).unwrap();
        check(&*open(name, &copy, false).unwrap(), &kept, &format!("[{name}] copy"));
    }
}

#[test]
fn a_missing_file_is_empty_for_a_writer_and_an_error_for_a_reader() {
    for name in NAMES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.flat");
        let err = open(name, &path, false).err().expect("a reader needs the file");
        assert_eq!(err.kind(), ErrorKind::NotFound, "[{name}] {err}");
        assert_eq!(open(name, &path, true).unwrap().count().unwrap(), 0);
        assert!(path.exists(), "[{name}] closing a writer writes the file");
    }
}

#[test]
fn truncated_or_damaged_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("good.flat");
    {
        let db = TinyDbm::open(&path, Access::ReadWrite, &TinyOptions::default()).unwrap();
        for i in 0..50u32 {
            db.set(&i.to_le_bytes(), &vec![i as u8; i as usize]).unwrap();
        }
        db.close().unwrap();
    }
    let good = std::fs::read(&path).unwrap();
    let bad = dir.path().join("bad.flat");
    let cases: Vec<(String, Vec<u8>)> = vec![
        ("cut in the header".into(), good[..10].to_vec()),
        ("cut in a record".into(), good[..good.len() / 2].to_vec()),
        ("cut before the trailer".into(), good[..good.len() - 2].to_vec()),
        ("a flipped value byte".into(), {
            let mut b = good.clone();
            let at = b.len() - 10;
            b[at] ^= 1;
            b
        }),
        ("a flipped count".into(), {
            let mut b = good.clone();
            b[12] ^= 1;
            b
        }),
    ];
    for name in NAMES {
        for (what, bytes) in &cases {
            std::fs::write(&bad, bytes).unwrap();
            for writable in [false, true] {
                let err =
                    open(name, &bad, writable).err().unwrap_or_else(|| panic!("[{name}] {what} opened"));
                assert_eq!(err.kind(), ErrorKind::BrokenData, "[{name}] {what}: {err}");
                let text = err.to_string();
                assert!(text.contains("bad.flat") && text.contains("broken"), "[{name}] {what}: {text}");
            }
            assert_eq!(
                std::fs::read(&bad).unwrap(),
                *bytes,
                "[{name}] {what}: a failed open leaves the file"
            );
        }
    }
}

#[test]
fn a_writer_removes_what_a_crashed_save_left_and_a_reader_does_not() {
    for name in NAMES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.flat");
        let leftover = dir.path().join("casket.flat.flat-tmp");
        open(name, &path, true).unwrap().set(b"k", b"v").unwrap();
        std::fs::write(&leftover, b"half a save").unwrap();
        drop(open(name, &path, false).unwrap());
        assert!(leftover.exists(), "[{name}] a reader removed a file it does not own");
        let db = open(name, &path, true).unwrap();
        assert!(!leftover.exists(), "[{name}] the writer left a crashed save's file");
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]), "[{name}]");
    }
}
