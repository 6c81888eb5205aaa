//! The tree database against a model: random sequences of every operation
//! (single and multi-record updates, process_each, cursor moves, range scans
//! with every kind of bound, clear, rebuild, synchronize, reopen, file copies
//! and crashes) on tiny pages, so that leaves and inner nodes split, merge
//! and leave the node cache all the time, compared step by step with a map
//! ordered by the tree's comparator. Every comparator, on memory mapping,
//! positional calls, and block I/O through a tiny page cache.

mod common;

use std::fmt;
use std::ops::Bound;

use common::hash::{show, show_opt, Model};
use common::tree::{self as t, Record};
use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Action, Cursor, Dbm, Durability, Edge};
use kuradb::file::FileSpec;
use kuradb::ErrorKind;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// A key: an index into a small pool (so keys repeat) and a spelling style.
#[derive(Clone, Copy)]
struct K(i16, u8);

impl K {
    /// The key's bytes under `cmp`: text numbers for the numeric
    /// comparators (in several spellings, some equal as numbers), short
    /// strings (the empty one among them) for the lexical ones.
    fn bytes(self, cmp: KeyComparator) -> Vec<u8> {
        let K(n, style) = self;
        // A pair order's keys are pairs: a first part in the base order (so
        // that firsts repeat) and a short second part.
        let base = match cmp {
            KeyComparator::PairLexical => Some(KeyComparator::Lexical),
            KeyComparator::PairDecimal => Some(KeyComparator::Decimal),
            KeyComparator::PairHex => Some(KeyComparator::Hex),
            KeyComparator::PairReal => Some(KeyComparator::Real),
            _ => None,
        };
        if let Some(base) = base {
            let seconds: [&[u8]; 3] = [b"", b"a", b"\x00b"];
            let second = seconds[usize::from(style) % 3];
            return kuradb::dbm::pair::encode_pair(&K(n / 3, style).bytes(base), second);
        }
        let text = match cmp {
            KeyComparator::Lexical | KeyComparator::LexicalReverse => {
                let n = n.unsigned_abs() as usize;
                let alphabet = b"ab\x00z";
                let len = n % 5;
                let mut s: Vec<u8> = (0..len).map(|i| alphabet[(n / (i + 1) + i) % 4]).collect();
                if style % 3 == 0 {
                    s.extend_from_slice(format!("{n}").as_bytes());
                }
                return s;
            }
            KeyComparator::Decimal | KeyComparator::DecimalReverse => match style % 4 {
                0 => format!("{n}"),
                1 => format!("{n:04}"),
                2 => format!("{n}x"),
                _ => format!("{:+}", n),
            },
            KeyComparator::Hex | KeyComparator::HexReverse => {
                let m = n.unsigned_abs();
                let sign = if n < 0 { "-" } else { "" };
                match style % 4 {
                    0 => format!("{sign}{m:x}"),
                    1 => format!("{sign}{m:X}"),
                    2 => format!("{sign}0x{m:x}"),
                    _ => format!("{sign}{m:03x}"),
                }
            }
            KeyComparator::Real | KeyComparator::RealReverse => match style % 5 {
                0 => format!("{n}"),
                1 => format!("{}.5", n),
                2 => format!("{}e-2", n),
                3 => format!("{:.3}", f64::from(n) / 7.0),
                _ => format!("{n}.0"),
            },
            _ => unreachable!("the pair orders answered above"),
        };
        text.into_bytes()
    }
}

impl fmt::Debug for K {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "K({}, {})", self.0, self.1)
    }
}

fn key() -> impl Strategy<Value = K> {
    (-40i16..40, 0u8..5).prop_map(|(n, s)| K(n, s))
}

/// A value of `len` bytes determined by `seed`.
#[derive(Clone, Copy, Debug)]
struct V(u8, u16);

impl V {
    fn bytes(self) -> Vec<u8> {
        (0..self.1).map(|i| self.0.wrapping_add((i % 251) as u8)).collect()
    }
}

