//! Cursors against the model: a walk from the first record that changes
//! records as it goes and must meet each once (every class), and moves in
//! every direction mixed with writes (ordered classes).
//!
//! The model's cursor stands on a position: a key and the rank of one of
//! its records (0 unless the class keeps duplicates). The record a get
//! shows is the first at or after the position, so a cursor whose record
//! went away stands on the next one; moving on from a position that holds
//! no record goes to the first record beyond it.

use std::cmp::Ordering;

use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::{Cursor, Dbm};
use kuradb::ErrorKind;
use proptest::prelude::*;

use super::ops::{self, decide, expect_err, ok, Bytes};
use super::{read, Bug, Model, Record};
use crate::common::hash::show_opt;

/// One move of a cursor, or a write beside it.
#[derive(Clone, Debug)]
pub enum Move {
    First,
    Last,
    Jump(Bytes),
    JumpLower(Bytes, bool),
    JumpUpper(Bytes, bool),
    Next,
    Previous,
    Get,
    Set(Bytes),
    /// A removal through the cursor; a get follows it.
    Remove,
    /// A write through the database, not the cursor, while it stands.
    Elsewhere(Bytes, Option<Bytes>),
}

/// Random moves over keys of a class ordered by `order`.
pub fn random_move(order: Option<KeyComparator>) -> BoxedStrategy<Move> {
    let key = move || ops::key(order);
    prop_oneof![
        1 => Just(Move::First),
        1 => Just(Move::Last),
        2 => key().prop_map(Move::Jump),
        2 => (key(), any::<bool>()).prop_map(|(k, i)| Move::JumpLower(k, i)),
        2 => (key(), any::<bool>()).prop_map(|(k, i)| Move::JumpUpper(k, i)),
        5 => Just(Move::Next),
        5 => Just(Move::Previous),
        2 => Just(Move::Get),
        1 => ops::value().prop_map(Move::Set),
        2 => Just(Move::Remove),
        3 => (key(), proptest::option::of(ops::value())).prop_map(|(k, v)| Move::Elsewhere(k, v)),
    ]
    .boxed()
}

/// A place among the records: a key and the rank of one of its records.
type Position = (Vec<u8>, usize);

/// The records readers see, each with its position.
fn positioned(model: &Model) -> Vec<(Position, Record)> {
    let mut out: Vec<(Position, Record)> = Vec::new();
    for record in model.flat() {
        let rank = match out.last() {
            Some(((k, r), _)) if *k == record.0 => r + 1,
            _ => 0,
        };
        out.push(((record.0.clone(), rank), record));
    }
    out
}

fn order(model: &Model, a: &Position, b: &Position) -> Ordering {
    model.compare_keys(&a.0, &b.0).then(a.1.cmp(&b.1))
}

/// The first record at or after `at` (after it only if not `inclusive`).
fn forward(model: &Model, at: &Position, inclusive: bool) -> Option<(Position, Record)> {
    positioned(model).into_iter().find(|(p, _)| match order(model, p, at) {
        Ordering::Equal => inclusive,
        o => o == Ordering::Greater,
    })
}

/// The last record before `at` (or at it if `inclusive`).
fn backward(model: &Model, at: &Position, inclusive: bool) -> Option<(Position, Record)> {
    positioned(model).into_iter().rev().find(|(p, _)| match order(model, p, at) {
        Ordering::Equal => inclusive,
        o => o == Ordering::Less,
    })
}

/// The first record of a key at or beyond `key` (beyond only if not `inclusive`).
fn after_key(model: &Model, key: &[u8], inclusive: bool) -> Option<(Position, Record)> {
    positioned(model).into_iter().find(|((k, _), _)| match model.compare_keys(k, key) {
        Ordering::Equal => inclusive,
        o => o == Ordering::Greater,
    })
}

/// The last record of a key at or before `key` (before only if not `inclusive`).
fn before_key(model: &Model, key: &[u8], inclusive: bool) -> Option<(Position, Record)> {
    positioned(model).into_iter().rev().find(|((k, _), _)| match model.compare_keys(k, key) {
        Ordering::Equal => inclusive,
        o => o == Ordering::Less,
    })
}

