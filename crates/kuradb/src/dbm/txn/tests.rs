use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::*;
use crate::dbm::hash::HashDbm;
use crate::dbm::tree::TreeDbm;
use crate::dbm::{show_key, Dbm};

fn hash(dir: &Path) -> TransactionalDbm<HashDbm> {
    let db = HashDbm::builder().open(dir.join("t.kdb")).unwrap();
    TransactionalDbm::open(db, TransactionOptions::default()).unwrap()
}

fn tree(dir: &Path) -> TransactionalDbm<TreeDbm> {
    let db = TreeDbm::builder().open(dir.join("t.ktt")).unwrap();
    let options =
        TransactionOptions { key_order: Some(KeyComparator::Lexical), ..TransactionOptions::default() };
    TransactionalDbm::open(db, options).unwrap()
}

#[test]
fn a_snapshot_keeps_its_view_while_writers_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    db.set(b"a", b"1").unwrap();
    db.set(b"b", b"2").unwrap();
    let view = db.snapshot().unwrap();
    db.set(b"a", b"changed").unwrap();
    db.remove(b"b").unwrap();
    db.set(b"c", b"new").unwrap();
    assert_eq!(view.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(view.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(view.get(b"c").unwrap(), None);
    let mut all: Vec<_> = view.iter().unwrap().map(Result::unwrap).collect();
    all.sort();
    assert_eq!(all, vec![(b"a".to_vec(), b"1".to_vec()), (b"b".to_vec(), b"2".to_vec())]);
    assert_eq!(view.count().unwrap(), 2);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"changed"[..]));
    drop(view);
    assert_eq!(db.version_bytes(), 0);
    db.close().unwrap();
}

/// A hash database's commit is logged, then shown and applied once the log
/// is on the device; views begun in between (while a view open at the
/// commit makes it keep the old values) read what it changes from the
/// database, and keep reading it after.
#[test]
fn views_begun_between_a_commit_being_logged_and_applied_keep_the_values_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(hash(dir.path()));
    assert!(!db.restores_to_last_sync, "the commit is logged ahead of its apply");
    db.set(b"a", b"old").unwrap();
    db.set(b"b", b"gone soon").unwrap();
    let early = db.snapshot().unwrap();
    let turns = db.flow.progress.lock();
    let committer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            let mut batch = db.batch(CommitDurability::Sync);
            batch.set(b"a", b"new").remove(b"b").set(b"c", b"added");
            batch.commit().unwrap();
        })
    };
    while !db.pending.lock().contains_key(&b"c"[..]) {
        assert!(!committer.is_finished(), "the commit ended before it was logged and held");
        thread::yield_now();
    }
    // Logged, not shown: the committer waits for the turns held here.
    let view = db.snapshot().unwrap();
    let mut tx = db.begin(CommitDurability::Memory);
    let sorted = |view: &Snapshot<'_, HashDbm>| {
        let mut all: Vec<_> = view.iter().unwrap().map(Result::unwrap).collect();
        all.sort();
        all
    };
    let before = vec![(b"a".to_vec(), b"old".to_vec()), (b"b".to_vec(), b"gone soon".to_vec())];
    assert_eq!(view.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(view.get(b"c").unwrap(), None);
    assert_eq!(sorted(&view), before);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(tx.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
    tx.set(b"a", b"from the transaction");
    drop(turns);
    committer.join().unwrap();
    assert_eq!(view.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(view.get(b"b").unwrap().as_deref(), Some(&b"gone soon"[..]));
    assert_eq!(view.get(b"c").unwrap(), None);
    assert_eq!(sorted(&view), before);
    assert_eq!(view.count().unwrap(), 2);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(tx.commit().unwrap_err().kind(), ErrorKind::Conflict, "it read a key the commit changed");
    let after = db.snapshot().unwrap();
    assert_eq!(after.get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(after.get(b"c").unwrap().as_deref(), Some(&b"added"[..]));
    assert_eq!(early.get(b"a").unwrap().as_deref(), Some(&b"old"[..]));
    drop((view, after, early));
    assert_eq!(db.version_bytes(), 0);
    Arc::into_inner(db).unwrap().close().unwrap();
}

/// A hash database whose `apply_changes` fails once `failing` is set.
struct FailingApply {
    db: HashDbm,
    failing: AtomicBool,
}

impl Dbm for FailingApply {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut crate::dbm::Processor<'a>) -> Result<()> {
        self.db.process(key, access, f)
    }
    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        self.db.process_multi(keys, access, f)
    }
    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        self.db.process_each(access, f)
    }
    fn count(&self) -> Result<u64> {
        self.db.count()
    }
    fn file_size(&self) -> Result<u64> {
        self.db.file_size()
    }
    fn path(&self) -> Option<&Path> {
        self.db.path()
    }
    fn clear(&self) -> Result<()> {
        self.db.clear()
    }
    fn rebuild(&self) -> Result<()> {
        self.db.rebuild()
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        self.db.should_be_rebuilt()
    }
    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.db.synchronize(durability)
    }
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        self.db.copy_file_data(dest, durability)
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        self.db.inspect()
    }
    fn is_healthy(&self) -> bool {
        self.db.is_healthy()
    }
    fn is_ordered(&self) -> bool {
        false
    }
    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        self.db.iter()
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()
    }
    fn apply_changes(
        &self,
        changes: &[FinalChange<'_>],
        part: UnitPart,
        seen: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        if self.failing.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::BrokenData, "the test's injected failure"));
        }
        self.db.apply_changes(changes, part, seen)
    }
}

