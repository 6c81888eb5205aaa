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
    /// The workers, until a close has joined them.
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// The workers' thread ids, to know a close called by a job.
    worker_ids: Vec<ThreadId>,
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
        let mut workers = Vec::with_capacity(num_workers);
        for i in 0..num_workers {
            let (db, receiver) = (Arc::clone(&db), receiver.clone());
            let spawned = thread::Builder::new()
                .name(format!("kuradb-async-{i}"))
                .spawn(move || serve(&*db, &receiver));
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    // Without a sender the started workers find the queue closed and stop.
                    drop(sender);
                    for handle in workers {
                        let _ = handle.join();
                    }
                    return Err(Error::new(
                        ErrorKind::System,
                        format!("starting worker thread {i} of an AsyncDbm: {e}"),
                    ));
                }
            }
        }
        let worker_ids = workers.iter().map(|h| h.thread().id()).collect();
        Ok(Pool { sender: RwLock::new(Some(sender)), workers: Mutex::new(workers), worker_ids })
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
    /// workers; a second closer waits as long as the first. Called from one
    /// of the workers (by a job), it cannot wait for that worker, nor for the
    /// others while a closer may be waiting for it: it only refuses new jobs,
    /// and the workers stop once the queue is empty.
    pub(crate) fn close(&self) {
        // The write lock waits for submissions under way; afterwards none begins.
        drop(self.sender.write().take());
        if self.worker_ids.contains(&thread::current().id()) {
            return;
        }
        // Held while joining, so that every closer returns only once drained.
        let mut workers = self.workers.lock();
        for handle in workers.drain(..) {
            // A worker catches every job's panic, so it ends normally.
            let _ = handle.join();
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
