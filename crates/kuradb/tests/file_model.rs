//! Every file implementation, with every option, behaves like a `Vec<u8>`.
//!
//! Random sequences of write, read, append, expand, truncate, synchronize and
//! close-and-reopen run against a file and an in-memory model side by side. Every
//! read must return the model's bytes, or fail with `Infeasible` and read nothing
//! when it reaches past the end; the logical size must match after every step;
//! and a closed file must hold exactly the model's bytes on disk.
//!
//! One `#[test]` per group of specs runs a proptest runner for each spec of the
//! group, so a failure names the spec and prints the minimised sequence.

mod common;

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{ExpectSpec, Group};
use kuradb::dbm::Durability;
use kuradb::file::{File, FileSpec, OpenOptions};
use kuradb::ErrorKind;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// The block the offsets and lengths are measured in (the largest tested block size).
const BLOCK: u64 = 4096;
/// The logical size never grows past this, to keep the cases fast.
const MAX_SIZE: u64 = 64 << 10;
/// The longest write, read or append: two and a half blocks.
const MAX_LEN: u64 = BLOCK * 5 / 2;
/// What a read buffer holds before the read, to see whether a failed read wrote it.
const UNREAD: u8 = 0xA5;

/// An offset, resolved against the size at the time the operation runs.
#[derive(Clone, Copy, Debug)]
enum At {
    /// Anywhere from 0 to three blocks past the end.
    Any(u32),
    /// Near a multiple of 512 (so near a block boundary of every tested size).
    Aligned(u8, i8),
    /// Near the current end.
    FromEnd(i16),
}

impl At {
    fn resolve(self, size: u64, bound: u64) -> u64 {
        let bound = bound.min(size + 3 * BLOCK);
        let at = match self {
            At::Any(r) => u64::from(r) % (bound + 1),
            At::Aligned(k, d) => (i64::from(k) * 512 + i64::from(d)).max(0) as u64,
            At::FromEnd(d) => (size as i64 + i64::from(d)).max(0) as u64,
        };
        at.min(bound)
    }
}

/// A length from 0 to two and a half blocks.
#[derive(Clone, Copy, Debug)]
enum Len {
    Any(u16),
    /// Near a multiple of 512.
    Aligned(u8, i8),
}

impl Len {
    fn resolve(self, bound: u64) -> u64 {
        let len = match self {
            Len::Any(r) => u64::from(r) % (MAX_LEN + 1),
            Len::Aligned(k, d) => (i64::from(k) * 512 + i64::from(d)).max(0) as u64,
        };
        len.min(MAX_LEN).min(bound)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Write { at: At, len: Len, seed: u64 },
    Read { at: At, len: Len },
    Append { len: Len, seed: u64 },
    Expand { len: Len },
    Truncate { to: At },
    Synchronize { hard: bool },
    Reopen,
}

fn at() -> impl Strategy<Value = At> {
    prop_oneof![
        any::<u32>().prop_map(At::Any),
        (0u8..=24, -2i8..=2).prop_map(|(k, d)| At::Aligned(k, d)),
        (-4100i16..=3 * 4096).prop_map(At::FromEnd),
    ]
}

fn len() -> impl Strategy<Value = Len> {
    prop_oneof![any::<u16>().prop_map(Len::Any), (0u8..=20, -2i8..=2).prop_map(|(k, d)| Len::Aligned(k, d)),]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (at(), len(), any::<u64>()).prop_map(|(at, len, seed)| Op::Write { at, len, seed }),
        5 => (at(), len()).prop_map(|(at, len)| Op::Read { at, len }),
        2 => (len(), any::<u64>()).prop_map(|(len, seed)| Op::Append { len, seed }),
        1 => len().prop_map(|len| Op::Expand { len }),
        1 => at().prop_map(|to| Op::Truncate { to }),
        1 => any::<bool>().prop_map(|hard| Op::Synchronize { hard }),
        1 => Just(Op::Reopen),
    ]
}

