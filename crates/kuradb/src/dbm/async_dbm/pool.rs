//! The worker threads of an [`AsyncDbm`](super::AsyncDbm) and their queue.
//!
//! Jobs go through one unbounded channel that every worker takes from.
//! Closing drops the only sender: the workers take what is queued, then find
//! the channel empty and disconnected and stop, so every job submitted before
//! the close runs. A job that panics is caught around the job, so a worker
//! never dies of it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::{self, JoinHandle, ThreadId};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};

use crate::error::{Error, ErrorKind, Result};

/// One queued operation, given the database when a worker runs it.
pub(crate) type Job<D> = Box<dyn FnOnce(&D) + Send>;

/// Threads running jobs against one database.
pub(crate) struct Pool<D: ?Sized + Send + Sync + 'static> {
    /// The queue's sending end; `None` once closed.
    sender: RwLock<Option<Sender<Job<D>>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl<D: ?Sized + Send + Sync + 'static> Pool<D> {
    /// Starts `num_workers` threads (at least one) serving `db`.
    pub(crate) fn start(db: Arc<D>, num_workers: usize) -> Result<Pool<D>> {
        if num_workers == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "an AsyncDbm needs at least one worker thread",
            ));
        }
        let (sender, receiver) = crossbeam_channel::unbounded::<Job<D>>();
        let pool =
            Pool { sender: RwLock::new(Some(sender)), workers: Mutex::new(Vec::with_capacity(num_workers)) };
        for i in 0..num_workers {
            let (db, receiver) = (Arc::clone(&db), receiver.clone());
            let spawned = thread::Builder::new()
                .name(format!("kuradb-async-{i}"))
                .spawn(move || serve(&*db, &receiver));
            match spawned {
                Ok(handle) => pool.workers.lock().push(handle),
                Err(e) => {
                    pool.close();
                    return Err(Error::new(
                        ErrorKind::System,
                        format!("starting worker thread {i} of an AsyncDbm: {e}"),
                    ));
                }
            }
        }
        Ok(pool)
    }

    /// Queues `job`; answers it back if the pool is closed.
    pub(crate) fn submit(&self, job: Job<D>) -> std::result::Result<(), Job<D>> {
        match self.sender.read().as_ref() {
            // A worker holds the receiver until the sender is gone, so the
            // send cannot fail while the read lock keeps the sender.
            Some(sender) => sender.send(job).map_err(|e| e.into_inner()),
            None => Err(job),
        }
    }

    /// Refuses new jobs, waits until every queued one has run, and stops the
    /// workers. Called from one of the workers (by a job), it cannot wait for
    /// that worker, which stops on its own once the queue is empty.
    pub(crate) fn close(&self) {
        // The write lock waits for submissions under way; afterwards none begins.
        drop(self.sender.write().take());
        let workers = std::mem::take(&mut *self.workers.lock());
        let me: ThreadId = thread::current().id();
        for handle in workers {
            if handle.thread().id() != me {
                // A worker catches every job's panic, so it ends normally.
                let _ = handle.join();
            }
        }
    }

    /// Whether the pool refuses new jobs.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.read().is_none()
    }
}

impl<D: ?Sized + Send + Sync + 'static> Drop for Pool<D> {
    fn drop(&mut self) {
        self.close();
    }
}

/// A worker's life: run jobs until the queue is closed and empty.
fn serve<D: ?Sized>(db: &D, receiver: &Receiver<Job<D>>) {
    while let Ok(job) = receiver.recv() {
        // The job completes its own future, with an error if it panics; this
        // catch only keeps the worker alive if something beyond it panics.
        let _ = catch_unwind(AssertUnwindSafe(|| job(db)));
    }
}