/// A commit whose apply fails in the background has returned as durable:
/// reads keep showing it, later commits and the close fail naming the log,
/// and the log stays for the next open, which applies it.
#[test]
fn a_commit_whose_apply_fails_stays_readable_and_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kdb");
    let inner = FailingApply { db: HashDbm::builder().open(&path).unwrap(), failing: AtomicBool::new(false) };
    let db = TransactionalDbm::open(inner, TransactionOptions::default()).unwrap();
    let commit = |batch: &mut dyn FnMut(&mut Batch<'_, FailingApply>)| {
        let mut b = db.batch(CommitDurability::Sync);
        batch(&mut b);
        b.commit()
    };
    commit(&mut |b| {
        b.set(b"first", b"1");
    })
    .unwrap();
    db.flow.wait_applied(1);
    db.inner().failing.store(true, Ordering::Release);
    // Held, so that the next commit is logged while this one's apply fails.
    let turns = db.flow.progress.lock();
    thread::scope(|scope| {
        let first = scope.spawn(|| {
            commit(&mut |b| {
                b.set(b"second", b"2").remove(b"first");
            })
        });
        while !db.pending.lock().contains_key(b"second") {
            thread::yield_now();
        }
        let next = scope.spawn(|| {
            commit(&mut |b| {
                b.set(b"fourth", b"4");
            })
        });
        while !db.pending.lock().contains_key(b"fourth") {
            thread::yield_now();
        }
        drop(turns);
        assert_eq!(first.join().unwrap().unwrap(), 2);
        db.flow.wait_applied(2);
        assert!(db.failed.load(Ordering::Acquire));
        // Logged and synced before the failure was known: durable, so it stands.
        assert_eq!(next.join().unwrap().unwrap(), 3);
    });
    db.flow.wait_applied(3);
    assert_eq!(db.get(b"fourth").unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(db.get(b"second").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"first").unwrap(), None);
    let refused = commit(&mut |b| {
        b.set(b"third", b"3");
    })
    .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Infeasible);
    assert!(refused.to_string().contains("reopen"), "{refused}");
    let log_path = db.log_path().unwrap().to_path_buf();
    let closing = db.close().unwrap_err();
    assert_eq!(closing.kind(), ErrorKind::Infeasible);
    assert!(log_path.exists(), "the log still completes the commit");
    let db = hash(dir.path());
    assert_eq!(db.get(b"second").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"first").unwrap(), None);
    assert_eq!(db.get(b"third").unwrap(), None);
    assert_eq!(db.get(b"fourth").unwrap().as_deref(), Some(&b"4"[..]));
    db.close().unwrap();
}

/// Waits for `thread` to end, failing past a deadline rather than hanging.
fn finished<T>(thread: thread::JoinHandle<T>, what: &str) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !thread.is_finished() {
        assert!(Instant::now() < deadline, "{what}");
        thread::sleep(Duration::from_millis(1));
    }
    thread.join().unwrap()
}

