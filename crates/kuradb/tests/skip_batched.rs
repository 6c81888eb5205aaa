//! The skip database's batched lookups (`get_multi`, `contains_multi` and
//! the `process_multi` under them, which run their lookups in lockstep
//! rounds of `read_many`) answer exactly what one lookup at a time answers:
//! on random databases of every shape (tiny steps and caches, so lookups
//! walk several levels; from no record to a few thousand; keys repeated
//! and reduced), with keys before the first and after the last, keys
//! repeated within a batch, and changes pending since the last
//! synchronization (which neither sees); on memory maps, positional files,
//! direct I/O with and without the page cache, and each forced I/O engine.
//! A writable batch shows a repeated key its earlier answer. A damaged file
//! fails a batch with the error a loop of single lookups meets first. A
//! batch beside a writer sees one synchronization whole. A batch of N keys
//! costs about as many `read_many` calls as one lookup costs reads.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::hooked::{HookedFile, ReadHook};
use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
use kuradb::dbm::{Access, Action, Dbm, Durability};
use kuradb::file::{File, FileSpec, FileWrapper, ReadRequest};
use kuradb::Result;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Keys of numbers: a third share a prefix longer than the eight bytes the
/// cache of the upper levels compares first.
fn key(n: u16) -> Vec<u8> {
    if n.is_multiple_of(3) {
        format!("shared-prefix-{n:05}").into_bytes()
    } else {
        format!("k{n:05}").into_bytes()
    }
}

/// A key a batch asks for: mostly numbered (present or not), sometimes one
/// before every key or after every key.
fn wanted(code: u16) -> Vec<u8> {
    match code % 40 {
        0 => Vec::new(),
        1 => b"a".to_vec(),
        2 => b"zzz".to_vec(),
        3 => vec![0xff; 3],
        _ => key(code / 40 * 3 + code % 3),
    }
}

fn value(n: u16, len: u8) -> Vec<u8> {
    let mut v = format!("v{n}:").into_bytes();
    v.resize(v.len() + usize::from(len), b'.');
    v
}

#[derive(Clone, Debug)]
struct Case {
    step_unit: u32,
    max_level: u8,
    cached: usize,
    records: Vec<(u16, u8)>,
    reducer: u8,
    /// Changes after the last synchronization: a set, or a remove (`None`).
    pending: Vec<(u16, Option<u8>)>,
    batches: Vec<Vec<u16>>,
}

fn case() -> impl Strategy<Value = Case> {
    let records = prop_oneof![
        prop::collection::vec((0u16..2000, 0u8..40), 0..8),
        prop::collection::vec((0u16..2000, 0u8..40), 0..300),
        prop::collection::vec((0u16..2000, 0u8..200), 500..3000),
    ];
    (
        2u32..6,
        1u8..5,
        1usize..12,
        records,
        0u8..4,
        prop::collection::vec((0u16..2000, prop::option::of(0u8..40)), 0..20),
        prop::collection::vec(prop::collection::vec(0u16..4000, 0..80), 1..4),
    )
        .prop_map(|(step_unit, max_level, cached, records, reducer, pending, batches)| Case {
            step_unit,
            max_level,
            cached,
            records,
            reducer,
            pending,
            batches,
        })
}

fn reducer(n: u8) -> Reducer {
    match n {
        0 => Reducer::All,
        1 => Reducer::First,
        2 => Reducer::Last,
        _ => Reducer::Concat(b",".to_vec()),
    }
}