/// An operation with its offsets and lengths resolved, as failures report it.
struct Step<'a> {
    index: usize,
    count: usize,
    op: &'a Op,
    size: u64,
    offset: u64,
    len: u64,
}

impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.op {
            Op::Write { .. } => "write",
            Op::Read { .. } => "read",
            Op::Append { .. } => "append",
            Op::Expand { .. } => "expand",
            Op::Truncate { .. } => "truncate",
            Op::Synchronize { hard: true } => "hard synchronize",
            Op::Synchronize { hard: false } => "soft synchronize",
            Op::Reopen => "close and reopen",
        };
        write!(
            f,
            "step {} of {} ({name}, offset {}, length {}, size before {})",
            self.index + 1,
            self.count,
            self.offset,
            self.len,
            self.size
        )
    }
}

fn fail(spec: &FileSpec, what: impl fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("[{spec}] {what}"))
}

/// Checks that `file` holds exactly `model`, reading it in one call.
fn check_content(spec: &FileSpec, file: &dyn File, model: &[u8], when: &str) -> Result<(), TestCaseError> {
    if file.size() != model.len() as u64 {
        return Err(fail(spec, format!("size {} {when}, expected {}", file.size(), model.len())));
    }
    let content = common::read_all(file).map_err(|e| fail(spec, format!("read all {when}: {e}")))?;
    if let Some(at) = common::first_difference(&content, model) {
        return Err(fail(spec, format!("content {when} differs first at offset {at}")));
    }
    Ok(())
}

/// Closes `file` and checks the file on disk is exactly the logical size.
fn close_and_check_length(
    spec: &FileSpec,
    file: &mut dyn File,
    path: &Path,
    model: &[u8],
    when: &str,
) -> Result<(), TestCaseError> {
    file.close().map_err(|e| fail(spec, format!("close {when}: {e}")))?;
    let length = std::fs::metadata(path).map_err(|e| fail(spec, e))?.len();
    if length != model.len() as u64 {
        return Err(fail(
            spec,
            format!("file length {length} after close {when}, logical size {}", model.len()),
        ));
    }
    Ok(())
}

