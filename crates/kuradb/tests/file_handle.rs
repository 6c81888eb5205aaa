//! What an open file handle reports about itself and refuses to do: read-only
//! handles refuse writes, closed handles refuse everything, and the accessors
//! describe the implementation and options the handle was opened with.

mod common;

use common::ExpectSpec;
use kuradb::dbm::Durability;
use kuradb::file::{LockMode, OpenOptions};
use kuradb::{ErrorKind, Result};

fn assert_infeasible<T: std::fmt::Debug>(spec: &impl std::fmt::Display, what: &str, result: Result<T>) {
    match result {
        Ok(value) => panic!("[{spec}] {what} succeeded with {value:?}, expected an infeasible error"),
        Err(err) => assert_eq!(err.kind(), ErrorKind::Infeasible, "[{spec}] {what}: {err}"),
    }
}

/// A handle opened read-only refuses write, append, expand and truncate with
/// `Infeasible`, and the file keeps its content and size, in memory and on disk.
#[test]
fn read_only_handles_refuse_every_write() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let (path, mut writer) = common::create(&spec, dir.path(), "ro.dat");
        let data = common::pattern(3, 3000);
        writer.write(0, &data).expect_spec(&spec, "write 3000 bytes");
        writer.close().expect_spec(&spec, "close the writer");

        let mut reader = common::open(&spec, &path, &OpenOptions::reader());
        assert!(!reader.is_writable(), "[{spec}] a reader says it is writable");
        assert_infeasible(&spec, "write", reader.write(10, b"x"));
        assert_infeasible(&spec, "write past the end", reader.write(5000, b"x"));
        assert_infeasible(&spec, "append", reader.append(b"x"));
        assert_infeasible(&spec, "expand", reader.expand(100));
        assert_infeasible(&spec, "truncate smaller", reader.truncate(10));
        assert_infeasible(&spec, "truncate larger", reader.truncate(5000));
        common::assert_content(&spec, reader.as_ref(), &data, "after the refused writes");
        reader.close().expect_spec(&spec, "close the reader");
        assert_eq!(std::fs::read(&path).expect("read the file"), data, "[{spec}] the file on disk");
    }
}

/// After `close`, every fallible method fails with `Infeasible`, a second
/// `close` included.
#[test]
fn closed_handles_refuse_every_call() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let (_path, mut file) = common::create(&spec, dir.path(), "closed.dat");
        file.write(0, b"some bytes").expect_spec(&spec, "write");
        file.close().expect_spec(&spec, "close");
        let mut buf = [0u8; 4];
        assert_infeasible(&spec, "read", file.read(0, &mut buf));
        assert_infeasible(&spec, "write", file.write(0, b"x"));
        assert_infeasible(&spec, "append", file.append(b"x"));
        assert_infeasible(&spec, "expand", file.expand(10));
        assert_infeasible(&spec, "truncate", file.truncate(2));
        assert_infeasible(&spec, "soft synchronize", file.synchronize(Durability::Soft));
        assert_infeasible(&spec, "hard synchronize", file.synchronize(Durability::Hard));
        assert_infeasible(&spec, "lock", file.try_lock(LockMode::Exclusive));
        assert_infeasible(&spec, "unlock", file.unlock());
        assert_infeasible(&spec, "close again", file.close());
    }
}

/// `block_size`, `is_atomic`, `is_writable` and `path` report the spec and
/// options the file was opened with.
#[test]
fn accessors_describe_the_open_file() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix() {
        let (path, mut file) = common::create(&spec, dir.path(), "accessors.dat");
        assert_eq!(file.block_size(), spec.block_size, "[{spec}] block_size()");
        assert_eq!(file.is_atomic(), spec.kind.is_atomic(), "[{spec}] is_atomic()");
        assert!(file.is_writable(), "[{spec}] a writer says it is not writable");
        assert_eq!(file.path(), path.as_path(), "[{spec}] path()");
        file.close().expect_spec(&spec, "close");
    }
}

/// A truncating open empties an existing file; a plain writer open keeps it.
#[test]
fn truncating_open_empties_and_plain_open_keeps() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let path = dir.path().join("keep.dat");
        let data = common::pattern(5, 777);
        std::fs::write(&path, &data).expect("write the file");
        let mut kept = common::open(&spec, &path, &OpenOptions::writer());
        common::assert_content(&spec, kept.as_ref(), &data, "opened without truncation");
        kept.close().expect_spec(&spec, "close");
        let mut emptied = common::open(&spec, &path, &OpenOptions::writer().truncating());
        assert_eq!(emptied.size(), 0, "[{spec}] size after a truncating open");
        emptied.close().expect_spec(&spec, "close");
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 0, "[{spec}] file length");
    }
}

/// Opening a missing file read-only fails with `NotFound` and creates nothing.
#[test]
fn readers_do_not_create_files() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let path = dir.path().join("missing.dat");
        let err = spec.open(&path, &OpenOptions::reader()).map(|_| ()).expect_err("opened a missing file");
        assert_eq!(err.kind(), ErrorKind::NotFound, "[{spec}] {err}");
        assert!(!path.exists(), "[{spec}] a reader created the file");
    }
}

/// Only the memory-mapped file takes prefetch hints; every other declines
/// them (so a database spends no more work on hints for it). A hint of any
/// range, past the end included, changes nothing, open or closed.
#[test]
fn only_a_memory_mapped_file_takes_prefetch_hints() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix() {
        let (_, mut file) = common::create(&spec, dir.path(), "hint.dat");
        let data = common::pattern(5, 3000);
        file.write(0, &data).expect_spec(&spec, "write 3000 bytes");
        let memory = spec.kind == kuradb::file::FileKind::MmapParallel
            || spec.kind == kuradb::file::FileKind::MmapAtomic;
        for (offset, len) in [(0, 100), (2990, 100), (10_000, 10), (u64::MAX, usize::MAX)] {
            assert_eq!(file.prefetch(offset, len), memory, "[{spec}] prefetch of {len} bytes at {offset}");
        }
        common::assert_content(&spec, file.as_ref(), &data, "after the hints");
        file.close().expect_spec(&spec, "close");
        assert!(!file.prefetch(0, 100), "[{spec}] a closed file took a hint");
    }
}