/// Values up to 20 bytes, so that two records always fit a leaf: records
/// larger than a page leave empty leaves that trip a false "links loop"
/// error (see leaves_of_records_larger_than_a_page_do_not_look_like_a_loop).
fn val() -> impl Strategy<Value = V> {
    (any::<u8>(), prop_oneof![3 => 0u16..8, 2 => 8u16..21, 1 => 21u16..300]).prop_map(|(s, l)| V(s, l))
}

#[derive(Clone, Debug)]
enum Expected {
    Absent,
    Current,
    Other(V),
}

#[derive(Clone, Debug)]
enum CursorOp {
    First,
    Last,
    Jump(K),
    JumpLower(K, bool),
    JumpUpper(K, bool),
    Next,
    Previous,
    Get,
    Set(V),
    Remove,
    /// A write through the database, not the cursor, while it stands.
    Elsewhere(K, Option<V>),
}

#[derive(Clone, Debug)]
enum B {
    In(K),
    Ex(K),
    Un,
}

#[derive(Clone, Debug)]
enum Op {
    Set(K, V, bool),
    Remove(K),
    Get(K),
    Append(K, V, u8),
    CompareExchange(K, Expected, Option<V>),
    Increment(K, i64),
    SetMulti(Vec<(K, V)>, bool),
    RemoveMulti(Vec<K>),
    EachRead,
    EachWrite(u8),
    Cursor(Vec<CursorOp>),
    Range(B, B),
    Fill(i16, u8, V),
    Clear,
    Rebuild,
    Sync(bool),
    Reopen(bool),
    CopyFile,
    Crash(Vec<(K, Option<V>)>),
}

fn cursor_op() -> impl Strategy<Value = CursorOp> {
    prop_oneof![
        1 => Just(CursorOp::First),
        1 => Just(CursorOp::Last),
        2 => key().prop_map(CursorOp::Jump),
        2 => (key(), any::<bool>()).prop_map(|(k, i)| CursorOp::JumpLower(k, i)),
        2 => (key(), any::<bool>()).prop_map(|(k, i)| CursorOp::JumpUpper(k, i)),
        5 => Just(CursorOp::Next),
        5 => Just(CursorOp::Previous),
        2 => Just(CursorOp::Get),
        1 => val().prop_map(CursorOp::Set),
        2 => Just(CursorOp::Remove),
        3 => (key(), prop::option::of(val())).prop_map(|(k, v)| CursorOp::Elsewhere(k, v)),
    ]
}

fn bound() -> impl Strategy<Value = B> {
    prop_oneof![key().prop_map(B::In), key().prop_map(B::Ex), Just(B::Un)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (key(), val(), prop::bool::weighted(0.8)).prop_map(|(k, v, o)| Op::Set(k, v, o)),
        12 => key().prop_map(Op::Remove),
        4 => key().prop_map(Op::Get),
        3 => (key(), val(), 0u8..3).prop_map(|(k, v, d)| Op::Append(k, v, d)),
        3 => (
            key(),
            prop_oneof![Just(Expected::Absent), Just(Expected::Current), val().prop_map(Expected::Other)],
            prop::option::of(val())
        )
            .prop_map(|(k, e, d)| Op::CompareExchange(k, e, d)),
        2 => (key(), -5i64..5).prop_map(|(k, d)| Op::Increment(k, d)),
        3 => (prop::collection::vec((key(), val()), 1..5), any::<bool>()).prop_map(|(p, o)| Op::SetMulti(p, o)),
        2 => prop::collection::vec(key(), 1..6).prop_map(Op::RemoveMulti),
        1 => Just(Op::EachRead),
        1 => any::<u8>().prop_map(Op::EachWrite),
        5 => prop::collection::vec(cursor_op(), 1..16).prop_map(Op::Cursor),
        4 => (bound(), bound()).prop_map(|(a, b)| Op::Range(a, b)),
        2 => (-40i16..40, 1u8..40, val()).prop_map(|(s, n, v)| Op::Fill(s, n, v)),
        1 => Just(Op::Clear),
        1 => Just(Op::Rebuild),
        2 => any::<bool>().prop_map(Op::Sync),
        2 => any::<bool>().prop_map(Op::Reopen),
        1 => Just(Op::CopyFile),
        2 => prop::collection::vec((key(), prop::option::of(val())), 0..8).prop_map(Op::Crash),
    ]
}

