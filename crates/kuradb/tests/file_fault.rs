//! The fault-injecting file: it fails exactly the operation it was told to, with
//! the error it was told to, changes nothing when it fails, leaves the wrapped
//! file usable, and a power cut leaves on disk what the last hard
//! synchronization made durable.

mod common;

use std::path::Path;

use common::ExpectSpec;
use kuradb::dbm::Durability;
use kuradb::file::{FaultControl, FaultFile, FaultKind, File, FileKind, FileSpec, OpenOptions};
use kuradb::{Error, ErrorKind};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// The operations a fault can hit, with the word the error message must contain.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Operation {
    Read,
    Write,
    Append,
    Expand,
    Truncate,
    SoftSync,
    HardSync,
}

impl Operation {
    const ALL: [Operation; 7] = [
        Operation::Read,
        Operation::Write,
        Operation::Append,
        Operation::Expand,
        Operation::Truncate,
        Operation::SoftSync,
        Operation::HardSync,
    ];

    /// The stem of the operation's name, as a message naming it contains it
    /// ("truncat" matches "truncate" and "truncation").
    fn stem(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Append => "append",
            Operation::Expand => "expan",
            Operation::Truncate => "truncat",
            Operation::SoftSync | Operation::HardSync => "synchroni",
        }
    }

    /// Runs the operation on `file` and applies its effect to `model` if it succeeds.
    fn run(self, file: &dyn File, model: &mut Vec<u8>) -> kuradb::Result<()> {
        match self {
            Operation::Read => {
                let mut buf = vec![0; 100];
                file.read(50, &mut buf)?;
                assert_eq!(buf, model[50..150], "read through the fault file");
            }
            Operation::Write => {
                file.write(995, b"written")?;
                model.resize(model.len().max(1002), 0);
                model[995..1002].copy_from_slice(b"written");
            }
            Operation::Append => {
                let offset = file.append(b"appended")?;
                assert_eq!(offset, model.len() as u64, "append offset");
                model.extend_from_slice(b"appended");
            }
            Operation::Expand => {
                let old = file.expand(300)?;
                assert_eq!(old, model.len() as u64, "old size answered by expand");
                model.resize(model.len() + 300, 0);
            }
            Operation::Truncate => {
                file.truncate(700)?;
                model.truncate(700);
            }
            Operation::SoftSync => file.synchronize(Durability::Soft)?,
            Operation::HardSync => file.synchronize(Durability::Hard)?,
        }
        Ok(())
    }
}

fn errno(kind: FaultKind) -> i32 {
    match kind {
        FaultKind::Io => libc::EIO,
        FaultKind::NoSpace | FaultKind::ShortWrite => libc::ENOSPC,
    }
}

/// Panics unless `err` is the injected `kind` of fault, naming `op`.
#[track_caller]
fn assert_injected(err: &Error, kind: FaultKind, op: Operation, context: &str) {
    assert_eq!(err.kind(), ErrorKind::System, "{context}: {err}");
    assert_eq!(err.raw_os_error(), Some(errno(kind)), "{context}: {err}");
    let text = err.to_string().to_lowercase();
    assert!(text.contains(op.stem()), "{context}: the error does not name the {op:?}: {err}");
}

/// A fault file over a fresh `spec` file at `path` holding 1000 known bytes.
fn wrapped(spec: &FileSpec, path: &Path) -> (FaultFile, Vec<u8>) {
    let inner = common::open(spec, path, &OpenOptions::writer().truncating());
    let data = common::pattern(1, 1000);
    inner.write(0, &data).expect_spec(spec, "write the initial content");
    (FaultFile::new(inner), data)
}

fn fault_specs() -> Vec<FileSpec> {
    vec![
        FileSpec::new(FileKind::MmapParallel),
        FileSpec::new(FileKind::PositionalAtomic),
        common::spec(FileKind::PositionalParallel, |s| {
            s.block_size = 512;
            s.pagecache = true;
            s.page_cache_capacity = Some(common::TINY_PAGE_CACHE);
            s.head_buffer = 100;
        }),
    ]
}

