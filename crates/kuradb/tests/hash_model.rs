//! HashDbm behaves like a `BTreeMap` of byte strings, whatever its file and
//! tuning, across reopening, rebuilding and crashes.
//!
//! Random sequences of every `Dbm` operation (single and multi-key updates,
//! rekey, read-only and writable walks, cursor walks, clear, rebuild,
//! synchronize, close-and-reopen and a simulated crash after a hard
//! synchronization) run against a database and a `BTreeMap` side by side. Each
//! answer must be the model's, and the whole content is compared after every
//! step that rewrites or reopens the file. Keys come from a tiny alphabet and
//! the tables have 1 to 7 buckets, so chains are long; values run from 0 to
//! 300 bytes, so updates both fit their record and do not.
//!
//! One `#[test]` per family of file specs runs a proptest runner per spec; each
//! case draws its own tuning (update mode, bucket cache, record checksums,
//! alignment, offset width, buckets), so a failure names the spec and prints
//! the tuning with the minimised sequence.

mod common;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use common::hash::{self as h, show, show_opt, Model};
use kuradb::dbm::hash::{HashDbm, HashOptions, RebuildParams, RestoreMode, UpdateMode};
use kuradb::dbm::{Action, Dbm, INCREMENT_UNCHANGED};
use kuradb::file::FileSpec;
use kuradb::{ErrorKind, Result};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// Cases per spec: modest, so the whole file runs in well under a minute.
/// `PROPTEST_CASES` in the environment overrides it, for a longer hunt.
const CASES: u32 = 24;

/// A value by its length and the byte its pattern starts from.
#[derive(Clone, Copy)]
struct Val {
    len: u16,
    seed: u8,
}

impl Val {
    fn bytes(self) -> Vec<u8> {
        (0..self.len).map(|i| self.seed.wrapping_add((i as u8).wrapping_mul(7))).collect()
    }
}

impl fmt::Debug for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}x{}", self.len, self.seed)
    }
}

/// What a compare-exchange expects.
#[derive(Clone, Debug)]
enum Expect {
    /// The key's current value in the model (so the exchange happens).
    Current,
    Absent,
    Value(Val),
}

#[derive(Clone, Debug)]
enum Op {
    Set(String, Val, bool),
    Get(String),
    Remove(String),
    Append(String, Val, String),
    CompareExchange(String, Expect, Option<Val>),
    CompareExchangeMulti(Vec<(String, Expect)>, Vec<(String, Option<Val>)>),
    Increment(String, i64, i64),
    SetMulti(Vec<(String, Val)>, bool),
    GetMulti(Vec<String>),
    RemoveMulti(Vec<String>),
    Rekey {
        old: String,
        new: String,
        overwrite: bool,
        copying: bool,
    },
    /// A read-only `process_each` that must see exactly the model.
    Walk,
    /// A writable `process_each` that keeps, removes or rewrites each record
    /// as `decide(seed, key)` says.
    WalkAndUpdate(u64),
    /// A cursor walk from `first` that keeps, removes or rewrites each record
    /// as `decide(seed, key)` says and must visit every key once.
    CursorWalk(u64),
    Count,
    Clear,
    Rebuild,
    /// A rebuild with new tuning; `None` keeps the file's.
    RebuildWith(RebuildParams),
    /// Copy the open file and open the copy read-only: it must hold the model.
    CopyFileData(bool),
    Synchronize(bool),
    /// Close and open again, first peeking read-only if asked, with tuning
    /// options that differ from the file's (which must be ignored) if asked.
    Reopen {
        peek: bool,
        other_tuning: bool,
    },
    /// Hard-synchronize, copy the open file, close, put the copy in its place
    /// and open it: the automatic restore must give back the model.
    Crash,
}

fn key() -> impl Strategy<Value = String> {
    "[a-d]{0,2}"
}

fn val() -> impl Strategy<Value = Val> {
    let len = prop_oneof![3 => 0u16..=300, 1 => 0u16..=12, 1 => Just(8u16)];
    (len, any::<u8>()).prop_map(|(len, seed)| Val { len, seed })
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![3 => Just(Expect::Current), 1 => Just(Expect::Absent), 1 => val().prop_map(Expect::Value)]
}

