//! Every operation an open database takes through the trait, as a value a
//! random sequence is made of, and [`step`], which carries one out on a
//! database and on the model and checks every answer.

use std::collections::HashMap;
use std::fmt;

use kuradb::dbm::std_map::{StdOptions, StdTreeDbm};
use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Access, Action, Dbm, OnDuplicate, Rekey, INCREMENT_UNCHANGED};
use kuradb::ErrorKind;
use proptest::prelude::*;

use super::cursor::{self, Move};
use super::{read, Model};
use crate::common::hash::{show, show_opt};

/// Bytes that print as text where they are text.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&show(&self.0))
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// What a compare-exchange expects.
#[derive(Clone, Debug)]
pub enum Expect {
    /// The key's current value in the model (so the exchange happens).
    Current,
    Absent,
    Value(Bytes),
}

/// What a processor answers.
#[derive(Clone, Debug)]
pub enum Answer {
    Keep,
    Remove,
    Set(Bytes),
}

impl Answer {
    fn action(&self) -> Action<'_> {
        match self {
            Answer::Keep => Action::Keep,
            Answer::Remove => Action::Remove,
            Answer::Set(v) => Action::set(v),
        }
    }
}

/// One operation on an open database.
#[derive(Clone, Debug)]
pub enum Op {
    Set(Bytes, Bytes, bool),
    /// A get and a contains.
    Get(Bytes),
    Remove(Bytes),
    Append(Bytes, Bytes, Bytes),
    CompareExchange(Bytes, Expect, Option<Bytes>),
    CompareExchangeMulti(Vec<(Bytes, Expect)>, Vec<(Bytes, Option<Bytes>)>),
    Increment(Bytes, i64, i64),
    SetMulti(Vec<(Bytes, Bytes)>, bool),
    /// `set_absent_multi`: the absent keys set, the others kept and named.
    SetAbsentMulti(Vec<(Bytes, Bytes)>),
    GetMulti(Vec<Bytes>),
    RemoveMulti(Vec<Bytes>),
    Rekey {
        old: Bytes,
        new: Bytes,
        overwrite: bool,
        copying: bool,
    },
    /// A `process`, writable or not; a read-only one answering a change is refused.
    Process(Bytes, Answer, bool),
    /// A `process_multi`, writable or not: each occurrence of a key sees
    /// what the earlier answers left.
    ProcessMulti(Vec<(Bytes, Answer)>, bool),
    /// A read-only `process_each` that must see exactly the model.
    Each,
    /// A read-only `process_each` answering a change for some records:
    /// refused, and nothing changes.
    EachRefused(u64),
    /// A writable `process_each` that keeps, removes or rewrites each record
    /// as [`decide`] says.
    EachWrite(u64),
    /// A cursor walk from the first record that keeps, removes or rewrites
    /// each record as [`decide`] says, and must visit each once.
    Walk(u64),
    /// Cursor moves checked against the model's order (ordered classes).
    Cursor(Vec<Move>),
    Count,
    Clear,
    Rebuild,
    Synchronize(bool),
    /// Exports the database into a new ordered map.
    Export,
    /// Exports a map holding these records into the database.
    Import(Vec<(Bytes, Bytes)>),
}

