//! The future of one operation of an [`AsyncDbm`](super::AsyncDbm): a slot
//! shared by the caller's [`DbmFuture`] and the worker's [`Promise`].
//!
//! The worker fills the slot once; the caller takes the result by polling
//! (any executor: the waker of the last poll is woken) or by blocking in
//! [`DbmFuture::wait`]. Nothing here knows of a runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, ErrorKind, Result};

/// The slot one operation's result passes through.
struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
}

struct State<T> {
    /// The result, from when the worker gives it until the caller takes it.
    result: Option<Result<T>>,
    /// Whether the worker has given the result (it may be taken since).
    completed: bool,
    /// The waker of the last poll that found no result.
    waker: Option<Waker>,
}

/// The result of an operation of an [`AsyncDbm`](super::AsyncDbm), to come.
///
/// It is a [`Future`] with `Output = Result<T>`, usable from any executor (the
/// worker wakes the waker of the last poll), and it can be waited for without
/// one: [`DbmFuture::wait`] blocks the calling thread, and
/// [`DbmFuture::wait_timeout`] tells whether the result came within a time.
/// Dropping it does not cancel the operation, which runs anyway.
///
/// ```
/// use std::sync::Arc;
/// use kuradb::{AsyncDbm, TinyDbm, TinyOptions};
///
/// # fn main() -> kuradb::Result<()> {
/// let adb = AsyncDbm::new(Arc::new(TinyDbm::new(&TinyOptions::default())), 2)?;
/// let set = adb.set(b"japan", b"tokyo");
/// assert!(set.wait_timeout(std::time::Duration::from_secs(10)));
/// set.wait()?;
/// assert_eq!(adb.get(b"japan").wait()?, Some(b"tokyo".to_vec()));
/// # Ok(())
/// # }
/// ```
#[must_use = "the operation runs anyway, but its result and any error are only in its future"]
pub struct DbmFuture<T> {
    slot: Arc<Slot<T>>,
}

/// The worker's side of a [`DbmFuture`]: completing it hands the result over.
/// Dropped without completing (a worker that could not run the operation), it
/// completes the future with an error rather than leaving it pending for ever.
pub(crate) struct Promise<T> {
    slot: Option<Arc<Slot<T>>>,
}

/// A future and the promise that completes it.
pub(crate) fn pair<T>() -> (DbmFuture<T>, Promise<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State { result: None, completed: false, waker: None }),
        done: Condvar::new(),
    });
    (DbmFuture { slot: Arc::clone(&slot) }, Promise { slot: Some(slot) })
}

impl<T> DbmFuture<T> {
    /// A future that is complete already, with `result`.
    pub(crate) fn ready(result: Result<T>) -> DbmFuture<T> {
        let (future, promise) = pair();
        promise.complete(result);
        future
    }

    /// Blocks until the operation has run and answers its result.
    pub fn wait(self) -> Result<T> {
        let mut state = self.slot.state.lock();
        while !state.completed {
            self.slot.done.wait(&mut state);
        }
        state.result.take().unwrap_or_else(|| Err(taken()))
    }

    /// Blocks until the operation has run or `timeout` has passed; answers
    /// whether it has run (then [`DbmFuture::wait`] answers at once).
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.slot.state.lock();
        while !state.completed {
            match deadline {
                Some(deadline) => {
                    if self.slot.done.wait_until(&mut state, deadline).timed_out() {
                        return state.completed;
                    }
                }
                None => self.slot.done.wait(&mut state),
            }
        }
        true
    }

    /// Whether the operation has run, without blocking.
    pub fn is_ready(&self) -> bool {
        self.slot.state.lock().completed
    }
}

impl<T> Future for DbmFuture<T> {
    type Output = Result<T>;

    /// Ready once the worker has given the result. Polled again after
    /// answering it, it answers an error saying so.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let mut state = self.slot.state.lock();
        if state.completed {
            return Poll::Ready(state.result.take().unwrap_or_else(|| Err(taken())));
        }
        match &mut state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            waker => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> std::fmt::Debug for DbmFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbmFuture").field("ready", &self.is_ready()).finish()
    }
}

impl<T> Promise<T> {
    /// Hands `result` to the future and wakes whoever waits for it.
    pub(crate) fn complete(mut self, result: Result<T>) {
        if let Some(slot) = self.slot.take() {
            fill(&slot, result);
        }
    }
}

impl<T> Drop for Promise<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            fill(&slot, Err(Error::new(ErrorKind::Canceled, "the operation was dropped before it ran")));
        }
    }
}

/// Stores the result, then wakes outside the lock: a waker may run the
/// executor's code, which may poll this very future.
fn fill<T>(slot: &Slot<T>, result: Result<T>) {
    let waker = {
        let mut state = slot.state.lock();
        state.result = Some(result);
        state.completed = true;
        state.waker.take()
    };
    slot.done.notify_all();
    if let Some(waker) = waker {
        waker.wake();
    }
}

fn taken() -> Error {
    Error::new(ErrorKind::Infeasible, "the result of this operation was taken already")
}
