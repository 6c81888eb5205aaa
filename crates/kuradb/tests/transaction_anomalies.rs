//! The isolation anomalies of Adya's thesis and the Hermitage suite, each
//! shown not to happen in the transactions of `kuradb::dbm::txn`: every
//! test interleaves two or three transactions as the anomaly's history
//! does, step by step on one thread, and checks what each read and which
//! commits were refused. Each runs on a hash database, a tree and a set of
//! three tree shards (the predicate form of write skew needs a key order,
//! so it runs on the ordered ones only).
//!
//! The transactions are serializable by optimistic validation: a commit is
//! refused with `ErrorKind::Conflict` when a key or range it read was
//! changed by a commit after it began. So where the anomaly needs two
//! commits, the second one is refused; reads see the snapshot at begin.

use kuradb::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
use kuradb::dbm::{Access, Dbm};
use kuradb::{ErrorKind, Params, PolyDbm};

const OS: CommitDurability = CommitDurability::Os;

type Db = TransactionalDbm<PolyDbm>;

/// Opens the database `params` describes in `dir`.
fn open(dir: &std::path::Path, params: &str) -> Db {
    let params = Params::parse(params).expect("parameters");
    let db = PolyDbm::open(dir.join("anomaly"), Access::ReadWrite, &params).expect("open");
    let options = TransactionOptions::for_poly(&db).expect("options");
    TransactionalDbm::open(db, options).expect("wrap")
}

/// The databases every anomaly is checked on, by name.
const UNORDERED: &[(&str, &str)] = &[("hash", "dbm=hash,num_buckets=7")];
const ORDERED: &[(&str, &str)] = &[
    ("tree", "dbm=tree,max_page_size=96,max_branches=3"),
    ("tree shards", "dbm=tree,num_shards=3,max_page_size=96,max_branches=3"),
];

/// Runs `check` on a fresh database of each kind named, with x=10 and y=20.
fn each(kinds: &[&[(&str, &str)]], check: impl Fn(&Db, &str)) {
    for (name, params) in kinds.iter().flat_map(|k| k.iter()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path(), params);
        db.set(b"x", b"10").unwrap();
        db.set(b"y", b"20").unwrap();
        check(&db, name);
        db.close().unwrap_or_else(|e| panic!("[{name}] close: {e}"));
    }
}

fn all(check: impl Fn(&Db, &str)) {
    each(&[UNORDERED, ORDERED], check)
}

fn value(v: &[u8]) -> Option<Vec<u8>> {
    Some(v.to_vec())
}

#[track_caller]
fn assert_conflict(result: kuradb::Result<u64>, what: &str) {
    match result {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Conflict, "{what}: {e}"),
        Ok(seq) => panic!("{what}: committed (seq {seq}); the anomaly's second commit must be refused"),
    }
}

/// G0: two transactions overwrite each other's uncommitted writes of x and
/// y. Blind writes do not conflict, but the result must be one writer's x
/// with the same writer's y, the last to commit.
#[test]
fn dirty_write_g0() {
    all(|db, name| {
        for first_commits in [true, false] {
            db.set(b"x", b"10").unwrap();
            db.set(b"y", b"20").unwrap();
            let mut t1 = db.begin(OS);
            let mut t2 = db.begin(OS);
            t1.set(b"x", b"11");
            t2.set(b"x", b"12");
            t1.set(b"y", b"21");
            t2.set(b"y", b"22");
            // Neither sees the other's write, nor does anyone else.
            assert_eq!(t1.get(b"x").unwrap(), value(b"11"), "[{name}]");
            assert_eq!(t2.get(b"x").unwrap(), value(b"12"), "[{name}]");
            assert_eq!(db.get(b"x").unwrap(), value(b"10"), "[{name}]");
            let (a, b) = if first_commits { (t1, t2) } else { (t2, t1) };
            a.commit().unwrap();
            b.commit().unwrap();
            let last = if first_commits { (b"12", b"22") } else { (b"11", b"21") };
            assert_eq!(
                (db.get(b"x").unwrap(), db.get(b"y").unwrap()),
                (value(last.0), value(last.1)),
                "[{name}] x and y must come from the same (last) writer"
            );
        }
        // With a read of what it overwrites, the second writer is refused.
        let mut t1 = db.begin(OS);
        let mut t2 = db.begin(OS);
        t1.get(b"x").unwrap();
        t2.get(b"x").unwrap();
        t1.set(b"x", b"13");
        t2.set(b"x", b"14");
        t1.set(b"y", b"23");
        t2.set(b"y", b"24");
        t1.commit().unwrap();
        assert_conflict(t2.commit(), &format!("[{name}] G0 with reads"));
        assert_eq!((db.get(b"x").unwrap(), db.get(b"y").unwrap()), (value(b"13"), value(b"23")), "[{name}]");
    });
}