/// The file specs the batches run on: memory maps, positional files with
/// each forced engine, and direct I/O with and without the page cache.
fn specs() -> Vec<(&'static str, FileSpec)> {
    let mut specs = vec![
        ("mmap-para", "mmap-para"),
        ("pos-para", "pos-para"),
        ("pos-para threads", "pos-para,io_engine=threads"),
        (
            "pos-atom serial, head buffer, page cache",
            "pos-atom,block_size=512,access=pagecache,head_buffer=100,io_engine=serial",
        ),
    ];
    if common::direct_io_supported() {
        specs.push(("direct", "pos-para,block_size=512,access=direct"));
        specs.push(("direct threads", "pos-para,block_size=4096,access=direct,io_engine=threads"));
        specs.push((
            "direct page cache",
            "pos-para,block_size=512,access=direct+pagecache,page_cache_capacity=3",
        ));
        specs.push((
            "direct page cache serial",
            "pos-atom,block_size=4096,access=direct+pagecache,io_engine=serial",
        ));
    }
    specs.into_iter().map(|(name, spec)| (name, FileSpec::parse(spec).expect("spec"))).collect()
}

fn options(spec: &FileSpec, case: &Case) -> SkipOptions {
    SkipOptions::default()
        .file(spec.clone())
        .step_unit(case.step_unit)
        .max_level(case.max_level)
        .max_cached_records(case.cached)
}

/// Fails the case with `what` unless `got` and `want` show alike.
fn check(
    got: impl std::fmt::Debug,
    want: impl std::fmt::Debug,
    what: &str,
) -> std::result::Result<(), TestCaseError> {
    let (got, want) = (format!("{got:?}"), format!("{want:?}"));
    prop_assert_eq!(got, want, "{}", what);
    Ok(())
}