/// The key of `n` under `cmp`: text numbers for the numeric comparators (in
/// several spellings, some equal as numbers), short strings (the empty one
/// and control bytes among them) for the lexical ones and unordered classes.
pub fn key_of(n: i16, style: u8, cmp: Option<KeyComparator>) -> Vec<u8> {
    let lexical = |n: i16| -> Vec<u8> {
        let n = n.unsigned_abs() as usize;
        let alphabet = b"ab\x00\xff";
        let len = n % 3;
        let mut s: Vec<u8> = (0..len).map(|i| alphabet[(n / (i + 1) + i) % 4]).collect();
        if style.is_multiple_of(4) {
            s.extend_from_slice(format!("{}", n % 7).as_bytes());
        }
        s
    };
    // A pair order's keys are pairs: a first part in the base order (a few
    // values, so that firsts repeat) and a short second part.
    let base = match cmp {
        Some(KeyComparator::PairLexical) => Some(KeyComparator::Lexical),
        Some(KeyComparator::PairDecimal) => Some(KeyComparator::Decimal),
        Some(KeyComparator::PairHex) => Some(KeyComparator::Hex),
        Some(KeyComparator::PairReal) => Some(KeyComparator::Real),
        _ => None,
    };
    if let Some(base) = base {
        return kuradb::dbm::pair::encode_pair(&key_of(n / 3, style, Some(base)), &lexical(n % 3));
    }
    let text = match cmp {
        None | Some(KeyComparator::Lexical) | Some(KeyComparator::LexicalReverse) => return lexical(n),
        Some(KeyComparator::Decimal) | Some(KeyComparator::DecimalReverse) => match style % 4 {
            0 => format!("{n}"),
            1 => format!("{n:04}"),
            2 => format!("{n}x"),
            _ => format!("{n:+}"),
        },
        Some(KeyComparator::Hex) | Some(KeyComparator::HexReverse) => {
            let m = n.unsigned_abs();
            let sign = if n < 0 { "-" } else { "" };
            match style % 4 {
                0 => format!("{sign}{m:x}"),
                1 => format!("{sign}{m:X}"),
                2 => format!("{sign}0x{m:x}"),
                _ => format!("{sign}{m:03x}"),
            }
        }
        Some(KeyComparator::Real) | Some(KeyComparator::RealReverse) => match style % 5 {
            0 => format!("{n}"),
            1 => format!("{n}.5"),
            2 => format!("{n}e-2"),
            3 => format!("{:.3}", f64::from(n) / 7.0),
            _ => format!("{n}.0"),
        },
        Some(_) => unreachable!("the pair orders answered above"),
    };
    text.into_bytes()
}

/// Keys from a small pool, so that they repeat.
pub fn key(cmp: Option<KeyComparator>) -> BoxedStrategy<Bytes> {
    (-20i16..20, 0u8..5).prop_map(move |(n, style)| Bytes(key_of(n, style, cmp))).boxed()
}

/// `len` bytes of a pattern starting from `seed`.
pub fn pattern(len: u16, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i as u8).wrapping_mul(7))).collect()
}

/// Values from empty to 300 bytes (so updates both fit a record's room and
/// do not), 8-byte ones (numbers to increment) among them.
pub fn value() -> BoxedStrategy<Bytes> {
    let len = prop_oneof![3 => 0u16..=300, 2 => 0u16..=12, 1 => Just(8u16)];
    (len, any::<u8>()).prop_map(|(len, seed)| Bytes(pattern(len, seed))).boxed()
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![3 => Just(Expect::Current), 1 => Just(Expect::Absent), 1 => value().prop_map(Expect::Value)]
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![2 => Just(Answer::Keep), 1 => Just(Answer::Remove), 2 => value().prop_map(Answer::Set)]
}