/// G1a: a transaction reads a value another wrote and then aborted.
#[test]
fn aborted_read_g1a() {
    all(|db, name| {
        for how in ["abort", "drop", "rollback"] {
            let mut t1 = db.begin(OS);
            let point = t1.savepoint();
            t1.set(b"x", b"101");
            let mut t2 = db.begin(OS);
            assert_eq!(t2.get(b"x").unwrap(), value(b"10"), "[{name}] {how}: T2 sees the uncommitted write");
            let view = db.snapshot().unwrap();
            match how {
                "abort" => t1.abort(),
                "drop" => drop(t1),
                _ => {
                    t1.rollback_to(point).unwrap();
                    t1.commit().unwrap();
                }
            }
            assert_eq!(t2.get(b"x").unwrap(), value(b"10"), "[{name}] {how}");
            assert_eq!(view.get(b"x").unwrap(), value(b"10"), "[{name}] {how}");
            assert_eq!(db.get(b"x").unwrap(), value(b"10"), "[{name}] {how}");
            t2.set(b"y", b"21");
            // Nothing T2 read changed: the aborted write was never a change.
            t2.commit().unwrap_or_else(|e| panic!("[{name}] {how}: {e}"));
            db.set(b"y", b"20").unwrap();
        }
    });
}

/// G1b: a transaction reads a value another wrote on its way to a different
/// final value (before it overwrote it, or before a rollback to a savepoint).
#[test]
fn intermediate_read_g1b() {
    all(|db, name| {
        let mut t1 = db.begin(OS);
        t1.set(b"x", b"101");
        let mut t2 = db.begin(OS);
        assert_eq!(t2.get(b"x").unwrap(), value(b"10"), "[{name}]");
        t1.set(b"x", b"11");
        let point = t1.savepoint();
        t1.set(b"y", b"999");
        assert_eq!(t2.get(b"y").unwrap(), value(b"20"), "[{name}]");
        t1.rollback_to(point).unwrap();
        t1.commit().unwrap();
        // T2 still sees its snapshot, never the intermediate values.
        assert_eq!(t2.get(b"x").unwrap(), value(b"10"), "[{name}]");
        assert_eq!(t2.get(b"y").unwrap(), value(b"20"), "[{name}]");
        // A reader after the commit sees only the final values.
        let mut t3 = db.begin(OS);
        assert_eq!(t3.get(b"x").unwrap(), value(b"11"), "[{name}]");
        assert_eq!(t3.get(b"y").unwrap(), value(b"20"), "[{name}] the rolled-back write shows");
        t3.commit().unwrap();
        // T2 read x, which T1 changed since: its write must not commit.
        t2.set(b"z", b"1");
        assert_conflict(t2.commit(), &format!("[{name}] G1b"));
        assert_eq!(db.get(b"z").unwrap(), None, "[{name}]");
    });
}

/// G1c: each of two transactions reads what the other writes, so each
/// would precede the other. At most one commits.
#[test]
fn circular_information_flow_g1c() {
    all(|db, name| {
        let mut t1 = db.begin(OS);
        let mut t2 = db.begin(OS);
        t1.set(b"x", b"11");
        t2.set(b"y", b"22");
        assert_eq!(t1.get(b"y").unwrap(), value(b"20"), "[{name}]");
        assert_eq!(t2.get(b"x").unwrap(), value(b"10"), "[{name}]");
        t1.commit().unwrap();
        assert_conflict(t2.commit(), &format!("[{name}] G1c"));
        assert_eq!((db.get(b"x").unwrap(), db.get(b"y").unwrap()), (value(b"11"), value(b"20")), "[{name}]");
    });
}

/// P4: two transactions read x and each writes x + 1; one update would be lost.
#[test]
fn lost_update_p4() {
    all(|db, name| {
        let mut t1 = db.begin(OS);
        let mut t2 = db.begin(OS);
        let read = |v: Option<Vec<u8>>| -> i64 { String::from_utf8(v.unwrap()).unwrap().parse().unwrap() };
        let a = read(t1.get(b"x").unwrap());
        let b = read(t2.get(b"x").unwrap());
        t1.set(b"x", (a + 1).to_string().as_bytes());
        t2.set(b"x", (b + 1).to_string().as_bytes());
        t1.commit().unwrap();
        assert_conflict(t2.commit(), &format!("[{name}] P4"));
        assert_eq!(db.get(b"x").unwrap(), value(b"11"), "[{name}]");
        // The same with the transactions' own increments, retried by `run`:
        // every increment counts.
        db.set(b"n", &0i64.to_be_bytes()).unwrap();
        let mut t1 = db.begin(OS);
        t1.increment(b"n", 1, 0).unwrap();
        let n = db.run(OS, 3, |tx| tx.increment(b"n", 1, 0)).unwrap();
        assert_eq!(n, 1, "[{name}]");
        assert_conflict(t1.commit(), &format!("[{name}] P4 by increments"));
        assert_eq!(db.increment(b"n", 1, 0).unwrap(), 2, "[{name}]");
    });
}