/// Tuning: page size, branches, cached pages, hash buckets.
fn tuning() -> impl Strategy<Value = (usize, usize, usize, u64)> {
    (64usize..512, 3usize..8, 1usize..16, prop_oneof![Just(1u64), 2u64..40])
}

struct Run<'a> {
    spec: &'a (&'static str, FileSpec),
    cmp: KeyComparator,
    options: TreeOptions,
    step: usize,
}

impl Run<'_> {
    fn fail(&self, what: impl fmt::Display) -> TestCaseError {
        TestCaseError::fail(format!("[{} {}] step {}: {what}", self.spec.0, self.cmp.name(), self.step))
    }

    fn ok<T>(&self, r: kuradb::Result<T>, what: impl fmt::Display) -> Result<T, TestCaseError> {
        r.map_err(|e| self.fail(format!("{what}: {e}")))
    }

    fn eq<T: PartialEq + fmt::Debug>(
        &self,
        actual: T,
        expected: T,
        what: impl fmt::Display,
    ) -> Result<(), TestCaseError> {
        if actual != expected {
            return Err(self.fail(format!("{what}: got {actual:?}, expected {expected:?}")));
        }
        Ok(())
    }

    fn compare(&self, db: &TreeDbm, model: &Model, when: &str) -> Result<(), TestCaseError> {
        t::compare(db, model, self.cmp).map_err(|e| self.fail(format!("{when}: {e}")))
    }

    /// Options a reopen passes: with `alter`, a different tuning, which the
    /// file's own must override, and no comparator, for which the file's
    /// own must be taken (another one is refused).
    fn reopen_options(&self, alter: bool) -> TreeOptions {
        let mut o = self.options.clone();
        if alter {
            o.max_page_size = 8130;
            o.max_branches = 256;
            o.max_cached_pages = 3;
            o.comparator = None;
        }
        o
    }
}

/// The first of `records` beyond `key` in the direction where keys compare
/// as `beyond` to it (at `key` too if `inclusive`), or the first of all
/// without a key.
fn seek<'a>(
    mut records: impl Iterator<Item = &'a Record>,
    cmp: KeyComparator,
    key: Option<&[u8]>,
    inclusive: bool,
    beyond: std::cmp::Ordering,
) -> Option<Record> {
    records
        .find(|(k, _)| match key {
            None => true,
            Some(key) => match cmp.compare(k, key) {
                std::cmp::Ordering::Equal => inclusive,
                order => order == beyond,
            },
        })
        .cloned()
}

/// The record a cursor moving forward finds first from `key` in the
/// model's sorted records (at `key` only if `inclusive`; the first without a key).
fn seek_forward(
    sorted: &[Record],
    cmp: KeyComparator,
    key: Option<&[u8]>,
    inclusive: bool,
) -> Option<Record> {
    seek(sorted.iter(), cmp, key, inclusive, std::cmp::Ordering::Greater)
}

/// The record a cursor moving backward finds first from `key` in the
/// model's sorted records (at `key` only if `inclusive`; the last without a key).
fn seek_backward(
    sorted: &[Record],
    cmp: KeyComparator,
    key: Option<&[u8]>,
    inclusive: bool,
) -> Option<Record> {
    seek(sorted.iter().rev(), cmp, key, inclusive, std::cmp::Ordering::Less)
}

