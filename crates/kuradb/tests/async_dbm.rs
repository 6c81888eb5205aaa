//! AsyncDbm: every operation answers through its future what the database
//! answers directly, on an on-memory and on a file database; errors come
//! through unchanged; a panicking function is an error and its worker goes
//! on; closing or dropping drains every queued operation and refuses later
//! ones; many threads queue at once; futures wake their executor.
//!
//! The futures are driven by [`block_on`], a minimal executor written here,
//! so nothing assumes a runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use kuradb::dbm::{Access, Action, Durability, OnDuplicate, Rekey};
use kuradb::{AsyncDbm, Dbm, DbmFuture, ErrorKind, HashDbm, HashOptions, Params, TinyDbm, TinyOptions};

/// Wakes the thread that polls.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to completion on this thread, parking between polls.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park();
    }
}

/// Sends a message for each wake.
struct SendingWaker(mpsc::Sender<()>);

impl Wake for SendingWaker {
    fn wake(self: Arc<Self>) {
        let _ = self.0.send(());
    }
}

/// Occupies the only worker of `adb` until the answered sender is used.
fn hold_worker<D: Dbm + ?Sized>(adb: &AsyncDbm<D>) -> (mpsc::Sender<()>, DbmFuture<()>) {
    let (open, gate) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    let held = adb.execute(move |_| {
        started_tx.send(()).unwrap();
        gate.recv().unwrap();
        Ok(())
    });
    started.recv().unwrap();
    (open, held)
}

fn memory() -> Arc<dyn Dbm> {
    Arc::new(TinyDbm::new(&TinyOptions::default()))
}

fn file(dir: &tempfile::TempDir) -> Arc<dyn Dbm> {
    Arc::new(HashDbm::open(dir.path().join("casket.kh"), Access::ReadWrite, &HashOptions::default()).unwrap())
}

/// Every operation, each checked against the database itself.
fn every_operation(db: Arc<dyn Dbm>, dir: &tempfile::TempDir) {
    let adb = AsyncDbm::new(Arc::clone(&db), 3).unwrap();
    block_on(adb.set("a", "1")).unwrap();
    adb.set(b"b", b"2").wait().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(block_on(adb.get("a")).unwrap(), Some(b"1".to_vec()));
    assert_eq!(adb.get("zz").wait().unwrap(), None);
    assert!(adb.contains("b").wait().unwrap());
    assert!(!block_on(adb.contains("zz")).unwrap());
    assert_eq!(
        block_on(adb.get_multi(&["a", "zz", "b"])).unwrap(),
        vec![Some(b"1".to_vec()), None, Some(b"2".to_vec())]
    );
    block_on(adb.set_multi(&[("c", "3"), ("d", "4")])).unwrap();
    assert_eq!(db.get(b"d").unwrap(), Some(b"4".to_vec()));
    assert!(block_on(adb.remove("d")).unwrap());
    assert!(!block_on(adb.remove("d")).unwrap());
    block_on(adb.set_multi(&[("x", "-"), ("y", "-")])).unwrap();
    assert_eq!(block_on(adb.remove_multi(&["x", "y", "none"])).unwrap(), 2);
    block_on(adb.append("a", "one", ":")).unwrap();
    block_on(adb.append("new", "first", ":")).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1:one".to_vec()));
    assert_eq!(db.get(b"new").unwrap(), Some(b"first".to_vec()));
    block_on(adb.append_multi(&[("a", "two"), ("fresh", "f")], "/")).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1:one/two".to_vec()));
    assert_eq!(db.get(b"fresh").unwrap(), Some(b"f".to_vec()));
    assert!(block_on(adb.compare_exchange("b", Some("2"), Some("22"))).unwrap());
    assert!(!block_on(adb.compare_exchange("b", Some("2"), Some("x"))).unwrap());
    assert!(block_on(adb.compare_exchange::<&str>("absent", None, Some("now"))).unwrap());
    assert_eq!(db.get(b"b").unwrap(), Some(b"22".to_vec()));
    assert_eq!(db.get(b"absent").unwrap(), Some(b"now".to_vec()));
    assert_eq!(block_on(adb.increment("n", 5, 100)).unwrap(), 105);
    assert_eq!(adb.increment("n", -1, 0).wait().unwrap(), 104);
    assert!(block_on(
        adb.compare_exchange_multi(&[("b", Some("22")), ("gone", None)], &[("b", None), ("c", Some("33"))])
    )
    .unwrap());
    assert!(!block_on(adb.compare_exchange_multi(&[("b", Some("22"))], &[("c", Some("x"))])).unwrap());
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"c").unwrap(), Some(b"33".to_vec()));
    block_on(adb.rekey("c", "c2", Rekey::Move, OnDuplicate::Fail)).unwrap();
    block_on(adb.rekey("c2", "c3", Rekey::Copy, OnDuplicate::Fail)).unwrap();
    assert_eq!(db.get(b"c").unwrap(), None);
    assert_eq!(db.get_multi(&[b"c2", b"c3"]).unwrap(), vec![Some(b"33".to_vec()), Some(b"33".to_vec())]);
    block_on(adb.process("p", Access::ReadWrite, |old| {
        assert_eq!(old, None);
        Action::Set(b"processed".to_vec().into())
    }))
    .unwrap();
    assert_eq!(db.get(b"p").unwrap(), Some(b"processed".to_vec()));
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    block_on(adb.process_each(Access::ReadOnly, move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Action::Keep
    }))
    .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst) as u64, db.count().unwrap());
    assert_eq!(block_on(adb.execute(|db| db.count())).unwrap(), db.count().unwrap());
    let copy: Arc<dyn Dbm> = Arc::new(TinyDbm::new(&TinyOptions::default()));
    block_on(adb.export(Arc::clone(&copy))).unwrap();
    assert_eq!(copy.count().unwrap(), db.count().unwrap());
    assert_eq!(copy.get(b"a").unwrap(), Some(b"1:one/two".to_vec()));
    block_on(adb.synchronize(Durability::Soft)).unwrap();
    block_on(adb.rebuild(Params::new())).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1:one/two".to_vec()));
    let dest = dir.path().join("copy");
    block_on(adb.copy_file_data(dest.clone(), Durability::Soft)).unwrap();
    let copied: Box<dyn Dbm> = match db.path() {
        Some(_) => Box::new(HashDbm::open(&dest, Access::ReadOnly, &HashOptions::default()).unwrap()),
        None => Box::new(TinyDbm::open(&dest, Access::ReadOnly, &TinyOptions::default()).unwrap()),
    };
    assert_eq!(copied.count().unwrap(), db.count().unwrap());
    block_on(adb.clear()).unwrap();
    assert_eq!(db.count().unwrap(), 0);
}