/// Random operations on keys of `key` for a class ordered by `order`.
pub fn op(order: Option<KeyComparator>) -> BoxedStrategy<Op> {
    let key = move || key(order);
    let keys = move || proptest::collection::vec(key(), 1..5);
    let pairs = move || proptest::collection::vec((key(), value()), 1..5);
    let walk = match order {
        Some(_) => proptest::collection::vec(cursor::random_move(order), 1..16).prop_map(Op::Cursor).boxed(),
        None => any::<u64>().prop_map(Op::Walk).boxed(),
    };
    prop_oneof![
        20 => (key(), value(), prop::bool::weighted(0.8)).prop_map(|(k, v, o)| Op::Set(k, v, o)),
        4 => key().prop_map(Op::Get),
        6 => key().prop_map(Op::Remove),
        2 => (key(), value(), prop_oneof![Just(""), Just(","), Just("::")])
            .prop_map(|(k, v, d)| Op::Append(k, v, Bytes(d.as_bytes().to_vec()))),
        2 => (key(), expect(), proptest::option::weighted(0.8, value()))
            .prop_map(|(k, e, d)| Op::CompareExchange(k, e, d)),
        1 => (
            proptest::collection::vec((key(), expect()), 0..3),
            proptest::collection::vec((key(), proptest::option::weighted(0.7, value())), 1..3)
        )
            .prop_map(|(e, d)| Op::CompareExchangeMulti(e, d)),
        2 => (key(), prop_oneof![-3i64..=3, Just(INCREMENT_UNCHANGED)], -5i64..=5)
            .prop_map(|(k, d, i)| Op::Increment(k, d, i)),
        2 => (pairs(), any::<bool>()).prop_map(|(p, o)| Op::SetMulti(p, o)),
        1 => pairs().prop_map(Op::SetAbsentMulti),
        1 => keys().prop_map(Op::GetMulti),
        2 => keys().prop_map(Op::RemoveMulti),
        2 => (key(), key(), any::<bool>(), any::<bool>())
            .prop_map(|(old, new, overwrite, copying)| Op::Rekey { old, new, overwrite, copying }),
        2 => (key(), answer(), prop::bool::weighted(0.7)).prop_map(|(k, a, w)| Op::Process(k, a, w)),
        1 => (proptest::collection::vec((key(), answer()), 1..5), prop::bool::weighted(0.7))
            .prop_map(|(l, w)| Op::ProcessMulti(l, w)),
        1 => Just(Op::Each),
        1 => any::<u64>().prop_map(Op::EachRefused),
        1 => any::<u64>().prop_map(Op::EachWrite),
        4 => walk,
        1 => Just(Op::Count),
        1 => Just(Op::Clear),
        1 => Just(Op::Rebuild),
        3 => any::<bool>().prop_map(Op::Synchronize),
        1 => Just(Op::Export),
        1 => pairs().prop_map(Op::Import),
    ]
    .boxed()
}

/// What a walk does with a record, by `seed`, key and value: keep (0),
/// remove (1) or rewrite (2) with the value given.
pub fn decide(seed: u64, key: &[u8], value: &[u8]) -> (u8, Vec<u8>) {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    for &b in key {
        x = (x ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    x ^= x >> 29;
    let rewritten = match (x >> 40) % 2 {
        0 => pattern(((x >> 8) % 301) as u16, (x >> 24) as u8),
        _ => [value, &[seed as u8]].concat(),
    };
    ((x % 3) as u8, rewritten)
}

/// The value of `key` a processor of a multi-key call is shown: what an
/// earlier answer of the same call left, or what readers see.
fn shown<'m>(
    answered: &'m HashMap<Vec<u8>, Option<Vec<u8>>>,
    model: &'m Model,
    key: &[u8],
) -> Option<&'m [u8]> {
    match answered.get(key) {
        Some(value) => value.as_deref(),
        _ => model.get(key),
    }
}

/// Carries out a processor's answer on the model, noting it for the later
/// keys of a multi-key call.
fn answer_on(
    model: &mut Model,
    answered: &mut HashMap<Vec<u8>, Option<Vec<u8>>>,
    key: &[u8],
    action: &Action<'_>,
) {
    match action {
        Action::Keep => return,
        Action::Remove => model.remove(key),
        Action::Set(v) => model.replace(key, v),
    }
    let value = match action {
        Action::Set(v) => Some(v.to_vec()),
        _ => None,
    };
    answered.insert(key.to_vec(), value);
}

/// The answer must be an error of `kind`.
pub fn expect_err<T: fmt::Debug>(
    result: kuradb::Result<T>,
    kind: ErrorKind,
    what: &str,
) -> Result<(), String> {
    match result {
        Err(e) if e.kind() == kind => Ok(()),
        other => Err(format!("{what}: expected a {kind} error, got {other:?}")),
    }
}

/// A result's value, or the error described.
pub fn ok<T>(result: kuradb::Result<T>, what: &str) -> Result<T, String> {
    result.map_err(|e| format!("{what}: {e}"))
}

