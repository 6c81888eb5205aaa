//! `File::read_many` answers what a loop of `File::read` answers, on every
//! file implementation and option, through every engine of batched reads.
//!
//! A proptest writes a random file and reads random batches (empty to a few
//! blocks per request, unaligned, overlapping, repeated, at and past the
//! end); the batch must give the model's bytes exactly where the loop of
//! reads does, and the loop's first error where it fails. Concurrent writers
//! check that a batch sees whole writes on atomic files and never loses a
//! neighbour's bytes on parallel ones; the page cache's counters show that a
//! batch reads each missing block once; the fault-injecting file counts each
//! request as a read and names the one that failed.

mod common;

use std::sync::Arc;
use std::thread;

use common::ExpectSpec;
use kuradb::dbm::Durability;
use kuradb::file::{FaultFile, FaultKind, File, FileKind, FileSpec, IoEngine, OpenOptions, ReadRequest};
use kuradb::ErrorKind;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The unit of sizes: the largest tested block size.
const BLOCK: usize = 4096;

/// The engines a spec is tried with: every forced one on a positional file
/// (io_uring where this process may use it), the default on a map.
fn engines(spec: &FileSpec) -> Vec<FileSpec> {
    if !spec.kind.is_positional() {
        return vec![spec.clone()];
    }
    let mut out = Vec::new();
    for engine in [IoEngine::Serial, IoEngine::Threads, IoEngine::Uring, IoEngine::Auto] {
        let mut s = spec.clone();
        s.io_engine = engine;
        if engine == IoEngine::Uring && !uring_allowed() {
            continue;
        }
        out.push(s);
    }
    out
}

/// Whether forcing io_uring opens a file here; where it does not, the error
/// must say so clearly (checked once).
fn uring_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let spec = FileSpec::parse("pos-para,io_engine=uring").unwrap();
        match spec.open(dir.path().join("probe"), &OpenOptions::writer()) {
            Ok(file) => {
                let engine = file.inspect().into_iter().find(|(k, _)| k == "io_engine").map(|(_, v)| v);
                assert_eq!(engine.as_deref(), Some("uring (io_engine)"));
                true
            }
            Err(err) => {
                assert_eq!(err.kind(), ErrorKind::NotImplemented, "{err}");
                assert!(err.to_string().contains("io_uring"), "{err}");
                eprintln!("skipping the forced io_uring engine: {err}");
                false
            }
        }
    })
}

/// One request: where it starts (a fraction of the file's size, possibly
/// past it, plus a shift) and how long it is, or a copy of an earlier one.
#[derive(Clone, Debug)]
enum Req {
    At { permille: u16, shift: i16, len: usize },
    Again(usize),
}

fn req() -> impl Strategy<Value = Req> {
    prop_oneof![
        4 => (0u16..1100, -600i16..600, prop_oneof![0usize..64, 0usize..BLOCK * 5 / 2])
            .prop_map(|(permille, shift, len)| Req::At { permille, shift, len }),
        1 => (0usize..16).prop_map(Req::Again),
    ]
}

/// The `(offset, len)` of each request against a file of `size` bytes.
fn spans(reqs: &[Req], size: u64) -> Vec<(u64, usize)> {
    let mut out: Vec<(u64, usize)> = Vec::new();
    for r in reqs {
        let span = match *r {
            Req::At { permille, shift, len } => {
                let base = size * permille as u64 / 1000;
                (base.saturating_add_signed(shift as i64), len)
            }
            Req::Again(i) if !out.is_empty() => out[i % out.len()],
            Req::Again(_) => (0, 1),
        };
        out.push(span);
    }
    out
}

