//! The skip database against a model: random sequences of sets (keys repeat,
//! so records pile up), removes, replacing processes, multi-record updates,
//! synchronizations with every reducer, reopens, clears and rebuilds, and
//! every cursor move, compared step by step with a sorted list of records.
//! Tiny steps and levels make every level of pointers matter; a tiny
//! sort_mem_size spills updates to many temporary files; a tiny cache of
//! upper records makes lookups walk the file.

use std::collections::BTreeMap;
use std::ops::Bound;

use kuradb::dbm::skip::{Reducer, SkipDbm, SkipOptions};
use kuradb::dbm::{Access, Action, Cursor, Dbm, Durability, Edge};
use kuradb::file::FileSpec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn key(n: u8) -> Vec<u8> {
    // Short keys with shared prefixes, the empty key among them.
    match n % 4 {
        0 => format!("{}", n / 4).into_bytes(),
        1 => format!("k{:02}", n).into_bytes(),
        2 => vec![b'k'; usize::from(n % 7)],
        _ => vec![0xff, n],
    }
}

fn value(n: u16, len: u8) -> Vec<u8> {
    let mut v = format!("{n}").into_bytes();
    v.resize(usize::from(len), b'.');
    v
}

#[derive(Clone, Debug)]
enum Op {
    Set(u8, u16, u8),
    SetNew(u8, u16),
    Remove(u8),
    Replace(u8, u16),
    SetMulti(u8, u8, u16),
    Sync(u8),
    Reopen,
    Clear,
    Rebuild(u8),
    Get(u8),
    Cursor(CursorOp),
    Range(u8, u8, bool),
}

#[derive(Clone, Debug)]
enum CursorOp {
    First,
    Last,
    Jump(u8),
    JumpLower(u8, bool),
    JumpUpper(u8, bool),
    Next,
    Previous,
    Get,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..40;
    let cursor = prop_oneof![
        Just(CursorOp::First),
        Just(CursorOp::Last),
        k.clone().prop_map(CursorOp::Jump),
        (k.clone(), any::<bool>()).prop_map(|(k, i)| CursorOp::JumpLower(k, i)),
        (k.clone(), any::<bool>()).prop_map(|(k, i)| CursorOp::JumpUpper(k, i)),
        Just(CursorOp::Next),
        Just(CursorOp::Next),
        Just(CursorOp::Previous),
        Just(CursorOp::Get),
    ];
    prop_oneof![
        8 => (k.clone(), any::<u16>(), 0u8..40).prop_map(|(k, n, l)| Op::Set(k, n, l)),
        1 => (k.clone(), any::<u16>()).prop_map(|(k, n)| Op::SetNew(k, n)),
        2 => k.clone().prop_map(Op::Remove),
        1 => (k.clone(), any::<u16>()).prop_map(|(k, n)| Op::Replace(k, n)),
        1 => (k.clone(), k.clone(), any::<u16>()).prop_map(|(a, b, n)| Op::SetMulti(a, b, n)),
        3 => (0u8..8).prop_map(Op::Sync),
        1 => Just(Op::Reopen),
        1 => (0u8..30).prop_map(|n| if n == 0 { Op::Clear } else { Op::Get(n) }),
        1 => (0u8..6).prop_map(Op::Rebuild),
        3 => k.clone().prop_map(Op::Get),
        6 => cursor.prop_map(Op::Cursor),
        1 => (k.clone(), k, any::<bool>()).prop_map(|(a, b, i)| Op::Range(a, b, i)),
    ]
}

fn reducer(n: u8) -> Reducer {
    match n % 8 {
        0 | 6 => Reducer::All,
        1 => Reducer::First,
        2 => Reducer::Last,
        3 => Reducer::Concat(Vec::new()),
        4 => Reducer::Concat(b",".to_vec()),
        5 => Reducer::Total,
        _ => Reducer::All,
    }
}

/// The sum the total reducer documents: integers, or real numbers as soon as
/// one value is real; anything else counts as zero.
fn total(values: &[Vec<u8>]) -> Vec<u8> {
    let texts: Vec<&str> = values.iter().map(|v| std::str::from_utf8(v).unwrap_or("").trim()).collect();
    if texts.iter().all(|t| t.parse::<i64>().is_ok() || t.parse::<f64>().is_err()) {
        let sum: i128 = texts.iter().map(|t| t.parse::<i64>().map(i128::from).unwrap_or(0)).sum();
        sum.to_string().into_bytes()
    } else {
        let sum: f64 = texts.iter().map(|t| t.parse::<f64>().unwrap_or(0.0)).sum();
        sum.to_string().into_bytes()
    }
}