/// What a writable process_each does with a record under `seed`.
fn each_decision(seed: u8, key: &[u8], value: &[u8]) -> Action<'static> {
    let h = key.iter().fold(u32::from(seed), |h, b| h.wrapping_mul(31).wrapping_add(u32::from(*b)));
    match h % 4 {
        0 => Action::Remove,
        1 => Action::Set(std::borrow::Cow::Owned([value, &[seed]].concat())),
        _ => Action::Keep,
    }
}

fn check_sequence(
    spec: &(&'static str, FileSpec),
    cmp: KeyComparator,
    tuning: (usize, usize, usize, u64),
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("model.kt");
    let copy = dir.path().join("copy.kt");
    let (page, branches, cached, buckets) = tuning;
    let options = t::options(&spec.1, cmp, page, branches, cached, buckets);
    let mut run = Run { spec, cmp, options: options.clone(), step: 0 };
    let mut db = Some(run.ok(TreeDbm::open(&path, Access::ReadWrite, &options), "open")?);
    let mut model = Model::new();
    let mut synced = Model::new();
    let kb = |k: K| k.bytes(cmp);
    for (step, op) in ops.iter().enumerate() {
        run.step = step;
        let d = db.as_ref().expect("open");
        match op {
            Op::Set(k, v, overwrite) => {
                let (k, v) = (kb(*k), v.bytes());
                let r = if *overwrite { d.set(&k, &v) } else { d.insert(&k, &v) };
                if model.contains_key(&k) && !*overwrite {
                    run.eq(
                        r.map_err(|e| e.kind()),
                        Err(ErrorKind::Duplication),
                        format!("set {} again", show(&k)),
                    )?;
                } else {
                    run.ok(r, format!("set {}", show(&k)))?;
                    model.insert(k, v);
                }
            }
            Op::Remove(k) => {
                let k = kb(*k);
                let existed = run.ok(d.remove(&k), "remove")?;
                run.eq(existed, model.remove(&k).is_some(), format!("remove {}", show(&k)))?;
            }
            Op::Get(k) => {
                let k = kb(*k);
                let got = run.ok(d.get(&k), "get")?;
                run.eq(got.as_ref(), model.get(&k), format!("get {}", show(&k)))?;
                run.eq(run.ok(d.contains(&k), "contains")?, model.contains_key(&k), "contains")?;
            }
            Op::Append(k, v, delim) => {
                let (k, v) = (kb(*k), v.bytes());
                let delim: &[u8] = [&b""[..], b",", b"::"][*delim as usize];
                run.ok(d.append(&k, &v, delim), "append")?;
                let new = match model.get(&k) {
                    Some(old) => [old.as_slice(), delim, &v].concat(),
                    None => v,
                };
                model.insert(k, new);
            }
            Op::CompareExchange(k, expected, desired) => {
                let k = kb(*k);
                let current = model.get(&k).cloned();
                let expected = match expected {
                    Expected::Absent => None,
                    Expected::Current => current.clone(),
                    Expected::Other(v) => Some(v.bytes()),
                };
                let desired = desired.map(V::bytes);
                let done = run.ok(d.compare_exchange(&k, expected.as_deref(), desired.as_deref()), "cas")?;
                let should = expected == current;
                run.eq(done, should, format!("compare_exchange {}", show(&k)))?;
                if should {
                    match desired {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            Op::Increment(k, delta) => {
                let k = kb(*k);
                let r = d.increment(&k, *delta, 100);
                match model.get(&k).cloned() {
                    Some(v) if v.len() != 8 => run.eq(
                        r.map_err(|e| e.kind()),
                        Err(ErrorKind::InvalidArgument),
                        "increment a non-number",
                    )?,
                    old => {
                        let now = old
                            .map_or(100, |v| i64::from_be_bytes(v.try_into().expect("8 bytes")))
                            .wrapping_add(*delta);
                        run.eq(run.ok(r, "increment")?, now, format!("increment {}", show(&k)))?;
                        model.insert(k, now.to_be_bytes().to_vec());
                    }
                }
            }
            Op::SetMulti(pairs, overwrite) => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = pairs.iter().map(|(k, v)| (kb(*k), v.bytes())).collect();
                let refs: Vec<(&[u8], &[u8])> =
                    pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
                let r = if *overwrite { d.set_multi(&refs) } else { d.insert_multi(&refs) };
                if !*overwrite && pairs.iter().any(|(k, _)| model.contains_key(k)) {
                    run.eq(
                        r.map_err(|e| e.kind()),
                        Err(ErrorKind::Duplication),
                        "set_multi onto existing keys",
                    )?;
                } else {
                    run.ok(r, "set_multi")?;
                    model.extend(pairs);
                }
            }
            Op::RemoveMulti(keys) => {
                let keys: Vec<Vec<u8>> = keys.iter().map(|k| kb(*k)).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let removed = run.ok(d.remove_multi(&refs), "remove_multi")?;
                let expected = keys.iter().filter(|k| model.remove(*k).is_some()).count();
                run.eq(removed, expected, "remove_multi count")?;
            }
            Op::EachRead => {
                let all = t::each(d).map_err(|e| run.fail(e))?;
                t::diff("process_each", &all, &t::sorted(&model, cmp)).map_err(|e| run.fail(e))?;
                // (A read-only process_each asking for a change loses records:
                // see a_refused_read_only_process_each_keeps_every_record.)
            }
            Op::EachWrite(seed) => {
                let mut seen = Vec::new();
                run.ok(
                    d.process_each(Access::ReadWrite, &mut |k, v| {
                        seen.push((k.to_vec(), v.to_vec()));
                        each_decision(*seed, k, v)
                    }),
                    "process_each writable",
                )?;
                t::diff("writable process_each visits", &seen, &t::sorted(&model, cmp))
                    .map_err(|e| run.fail(e))?;
                model = model
                    .into_iter()
                    .filter_map(|(k, v)| match each_decision(*seed, &k, &v) {
                        Action::Keep => Some((k, v)),
                        Action::Remove => None,
                        Action::Set(n) => Some((k, n.into_owned())),
                    })
                    .collect();
            }
            Op::Cursor(moves) => cursor_walk(&run, d, &mut model, moves)?,
            Op::Range(lo, hi) => {
                let bound = |b: &B| match b {
                    B::In(k) => Bound::Included(kb(*k)),
                    B::Ex(k) => Bound::Excluded(kb(*k)),
                    B::Un => Bound::Unbounded,
                };
                let (lo, hi) = (bound(lo), bound(hi));
                let got: Vec<Record> = run
                    .ok(d.range((lo.clone(), hi.clone())), "range")?
                    .collect::<kuradb::Result<_>>()
                    .map_err(|e| run.fail(format!("range scan: {e}")))?;
                let want: Vec<Record> = t::sorted(&model, cmp)
                    .into_iter()
                    .filter(|(k, _)| t::in_bounds(cmp, k, &lo, &hi))
                    .collect();
                t::diff(&format!("range {lo:?}..{hi:?}"), &got, &want).map_err(|e| run.fail(e))?;
            }
            Op::Fill(start, n, v) => {
                for i in 0..*n as i16 {
                    let k = kb(K(start.wrapping_add(i), (i % 5) as u8));
                    let v = [v.bytes(), vec![i as u8]].concat();
                    run.ok(d.set(&k, &v), "fill")?;
                    model.insert(k, v);
                }
            }
            Op::Clear => {
                run.ok(d.clear(), "clear")?;
                model.clear();
                // The clear is durable at once.
                synced.clear();
            }
            Op::Rebuild => {
                run.ok(d.rebuild(), "rebuild")?;
                run.compare(d, &model, "after rebuild")?;
                // The rebuilt file is closed cleanly: it is the synchronized state.
                synced = model.clone();
            }
            Op::Sync(hard) => {
                run.ok(
                    d.synchronize(if *hard { Durability::Hard } else { Durability::Soft }),
                    "synchronize",
                )?;
                if *hard {
                    synced = model.clone();
                }
            }
            Op::Reopen(alter) => {
                run.ok(db.take().expect("open").close(), "close")?;
                let r = TreeDbm::open(&path, Access::ReadWrite, &run.reopen_options(*alter));
                let d = db.insert(run.ok(r, "reopen")?);
                run.compare(d, &model, "after reopen")?;
                synced = model.clone();
            }
            Op::CopyFile => {
                let _ = std::fs::remove_file(&copy);
                run.ok(d.copy_file_data(&copy, Durability::Soft), "copy_file_data")?;
                let c = run
                    .ok(TreeDbm::open(&copy, Access::ReadOnly, &run.reopen_options(true)), "open the copy")?;
                run.compare(&c, &model, "the copy")?;
                run.ok(c.close(), "close the copy")?;
            }
            Op::Crash(writes) => {
                run.ok(d.synchronize(Durability::Hard), "hard synchronize before the crash")?;
                synced = model.clone();
                std::fs::copy(&path, &copy).map_err(|e| run.fail(format!("copy the open file: {e}")))?;
                for (k, v) in writes {
                    let k = kb(*k);
                    match v {
                        Some(v) => run.ok(d.set(&k, &v.bytes()), "set after the copy")?,
                        None => drop(run.ok(d.remove(&k), "remove after the copy")?),
                    }
                }
                run.ok(db.take().expect("open").close(), "close before the crash")?;
                std::fs::rename(&copy, &path).map_err(|e| run.fail(format!("replace the file: {e}")))?;
                let d = db.insert(
                    run.ok(TreeDbm::open(&path, Access::ReadWrite, &run.options), "open after the crash")?,
                );
                model = synced.clone();
                run.compare(d, &model, "after the crash")?;
            }
        }
        let d = db.as_ref().expect("open");
        run.eq(run.ok(d.count(), "count")?, model.len() as u64, format!("count after {op:?}"))?;
    }
    let d = db.take().expect("open");
    run.compare(&d, &model, "at the end")?;
    run.ok(d.close(), "close")?;
    // Finally a crash-free reopen sees the same, and so does a restore of a
    // crash copy.
    let d = run.ok(TreeDbm::open(&path, Access::ReadOnly, &run.reopen_options(true)), "reopen read-only")?;
    run.compare(&d, &model, "reopened read-only")?;
    run.eq(d.set(b"1", b"1").map_err(|e| e.kind()), Err(ErrorKind::ReadOnly), "set read-only")?;
    run.ok(d.close(), "close")
}

/// Replays cursor moves against the model: the position is a key, as the
/// cursor's own is; a get moves it to the first record at or after it.
fn cursor_walk(
    run: &Run<'_>,
    db: &TreeDbm,
    model: &mut Model,
    moves: &[CursorOp],
) -> Result<(), TestCaseError> {
    let cmp = run.cmp;
    let mut c = db.cursor();
    let mut pos: Option<Vec<u8>> = None;
    for (i, m) in moves.iter().enumerate() {
        let sorted = t::sorted(model, cmp);
        let what = format!("cursor move {i} {m:?} (at {})", show_opt(pos.as_deref()));
        let moved = |r: Option<Record>| r.map(|(k, _)| k);
        match m {
            CursorOp::First => {
                run.ok(c.first(), &what)?;
                pos = moved(seek_forward(&sorted, cmp, None, true));
            }
            CursorOp::Last => {
                run.ok(c.last(), &what)?;
                pos = moved(seek_backward(&sorted, cmp, None, true));
            }
            CursorOp::Jump(k) => {
                run.ok(c.jump(&k.bytes(cmp)), &what)?;
                pos = moved(seek_forward(&sorted, cmp, Some(&k.bytes(cmp)), true));
            }
            CursorOp::JumpLower(k, inc) => {
                run.ok(
                    c.jump_lower(&k.bytes(cmp), if *inc { Edge::Inclusive } else { Edge::Exclusive }),
                    &what,
                )?;
                pos = moved(seek_backward(&sorted, cmp, Some(&k.bytes(cmp)), *inc));
            }
            CursorOp::JumpUpper(k, inc) => {
                run.ok(
                    c.jump_upper(&k.bytes(cmp), if *inc { Edge::Inclusive } else { Edge::Exclusive }),
                    &what,
                )?;
                pos = moved(seek_forward(&sorted, cmp, Some(&k.bytes(cmp)), *inc));
            }
            CursorOp::Next => {
                run.ok(c.next(), &what)?;
                pos = pos.and_then(|p| moved(seek_forward(&sorted, cmp, Some(&p), false)));
            }
            CursorOp::Previous => {
                run.ok(c.previous(), &what)?;
                pos = pos.and_then(|p| moved(seek_backward(&sorted, cmp, Some(&p), false)));
            }
            CursorOp::Get => {
                let got = run.ok(c.get(), &what)?;
                let want = pos.as_ref().and_then(|p| seek_forward(&sorted, cmp, Some(p), true));
                run.eq(&got, &want, &what)?;
                pos = moved(want);
            }
            CursorOp::Set(v) => {
                let r = c.set(&v.bytes());
                match pos.as_ref().and_then(|p| seek_forward(&sorted, cmp, Some(p), true)) {
                    Some((k, _)) => {
                        run.ok(r, &what)?;
                        model.insert(k.clone(), v.bytes());
                        pos = Some(k);
                    }
                    None => {
                        run.eq(r.map_err(|e| e.kind()), Err(ErrorKind::NotFound), &what)?;
                        pos = None;
                    }
                }
            }
            CursorOp::Elsewhere(k, v) => {
                let key = k.bytes(cmp);
                match v {
                    Some(v) => {
                        run.ok(db.set(&key, &v.bytes()), &what)?;
                        model.insert(key, v.bytes());
                    }
                    None => {
                        run.ok(db.remove(&key), &what)?;
                        model.remove(&key);
                    }
                }
            }
            CursorOp::Remove => {
                let r = c.remove();
                match pos.as_ref().and_then(|p| seek_forward(&sorted, cmp, Some(p), true)) {
                    Some((k, _)) => {
                        run.ok(r, &what)?;
                        model.remove(&k);
                        pos = Some(k);
                    }
                    None => {
                        run.eq(r.map_err(|e| e.kind()), Err(ErrorKind::NotFound), &what)?;
                        pos = None;
                    }
                }
            }
        }
        // Where the cursor is now, as its get shows it (which may move it
        // from a removed key to the next record, as the model's does).
        if i % 3 == 2 {
            let got = run.ok(c.get(), format!("get after {what}"))?;
            let want = pos.as_ref().and_then(|p| seek_forward(&t::sorted(model, cmp), cmp, Some(p), true));
            run.eq(&got, &want, format!("get after {what}"))?;
            pos = want.map(|(k, _)| k);
        }
    }
    Ok(())
}

fn check(names: &[&str], cases: u32) {
    let specs: Vec<_> = common::hash::specs().into_iter().filter(|(n, _)| names.contains(n)).collect();
    assert_eq!(specs.len(), names.len(), "the specs exist");
    for spec in &specs {
        for &cmp in KeyComparator::all() {
            let config =
                Config { cases, failure_persistence: None, max_shrink_iters: 2000, ..Config::default() };
            let mut runner = TestRunner::new(config);
            let strategy = (tuning(), prop::collection::vec(op(), 1..100));
            if let Err(e) = runner.run(&strategy, |(tuning, ops)| check_sequence(spec, cmp, tuning, &ops)) {
                panic!("[{} {}] {e}", spec.0, cmp.name());
            }
        }
    }
}

/// Cases per spec and comparator; `PROPTEST_CASES` overrides it.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(default)
}

#[test]
fn tree_model_on_mmap() {
    check(&["mmap-para"], cases(30));
}

#[test]
fn tree_model_on_positional_file() {
    check(&["pos-para"], cases(30));
}

#[test]
fn tree_model_on_block_io_with_page_cache() {
    check(&["pos-atom-block512-pagecache"], cases(20));
}

/// The model check itself catches a wrong tree: a record written behind the
/// model's back is found by the comparison.
#[test]
fn the_comparison_catches_a_difference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = &common::hash::specs()[0].1;
    let o = t::options(spec, KeyComparator::Decimal, 64, 3, 1, 3);
    let db = TreeDbm::open(dir.path().join("x.kt"), Access::ReadWrite, &o).expect("open");
    let mut model = Model::new();
    for i in 0..50 {
        let k = format!("{i}").into_bytes();
        db.set(&k, b"v").expect("set");
        model.insert(k, b"v".to_vec());
    }
    t::compare(&db, &model, KeyComparator::Decimal).expect("equal");
    assert!(t::compare(&db, &model, KeyComparator::Lexical).is_err(), "the order is checked");
    db.set(b"7", b"w").expect("set");
    assert!(t::compare(&db, &model, KeyComparator::Decimal).is_err(), "a value is checked");
}

/// A read-only process_each whose processor asks to remove a record fails,
/// and must leave every record in place.
#[test]
fn a_refused_read_only_process_each_keeps_every_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db =
        TreeDbm::open(dir.path().join("x.kt"), Access::ReadWrite, &TreeOptions::default()).expect("open");
    for k in [b"a", b"b", b"c"] {
        db.set(k, b"v").expect("set");
    }
    let r = db.process_each(Access::ReadOnly, &mut |_, _| Action::Remove);
    assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::InvalidArgument));
    assert_eq!(db.count().expect("count"), 3);
    let all: Vec<Record> =
        db.range::<&[u8]>(..).expect("range").collect::<kuradb::Result<_>>().expect("scan");
    assert_eq!(all.len(), 3, "the scan finds {all:?}");
}

