//! Update logging through `LoggedDbm`, as `PolyDbm`/`ShardDbm` set it up from
//! `ulog_prefix`: every change of every class appears once, in order, with
//! the final value; a log that fails fails the change; a mirror stays equal.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kuradb::dbm::{Access, Dbm, Durability, OnDuplicate, Rekey, INCREMENT_UNCHANGED};
use kuradb::ulog::{
    apply_update_logs, ApplyFilter, DbmUpdateLogger, LoggedDbm, MessageQueueReader, UpdateEntry,
    UpdateLogger, UpdateOp,
};
use kuradb::{DbmClass, Error, ErrorKind, Params, PolyDbm, Result, StdTreeDbm};
use proptest::prelude::*;

fn set(key: &str, value: &[u8]) -> UpdateOp {
    UpdateOp::Set { key: key.as_bytes().to_vec(), value: value.to_vec() }
}

fn remove(key: &str) -> UpdateOp {
    UpdateOp::Remove { key: key.as_bytes().to_vec() }
}

/// Every entry of the log at `prefix`.
fn entries(prefix: &std::path::Path) -> Vec<UpdateEntry> {
    let mut reader = MessageQueueReader::new(prefix, 0);
    let mut out = Vec::new();
    while let Some((_, message)) = reader.read(Duration::ZERO).unwrap() {
        out.push(UpdateEntry::decode(&message).unwrap());
    }
    out
}

/// Every record of `db`, in key order.
fn records(db: &dyn Dbm) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        out.insert(k.to_vec(), v.to_vec());
        kuradb::Action::Keep
    })
    .unwrap();
    out
}

#[test]
fn every_change_of_every_class_is_logged_once_in_order_with_its_final_value() {
    for class in ["hash", "tree", "skip", "tiny", "baby", "cache", "stdhash", "stdtree"] {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("ulog");
        let params = Params::parse(&format!(
            "dbm={class},ulog_prefix={},ulog_server_id=7,ulog_dbm_index=2",
            prefix.display()
        ))
        .unwrap();
        let db = PolyDbm::open(dir.path().join("casket"), Access::ReadWrite, &params).unwrap();
        // The skip database shows its changes at the next synchronization.
        let step = |done: Result<()>| {
            done.unwrap();
            db.synchronize(Durability::Soft).unwrap();
        };
        step(db.set(b"a", b"1"));
        step(db.set(b"b", b"2"));
        assert_eq!(db.insert(b"b", b"9").unwrap_err().kind(), ErrorKind::Duplication);
        step(db.append(b"a", b"x", b","));
        step(db.increment(b"c", 5, 0).map(|_| ()));
        step(db.increment(b"c", INCREMENT_UNCHANGED, 0).map(|_| ()));
        step(db.compare_exchange(b"b", Some(b"2"), Some(b"3")).map(|done| assert!(done)));
        step(db.compare_exchange(b"b", Some(b"2"), Some(b"4")).map(|done| assert!(!done)));
        step(db.remove(b"b").map(|_| ()));
        step(db.set_multi(&[(b"d", b"4"), (b"e", b"5")]));
        step(db.remove_multi(&[b"d"]).map(|_| ()));
        step(db.rekey(b"e", b"f", Rekey::Move, OnDuplicate::Replace));
        let mut cursor = db.iter().unwrap();
        cursor.first().unwrap();
        let (first, _) = cursor.get().unwrap().unwrap();
        cursor.set(b"cur").unwrap();
        drop(cursor);
        db.synchronize(Durability::Soft).unwrap();
        let mut cursor = db.iter().unwrap();
        cursor.jump(&first).unwrap();
        cursor.remove().unwrap();
        drop(cursor);
        db.synchronize(Durability::Soft).unwrap();
        let before_clear = records(&db);
        step(db.clear());
        let first = String::from_utf8(first).unwrap();
        let expected = vec![
            set("a", b"1"),
            set("b", b"2"),
            set("a", b"1,x"),
            set("c", &5i64.to_be_bytes()),
            set("b", b"3"),
            remove("b"),
            set("d", b"4"),
            set("e", b"5"),
            remove("d"),
            set("f", b"5"),
            remove("e"),
            set(&first, b"cur"),
            remove(&first),
            UpdateOp::Clear,
        ];
        let logged = entries(&prefix);
        assert!(logged.iter().all(|e| (e.server_id, e.dbm_index) == (7, 2)), "{class}");
        let ops: Vec<UpdateOp> = logged.into_iter().map(|e| e.op).collect();
        assert_eq!(ops, expected, "{class}");
        // Up to the clear, the log replays into the state the database had.
        let replica = StdTreeDbm::new(&Default::default());
        let mut reader = MessageQueueReader::new(&prefix, 0);
        for _ in 0..expected.len() - 1 {
            let (_, message) = reader.read(Duration::ZERO).unwrap().unwrap();
            kuradb::ulog::apply_entry(&replica, &UpdateEntry::decode(&message).unwrap().op).unwrap();
        }
        assert_eq!(records(&replica), before_clear, "{class}");
        db.close().unwrap();
    }
}