#[test]
fn every_operation_on_a_memory_database() {
    let dir = tempfile::tempdir().unwrap();
    every_operation(memory(), &dir);
}

#[test]
fn every_operation_on_a_file_database() {
    let dir = tempfile::tempdir().unwrap();
    every_operation(file(&dir), &dir);
}

#[test]
fn errors_come_through_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = file(&dir);
    let adb = AsyncDbm::new(Arc::clone(&db), 2).unwrap();
    adb.set("k", "v").wait().unwrap();
    let direct = db.insert(b"k", b"w").unwrap_err();
    let queued = block_on(adb.insert("k", "w")).unwrap_err();
    assert_eq!((queued.kind(), queued.to_string()), (ErrorKind::Duplication, direct.to_string()));
    let queued = adb.rekey("missing", "x", Rekey::Move, OnDuplicate::Replace).wait().unwrap_err();
    assert_eq!(
        queued.to_string(),
        db.rekey(b"missing", b"x", Rekey::Move, OnDuplicate::Replace).unwrap_err().to_string()
    );
    assert_eq!(queued.kind(), ErrorKind::NotFound);
    let queued = block_on(adb.increment("k", 1, 0)).unwrap_err();
    assert_eq!(queued.kind(), ErrorKind::InvalidArgument);
    let queued = block_on(adb.rebuild(Params::parse("no_such_parameter=1").unwrap())).unwrap_err();
    assert_eq!(queued.kind(), ErrorKind::InvalidArgument);
    assert!(queued.to_string().contains("no_such_parameter"), "{queued}");
    let queued = block_on(adb.execute(|_| -> kuradb::Result<()> {
        Err(kuradb::Error::new(ErrorKind::BrokenData, "made up for the test"))
    }))
    .unwrap_err();
    assert_eq!(queued.to_string(), "broken data: made up for the test");
}

#[test]
fn a_panicking_function_is_an_error_and_the_worker_goes_on() {
    let adb = AsyncDbm::new(memory(), 1).unwrap();
    let err = block_on(adb.process("k", Access::ReadWrite, |_| panic!("the processor gave up"))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Canceled);
    assert!(err.to_string().contains("the processor gave up"), "{err}");
    let err = adb.execute(|_| -> kuradb::Result<()> { panic!("formatted {}", 42) }).wait().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Canceled);
    assert!(err.to_string().contains("formatted 42"), "{err}");
    // The one worker is still there and the record was left alone.
    adb.set("k", "v").wait().unwrap();
    assert_eq!(adb.get("k").wait().unwrap(), Some(b"v".to_vec()));
}

/// Closes (or drops) an AsyncDbm whose one worker is held while 500
/// operations wait in its queue: every one of them has run when closing returns.
fn drains(close: fn(AsyncDbm)) {
    let db = memory();
    let adb = AsyncDbm::new(Arc::clone(&db), 1).unwrap();
    let (open, held) = hold_worker(&adb);
    let sets: Vec<_> = (0..500).map(|i| adb.set(format!("k{i}"), format!("v{i}"))).collect();
    let closing = thread::spawn(move || close(adb));
    assert!(sets.iter().all(|f| !f.is_ready()), "nothing runs while the worker is held");
    open.send(()).unwrap();
    closing.join().unwrap();
    assert!(
        held.is_ready() && sets.iter().all(DbmFuture::is_ready),
        "closing returned before the queue drained"
    );
    held.wait().unwrap();
    for set in sets {
        set.wait().unwrap();
    }
    assert_eq!(db.count().unwrap(), 500);
}