/// Each operation, told to fail with EIO or ENOSPC, fails with a system error of
/// that number naming the operation, changes nothing, and succeeds when run again.
#[test]
fn an_injected_fault_fails_exactly_its_operation_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in fault_specs() {
        for op in Operation::ALL {
            for kind in [FaultKind::Io, FaultKind::NoSpace] {
                let context = format!("[{spec}] {op:?} failing with {kind:?}");
                let (file, mut model) = wrapped(&spec, &dir.path().join("fault.dat"));
                let control = file.control();
                control.fail_nth_operation(1, kind);
                let err = op.run(&file, &mut model.clone()).expect_err(&context);
                assert_injected(&err, kind, op, &context);
                common::assert_content(&spec, &file, &model, &format!("after the failed {op:?}"));
                op.run(&file, &mut model).expect_spec(&spec, format_args!("{op:?} again"));
                common::assert_content(&spec, &file, &model, &format!("after the {op:?} again"));
            }
        }
    }
}

/// `fail_nth_operation` counts every kind of operation from the next one, fails
/// only the n-th, and `operations` counts each attempt, the failed one included.
#[test]
fn fail_nth_operation_counts_reads_and_writes() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let spec = FileSpec::new(FileKind::PositionalParallel);
    let (file, mut model) = wrapped(&spec, &dir.path().join("nth.dat"));
    let control = file.control();
    Operation::Read.run(&file, &mut model).expect("read before arming");
    let before = control.operations();
    control.fail_nth_operation(4, FaultKind::Io);
    Operation::Read.run(&file, &mut model).expect("operation 1");
    Operation::Append.run(&file, &mut model).expect("operation 2");
    assert_eq!(file.size(), model.len() as u64, "size() in between");
    Operation::Read.run(&file, &mut model).expect("operation 3");
    let err = Operation::Write.run(&file, &mut model.clone()).expect_err("operation 4 must fail");
    assert_injected(&err, FaultKind::Io, Operation::Write, "operation 4");
    Operation::Read.run(&file, &mut model).expect("operation 5");
    Operation::Write.run(&file, &mut model).expect("operation 6");
    assert_eq!(control.operations() - before, 6, "operations attempted since arming");
    common::assert_content(&spec, &file, &model, "at the end");
}

/// `fail_nth_write` skips reads when counting, and fails only the n-th change.
#[test]
fn fail_nth_write_counts_only_changes() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let spec = FileSpec::new(FileKind::MmapAtomic);
    let (file, mut model) = wrapped(&spec, &dir.path().join("nth-write.dat"));
    let control = file.control();
    control.fail_nth_write(3, FaultKind::NoSpace);
    Operation::Read.run(&file, &mut model).expect("a read");
    Operation::Write.run(&file, &mut model).expect("change 1");
    Operation::Read.run(&file, &mut model).expect("a read");
    Operation::SoftSync.run(&file, &mut model).expect("change 2");
    Operation::Read.run(&file, &mut model).expect("a read");
    let err = Operation::Expand.run(&file, &mut model.clone()).expect_err("change 3 must fail");
    assert_injected(&err, FaultKind::NoSpace, Operation::Expand, "change 3");
    Operation::Truncate.run(&file, &mut model).expect("change 4");
    Operation::Append.run(&file, &mut model).expect("change 5");
    common::assert_content(&spec, &file, &model, "at the end");
}