fn op() -> impl Strategy<Value = Op> {
    let keys = || proptest::collection::vec(key(), 1..5);
    prop_oneof![
        20 => (key(), val(), prop::bool::weighted(0.8)).prop_map(|(k, v, o)| Op::Set(k, v, o)),
        4 => key().prop_map(Op::Get),
        4 => key().prop_map(Op::Remove),
        2 => (key(), val(), "[,;]{0,2}").prop_map(|(k, v, d)| Op::Append(k, v, d)),
        2 => (key(), expect(), proptest::option::weighted(0.8, val()))
            .prop_map(|(k, e, d)| Op::CompareExchange(k, e, d)),
        1 => (
            proptest::collection::vec((key(), expect()), 0..3),
            proptest::collection::vec((key(), proptest::option::weighted(0.7, val())), 1..3)
        )
            .prop_map(|(e, d)| Op::CompareExchangeMulti(e, d)),
        2 => (key(), prop_oneof![-3i64..=3, Just(INCREMENT_UNCHANGED)], -5i64..=5)
            .prop_map(|(k, d, i)| Op::Increment(k, d, i)),
        2 => (proptest::collection::vec((key(), val()), 1..5), any::<bool>())
            .prop_map(|(p, o)| Op::SetMulti(p, o)),
        1 => keys().prop_map(Op::GetMulti),
        1 => keys().prop_map(Op::RemoveMulti),
        2 => (key(), key(), any::<bool>(), any::<bool>())
            .prop_map(|(old, new, overwrite, copying)| Op::Rekey { old, new, overwrite, copying }),
        1 => Just(Op::Walk),
        1 => any::<u64>().prop_map(Op::WalkAndUpdate),
        1 => any::<u64>().prop_map(Op::CursorWalk),
        1 => Just(Op::Count),
        1 => Just(Op::Clear),
        1 => Just(Op::Rebuild),
        1 => rebuild_params().prop_map(Op::RebuildWith),
        1 => any::<bool>().prop_map(Op::CopyFileData),
        2 => any::<bool>().prop_map(Op::Synchronize),
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
    )
        .prop_map(|(num_buckets, align_pow, offset_width, update_mode)| RebuildParams {
            num_buckets,
            align_pow,
            offset_width,
            update_mode,
        })
}

/// The tuning of a case's database.
#[derive(Clone, Debug)]
struct Tuning {
    update_mode: UpdateMode,
    cache_buckets: bool,
    record_crc: bool,
    align_pow: u8,
    offset_width: u8,
    num_buckets: u64,
}

fn tuning(align_pows: std::ops::RangeInclusive<u8>) -> impl Strategy<Value = Tuning> {
    (any::<bool>(), any::<bool>(), any::<bool>(), align_pows, 3u8..=6, 1u64..=7).prop_map(
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
        HashOptions {
            file: file.clone(),
            num_buckets: self.num_buckets,
            align_pow: self.align_pow,
            offset_width: self.offset_width,
            update_mode: self.update_mode,
            cache_buckets: self.cache_buckets,
            record_crc: self.record_crc,
            ..HashOptions::default()
        }
    }
}

