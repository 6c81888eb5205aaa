//! The scripted checks: each trait method on chosen cases, every one of
//! them run on the database and on the model by [`step`], the whole
//! database compared with the model after each.

use std::path::Path;

use kuradb::dbm::{Dbm, Durability, Edge, INCREMENT_UNCHANGED};
use kuradb::ErrorKind;

use super::cursor::Move;
use super::ops::{expect_err, ok, step, Answer, Bytes, Expect, Op};
use super::{read, Model, Subject};

/// A scripted check: the subject, and a directory of its own.
pub type Check = fn(&Subject, &Path) -> Result<(), String>;

/// Every scripted check, by name.
pub const ALL: [(&str, Check); 7] = [
    ("provided methods", provided_methods),
    ("processors", processors),
    ("housekeeping", housekeeping),
    ("iteration", iteration),
    ("cursors", cursors),
    ("cursors of ordered classes", ordered_cursors),
    ("reopening", reopening),
];

fn b(text: &str) -> Bytes {
    Bytes(text.as_bytes().to_vec())
}

/// Runs `ops` one by one, each followed (for a class whose updates wait) by
/// a synchronization, and compares the whole database after each.
fn script(db: &dyn Dbm, model: &mut Model, ops: &[Op]) -> Result<(), String> {
    for (i, op) in ops.iter().enumerate() {
        let what = |e: String| format!("step {i} ({op:?}): {e}");
        step(db, model, op).map_err(what)?;
        if model.caps().deferred {
            step(db, model, &Op::Synchronize(false)).map_err(what)?;
        }
        read::compare(db, model).map_err(what)?;
    }
    Ok(())
}

