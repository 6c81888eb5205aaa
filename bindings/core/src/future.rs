//! [`BlockingFuture`]: an `AsyncDBM` task's future that a binding waits for
//! by blocking, with what the task answers mapped to one outcome type.

use std::time::Duration;

use kuradb::{DbmFuture, ErrorKind};
use parking_lot::Mutex;

/// A task's future whose result becomes an `O` when collected.
trait Pending<O>: Send {
    /// Waits at most `timeout`; answers whether the task has run.
    fn wait_timeout(&self, timeout: Duration) -> bool;
    /// Waits for the task and answers its outcome.
    fn wait(self: Box<Self>) -> kuradb::Result<O>;
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
}

/// A pending (or collected) task's future.
pub struct BlockingFuture<O> {
    pending: Mutex<Option<Box<dyn Pending<O>>>>,
}

impl<O: 'static> BlockingFuture<O> {
    /// Wraps `future`, whose result `map` turns into an `O`.
    pub fn new<T: Send + 'static>(future: DbmFuture<T>, map: fn(T) -> O) -> BlockingFuture<O> {
        BlockingFuture { pending: Mutex::new(Some(Box::new(Mapped { future, map }))) }
    }

    /// Waits at most `timeout` (`None`: without limit) for the task;
    /// answers whether it has run. A collected future has.
    pub fn wait_for(&self, timeout: Option<Duration>) -> bool {
        let guard = self.pending.lock();
        match guard.as_ref() {
            Some(pending) => pending.wait_timeout(timeout.unwrap_or(Duration::MAX)),
            None => true,
        }
    }

    /// Waits for the task and answers its outcome; the future is collected,
    /// so a second call fails with an infeasible error.
    pub fn collect(&self) -> kuradb::Result<O> {
        let taken = self.pending.lock().take();
        match taken {
            Some(pending) => pending.wait(),
            None => {
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
}