/// Runs `ops` on a fresh file at `path` and on a model, checking each step.
fn check_sequence(spec: &FileSpec, path: &Path, ops: &[Op]) -> Result<(), TestCaseError> {
    let open = |options: &OpenOptions| {
        spec.open(path, options).map_err(|e| fail(spec, format!("open {}: {e}", path.display())))
    };
    let mut file = open(&OpenOptions::writer().truncating())?;
    let mut model: Vec<u8> = Vec::new();
    for (index, op) in ops.iter().enumerate() {
        let size = model.len() as u64;
        let mut step = Step { index, count: ops.len(), op, size, offset: 0, len: 0 };
        match *op {
            Op::Write { at, len, seed } => {
                step.len = len.resolve(MAX_SIZE);
                step.offset = at.resolve(size, MAX_SIZE - step.len);
                if step.len == 0 {
                    // Whether an empty write past the end extends the file is unspecified.
                    step.offset = step.offset.min(size);
                }
                let data = common::pattern(seed, step.len as usize);
                file.write(step.offset, &data).map_err(|e| fail(spec, format!("{step}: {e}")))?;
                let end = step.offset as usize + data.len();
                if end > model.len() {
                    model.resize(end, 0);
                }
                model[step.offset as usize..end].copy_from_slice(&data);
            }
            Op::Read { at, len } => {
                step.len = len.resolve(u64::MAX);
                step.offset = at.resolve(size, u64::MAX);
                if step.len == 0 {
                    // Whether an empty read past the end fails is unspecified.
                    step.offset = step.offset.min(size);
                }
                let mut buf = vec![UNREAD; step.len as usize];
                let result = file.read(step.offset, &mut buf);
                if step.offset + step.len <= size {
                    result.map_err(|e| fail(spec, format!("{step}: {e}")))?;
                    let expected = &model[step.offset as usize..(step.offset + step.len) as usize];
                    if let Some(at) = common::first_difference(&buf, expected) {
                        return Err(fail(spec, format!("{step}: byte {at} of the read differs")));
                    }
                } else {
                    match result {
                        Ok(()) => return Err(fail(spec, format!("{step}: read past the end succeeded"))),
                        Err(e) if e.kind() != ErrorKind::Infeasible => {
                            return Err(fail(spec, format!("{step}: expected an infeasible error, got {e}")))
                        }
                        Err(_) if buf.iter().any(|&b| b != UNREAD) => {
                            return Err(fail(spec, format!("{step}: the failed read wrote the buffer")))
                        }
                        Err(_) => {}
                    }
                }
            }
            Op::Append { len, seed } => {
                step.len = len.resolve(MAX_SIZE - size);
                let data = common::pattern(seed, step.len as usize);
                let offset = file.append(&data).map_err(|e| fail(spec, format!("{step}: {e}")))?;
                if offset != size {
                    return Err(fail(spec, format!("{step}: appended at {offset}")));
                }
                model.extend_from_slice(&data);
            }
            Op::Expand { len } => {
                step.len = len.resolve(MAX_SIZE - size);
                let old = file.expand(step.len).map_err(|e| fail(spec, format!("{step}: {e}")))?;
                if old != size {
                    return Err(fail(spec, format!("{step}: expand answered old size {old}")));
                }
                model.resize((size + step.len) as usize, 0);
            }
            Op::Truncate { to } => {
                step.offset = to.resolve(size, MAX_SIZE);
                file.truncate(step.offset).map_err(|e| fail(spec, format!("{step}: {e}")))?;
                model.resize(step.offset as usize, 0);
            }
            Op::Synchronize { hard } => {
                file.synchronize(if hard { Durability::Hard } else { Durability::Soft })
                    .map_err(|e| fail(spec, format!("{step}: {e}")))?;
            }
            Op::Reopen => {
                close_and_check_length(spec, file.as_mut(), path, &model, &step.to_string())?;
                file = open(&OpenOptions::writer())?;
                check_content(spec, file.as_ref(), &model, &format!("after {step}"))?;
            }
        }
        if file.size() != model.len() as u64 {
            return Err(fail(
                spec,
                format!("{step}: size is {} after it, expected {}", file.size(), model.len()),
            ));
        }
    }
    check_content(spec, file.as_ref(), &model, "at the end")?;
    close_and_check_length(spec, file.as_mut(), path, &model, "at the end")?;
    let mut reader = open(&OpenOptions::reader())?;
    check_content(spec, reader.as_ref(), &model, "reopened read-only at the end")?;
    reader.close().map_err(|e| fail(spec, format!("close the reader: {e}")))?;
    Ok(())
}

