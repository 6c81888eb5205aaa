use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::dbm::hash::HashDbm;
use crate::dbm::std_map::StdTreeDbm;
use crate::dbm::tree::TreeDbm;

const START: u64 = 1_700_000_000_000;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn records(db: &dyn Dbm) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut all = Vec::new();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    while let Some(record) = cursor.get().unwrap() {
        all.push(record);
        cursor.next().unwrap();
    }
    all.sort();
    all
}

#[test]
fn an_expired_record_is_gone_for_every_read() {
    let clock = Arc::new(ManualClock::new(START));
    let db = ExpiringDbm::with_clock(StdTreeDbm::new(&Default::default()), clock.clone()).unwrap();
    db.set_with_ttl(b"a", b"1", secs(10)).unwrap();
    db.set_with_ttl(b"b", b"2", secs(20)).unwrap();
    db.set(b"c", b"3").unwrap();
    assert_eq!(db.count().unwrap(), 3);
    assert_eq!(db.ttl(b"a").unwrap(), Some(Some(secs(10))));
    assert_eq!(db.ttl(b"c").unwrap(), Some(None));
    assert_eq!(db.ttl(b"zzz").unwrap(), None);
    clock.advance(secs(10));
    assert_eq!(db.get(b"a").unwrap(), None);
    assert!(!db.contains(b"a").unwrap());
    assert_eq!(db.get_multi(&[b"a", b"b"]).unwrap(), vec![None, Some(b"2".to_vec())]);
    assert_eq!(db.count().unwrap(), 2);
    assert_eq!(records(&db), vec![(b"b".to_vec(), b"2".to_vec()), (b"c".to_vec(), b"3".to_vec())]);
    let mut walked = Vec::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        walked.push((k.to_vec(), v.to_vec()));
        Action::Keep
    })
    .unwrap();
    assert_eq!(walked.len(), 2);
    // Ordered walks from either end step over the expired record and the marker.
    let mut cursor = db.iter().unwrap();
    cursor.last().unwrap();
    assert_eq!(cursor.get().unwrap().unwrap().0, b"c");
    cursor.previous().unwrap();
    assert_eq!(cursor.get().unwrap().unwrap().0, b"b");
    cursor.previous().unwrap();
    assert_eq!(cursor.get().unwrap(), None);
    // The expired record is still stored until a sweep removes it.
    assert!(db.inner().contains(b"a").unwrap());
    assert_eq!(
        db.sweep(100).unwrap(),
        SweepReport { visited: 4, removed: 1, finished_pass: true, expiring: 1, ttl_ms: 10_000 }
    );
    // A front end reading the stored values sees the tag taken apart.
    let stored = db.inner().get(b"b").unwrap().unwrap();
    assert_eq!(stored_value(&stored).unwrap(), (Some(START + 20_000), &b"2"[..]));
    assert_eq!(stored_value(&db.inner().get(b"c").unwrap().unwrap()).unwrap(), (None, &b"3"[..]));
    assert!(stored_value(b"").is_err());
    assert!(!db.inner().contains(b"a").unwrap());
}

#[test]
fn set_replaces_the_expiry_and_changes_of_the_value_keep_it() {
    let clock = Arc::new(ManualClock::new(START));
    let db = ExpiringDbm::with_clock(StdTreeDbm::new(&Default::default()), clock.clone()).unwrap();
    db.set_with_ttl(b"k", b"v", secs(5)).unwrap();
    db.append(b"k", b"w", b",").unwrap();
    assert_eq!(db.get_expiring(b"k").unwrap(), Some((b"v,w".to_vec(), Some(START + 5000))));
    db.set_with_ttl(b"n", &7i64.to_be_bytes(), secs(5)).unwrap();
    assert_eq!(db.increment(b"n", 1, 0).unwrap(), 8);
    assert_eq!(db.expiry(b"n").unwrap(), Some(Some(START + 5000)));
    assert!(db.compare_exchange(b"k", Some(b"v,w"), Some(b"x")).unwrap());
    assert_eq!(db.expiry(b"k").unwrap(), Some(Some(START + 5000)));
    db.set(b"k", b"y").unwrap();
    assert_eq!(db.expiry(b"k").unwrap(), Some(None), "set replaces the expiry");
    assert!(db.expire_after(b"k", secs(3)).unwrap());
    assert!(!db.expire_after(b"absent", secs(3)).unwrap());
    assert!(db.persist(b"k").unwrap());
    assert!(!db.persist(b"k").unwrap(), "nothing to persist");
    // A time already past removes the record, as Redis's EXPIRE does.
    assert!(db.expire_at(b"k", Some(START - 1)).unwrap());
    assert_eq!(db.get(b"k").unwrap(), None);
    db.set_expiring(b"gone", b"v", Some(START)).unwrap();
    assert!(!db.inner().contains(b"gone").unwrap());
    // Conditional: only where there is no expiry yet (Redis's NX).
    db.set(b"c", b"v").unwrap();
    let nx = |expiry: Option<u64>| expiry.is_none().then_some(Some(START + 9000));
    assert!(db.update_expiry(b"c", nx).unwrap());
    assert_eq!(db.expiry(b"c").unwrap(), Some(Some(START + 9000)));
    assert!(db.update_expiry(b"c", |e: Option<u64>| e.is_none().then_some(Some(START + 1))).unwrap());
    assert_eq!(db.expiry(b"c").unwrap(), Some(Some(START + 9000)), "NX left it");
    // The expired record counts as absent for insert.
    db.set_with_ttl(b"i", b"old", secs(1)).unwrap();
    clock.advance(secs(1));
    db.insert(b"i", b"new").unwrap();
    assert_eq!(db.get_expiring(b"i").unwrap(), Some((b"new".to_vec(), None)));
}

