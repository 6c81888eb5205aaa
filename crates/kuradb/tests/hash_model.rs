//! HashDbm behaves like a `BTreeMap` of byte strings, whatever its file and
//! tuning, across reopening, rebuilding and crashes.
//!
//! Random sequences of every `Dbm` operation (the conformance suite's, see
//! `common::conformance::ops`) mixed with what only a hash database does
//! (a rebuild with new tuning, a copy of the open file opened as a clean
//! one, a reopen with other tuning, which must be ignored, and a simulated
//! crash after a hard synchronization) run against a database and a model
//! side by side. Each answer must be the model's, and the whole content is
//! compared after every step. Keys come from a tiny pool and the tables
//! have 1 to 7 buckets, so chains are long; values run from 0 to 300 bytes,
//! so updates both fit their record and do not.
//!
//! One `#[test]` per family of file specs runs a proptest runner per spec; each
//! case draws its own tuning (update mode, bucket cache, record checksums,
//! alignment, offset width, buckets), so a failure names the spec and prints
//! the tuning with the minimised sequence.

mod common;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use common::conformance::ops::{self, Bytes};
use common::conformance::{read, Caps, Model, Storage};
use common::hash as h;
use kuradb::dbm::hash::{HashDbm, HashOptions, RebuildParams, RecordCrcMode, RestoreMode, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::{ErrorKind, Result};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// Cases per spec: modest, so the whole file runs in well under a minute.
/// `PROPTEST_CASES` in the environment overrides it, for a longer hunt.
const CASES: u32 = 24;

#[derive(Clone, Debug)]
enum Op {
    /// An operation every class takes, carried out and checked by the
    /// conformance suite's step.
    Common(ops::Op),
    /// A rebuild with new tuning; `None` keeps the file's.
    RebuildWith(RebuildParams),
    /// Copy the open file and open the copy read-only: it must hold the model.
    CopyFileData(bool),
    /// Close and open again, first peeking read-only if asked, with tuning
    /// options that differ from the file's (which must be ignored) if asked.
    Reopen { peek: bool, other_tuning: bool },
    /// Hard-synchronize, copy the open file, close, put the copy in its place
    /// and open it: the automatic restore must give back the model.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        49 => ops::op(None).prop_map(Op::Common),
        1 => rebuild_params().prop_map(Op::RebuildWith),
        1 => any::<bool>().prop_map(Op::CopyFileData),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(peek, other_tuning)| Op::Reopen { peek, other_tuning }),
        1 => Just(Op::Crash),
    ]
}

fn rebuild_params() -> impl Strategy<Value = RebuildParams> {
    (
        proptest::option::of(prop_oneof![Just(1u64), 1u64..50]),
        proptest::option::of(0u8..=9),
        proptest::option::of(4u8..=6),
        proptest::option::of(prop_oneof![Just(UpdateMode::InPlace), Just(UpdateMode::Appending)]),
        proptest::option::of(crc_mode()),
    )
        .prop_map(|(num_buckets, align_pow, offset_width, update_mode, record_crc_mode)| RebuildParams {
            num_buckets,
            align_pow,
            offset_width,
            update_mode,
            record_crc_mode,
            record_comp_mode: None,
            cipher_key: None,
        })
}

fn crc_mode() -> impl Strategy<Value = RecordCrcMode> {
    proptest::sample::select(RecordCrcMode::ALL.to_vec())
}

/// The tuning of a case's database.
#[derive(Clone, Debug)]
struct Tuning {
    update_mode: UpdateMode,
    cache_buckets: bool,
    record_crc: RecordCrcMode,
    align_pow: u8,
    offset_width: u8,
    num_buckets: u64,
}

fn tuning(align_pows: std::ops::RangeInclusive<u8>) -> impl Strategy<Value = Tuning> {
    (any::<bool>(), any::<bool>(), crc_mode(), align_pows, 3u8..=6, 1u64..=7).prop_map(
        |(appending, cache_buckets, record_crc, align_pow, offset_width, num_buckets)| Tuning {
            update_mode: if appending { UpdateMode::Appending } else { UpdateMode::InPlace },
            cache_buckets,
            record_crc,
            align_pow,
            offset_width,
            num_buckets,
        },
    )
}