/// Get, set with and without overwrite, remove, append, compare-exchange,
/// increment, the multi-key forms, rekey, export and import.
fn provided_methods(subject: &Subject, dir: &Path) -> Result<(), String> {
    let (_, db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    let n8 = || Bytes(7i64.to_be_bytes().to_vec());
    let ops = [
        Op::Get(b("a")),
        Op::Remove(b("a")),
        Op::Set(b("a"), b("1"), true),
        Op::Set(b("a"), b("2"), false),
        Op::Set(b("a"), b("3"), true),
        Op::Get(b("a")),
        Op::Set(b(""), b(""), false),
        Op::Append(b("a"), b("x"), b(",")),
        Op::Append(b("new"), b("y"), b(",")),
        Op::Append(b("new"), b("z"), b("")),
        Op::CompareExchange(b("a"), Expect::Current, Some(b("c"))),
        Op::CompareExchange(b("a"), Expect::Value(b("zzz")), None),
        Op::CompareExchange(b("b"), Expect::Absent, Some(b("b"))),
        Op::CompareExchange(b("b"), Expect::Absent, Some(b("again"))),
        Op::CompareExchange(b("b"), Expect::Current, None),
        Op::Increment(b("n"), 5, 10),
        Op::Increment(b("n"), INCREMENT_UNCHANGED, 0),
        Op::Increment(b("n"), -20, 0),
        Op::Increment(b("m"), INCREMENT_UNCHANGED, 3),
        Op::Set(b("m"), n8(), true),
        Op::Increment(b("m"), i64::MAX, 0),
        Op::Increment(b("a"), 1, 0),
        Op::SetMulti(vec![(b("c"), b("1")), (b("d"), b("2"))], false),
        Op::SetMulti(vec![(b("c"), b("3")), (b("e"), b("4"))], false),
        Op::SetMulti(vec![(b("c"), b("3")), (b("e"), b("4")), (b("c"), b("5"))], true),
        Op::SetAbsentMulti(vec![(b("c"), b("6")), (b("f"), b("7")), (b("f"), b("8"))]),
        Op::GetMulti(vec![b("c"), b("e"), b("none"), b("c")]),
        Op::RemoveMulti(vec![b("c"), b("c"), b("none")]),
        Op::CompareExchangeMulti(
            vec![(b("d"), Expect::Current), (b("e"), Expect::Absent)],
            vec![(b("f"), Some(b("6")))],
        ),
        Op::CompareExchangeMulti(
            vec![(b("d"), Expect::Current), (b("e"), Expect::Current), (b("none"), Expect::Absent)],
            vec![(b("d"), None), (b("f"), Some(b("6"))), (b("f"), Some(b("7")))],
        ),
        Op::Rekey { old: b("a"), new: b("g"), overwrite: false, copying: false },
        Op::Rekey { old: b("g"), new: b("e"), overwrite: false, copying: false },
        Op::Rekey { old: b("g"), new: b("e"), overwrite: true, copying: true },
        Op::Rekey { old: b("none"), new: b("h"), overwrite: true, copying: false },
        Op::Rekey { old: b("g"), new: b("g"), overwrite: false, copying: false },
        Op::Rekey { old: b("g"), new: b("h"), overwrite: false, copying: true },
        Op::Export,
        Op::Import(vec![(b("i"), b("9")), (b("a"), b("10"))]),
        Op::Export,
    ];
    script(db.as_ref(), &mut model, &ops)?;
    // The model itself, checked once by hand for a class without duplicates.
    if !subject.caps.duplicates {
        let got = db.get_multi(&[b"a", b"e", b"f", b"g", b"h", b"new", b"n"]).map_err(|e| e.to_string())?;
        let want: Vec<Option<Vec<u8>>> = [
            Some(&b"10"[..]),
            Some(b"c"),
            Some(b"7"),
            Some(b"c"),
            Some(b"c"),
            Some(b"yz"),
            Some(&(-5i64).to_be_bytes()[..]),
        ]
        .iter()
        .map(|v| v.map(<[u8]>::to_vec))
        .collect();
        if got != want {
            return Err(format!("after the script the values are {got:?}, expected {want:?}"));
        }
    }
    ok(db.close(), "close")
}

/// What a processor is shown and what its answers do; a read-only
/// processor's change is refused and changes nothing.
fn processors(subject: &Subject, dir: &Path) -> Result<(), String> {
    let (_, db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    let ops = [
        Op::Process(b("a"), Answer::Keep, true),
        Op::Process(b("a"), Answer::Set(b("1")), true),
        Op::Process(b("a"), Answer::Set(b("2")), true),
        Op::Process(b("a"), Answer::Keep, false),
        Op::Process(b("a"), Answer::Set(b("3")), false),
        Op::Process(b("a"), Answer::Remove, false),
        Op::Process(b("none"), Answer::Set(b("3")), false),
        Op::Process(b("b"), Answer::Remove, true),
        Op::Process(b("b"), Answer::Set(b("4")), true),
        Op::Process(b("b"), Answer::Remove, true),
        Op::ProcessMulti(
            vec![(b("a"), Answer::Set(b("5"))), (b("a"), Answer::Keep), (b("c"), Answer::Set(b("6")))],
            true,
        ),
        Op::ProcessMulti(
            vec![(b("a"), Answer::Remove), (b("a"), Answer::Set(b("7"))), (b("a"), Answer::Keep)],
            true,
        ),
        Op::ProcessMulti(vec![(b("c"), Answer::Keep), (b("a"), Answer::Keep)], false),
        Op::ProcessMulti(
            vec![(b("c"), Answer::Keep), (b("a"), Answer::Remove), (b("c"), Answer::Keep)],
            false,
        ),
        Op::ProcessMulti(vec![(b("c"), Answer::Set(b("8")))], false),
        Op::Set(b("d"), b("9"), true),
        Op::Set(b("e"), b("10"), true),
        Op::Each,
        Op::EachRefused(1),
        Op::EachRefused(2),
        Op::EachWrite(3),
        Op::EachWrite(4),
        Op::Each,
    ];
    script(db.as_ref(), &mut model, &ops)?;
    ok(db.close(), "close")
}

/// Count, clear, rebuild, synchronize and the figures every class answers.
fn housekeeping(subject: &Subject, dir: &Path) -> Result<(), String> {
    let (path, db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    let mut ops: Vec<Op> = (0..40).map(|i| Op::Set(b(&format!("{i}")), b(&"v".repeat(i)), true)).collect();
    ops.extend([
        Op::Count,
        Op::Rebuild,
        Op::Synchronize(false),
        Op::Synchronize(true),
        Op::Clear,
        Op::Count,
        Op::Set(b("after"), b("clear"), true),
        Op::Rebuild,
    ]);
    script(db.as_ref(), &mut model, &ops)?;
    // A clear takes updates not yet shown with it.
    step(db.as_ref(), &mut model, &Op::Set(b("pending"), b("x"), true))?;
    step(db.as_ref(), &mut model, &Op::Clear)?;
    step(db.as_ref(), &mut model, &Op::Synchronize(false))?;
    read::compare(db.as_ref(), &model)?;
    ok(db.should_be_rebuilt(), "should_be_rebuilt")?;
    ok(db.file_size(), "file_size")?;
    if ok(db.inspect(), "inspect")?.is_empty() {
        return Err("inspect answers no figures".into());
    }
    match (db.path(), subject.caps.has_file()) {
        (Some(p), true) if p == path => {}
        (None, false) => {}
        (p, _) => return Err(format!("path answers {p:?} for a database at {}", path.display())),
    }
    ok(db.close(), "close")
}

/// Every way of reading visits each of many records once: enough records
/// to fill many buckets, pages or shards.
fn iteration(subject: &Subject, dir: &Path) -> Result<(), String> {
    let (_, db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    for i in 0..300 {
        step(db.as_ref(), &mut model, &Op::Set(b(&format!("k{i:04}")), b(&format!("v{i}")), true))?;
    }
    step(db.as_ref(), &mut model, &Op::Synchronize(false))?;
    read::compare(db.as_ref(), &model)?;
    step(db.as_ref(), &mut model, &Op::Walk(7))?;
    step(db.as_ref(), &mut model, &Op::Synchronize(false))?;
    read::compare(db.as_ref(), &model)?;
    ok(db.close(), "close")
}

/// Cursors of every class: an empty database, first and next, a jump to a
/// key, set and remove at the cursor and past the end, changes made beside
/// a cursor; an unordered class's refusal of ordered moves.
fn cursors(subject: &Subject, dir: &Path) -> Result<(), String> {
    let (_, db) = subject.create(dir)?;
    let db = db.as_ref();
    let mut model = Model::new(subject.caps);
    let sync = |db: &dyn Dbm, model: &mut Model| step(db, model, &Op::Synchronize(false));
    let mut c = ok(db.iter(), "iter")?;
    ok(c.first(), "first on an empty database")?;
    if ok(c.get(), "get on an empty database")?.is_some() {
        return Err("a cursor of an empty database shows a record".into());
    }
    ok(c.next(), "next on an empty database")?;
    expect_err(c.set(b"x"), ErrorKind::NotFound, "set past the end")?;
    expect_err(c.remove(), ErrorKind::NotFound, "remove past the end")?;
    drop(c);
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        step(db, &mut model, &Op::Set(b(k), b(v), true))?;
    }
    sync(db, &mut model)?;
    // A jump lands on the key; changes beside the cursor show in its get.
    let mut c = ok(db.iter(), "iter")?;
    ok(c.jump(b"a"), "jump")?;
    let shows =
        |c: &mut dyn kuradb::dbm::Cursor, want: Option<(&str, &str)>, what: &str| -> Result<(), String> {
            let got = ok(c.get(), what)?;
            let want = want.map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()));
            if got != want {
                return Err(format!("{what}: the cursor shows {got:?}, expected {want:?}"));
            }
            Ok(())
        };
    shows(c.as_mut(), Some(("a", "1")), "get after a jump")?;
    step(db, &mut model, &Op::CompareExchange(b("a"), Expect::Current, Some(b("9"))))?;
    sync(db, &mut model)?;
    shows(c.as_mut(), Some(("a", "9")), "get after the record changed")?;
    ok(c.jump(b"a"), "jump")?;
    step(db, &mut model, &Op::Remove(b("a")))?;
    sync(db, &mut model)?;
    if ok(c.get(), "get after the record went")?.is_some_and(|(k, _)| k == b"a") {
        return Err("the cursor still shows a removed record".into());
    }
    // Set and remove at the cursor.
    ok(c.jump(b"b"), "jump")?;
    ok(c.set(b"20"), "set at the cursor")?;
    model.replace(b"b", b"20");
    sync(db, &mut model)?;
    ok(c.jump(b"c"), "jump")?;
    ok(c.remove(), "remove at the cursor")?;
    model.remove(b"c");
    sync(db, &mut model)?;
    drop(c);
    read::compare(db, &model)?;
    if subject.caps.order.is_none() {
        let mut c = ok(db.iter(), "iter")?;
        expect_err(c.jump(b"none"), ErrorKind::NotFound, "a jump to an absent key")?;
        expect_err(c.last(), ErrorKind::NotImplemented, "last")?;
        expect_err(c.previous(), ErrorKind::NotImplemented, "previous")?;
        expect_err(c.jump_lower(b"b", Edge::Inclusive), ErrorKind::NotImplemented, "jump_lower")?;
        expect_err(c.jump_upper(b"b", Edge::Inclusive), ErrorKind::NotImplemented, "jump_upper")?;
    }
    Ok(())
}

/// The moves of an ordered class's cursors, to each end and past it.
fn ordered_cursors(subject: &Subject, dir: &Path) -> Result<(), String> {
    if subject.caps.order.is_none() {
        return Ok(());
    }
    let (_, db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    let key = |n: i16| Bytes(super::ops::key_of(n, 1, subject.caps.order));
    let walk = |moves: Vec<Move>| Op::Cursor(moves);
    let mut ops =
        vec![walk(vec![Move::First, Move::Get, Move::Last, Move::Get, Move::Jump(key(0)), Move::Get])];
    ops.extend((0..12).map(|i| Op::Set(key(i * 3 - 15), b(&format!("v{i}")), true)));
    ops.extend([
        walk(vec![Move::First, Move::Get, Move::Next, Move::Get, Move::Next, Move::Previous, Move::Get]),
        walk(vec![
            Move::Last,
            Move::Get,
            Move::Previous,
            Move::Get,
            Move::Next,
            Move::Get,
            Move::Next,
            Move::Get,
        ]),
        walk(vec![Move::Next, Move::Get, Move::Previous, Move::Get]),
        walk(vec![Move::First, Move::Previous, Move::Get, Move::Next, Move::Get]),
        walk(vec![
            Move::Jump(key(0)),
            Move::Get,
            Move::Jump(key(1)),
            Move::Get,
            Move::Jump(key(100)),
            Move::Get,
        ]),
        walk(vec![Move::JumpLower(key(0), true), Move::Get, Move::JumpLower(key(0), false), Move::Get]),
        walk(vec![Move::JumpLower(key(1), false), Move::Get, Move::JumpLower(key(-100), true), Move::Get]),
        walk(vec![Move::JumpUpper(key(0), true), Move::Get, Move::JumpUpper(key(0), false), Move::Get]),
        walk(vec![Move::JumpUpper(key(-1), false), Move::Get, Move::JumpUpper(key(100), true), Move::Get]),
        walk(vec![
            Move::Jump(key(3)),
            Move::Set(b("set")),
            Move::Get,
            Move::Next,
            Move::Remove,
            Move::Previous,
        ]),
        walk(vec![Move::Last, Move::Remove, Move::Get, Move::Set(b("x")), Move::Remove]),
        walk(vec![
            Move::Jump(key(-3)),
            Move::Elsewhere(key(-3), None),
            Move::Get,
            Move::Elsewhere(key(-2), Some(b("new"))),
            Move::Previous,
            Move::Get,
        ]),
        Op::Walk(11),
    ]);
    script(db.as_ref(), &mut model, &ops)?;
    ok(db.close(), "close")
}

/// A class with a file keeps its records across closing and opening, for
/// reading (which refuses writes) and for writing, and copies them.
fn reopening(subject: &Subject, dir: &Path) -> Result<(), String> {
    if !subject.caps.has_file() {
        return Ok(());
    }
    let (path, db) = subject.create(dir)?;
    let mut model = Model::new(subject.caps);
    for i in 0..30 {
        step(db.as_ref(), &mut model, &Op::Set(b(&format!("{i}")), b(&format!("value {i}")), true))?;
    }
    step(db.as_ref(), &mut model, &Op::Synchronize(true))?;
    step(db.as_ref(), &mut model, &Op::Remove(b("3")))?;
    step(db.as_ref(), &mut model, &Op::Set(b("new"), b("unsynchronized"), true))?;
    ok(db.close(), "close")?;
    model.synchronize();
    let reader = subject.open(&path, false)?;
    read::compare(reader.as_ref(), &model).map_err(|e| format!("opened for reading: {e}"))?;
    expect_err(reader.set(b"k", b"v"), ErrorKind::ReadOnly, "a set on a reader")?;
    expect_err(reader.remove(b"1"), ErrorKind::ReadOnly, "a remove on a reader")?;
    read::compare(reader.as_ref(), &model).map_err(|e| format!("after refused writes: {e}"))?;
    ok(reader.close(), "close the reader")?;
    let db = subject.open(&path, true)?;
    read::compare(db.as_ref(), &model).map_err(|e| format!("opened for writing again: {e}"))?;
    step(db.as_ref(), &mut model, &Op::Set(b("more"), b("after reopening"), true))?;
    step(db.as_ref(), &mut model, &Op::Synchronize(false))?;
    let copy = dir.join("copy");
    std::fs::create_dir(&copy).map_err(|e| format!("make a directory for the copy: {e}"))?;
    ok(db.copy_file_data(&copy.join("casket"), Durability::Hard), "copy_file_data")?;
    let copied = subject.open(&copy.join("casket"), false)?;
    read::compare(copied.as_ref(), &model).map_err(|e| format!("the copy: {e}"))?;
    ok(copied.close(), "close the copy")?;
    // Dropping closes too.
    step(db.as_ref(), &mut model, &Op::Remove(b("4")))?;
    drop(db);
    model.synchronize();
    let db = subject.open(&path, false)?;
    read::compare(db.as_ref(), &model).map_err(|e| format!("after a drop: {e}"))?;
    ok(db.close(), "close")
}