fn run_case(spec: &FileSpec, dir: &Path, case: &Case) -> std::result::Result<(), TestCaseError> {
    let path = dir.join("casket.skip");
    let _ = std::fs::remove_file(&path);
    let db = SkipDbm::open(&path, Access::ReadWrite, &options(spec, case)).map_err(fail)?;
    for &(n, len) in &case.records {
        db.set(&key(n), &value(n, len)).map_err(fail)?;
    }
    db.synchronize_with(Durability::Soft, &reducer(case.reducer)).map_err(fail)?;
    for &(n, change) in &case.pending {
        match change {
            Some(len) => db.set(&key(n), &value(n + 1, len)).map_err(fail)?,
            None => drop(db.remove(&key(n)).map_err(fail)?),
        }
    }
    for batch in &case.batches {
        let keys: Vec<Vec<u8>> = batch.iter().map(|&c| wanted(c)).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let single: Vec<Option<Vec<u8>>> =
            refs.iter().map(|k| db.get(k)).collect::<Result<_>>().map_err(fail)?;
        let present: Vec<bool> = refs.iter().map(|k| db.contains(k)).collect::<Result<_>>().map_err(fail)?;
        check(db.get_multi(&refs).map_err(fail)?, &single, "get_multi against get")?;
        check(db.contains_multi(&refs).map_err(fail)?, &present, "contains_multi against contains")?;
    }
    // A writable batch: each occurrence sees the earlier answers to its
    // key, else the file; the answers wait for the next synchronization.
    let keys: Vec<Vec<u8>> = case.batches[0].iter().map(|&c| wanted(c)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut expected = Vec::new();
    let mut answered: HashMap<&[u8], Option<Vec<u8>>> = HashMap::new();
    for (i, &k) in refs.iter().enumerate() {
        match answered.get(k) {
            Some(v) => expected.push(v.clone()),
            None => expected.push(db.get(k).map_err(fail)?),
        }
        match i % 3 {
            0 => drop(answered.insert(k, Some(format!("answer {i}").into_bytes()))),
            1 => drop(answered.insert(k, None)),
            _ => {}
        }
    }
    let mut shown = Vec::new();
    db.process_multi(&refs, Access::ReadWrite, &mut |i, _, v| {
        shown.push(v.map(<[u8]>::to_vec));
        match i % 3 {
            0 => Action::Set(format!("answer {i}").into_bytes().into()),
            1 => Action::Remove,
            _ => Action::Keep,
        }
    })
    .map_err(fail)?;
    check(&shown, &expected, "a writable process_multi against single lookups and its own answers")?;
    db.synchronize_with(Durability::Soft, &Reducer::All).map_err(fail)?;
    for (k, v) in &answered {
        check(db.get(k).map_err(fail)?, v, "an answer after synchronization")?;
    }
    db.close().map_err(fail)?;
    Ok(())
}

fn fail(e: kuradb::Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn batches_agree_on(name: &str, spec: &FileSpec, cases: u32) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    if let Err(e) = runner.run(&case(), |case| run_case(spec, dir.path(), &case)) {
        panic!("[{name}: {spec}] {e}");
    }
}

#[test]
fn batched_lookups_agree_with_single_ones_on_every_spec() {
    for (name, spec) in specs() {
        batches_agree_on(name, &spec, 24);
    }
}

/// Writes every key at each generation (a batch, so the key's records are
/// replaced) and synchronizes; readers' batches must each see one
/// generation whole, never an older one than they saw before.
#[test]
fn batches_beside_a_writer_see_one_synchronization() {
    const KEYS: u16 = 300;
    const GENERATIONS: u64 = 12;
    for (name, spec) in specs()
        .into_iter()
        .filter(|(n, _)| ["pos-para threads", "direct page cache", "mmap-para"].contains(n))
    {
        let dir = tempfile::tempdir().expect("temporary directory");
        let options =
            SkipOptions::default().file(spec.clone()).step_unit(3).max_level(5).max_cached_records(4);
        let db = Arc::new(
            SkipDbm::open(dir.path().join("casket.skip"), Access::ReadWrite, &options).expect("open"),
        );
        let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
        let write = |g: u64| {
            let values: Vec<Vec<u8>> = (0..KEYS).map(|n| format!("{g}:{n}").into_bytes()).collect();
            let pairs: Vec<(&[u8], &[u8])> =
                keys.iter().zip(&values).map(|(k, v)| (&k[..], &v[..])).collect();
            db.set_multi(&pairs).expect("set_multi");
            db.synchronize(Durability::Soft).expect("synchronize");
        };
        write(0);
        let published = AtomicU64::new(0);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            for reader in 0..2u64 {
                let (db, keys, published, done) = (&db, &keys, &published, &done);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(reader);
                    let mut last = 0;
                    let mut batches = 0;
                    while !done.load(Ordering::Acquire) || batches < 3 {
                        let mut batch: Vec<u16> = (0..40).map(|_| rng.gen_range(0..KEYS + 20)).collect();
                        batch.push(batch[0]);
                        let refs: Vec<&[u8]> = batch.iter().map(|&n| wanted_or_key(keys, n)).collect();
                        let values =
                            db.get_multi(&refs).unwrap_or_else(|e| panic!("[{name}] get_multi: {e}"));
                        // A build in progress may have put its file in place
                        // before the writer says so.
                        let ceiling = published.load(Ordering::Acquire) + 1;
                        let mut seen = None;
                        for (&n, got) in batch.iter().zip(&values) {
                            if n >= KEYS {
                                assert_eq!(got, &None, "[{name}] a key never written");
                                continue;
                            }
                            let got = String::from_utf8(got.clone().expect("every written key has a record"))
                                .unwrap();
                            let (g, rest) = got.split_once(':').expect("a generation");
                            let g: u64 = g.parse().unwrap();
                            assert_eq!(rest, n.to_string(), "[{name}] the value of another key");
                            assert!(
                                seen.is_none_or(|s| s == g),
                                "[{name}] one batch saw generations {seen:?} and {g}"
                            );
                            assert!(
                                g >= last && g <= ceiling,
                                "[{name}] generation {g} after {last}, with {ceiling} written"
                            );
                            seen = Some(g);
                        }
                        last = seen.unwrap_or(last);
                        batches += 1;
                    }
                });
            }
            for g in 1..=GENERATIONS {
                write(g);
                published.store(g, Ordering::Release);
            }
            done.store(true, Ordering::Release);
        });
    }
}

fn wanted_or_key(keys: &[Vec<u8>], n: u16) -> &[u8] {
    keys.get(usize::from(n)).map_or(b"zz-absent", Vec::as_slice)
}