/// Replays `moves` on a new cursor of `db` and on the model, checking each
/// record the cursor shows (after every get, and every third move).
pub fn replay(db: &dyn Dbm, model: &mut Model, moves: &[Move]) -> Result<(), String> {
    let mut c = ok(db.iter(), "iter")?;
    let mut pos: Option<Position> = None;
    let place = |found: Option<(Position, Record)>| found.map(|(p, _)| p);
    for (i, m) in moves.iter().enumerate() {
        let what = format!("cursor move {i} {m:?} (at {})", show_opt(pos.as_ref().map(|p| &p.0[..])));
        let here = pos.as_ref().and_then(|p| forward(model, p, true));
        match m {
            Move::First => {
                ok(c.first(), &what)?;
                pos = place(positioned(model).into_iter().next());
            }
            Move::Last => {
                ok(c.last(), &what)?;
                pos = place(positioned(model).into_iter().next_back());
            }
            Move::Jump(k) => {
                ok(c.jump(k), &what)?;
                pos = place(after_key(model, k, true));
            }
            Move::JumpLower(k, inclusive) => {
                ok(c.jump_lower(k, crate::common::edge(*inclusive)), &what)?;
                pos = place(before_key(model, k, *inclusive));
            }
            Move::JumpUpper(k, inclusive) => {
                ok(c.jump_upper(k, crate::common::edge(*inclusive)), &what)?;
                pos = place(after_key(model, k, *inclusive));
            }
            Move::Next => {
                ok(c.next(), &what)?;
                pos = pos.and_then(|p| place(forward(model, &p, false)));
            }
            Move::Previous => {
                ok(c.previous(), &what)?;
                pos = pos.and_then(|p| place(backward(model, &p, false)));
            }
            Move::Get => {}
            Move::Set(v) => match here {
                Some((p, (k, _))) => {
                    ok(c.set(v), &what)?;
                    model.replace(&k, v);
                    pos = Some(p);
                }
                None => {
                    expect_err(c.set(v), ErrorKind::NotFound, &what)?;
                    pos = None;
                }
            },
            Move::Remove => match here {
                Some((p, (k, _))) => {
                    ok(c.remove(), &what)?;
                    // Where a removal shows at once, the next record now
                    // follows the removed one's place; where it waits, the
                    // cursor moved on to the next record.
                    let deferred = model.caps().deferred;
                    model.remove(&k);
                    pos = if deferred { place(forward(model, &p, false)) } else { Some(p) };
                    pos = check_get(c.as_mut(), model, pos, &format!("get after {what}"))?;
                }
                None => {
                    expect_err(c.remove(), ErrorKind::NotFound, &what)?;
                    pos = None;
                }
            },
            Move::Elsewhere(..) if model.caps().has(Bug::CursorMissesWritesBeside) => {}
            Move::Elsewhere(k, v) => match v {
                Some(v) => {
                    ok(db.set(k, v), &what)?;
                    model.add(k, v);
                }
                None => {
                    ok(db.remove(k), &what)?;
                    model.remove(k);
                }
            },
        }
        if matches!(m, Move::Get) || i % 3 == 2 {
            pos = check_get(c.as_mut(), model, pos, &format!("get after {what}"))?;
        }
    }
    Ok(())
}

/// Checks the record the cursor shows against the model's first record at
/// or after `pos`; answers the position of that record.
fn check_get(
    c: &mut dyn Cursor,
    model: &Model,
    pos: Option<Position>,
    what: &str,
) -> Result<Option<Position>, String> {
    let got = ok(c.get(), what)?;
    let want = pos.as_ref().and_then(|p| forward(model, p, true));
    if got.as_ref() != want.as_ref().map(|(_, r)| r) {
        return Err(format!(
            "{what}: the cursor shows {:?}, expected {:?}",
            got.map(|(k, _)| Bytes(k)),
            want.as_ref().map(|(_, (k, _))| Bytes(k.clone()))
        ));
    }
    Ok(want.map(|(p, _)| p))
}

/// A walk from the first record that keeps, removes or rewrites each record
/// as [`decide`] says (a removal moves the cursor on by itself; otherwise
/// it is moved with next): it must visit each record once, and in order
/// where the class keeps one.
pub fn walk(db: &dyn Dbm, model: &mut Model, seed: u64) -> Result<(), String> {
    let before = model.flat();
    let mut visited = Vec::new();
    let mut c = ok(db.iter(), "iter")?;
    ok(c.first(), "cursor first")?;
    while let Some((key, value)) = ok(c.get(), "cursor get")? {
        match decide(seed, &key, &value) {
            (0, _) => ok(c.next(), "cursor next")?,
            (1, _) => {
                ok(c.remove(), "cursor remove")?;
                model.remove(&key);
            }
            (_, rewritten) => {
                ok(c.set(&rewritten), "cursor set")?;
                model.replace(&key, &rewritten);
                ok(c.next(), "cursor next")?;
            }
        }
        visited.push((key, value));
        if visited.len() > before.len() {
            return Err(format!("the cursor visited more records than the {} there are", before.len()));
        }
    }
    if model.caps().order.is_some() {
        read::diff("the cursor walk", &visited, &before)
    } else {
        read::diff_unordered("the cursor walk", &visited, &before)
    }
}