fn eq<T: PartialEq + fmt::Debug>(actual: T, expected: T, what: &str) -> Result<(), String> {
    if actual != expected {
        return Err(format!("{what}: got {actual:?}, expected {expected:?}"));
    }
    Ok(())
}

/// Carries out `op` on `db` and on `model`, checking every answer.
pub fn step(db: &dyn Dbm, model: &mut Model, op: &Op) -> Result<(), String> {
    let mut answered = HashMap::new();
    match op {
        Op::Set(k, v, overwrite) => {
            let result = if *overwrite { db.set(k, v) } else { db.insert(k, v) };
            if model.contains(k) && !overwrite {
                expect_err(result, ErrorKind::Duplication, "set onto an existing key")?;
            } else {
                ok(result, "set")?;
                model.add(k, v);
            }
        }
        Op::Get(k) => {
            let got = ok(db.get(k), "get")?;
            if got.as_deref() != model.get(k) {
                return Err(format!(
                    "get {} is {}, expected {}",
                    show(k),
                    show_opt(got.as_deref()),
                    show_opt(model.get(k))
                ));
            }
            eq(ok(db.contains(k), "contains")?, model.contains(k), "contains")?;
        }
        Op::Remove(k) => {
            let existed = ok(db.remove(k), "remove")?;
            eq(existed, model.contains(k), "remove answers whether the key existed")?;
            model.remove(k);
        }
        Op::Append(k, v, delim) => {
            ok(db.append(k, v, delim), "append")?;
            let value = match model.get(k) {
                Some(old) => [old, delim, v].concat(),
                None => v.to_vec(),
            };
            model.replace(k, &value);
        }
        Op::CompareExchange(k, e, d) => {
            let current = model.get(k).map(<[u8]>::to_vec);
            let expected = match e {
                Expect::Current => current.clone(),
                Expect::Absent => None,
                Expect::Value(v) => Some(v.to_vec()),
            };
            let done = ok(db.compare_exchange(k, expected.as_deref(), d.as_deref()), "compare_exchange")?;
            let should = expected == current;
            eq(done, should, &format!("compare_exchange with {} current", show_opt(current.as_deref())))?;
            if should {
                match d {
                    Some(v) => model.replace(k, v),
                    None => model.remove(k),
                }
            }
        }
        Op::CompareExchangeMulti(expected, desired) => {
            let expected: Vec<(&[u8], Option<Vec<u8>>)> = expected
                .iter()
                .map(|(k, e)| {
                    let v = match e {
                        Expect::Current => model.get(k).map(<[u8]>::to_vec),
                        Expect::Absent => None,
                        Expect::Value(v) => Some(v.to_vec()),
                    };
                    (&k[..], v)
                })
                .collect();
            let exp_refs: Vec<(&[u8], Option<&[u8]>)> =
                expected.iter().map(|(k, v)| (*k, v.as_deref())).collect();
            let des_refs: Vec<(&[u8], Option<&[u8]>)> =
                desired.iter().map(|(k, v)| (&k[..], v.as_deref())).collect();
            let done = ok(db.compare_exchange_multi(&exp_refs, &des_refs), "compare_exchange_multi")?;
            let should = expected.iter().all(|(k, v)| model.get(k) == v.as_deref());
            eq(done, should, "compare_exchange_multi")?;
            if should {
                for (k, v) in desired {
                    match v {
                        Some(v) => model.replace(k, v),
                        None => model.remove(k),
                    }
                }
            }
        }
        Op::Increment(k, delta, initial) => {
            let result = db.increment(k, *delta, *initial);
            let current = match model.get(k) {
                None => Some(*initial),
                Some(v) => <[u8; 8]>::try_from(v).ok().map(i64::from_be_bytes),
            };
            match current {
                None => {
                    expect_err(result, ErrorKind::InvalidArgument, "increment of a value not 8 bytes long")?
                }
                Some(current) => {
                    let got = ok(result, "increment")?;
                    let want =
                        if *delta == INCREMENT_UNCHANGED { current } else { current.wrapping_add(*delta) };
                    eq(got, want, "increment")?;
                    if *delta != INCREMENT_UNCHANGED {
                        model.replace(k, &want.to_be_bytes());
                    }
                }
            }
        }
        Op::SetMulti(pairs, overwrite) => {
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let result = if *overwrite { db.set_multi(&refs) } else { db.insert_multi(&refs) };
            if !overwrite && pairs.iter().any(|(k, _)| model.contains(k)) {
                expect_err(result, ErrorKind::Duplication, "set_multi onto existing keys")?;
            } else {
                ok(result, "set_multi")?;
                for (k, v) in pairs {
                    model.replace(k, v);
                }
            }
        }
        Op::GetMulti(keys) => {
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let got = ok(db.get_multi(&refs), "get_multi")?;
            let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).map(<[u8]>::to_vec)).collect();
            let present: Vec<bool> = want.iter().map(Option::is_some).collect();
            eq(got, want, "get_multi")?;
            eq(ok(db.contains_multi(&refs), "contains_multi")?, present, "contains_multi")?;
        }
        Op::SetAbsentMulti(pairs) => {
            let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            let kept = ok(db.set_absent_multi(&refs), "set_absent_multi")?;
            let mut want = Vec::new();
            for (k, v) in pairs {
                if shown(&answered, model, k).is_some() {
                    want.push(k.0.clone());
                } else {
                    answer_on(model, &mut answered, k, &Action::set(v));
                }
            }
            eq(kept, want, "set_absent_multi answers the keys that existed")?;
        }
        Op::RemoveMulti(keys) => {
            let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
            let removed = ok(db.remove_multi(&refs), "remove_multi")?;
            let mut want = 0;
            for k in keys {
                want += usize::from(shown(&answered, model, k).is_some());
                answer_on(model, &mut answered, k, &Action::Remove);
            }
            eq(removed, want, "remove_multi answers how many existed")?;
        }
        Op::Rekey { old, new, overwrite, copying } => {
            let rekey = if *copying { Rekey::Copy } else { Rekey::Move };
            let on_duplicate = if *overwrite { OnDuplicate::Replace } else { OnDuplicate::Fail };
            let result = db.rekey(old, new, rekey, on_duplicate);
            match model.get(old).map(<[u8]>::to_vec) {
                None => expect_err(result, ErrorKind::NotFound, "rekey of an absent key")?,
                Some(_) if model.contains(new) && !overwrite && old != new => {
                    expect_err(result, ErrorKind::Duplication, "rekey onto an existing key")?
                }
                Some(value) => {
                    ok(result, "rekey")?;
                    model.replace(new, &value);
                    if !copying && old != new {
                        model.remove(old);
                    }
                }
            }
        }
        Op::Process(k, answer, writable) => {
            let mut seen = None;
            let result = db.process(k, crate::common::access(*writable), &mut |value| {
                seen = Some(value.map(<[u8]>::to_vec));
                answer.action()
            });
            eq(seen.as_ref().map(Option::as_deref), Some(model.get(k)), "the value a processor is shown")?;
            if !writable && !matches!(answer, Answer::Keep) {
                expect_err(result, ErrorKind::InvalidArgument, "a read-only processor answering a change")?;
            } else {
                ok(result, "process")?;
                answer_on(model, &mut answered, k, &answer.action());
            }
        }
        Op::ProcessMulti(list, writable) => {
            let keys: Vec<&[u8]> = list.iter().map(|(k, _)| &k[..]).collect();
            let mut calls = Vec::new();
            let result = db.process_multi(&keys, crate::common::access(*writable), &mut |i, key, value| {
                calls.push((i, key.to_vec(), value.map(<[u8]>::to_vec)));
                list[i].1.action()
            });
            let refused = list.iter().position(|(_, a)| !matches!(a, Answer::Keep)).filter(|_| !writable);
            // Every key is shown once, in order (up to a refusal, which may end the call).
            let least = refused.map_or(list.len(), |i| i + 1);
            if calls.len() < least || calls.len() > list.len() {
                return Err(format!("process_multi made {} calls for {} keys", calls.len(), list.len()));
            }
            for (n, (i, key, value)) in calls.iter().enumerate() {
                eq(*i, n, "process_multi calls in the keys' order")?;
                eq(&key[..], &list[n].0[..], "process_multi shows the key")?;
                eq(
                    value.as_deref(),
                    shown(&answered, model, key),
                    &format!("process_multi shows {} the value", show(key)),
                )?;
                if *writable {
                    answer_on(model, &mut answered, key, &list[n].1.action());
                }
            }
            match refused {
                Some(_) => expect_err(
                    result,
                    ErrorKind::InvalidArgument,
                    "a read-only processor answering a change",
                )?,
                None => ok(result, "process_multi")?,
            }
        }
        Op::Each => {
            let visited = read::each(db)?;
            let caps = model.caps();
            if caps.order.is_some() && caps.each_in_order {
                read::diff("process_each", &visited, &model.flat())?;
            } else {
                read::diff_unordered("process_each", &visited, &model.flat())?;
            }
        }
        Op::EachRefused(seed) => {
            let result = db.process_each(Access::ReadOnly, &mut |k, v| match decide(*seed, k, v) {
                (0, _) => Action::Keep,
                (1, _) => Action::Remove,
                (_, n) => Action::Set(n.into()),
            });
            let changes = model.flat().iter().any(|(k, v)| decide(*seed, k, v).0 != 0);
            if changes {
                expect_err(
                    result,
                    ErrorKind::InvalidArgument,
                    "a read-only process_each answering a change",
                )?;
            } else {
                ok(result, "process_each")?;
            }
        }
        Op::EachWrite(seed) => {
            let mut visited = Vec::new();
            ok(
                db.process_each(Access::ReadWrite, &mut |k, v| {
                    visited.push((k.to_vec(), v.to_vec()));
                    match decide(*seed, k, v) {
                        (0, _) => Action::Keep,
                        (1, _) => Action::Remove,
                        (_, n) => Action::Set(n.into()),
                    }
                }),
                "writable process_each",
            )?;
            let caps = model.caps();
            if caps.order.is_some() && caps.each_in_order {
                read::diff("writable process_each visits", &visited, &model.flat())?;
            } else {
                read::diff_unordered("writable process_each visits", &visited, &model.flat())?;
            }
            for (k, v) in &visited {
                match decide(*seed, k, v) {
                    (0, _) => {}
                    (1, _) => model.remove(k),
                    (_, n) => model.replace(k, &n),
                }
            }
        }
        Op::Walk(seed) => cursor::walk(db, model, *seed)?,
        Op::Cursor(moves) => cursor::replay(db, model, moves)?,
        Op::Count => eq(ok(db.count(), "count")?, model.count() as u64, "count")?,
        Op::Clear => {
            ok(db.clear(), "clear")?;
            model.clear();
        }
        Op::Rebuild => {
            ok(db.rebuild(), "rebuild")?;
            model.synchronize();
        }
        Op::Synchronize(hard) => {
            ok(db.synchronize(crate::common::durability(*hard)), "synchronize")?;
            model.synchronize();
        }
        Op::Export => {
            let dest = StdTreeDbm::new(&StdOptions::default());
            ok(db.export(&dest), "export")?;
            // Each key's records in turn overwrite one another: the last stays.
            let mut want = std::collections::BTreeMap::new();
            for (k, v) in model.flat() {
                want.insert(k, v);
            }
            let got: Vec<_> = read::each(&dest)?;
            read::diff("exported records", &got, &want.into_iter().collect::<Vec<_>>())?;
        }
        Op::Import(pairs) => {
            let source = StdTreeDbm::new(&StdOptions::default());
            for (k, v) in pairs {
                ok(source.set(k, v), "set in the source")?;
            }
            ok(source.export(db), "export into the database")?;
            for (k, v) in read::each(&source)? {
                model.add(&k, &v);
            }
        }
    }
    Ok(())
}