#[test]
fn the_marker_is_hidden_and_refused() {
    let db = ExpiringDbm::open(StdTreeDbm::new(&Default::default())).unwrap();
    assert_eq!(db.count().unwrap(), 0);
    assert_eq!(db.get(EXPIRY_MARKER).unwrap(), None);
    assert_eq!(db.set(EXPIRY_MARKER, b"x").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(db.remove(EXPIRY_MARKER).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(db.set_multi(&[(EXPIRY_MARKER, b"x")]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(records(&db).is_empty());
    // A database with records written without the layer is refused, naming why.
    let plain = StdTreeDbm::new(&Default::default());
    plain.set(b"k", b"v").unwrap();
    let err = ExpiringDbm::open(plain).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Infeasible);
    assert!(err.message().contains("written without expiry"), "{err}");
}

#[test]
fn expiry_survives_reopening_and_a_clock_stepped_back_brings_nothing_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ttl.kt");
    let clock = Arc::new(ManualClock::new(START));
    {
        let db = ExpiringDbm::with_clock(TreeDbm::builder().open(&path).unwrap(), clock.clone()).unwrap();
        db.set_with_ttl(b"a", b"1", secs(10)).unwrap();
        db.set_with_ttl(b"b", b"2", secs(100)).unwrap();
        clock.advance(secs(20));
        assert_eq!(db.get(b"a").unwrap(), None);
        Box::new(db).close().unwrap();
    }
    // The clock goes back before a's expiry: a stays gone.
    clock.set(START);
    let db = ExpiringDbm::with_clock(TreeDbm::builder().open(&path).unwrap(), clock.clone()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.now_ms(), START + 20_000);
    assert_eq!(db.ttl(b"b").unwrap(), Some(Some(secs(80))));
    assert!(ExpiringDbm::is_expiring(db.inner()).unwrap());
    Box::new(db).close().unwrap();
    // A reader opens it, reads past the high-water mark, and closes: it
    // cannot keep the mark, and need not.
    clock.set(START + 200_000);
    let reader =
        ExpiringDbm::with_clock(TreeDbm::builder().open_read_only(&path).unwrap(), clock.clone()).unwrap();
    assert_eq!(reader.get(b"b").unwrap(), None);
    assert_eq!(reader.count().unwrap(), 0);
    reader.synchronize(Durability::Soft).unwrap();
    Box::new(reader).close().unwrap();
}

#[test]
fn a_sweep_is_bounded_resumes_and_spares_a_rewritten_record() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START));
    let db =
        ExpiringDbm::with_clock(HashDbm::builder().open(dir.path().join("s.kh")).unwrap(), clock.clone())
            .unwrap();
    for i in 0..100 {
        db.set_with_ttl(format!("k{i}").as_bytes(), b"v", secs(1)).unwrap();
    }
    clock.advance(secs(1));
    let mut removed = 0;
    let mut passes = 0;
    while passes < 2 {
        let report = db.sweep(30).unwrap();
        assert!(report.visited <= 30);
        removed += report.removed;
        passes += usize::from(report.finished_pass);
    }
    assert_eq!(removed, 100);
    assert_eq!(db.inner().count().unwrap(), 1, "only the marker is left");
    // A record written again between the look and the removal stays.
    db.set_with_ttl(b"r", b"old", secs(1)).unwrap();
    clock.advance(secs(1));
    db.set(b"r", b"new").unwrap();
    db.sweep(usize::MAX).unwrap();
    assert_eq!(db.get(b"r").unwrap(), Some(b"new".to_vec()));
    Box::new(db).close().unwrap();
}

