//! [`BlockingFuture`]: an `AsyncDBM` task's future that a binding waits for,
//! by blocking (Java) or by polling with a waker of its own (Ruby, whose
//! waits must end when the thread is interrupted; Python, whose asyncio
//! loops await it), with what the task answers mapped to one outcome type.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use kuradb::{DbmFuture, ErrorKind};
use parking_lot::Mutex;

/// A task's future whose result becomes an `O` when it is done.
trait Pending<O>: Send {
    /// Waits at most `timeout`; answers whether the task has run.
    fn wait_timeout(&self, timeout: Duration) -> bool;
    /// Waits for the task and answers its outcome.
    fn wait(self: Box<Self>) -> kuradb::Result<O>;
    /// The outcome if the task has run; else `cx`'s waker is woken when it has.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<kuradb::Result<O>>;
}

/// A core future and how its result reads as an `O`.
struct Mapped<T, O> {
    future: DbmFuture<T>,
    map: fn(T) -> O,
}

impl<T: Send, O> Pending<O> for Mapped<T, O> {
    fn wait_timeout(&self, timeout: Duration) -> bool {
        self.future.wait_timeout(timeout)
    }

    fn wait(self: Box<Self>) -> kuradb::Result<O> {
        self.future.wait().map(self.map)
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<kuradb::Result<O>> {
        let map = self.map;
        Pin::new(&mut self.future).poll(cx).map(|result| result.map(map))
    }
}

/// Where a future is.
enum State<O> {
    Pending(Box<dyn Pending<O>>),
    /// Done, its outcome kept until collected.
    Done(kuradb::Result<O>),
    Collected,
}

/// A pending, done or collected task's future.
pub struct BlockingFuture<O> {
    state: Mutex<State<O>>,
}

impl<O: 'static> BlockingFuture<O> {
    /// Wraps `future`, whose result `map` turns into an `O`.
    pub fn new<T: Send + 'static>(future: DbmFuture<T>, map: fn(T) -> O) -> BlockingFuture<O> {
        BlockingFuture { state: Mutex::new(State::Pending(Box::new(Mapped { future, map }))) }
    }

    /// The future of a task that failed before it was queued.
    pub fn failed(error: kuradb::Error) -> BlockingFuture<O> {
        BlockingFuture { state: Mutex::new(State::Done(Err(error))) }
    }

    /// Waits at most `timeout` (`None`: without limit) for the task;
    /// answers whether it has run. A done or collected future has.
    pub fn wait_for(&self, timeout: Option<Duration>) -> bool {
        let guard = self.state.lock();
        match &*guard {
            State::Pending(pending) => pending.wait_timeout(timeout.unwrap_or(Duration::MAX)),
            State::Done(_) | State::Collected => true,
        }
    }

    /// Whether the task has run, without waiting; if not, `waker` is woken
    /// once it has (the last waker given is the one woken).
    pub fn poll_ready(&self, waker: &Waker) -> bool {
        let mut guard = self.state.lock();
        let State::Pending(pending) = &mut *guard else { return true };
        match pending.poll(&mut Context::from_waker(waker)) {
            Poll::Ready(outcome) => {
                *guard = State::Done(outcome);
                true
            }
            Poll::Pending => false,
        }
    }

    /// Shows `f` the outcome of a done task, kept for every later look, or
    /// answers `None` if it has not run (or was collected).
    pub fn with_outcome<R>(&self, f: impl FnOnce(&kuradb::Result<O>) -> R) -> Option<R> {
        match &*self.state.lock() {
            State::Done(outcome) => Some(f(outcome)),
            State::Pending(_) | State::Collected => None,
        }
    }

    /// Waits for the task and answers its outcome; the future is collected,
    /// so a second call fails with an infeasible error.
    pub fn collect(&self) -> kuradb::Result<O> {
        let taken = std::mem::replace(&mut *self.state.lock(), State::Collected);
        match taken {
            State::Pending(pending) => pending.wait(),
            State::Done(outcome) => outcome,
            State::Collected => {
                Err(kuradb::Error::new(ErrorKind::Infeasible, "the future's result was collected already"))
            }
        }
    }
}