/// A damaged file fails a batch with the error that a loop of single
/// lookups meets first, and answers the same records where it holds.
#[test]
fn a_damaged_file_fails_a_batch_as_single_lookups_fail() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("casket.skip");
    let spec = FileSpec::parse("pos-para").unwrap();
    let options = SkipOptions::default().file(spec).step_unit(3).max_level(4).max_cached_records(4);
    let db = SkipDbm::open(&path, Access::ReadWrite, &options).expect("create");
    for n in 0..600u16 {
        db.set(&key(n * 2), &value(n, (n % 50) as u8)).expect("set");
    }
    db.close().expect("close");
    let healthy = std::fs::read(&path).expect("read the file");
    let records_end = u64::from_le_bytes(healthy[32..40].try_into().unwrap()) as usize;
    let mut rng = SmallRng::seed_from_u64(18);
    let mut failed = 0;
    for round in 0..150 {
        let mut bytes = healthy.clone();
        for _ in 0..1 + round % 3 {
            let at = rng.gen_range(128..records_end);
            bytes[at] ^= 1 << rng.gen_range(0..8);
        }
        std::fs::write(&path, &bytes).expect("write the damaged file");
        let Ok(db) = SkipDbm::open(&path, Access::ReadOnly, &options) else { continue };
        let keys: Vec<Vec<u8>> = (0..48).map(|_| key(rng.gen_range(0..1300))).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let single: Result<Vec<Option<Vec<u8>>>> = refs.iter().map(|k| db.get(k)).collect();
        let batched = db.get_multi(&refs);
        match (&single, &batched) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "round {round}: the values of a damaged file");
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "round {round}: the errors");
                failed += 1;
            }
            _ => panic!("round {round}: single lookups gave {single:?}, the batch {batched:?}"),
        }
    }
    // The damage must have reached the lookups at times, or this proves nothing.
    assert!(failed >= 10, "only {failed} of 150 rounds of damage failed a lookup");
}

/// Counts a file's reads (a [`HookedFile`]'s): single ones, batches and the
/// requests in them; and fails reads on demand: every read that reaches
/// `fail_from` or past, and the next batch whole, once, if `fail_next_batch`.
struct Counts {
    reads: AtomicU64,
    batches: AtomicU64,
    requests: AtomicU64,
    fail_from: AtomicU64,
    fail_next_batch: AtomicBool,
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            reads: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            fail_from: AtomicU64::new(u64::MAX),
            fail_next_batch: AtomicBool::new(false),
        }
    }
}

impl Counts {
    fn take(&self) -> (u64, u64, u64) {
        (
            self.reads.swap(0, Ordering::Relaxed),
            self.batches.swap(0, Ordering::Relaxed),
            self.requests.swap(0, Ordering::Relaxed),
        )
    }
}

impl Counts {
    fn check(&self, offset: u64, len: usize) -> Result<()> {
        if offset + len as u64 > self.fail_from.load(Ordering::Relaxed) {
            return Err(kuradb::Error::new(
                kuradb::ErrorKind::System,
                format!("the read of {len} bytes at {offset} failed (a bad sector, for the test)"),
            ));
        }
        Ok(())
    }
}

impl ReadHook for Counts {
    fn read(&self, offset: u64, len: usize) -> Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.check(offset, len)
    }
    fn read_many(&self, reads: &[ReadRequest<'_>]) -> Result<()> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.requests.fetch_add(reads.len() as u64, Ordering::Relaxed);
        if self.fail_next_batch.swap(false, Ordering::Relaxed) {
            return Err(kuradb::Error::new(kuradb::ErrorKind::System, "the batch failed (for the test)"));
        }
        reads.iter().try_for_each(|read| self.check(read.offset, read.buf.len()))
    }
}