fn tiny(dir: &std::path::Path) -> TreeDbm {
    let spec = &common::hash::specs()[0].1;
    TreeDbm::open(dir.join("x.kt"), Access::ReadWrite, &t::options(spec, KeyComparator::Lexical, 64, 3, 1, 7))
        .expect("open")
}

/// Records larger than a page each take a leaf; removing some leaves empty
/// leaves that cannot merge with their large neighbours, and then there are
/// more leaves than records (plus two), which the walks take for a loop.
#[test]
fn leaves_of_records_larger_than_a_page_do_not_look_like_a_loop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = tiny(dir.path());
    let mut model = Model::new();
    for i in 0..24 {
        let k = format!("{i:02}").into_bytes();
        db.set(&k, &[7; 60]).expect("set");
        model.insert(k, vec![7; 60]);
    }
    for k in [b"05", b"10", b"15", b"20"] {
        db.remove(k).expect("remove");
        model.remove(&k[..]);
    }
    let leaves = db.inspect().expect("inspect");
    t::compare(&db, &model, KeyComparator::Lexical).unwrap_or_else(|e| panic!("{e}; {leaves:?}"));
}

/// A writable process_each removing most records leaves the leaves as they
/// were; the walk that does it, and every later one, takes them for a loop.
#[test]
fn removing_most_records_in_process_each_does_not_look_like_a_loop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = tiny(dir.path());
    let mut model = Model::new();
    for i in 0..40 {
        let k = format!("{i:02}").into_bytes();
        db.set(&k, &[1; 10]).expect("set");
        if i % 10 == 0 {
            model.insert(k, vec![1; 10]);
        }
    }
    db.process_each(Access::ReadWrite, &mut |k, _| {
        if k.ends_with(b"0") {
            Action::Keep
        } else {
            Action::Remove
        }
    })
    .expect("process_each removes");
    t::compare(&db, &model, KeyComparator::Lexical).expect("four records remain");
}
