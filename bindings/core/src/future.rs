//! [`BlockingFuture`]: an `AsyncDBM` task's future that a binding waits for
//! by blocking, with what the task answers mapped to one outcome type. A
//! binding whose language awaits (Python's asyncio) also registers a waker
//! with [`BlockingFuture::on_ready`] to hear when the task has run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use kuradb::{DbmFuture, ErrorKind};
use parking_lot::Mutex;

/// A task's future whose result becomes an `O` when collected.
trait Pending<O>: Send {
    /// Waits at most `timeout`; answers whether the task has run.
    fn wait_timeout(&self, timeout: Duration) -> bool;
    /// Waits for the task and answers its outcome.
    fn wait(self: Box<Self>) -> kuradb::Result<O>;
    /// The outcome if the task has run; else `cx`'s waker is woken when it has.
    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<kuradb::Result<O>>;
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

    fn poll_outcome(&mut self, cx: &mut Context<'_>) -> Poll<kuradb::Result<O>> {
        Pin::new(&mut self.future).poll(cx).map(|r| r.map(self.map))
    }
}

/// Where a future stands.
enum Stage<O> {
    /// The task may not have run; its outcome is still in the core future.
    Pending(Box<dyn Pending<O>>),
    /// The task has run and a waker's poll took its outcome, not collected yet.
    Ready(kuradb::Result<O>),
    /// The outcome has been collected.
    Collected,
}

/// A pending (or collected) task's future.
pub struct BlockingFuture<O> {
    stage: Mutex<Stage<O>>,
}

impl<O: 'static> BlockingFuture<O> {
    /// Wraps `future`, whose result `map` turns into an `O`.
    pub fn new<T: Send + 'static>(future: DbmFuture<T>, map: fn(T) -> O) -> BlockingFuture<O> {
        BlockingFuture { stage: Mutex::new(Stage::Pending(Box::new(Mapped { future, map }))) }
    }

    /// Waits at most `timeout` (`None`: without limit) for the task;
    /// answers whether it has run. A collected future has.
    pub fn wait_for(&self, timeout: Option<Duration>) -> bool {
        let guard = self.stage.lock();
        match &*guard {
            Stage::Pending(pending) => pending.wait_timeout(timeout.unwrap_or(Duration::MAX)),
            Stage::Ready(_) | Stage::Collected => true,
        }
    }

    /// Answers whether the task has run; if it has not, `waker` is woken
    /// (on the worker's thread) when it has. The waker then calls this
    /// again, which answers true, before it tells anyone waiting.
    pub fn on_ready(&self, waker: &Waker) -> bool {
        let mut guard = self.stage.lock();
        let Stage::Pending(pending) = &mut *guard else { return true };
        match pending.poll_outcome(&mut Context::from_waker(waker)) {
            Poll::Ready(outcome) => {
                *guard = Stage::Ready(outcome);
                true
            }
            Poll::Pending => false,
        }
    }

    /// Waits for the task and answers its outcome; the future is collected,
    /// so a second call fails with an infeasible error.
    pub fn collect(&self) -> kuradb::Result<O> {
        let taken = std::mem::replace(&mut *self.stage.lock(), Stage::Collected);
        match taken {
            Stage::Pending(pending) => pending.wait(),
            Stage::Ready(outcome) => outcome,
            Stage::Collected => {
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
    use std::sync::Arc;

    use kuradb::dbm::poly::PolyDbm;
    use kuradb::AsyncDbm;

    #[test]
    fn a_future_answers_once() {
        let db = Arc::new(PolyDbm::open("", true, &kuradb::Params::new()).unwrap());
        let adb = AsyncDbm::new(db, 1).unwrap();
        let future = BlockingFuture::new(adb.set(b"k", b"v", true), |()| "set");
        assert!(future.wait_for(timeout_of(-1.0)));
        assert_eq!(future.collect().unwrap(), "set");
        assert!(future.wait_for(Some(Duration::ZERO)));
        assert_eq!(future.collect().unwrap_err().kind(), ErrorKind::Infeasible);
        assert_eq!(timeout_of(f64::NAN), None);
        assert_eq!(timeout_of(0.5), Some(Duration::from_millis(500)));
    }

    /// Counts its wakes.
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waker_hears_the_task_and_the_outcome_is_kept_for_collect() {
        let db = Arc::new(PolyDbm::open("", true, &kuradb::Params::new()).unwrap());
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
        assert!(!future.on_ready(&waker));
        drop(held);
        blocker.wait().unwrap();
        assert!(future.wait_for(None));
        adb.close();
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(future.on_ready(&waker));
        assert!(future.wait_for(Some(Duration::ZERO)));
        assert!(!future.collect().unwrap());
        assert_eq!(future.collect().unwrap_err().kind(), ErrorKind::Infeasible);
    }
}
