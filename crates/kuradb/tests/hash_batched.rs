//! HashDbm's batched lookups (`get_multi`, `contains_multi`, and the reads
//! behind `set_multi` and `remove_multi`, all through `process_multi`), and
//! lookups after a `prefetch` hint, answer what one lookup per key answers,
//! on every file and engine, under a concurrent writer, and with a damaged
//! record; and a batch reaches the file as one `read_many` a round rather
//! than one read per key.
//!
//! The model test draws each case's tuning (update mode, bucket cache, record
//! checksums, alignment, buckets, least read size) so that chains run long,
//! first reads both cover a record and fall short of it, and batches repeat
//! keys and ask for absent and removed ones.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::hash as h;
use common::hooked::{HookedFile, ReadHook};
use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCrcMode, UpdateMode};
use kuradb::dbm::{Access, Dbm};
use kuradb::file::{File, FileKind, FileSpec, FileWrapper, IoEngine, OpenOptions, ReadRequest};
use kuradb::{ErrorKind, Result};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Cases per spec: few, since the matrix is long. `PROPTEST_CASES` overrides it.
const CASES: u32 = 3;

/// The keys a case uses: a small pool, so chains hold several and batches repeat.
fn key(i: u8) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

#[derive(Clone, Debug)]
enum Op {
    Set(u8, usize),
    Remove(u8),
    /// `get_multi` and `contains_multi` of these keys, checked against a
    /// `get` and a `contains` of each and against the model.
    Lookup(Vec<u8>),
    SetMulti(Vec<(u8, usize)>),
    RemoveMulti(Vec<u8>),
}

/// A value of `len` bytes that names its key and length.
fn value(k: u8, len: usize) -> Vec<u8> {
    let mut v = format!("{k}:{len}:").into_bytes();
    v.resize(len.max(v.len()), b'a' + k % 26);
    v
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..24;
    // Short values fit a first read; long ones do not.
    let len = prop_oneof![0usize..40, 200usize..1500];
    prop_oneof![
        6 => (k.clone(), len.clone()).prop_map(|(k, l)| Op::Set(k, l)),
        2 => k.clone().prop_map(Op::Remove),
        4 => proptest::collection::vec(k.clone(), 0..40).prop_map(Op::Lookup),
        1 => proptest::collection::vec((k.clone(), len), 1..6).prop_map(Op::SetMulti),
        1 => proptest::collection::vec(k, 1..6).prop_map(Op::RemoveMulti),
    ]
}

#[derive(Clone, Debug)]
struct Tuning {
    appending: bool,
    cache_buckets: bool,
    crc: bool,
    align_pow: u8,
    num_buckets: u64,
    min_read_size: usize,
}

fn tuning() -> impl Strategy<Value = Tuning> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        0u8..5,
        1u64..8,
        prop_oneof![Just(0usize), Just(256), 500usize..2000],
    )
        .prop_map(|(appending, cache_buckets, crc, align_pow, num_buckets, min_read_size)| Tuning {
            appending,
            cache_buckets,
            crc,
            align_pow,
            num_buckets,
            min_read_size,
        })
}