/// What a writable walk does with a record: keep (0), remove (1) or rewrite (2).
fn decide(seed: u64, key: &[u8]) -> (u8, Val) {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    for &b in key {
        x = (x ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    x ^= x >> 29;
    ((x % 3) as u8, Val { len: ((x >> 8) % 301) as u16, seed: (x >> 24) as u8 })
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

    /// The answer must be an error of `kind`.
    fn expect_err<T: fmt::Debug>(
        &self,
        result: Result<T>,
        kind: ErrorKind,
    ) -> std::result::Result<(), TestCaseError> {
        match result {
            Err(e) if e.kind() == kind => Ok(()),
            other => Err(self.fail(format!("expected a {kind} error, got {other:?}"))),
        }
    }

    fn compare(&self, db: &dyn Dbm, model: &Model, when: &str) -> std::result::Result<(), TestCaseError> {
        h::compare(db, model).map_err(|e| self.fail(format!("{when}: {e}")))?;
        if !db.is_healthy() {
            return Err(self.fail(format!("{when}: the database says it is not healthy")));
        }
        Ok(())
    }
}

fn b(s: &str) -> &[u8] {
    s.as_bytes()
}

fn model_set(model: &mut Model, key: &str, value: Vec<u8>) {
    model.insert(key.as_bytes().to_vec(), value);
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
    let open = |o: &HashOptions, writable: bool| HashDbm::open(path, writable, o);
    let mut db = open(&options, true)
        .map_err(|e| TestCaseError::fail(format!("[{name}] {tuning:?}: create {}: {e}", path.display())))?;
    let mut model = Model::new();
    for (step, op) in ops.iter().enumerate() {
        let ctx = Ctx { spec: name, tuning, step, steps: ops.len(), op };
        match op {
            Op::Set(k, v, overwrite) => {
                let result = db.set(b(k), &v.bytes(), *overwrite);
                if model.contains_key(b(k)) && !overwrite {
                    ctx.expect_err(result, ErrorKind::Duplication)?;
                } else {
                    ctx.ok(result, "set")?;
                    model_set(&mut model, k, v.bytes());
                }
            }
            Op::Get(k) => {
                let got = ctx.ok(db.get(b(k)), "get")?;
                if got.as_ref() != model.get(b(k)) {
                    return Err(ctx.fail(format!(
                        "got {}, expected {}",
                        show_opt(got.as_deref()),
                        show_opt(model.get(b(k)).map(Vec::as_slice))
                    )));
                }
                let contains = ctx.ok(db.contains(b(k)), "contains")?;
                if contains != model.contains_key(b(k)) {
                    return Err(ctx.fail(format!("contains answered {contains}")));
                }
            }
            Op::Remove(k) => {
                let existed = ctx.ok(db.remove(b(k)), "remove")?;
                if existed != model.remove(b(k)).is_some() {
                    return Err(ctx.fail(format!("remove answered existed = {existed}")));
                }
            }
            Op::Append(k, v, delim) => {
                ctx.ok(db.append(b(k), &v.bytes(), b(delim)), "append")?;
                let value = match model.get(b(k)) {
                    Some(old) => [old.as_slice(), b(delim), &v.bytes()].concat(),
                    None => v.bytes(),
                };
                model_set(&mut model, k, value);
            }
            Op::CompareExchange(k, e, d) => {
                let current = model.get(b(k)).cloned();
                let expected = match e {
                    Expect::Current => current.clone(),
                    Expect::Absent => None,
                    Expect::Value(v) => Some(v.bytes()),
                };
                let desired = d.map(Val::bytes);
                let done = ctx.ok(
                    db.compare_exchange(b(k), expected.as_deref(), desired.as_deref()),
                    "compare_exchange",
                )?;
                let should = expected == current;
                if done != should {
                    return Err(
                        ctx.fail(format!("answered {done}, current {}", show_opt(current.as_deref())))
                    );
                }
                if should {
                    match desired {
                        Some(v) => model_set(&mut model, k, v),
                        None => {
                            model.remove(b(k));
                        }
                    }
                }
            }
            Op::CompareExchangeMulti(expected, desired) => {
                let expected: Vec<(&[u8], Option<Vec<u8>>)> = expected
                    .iter()
                    .map(|(k, e)| {
                        let v = match e {
                            Expect::Current => model.get(b(k)).cloned(),
                            Expect::Absent => None,
                            Expect::Value(v) => Some(v.bytes()),
                        };
                        (b(k), v)
                    })
                    .collect();
                let desired: Vec<(&[u8], Option<Vec<u8>>)> =
                    desired.iter().map(|(k, d)| (b(k), d.map(Val::bytes))).collect();
                let exp_refs: Vec<(&[u8], Option<&[u8]>)> =
                    expected.iter().map(|(k, v)| (*k, v.as_deref())).collect();
                let des_refs: Vec<(&[u8], Option<&[u8]>)> =
                    desired.iter().map(|(k, v)| (*k, v.as_deref())).collect();
                let done =
                    ctx.ok(db.compare_exchange_multi(&exp_refs, &des_refs), "compare_exchange_multi")?;
                let should = expected.iter().all(|(k, v)| model.get(*k) == v.as_ref());
                if done != should {
                    return Err(ctx.fail(format!("answered {done}")));
                }
                if should {
                    for (k, v) in desired {
                        match v {
                            Some(v) => model.insert(k.to_vec(), v),
                            None => model.remove(k),
                        };
                    }
                }
            }
            Op::Increment(k, delta, initial) => {
                let result = db.increment(b(k), *delta, *initial);
                let current = match model.get(b(k)) {
                    None => Some(*initial),
                    Some(v) => <[u8; 8]>::try_from(v.as_slice()).ok().map(i64::from_be_bytes),
                };
                match current {
                    None => ctx.expect_err(result, ErrorKind::InvalidArgument)?,
                    Some(current) => {
                        let got = ctx.ok(result, "increment")?;
                        let want = if *delta == INCREMENT_UNCHANGED {
                            current
                        } else {
                            current.wrapping_add(*delta)
                        };
                        if got != want {
                            return Err(ctx.fail(format!("answered {got}, expected {want}")));
                        }
                        if *delta != INCREMENT_UNCHANGED {
                            model_set(&mut model, k, want.to_be_bytes().to_vec());
                        }
                    }
                }
            }
            Op::SetMulti(pairs, overwrite) => {
                let values: Vec<Vec<u8>> = pairs.iter().map(|(_, v)| v.bytes()).collect();
                let refs: Vec<(&[u8], &[u8])> =
                    pairs.iter().zip(&values).map(|((k, _), v)| (b(k), v.as_slice())).collect();
                let result = db.set_multi(&refs, *overwrite);
                if !overwrite && pairs.iter().any(|(k, _)| model.contains_key(b(k))) {
                    ctx.expect_err(result, ErrorKind::Duplication)?;
                } else {
                    ctx.ok(result, "set_multi")?;
                    for ((k, _), v) in pairs.iter().zip(values) {
                        model_set(&mut model, k, v);
                    }
                }
            }
            Op::GetMulti(keys) => {
                let refs: Vec<&[u8]> = keys.iter().map(|k| b(k)).collect();
                let got = ctx.ok(db.get_multi(&refs), "get_multi")?;
                let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(b(k)).cloned()).collect();
                if got != want {
                    return Err(ctx.fail("the values differ from the model's"));
                }
            }
            Op::RemoveMulti(keys) => {
                let refs: Vec<&[u8]> = keys.iter().map(|k| b(k)).collect();
                let removed = ctx.ok(db.remove_multi(&refs), "remove_multi")?;
                let want = keys.iter().filter(|k| model.remove(b(k)).is_some()).count();
                if removed != want {
                    return Err(ctx.fail(format!("answered {removed} removed, expected {want}")));
                }
            }
            Op::Rekey { old, new, overwrite, copying } => {
                let result = db.rekey(b(old), b(new), *overwrite, *copying);
                match model.get(b(old)).cloned() {
                    None => ctx.expect_err(result, ErrorKind::NotFound)?,
                    Some(_) if model.contains_key(b(new)) && !overwrite && old != new => {
                        ctx.expect_err(result, ErrorKind::Duplication)?
                    }
                    Some(value) => {
                        ctx.ok(result, "rekey")?;
                        if !copying {
                            model.remove(b(old));
                        }
                        model_set(&mut model, new, value);
                    }
                }
            }
            Op::Walk => {
                let walked = h::records(&db).map_err(|e| ctx.fail(e))?;
                if walked != model {
                    return Err(ctx.fail("the walk's records differ from the model's"));
                }
            }
            Op::WalkAndUpdate(seed) => {
                let mut visited = Model::new();
                let mut replaced = Vec::new();
                ctx.ok(
                    db.process_each(true, &mut |key, value| {
                        visited.insert(key.to_vec(), value.to_vec());
                        match decide(*seed, key) {
                            (0, _) => Action::Keep,
                            (1, _) => Action::Remove,
                            (_, v) => {
                                replaced.push(v);
                                Action::Set(Cow::Owned(v.bytes()))
                            }
                        }
                    }),
                    "writable process_each",
                )?;
                if visited != model {
                    return Err(ctx.fail("the writable walk was shown records other than the model's"));
                }
                for key in visited.keys() {
                    match decide(*seed, key) {
                        (0, _) => {}
                        (1, _) => {
                            model.remove(key);
                        }
                        (_, v) => {
                            model.insert(key.clone(), v.bytes());
                        }
                    }
                }
                ctx.compare(&db, &model, "after the writable walk")?;
            }
            Op::CursorWalk(seed) => {
                let before = model.clone();
                let mut visited = Vec::new();
                {
                    let mut cursor = ctx.ok(db.iter(), "iter")?;
                    ctx.ok(cursor.first(), "cursor first")?;
                    while let Some((key, value)) = ctx.ok(cursor.get(), "cursor get")? {
                        if visited.contains(&key) {
                            return Err(ctx.fail(format!("the cursor visited {} twice", show(&key))));
                        }
                        if model.get(&key) != Some(&value) {
                            return Err(ctx.fail(format!(
                                "the cursor shows {} = {}, the model has {}",
                                show(&key),
                                show(&value),
                                show_opt(model.get(&key).map(Vec::as_slice))
                            )));
                        }
                        match decide(*seed, &key) {
                            (0, _) => ctx.ok(cursor.next(), "cursor next")?,
                            (1, _) => {
                                ctx.ok(cursor.remove(), "cursor remove")?;
                                model.remove(&key);
                            }
                            (_, v) => {
                                ctx.ok(cursor.set(&v.bytes()), "cursor set")?;
                                model.insert(key.clone(), v.bytes());
                                ctx.ok(cursor.next(), "cursor next")?;
                            }
                        }
                        visited.push(key);
                        if visited.len() > before.len() {
                            return Err(ctx.fail("the cursor visited more records than there are"));
                        }
                    }
                }
                visited.sort();
                if !visited.iter().eq(before.keys()) {
                    return Err(ctx.fail(format!(
                        "the cursor visited {} of {} keys, or others",
                        visited.len(),
                        before.len()
                    )));
                }
                ctx.compare(&db, &model, "after the cursor walk")?;
            }
            Op::Count => {
                let count = ctx.ok(db.count(), "count")?;
                if count != model.len() as u64 {
                    return Err(ctx.fail(format!("count {count}, expected {}", model.len())));
                }
            }
            Op::Clear => {
                ctx.ok(db.clear(), "clear")?;
                model.clear();
                ctx.compare(&db, &model, "after clear")?;
            }
            Op::Rebuild => {
                ctx.ok(db.rebuild(), "rebuild")?;
                ctx.compare(&db, &model, "after rebuild")?;
            }
            Op::RebuildWith(params) => {
                ctx.ok(db.rebuild_with(params), "rebuild with new tuning")?;
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
                ];
                for (name, want) in wanted {
                    if want.is_some() && figures.get(name) != want.as_ref() {
                        return Err(ctx.fail(format!("{name} is {:?} after the rebuild", figures.get(name))));
                    }
                }
            }
            Op::CopyFileData(hard) => {
                let copy = path.with_extension("copy");
                ctx.ok(db.copy_file_data(&copy, *hard), "copy_file_data")?;
                let reader = ctx.ok(
                    HashDbm::open(
                        &copy,
                        false,
                        &HashOptions { restore: RestoreMode::Refuse, ..options.clone() },
                    ),
                    "open the copy",
                )?;
                ctx.compare(&reader, &model, "in the copy")?;
                ctx.ok(reader.close(), "close the copy")?;
                // Written to, the copy must still hold the model: its header is its own.
                let writer = ctx.ok(
                    HashDbm::open(
                        &copy,
                        true,
                        &HashOptions { restore: RestoreMode::Refuse, ..options.clone() },
                    ),
                    "open the copy for writing",
                )?;
                ctx.compare(&writer, &model, "in the copy opened for writing")?;
                ctx.ok(writer.close(), "close the copy")?;
                let _ = std::fs::remove_file(&copy);
                ctx.compare(&db, &model, "after copying the file")?;
            }
            Op::Synchronize(hard) => ctx.ok(db.synchronize(*hard), "synchronize")?,
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
                }
                if *peek {
                    let reader = ctx.ok(open(&o, false), "open read-only")?;
                    ctx.compare(&reader, &model, "opened read-only")?;
                    ctx.ok(reader.close(), "close the reader")?;
                }
                db = ctx.ok(open(&o, true), "reopen")?;
                ctx.compare(&db, &model, "after reopening")?;
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
    let end = Ctx { spec: name, tuning, step: ops.len(), steps: ops.len(), op: &Op::Count };
    end.compare(&db, &model, "at the end")?;
    end.ok(db.close(), "close at the end")?;
    let reader = end.ok(HashDbm::open(path, false, &options), "open read-only at the end")?;
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
    Tuning { update_mode, cache_buckets: false, record_crc: false, align_pow, offset_width, num_buckets }
}

fn v(len: u16) -> Val {
    Val { len, seed: 0 }
}

fn s(key: &str) -> String {
    key.to_string()
}

/// Relinking a record in the middle of a chain keeps the chain readable when
/// records are aligned (align_pow > 0): a later record's update must not cut
/// off the records before it.
#[test]
fn relinking_keeps_chains_of_aligned_records() {
    let ops = [Op::SetMulti(vec![(s("c"), v(0)), (s(""), v(0))], false), Op::Set(s("c"), v(0), true)];
    replay("mmap-atom", tuned(UpdateMode::Appending, 1, 3, 1), &ops);
}

/// A value synchronized hard survives a crash when its record went to space
/// freed earlier in the same epoch, below an older version of the key.
#[test]
fn a_synchronized_value_in_reused_space_survives_a_crash() {
    let ops = [
        Op::Set(s("b"), v(100), true),
        Op::Set(s("a"), v(10), true),
        Op::Remove(s("b")),
        Op::Set(s("a"), v(100), true),
        Op::Crash,
    ];
    replay("mmap-para", tuned(UpdateMode::InPlace, 3, 5, 1), &ops);
}

/// A removal synchronized hard survives a crash when another record reused
/// the removed record's space in the same epoch: the key does not come back.
#[test]
fn a_synchronized_removal_survives_a_crash_after_its_space_is_reused() {
    let ops = [
        Op::Set(s("a"), v(2), true),
        Op::Set(s("a"), v(10), true),
        Op::Remove(s("a")),
        Op::Set(s("b"), v(8), true),
        Op::Crash,
    ];
    replay("mmap-para", tuned(UpdateMode::InPlace, 0, 3, 1), &ops);
}

/// A restore keeps every record after one whose padding is exactly 128 bytes
/// before encoding (a 365-byte value under a 1-byte key, 256-byte alignment):
/// the record's header must give its full size, or the scan loses its step.
#[test]
fn a_record_padded_by_128_bytes_does_not_hide_later_ones_from_a_restore() {
    let ops = [Op::Set(s("a"), v(365), true), Op::Set(s("b"), v(1), true), Op::Crash];
    replay("mmap-para", tuned(UpdateMode::Appending, 8, 5, 7), &ops);
}

/// A removal synchronized hard survives a crash when another record reused
/// the removed record's space, also when a version of the key from an
/// earlier epoch is still on disk.
#[test]
fn a_synchronized_removal_survives_a_crash_with_an_older_epoch_version_on_disk() {
    let ops = [
        Op::Set(s("a"), v(10), true),
        Op::Synchronize(true),
        Op::Set(s("a"), v(100), true),
        Op::Remove(s("a")),
        Op::Set(s("b"), v(99), true),
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
    let options = HashOptions { offset_width: 3, align_pow: 0, num_buckets: 1021, ..HashOptions::default() };
    let db = HashDbm::open(&path, true, &options).expect("create");
    let value = vec![b'v'; 1000];
    let mut stored = 0u32;
    let err = loop {
        match db.set(format!("{stored:08}").as_bytes(), &value, true) {
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
    db.set(b"one more", &value, true).expect("a set past the old limit");
    db.close().expect("close");
    let db = HashDbm::open(&path, false, &options).expect("reopen");
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
    let options = HashOptions { num_buckets: 1021, ..HashOptions::default() };
    let db = HashDbm::open(&path, true, &options).expect("create");
    let copy = dir.path().join("copy.kh");
    std::thread::scope(|scope| {
        for t in 0..2u32 {
            let db = &db;
            scope.spawn(move || {
                // Each thread writes its keys in order, so a consistent copy
                // holds a prefix of them: keys 0..n, no gaps.
                for i in 0..3000u32 {
                    db.set(format!("{t}-{i:05}").as_bytes(), format!("{i}").as_bytes(), true).unwrap();
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        db.copy_file_data(&copy, false).expect("copy while writing");
    });
    let err = db.copy_file_data(&path, false).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let copied =
        HashDbm::open(&copy, false, &HashOptions { restore: RestoreMode::Refuse, ..options.clone() })
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