/// A hash database's commit returns once its log record is on the device
/// and it shows; the applier applies it to the database behind it, and
/// every read in between (plain, snapshot, transaction, the next commit's)
/// sees it.
#[test]
fn a_commit_returns_before_its_apply_and_reads_see_it_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kdb");
    let db = Arc::new(hash(dir.path()));
    db.set(b"a", b"old").unwrap();
    db.set(b"b", b"gone soon").unwrap();
    // Holds record a's lock in the database itself, so the apply waits.
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            db.inner()
                .process(b"a", Access::ReadWrite, &mut |_| {
                    held_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    Action::Keep
                })
                .unwrap();
        })
    };
    held_rx.recv().unwrap();
    let committer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            let mut batch = db.batch(CommitDurability::Sync);
            batch.set(b"a", b"new").remove(b"b").set(b"c", b"added");
            batch.commit().unwrap()
        })
    };
    let seq = finished(committer, "the commit waited for its apply");
    assert!(db.flow.applied.load(Ordering::Acquire) < seq, "applied while record a was held");
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(b"b").unwrap(), None);
    assert!(db.contains(b"c").unwrap());
    let view = db.snapshot().unwrap();
    assert_eq!(view.seq(), seq);
    assert_eq!(view.get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
    // The next commit works out an append from the value not yet applied.
    let mut tx = db.begin(CommitDurability::Sync);
    assert_eq!(tx.get(b"c").unwrap().as_deref(), Some(&b"added"[..]));
    tx.append(b"c", b"more", b",").unwrap();
    assert_eq!(tx.commit().unwrap(), seq + 1);
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"added,more"[..]));
    assert_eq!(view.get(b"c").unwrap().as_deref(), Some(&b"added"[..]));
    assert!(db.flow.applied.load(Ordering::Acquire) < seq);
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    // A walk reads the database, once it holds what the walk shows.
    let mut all: Vec<_> = view.iter().unwrap().map(Result::unwrap).collect();
    all.sort();
    assert_eq!(all, vec![(b"a".to_vec(), b"new".to_vec()), (b"c".to_vec(), b"added".to_vec())]);
    db.flow.wait_applied(seq + 1);
    assert_eq!(db.inner().get(b"a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.inner().get(b"b").unwrap(), None);
    assert_eq!(db.inner().get(b"c").unwrap().as_deref(), Some(&b"added,more"[..]));
    assert!(db.pending.lock().is_empty());
    drop(view);
    assert_eq!(db.version_bytes(), 0);
    Arc::into_inner(db).unwrap().close().unwrap();
    assert!(!path.with_extension("kdb.txlog").exists(), "a clean close applied every commit and left no log");
    let db = hash(dir.path());
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"added,more"[..]));
    db.close().unwrap();
}

/// A commit logged while no view was open keeps no old values, so a view
/// begun before it shows would have nothing to read them from: it waits,
/// and then sees the commit.
#[test]
fn a_view_begun_while_a_commit_that_kept_no_old_values_is_logged_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(hash(dir.path()));
    db.set(b"a", b"old").unwrap();
    let turns = db.flow.progress.lock();
    let committer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            let mut batch = db.batch(CommitDurability::Sync);
            batch.set(b"a", b"new");
            batch.commit().unwrap()
        })
    };
    while !db.pending.lock().contains_key(&b"a"[..]) {
        assert!(!committer.is_finished(), "the commit ended before it was logged and held");
        thread::yield_now();
    }
    let viewer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            let view = db.snapshot().unwrap();
            (view.seq(), view.get(b"a").unwrap())
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert!(!viewer.is_finished(), "a view opened before the commit whose old values it would need");
    drop(turns);
    let seq = finished(committer, "the commit did not end");
    let (at, value) = finished(viewer, "the view did not open after the commit showed");
    assert_eq!(at, seq);
    assert_eq!(value.as_deref(), Some(&b"new"[..]));
    Arc::into_inner(db).unwrap().close().unwrap();
}

#[test]
fn an_ordered_snapshot_walks_in_key_order_with_removed_records_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(dir.path());
    for k in [b"b", b"d", b"f"] {
        db.set(k, b"old").unwrap();
    }
    let view = db.snapshot().unwrap();
    let mut walk = view.iter().unwrap();
    assert_eq!(walk.next().unwrap().unwrap().0, b"b");
    // Changes while the walk is under way, before and after its position.
    db.remove(b"d").unwrap();
    db.set(b"c", b"new").unwrap();
    db.set(b"a", b"new").unwrap();
    db.set(b"f", b"new").unwrap();
    let rest: Vec<_> = walk.map(Result::unwrap).collect();
    assert_eq!(rest, vec![(b"d".to_vec(), b"old".to_vec()), (b"f".to_vec(), b"old".to_vec())]);
    let range: Vec<_> = view.range(Some(b"c"), Some(b"f")).unwrap().map(Result::unwrap).collect();
    assert_eq!(range, vec![(b"d".to_vec(), b"old".to_vec())]);
    drop(view);
    db.close().unwrap();
}