/// A skip database of `n` records (small levels, few cached records, so
/// lookups read) over a file whose reads `Counts` sees.
fn counted_skip(n: u16) -> (tempfile::TempDir, Arc<Counts>, SkipDbm) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let counts = Arc::new(Counts::default());
    let wrap = {
        let counts = Arc::clone(&counts);
        FileWrapper(Arc::new(move |inner| {
            Box::new(HookedFile::new(inner, Arc::clone(&counts))) as Box<dyn File>
        }))
    };
    let options = SkipOptions::default()
        .file(FileSpec::parse("pos-para").unwrap())
        .step_unit(4)
        .max_level(8)
        .max_cached_records(4)
        .wrap_file(Some(wrap));
    let db = SkipDbm::open(dir.path().join("casket.skip"), Access::ReadWrite, &options).expect("create");
    for n in 0..n {
        db.set(&key(n), &value(n, 20)).expect("set");
    }
    db.synchronize(Durability::Soft).expect("synchronize");
    (dir, counts, db)
}

/// A batch of 32 keys takes as many `read_many` rounds as its longest
/// lookup takes reads alone, each round one request per unfinished lookup
/// at most: not 32 times one lookup's reads.
#[test]
fn a_batch_costs_the_rounds_of_its_longest_lookup() {
    let (_dir, counts, db) = counted_skip(20_000);
    let mut rng = SmallRng::seed_from_u64(7);
    let keys: Vec<Vec<u8>> = (0..32).map(|_| key(rng.gen_range(0..20_500))).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    counts.take();
    let mut longest = 0;
    let mut total = 0;
    let mut single = Vec::new();
    for k in &refs {
        single.push(db.get(k).expect("get"));
        let (reads, batches, _) = counts.take();
        assert_eq!(batches, 0, "a single lookup reads one read at a time");
        longest = longest.max(reads);
        total += reads;
    }
    assert!(longest >= 4, "lookups that read {longest} times at most do not walk the levels");
    assert_eq!(db.get_multi(&refs).expect("get_multi"), single);
    let (reads, rounds, requests) = counts.take();
    assert_eq!(reads, 0, "a batch read one record alone");
    assert!(rounds <= longest, "{rounds} rounds where the longest lookup reads {longest} times");
    assert!(requests <= total, "{requests} reads in the batch, {total} one lookup at a time");
    assert!(rounds * 8 <= total, "{rounds} rounds for 32 lookups of {total} reads together");
    eprintln!("32 lookups: {total} reads one at a time (at most {longest} each); batched, {rounds} rounds of {requests} reads");
    db.close().expect("close");
}

/// A read that fails in a batch fails the lookup that wanted it, with the
/// error that lookup's read gives alone, so the batch fails as a loop of
/// single lookups does; a batch that fails whole but whose reads succeed
/// alone answers what single lookups answer.
#[test]
fn a_failed_read_fails_its_own_lookup() {
    let (_dir, counts, db) = counted_skip(5_000);
    let mut rng = SmallRng::seed_from_u64(11);
    let keys: Vec<Vec<u8>> = (0..48).map(|_| key(rng.gen_range(0..5_100))).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let single: Vec<Option<Vec<u8>>> = refs.iter().map(|k| db.get(k)).collect::<Result<_>>().expect("get");
    counts.fail_next_batch.store(true, Ordering::Relaxed);
    assert_eq!(db.get_multi(&refs).expect("a batch whose reads succeed alone"), single);
    assert!(!counts.fail_next_batch.load(Ordering::Relaxed), "no batch was read");
    let size = db.file_size().expect("size");
    let mut failed = 0;
    for part in 1..8 {
        counts.fail_from.store(size * part / 8, Ordering::Relaxed);
        let single: Result<Vec<Option<Vec<u8>>>> = refs.iter().map(|k| db.get(k)).collect();
        let batched = db.get_multi(&refs);
        match (&single, &batched) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "reads failing from {part}/8 of the file"),
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "reads failing from {part}/8 of the file");
                failed += 1;
            }
            _ => panic!("reads failing from {part}/8: single lookups gave {single:?}, the batch {batched:?}"),
        }
    }
    assert!(failed >= 5, "only {failed} of 7 bad regions failed a lookup");
    counts.fail_from.store(u64::MAX, Ordering::Relaxed);
    db.close().expect("close");
}