/// Runs one case: a file of `size` bytes (part of it flushed, the rest
/// left in the buffers), then a batch of `reqs`.
fn check_case(
    file: &dyn File,
    spec: &FileSpec,
    size: usize,
    flushed: usize,
    reqs: &[Req],
) -> Result<(), TestCaseError> {
    let content = common::pattern(size as u64 * 31 + reqs.len() as u64, size);
    file.truncate(0).expect_spec(spec, "truncate");
    file.write(0, &content[..flushed.min(size)]).expect_spec(spec, "write");
    file.synchronize(Durability::Soft).expect_spec(spec, "synchronize");
    if flushed < size {
        file.write(flushed as u64, &content[flushed..]).expect_spec(spec, "write");
    }
    let spans = spans(reqs, size as u64);
    let total: usize = spans.iter().map(|s| s.1).sum();
    // What a loop of reads answers: each request's bytes, up to the first failure.
    let mut looped = vec![0u8; total];
    let mut expected_err = None;
    for read in ReadRequest::carve(&mut looped, spans.iter().copied()).unwrap() {
        if let Err(e) = file.read(read.offset, read.buf) {
            expected_err = Some(e);
            break;
        }
    }
    let mut batched = vec![0u8; total];
    let result = file.read_many(&mut ReadRequest::carve(&mut batched, spans.iter().copied()).unwrap());
    match (result, expected_err) {
        (Ok(()), None) => {
            let mut at = 0;
            for &(offset, len) in &spans {
                let want = &content[offset as usize..offset as usize + len];
                prop_assert_eq!(
                    &batched[at..at + len],
                    want,
                    "{} request at {} of {} bytes",
                    spec,
                    offset,
                    len
                );
                at += len;
            }
            prop_assert!(looped == batched, "{}: the loop of reads disagrees with the model", spec);
        }
        (Err(got), Some(want)) => {
            prop_assert_eq!(got.kind(), ErrorKind::Infeasible, "{}", spec);
            prop_assert_eq!(got.to_string(), want.to_string(), "{}", spec);
        }
        (got, want) => {
            return Err(TestCaseError::fail(format!(
                "{spec}: read_many answered {got:?}, the reads {want:?}"
            )))
        }
    }
    Ok(())
}