#[test]
fn the_background_sweeper_removes_expired_records_and_stops() {
    let clock = Arc::new(ManualClock::new(START));
    let db = Arc::new(ExpiringDbm::with_clock(StdTreeDbm::new(&Default::default()), clock.clone()).unwrap());
    for i in 0..50 {
        db.set_with_ttl(format!("k{i}").as_bytes(), b"v", secs(1)).unwrap();
    }
    db.set(b"keep", b"v").unwrap();
    assert!(db.start_sweeper(0).is_err());
    let sweeper = db.start_sweeper(10_000).unwrap();
    clock.advance(secs(1));
    let deadline = std::time::Instant::now() + secs(10);
    while db.inner().count().unwrap() > 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(db.inner().count().unwrap(), 2, "the kept record and the marker");
    assert_eq!(sweeper.removed(), 50);
    assert!(!sweeper.has_failed());
    sweeper.stop().unwrap();
}

#[test]
fn a_committed_batch_replaces_expiries() {
    use crate::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
    let clock = Arc::new(ManualClock::new(START));
    let db = ExpiringDbm::with_clock(StdTreeDbm::new(&Default::default()), clock.clone()).unwrap();
    db.set_with_ttl(b"a", b"1", secs(5)).unwrap();
    let db = TransactionalDbm::open(db, TransactionOptions::default()).unwrap();
    let mut batch = db.batch(CommitDurability::Memory);
    batch.set(b"a", b"2").set(b"b", b"3");
    batch.commit().unwrap();
    assert_eq!(db.inner().get_expiring(b"a").unwrap(), Some((b"2".to_vec(), None)));
    assert_eq!(db.get(b"b").unwrap(), Some(b"3".to_vec()));
}

#[test]
fn poly_dbm_opens_a_database_with_expiry_with_its_layer() {
    use crate::dbm::poly::{Params, PolyDbm};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.kt");
    let with = Params::parse("expiry=true").unwrap();
    let db = PolyDbm::open(&path, Access::ReadWrite, &with).unwrap();
    let layer = db.expiring().expect("the layer");
    layer.set_with_ttl(b"a", b"1", secs(60)).unwrap();
    db.set(b"b", b"2").unwrap();
    assert_eq!((db.count().unwrap(), db.class().name()), (2, "tree"));
    db.close().unwrap();
    // Reopened without the parameter: found by its marker.
    let db = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    assert!(db.expiring().unwrap().ttl(b"a").unwrap().unwrap().unwrap() > secs(50));
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    db.close().unwrap();
    let err = PolyDbm::open(&path, Access::ReadOnly, &Params::parse("expiry=false").unwrap()).err().unwrap();
    assert!(err.message().contains("expiry=false refuses it"), "{err}");
    // Its stored form: the values tagged, the marker among them.
    let (stored, state) =
        PolyDbm::open(&path, Access::ReadWrite, &Params::new()).unwrap().into_stored().unwrap();
    assert!(state.is_some() && stored.expiring().is_none());
    assert_eq!(stored.get(b"b").unwrap(), Some(b"\x002".to_vec()));
    assert_eq!(stored.count().unwrap(), 3);
    stored.close().unwrap();
    // A plain database with records is refused, naming why.
    let plain = dir.path().join("plain.kh");
    let db = PolyDbm::open(&plain, Access::ReadWrite, &Params::new()).unwrap();
    db.set(b"k", b"v").unwrap();
    db.close().unwrap();
    let err = PolyDbm::open(&plain, Access::ReadWrite, &with).err().unwrap();
    assert!(err.message().contains("written without expiry"), "{err}");
    let err =
        PolyDbm::open(&plain, Access::ReadWrite, &Params::parse("expiry=maybe").unwrap()).err().unwrap();
    assert!(err.message().contains("expiry must be true or false"), "{err}");
}