fn options(file: &FileSpec, t: &Tuning) -> HashOptions {
    let mode = if t.appending { UpdateMode::Appending } else { UpdateMode::InPlace };
    let crc = if t.crc { RecordCrcMode::Crc32 } else { RecordCrcMode::None };
    h::options(file)
        .update_mode(mode)
        .cache_buckets(t.cache_buckets)
        .record_crc_mode(crc)
        .align_pow(t.align_pow)
        .num_buckets(t.num_buckets)
        .min_read_size(t.min_read_size)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Runs `ops` on a new database, checking every batched answer against one
/// lookup per key and against the model.
fn run(path: &Path, options: &HashOptions, ops: &[Op]) -> std::result::Result<(), TestCaseError> {
    let _ = std::fs::remove_file(path);
    let db = HashDbm::open(path, Access::ReadWrite, options)
        .map_err(|e| TestCaseError::fail(format!("open: {e}")))?;
    let mut model = Model::new();
    let fail = |what: String| TestCaseError::fail(what);
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Set(k, len) => {
                db.set(&key(*k), &value(*k, *len)).map_err(|e| fail(format!("step {step} set: {e}")))?;
                model.insert(key(*k), value(*k, *len));
            }
            Op::Remove(k) => {
                db.remove(&key(*k)).map_err(|e| fail(format!("step {step} remove: {e}")))?;
                model.remove(&key(*k));
            }
            Op::Lookup(ks) => {
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                // A hint only: the lookups after it answer as without it.
                db.prefetch(&refs);
                let batched = db.get_multi(&refs).map_err(|e| fail(format!("step {step} get_multi: {e}")))?;
                let present =
                    db.contains_multi(&refs).map_err(|e| fail(format!("step {step} contains_multi: {e}")))?;
                for (i, k) in keys.iter().enumerate() {
                    let single = db.get(k).map_err(|e| fail(format!("step {step} get: {e}")))?;
                    let contains = db.contains(k).map_err(|e| fail(format!("step {step} contains: {e}")))?;
                    prop_assert_eq!(
                        &batched[i],
                        &single,
                        "step {}: key {} batched vs single",
                        step,
                        h::show(k)
                    );
                    prop_assert_eq!(
                        &single,
                        &model.get(k).cloned(),
                        "step {}: key {} vs model",
                        step,
                        h::show(k)
                    );
                    prop_assert_eq!(present[i], contains, "step {}: contains {}", step, h::show(k));
                    prop_assert_eq!(contains, single.is_some(), "step {}: contains {}", step, h::show(k));
                }
            }
            Op::SetMulti(pairs) => {
                let owned: Vec<(Vec<u8>, Vec<u8>)> =
                    pairs.iter().map(|&(k, l)| (key(k), value(k, l))).collect();
                let refs: Vec<(&[u8], &[u8])> =
                    owned.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
                db.set_multi(&refs).map_err(|e| fail(format!("step {step} set_multi: {e}")))?;
                model.extend(owned);
            }
            Op::RemoveMulti(ks) => {
                let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let removed =
                    db.remove_multi(&refs).map_err(|e| fail(format!("step {step} remove_multi: {e}")))?;
                let mut expected = 0;
                for k in &keys {
                    expected += usize::from(model.remove(k).is_some());
                }
                prop_assert_eq!(removed, expected, "step {}: remove_multi count", step);
            }
        }
    }
    let all: Vec<Vec<u8>> = (0..24).map(key).collect();
    let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
    let got = db.get_multi(&refs).map_err(|e| fail(format!("final get_multi: {e}")))?;
    for (k, v) in all.iter().zip(got) {
        prop_assert_eq!(v, model.get(k).cloned(), "final: key {}", h::show(k));
    }
    db.close().map_err(|e| fail(format!("close: {e}")))?;
    Ok(())
}

/// Whether forcing io_uring opens a file here.
fn uring_allowed() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let spec = FileSpec::parse("pos-para,io_engine=uring").unwrap();
    spec.open(dir.path().join("probe"), &OpenOptions::writer()).is_ok()
}

/// The whole file matrix but the slow synchronous specs, and the direct I/O
/// specs (with and without the page cache) with each engine forced.
fn specs() -> Vec<FileSpec> {
    let mut specs = common::matrix_without_sync();
    let mut engines = vec![IoEngine::Serial, IoEngine::Threads];
    if uring_allowed() {
        engines.push(IoEngine::Uring);
    } else {
        eprintln!("io_uring refused here: the forced uring engine is not tested");
    }
    for (_, spec) in h::direct_specs() {
        for &engine in &engines {
            let mut s = spec.clone();
            s.io_engine = engine;
            specs.push(s);
        }
    }
    specs
}

#[test]
fn batched_lookups_answer_what_single_lookups_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batched.kh");
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(CASES);
    for spec in specs() {
        let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
        let strategy = (tuning(), proptest::collection::vec(op(), 1..50));
        let result = runner.run(&strategy, |(t, ops)| run(&path, &options(&spec, &t), &ops));
        if let Err(e) = result {
            panic!("spec {spec}: {e}");
        }
    }
}