/// The synchronized records, and the updates since.
#[derive(Default)]
struct Model {
    records: BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
    /// `None`: remove every record of the key.
    pending: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Model {
    fn first(&self, k: &[u8]) -> Option<&Vec<u8>> {
        self.records.get(k).and_then(|v| v.first())
    }

    fn sync(&mut self, reducer: &Reducer, always: bool) {
        if self.pending.is_empty() && !always {
            return;
        }
        for (k, v) in self.pending.drain(..) {
            let list = self.records.entry(k).or_default();
            match v {
                Some(v) => list.push(v),
                None => list.clear(),
            }
        }
        self.records.retain(|_, v| !v.is_empty());
        for list in self.records.values_mut() {
            let reduced = match reducer {
                Reducer::All => continue,
                Reducer::First => list[0].clone(),
                Reducer::Second => list[1.min(list.len() - 1)].clone(),
                Reducer::Last => list[list.len() - 1].clone(),
                Reducer::Concat(d) => list.join(&d[..]),
                Reducer::Total => total(list),
            };
            *list = vec![reduced];
        }
    }

    fn flat(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.records.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone()))).collect()
    }
}

struct Case {
    spec: FileSpec,
    step_unit: u32,
    max_level: u8,
    cache: usize,
    sort_mem: usize,
}

fn options(case: &Case) -> SkipOptions {
    SkipOptions::default()
        .file(case.spec.clone())
        .step_unit(case.step_unit)
        .max_level(case.max_level)
        .max_cached_records(case.cache)
        .sort_mem_size(case.sort_mem)
}

fn check(case: &Case, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.skip");
    let opts = options(case);
    let mut db = Some(SkipDbm::open(&path, Access::ReadWrite, &opts).unwrap());
    let mut model = Model::default();
    // The cursor's place in the model's flat list (len = past the end).
    let mut at: Option<usize> = None;
    let mut at_key: Option<Vec<u8>> = None;
    let mut cursor_db_gen = 0u32;
    let mut generation = 0u32;
    for (step, op) in ops.iter().enumerate() {
        let d = db.as_ref().unwrap();
        match op {
            Op::Set(k, n, l) => {
                d.set(&key(*k), &value(*n, *l)).unwrap();
                model.pending.push((key(*k), Some(value(*n, *l))));
            }
            Op::SetNew(k, n) => {
                let result = d.insert(&key(*k), &value(*n, 3));
                if model.first(&key(*k)).is_some() {
                    prop_assert!(result.is_err(), "step {step}: set without overwrite of an existing key");
                } else {
                    result.unwrap();
                    model.pending.push((key(*k), Some(value(*n, 3))));
                }
            }
            Op::Remove(k) => {
                let existed = d.remove(&key(*k)).unwrap();
                prop_assert_eq!(existed, model.first(&key(*k)).is_some(), "step {}", step);
                model.pending.push((key(*k), None));
            }
            Op::Replace(k, n) => {
                let v = value(*n, 5);
                let mut seen = None;
                d.process(&key(*k), Access::ReadWrite, &mut |old| {
                    seen = old.map(<[u8]>::to_vec);
                    Action::set(&v)
                })
                .unwrap();
                prop_assert_eq!(seen.as_ref(), model.first(&key(*k)), "step {}", step);
                model.pending.push((key(*k), None));
                model.pending.push((key(*k), Some(v)));
            }
            Op::SetMulti(a, b, n) => {
                let (ka, kb, v) = (key(*a), key(*b), value(*n, 2));
                d.set_multi(&[(&ka, &v), (&kb, &v)]).unwrap();
                for k in [ka, kb] {
                    model.pending.push((k.clone(), None));
                    model.pending.push((k, Some(v.clone())));
                }
            }
            Op::Sync(r) => {
                let r = reducer(*r);
                if r == Reducer::All {
                    d.synchronize(Durability::Soft).unwrap();
                    model.sync(&Reducer::All, false);
                } else {
                    d.synchronize_with(Durability::Soft, &r).unwrap();
                    model.sync(&r, true);
                }
                generation += 1;
            }
            Op::Reopen => {
                at_key = at.and_then(|i| model_flat_key(&model, i));
                at = None;
                db.take().unwrap().close().unwrap();
                model.sync(&Reducer::All, false);
                db = Some(SkipDbm::open(&path, Access::ReadWrite, &opts).unwrap());
                generation += 1;
            }
            Op::Clear => {
                d.clear().unwrap();
                model = Model::default();
                generation += 1;
            }
            Op::Rebuild(r) => {
                let r = reducer(*r);
                d.rebuild_with(&r).unwrap();
                model.sync(&r, true);
                generation += 1;
            }
            Op::Get(k) => {
                let got = d.get(&key(*k)).unwrap();
                prop_assert_eq!(got.as_ref(), model.first(&key(*k)), "step {}: get {:?}", step, key(*k));
            }
            Op::Range(a, b, inclusive) => {
                let (lo, hi) = (key(*a), key(*b));
                let end = if *inclusive { Bound::Included(hi.clone()) } else { Bound::Excluded(hi.clone()) };
                let got: Vec<_> = d
                    .range::<Vec<u8>>((Bound::Included(lo.clone()), end.clone()))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let want: Vec<_> = model
                    .flat()
                    .into_iter()
                    .filter(|(k, _)| {
                        *k >= lo
                            && match &end {
                                Bound::Included(e) => k <= e,
                                Bound::Excluded(e) => k < e,
                                Bound::Unbounded => true,
                            }
                    })
                    .collect();
                prop_assert_eq!(got, want, "step {}: range", step);
            }
            Op::Cursor(c) => {
                let flat = model.flat();
                // A cursor from before a synchronization finds its key again.
                if cursor_db_gen != generation {
                    if let Some(k) = at_key.take() {
                        at = Some(flat.iter().position(|(fk, _)| *fk >= k).unwrap_or(flat.len()));
                    }
                    cursor_db_gen = generation;
                }
                let mut cur = d.cursor();
                // Place the real cursor where the model's is.
                match at {
                    Some(i) if i < flat.len() => {
                        cur.jump(&flat[i].0).unwrap();
                        let first = flat.iter().position(|(k, _)| *k == flat[i].0).unwrap();
                        for _ in first..i {
                            cur.next().unwrap();
                        }
                    }
                    _ => {}
                }
                let lower = |k: &[u8], inclusive: bool| {
                    flat.iter()
                        .rposition(|(fk, _)| if inclusive { fk.as_slice() <= k } else { fk.as_slice() < k })
                };
                let upper = |k: &[u8], inclusive: bool| {
                    flat.iter()
                        .position(|(fk, _)| if inclusive { fk.as_slice() >= k } else { fk.as_slice() > k })
                };
                let placed = at.filter(|&i| i < flat.len());
                let next_at = match c {
                    CursorOp::First => {
                        cur.first().unwrap();
                        (!flat.is_empty()).then_some(0)
                    }
                    CursorOp::Last => {
                        cur.last().unwrap();
                        flat.len().checked_sub(1)
                    }
                    CursorOp::Jump(k) => {
                        cur.jump(&key(*k)).unwrap();
                        upper(&key(*k), true)
                    }
                    CursorOp::JumpLower(k, i) => {
                        cur.jump_lower(&key(*k), if *i { Edge::Inclusive } else { Edge::Exclusive }).unwrap();
                        lower(&key(*k), *i)
                    }
                    CursorOp::JumpUpper(k, i) => {
                        cur.jump_upper(&key(*k), if *i { Edge::Inclusive } else { Edge::Exclusive }).unwrap();
                        upper(&key(*k), *i)
                    }
                    CursorOp::Next => {
                        cur.next().unwrap();
                        placed.map(|i| i + 1).filter(|&i| i < flat.len())
                    }
                    CursorOp::Previous => {
                        if placed.is_some() {
                            cur.previous().unwrap();
                        }
                        placed.and_then(|i| i.checked_sub(1))
                    }
                    CursorOp::Get => placed,
                };
                if placed.is_none() && matches!(c, CursorOp::Next | CursorOp::Previous | CursorOp::Get) {
                    prop_assert_eq!(cur.get().unwrap(), None, "step {}: unplaced cursor", step);
                    continue;
                }
                let got = cur.get().unwrap();
                let want = next_at.map(|i| flat[i].clone());
                prop_assert_eq!(&got, &want, "step {}: cursor {:?}", step, c);
                at = next_at;
                at_key = want.map(|(k, _)| k);
            }
        }
        prop_assert_eq!(d_count(&db), model.flat().len() as u64, "step {}: count after {:?}", step, op);
    }
    let d = db.take().unwrap();
    d.close().unwrap();
    model.sync(&Reducer::All, false);
    let d = SkipDbm::open(&path, Access::ReadOnly, &opts).unwrap();
    let mut all = Vec::new();
    d.process_each(Access::ReadOnly, &mut |k, v| {
        all.push((k.to_vec(), v.to_vec()));
        Action::Keep
    })
    .unwrap();
    prop_assert_eq!(all, model.flat(), "after the last reopen");
    Ok(())
}

