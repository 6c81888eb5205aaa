//! A damaged or foreign file opened as a tree database gives a clear error,
//! never a panic or a hang: empty and garbage files, a hash database opened
//! as a tree and a tree opened as a hash database, truncated tree files, and
//! tree files with flipped bytes (anywhere, so in node records too), which
//! must either open and read through or fail with an error.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use common::hash::{self as h, Model};
use common::tree as t;
use kuradb::dbm::hash::HashDbm;
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Cursor, Dbm};
use kuradb::file::FileSpec;
use kuradb::ErrorKind;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn specs() -> Vec<(&'static str, FileSpec)> {
    h::specs()
        .into_iter()
        .filter(|(n, _)| ["mmap-para", "pos-para", "pos-atom-block512-pagecache"].contains(n))
        .collect()
}

fn options(spec: &FileSpec) -> TreeOptions {
    t::options(spec, KeyComparator::Lexical, 256, 4, 4, 7)
}

/// Builds and closes a tree of `n` records (some removed) at `path`.
fn build(path: &Path, options: &TreeOptions, n: usize) -> Model {
    let _ = std::fs::remove_file(path);
    let db = TreeDbm::open(path, Access::ReadWrite, options).expect("create");
    let mut model = Model::new();
    for i in 0..n {
        let (k, v) =
            (format!("key{i:04}").into_bytes(), format!("value {i} {}", "v".repeat(i % 40)).into_bytes());
        db.set(&k, &v).expect("set");
        model.insert(k, v);
    }
    for i in (0..n).step_by(7) {
        let k = format!("key{i:04}").into_bytes();
        db.remove(&k).expect("remove");
        model.remove(&k);
    }
    db.close().expect("close");
    model
}

/// Opens `path` as a tree and reads everything every way; answers whether
/// it all worked. Errors are fine; a panic is not (the caller catches it).
fn read_through(path: &Path, options: &TreeOptions, writable: bool) -> kuradb::Result<Model> {
    let db = TreeDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, options)?;
    let mut found = Model::new();
    for r in db.range::<&[u8]>(..)? {
        let (k, v) = r?;
        found.insert(k, v);
    }
    let mut c = db.cursor();
    c.last()?;
    let mut steps = 0;
    while c.get()?.is_some() && steps < 100_000 {
        c.previous()?;
        steps += 1;
    }
    for k in found.keys() {
        db.get(k)?;
    }
    db.count()?;
    db.process_each(Access::ReadOnly, &mut |_, _| kuradb::dbm::Action::Keep)?;
    if writable {
        db.set(b"key0003", b"new")?;
        db.remove(b"key0010")?;
    }
    db.close()?;
    Ok(found)
}

/// Runs `f`, turning a panic into a failure that says what was being done.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or(p.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("{what}: panicked: {}", msg.unwrap_or_default())
        }
    }
}

#[test]
fn an_empty_file_opened_read_only_is_refused() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("empty.kt");
        std::fs::write(&path, b"").expect("write");
        let r = no_panic(name, || TreeDbm::open(&path, Access::ReadOnly, &options(&spec)).map(|_| ()));
        let err = r.expect_err("an empty file opened read-only is no database");
        assert!(!err.to_string().is_empty(), "[{name}] the error says something");
    }
}

#[test]
fn a_garbage_file_is_refused() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("garbage.kt");
        for (i, len) in [1usize, 100, 127, 128, 4096, 20_000].into_iter().enumerate() {
            let bytes = common::pattern(i as u64 + 7, len);
            std::fs::write(&path, &bytes).expect("write");
            for writable in [false, true] {
                let r = no_panic(&format!("[{name}] garbage of {len}"), || {
                    read_through(&path, &options(&spec), writable)
                });
                assert!(r.is_err(), "[{name}] {len} bytes of garbage opened (writable {writable})");
            }
            assert_eq!(
                std::fs::read(&path).expect("read"),
                bytes,
                "[{name}] a refused open changed the file"
            );
        }
    }
}