/// Keys a writer changes together: every batch must see them all at one
/// generation, never some before a `set_multi` and some after.
const GROUP: u8 = 8;

#[test]
fn batches_beside_a_writer_see_whole_operations() {
    let mut specs = vec![
        FileSpec::new(FileKind::MmapParallel),
        FileSpec::new(FileKind::PositionalParallel),
        common::spec(FileKind::PositionalAtomic, |s| {
            s.block_size = 512;
            s.pagecache = true;
            s.page_cache_capacity = Some(common::TINY_PAGE_CACHE);
        }),
    ];
    specs.extend(h::direct_specs().into_iter().map(|(_, s)| s));
    let dir = tempfile::tempdir().unwrap();
    for (n, spec) in specs.into_iter().enumerate() {
        for appending in [false, true] {
            let mode = if appending { UpdateMode::Appending } else { UpdateMode::InPlace };
            let options = h::options(&spec).num_buckets(5).update_mode(mode).min_read_size(0);
            let path = dir.path().join(format!("writer{n}-{appending}.kh"));
            let db = HashDbm::open(&path, Access::ReadWrite, &options).unwrap();
            if let Err(e) = check_beside_writer(&db) {
                panic!("spec {spec}, {mode:?}: {e}");
            }
            db.close().unwrap();
        }
    }
}

/// A writer sets (or removes) the group's keys together, generation after
/// generation, and another churns other keys of the same chains alone;
/// batches read all of them meanwhile.
fn check_beside_writer(db: &HashDbm) -> std::result::Result<(), String> {
    let stop = AtomicBool::new(false);
    let group: Vec<Vec<u8>> = (0..GROUP).map(key).collect();
    let others: Vec<Vec<u8>> = (GROUP..GROUP + 16).map(key).collect();
    let batches = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> Result<()> {
            let mut generation = 0usize;
            while !stop.load(Ordering::Relaxed) {
                generation += 1;
                let refs: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
                if generation.is_multiple_of(5) {
                    db.remove_multi(&refs)?;
                    continue;
                }
                // Long and short, so updates both fit their record and move.
                let v = value(0, 10 + generation * 97 % 700);
                let v = [format!("{generation}|").as_bytes(), &v].concat();
                let pairs: Vec<(&[u8], &[u8])> = refs.iter().map(|&k| (k, v.as_slice())).collect();
                db.set_multi(&pairs)?;
            }
            Ok(())
        });
        let churn = scope.spawn(|| -> Result<()> {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let k = &others[n % others.len()];
                match n % 3 {
                    0 => db.remove(k).map(|_| ())?,
                    _ => db.set(k, &[k.as_slice(), b"=", &value(0, n * 31 % 600)].concat())?,
                }
            }
            Ok(())
        });
        let check = || -> std::result::Result<(), String> {
            let deadline = Instant::now() + Duration::from_millis(400);
            let all: Vec<&[u8]> = group.iter().chain(&others).map(Vec::as_slice).collect();
            let mut last = 0usize;
            while Instant::now() < deadline || batches.load(Ordering::Relaxed) < 20 {
                // The hint reads buckets without their locks, beside the writers.
                db.prefetch(&all);
                let got = db.get_multi(&all).map_err(|e| format!("get_multi: {e}"))?;
                let present = db.contains_multi(&all).map_err(|e| format!("contains_multi: {e}"))?;
                batches.fetch_add(1, Ordering::Relaxed);
                let first = &got[0];
                if got[..GROUP as usize].iter().any(|v| v != first) {
                    return Err(format!(
                        "a batch saw the group at several generations: {:?}",
                        generations(&got)
                    ));
                }
                if let Some(v) = first {
                    let generation = generation_of(v);
                    if generation < last {
                        return Err(format!("generation {generation} after {last}"));
                    }
                    last = generation;
                }
                // The group's presence is one state too (another one than
                // get_multi's, but whole).
                if present[..GROUP as usize].iter().any(|&p| p != present[0]) {
                    return Err(format!("contains_multi saw the group half removed: {present:?}"));
                }
                for (k, v) in all[GROUP as usize..].iter().zip(&got[GROUP as usize..]) {
                    if let Some(v) = v {
                        if !v.starts_with(&[*k, b"="].concat()) {
                            return Err(format!(
                                "key {} holds a value not written: {}",
                                h::show(k),
                                h::show(v)
                            ));
                        }
                    }
                }
            }
            Ok(())
        };
        let checked = check();
        stop.store(true, Ordering::Relaxed);
        let wrote = writer.join().unwrap();
        let churned = churn.join().unwrap();
        checked?;
        wrote.map_err(|e| format!("writer: {e}"))?;
        churned.map_err(|e| format!("churn: {e}"))
    })
}

