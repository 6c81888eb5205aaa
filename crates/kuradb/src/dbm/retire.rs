//! Closing a rebuilt database's old file off the caller's time.
//!
//! A rebuild returns once its new file is durable and holds the database's
//! name. The old file has no name by then, so what a close would write is
//! lost with it: it is closed writing nothing, and what that costs is
//! freeing, of the old file's pages in the system's cache (when its last
//! descriptor closes) and of the memory the database kept for it (a tree's
//! node cache): a large part of a rebuild of a big file
//! (bench/results/2026-12-06-growth-and-compaction-costs.md). A [`Retirer`]
//! does that close in a thread of its own, and the database's close (or
//! drop) waits for it, so that a closed database holds nothing any more.

use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;

use crate::sys::ProcessStamp;

/// The thread closing a database's replaced file, if one was started.
#[derive(Default)]
pub(crate) struct Retirer {
    /// The thread and the process that started it: a forked child has no
    /// such thread to wait for.
    thread: Mutex<Option<(JoinHandle<()>, ProcessStamp)>>,
}

impl Retirer {
    /// Closes `old` with `close` in a thread of its own, once the close
    /// started before it has ended; in the calling thread if no thread can
    /// be started.
    pub(crate) fn retire<T: Send + 'static>(&self, old: T, close: fn(T)) {
        let mut slot = self.thread.lock();
        join(slot.take());
        // Shared, so that `old` comes back if the thread cannot start.
        let ours = Arc::new(Mutex::new(Some(old)));
        let theirs = Arc::clone(&ours);
        let spawned = std::thread::Builder::new().name("kuradb-retire".into()).spawn(move || {
            if let Some(old) = theirs.lock().take() {
                close(old);
            }
        });
        match spawned {
            Ok(thread) => *slot = Some((thread, ProcessStamp::now())),
            Err(e) => {
                log::warn!("no thread to close a rebuilt database's old file in: {e}");
                if let Some(old) = ours.lock().take() {
                    close(old);
                }
            }
        }
    }

    /// Waits until the last close started has ended.
    pub(crate) fn wait(&self) {
        join(self.thread.lock().take());
    }

    /// For a database's test, after a rebuild: checks that the old file's
    /// close went to this retirer, and queues a slow close after it (as a
    /// large file's freeing would be), whose end the answer tells.
    #[cfg(test)]
    pub(crate) fn queue_slow_close(&self) -> Arc<std::sync::atomic::AtomicBool> {
        use std::sync::atomic::{AtomicBool, Ordering};
        assert!(self.thread.lock().is_some(), "the old file was closed in the caller's thread");
        let ended = Arc::new(AtomicBool::new(false));
        self.retire(Arc::clone(&ended), |ended| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            ended.store(true, Ordering::SeqCst);
        });
        ended
    }
}

impl Drop for Retirer {
    fn drop(&mut self) {
        join(self.thread.get_mut().take());
    }
}

fn join(thread: Option<(JoinHandle<()>, ProcessStamp)>) {
    if let Some((thread, process)) = thread {
        if process.is_current() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    static CLOSED: AtomicUsize = AtomicUsize::new(0);

    /// A slow close, so that a wait that does not wait is seen.
    fn slow_close(n: usize) {
        std::thread::sleep(Duration::from_millis(50));
        CLOSED.fetch_add(n, Ordering::SeqCst);
    }

    #[test]
    fn closes_run_one_after_another_and_a_wait_or_a_drop_waits_for_them() {
        let retirer = Retirer::default();
        retirer.retire(1, slow_close);
        // The second waits for the first before it starts.
        retirer.retire(10, slow_close);
        assert!(CLOSED.load(Ordering::SeqCst) >= 1);
        retirer.wait();
        assert_eq!(CLOSED.load(Ordering::SeqCst), 11);
        retirer.retire(100, slow_close);
        drop(retirer);
        assert_eq!(CLOSED.load(Ordering::SeqCst), 111);
    }
}