#[test]
fn a_shard_set_with_expiry_reopens_with_its_layer() {
    use crate::dbm::poly::{Params, PolyDbm};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("set.kh");
    let db =
        PolyDbm::open(&path, Access::ReadWrite, &Params::parse("num_shards=3,expiry=true").unwrap()).unwrap();
    let layer = db.expiring().unwrap();
    for i in 0..30 {
        layer
            .set_expiring(format!("k{i}").as_bytes(), b"v", Some(if i % 2 == 0 { 1 << 50 } else { 1 }))
            .unwrap();
    }
    assert!(db.is_sharded());
    assert_eq!(db.count().unwrap(), 15, "the records already past were never stored");
    db.close().unwrap();
    let db = PolyDbm::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!((db.is_sharded(), db.count().unwrap()), (true, 15));
    assert_eq!(db.expiring().unwrap().expiry(b"k4").unwrap(), Some(Some(1 << 50)));
    db.close().unwrap();
}

#[test]
fn a_layer_over_each_view_shares_one_state() {
    let clock = Arc::new(ManualClock::new(START));
    let base = StdTreeDbm::new(&Default::default());
    let state = ExpiryState::open(&base, clock.clone()).unwrap();
    let view: &dyn Dbm = &base;
    ExpiringDbm::with_state(view, Arc::clone(&state)).set_with_ttl(b"k", b"v", secs(5)).unwrap();
    clock.advance(secs(6));
    assert_eq!(ExpiringDbm::with_state(view, Arc::clone(&state)).get(b"k").unwrap(), None);
    // The clock stepped back: the state remembers the time it read.
    clock.set(START);
    assert_eq!(ExpiringDbm::with_state(view, Arc::clone(&state)).get(b"k").unwrap(), None);
    assert_eq!(state.now_ms(), START + 6000);
}

#[test]
fn expiry_under_transactions_is_tracked_as_a_plain_write() {
    use crate::dbm::poly::{Params, PolyDbm};
    use crate::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
    let dir = tempfile::tempdir().unwrap();
    let db =
        PolyDbm::open(dir.path().join("t.kh"), Access::ReadWrite, &Params::parse("expiry=true").unwrap())
            .unwrap();
    let db = TransactionalDbm::open(db, TransactionOptions::default()).unwrap();
    db.set(b"a", b"1").unwrap();
    let snapshot = db.snapshot().unwrap();
    db.set_with_ttl(b"a", b"2", secs(60)).unwrap();
    assert_eq!(snapshot.get(b"a").unwrap(), Some(b"1".to_vec()), "the view keeps what the write replaced");
    assert_eq!(db.get(b"a").unwrap(), Some(b"2".to_vec()));
    assert!(db.ttl(b"a").unwrap().unwrap().is_some());
    assert!(db.persist(b"a").unwrap());
    assert_eq!(db.ttl(b"a").unwrap(), Some(None));
    drop(snapshot);
    // A transaction's set replaces the record and its expiry, as SET does.
    db.expire_after(b"a", secs(60)).unwrap();
    let mut tx = db.begin(CommitDurability::Memory);
    tx.set(b"a", b"3");
    tx.commit().unwrap();
    assert_eq!(db.ttl(b"a").unwrap(), Some(None));
    // A time already past removes the record.
    db.expire_at(b"a", Some(1)).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    // The sweep's removals are plain writes too; a sweeper runs over the wrapper.
    db.set_with_ttl(b"short", b"x", Duration::from_millis(1)).unwrap();
    db.set(b"kept", b"y").unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let snapshot = db.snapshot().unwrap();
    let report = db.sweep(100).unwrap();
    assert_eq!((report.removed, snapshot.get(b"short").unwrap()), (1, None));
    drop(snapshot);
    let db = Arc::new(db);
    db.set_with_ttl(b"short", b"x", Duration::from_millis(1)).unwrap();
    let sweeper = super::start_sweeper(&db, 1000).unwrap();
    let deadline = std::time::Instant::now() + secs(10);
    while sweeper.removed() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sweeper.removed(), 1);
    sweeper.stop().unwrap();
    let db = Arc::try_unwrap(db).ok().unwrap();
    assert_eq!(db.inner().expiring().unwrap().inner().count().unwrap(), 2, "kept and the marker");
    db.close().unwrap();
    let plain = TransactionalDbm::open(
        PolyDbm::open("", Access::ReadWrite, &Params::new()).unwrap(),
        TransactionOptions::default(),
    )
    .unwrap();
    let err = plain.set_with_ttl(b"k", b"v", secs(1)).unwrap_err();
    assert!(err.message().contains("the database has no expiry"), "{err}");
}