fn generation_of(v: &[u8]) -> usize {
    let end = v.iter().position(|&b| b == b'|').unwrap_or(0);
    std::str::from_utf8(&v[..end]).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn generations(values: &[Option<Vec<u8>>]) -> Vec<Option<usize>> {
    values.iter().map(|v| v.as_deref().map(generation_of)).collect()
}

/// What a counting file saw: single reads, batches, the requests of the
/// batches, and prefetch hints.
#[derive(Default)]
struct Counts {
    reads: AtomicUsize,
    batches: AtomicUsize,
    requests: AtomicUsize,
    hints: AtomicUsize,
}

impl Counts {
    fn take(&self) -> (usize, usize, usize) {
        let take = |c: &AtomicUsize| c.swap(0, Ordering::Relaxed);
        (take(&self.reads), take(&self.batches), take(&self.requests))
    }

    fn take_hints(&self) -> usize {
        self.hints.swap(0, Ordering::Relaxed)
    }
}

/// Counts the reads reaching a [`HookedFile`].
impl ReadHook for Counts {
    fn read(&self, _offset: u64, _len: usize) -> Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn read_many(&self, reads: &[ReadRequest<'_>]) -> Result<()> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.requests.fetch_add(reads.len(), Ordering::Relaxed);
        Ok(())
    }
    fn prefetch(&self, _offset: u64, _len: usize) {
        self.hints.fetch_add(1, Ordering::Relaxed);
    }
}

/// Opens a database of 32 records (each alone in its chain, as the test
/// checks) with `value_len`-byte values, counting its file's reads.
fn counted(dir: &Path, cache_buckets: bool, value_len: usize) -> (HashDbm, Arc<Counts>, Vec<Vec<u8>>) {
    counted_on(FileKind::PositionalParallel, dir, cache_buckets, value_len)
}

/// [`counted`] on a file of `kind`.
fn counted_on(
    kind: FileKind,
    dir: &Path,
    cache_buckets: bool,
    value_len: usize,
) -> (HashDbm, Arc<Counts>, Vec<Vec<u8>>) {
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let wrap =
        FileWrapper(Arc::new(move |inner| Box::new(HookedFile::new(inner, c.clone())) as Box<dyn File>));
    let mut options = h::options(&FileSpec::new(kind)).num_buckets(1_000_003).cache_buckets(cache_buckets);
    options.wrap_file = Some(wrap);
    let path = dir.join(format!("counted-{kind:?}-{cache_buckets}-{value_len}.kh"));
    let db = HashDbm::open(&path, Access::ReadWrite, &options).unwrap();
    let keys: Vec<Vec<u8>> = (0..32).map(|i| format!("counted key {i}").into_bytes()).collect();
    for k in &keys {
        db.set(k, &vec![b'v'; value_len]).unwrap();
    }
    counts.take();
    // Each key alone in its chain: one record read finds it.
    for k in &keys {
        db.get(k).unwrap();
        assert_eq!(counts.take().0, if cache_buckets { 0 } else { 1 } + if value_len > 200 { 2 } else { 1 });
    }
    (db, counts, keys)
}

/// N keys cost one `read_many` of N record reads (and one of N bucket reads
/// without `cache_buckets`, and one more for values longer than the first
/// read until a batch has learnt their size), not N reads each; absent keys
/// with empty buckets cost no record read.
#[test]
fn a_batch_reaches_the_file_together() {
    let dir = tempfile::tempdir().unwrap();
    for cache_buckets in [true, false] {
        for value_len in [50, 3000] {
            let (db, counts, keys) = counted(dir.path(), cache_buckets, value_len);
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let values = db.get_multi(&refs).unwrap();
            assert!(values.iter().all(|v| v.as_deref() == Some(&vec![b'v'; value_len][..])));
            let rounds = usize::from(!cache_buckets) + 1 + usize::from(value_len > 200);
            let what = format!("cache_buckets {cache_buckets}, {value_len}-byte values");
            assert_eq!(counts.take(), (0, rounds, rounds * 32), "get_multi, {what}");
            // The first batch learnt how long the records are: the next reads
            // each whole at once, with no completing round.
            db.get_multi(&refs).unwrap();
            let rounds = usize::from(!cache_buckets) + 1;
            assert_eq!(counts.take(), (0, rounds, rounds * 32), "second get_multi, {what}");
            // contains_multi reads no value: never a completing round.
            assert!(db.contains_multi(&refs).unwrap().iter().all(|&p| p));
            let rounds = usize::from(!cache_buckets) + 1;
            assert_eq!(counts.take(), (0, rounds, rounds * 32), "contains_multi, {what}");
            let absent: Vec<Vec<u8>> = (0..8).map(|i| format!("absent {i}").into_bytes()).collect();
            let refs: Vec<&[u8]> = absent.iter().map(Vec::as_slice).collect();
            assert!(db.get_multi(&refs).unwrap().iter().all(Option::is_none));
            let expected = if cache_buckets { (0, 0, 0) } else { (0, 1, 8) };
            assert_eq!(counts.take(), expected, "absent keys, {what}");
            db.close().unwrap();
        }
    }
}

/// `prefetch` hints every bucket of its keys, then the first record of
/// every chain, on a file read from memory; on one that declines hints (a
/// positional file) it stops at the first; it gives none for one key or
/// sealed keys. Batched lookups hint the same way before they read.
#[test]
fn prefetch_hints_buckets_then_chain_heads() {
    let dir = tempfile::tempdir().unwrap();
    for kind in [FileKind::MmapParallel, FileKind::PositionalParallel] {
        for cache_buckets in [false, true] {
            let what = format!("{kind:?}, cache_buckets {cache_buckets}");
            let (db, counts, keys) = counted_on(kind, dir.path(), cache_buckets, 50);
            counts.take_hints();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            db.prefetch(&refs);
            let (hints, reads) = match (kind, cache_buckets) {
                // Each bucket, then each record; the buckets read once more
                // (through the map) to find the records.
                (FileKind::MmapParallel, false) => (64, 32),
                // The buckets are in memory: only the records go to the file.
                (FileKind::MmapParallel, true) => (32, 0),
                // The first hint declined, no more.
                _ => (1, 0),
            };
            assert_eq!((counts.take_hints(), counts.take().0), (hints, reads), "prefetch, {what}");
            db.get_multi(&refs).unwrap();
            assert_eq!(counts.take_hints(), hints, "get_multi, {what}");
            counts.take();
            db.prefetch(&refs[..1]);
            let absent: Vec<Vec<u8>> = (0..8).map(|i| format!("absent {i}").into_bytes()).collect();
            let absent: Vec<&[u8]> = absent.iter().map(Vec::as_slice).collect();
            db.prefetch(&absent);
            let expected = match (kind, cache_buckets) {
                // Empty buckets: nothing to hint after them.
                (FileKind::MmapParallel, false) => 8,
                (FileKind::MmapParallel, true) => 0,
                (_, false) => 1,
                (_, true) => 0,
            };
            assert_eq!(counts.take_hints(), expected, "one key, then absent keys, {what}");
            db.close().unwrap();
        }
    }
}

/// Checks that `get_multi` and `contains_multi` of each tail of `keys` (in
/// chain order) answer what a `get` and a `contains` of each key in turn
/// answer: the values, or the first key's error, word for word.
fn same_errors(path: &Path, options: &HashOptions, keys: &[Vec<u8>]) {
    let db = HashDbm::open(path, Access::ReadOnly, options).unwrap();
    let mut failed = 0;
    for start in 0..keys.len() {
        let batch: Vec<&[u8]> = keys[start..].iter().map(Vec::as_slice).collect();
        let singles: Result<Vec<Option<Vec<u8>>>> = batch.iter().map(|k| db.get(k)).collect();
        let contained: Result<Vec<bool>> = batch.iter().map(|k| db.contains(k)).collect();
        let batched = db.get_multi(&batch);
        let present = db.contains_multi(&batch);
        let what = format!("batch from key {}", h::show(batch[0]));
        match (&singles, &batched) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
            (Err(a), Err(b)) => {
                failed += 1;
                assert_eq!(a.kind(), ErrorKind::BrokenData, "{a}");
                assert_eq!(a.to_string(), b.to_string(), "{what}");
            }
            _ => panic!("{what}: gets {singles:?}, get_multi {batched:?}"),
        }
        match (&contained, &present) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{what}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
            _ => panic!("{what}: contains {contained:?}, contains_multi {present:?}"),
        }
    }
    assert!(failed > 0, "the damage went unnoticed");
    db.close().unwrap();
}