impl Tuning {
    fn options(&self, file: &FileSpec) -> HashOptions {
        HashOptions::default()
            .file(file.clone())
            .num_buckets(self.num_buckets)
            .align_pow(self.align_pow)
            .offset_width(self.offset_width)
            .update_mode(self.update_mode)
            .cache_buckets(self.cache_buckets)
            .record_crc_mode(self.record_crc)
    }
}

/// A failure of one step, naming the spec, tuning, step and operation.
struct Ctx<'a> {
    spec: &'a str,
    tuning: &'a Tuning,
    step: usize,
    steps: usize,
    op: &'a Op,
}

impl Ctx<'_> {
    fn fail(&self, what: impl fmt::Display) -> TestCaseError {
        TestCaseError::fail(format!(
            "[{}] {:?}: step {} of {} ({:?}): {what}",
            self.spec,
            self.tuning,
            self.step + 1,
            self.steps,
            self.op
        ))
    }

    fn ok<T>(&self, result: Result<T>, what: &str) -> std::result::Result<T, TestCaseError> {
        result.map_err(|e| self.fail(format!("{what}: {e}")))
    }

    fn compare(&self, db: &dyn Dbm, model: &Model, when: &str) -> std::result::Result<(), TestCaseError> {
        read::compare(db, model).map_err(|e| self.fail(format!("{when}: {e}")))?;
        if !db.is_healthy() {
            return Err(self.fail(format!("{when}: the database says it is not healthy")));
        }
        Ok(())
    }
}