#[test]
fn a_hash_database_is_not_a_tree_and_a_tree_is_not_a_hash_database() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hash_path = dir.path().join("hash.kh");
        let db =
            HashDbm::open(&hash_path, Access::ReadWrite, &h::options(&spec)).expect("create a hash database");
        for i in 0..50 {
            db.set(format!("{i}").as_bytes(), b"x").expect("set");
        }
        db.close().expect("close");
        let before = std::fs::read(&hash_path).expect("read");
        for writable in [false, true] {
            let r = no_panic(name, || {
                TreeDbm::open(
                    &hash_path,
                    if writable { Access::ReadWrite } else { Access::ReadOnly },
                    &options(&spec),
                )
                .map(|_| ())
            });
            let err = r.expect_err("a hash database opened as a tree");
            assert!(err.to_string().contains("hash.kh"), "[{name}] the error names the file: {err}");
        }
        assert_eq!(
            std::fs::read(&hash_path).expect("read"),
            before,
            "[{name}] the refused open changed the file"
        );
        // And the hash database still opens as one.
        let db = HashDbm::open(&hash_path, Access::ReadOnly, &h::options(&spec))
            .expect("reopen as a hash database");
        assert_eq!(db.count().expect("count"), 50);
        db.close().expect("close");

        let tree_path = dir.path().join("tree.kt");
        build(&tree_path, &options(&spec), 100);
        let before = std::fs::read(&tree_path).expect("read");
        for writable in [false, true] {
            let r = no_panic(name, || {
                HashDbm::open(
                    &tree_path,
                    if writable { Access::ReadWrite } else { Access::ReadOnly },
                    &h::options(&spec),
                )
                .map(|_| ())
            });
            let err = r.expect_err("a tree database opened as a hash database");
            assert!(err.to_string().contains("tree.kt"), "[{name}] the error names the file: {err}");
        }
        assert_eq!(
            std::fs::read(&tree_path).expect("read"),
            before,
            "[{name}] the refused open changed the file"
        );
    }
}

#[test]
fn truncated_tree_files_fail_cleanly() {
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tree.kt");
        let cut = dir.path().join("cut.kt");
        let o = options(&spec);
        let model = build(&path, &o, 300);
        let whole = std::fs::read(&path).expect("read");
        let mut rng = SmallRng::seed_from_u64(whole.len() as u64);
        let mut lengths: Vec<usize> = vec![0, 1, 64, 127, 128, 129, whole.len() - 1];
        lengths.extend((0..25).map(|_| rng.gen_range(0..whole.len())));
        for len in lengths {
            for writable in [false, true] {
                std::fs::write(&cut, &whole[..len]).expect("write");
                let what = format!("[{name}] cut to {len} of {} (writable {writable})", whole.len());
                let r = no_panic(&what, || read_through(&cut, &o, writable));
                if let Ok(found) = r {
                    // Whatever opens holds only what was written.
                    for (k, v) in &found {
                        assert!(
                            model.get(k) == Some(v) || (k == b"key0003" && v == b"new"),
                            "{what}: a record {} that was never written",
                            h::show(k)
                        );
                    }
                }
            }
        }
        assert_eq!(read_through(&path, &o, false).expect("the whole file reads"), model);
    }
}

#[test]
fn flipped_bytes_fail_cleanly() {
    let seed: u64 =
        std::env::var("KURADB_CORRUPT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    for (name, spec) in specs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tree.kt");
        let bad = dir.path().join("bad.kt");
        let o = options(&spec);
        let _model = build(&path, &o, 300);
        let whole = std::fs::read(&path).expect("read");
        let mut rng = SmallRng::seed_from_u64(seed);
        let (mut opened, mut refused) = (0, 0);
        for round in 0..100 {
            let mut bytes = whole.clone();
            // Mostly one byte, sometimes a few; mostly past the header, in the records.
            for _ in 0..rng.gen_range(1..=3) {
                let at =
                    if rng.gen_ratio(1, 8) { rng.gen_range(0..128) } else { rng.gen_range(128..bytes.len()) };
                bytes[at] ^= 1 << rng.gen_range(0..8);
            }
            std::fs::write(&bad, &bytes).expect("write");
            let writable = round % 2 == 1;
            let what = format!(
                "[{name} seed {seed}; KURADB_CORRUPT_SEED replays] round {round} (writable {writable})"
            );
            match no_panic(&what, || read_through(&bad, &o, writable)) {
                Ok(_) => opened += 1,
                Err(e) => {
                    assert!(!e.to_string().is_empty(), "{what}: an empty message");
                    refused += 1;
                }
            }
        }
        eprintln!("[{name}] flipped bytes: {opened} read through, {refused} refused");
    }
}

/// Impossible tuning is refused with an invalid-argument error.
#[test]
fn impossible_tuning_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = &specs()[0].1;
    for o in
        [options(spec).max_page_size(10), options(spec).max_branches(2), options(spec).max_cached_pages(0)]
    {
        let r = TreeDbm::open(dir.path().join("x.kt"), Access::ReadWrite, &o);
        assert_eq!(r.map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::InvalidArgument));
    }
}