/// A logger whose writes fail once `failing` is set.
struct Failing {
    failing: std::sync::atomic::AtomicBool,
}

impl Failing {
    fn check(&self) -> Result<()> {
        if self.failing.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::new(ErrorKind::System, "no space left on the log device"));
        }
        Ok(())
    }
}

impl UpdateLogger for Failing {
    fn write_set(&self, _: &[u8], _: &[u8]) -> Result<()> {
        self.check()
    }
    fn write_remove(&self, _: &[u8]) -> Result<()> {
        self.check()
    }
    fn write_clear(&self) -> Result<()> {
        self.check()
    }
    fn synchronize(&self, _: Durability) -> Result<()> {
        self.check()
    }
}

#[test]
fn a_failed_log_write_fails_the_change_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let logger = Arc::new(Failing { failing: false.into() });
    let inner = PolyDbm::open(dir.path().join("a.tkh"), Access::ReadWrite, &Params::new()).unwrap();
    let db = LoggedDbm::new(inner, logger.clone());
    db.set(b"k", b"v").unwrap();
    logger.failing.store(true, std::sync::atomic::Ordering::Relaxed);
    let failures: Vec<(&str, Error)> = vec![
        ("set", db.set(b"k", b"w").unwrap_err()),
        ("append", db.append(b"k", b"w", b"").unwrap_err()),
        ("increment", db.increment(b"n", 1, 0).unwrap_err()),
        ("remove", db.remove(b"k").unwrap_err()),
        ("set_multi", db.set_multi(&[(b"x", b"1")]).unwrap_err()),
        ("clear", db.clear().unwrap_err()),
        ("cursor", {
            let mut cursor = db.iter().unwrap();
            cursor.first().unwrap();
            cursor.set(b"w").unwrap_err()
        }),
        ("synchronize", db.synchronize(Durability::Soft).unwrap_err()),
    ];
    for (what, err) in failures {
        assert!(err.message().contains("no space left on the log device"), "{what}: {err}");
        if what != "synchronize" {
            assert!(err.message().contains("update log could not be written"), "{what}: {err}");
        }
    }
    // Nothing changed.
    assert_eq!(records(&db), BTreeMap::from([(b"k".to_vec(), b"v".to_vec())]));
    logger.failing.store(false, std::sync::atomic::Ordering::Relaxed);
    db.close().unwrap();
}

#[test]
fn a_shard_set_logs_each_shard_with_its_index_into_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let params =
        Params::parse(&format!("num_shards=3,dbm=hash,ulog_prefix={},ulog_dbm_index=10", prefix.display()))
            .unwrap();
    let db = PolyDbm::open(dir.path().join("set"), Access::ReadWrite, &params).unwrap();
    for i in 0..60 {
        db.set(format!("k{i}").as_bytes(), b"v").unwrap();
    }
    let PolyDbm::Shards(shards) = &db else { panic!("not a shard set") };
    let per_shard: Vec<u64> = shards.shards().iter().map(|s| s.count().unwrap()).collect();
    db.close().unwrap();
    let logged = entries(&prefix);
    assert_eq!(logged.len(), 60);
    for (i, count) in per_shard.iter().enumerate() {
        let index = 10 + i as u32;
        assert_eq!(logged.iter().filter(|e| e.dbm_index == index).count() as u64, *count);
        // One shard's entries rebuild that shard alone.
        let replica = StdTreeDbm::new(&Default::default());
        let filter = ApplyFilter { dbm_index: Some(index), ..Default::default() };
        apply_update_logs(&replica, &prefix, &filter).unwrap();
        assert_eq!(replica.count().unwrap(), *count);
    }
    let err = PolyDbm::open(
        dir.path().join("x.tkh"),
        Access::ReadWrite,
        &Params::parse("ulog_server_id=1").unwrap(),
    )
    .err()
    .unwrap();
    assert!(err.message().contains("ulog_server_id needs ulog_prefix"), "{err}");
    let bad = format!("ulog_prefix={},ulog_dbm_index=many", prefix.display());
    let err = PolyDbm::open(dir.path().join("x.tkh"), Access::ReadWrite, &Params::parse(&bad).unwrap())
        .err()
        .unwrap();
    assert!(err.message().contains("ulog_dbm_index must be a number"), "{err}");
}