/// Runs `cases` random sequences against every spec of `group`; panics listing
/// each failing spec with its minimised sequence.
fn check_group(group: Group, cases: u32) {
    let specs = common::specs(group);
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let counter = AtomicU64::new(0);
    let mut failures = Vec::new();
    for spec in &specs {
        let config = Config { cases, max_shrink_iters: 4096, failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new(config);
        let result = runner.run(&proptest::collection::vec(op(), 1..60), |ops| {
            let path = dir.path().join(format!("case-{}.dat", counter.fetch_add(1, Ordering::Relaxed)));
            let result = check_sequence(spec, &path, &ops);
            let _ = std::fs::remove_file(&path);
            result
        });
        match result {
            Ok(()) => {}
            Err(TestError::Fail(reason, ops)) => {
                failures.push(format!("{spec}: {reason}\n  minimal sequence: {ops:?}"))
            }
            Err(TestError::Abort(reason)) => failures.push(format!("{spec}: aborted: {reason}")),
        }
    }
    if group != Group::Direct || common::direct_io_supported() {
        assert!(!specs.is_empty(), "group {group:?} has no specs");
    }
    assert!(
        failures.is_empty(),
        "{} of {} specs failed:\n{}",
        failures.len(),
        specs.len(),
        failures.join("\n")
    );
}

/// The memory-mapped files behave like a byte vector.
#[test]
fn mmap_files_match_the_model() {
    check_group(Group::Mmap, 64);
}

/// The positional files without options behave like a byte vector.
#[test]
fn positional_files_match_the_model() {
    check_group(Group::Positional, 64);
}

/// Block I/O of every block size behaves like a byte vector at unaligned offsets.
#[test]
fn block_io_matches_the_model() {
    check_group(Group::Block, 48);
}

/// The page cache, evicting constantly or rarely, behaves like a byte vector.
#[test]
fn page_cache_matches_the_model() {
    check_group(Group::PageCache, 32);
}

/// The head buffer, of a size that is no multiple of the block size, behaves like
/// a byte vector, also when truncation cuts into it.
#[test]
fn head_buffer_matches_the_model() {
    check_group(Group::HeadBuffer, 48);
}

/// Direct I/O behaves like a byte vector, unaligned data and odd sizes included.
#[test]
fn direct_io_matches_the_model() {
    check_group(Group::Direct, 16);
}

/// Synchronous I/O behaves like a byte vector.
#[test]
fn sync_io_matches_the_model() {
    check_group(Group::Sync, 8);
}

/// Reading the last byte fills the buffer; reading from the end, or across it,
/// fails with `Infeasible` and leaves the buffer and the file as they were.
#[test]
fn reads_past_the_end_fail_and_read_nothing() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let (_path, mut file) = common::create(&spec, dir.path(), "end.dat");
        let data = common::pattern(7, 1000);
        file.write(0, &data).expect_spec(&spec, "write 1000 bytes");
        let mut last = [UNREAD; 1];
        file.read(999, &mut last).expect_spec(&spec, "read the last byte");
        assert_eq!(last[0], data[999], "[{spec}] the last byte");
        for (offset, len) in [(1000, 1), (999, 2), (0, 1001), (5000, 10), (990, 4096)] {
            let mut buf = vec![UNREAD; len];
            let err = file.read(offset, &mut buf).expect_err(&format!("[{spec}] read {len} at {offset}"));
            assert_eq!(err.kind(), ErrorKind::Infeasible, "[{spec}] read {len} at {offset}: {err}");
            assert!(buf.iter().all(|&b| b == UNREAD), "[{spec}] read {len} at {offset} wrote the buffer");
            assert_eq!(file.size(), 1000, "[{spec}] size after the failed read at {offset}");
        }
        let mut empty = [0u8; 0];
        file.read(1000, &mut empty).expect_spec(&spec, "read nothing at the end");
        common::assert_content(&spec, file.as_ref(), &data, "after the failed reads");
        file.close().expect_spec(&spec, "close");
    }
}

/// Bytes cut off by truncation never come back: growing the file again by a
/// write past the end, `expand` or `truncate` exposes zeros, also in reserved
/// space, cached blocks and the head buffer.
#[test]
fn cut_bytes_read_as_zeros_when_the_file_grows_again() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        for grow in ["write", "expand", "truncate"] {
            let (path, mut file) = common::create(&spec, dir.path(), "regrow.dat");
            let data = common::pattern(11, 9000);
            file.write(0, &data).expect_spec(&spec, "write 9000 bytes");
            file.synchronize(Durability::Soft).expect_spec(&spec, "soft synchronize");
            file.truncate(50).expect_spec(&spec, "truncate to 50");
            match grow {
                "write" => file.write(8999, b"z").expect_spec(&spec, "write one byte at 8999"),
                "expand" => assert_eq!(file.expand(8950).expect_spec(&spec, "expand by 8950"), 50),
                _ => file.truncate(9000).expect_spec(&spec, "truncate to 9000"),
            }
            let mut expected = data[..50].to_vec();
            expected.resize(9000, 0);
            if grow == "write" {
                expected[8999] = b'z';
            }
            common::assert_content(&spec, file.as_ref(), &expected, &format!("after truncate and {grow}"));
            file.close().expect_spec(&spec, "close");
            let file = common::open(&spec, &path, &OpenOptions::reader());
            common::assert_content(&spec, file.as_ref(), &expected, &format!("reopened after {grow}"));
        }
    }
}