/// A timeout in seconds as the references take it: negative (or not a
/// number) waits without limit.
pub fn timeout_of(seconds: f64) -> Option<Duration> {
    if seconds < 0.0 || seconds.is_nan() {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::dbm::Access;
    use std::sync::Arc;

    use kuradb::dbm::poly::PolyDbm;
    use kuradb::dbm::Dbm;
    use kuradb::AsyncDbm;

    #[test]
    fn a_future_answers_once() {
        let db = Arc::new(PolyDbm::open("", Access::ReadWrite, &kuradb::Params::new()).unwrap());
        let adb = AsyncDbm::new(db, 1).unwrap();
        let future = BlockingFuture::new(adb.set(b"k", b"v"), |()| "set");
        assert!(future.wait_for(timeout_of(-1.0)));
        assert_eq!(future.collect().unwrap(), "set");
        assert!(future.wait_for(Some(Duration::ZERO)));
        assert_eq!(future.collect().unwrap_err().kind(), ErrorKind::Infeasible);
        assert_eq!(timeout_of(f64::NAN), None);
        assert_eq!(timeout_of(0.5), Some(Duration::from_millis(500)));
    }

    /// Wakes a test's thread by unparking it.
    struct Unpark(std::thread::Thread);

    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    #[test]
    fn a_polled_future_keeps_its_outcome_until_collected() {
        let db = Arc::new(PolyDbm::open("", Access::ReadWrite, &kuradb::Params::new()).unwrap());
        let adb = AsyncDbm::new(Arc::clone(&db), 1).unwrap();
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let future =
            BlockingFuture::new(adb.execute(|db| db.pop_first(Some(Duration::from_secs(10)))), |r| r);
        assert!(!future.poll_ready(&waker));
        assert!(future.with_outcome(|_| ()).is_none());
        db.set(b"k", b"v").unwrap();
        while !future.poll_ready(&waker) {
            std::thread::park_timeout(Duration::from_millis(100));
        }
        let seen =
            |f: &BlockingFuture<Option<(Vec<u8>, Vec<u8>)>>| f.with_outcome(|r| r.as_ref().unwrap().clone());
        assert_eq!(seen(&future), Some(Some((b"k".to_vec(), b"v".to_vec()))));
        assert_eq!(seen(&future), Some(Some((b"k".to_vec(), b"v".to_vec()))), "kept for a second look");
        assert!(future.collect().unwrap().is_some());
        assert_eq!(future.collect().unwrap_err().kind(), ErrorKind::Infeasible);
        assert!(future.poll_ready(&waker));
        let failed = BlockingFuture::<()>::failed(kuradb::Error::new(ErrorKind::NotFound, "gone"));
        assert!(failed.poll_ready(&waker) && failed.wait_for(Some(Duration::ZERO)));
        assert_eq!(failed.with_outcome(|r| r.as_ref().unwrap_err().kind()), Some(ErrorKind::NotFound));
        adb.close();
    }

    /// Counts its wakes.
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waker_hears_the_task_once_and_the_outcome_is_kept_for_collect() {
        let db = Arc::new(PolyDbm::open("", Access::ReadWrite, &kuradb::Params::new()).unwrap());
        let adb = AsyncDbm::new(Arc::clone(&db), 1).unwrap();
        // A task queued behind one that waits on a lock this thread holds
        // cannot have run when the waker is registered.
        let gate = Arc::new(Mutex::new(()));
        let held = gate.lock();
        let blocker = {
            let gate = Arc::clone(&gate);
            adb.execute(move |_: &PolyDbm| {
                drop(gate.lock());
                Ok(())
            })
        };
        let future = BlockingFuture::new(adb.get(b"k"), |v: Option<Vec<u8>>| v.is_some());
        let count = Arc::new(Count(Default::default()));
        let waker = Waker::from(Arc::clone(&count));
        assert!(!future.poll_ready(&waker));
        drop(held);
        blocker.wait().unwrap();
        assert!(future.wait_for(None));
        adb.close();
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(future.poll_ready(&waker));
        assert!(future.wait_for(Some(Duration::ZERO)));
        assert!(!future.collect().unwrap());
        assert_eq!(future.collect().unwrap_err().kind(), ErrorKind::Infeasible);
    }
}