/// `fail_writes_from` fails the n-th change and every later one, of every kind,
/// while reads go on working and nothing changes, until `heal`.
#[test]
fn fail_writes_from_persists_until_heal() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in fault_specs() {
        let (file, mut model) = wrapped(&spec, &dir.path().join("from.dat"));
        let control = file.control();
        control.fail_writes_from(2, FaultKind::Io);
        Operation::Append.run(&file, &mut model).expect_spec(&spec, "change 1");
        for round in 0..3 {
            for op in Operation::ALL {
                let context = format!("[{spec}] round {round}: {op:?} while failing");
                if op == Operation::Read {
                    op.run(&file, &mut model).expect_spec(&spec, &context);
                    continue;
                }
                let err = op.run(&file, &mut model.clone()).expect_err(&context);
                // Once a hard synchronization has failed (round 0 ends with one),
                // changes are refused before the fault is even reached.
                let refused = err.kind() == ErrorKind::Infeasible
                    && err.to_string().contains("hard synchronization failed");
                if !(round > 0 && refused) {
                    assert_injected(&err, FaultKind::Io, op, &context);
                }
            }
            common::assert_content(&spec, &file, &model, &format!("after failing round {round}"));
        }
        control.heal();
        for op in Operation::ALL {
            op.run(&file, &mut model).expect_spec(&spec, format_args!("{op:?} after heal"));
        }
        common::assert_content(&spec, &file, &model, "after heal");
    }
}

/// The error every operation gets after a power cut.
#[track_caller]
fn assert_dead(spec: &FileSpec, what: &str, err: Option<Error>) {
    let err = err.unwrap_or_else(|| panic!("[{spec}] {what} succeeded after the power cut"));
    assert_eq!(err.kind(), ErrorKind::System, "[{spec}] {what} after the power cut: {err}");
    assert!(err.to_string().contains("power"), "[{spec}] {what} after the power cut: {err}");
}

/// Reopens `path` with `spec` and checks it holds exactly `expected`.
fn assert_durable(spec: &FileSpec, path: &Path, expected: &[u8], when: &str) {
    let file = common::open(spec, path, &OpenOptions::reader());
    common::assert_content(spec, file.as_ref(), expected, when);
    let length = std::fs::metadata(path).expect("stat").len();
    assert_eq!(length, expected.len() as u64, "[{spec}] file length {when}");
}

/// A power cut brings back the content and size of the last hard synchronization
/// (soft ones do not count), whatever writes, appends, expansions and
/// truncations, to smaller or larger sizes, followed it; afterwards every
/// operation fails, and closing leaves that state on disk.
#[test]
fn power_cut_restores_the_last_hard_synchronization() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in fault_specs() {
        let path = dir.path().join("power.dat");
        let (mut file, mut model) = wrapped(&spec, &path);
        let control = file.control();
        Operation::Write.run(&file, &mut model).expect_spec(&spec, "write");
        Operation::HardSync.run(&file, &mut model).expect_spec(&spec, "hard synchronize");
        let durable = model.clone();
        for op in [
            Operation::Truncate,
            Operation::Append,
            Operation::SoftSync,
            Operation::Write,
            Operation::Expand,
            Operation::Read,
        ] {
            op.run(&file, &mut model).expect_spec(&spec, format_args!("{op:?} after the hard sync"));
        }
        file.truncate(5000).expect_spec(&spec, "truncate to a larger size");
        file.write(10, b"late").expect_spec(&spec, "write over durable bytes");
        control.power_cut().expect_spec(&spec, "power cut");

        let mut buf = [0u8; 4];
        assert_dead(&spec, "read", file.read(0, &mut buf).err());
        assert_dead(&spec, "write", file.write(0, b"x").err());
        assert_dead(&spec, "append", file.append(b"x").err());
        assert_dead(&spec, "expand", file.expand(1).err());
        assert_dead(&spec, "truncate", file.truncate(1).err());
        assert_dead(&spec, "synchronize", file.synchronize(Durability::Hard).err());
        let _ = file.close();
        assert_durable(&spec, &path, &durable, "after the power cut");
    }
}

/// Only a truncation to a larger size followed the hard synchronization: the
/// power cut restores the smaller size.
#[test]
fn power_cut_undoes_a_growing_truncation() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in fault_specs() {
        let path = dir.path().join("grow.dat");
        let (mut file, model) = wrapped(&spec, &path);
        let control = file.control();
        file.synchronize(Durability::Hard).expect_spec(&spec, "hard synchronize");
        file.truncate(3000).expect_spec(&spec, "truncate to 3000");
        control.power_cut().expect_spec(&spec, "power cut");
        let _ = file.close();
        assert_durable(&spec, &path, &model, "after the power cut");
    }
}

