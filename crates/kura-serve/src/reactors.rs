//! The reactor threads (`--threads`): each runs a current-thread tokio
//! runtime with its own epoll instance, and the accepted connections are
//! dealt among them in turn, each staying on its thread for its whole life.
//!
//! This is the layout of redis-server's event loop, once per thread: a
//! thread waits for all of its connections at once, serves every one that
//! is ready, and waits again. tokio's multi-threaded runtime, used before,
//! shares one epoll among its workers and moves ready connections between
//! them: at one request per round trip (`redis-benchmark -P 1`) a worker
//! that had found several ready connections woke an idle one to steal some
//! (a futex wake and a context switch for every 15-30 requests), the two
//! workers took turns on the epoll, each wait returning fewer events, and
//! the stealing worker competed for a core with the clients on the same
//! machine. bench/results/2026-11-29-serve.md has the counts.
//!
//! The caller's own runtime, which accepts the connections and runs the
//! replication links, is reactor 0; `--threads N` starts N - 1 more.

use std::sync::mpsc;
use std::time::Duration;

use kuradb::{Error, ErrorKind, Result};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;

/// How long a reactor waits, at shutdown, for the blocking calls it started.
const BLOCKING_DRAIN: Duration = Duration::from_secs(60);

/// A current-thread runtime for a reactor thread, with I/O and timers.
pub fn runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .thread_name("kura-serve-pool")
        .enable_all()
        .build()
        .map_err(|e| Error::new(ErrorKind::System, format!("starting a reactor's runtime: {e}")))
}

/// The reactors, and whose turn it is to take the next connection.
pub struct Reactors {
    /// Every reactor's runtime, the caller's first.
    handles: Vec<Handle>,
    /// The other reactors' threads, and for each what tells it to stop.
    others: Vec<(std::thread::JoinHandle<()>, oneshot::Sender<()>)>,
    /// The reactor the next connection goes to.
    next: usize,
}

impl Reactors {
    /// `count` reactors: `main` (the caller's runtime) and `count - 1` new
    /// threads, each running a runtime of its own until [`Reactors::stop`].
    pub fn start(main: &Runtime, count: usize) -> Result<Reactors> {
        let mut reactors = Reactors { handles: vec![main.handle().clone()], others: Vec::new(), next: 0 };
        for index in 1..count.max(1) {
            let (handle_tx, handle_rx) = mpsc::channel();
            let (stop_tx, stop_rx) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("kura-serve-{index}"))
                .spawn(move || {
                    let runtime = match runtime() {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            let _ = handle_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = handle_tx.send(Ok(runtime.handle().clone()));
                    // The connections dealt to this thread run while it
                    // waits here; a dropped sender stops it as well.
                    let _ = runtime.block_on(stop_rx);
                    runtime.shutdown_timeout(BLOCKING_DRAIN);
                })
                .map_err(|e| Error::new(ErrorKind::System, format!("starting a reactor thread: {e}")))?;
            let handle = handle_rx.recv().unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::System, "a reactor thread ended before it started its runtime"))
            });
            match handle {
                Ok(handle) => {
                    reactors.handles.push(handle);
                    reactors.others.push((thread, stop_tx));
                }
                Err(e) => {
                    let _ = thread.join();
                    reactors.stop();
                    return Err(e);
                }
            }
        }
        Ok(reactors)
    }

    /// The runtime that takes the next connection: each in turn.
    pub fn next(&mut self) -> &Handle {
        let index = self.next;
        self.next = (index + 1) % self.handles.len();
        &self.handles[index]
    }

    /// Stops the other reactor threads once each has finished the blocking
    /// calls it started (at most [`BLOCKING_DRAIN`]). Their connections
    /// must have ended: the tasks left on them are dropped.
    pub fn stop(self) {
        let (threads, stops): (Vec<_>, Vec<_>) = self.others.into_iter().unzip();
        for stop in stops {
            let _ = stop.send(());
        }
        for thread in threads {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread a task spawned on `handle` runs on.
    fn thread_of(main: &Runtime, handle: &Handle) -> std::thread::ThreadId {
        let task = handle.spawn(async { std::thread::current().id() });
        main.block_on(task).expect("the task ran")
    }

    #[test]
    fn connections_are_dealt_to_each_reactor_thread_in_turn() {
        let main = runtime().unwrap();
        let mut reactors = Reactors::start(&main, 3).unwrap();
        let first: Vec<_> = (0..3).map(|_| thread_of(&main, &reactors.next().clone())).collect();
        let second: Vec<_> = (0..3).map(|_| thread_of(&main, &reactors.next().clone())).collect();
        assert_eq!(first[0], std::thread::current().id(), "reactor 0 is the caller's runtime");
        assert!(first[1] != first[0] && first[2] != first[0] && first[1] != first[2], "{first:?}");
        assert_eq!(first, second, "the turn comes round again");
        reactors.stop();
    }

    #[test]
    fn stopping_waits_for_the_blocking_calls_a_reactor_started() {
        let main = runtime().unwrap();
        let mut reactors = Reactors::start(&main, 2).unwrap();
        reactors.next();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&done);
        let started = reactors.next().spawn(async move {
            tokio::task::spawn_blocking(move || {
                std::thread::sleep(Duration::from_millis(200));
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            });
        });
        main.block_on(started).unwrap();
        reactors.stop();
        assert!(
            done.load(std::sync::atomic::Ordering::SeqCst),
            "the blocking call finished before stop returned"
        );
    }

    #[test]
    fn one_thread_is_the_callers_runtime_alone() {
        let main = runtime().unwrap();
        let mut reactors = Reactors::start(&main, 1).unwrap();
        for _ in 0..3 {
            assert_eq!(thread_of(&main, &reactors.next().clone()), std::thread::current().id());
        }
        reactors.stop();
    }
}