#[test]
fn close_drains_every_queued_operation() {
    drains(|adb| adb.close());
}

#[test]
fn drop_drains_every_queued_operation() {
    drains(drop);
}

#[test]
fn every_closer_returns_only_once_drained() {
    let db = memory();
    let adb = Arc::new(AsyncDbm::new(Arc::clone(&db), 1).unwrap());
    let (open, held) = hold_worker(&*adb);
    let sets: Arc<Vec<_>> = Arc::new((0..300).map(|i| adb.set(format!("k{i}"), "v")).collect());
    let closers: Vec<_> = (0..3)
        .map(|_| {
            let (adb, sets) = (Arc::clone(&adb), Arc::clone(&sets));
            thread::spawn(move || {
                adb.close();
                assert!(sets.iter().all(DbmFuture::is_ready), "a close returned before the queue drained");
            })
        })
        .collect();
    // Time for the closers to reach their wait; it only makes the check
    // sharper, the test passes however late they come.
    thread::sleep(Duration::from_millis(50));
    open.send(()).unwrap();
    for closer in closers {
        closer.join().unwrap();
    }
    held.wait().unwrap();
    assert_eq!(db.count().unwrap(), 300);
}

#[test]
fn operations_after_close_fail_at_once() {
    let db = memory();
    let adb = AsyncDbm::new(Arc::clone(&db), 2).unwrap();
    adb.close();
    adb.close();
    assert!(adb.is_closed());
    let set = adb.set("k", "v");
    assert!(set.is_ready());
    let err = set.wait().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Infeasible);
    assert!(err.to_string().contains("closed"), "{err}");
    assert_eq!(block_on(adb.get("k")).unwrap_err().kind(), ErrorKind::Infeasible);
    assert_eq!(db.count().unwrap(), 0);
}

#[test]
fn close_from_inside_a_worker_returns() {
    let adb = Arc::new(AsyncDbm::new(memory(), 2).unwrap());
    let inner = Arc::clone(&adb);
    adb.execute(move |_| {
        inner.close();
        Ok(())
    })
    .wait()
    .unwrap();
    assert!(adb.is_closed());
    assert_eq!(adb.get("k").wait().unwrap_err().kind(), ErrorKind::Infeasible);
}

#[test]
fn many_threads_queue_at_once() {
    const THREADS: usize = 8;
    const OPS: usize = 250;
    let dir = tempfile::tempdir().unwrap();
    let db = file(&dir);
    let adb = AsyncDbm::new(Arc::clone(&db), 3).unwrap();
    thread::scope(|s| {
        for t in 0..THREADS {
            let adb = &adb;
            s.spawn(move || {
                let futures: Vec<_> = (0..OPS)
                    .map(|i| {
                        (adb.insert(format!("t{t}-{i}"), format!("{i}")), adb.increment("counter", 1, 0))
                    })
                    .collect();
                for (set, increment) in futures {
                    set.wait().unwrap();
                    block_on(increment).unwrap();
                }
            });
        }
    });
    assert_eq!(db.count().unwrap(), (THREADS * OPS + 1) as u64);
    assert_eq!(
        adb.increment("counter", kuradb::dbm::INCREMENT_UNCHANGED, 0).wait().unwrap(),
        (THREADS * OPS) as i64
    );
}

#[test]
fn a_pending_future_wakes_its_waker_once_done() {
    let adb = AsyncDbm::new(memory(), 1).unwrap();
    let (open, held) = hold_worker(&adb);
    let (woken, wakes) = mpsc::channel();
    let waker = Waker::from(Arc::new(SendingWaker(woken)));
    let mut get = pin!(adb.get("k"));
    assert!(get.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    assert!(!get.wait_timeout(Duration::from_millis(20)), "the result cannot come while the worker is held");
    open.send(()).unwrap();
    assert!(get.wait_timeout(Duration::from_secs(60)));
    held.wait().unwrap();
    // The worker wakes just after storing the result.
    wakes.recv_timeout(Duration::from_secs(60)).expect("no wake");
    match get.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(value) => assert_eq!(value.unwrap(), None),
        Poll::Pending => panic!("pending after its wake"),
    }
    match get.as_mut().poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(again) => assert_eq!(again.unwrap_err().kind(), ErrorKind::Infeasible),
        Poll::Pending => panic!("pending after answering"),
    }
    assert!(wakes.try_recv().is_err(), "woken more than once");
}

#[test]
fn zero_workers_is_refused() {
    let err = AsyncDbm::new(memory(), 0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("worker"), "{err}");
}