#[test]
fn a_transaction_sees_its_writes_and_rolls_back_to_a_savepoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    db.set(b"x", b"1").unwrap();
    let mut tx = db.begin(CommitDurability::Os);
    tx.set(b"x", b"2");
    let point = tx.savepoint();
    tx.set(b"y", b"3");
    assert_eq!(tx.get(b"y").unwrap().as_deref(), Some(&b"3"[..]));
    tx.rollback_to(point).unwrap();
    assert_eq!(tx.get(b"y").unwrap(), None);
    assert_eq!(tx.get(b"x").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"1"[..]), "nothing shows before commit");
    tx.commit().unwrap();
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"y").unwrap(), None);

    let mut dropped = db.begin(CommitDurability::Os);
    dropped.set(b"x", b"never");
    drop(dropped);
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"2"[..]));
    db.close().unwrap();
}

#[test]
fn a_lost_update_is_refused_and_run_retries_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    db.increment(b"n", 0, 0).unwrap();
    let mut first = db.begin(CommitDurability::Os);
    let mut second = db.begin(CommitDurability::Os);
    first.increment(b"n", 1, 0).unwrap();
    second.increment(b"n", 1, 0).unwrap();
    first.commit().unwrap();
    let e = second.commit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert_eq!(db.increment(b"n", INCREMENT_UNCHANGED_FOR_TESTS, 0).unwrap(), 1);

    let db = Arc::new(db);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = Arc::clone(&db);
            thread::spawn(move || {
                for _ in 0..50 {
                    db.run(CommitDurability::Memory, 1000, |tx| tx.increment(b"n", 1, 0)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(db.increment(b"n", INCREMENT_UNCHANGED_FOR_TESTS, 0).unwrap(), 201);
}

const INCREMENT_UNCHANGED_FOR_TESTS: i64 = crate::dbm::INCREMENT_UNCHANGED;

#[test]
fn write_skew_over_a_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(dir.path());
    db.set(b"doctor/alice", b"on").unwrap();
    db.set(b"doctor/bob", b"on").unwrap();
    // Each goes off call if someone else is on: only one may commit.
    let mut a = db.begin(CommitDurability::Os);
    let mut b = db.begin(CommitDurability::Os);
    assert_eq!(a.range(Some(b"doctor/"), Some(b"doctor0")).unwrap().len(), 2);
    assert_eq!(b.range(Some(b"doctor/"), Some(b"doctor0")).unwrap().len(), 2);
    a.set(b"doctor/alice", b"off");
    b.set(b"doctor/bob", b"off");
    a.commit().unwrap();
    assert_eq!(b.commit().unwrap_err().kind(), ErrorKind::Conflict);
    // A key added inside a range read is a conflict too (a phantom).
    let mut c = db.begin(CommitDurability::Os);
    c.range(Some(b"doctor/"), Some(b"doctor0")).unwrap();
    c.set(b"summary", b"x");
    db.set(b"doctor/carol", b"on").unwrap();
    assert_eq!(c.commit().unwrap_err().kind(), ErrorKind::Conflict);
    db.close().unwrap();
}

#[test]
fn a_batch_applies_whole_and_its_log_is_replayed_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kdb");
    let db = hash(dir.path());
    db.set(b"count", &5i64.to_be_bytes()).unwrap();
    let mut batch = db.batch(CommitDurability::Sync);
    batch.set(b"a", b"1").remove(b"gone").append(b"a", b"2", b",").increment(b"count", 3, 0);
    batch.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1,2"[..]));
    let log_path = db.log_path().unwrap().to_path_buf();
    assert!(log_path.exists());
    // A crash after the log record and before the database held the batch:
    // the database loses it, the log keeps it.
    let TransactionalDbm { stop, inner, log, .. } = db;
    drop(stop);
    let inner = Arc::into_inner(inner).unwrap();
    inner.remove(b"a").unwrap();
    inner.set(b"count", &5i64.to_be_bytes()).unwrap();
    inner.close().unwrap();
    drop(log);
    let db = TransactionalDbm::open(HashDbm::builder().open(&path).unwrap(), TransactionOptions::default())
        .unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1,2"[..]));
    assert_eq!(db.increment(b"count", INCREMENT_UNCHANGED_FOR_TESTS, 0).unwrap(), 8);
    db.close().unwrap();
    assert!(!log_path.exists(), "a clean close leaves no log");
}

/// `into_inner` ends the transactions the way a close does (every commit in
/// the database, no log left) and the database goes on, open.
#[test]
fn into_inner_hands_the_database_back_with_every_commit_and_no_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kdb");
    let db = hash(dir.path());
    for i in 0..100u32 {
        let mut batch = db.batch(CommitDurability::Sync);
        batch.set(format!("k{i}").as_bytes(), &i.to_be_bytes()).remove(b"k0");
        batch.commit().unwrap();
    }
    let log_path = db.log_path().unwrap().to_path_buf();
    assert!(log_path.exists());
    let inner = db.into_inner().unwrap();
    assert!(!log_path.exists(), "every commit is in the database: no log is left");
    assert_eq!(inner.count().unwrap(), 99);
    assert_eq!(inner.get(b"k42").unwrap().as_deref(), Some(&42u32.to_be_bytes()[..]));
    inner.set(b"plain", b"after").unwrap();
    let db = TransactionalDbm::open(inner, TransactionOptions::default()).unwrap();
    assert_eq!(db.get(b"plain").unwrap().as_deref(), Some(&b"after"[..]));
    db.close().unwrap();
    let db = HashDbm::builder().open(&path).unwrap();
    assert_eq!(db.count().unwrap(), 100);
    assert_eq!(db.get(b"k0").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn a_batch_with_a_bad_increment_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    db.set(b"text", b"abc").unwrap();
    let mut batch = db.batch(CommitDurability::Os);
    batch.set(b"a", b"1").increment(b"text", 1, 0);
    assert_eq!(batch.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(db.get(b"a").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn readers_never_see_a_batch_half_applied() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(hash(dir.path()));
    let keys: Vec<Vec<u8>> = (0..20).map(|i| format!("k{i}").into_bytes()).collect();
    for k in &keys {
        db.set(k, b"0").unwrap();
    }
    let writer = {
        let db = Arc::clone(&db);
        let keys = keys.clone();
        thread::spawn(move || {
            for round in 1..=200 {
                let mut batch = db.batch(CommitDurability::Memory);
                for k in &keys {
                    batch.set(k, round.to_string().as_bytes());
                }
                batch.commit().unwrap();
            }
        })
    };
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    while !writer.is_finished() {
        let values = db.get_multi(&refs).unwrap();
        assert!(values.windows(2).all(|w| w[0] == w[1]), "a mixed read: {values:?}");
        let view = db.snapshot().unwrap();
        let seen: Vec<_> = view.iter().unwrap().map(|r| r.unwrap().1).collect();
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "a mixed snapshot");
    }
    writer.join().unwrap();
}

#[test]
fn an_old_snapshot_past_the_memory_cap_fails_rather_than_showing_newer_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = HashDbm::builder().open(dir.path().join("t.kdb")).unwrap();
    let options = TransactionOptions { max_version_bytes: 10_000, ..TransactionOptions::default() };
    let db = TransactionalDbm::open(db, options).unwrap();
    db.set(b"k", b"old").unwrap();
    let view = db.snapshot().unwrap();
    for i in 0..1000 {
        db.set(format!("other{i}").as_bytes(), &[b'x'; 50]).unwrap();
    }
    assert!(db.version_bytes() <= 10_000);
    let e = view.get(b"k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.to_string().contains("snapshot too old"), "{e}");
    drop(view);
    db.close().unwrap();
}

#[test]
fn a_watch_refuses_a_commit_after_a_watched_key_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(hash(dir.path()));
    db.set(b"w", b"1").unwrap();
    // Unchanged: the commit goes through.
    let watch = db.watch(&[b"w"]);
    let mut tx = db.begin(CommitDurability::Memory);
    tx.set(b"out", b"a");
    assert!(tx.commit_unless_changed(&[&watch]).unwrap());
    assert!(!watch.changed().unwrap());
    drop(watch);
    // A plain write of the key after the watch: nothing applies.
    let watch = db.watch(&[b"w", b"other"]);
    db.set(b"w", b"2").unwrap();
    assert!(watch.changed().unwrap());
    let mut tx = db.begin(CommitDurability::Memory);
    tx.set(b"out", b"b");
    assert!(!tx.commit_unless_changed(&[&watch]).unwrap());
    assert_eq!(db.get(b"out").unwrap().as_deref(), Some(&b"a"[..]));
    drop(watch);
    // A write that keeps the value is no change; a commit of another key neither.
    let watch = db.watch(&[b"w"]);
    db.set(b"w", b"2").unwrap();
    db.set(b"x", b"1").unwrap();
    assert!(!watch.changed().unwrap());
    // A commit of the key by another transaction is one.
    let mut other = db.begin(CommitDurability::Memory);
    other.remove(b"w").unwrap();
    other.commit().unwrap();
    assert!(watch.changed().unwrap());
    drop(watch);
    assert_eq!(db.version_bytes(), 0, "the watch released what it kept");
}

#[test]
fn a_watch_of_another_database_is_refused() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (Arc::new(hash(one.path())), Arc::new(hash(two.path())));
    let watch = b.watch(&[b"k"]);
    let tx = a.begin(CommitDurability::Memory);
    assert_eq!(tx.commit_unless_changed(&[&watch]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_reader_refuses_a_log_with_commits_until_a_writer_applies_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    db.set(b"plain", b"1").unwrap();
    db.synchronize(Durability::Hard).unwrap();
    let mut batch = db.batch(CommitDurability::Sync);
    batch.set(b"k", b"v");
    batch.commit().unwrap();
    // The state a crash leaves: the database and a log holding the commit.
    let crashed = dir.path().join("crashed");
    std::fs::create_dir(&crashed).unwrap();
    std::fs::copy(dir.path().join("t.kdb"), crashed.join("t.kdb")).unwrap();
    std::fs::copy(dir.path().join("t.kdb.txlog"), crashed.join("t.kdb.txlog")).unwrap();
    db.close().unwrap();

    let path = crashed.join("t.kdb");
    let reader = HashDbm::builder().open_read_only(&path).unwrap();
    let options = TransactionOptions { access: Access::ReadOnly, ..TransactionOptions::default() };
    let e = TransactionalDbm::open(reader, options.clone()).err().expect("a reader cannot apply the log");
    assert_eq!(e.kind(), ErrorKind::Infeasible, "{e}");
    assert!(e.to_string().contains("t.kdb.txlog") && e.to_string().contains("open it for writing"), "{e}");

    let writer =
        TransactionalDbm::open(HashDbm::builder().open(&path).unwrap(), TransactionOptions::default())
            .unwrap();
    assert_eq!(writer.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    writer.close().unwrap();
    let reader = HashDbm::builder().open_read_only(&path).unwrap();
    let reader = TransactionalDbm::open(reader, options).unwrap();
    assert_eq!(reader.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// Sets "k" to "first", opens a view, rewrites the key `n` times (plainly,
/// or as batches at `none`), opens a second view, rewrites it `n` times
/// more; answers the bytes of old values kept after the first round and
/// what each view then reads.
fn rewritten_under_views<D: Dbm + 'static>(
    db: &TransactionalDbm<D>,
    n: usize,
    batches: bool,
) -> (usize, [Option<Vec<u8>>; 2]) {
    let rewrite = |tag: &str| {
        for i in 0..n {
            let value = format!("{tag}{i}");
            if batches {
                let mut batch = db.batch(CommitDurability::Memory);
                batch.set(b"k", value.as_bytes());
                batch.commit().unwrap();
            } else {
                db.set(b"k", value.as_bytes()).unwrap();
            }
        }
    };
    db.set(b"k", b"first").unwrap();
    let first = db.snapshot().unwrap();
    rewrite("a");
    let bytes = db.version_bytes();
    let second = db.snapshot().unwrap();
    rewrite("b");
    (bytes, [first.get(b"k").unwrap(), second.get(b"k").unwrap()])
}

#[test]
fn a_view_keeps_about_one_old_value_of_a_key_rewritten_many_times() {
    let dir = tempfile::tempdir().unwrap();
    for batches in [false, true] {
        for class in ["tree", "hash"] {
            let sub = dir.path().join(format!("{class}-{batches}"));
            std::fs::create_dir(&sub).unwrap();
            let (bytes, seen) = match class {
                "tree" => rewritten_under_views(&tree(&sub), 200, batches),
                _ => rewritten_under_views(&hash(&sub), 200, batches),
            };
            let what = format!("[{class}, batches: {batches}]");
            // The key, the value the view needs, and at most one more entry
            // not yet found redundant.
            assert!(bytes <= 1 + 2 * (versions::VERSION_OVERHEAD + 5), "{what} {bytes} bytes kept");
            assert_eq!(seen, [Some(b"first".to_vec()), Some(b"a199".to_vec())], "{what}");
        }
    }
}

/// The index named by each record's value: a record `user:N` holding a city
/// is under that city.
fn attach_city(db: &TransactionalDbm<impl Dbm>) {
    let index = crate::index::AnyIndex::open("", Access::ReadWrite, &Params::new()).unwrap();
    db.attach_index("city", index, |_, value| vec![value.to_vec()]).unwrap();
}

/// What the index must hold for a view's records: the keys whose value is `city`.
fn under(records: &[(Vec<u8>, Vec<u8>)], city: &[u8]) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = records.iter().filter(|(_, v)| v == city).map(|(k, _)| k.clone()).collect();
    keys.sort();
    keys
}

const CITIES: [&[u8]; 3] = [b"tokyo", b"osaka", b"kyoto"];

#[test]
fn an_attached_index_follows_every_kind_of_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(dir.path());
    db.set(b"user:1", b"tokyo").unwrap();
    db.set(b"user:2", b"osaka").unwrap();
    attach_city(&db);
    assert_eq!(db.index_names(), ["city"]);
    // Built from the records already there.
    assert_eq!(db.index_values("city", b"tokyo").unwrap(), [b"user:1".to_vec()]);
    db.set(b"user:3", b"tokyo").unwrap();
    db.set(b"user:1", b"kyoto").unwrap();
    let mut batch = db.batch(CommitDurability::Memory);
    batch.set(b"user:4", b"osaka").remove(b"user:2");
    batch.commit().unwrap();
    db.run(CommitDurability::Memory, 0, |tx| {
        tx.set(b"user:5", b"tokyo");
        Ok(())
    })
    .unwrap();
    {
        let mut cursor = db.iter().unwrap();
        cursor.jump(b"user:3").unwrap();
        cursor.remove().unwrap();
    }
    db.append(b"user:4", b"-fu", b"").unwrap();
    let records: Vec<_> = db.snapshot().unwrap().iter().unwrap().map(Result::unwrap).collect();
    for city in [&b"tokyo"[..], b"osaka", b"kyoto", b"osaka-fu"] {
        assert_eq!(db.index_values("city", city).unwrap(), under(&records, city), "{}", show_key(city));
    }
    db.clear().unwrap();
    assert!(db.index_values("city", b"tokyo").unwrap().is_empty());
    let err = db.index_values("zip", b"100").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    db.close().unwrap();
}

#[test]
fn a_transaction_reads_an_index_with_its_own_writes_and_conflicts_on_a_phantom() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    db.set(b"user:1", b"tokyo").unwrap();
    attach_city(&db);
    let mut tx = db.begin(CommitDurability::Memory);
    tx.set(b"user:2", b"tokyo");
    tx.set(b"user:1", b"osaka");
    assert_eq!(tx.index_values("city", b"tokyo").unwrap(), [b"user:2".to_vec()]);
    assert_eq!(tx.index_values("city", b"osaka").unwrap(), [b"user:1".to_vec()]);
    // Another commit puts a record under a city it read: a phantom.
    db.set(b"user:9", b"osaka").unwrap();
    let err = tx.commit().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(db.index_values("city", b"osaka").unwrap(), [b"user:9".to_vec()]);

    // A commit under a city it did not read is no conflict.
    let mut tx = db.begin(CommitDurability::Memory);
    assert_eq!(tx.index_values("city", b"tokyo").unwrap(), [b"user:1".to_vec()]);
    db.set(b"user:8", b"kyoto").unwrap();
    tx.set(b"user:7", b"tokyo");
    tx.commit().unwrap();
    assert_eq!(db.index_values("city", b"tokyo").unwrap(), [b"user:1".to_vec(), b"user:7".to_vec()]);
    db.close().unwrap();
}

#[test]
fn a_snapshot_reads_the_index_as_of_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree(dir.path());
    attach_city(&db);
    db.set(b"user:1", b"tokyo").unwrap();
    db.set(b"user:2", b"tokyo").unwrap();
    let view = db.snapshot().unwrap();
    db.set(b"user:1", b"osaka").unwrap();
    db.remove(b"user:2").unwrap();
    db.set(b"user:3", b"tokyo").unwrap();
    assert_eq!(view.index_values("city", b"tokyo").unwrap(), [b"user:1".to_vec(), b"user:2".to_vec()]);
    assert!(view.index_values("city", b"osaka").unwrap().is_empty());
    assert_eq!(db.index_values("city", b"tokyo").unwrap(), [b"user:3".to_vec()]);
    // Detaching waits for the views to close; re-attaching rebuilds.
    assert_eq!(db.detach_index("city").err().unwrap().kind(), ErrorKind::Infeasible);
    drop(view);
    let index = db.detach_index("city").unwrap();
    assert!(db.index_names().is_empty());
    db.set(b"user:4", b"tokyo").unwrap();
    assert_eq!(index.index().get_values(b"tokyo", 0).unwrap(), [b"user:3".to_vec()], "no longer kept");
    db.attach_index("city", index, |_, value| vec![value.to_vec()]).unwrap();
    assert_eq!(db.index_values("city", b"tokyo").unwrap(), [b"user:3".to_vec(), b"user:4".to_vec()]);
    db.close().unwrap();
}