/// Runs `ops` on a fresh database at `path` and on a model, checking each step.
fn check_sequence(
    name: &str,
    file: &FileSpec,
    tuning: &Tuning,
    path: &Path,
    ops: &[Op],
) -> std::result::Result<(), TestCaseError> {
    let options = tuning.options(file);
    let open = |o: &HashOptions, writable: bool| {
        HashDbm::open(path, if writable { Access::ReadWrite } else { Access::ReadOnly }, o)
    };
    let mut db = open(&options, true)
        .map_err(|e| TestCaseError::fail(format!("[{name}] {tuning:?}: create {}: {e}", path.display())))?;
    let mut model = Model::new(Caps::unordered(Storage::File));
    // The file's record checksum mode: its creation's, or its last rebuild's.
    let mut crc_mode = tuning.record_crc;
    for (step, op) in ops.iter().enumerate() {
        let ctx = Ctx { spec: name, tuning, step, steps: ops.len(), op };
        match op {
            Op::Common(op) => {
                ops::step(&db, &mut model, op).map_err(|e| ctx.fail(e))?;
                // The whole content after the steps that touch most of it.
                if matches!(op, ops::Op::EachWrite(_) | ops::Op::Walk(_) | ops::Op::Clear | ops::Op::Rebuild)
                {
                    ctx.compare(&db, &model, "after the step")?;
                }
            }
            Op::RebuildWith(params) => {
                ctx.ok(db.rebuild_with(params), "rebuild with new tuning")?;
                crc_mode = params.record_crc_mode.unwrap_or(crc_mode);
                ctx.compare(&db, &model, "after rebuild with new tuning")?;
                let figures: HashMap<String, String> = ctx.ok(db.inspect(), "inspect")?.into_iter().collect();
                let wanted = [
                    ("num_buckets", params.num_buckets.map(|n| n.to_string())),
                    ("align_pow", params.align_pow.map(|n| n.to_string())),
                    ("offset_width", params.offset_width.map(|n| n.to_string())),
                    (
                        "update_mode",
                        params.update_mode.map(|m| {
                            if m == UpdateMode::Appending { "appending" } else { "in-place" }.to_string()
                        }),
                    ),
                    ("record_crc_mode", Some(crc_mode.name().to_string())),
                ];
                for (name, want) in wanted {
                    if want.is_some() && figures.get(name) != want.as_ref() {
                        return Err(ctx.fail(format!("{name} is {:?} after the rebuild", figures.get(name))));
                    }
                }
            }
            Op::CopyFileData(hard) => {
                let copy = path.with_extension("copy");
                ctx.ok(
                    db.copy_file_data(&copy, if *hard { Durability::Hard } else { Durability::Soft }),
                    "copy_file_data",
                )?;
                let reader = ctx.ok(
                    HashDbm::open(&copy, Access::ReadOnly, &options.clone().restore(RestoreMode::Refuse)),
                    "open the copy",
                )?;
                ctx.compare(&reader, &model, "in the copy")?;
                ctx.ok(reader.close(), "close the copy")?;
                // Written to, the copy must still hold the model: its header is its own.
                let writer = ctx.ok(
                    HashDbm::open(&copy, Access::ReadWrite, &options.clone().restore(RestoreMode::Refuse)),
                    "open the copy for writing",
                )?;
                ctx.compare(&writer, &model, "in the copy opened for writing")?;
                ctx.ok(writer.close(), "close the copy")?;
                let _ = std::fs::remove_file(&copy);
                ctx.compare(&db, &model, "after copying the file")?;
            }
            Op::Reopen { peek, other_tuning } => {
                ctx.ok(db.close(), "close")?;
                let mut o = options.clone();
                if *other_tuning {
                    // A reopen must keep the file's tuning, not take these.
                    o.num_buckets = 1021;
                    o.align_pow = (tuning.align_pow + 4) % 10;
                    o.offset_width = if tuning.offset_width == 4 { 6 } else { 4 };
                    o.update_mode = match tuning.update_mode {
                        UpdateMode::InPlace => UpdateMode::Appending,
                        UpdateMode::Appending => UpdateMode::InPlace,
                    };
                    o.restore = RestoreMode::Refuse;
                    o.record_crc_mode =
                        if crc_mode.is_on() { RecordCrcMode::None } else { RecordCrcMode::Crc32 };
                }
                if *peek {
                    let reader = ctx.ok(open(&o, false), "open read-only")?;
                    ctx.compare(&reader, &model, "opened read-only")?;
                    ctx.ok(reader.close(), "close the reader")?;
                }
                db = ctx.ok(open(&o, true), "reopen")?;
                ctx.compare(&db, &model, "after reopening")?;
                let kept = ctx.ok(db.record_crc_mode(), "record_crc_mode")?;
                if kept != crc_mode {
                    return Err(
                        ctx.fail(format!("reopened with record_crc_mode {kept}, not the file's {crc_mode}"))
                    );
                }
            }
            Op::Crash => {
                let copy = path.with_extension("crashed");
                h::crash_copy(&db, path, &copy).map_err(|e| ctx.fail(e))?;
                ctx.ok(db.close(), "close")?;
                std::fs::rename(&copy, path).map_err(|e| ctx.fail(format!("rename the copy: {e}")))?;
                db = ctx.ok(open(&options, true), "open the crashed file")?;
                ctx.compare(&db, &model, "after restoring the crashed file")?;
            }
        }
        if !db.is_healthy() {
            return Err(ctx.fail("the database says it is not healthy"));
        }
    }
    let end = Ctx { spec: name, tuning, step: ops.len(), steps: ops.len(), op: &Op::Common(ops::Op::Count) };
    end.compare(&db, &model, "at the end")?;
    end.ok(db.close(), "close at the end")?;
    let reader = end.ok(HashDbm::open(path, Access::ReadOnly, &options), "open read-only at the end")?;
    end.compare(&reader, &model, "reopened read-only at the end")?;
    end.ok(reader.close(), "close the reader")
}