#[derive(Clone, Debug)]
enum Op {
    Set(u8, u8),
    Append(u8, u8),
    Increment(u8, i8),
    Remove(u8),
    CompareExchange(u8, Option<u8>, Option<u8>),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..12u8, any::<u8>()).prop_map(|(k, v)| Op::Set(k, v)),
        2 => (0..12u8, any::<u8>()).prop_map(|(k, v)| Op::Append(k, v)),
        2 => (12..16u8, any::<i8>()).prop_map(|(k, d)| Op::Increment(k, d)),
        3 => (0..12u8).prop_map(Op::Remove),
        2 => (0..12u8, proptest::option::of(0..3u8), proptest::option::of(0..3u8))
            .prop_map(|(k, e, d)| Op::CompareExchange(k, e, d)),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The mirror a DbmUpdateLogger keeps equals the database and a model
    /// after any sequence of changes.
    #[test]
    fn a_mirror_stays_equal_to_the_database(ops in proptest::collection::vec(op(), 1..60)) {
        let mirror: Arc<dyn Dbm> = Arc::new(StdTreeDbm::new(&Default::default()));
        let inner = PolyDbm::open_class(DbmClass::Baby, None, Access::ReadWrite, &Params::new()).unwrap();
        let db = LoggedDbm::new(inner, Arc::new(DbmUpdateLogger::new(mirror.clone())));
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Set(k, v) => {
                    db.set(&[k], &[v]).unwrap();
                    model.insert(vec![k], vec![v]);
                }
                Op::Append(k, v) => {
                    db.append(&[k], &[v], b"+").unwrap();
                    match model.get_mut(&vec![k]) {
                        Some(old) => old.extend_from_slice(&[b'+', v]),
                        None => drop(model.insert(vec![k], vec![v])),
                    }
                }
                Op::Increment(k, d) => {
                    let n = db.increment(&[k], d.into(), 0).unwrap();
                    model.insert(vec![k], n.to_be_bytes().to_vec());
                }
                Op::Remove(k) => {
                    db.remove(&[k]).unwrap();
                    model.remove(&vec![k]);
                }
                Op::CompareExchange(k, expected, desired) => {
                    let (e, d) = (expected.map(|e| [e]), desired.map(|d| [d]));
                    if db.compare_exchange(&[k], e.as_ref().map(|e| &e[..]), d.as_ref().map(|d| &d[..])).unwrap() {
                        match d {
                            Some(d) => model.insert(vec![k], d.to_vec()),
                            None => model.remove(&vec![k]),
                        };
                    }
                }
                Op::Clear => {
                    db.clear().unwrap();
                    model.clear();
                }
            }
        }
        prop_assert_eq!(records(&db), model.clone());
        prop_assert_eq!(records(mirror.as_ref()), model);
    }
}

/// A database with expiry logs its values as stored, expiry times with
/// them; replayed into another database's stored form, the records keep
/// their expiry.
#[test]
fn a_log_of_a_database_with_expiry_replays_with_the_expiries() {
    use kuradb::dbm::expiry::Expiry;
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("log");
    let params = format!("expiry=true,ulog_prefix={}", prefix.display());
    let db =
        PolyDbm::open(dir.path().join("a.kt"), Access::ReadWrite, &Params::parse(&params).unwrap()).unwrap();
    let layer = db.expiring().unwrap();
    layer.set_expiring(b"later", b"1", Some(4_102_444_800_000)).unwrap();
    db.set(b"never", b"2").unwrap();
    layer.set_with_ttl(b"short", b"3", Duration::from_millis(1)).unwrap();
    db.close().unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mirror =
        PolyDbm::open(dir.path().join("b.kh"), Access::ReadWrite, &Params::parse("expiry=true").unwrap())
            .unwrap();
    let filter = ApplyFilter { min_timestamp: 0, server_id: None, dbm_index: None };
    apply_update_logs(mirror.stored(), &prefix, &filter).unwrap();
    let layer = mirror.expiring().unwrap();
    assert_eq!(layer.get_expiring(b"later").unwrap(), Some((b"1".to_vec(), Some(4_102_444_800_000))));
    assert_eq!(layer.get_expiring(b"never").unwrap(), Some((b"2".to_vec(), None)));
    assert_eq!(mirror.get(b"short").unwrap(), None, "expired on the mirror as on the source");
    assert_eq!(mirror.count().unwrap(), 2);
    mirror.close().unwrap();
}