#[test]
fn read_many_answers_what_reads_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for base in common::matrix_without_sync() {
        for spec in engines(&base) {
            let (_, mut file) = common::create(&spec, dir.path(), "batch");
            let config = Config { cases: 24, failure_persistence: None, ..Config::default() };
            let mut runner = TestRunner::new(config);
            let strategy = (0usize..BLOCK * 5, 0usize..BLOCK * 5, prop::collection::vec(req(), 0..12));
            if let Err(e) =
                runner.run(&strategy, |(size, flushed, reqs)| check_case(&*file, &spec, size, flushed, &reqs))
            {
                failures.push(format!("{spec}: {e}"));
            }
            file.close().expect_spec(&spec, "close");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Bytes of a slot: the unit a writer writes whole and a request reads whole.
const SLOT: usize = 300;
const SLOTS: usize = 24;

/// Readers batch-read whole slots while a writer rewrites them with one byte
/// repeated: on an atomic file every slot read must be uniform.
#[test]
fn batches_see_whole_writes_on_atomic_files() {
    let dir = tempfile::tempdir().unwrap();
    for base in common::matrix_without_sync().into_iter().filter(|s| s.kind.is_atomic()) {
        for spec in engines(&base) {
            let (_, file) = common::create(&spec, dir.path(), "atomic");
            file.write(0, &[0u8; SLOT * SLOTS]).expect_spec(&spec, "fill");
            let file: Arc<dyn File> = Arc::from(file);
            let writer = {
                let (file, spec) = (Arc::clone(&file), spec.clone());
                thread::spawn(move || {
                    for i in 0..300usize {
                        let slot = i * 7 % SLOTS;
                        file.write((slot * SLOT) as u64, &[(i % 251) as u8 + 1; SLOT])
                            .expect_spec(&spec, "write");
                    }
                })
            };
            let mut buf = vec![0u8; SLOT * SLOTS];
            for round in 0.. {
                let finished = writer.is_finished();
                // Every slot, in an order that changes, some twice.
                let spans = (0..SLOTS).map(|k| (((k * (round + 5)) % SLOTS * SLOT) as u64, SLOT));
                let mut reads = ReadRequest::carve(&mut buf, spans).unwrap();
                file.read_many(&mut reads).expect_spec(&spec, "read_many");
                for r in &reads {
                    assert!(
                        r.buf.iter().all(|&b| b == r.buf[0]),
                        "{spec}: torn slot at {}: {:?}",
                        r.offset,
                        &r.buf[..16]
                    );
                }
                if finished {
                    break;
                }
            }
            writer.join().unwrap();
        }
    }
}

/// A writer rewrites the even slots while batches read the odd ones, which
/// share blocks and cache pages with them but no byte: on every file the
/// odd slots always read as written, and once the writer stops every even
/// slot holds its last write (a batch caching a block the writer changed
/// meanwhile would undo the writer's bytes).
#[test]
fn batches_beside_a_writer_lose_nothing() {
    const SMALL: usize = 48;
    const COUNT: usize = 200;
    const WRITES: usize = 250;
    let dir = tempfile::tempdir().unwrap();
    for base in common::matrix_without_sync() {
        for spec in engines(&base) {
            let (_, file) = common::create(&spec, dir.path(), "beside");
            let odd = |k: usize| ((k * 13 + 1) % 251) as u8;
            for k in 0..COUNT {
                file.write((k * SMALL) as u64, &[if k % 2 == 1 { odd(k) } else { 0 }; SMALL])
                    .expect_spec(&spec, "fill");
            }
            file.synchronize(Durability::Soft).expect_spec(&spec, "synchronize");
            let file: Arc<dyn File> = Arc::from(file);
            let writer = {
                let (file, spec) = (Arc::clone(&file), spec.clone());
                thread::spawn(move || {
                    for i in 0..WRITES {
                        let k = (i * 37 % (COUNT / 2)) * 2;
                        file.write((k * SMALL) as u64, &[(i % 250) as u8 + 1; SMALL])
                            .expect_spec(&spec, "write");
                    }
                })
            };
            let mut buf = vec![0u8; SMALL * COUNT / 2];
            loop {
                let finished = writer.is_finished();
                let spans = (0..COUNT / 2)
                    .map(|j| ((((j * 29) % (COUNT / 2)) * 2 + 1) * SMALL) as u64)
                    .map(|o| (o, SMALL));
                let mut reads = ReadRequest::carve(&mut buf, spans).unwrap();
                file.read_many(&mut reads).expect_spec(&spec, "read_many");
                for r in &reads {
                    let k = r.offset as usize / SMALL;
                    assert!(r.buf.iter().all(|&b| b == odd(k)), "{spec}: slot {k} read {:?}", &r.buf[..8]);
                }
                if finished {
                    break;
                }
            }
            writer.join().unwrap();
            let mut last = [0u8; COUNT];
            for i in 0..WRITES {
                last[(i * 37 % (COUNT / 2)) * 2] = (i % 250) as u8 + 1;
            }
            let mut all = vec![0u8; SMALL * COUNT];
            file.read(0, &mut all).expect_spec(&spec, "read");
            for k in 0..COUNT {
                let want = if k % 2 == 1 { odd(k) } else { last[k] };
                let got = &all[k * SMALL..(k + 1) * SMALL];
                assert!(got.iter().all(|&b| b == want), "{spec}: slot {k} holds {:?}, not {want}", &got[..8]);
            }
        }
    }
}

/// A batch mixing cached and missing blocks reads each missing block from
/// the device once, however many requests want it, and none of the cached.
#[test]
fn page_cache_reads_each_missing_block_once() {
    let dir = tempfile::tempdir().unwrap();
    for engine in [IoEngine::Serial, IoEngine::Threads, IoEngine::Auto] {
        let spec = common::spec(FileKind::PositionalParallel, |s| {
            s.block_size = 512;
            s.pagecache = true;
            s.page_cache_capacity = Some(64);
            // Each block alone: the count of reads is what this checks.
            s.page_cache_read_ahead = Some(0);
            s.io_engine = engine;
        });
        let path = dir.path().join(format!("cache-{engine}"));
        let content = common::pattern(5, 16 * 512);
        let mut file = kuradb::file::PositionalFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        file.write(0, &content).unwrap();
        file.close().unwrap();
        let file = kuradb::file::PositionalFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        file.read(1024, &mut [0u8; 1024]).unwrap(); // blocks 2 and 3 cached
        let before = file.page_cache_stats().unwrap();
        // Blocks 2 and 3 cached; 4, 5, 6 and 7 missing, 5 wanted three times.
        let spans = [(1034, 1000), (1536, 1536), (2561, 100), (3072, 1024), (1024, 10), (2600, 30)];
        let mut buf = vec![0u8; spans.iter().map(|s| s.1).sum()];
        let mut reads = ReadRequest::carve(&mut buf, spans).unwrap();
        file.read_many(&mut reads).unwrap();
        for r in &reads {
            assert_eq!(
                r.buf,
                &content[r.offset as usize..r.offset as usize + r.buf.len()],
                "{spec} at {}",
                r.offset
            );
        }
        let after = file.page_cache_stats().unwrap();
        assert_eq!(after.device_reads - before.device_reads, 4, "{spec}: {before:?} then {after:?}");
        assert_eq!(after.misses - before.misses, 4, "{spec}: {before:?} then {after:?}");
        // Pieces of cached blocks: 2 and 3 of the first, 3 of the second, 2 of the fifth.
        assert_eq!(after.hits - before.hits, 4, "{spec}: {before:?} then {after:?}");
        // Now all cached: a second batch reads nothing.
        let mut reads = ReadRequest::carve(&mut buf, spans).unwrap();
        file.read_many(&mut reads).unwrap();
        assert_eq!(file.page_cache_stats().unwrap().device_reads, after.device_reads, "{spec}");
    }
}

/// Each request of a batch is one read operation of the fault-injecting
/// file; the one that fails is named, and the batch fails.
#[test]
fn a_fault_in_one_request_fails_the_batch_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = FileSpec::parse("pos-para,block_size=512").unwrap();
    let inner = spec.open(dir.path().join("fault"), &OpenOptions::writer()).unwrap();
    let file = FaultFile::new(inner);
    let control = file.control();
    file.write(0, &common::pattern(9, 8192)).unwrap();
    let spans = [(0, 10), (700, 20), (4000, 30), (100, 40), (8000, 50)];
    let mut buf = vec![0u8; 150];
    let before = control.operations();
    file.read_many(&mut ReadRequest::carve(&mut buf, spans).unwrap()).unwrap();
    assert_eq!(control.operations() - before, 5);
    control.fail_nth_operation(3, FaultKind::Io);
    let err = file.read_many(&mut ReadRequest::carve(&mut buf, spans).unwrap()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    let text = err.to_string();
    assert!(
        text.contains("read of 30 bytes at offset 4000 (in a batch of 5)") && text.contains("injected"),
        "{text}"
    );
    assert_eq!(control.fired(), 1);
    // Healed: the same batch reads the file's bytes.
    file.read_many(&mut ReadRequest::carve(&mut buf, spans).unwrap()).unwrap();
    let content = common::pattern(9, 8192);
    assert_eq!(&buf[..10], &content[..10]);
    assert_eq!(&buf[100..150], &content[8000..8050]);
}

#[test]
fn an_empty_batch_does_nothing_even_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    for spec in common::matrix_without_sync() {
        let (_, file) = common::create(&spec, dir.path(), "empty");
        file.read_many(&mut []).expect_spec(&spec, "an empty batch");
        let mut nothing = [0u8; 0];
        let err = file.read_many(&mut [ReadRequest::new(1, &mut nothing)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Infeasible, "{spec}");
        assert!(err.to_string().contains("offset 1"), "{spec}: {err}");
    }
}