fn model_flat_key(model: &Model, i: usize) -> Option<Vec<u8>> {
    model.flat().get(i).map(|(k, _)| k.clone())
}

fn d_count(db: &Option<SkipDbm>) -> u64 {
    db.as_ref().unwrap().count().unwrap()
}

fn run(case: Case, cases: u32) {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    runner
        .run(&prop::collection::vec(op(), 1..120), |ops| check(&case, &ops))
        .unwrap_or_else(|e| panic!("step {} level {}: {e}", case.step_unit, case.max_level));
}

#[test]
fn skip_list_on_memory_mapping_follows_the_model() {
    run(Case { spec: FileSpec::default(), step_unit: 2, max_level: 3, cache: 2, sort_mem: 1 << 20 }, 64);
}

#[test]
fn skip_list_with_spills_and_no_cache_follows_the_model() {
    let spec = FileSpec::parse("pos-para").unwrap();
    run(Case { spec, step_unit: 3, max_level: 2, cache: 0, sort_mem: 100 }, 48);
}

#[test]
fn skip_list_on_blocks_through_a_page_cache_follows_the_model() {
    let spec = FileSpec::parse("pos-atom,block_size=64,access=padding+pagecache").unwrap();
    run(Case { spec, step_unit: 4, max_level: 5, cache: 1000, sort_mem: 300 }, 48);
}