#[test]
fn a_view_begun_before_an_index_was_attached_cannot_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = hash(dir.path());
    let view = db.snapshot().unwrap();
    attach_city(&db);
    assert_eq!(view.index_values("city", b"tokyo").unwrap_err().kind(), ErrorKind::Conflict);
    drop(view);
    db.close().unwrap();
}

/// Writers change records by every path while readers check, in a
/// snapshot, that the index matches the snapshot's records exactly.
fn index_matches_its_views_under_writers<D: Dbm + 'static>(db: TransactionalDbm<D>) {
    let db = Arc::new(db);
    attach_city(&db);
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2u64 {
        let db = Arc::clone(&db);
        writers.push(thread::spawn(move || {
            let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ w;
            for i in 0..400u64 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let key = format!("user:{}", (state >> 33) % 40);
                let city = CITIES[((state >> 20) % 3) as usize];
                match i % 4 {
                    0 => db.set(key.as_bytes(), city).unwrap(),
                    1 => {
                        db.remove(key.as_bytes()).unwrap();
                    }
                    2 => {
                        let other = format!("user:{}", (state >> 40) % 40);
                        let mut batch = db.batch(CommitDurability::Memory);
                        batch.set(key.as_bytes(), city).remove(other.as_bytes());
                        batch.commit().unwrap();
                    }
                    _ => {
                        db.run(CommitDurability::Memory, 50, |tx| {
                            // Move every record of one city to another.
                            for key in tx.index_values("city", city)? {
                                tx.set(&key, CITIES[(i % 3) as usize]);
                            }
                            Ok(())
                        })
                        .unwrap();
                    }
                }
            }
        }));
    }
    let reader = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        thread::spawn(move || {
            let mut checks = 0;
            while !stop.load(Ordering::Acquire) || checks == 0 {
                let view = db.snapshot().unwrap();
                let records: Vec<_> = view.iter().unwrap().map(Result::unwrap).collect();
                for city in CITIES {
                    assert_eq!(view.index_values("city", city).unwrap(), under(&records, city));
                }
                checks += 1;
            }
            checks
        })
    };
    for writer in writers {
        writer.join().unwrap();
    }
    stop.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
    let records: Vec<_> = db.snapshot().unwrap().iter().unwrap().map(Result::unwrap).collect();
    for city in CITIES {
        assert_eq!(db.index_values("city", city).unwrap(), under(&records, city));
    }
}