/// G-single (read skew): T1 reads x, T2 moves 2 from y to x... and commits,
/// then T1 reads y. T1 must see x and y of one state (sum 30), and a write
/// of T1 based on them must not commit.
#[test]
fn read_skew_g_single() {
    all(|db, name| {
        for writes in [false, true] {
            db.set(b"x", b"10").unwrap();
            db.set(b"y", b"20").unwrap();
            let mut t1 = db.begin(OS);
            assert_eq!(t1.get(b"x").unwrap(), value(b"10"), "[{name}]");
            let mut t2 = db.begin(OS);
            assert_eq!(t2.get(b"x").unwrap(), value(b"10"), "[{name}]");
            assert_eq!(t2.get(b"y").unwrap(), value(b"20"), "[{name}]");
            t2.set(b"x", b"12");
            t2.set(b"y", b"18");
            t2.commit().unwrap();
            assert_eq!(t1.get(b"y").unwrap(), value(b"20"), "[{name}] T1 sees y after T2 but x before");
            let mut view: Vec<_> = t1.items().unwrap();
            view.sort();
            assert_eq!(view, [(b"x".to_vec(), b"10".to_vec()), (b"y".to_vec(), b"20".to_vec())], "[{name}]");
            if writes {
                t1.set(b"sum", b"30");
            }
            // T1 read what T2 changed since it began: the OCC rule refuses
            // its commit, read-only or not.
            assert_conflict(t1.commit(), &format!("[{name}] G-single, writing {writes}"));
            assert_eq!(db.get(b"sum").unwrap(), None, "[{name}]");
        }
    });
}

/// G2-item (write skew): both read x and y, whose sum must stay positive;
/// each withdraws from a different one. The second commit is refused.
#[test]
fn write_skew_g2_item() {
    all(|db, name| {
        let mut t1 = db.begin(OS);
        let mut t2 = db.begin(OS);
        for t in [&mut t1, &mut t2] {
            assert_eq!(
                (t.get(b"x").unwrap(), t.get(b"y").unwrap()),
                (value(b"10"), value(b"20")),
                "[{name}]"
            );
        }
        // Each sees 30 and takes out 25 from its own account.
        t1.set(b"x", b"-15");
        t2.set(b"y", b"-5");
        t1.commit().unwrap();
        assert_conflict(t2.commit(), &format!("[{name}] G2-item"));
        assert_eq!((db.get(b"x").unwrap(), db.get(b"y").unwrap()), (value(b"-15"), value(b"20")), "[{name}]");
    });
}

/// G2 (the predicate form, anti-dependency cycles through a range): both
/// read the on-call doctors by a range and, seeing two, each takes one off
/// call; or both count the tasks of a project by a range and each adds one
/// (a phantom). The second commit is refused, and a range read twice in a
/// transaction shows no phantom.
#[test]
fn predicate_write_skew_g2_over_a_range() {
    each(&[ORDERED], |db, name| {
        db.set(b"doctor/alice", b"on").unwrap();
        db.set(b"doctor/bob", b"on").unwrap();
        let range = (Some(&b"doctor/"[..]), Some(&b"doctor0"[..]));
        let mut t1 = db.begin(OS);
        let mut t2 = db.begin(OS);
        assert_eq!(t1.range(range.0, range.1).unwrap().len(), 2, "[{name}]");
        assert_eq!(t2.range(range.0, range.1).unwrap().len(), 2, "[{name}]");
        t1.set(b"doctor/alice", b"off");
        t2.set(b"doctor/bob", b"off");
        t1.commit().unwrap();
        assert_conflict(t2.commit(), &format!("[{name}] G2 on updates in a range"));

        // Phantoms: each inserts a new key into the range it read.
        for k in [&b"task/1"[..], b"task/2"] {
            db.set(k, b"open").unwrap();
        }
        let range = (Some(&b"task/"[..]), Some(&b"task0"[..]));
        let mut t1 = db.begin(OS);
        let mut t2 = db.begin(OS);
        let mut t3 = db.begin(OS);
        assert_eq!(t1.range(range.0, range.1).unwrap().len(), 2, "[{name}]");
        assert_eq!(t2.range(range.0, range.1).unwrap().len(), 2, "[{name}]");
        assert_eq!(t3.range(range.0, range.1).unwrap().len(), 2, "[{name}]");
        t1.set(b"task/3", b"open");
        t2.set(b"task/4", b"open");
        // A key outside every range read does not conflict.
        t3.set(b"other", b"1");
        t1.commit().unwrap();
        // No phantom within a transaction: T2 reads the range again as before.
        let again = t2.range(range.0, range.1).unwrap();
        assert_eq!(again.len(), 3, "[{name}] its own insert and the two it saw: {again:?}");
        assert!(!again.iter().any(|(k, _)| k == b"task/3"), "[{name}] a phantom: {again:?}");
        assert_conflict(t2.commit(), &format!("[{name}] G2 phantom"));
        assert_conflict(t3.commit(), &format!("[{name}] G2 phantom, writing outside"));
        let mut t4 = db.begin(OS);
        assert_eq!(t4.range(Some(b"zzz"), None).unwrap(), vec![], "[{name}]");
        t4.set(b"x", b"1");
        db.set(b"task/5", b"open").unwrap();
        t4.commit().unwrap_or_else(|e| panic!("[{name}] a change outside the range it read: {e}"));
        assert_eq!(db.get(b"task/4").unwrap(), None, "[{name}]");
    });
}