/// One step of the model test.
#[derive(Clone, Debug)]
enum Op {
    Set(u8, u8),
    SetTtl(u8, u8, u16),
    Expire(u8, u16),
    Persist(u8),
    Remove(u8),
    Append(u8, u8),
    Advance(u16),
    StepBack(u16),
    Sweep(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..8;
    prop_oneof![
        (key.clone(), any::<u8>()).prop_map(|(k, v)| Op::Set(k, v)),
        (key.clone(), any::<u8>(), 0u16..3000).prop_map(|(k, v, t)| Op::SetTtl(k, v, t)),
        (key.clone(), 0u16..3000).prop_map(|(k, t)| Op::Expire(k, t)),
        key.clone().prop_map(Op::Persist),
        key.clone().prop_map(Op::Remove),
        (key, any::<u8>()).prop_map(|(k, v)| Op::Append(k, v)),
        (0u16..2000).prop_map(Op::Advance),
        (0u16..2000).prop_map(Op::StepBack),
        (1u8..6).prop_map(Op::Sweep),
    ]
}

/// Runs `ops` on the database and on a map of (value, expiry), with a
/// clock that may step back, checking every read against the model.
fn agrees_with_model(db: &ExpiringDbm<impl Dbm>, clock: &ManualClock, ops: &[Op]) {
    let mut model: BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)> = BTreeMap::new();
    // The model's clock, which never goes back, from the database's first reading.
    let mut now = db.now_ms();
    assert_eq!(now, START);
    let mut wall = START;
    for op in ops {
        match *op {
            Op::Set(k, v) => {
                db.set(&[k], &[v]).unwrap();
                model.insert(vec![k], (vec![v], None));
            }
            Op::SetTtl(k, v, ms) => {
                db.set_with_ttl(&[k], &[v], Duration::from_millis(ms.into())).unwrap();
                if ms == 0 {
                    model.remove(&vec![k]);
                } else {
                    model.insert(vec![k], (vec![v], Some(now + u64::from(ms))));
                }
            }
            Op::Expire(k, ms) => {
                let present = db.expire_after(&[k], Duration::from_millis(ms.into())).unwrap();
                assert_eq!(present, model.contains_key(&vec![k]));
                if ms == 0 {
                    model.remove(&vec![k]);
                } else if let Some(record) = model.get_mut(&vec![k]) {
                    record.1 = Some(now + u64::from(ms));
                }
            }
            Op::Persist(k) => {
                let had = db.persist(&[k]).unwrap();
                let record = model.get_mut(&vec![k]);
                assert_eq!(had, record.as_ref().is_some_and(|r| r.1.is_some()));
                if let Some(record) = record {
                    record.1 = None;
                }
            }
            Op::Remove(k) => {
                assert_eq!(db.remove(&[k]).unwrap(), model.remove(&vec![k]).is_some());
            }
            Op::Append(k, v) => {
                db.append(&[k], &[v], b"").unwrap();
                model.entry(vec![k]).and_modify(|r| r.0.push(v)).or_insert((vec![v], None));
            }
            Op::Advance(ms) => {
                wall += u64::from(ms);
                clock.set(wall);
                now = now.max(wall);
            }
            Op::StepBack(ms) => {
                wall = wall.saturating_sub(u64::from(ms));
                clock.set(wall);
            }
            Op::Sweep(n) => {
                db.sweep(n.into()).unwrap();
            }
        }
        model.retain(|_, (_, expiry)| expiry.is_none_or(|at| at > now));
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect();
        assert_eq!(records(db), expected, "after {op:?}");
        assert_eq!(db.count().unwrap(), model.len() as u64);
        for k in 0u8..8 {
            let want = model.get(&vec![k]).map(|(v, e)| (v.clone(), *e));
            assert_eq!(db.get_expiring(&[k]).unwrap(), want, "key {k} after {op:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn expiry_agrees_with_a_model_on_a_tree_and_a_hash(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START));
        let tree = ExpiringDbm::with_clock(TreeDbm::builder().open(dir.path().join("m.kt")).unwrap(), clock.clone()).unwrap();
        agrees_with_model(&tree, &clock, &ops);
        clock.set(START);
        let small = crate::dbm::hash::HashOptions::default().num_buckets(7);
        let hash = HashDbm::open(dir.path().join("m.kh"), Access::ReadWrite, &small).unwrap();
        let hash = ExpiringDbm::with_clock(hash, clock.clone()).unwrap();
        agrees_with_model(&hash, &clock, &ops);
    }
}