#[derive(Clone, Debug)]
enum Step {
    Write(u16, u16, u64),
    Append(u16, u64),
    Expand(u16),
    Truncate(u16),
    Synchronize(bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u16..12_000, 0u16..3000, any::<u64>()).prop_map(|(o, l, s)| Step::Write(o, l, s)),
        2 => (1u16..3000, any::<u64>()).prop_map(|(l, s)| Step::Append(l, s)),
        1 => (0u16..3000).prop_map(Step::Expand),
        1 => (0u16..12_000).prop_map(Step::Truncate),
        2 => any::<bool>().prop_map(Step::Synchronize),
    ]
}

/// Runs `steps` through a fault file, cuts the power, and checks the reopened
/// file against the model as of the last hard synchronization.
fn check_power_cut(spec: &FileSpec, path: &Path, steps: &[Step]) -> Result<(), TestCaseError> {
    let fail = |what: String| TestCaseError::fail(format!("[{spec}] {what}"));
    let inner = spec.open(path, &OpenOptions::writer().truncating()).map_err(|e| fail(e.to_string()))?;
    let mut file = FaultFile::new(inner);
    let control: std::sync::Arc<FaultControl> = file.control();
    // Start from a durable empty file, whatever a power cut before any hard
    // synchronization would mean.
    file.synchronize(Durability::Hard).map_err(|e| fail(format!("first hard synchronize: {e}")))?;
    let (mut model, mut durable) = (Vec::new(), Vec::new());
    for (i, step) in steps.iter().enumerate() {
        let result = match *step {
            Step::Write(offset, len, seed) => {
                let (offset, data) = (offset as usize, common::pattern(seed, len as usize));
                // Whether an empty write past the end extends the file is unspecified.
                let reach = if data.is_empty() { 0 } else { 1000 };
                let offset = offset.min(model.len() + reach);
                if model.len() < offset + data.len() {
                    model.resize(offset + data.len(), 0);
                }
                model[offset..offset + data.len()].copy_from_slice(&data);
                file.write(offset as u64, &data)
            }
            Step::Append(len, seed) => {
                let data = common::pattern(seed, len as usize);
                model.extend_from_slice(&data);
                file.append(&data).map(drop)
            }
            Step::Expand(len) => {
                model.resize(model.len() + len as usize, 0);
                file.expand(u64::from(len)).map(drop)
            }
            Step::Truncate(size) => {
                model.resize(size as usize, 0);
                file.truncate(u64::from(size))
            }
            Step::Synchronize(hard) => {
                if hard {
                    durable = model.clone();
                }
                file.synchronize(if hard { Durability::Hard } else { Durability::Soft })
            }
        };
        result.map_err(|e| fail(format!("step {i} {step:?}: {e}")))?;
    }
    control.power_cut().map_err(|e| fail(format!("power cut: {e}")))?;
    let _ = file.close();
    let reopened = spec.open(path, &OpenOptions::reader()).map_err(|e| fail(e.to_string()))?;
    let content = common::read_all(reopened.as_ref()).map_err(|e| fail(e.to_string()))?;
    if content.len() != durable.len() {
        return Err(fail(format!("size {} after the power cut, expected {}", content.len(), durable.len())));
    }
    if let Some(at) = common::first_difference(&content, &durable) {
        return Err(fail(format!("content after the power cut differs first at offset {at}")));
    }
    Ok(())
}