/// Writes 10 keys into one chain (the last written first) and answers where
/// each key's record starts: records aligned to 1 byte, offsets 4 bytes
/// wide, every size field one byte, so a record's magic byte lies 16 bytes
/// before its key.
fn one_chain(path: &Path, options: &HashOptions) -> Vec<(Vec<u8>, usize)> {
    let _ = std::fs::remove_file(path);
    let db = HashDbm::open(path, Access::ReadWrite, options).unwrap();
    let keys: Vec<Vec<u8>> = (0..10).map(|i| format!("chained{i}").into_bytes()).collect();
    for k in &keys {
        db.set(k, &[k.as_slice(), b"-value"].concat()).unwrap();
    }
    db.close().unwrap();
    let bytes = std::fs::read(path).unwrap();
    let at = |k: &[u8]| {
        bytes.windows(k.len() + 1).position(|w| w == [k, b"c"].concat() || w == [k, b"-"].concat())
    };
    keys.iter().map(|k| (k.clone(), at(k).expect("the key is in the file") - 16)).collect()
}

/// A change to a file's bytes.
type Damage = Box<dyn Fn(&mut Vec<u8>)>;

#[test]
fn a_damaged_record_fails_a_batch_as_it_fails_a_get() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.kh");
    for spec in [FileSpec::new(FileKind::PositionalParallel), FileSpec::new(FileKind::MmapParallel)] {
        for crc in [RecordCrcMode::None, RecordCrcMode::Crc32] {
            let options = h::options(&spec).num_buckets(1).align_pow(0).offset_width(4).record_crc_mode(crc);
            let records = one_chain(&path, &options);
            let keys: Vec<Vec<u8>> = records.iter().rev().map(|(k, _)| k.clone()).collect();
            let (_, middle) = records[5];
            let damages: [(&str, Damage); 3] = [
                ("a bad magic byte", Box::new(move |b: &mut Vec<u8>| b[middle] = 0x11)),
                (
                    "a chain looping back",
                    Box::new(move |b: &mut Vec<u8>| {
                        b[middle + 1..middle + 5].copy_from_slice(&(middle as u32).to_le_bytes())
                    }),
                ),
                (
                    "a link past the end",
                    Box::new(move |b: &mut Vec<u8>| {
                        b[middle + 1..middle + 5].copy_from_slice(&u32::MAX.to_le_bytes())
                    }),
                ),
            ];
            for (what, damage) in damages {
                one_chain(&path, &options);
                let mut bytes = std::fs::read(&path).unwrap();
                damage(&mut bytes);
                std::fs::write(&path, bytes).unwrap();
                eprintln!("{spec}, {crc:?}: {what}");
                same_errors(&path, &options, &keys);
            }
            if crc == RecordCrcMode::Crc32 {
                // A flipped value byte: only the checksum notices.
                one_chain(&path, &options);
                let mut bytes = std::fs::read(&path).unwrap();
                bytes[middle + 16 + 10] ^= 1;
                std::fs::write(&path, bytes).unwrap();
                same_errors(&path, &options, &keys);
            }
        }
    }
}