/// Runs [`CASES`] random sequences against each spec; panics listing each
/// failing spec with its minimised tuning and sequence.
fn check_specs(specs: &[(&str, FileSpec)], align_pows: std::ops::RangeInclusive<u8>) {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let counter = AtomicU64::new(0);
    let mut failures = Vec::new();
    for (name, file) in specs {
        // Shrinking replays crashes and restores: bounded so a failure reports in seconds.
        let config = Config {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES),
            max_shrink_iters: 1024,
            max_shrink_time: 8000,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let strategy = (tuning(align_pows.clone()), proptest::collection::vec(op(), 1..60));
        let result = runner.run(&strategy, |(tuning, ops)| {
            let case = counter.fetch_add(1, Ordering::Relaxed);
            let path = dir.path().join(format!("case-{case}.kh"));
            let result = check_sequence(name, file, &tuning, &path, &ops);
            let _ = std::fs::remove_file(&path);
            result
        });
        match result {
            Ok(()) => {}
            Err(TestError::Fail(reason, (tuning, ops))) => {
                failures.push(format!("{name}: {reason}\n  minimal case: {tuning:?}\n  {ops:?}"))
            }
            Err(TestError::Abort(reason)) => failures.push(format!("{name}: aborted: {reason}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} specs failed:\n{}",
        failures.len(),
        specs.len(),
        failures.join("\n")
    );
}

fn named(names: &[&str]) -> Vec<(&'static str, FileSpec)> {
    let specs: Vec<_> = h::specs().into_iter().filter(|(n, _)| names.contains(n)).collect();
    assert_eq!(specs.len(), names.len(), "the spec list lacks one of {names:?}");
    specs
}

/// A hash database on a memory-mapped file matches the model.
#[test]
fn mmap_model() {
    check_specs(&named(&["mmap-para", "mmap-atom"]), 0..=9);
}

/// A hash database on a plain positional file matches the model.
#[test]
fn positional_model() {
    check_specs(&named(&["pos-para"]), 0..=9);
}

/// A hash database on block I/O (atomic with a tiny page cache; parallel with
/// 4 KiB blocks and padding) matches the model, records smaller than a block.
#[test]
fn block_io_model() {
    check_specs(&named(&["pos-atom-block512-pagecache", "pos-para-block4096-padding"]), 0..=9);
}

/// A hash database on direct I/O matches the model (where the filesystem allows
/// O_DIRECT), at every alignment: the restore after a crash reads the file in
/// large pieces, so even 1-byte alignment over padding is quick.
#[test]
fn direct_io_model() {
    let specs = h::direct_specs();
    if common::direct_io_supported() {
        assert!(!specs.is_empty(), "direct I/O works here but no direct specs are listed");
    }
    check_specs(&specs, 0..=9);
}

// Regressions: minimised cases of bugs that the model, the crash tests and
// probes of the record encoding found, replayed by name.

fn replay(spec: &str, tuning: Tuning, ops: &[Op]) {
    let (name, file) = named(&[spec]).remove(0);
    let dir = tempfile::tempdir().expect("create a temporary directory");
    if let Err(e) = check_sequence(name, &file, &tuning, &dir.path().join("case.kh"), ops) {
        panic!("{e}");
    }
}

fn tuned(update_mode: UpdateMode, align_pow: u8, offset_width: u8, num_buckets: u64) -> Tuning {
    Tuning {
        update_mode,
        cache_buckets: false,
        record_crc: RecordCrcMode::None,
        align_pow,
        offset_width,
        num_buckets,
    }
}

fn set(key: &str, len: u16) -> Op {
    let value = Bytes(ops::pattern(len, 0));
    Op::Common(ops::Op::Set(Bytes(key.as_bytes().to_vec()), value, true))
}

fn remove(key: &str) -> Op {
    Op::Common(ops::Op::Remove(Bytes(key.as_bytes().to_vec())))
}

/// Relinking a record in the middle of a chain keeps the chain readable when
/// records are aligned (align_pow > 0): a later record's update must not cut
/// off the records before it.
#[test]
fn relinking_keeps_chains_of_aligned_records() {
    let pair = |key: &str| (Bytes(key.as_bytes().to_vec()), Bytes(Vec::new()));
    let ops = [Op::Common(ops::Op::SetMulti(vec![pair("c"), pair("")], false)), set("c", 0)];
    replay("mmap-atom", tuned(UpdateMode::Appending, 1, 3, 1), &ops);
}

/// A value synchronized hard survives a crash when its record went to space
/// freed earlier in the same epoch, below an older version of the key.
#[test]
fn a_synchronized_value_in_reused_space_survives_a_crash() {
    let ops = [set("b", 100), set("a", 10), remove("b"), set("a", 100), Op::Crash];
    replay("mmap-para", tuned(UpdateMode::InPlace, 3, 5, 1), &ops);
}

/// A removal synchronized hard survives a crash when another record reused
/// the removed record's space in the same epoch: the key does not come back.
#[test]
fn a_synchronized_removal_survives_a_crash_after_its_space_is_reused() {
    let ops = [set("a", 2), set("a", 10), remove("a"), set("b", 8), Op::Crash];
    replay("mmap-para", tuned(UpdateMode::InPlace, 0, 3, 1), &ops);
}

/// A restore keeps every record after one whose padding is exactly 128 bytes
/// before encoding (a 365-byte value under a 1-byte key, 256-byte alignment):
/// the record's header must give its full size, or the scan loses its step.
#[test]
fn a_record_padded_by_128_bytes_does_not_hide_later_ones_from_a_restore() {
    let ops = [set("a", 365), set("b", 1), Op::Crash];
    replay("mmap-para", tuned(UpdateMode::Appending, 8, 5, 7), &ops);
}

/// A removal synchronized hard survives a crash when another record reused
/// the removed record's space, also when a version of the key from an
/// earlier epoch is still on disk.
#[test]
fn a_synchronized_removal_survives_a_crash_with_an_older_epoch_version_on_disk() {
    let ops = [
        set("a", 10),
        Op::Common(ops::Op::Synchronize(true)),
        set("a", 100),
        remove("a"),
        set("b", 99),
        Op::Crash,
    ];
    replay("mmap-para", tuned(UpdateMode::InPlace, 0, 5, 1), &ops);
}

/// A file whose offsets cannot address more records refuses them with an
/// error that says so, keeps every record it holds, and a rebuild with a
/// wider offset takes it past the limit; a rebuild to offsets too narrow for
/// its records is refused.
#[test]
fn a_full_file_says_so_and_a_rebuild_widens_it() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let path = dir.path().join("full.kh");
    let options = HashOptions::default().offset_width(3).align_pow(0).num_buckets(1021);
    let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("create");
    let value = vec![b'v'; 1000];
    let mut stored = 0u32;
    let err = loop {
        match db.set(format!("{stored:08}").as_bytes(), &value) {
            Ok(()) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 20_000, "16 MiB of offsets held more than 20 MB of records");
    };
    assert_eq!(err.kind(), ErrorKind::Infeasible, "{err}");
    assert!(err.to_string().contains("is full") && err.to_string().contains("offset_width"), "{err}");
    assert_eq!(db.count().unwrap(), u64::from(stored));

    let narrow = RebuildParams { offset_width: Some(3), align_pow: Some(0), ..RebuildParams::default() };
    let err = db.rebuild_with(&RebuildParams { num_buckets: Some(1 << 20), ..narrow }).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("too few"), "{err}");

    db.rebuild_with(&RebuildParams { offset_width: Some(4), ..RebuildParams::default() }).expect("widen");
    db.set(b"one more", &value).expect("a set past the old limit");
    db.close().expect("close");
    let db = HashDbm::open(&path, Access::ReadOnly, &options).expect("reopen");
    assert_eq!(db.count().unwrap(), u64::from(stored) + 1);
    for i in (0..stored).step_by(97) {
        assert_eq!(db.get(format!("{i:08}").as_bytes()).unwrap().as_deref(), Some(&value[..]));
    }
    assert!(db.is_healthy());
}

/// A copy taken while writers run is one consistent state: every record a
/// writer's sequence had finished is there, with its value.
#[test]
fn copy_file_data_while_threads_write() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let path = dir.path().join("live.kh");
    let options = HashOptions::default().num_buckets(1021);
    let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("create");
    let copy = dir.path().join("copy.kh");
    std::thread::scope(|scope| {
        for t in 0..2u32 {
            let db = &db;
            scope.spawn(move || {
                // Each thread writes its keys in order, so a consistent copy
                // holds a prefix of them: keys 0..n, no gaps.
                for i in 0..3000u32 {
                    db.set(format!("{t}-{i:05}").as_bytes(), format!("{i}").as_bytes()).unwrap();
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        db.copy_file_data(&copy, Durability::Soft).expect("copy while writing");
    });
    let err = db.copy_file_data(&path, Durability::Soft).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let copied = HashDbm::open(&copy, Access::ReadOnly, &options.clone().restore(RestoreMode::Refuse))
        .expect("the copy opens as a clean file");
    for t in 0..2u32 {
        let mut n = 0;
        while copied.get(format!("{t}-{n:05}").as_bytes()).unwrap().is_some() {
            n += 1;
        }
        for i in n..3000 {
            assert_eq!(copied.get(format!("{t}-{i:05}").as_bytes()).unwrap(), None, "a gap before {t}-{i}");
        }
        for i in 0..n {
            let got = copied.get(format!("{t}-{i:05}").as_bytes()).unwrap();
            assert_eq!(got, Some(format!("{i}").into_bytes()));
        }
    }
    assert!(copied.count().unwrap() <= 6000);
    assert!(copied.is_healthy());
}
