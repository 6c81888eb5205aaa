//! [`AsyncDbm`]: any database behind a pool of worker threads, its
//! operations answering futures.
//!
//! A caller queues an operation and gets a [`DbmFuture`] at once; a worker
//! runs the operation on the database and completes the future. The
//! futures are plain [`std::future::Future`]s, usable from any executor
//! (no runtime is assumed), and can also be waited for by blocking.
//!
//! The operations are those of the reference's AsyncDBM that kuradb's
//! [`Dbm`] trait offers (see `ops.rs`); [`AsyncDbm::execute`] runs any
//! function of the database on a worker, for everything else.

mod future;
mod ops;
mod pool;

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

pub use future::DbmFuture;
use pool::{Job, Pool};

use super::Dbm;
use crate::error::{Error, ErrorKind, Result};

/// A database behind a pool of worker threads; every operation answers a
/// [`DbmFuture`] at once and runs on a worker.
///
/// Operations run in the order they were queued as far as one worker is
/// concerned; with several workers, operations queued one after another
/// may run at the same time, in either order, as the database's own
/// thread safety allows: wait for a future before queuing what depends on
/// it. Errors of the database come through the future unchanged. A
/// function given to [`AsyncDbm::process`] or [`AsyncDbm::execute`] that
/// panics makes its future an error of kind [`ErrorKind::Canceled`]; the
/// worker goes on.
///
/// `AsyncDbm` is `Send` and `Sync`: any number of threads may queue
/// operations through one `&AsyncDbm` (or an `Arc` of it) at once.
///
/// [`AsyncDbm::close`], or dropping the `AsyncDbm`, drains the queue: every
/// operation queued before it runs and completes its future, then the
/// workers stop. Operations queued afterwards fail at once with an error
/// of kind [`ErrorKind::Infeasible`]. Closing does not close the database,
/// which belongs to whoever holds its `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use kuradb::{AsyncDbm, Dbm, HashDbm, HashOptions};
///
/// # fn main() -> kuradb::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Arc::new(HashDbm::builder().open(dir.path().join("casket.kh"))?);
/// let adb = AsyncDbm::new(Arc::clone(&db), 4)?;
/// // Queue a hundred writes, then wait for them all.
/// let sets: Vec<_> = (0..100).map(|i| adb.set(format!("k{i}"), format!("v{i}"))).collect();
/// for set in sets {
///     set.wait()?;
/// }
/// assert_eq!(adb.get("k7").wait()?, Some(b"v7".to_vec()));
/// // From an async function, the futures are awaited instead:
/// // `let v = adb.get("k7").await?;`
/// adb.close();
/// assert_eq!(db.count()?, 100);
/// # Ok(())
/// # }
/// ```
pub struct AsyncDbm<D: Dbm + ?Sized + 'static = dyn Dbm> {
    db: Arc<D>,
    pool: Pool<D>,
}

impl<D: Dbm + ?Sized + 'static> AsyncDbm<D> {
    /// Puts `db` behind `num_workers` worker threads. Zero workers is an
    /// [`ErrorKind::InvalidArgument`] error; a thread the system refuses to
    /// start an [`ErrorKind::System`] one.
    pub fn new(db: Arc<D>, num_workers: usize) -> Result<AsyncDbm<D>> {
        let pool = Pool::start(Arc::clone(&db), num_workers)?;
        Ok(AsyncDbm { db, pool })
    }

    /// The database the workers serve.
    pub fn db(&self) -> &Arc<D> {
        &self.db
    }

    /// Runs `f` with the database on a worker and answers its result: any
    /// operation the named methods leave out (counting, iterating, several
    /// calls that belong together). A panic in `f` is an
    /// [`ErrorKind::Canceled`] error of the future.
    pub fn execute<T, F>(&self, f: F) -> DbmFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&D) -> Result<T> + Send + 'static,
    {
        self.submit("execute", f)
    }

    /// Refuses new operations, waits until every queued one has run and
    /// completed its future, and stops the workers. Closing again (from any
    /// thread, even while a first close waits) returns once drained too.
    /// Called from a worker (inside [`AsyncDbm::execute`]), it cannot wait
    /// for its own operation, which is running: it only refuses new
    /// operations, and the workers stop once the queue is empty.
    pub fn close(&self) {
        self.pool.close();
    }

    /// Whether [`AsyncDbm::close`] has been called.
    pub fn is_closed(&self) -> bool {
        self.pool.is_closed()
    }

    /// Queues `op`, named `what` in the error of a panic, and answers its future.
    fn submit<T, F>(&self, what: &'static str, op: F) -> DbmFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&D) -> Result<T> + Send + 'static,
    {
        let (future, promise) = future::pair();
        let job: Job<D> = Box::new(move |db: &D| {
            let result = catch_unwind(AssertUnwindSafe(|| op(db)))
                .unwrap_or_else(|panic| Err(panicked(what, &*panic)));
            promise.complete(result);
        });
        match self.pool.submit(job) {
            Ok(()) => future,
            Err(_refused) => DbmFuture::ready(Err(Error::new(
                ErrorKind::Infeasible,
                format!("{what} was refused: the AsyncDbm is closed"),
            ))),
        }
    }
}

impl<D: Dbm + ?Sized + 'static> std::fmt::Debug for AsyncDbm<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncDbm").field("closed", &self.is_closed()).finish_non_exhaustive()
    }
}

/// The error of an operation whose code panicked, with the panic's message.
fn panicked(what: &str, panic: &(dyn Any + Send)) -> Error {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    Error::new(ErrorKind::Canceled, format!("{what} panicked in a worker of the AsyncDbm: {message}"))
}