#[test]
fn an_index_matches_its_views_under_writers_on_a_hash_file() {
    let dir = tempfile::tempdir().unwrap();
    index_matches_its_views_under_writers(hash(dir.path()));
}

#[test]
fn an_index_matches_its_views_under_writers_on_a_tree_file() {
    let dir = tempfile::tempdir().unwrap();
    index_matches_its_views_under_writers(tree(dir.path()));
}

#[test]
fn attaching_rebuilds_an_index_file_a_crash_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let index_path = dir.path().join("city.kti");
    let open_index = || crate::index::AnyIndex::open(&index_path, Access::ReadWrite, &Params::new()).unwrap();
    {
        let db = hash(dir.path());
        db.attach_index("city", open_index(), |_, value| vec![value.to_vec()]).unwrap();
        db.set(b"user:1", b"tokyo").unwrap();
        db.close().unwrap();
    }
    // The index file misses a record and holds a stale pair, as after a
    // crash between the database's write and the index's.
    let index = open_index();
    index.index().add(b"osaka", b"user:1").unwrap();
    index.close().unwrap();
    let db = hash(dir.path());
    db.set(b"user:2", b"kyoto").unwrap();
    db.attach_index("city", open_index(), |_, value| vec![value.to_vec()]).unwrap();
    assert_eq!(db.index_values("city", b"tokyo").unwrap(), [b"user:1".to_vec()]);
    assert_eq!(db.index_values("city", b"kyoto").unwrap(), [b"user:2".to_vec()]);
    assert!(db.index_values("city", b"osaka").unwrap().is_empty());
    db.close().unwrap();
}
