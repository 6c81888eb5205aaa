//! A full disk for real: each database writes on a 16 MiB tmpfs the test
//! mounts until the filesystem fills. The writer must get a clear "no space"
//! error (ENOSPC, the message naming the file), the process goes on, the
//! database reopens with every synchronized record, and once a filler file
//! made at the start is removed, writing resumes.
//!
//! Mounting needs root (CAP_SYS_ADMIN); where it is refused, each test
//! prints why and passes without checking anything.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::hash::{self as h, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::skip::{SkipDbm, SkipOptions};
use kuradb::dbm::std_map::{StdHashDbm, StdOptions};
use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::ErrorKind;

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop so that
/// a failing test leaves no mount behind.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts one, or says why it cannot.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(format!("mount refused: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// The database classes written to a full disk.
#[derive(Clone, Copy, Debug)]
enum Class {
    Hash(UpdateMode, &'static str),
    Tree,
    Skip,
    StdHash,
}

fn open(class: Class, path: &Path) -> kuradb::Result<Box<dyn Dbm>> {
    Ok(match class {
        Class::Hash(mode, spec) => {
            let spec = FileSpec::parse(spec).expect("spec");
            Box::new(HashDbm::open(
                path,
                Access::ReadWrite,
                &HashOptions::default().file(spec).update_mode(mode),
            )?)
        }
        Class::Tree => Box::new(TreeDbm::open(path, Access::ReadWrite, &TreeOptions::default())?),
        Class::Skip => Box::new(SkipDbm::open(path, Access::ReadWrite, &SkipOptions::default())?),
        Class::StdHash => Box::new(StdHashDbm::open(path, Access::ReadWrite, &StdOptions::default())?),
    })
}

/// The filler that takes the space the test frees to let writing resume.
fn filler(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    std::fs::write(&path, vec![7u8; 9 << 20]).expect("write the filler");
    path
}

fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value {i} ").into_bytes();
    v.resize(1000, b'a' + (i % 26) as u8);
    v
}

/// Writes records, synchronizing hard every 50, until an error; answers the
/// records synchronized and the error.
fn fill(db: &dyn Dbm) -> (Model, kuradb::Error) {
    let (mut live, mut synced) = (Model::new(), Model::new());
    for i in 0..100_000 {
        let key = format!("key{i:06}").into_bytes();
        let step = db.set(&key, &value(i)).map(|()| {
            live.insert(key, value(i));
        });
        let step = step.and_then(|()| if i % 50 == 49 { db.synchronize(Durability::Hard) } else { Ok(()) });
        match step {
            Ok(()) if i % 50 == 49 => synced.clone_from(&live),
            Ok(()) => {}
            Err(e) => return (synced, e),
        }
    }
    panic!("100,000 records of 1 KB fit on a 16 MiB filesystem");
}

/// Fills the disk under `class`, then checks the error, the reopened
/// database, and that writing resumes once space is freed.
fn check(class: Class) {
    let fs = match Tmpfs::mount("16m") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("skipping the full-disk test of {class:?}: {why}");
            return;
        }
    };
    let filler = filler(fs.path());
    let path = fs.path().join("casket");
    let db = open(class, &path).unwrap_or_else(|e| panic!("{class:?}: open: {e}"));
    let (synced, err) = fill(db.as_ref());
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{class:?}: the error is not ENOSPC: {err}");
    assert_eq!(err.kind(), ErrorKind::System, "{class:?}: {err}");
    let text = err.to_string();
    assert!(text.contains("No space left on device"), "{class:?}: the message does not say so: {text}");
    assert!(text.contains(&fs.path().display().to_string()), "{class:?}: the message names no file: {text}");
    assert!(
        synced.len() >= 50,
        "{class:?}: only {} records fitted before the disk filled: {err}",
        synced.len()
    );
    // The close may fail too (it has data to write); the process goes on.
    let _ = db.close();
    std::fs::remove_file(&filler).expect("remove the filler");
    let db = open(class, &path).unwrap_or_else(|e| panic!("{class:?}: reopen after the full disk: {e}"));
    let found = h::records(db.as_ref()).unwrap_or_else(|e| panic!("{class:?}: read after reopening: {e}"));
    for (key, value) in &synced {
        assert_eq!(found.get(key), Some(value), "{class:?}: synchronized record {} lost", h::show(key));
    }
    for (key, value) in &found {
        let i: usize = std::str::from_utf8(&key[3..]).expect("key").parse().expect("key");
        assert_eq!(value, &self::value(i), "{class:?}: {} holds a value never written", h::show(key));
    }
    for i in 0..50 {
        let key = format!("more{i}").into_bytes();
        db.set(&key, b"after the disk was freed")
            .unwrap_or_else(|e| panic!("{class:?}: a write after freeing space: {e}"));
    }
    db.synchronize(Durability::Hard)
        .unwrap_or_else(|e| panic!("{class:?}: synchronize after freeing space: {e}"));
    db.close().unwrap_or_else(|e| panic!("{class:?}: close after freeing space: {e}"));
    eprintln!("{class:?}: {} synchronized records survived \"{text}\"", synced.len());
}

#[test]
fn hash_in_place_on_mmap_fills_the_disk_cleanly() {
    check(Class::Hash(UpdateMode::InPlace, "mmap-para"));
}

#[test]
fn hash_in_place_on_positional_files_fills_the_disk_cleanly() {
    check(Class::Hash(UpdateMode::InPlace, "pos-para"));
}

#[test]
fn hash_appending_fills_the_disk_cleanly() {
    check(Class::Hash(UpdateMode::Appending, "pos-atom,block_size=512,access=pagecache"));
}

#[test]
fn tree_fills_the_disk_cleanly() {
    check(Class::Tree);
}

#[test]
fn skip_fills_the_disk_cleanly() {
    check(Class::Skip);
}

#[test]
fn std_hash_with_a_flat_file_fills_the_disk_cleanly() {
    check(Class::StdHash);
}