/// Random sequences of changes and synchronizations, cut off by a power cut,
/// leave exactly the state of the last hard synchronization on disk.
#[test]
fn power_cut_matches_a_model_of_durable_state() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut failures = Vec::new();
    for spec in fault_specs() {
        let config =
            Config { cases: 32, max_shrink_iters: 4096, failure_persistence: None, ..Config::default() };
        let path = dir.path().join("model.dat");
        let result = TestRunner::new(config)
            .run(&proptest::collection::vec(step(), 1..30), |steps| check_power_cut(&spec, &path, &steps));
        match result {
            Ok(()) => {}
            Err(TestError::Fail(reason, steps)) => {
                failures.push(format!("{reason}\n  minimal steps: {steps:?}"))
            }
            Err(TestError::Abort(reason)) => failures.push(format!("[{spec}] aborted: {reason}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// After an injected failure of a hard synchronization the fault file refuses
/// writes, as a real file does, while reads and soft work on the data go on.
#[test]
fn a_failed_hard_sync_refuses_later_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = FileSpec::new(FileKind::PositionalParallel);
    let inner = common::open(&spec, &dir.path().join("f"), &OpenOptions::writer());
    let file = FaultFile::new(inner);
    file.append(b"kept").expect("append");
    file.control().fail_nth_write(1, FaultKind::Io);
    let err = file.synchronize(Durability::Hard).expect_err("the hard sync must fail");
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    let refused = file.write(0, b"x").expect_err("a write after a failed hard sync");
    assert_eq!(refused.kind(), ErrorKind::Infeasible, "{refused}");
    assert!(refused.to_string().contains("reopen"), "{refused}");
    let mut buf = [0u8; 4];
    file.read(0, &mut buf).expect("reads go on");
    assert_eq!(&buf, b"kept");
}

/// An injected failure of a soft synchronization leaves the file writable.
#[test]
fn a_failed_soft_sync_does_not_refuse_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = FileSpec::new(FileKind::MmapParallel);
    let file = FaultFile::new(common::open(&spec, &dir.path().join("f"), &OpenOptions::writer()));
    file.control().fail_nth_write(1, FaultKind::NoSpace);
    file.synchronize(Durability::Soft).expect_err("the soft sync must fail");
    file.write(0, b"x").expect("writes go on after a failed soft sync");
}

/// An injected short write stores the first half of its data, fails with
/// ENOSPC naming the bytes stored, and a power cut undoes the half it stored;
/// other operations hit by it fail with ENOSPC and change nothing.
#[test]
fn a_short_write_stores_half_then_fails_with_no_space() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in fault_specs() {
        let path = dir.path().join("short.dat");
        let (mut file, mut model) = wrapped(&spec, &path);
        let control = file.control();
        file.synchronize(Durability::Hard).expect_spec(&spec, "hard synchronize");
        let durable = model.clone();
        control.fail_nth_write(1, FaultKind::ShortWrite);
        let err = file.write(990, b"0123456789abcdef").expect_err("the short write must fail");
        assert_injected(&err, FaultKind::ShortWrite, Operation::Write, &format!("[{spec}] short write"));
        assert!(err.to_string().contains("8 of 16 bytes stored"), "[{spec}] {err}");
        model[990..998].copy_from_slice(b"01234567");
        common::assert_content(&spec, &file, &model, "after the short write");
        control.fail_nth_write(1, FaultKind::ShortWrite);
        let err = file.append(b"appended").expect_err("the short append must fail");
        assert_injected(&err, FaultKind::ShortWrite, Operation::Append, &format!("[{spec}] short append"));
        model.extend_from_slice(b"appe");
        common::assert_content(&spec, &file, &model, "after the short append");
        control.fail_nth_write(1, FaultKind::ShortWrite);
        let err = file.expand(100).expect_err("the expansion must fail");
        assert_injected(&err, FaultKind::ShortWrite, Operation::Expand, &format!("[{spec}] expansion"));
        assert_eq!(control.fired(), 3, "[{spec}] faults fired");
        common::assert_content(&spec, &file, &model, "after the failed expansion");
        control.power_cut().expect_spec(&spec, "power cut");
        let _ = file.close();
        assert_durable(&spec, &path, &durable, "after the power cut");
    }
}
