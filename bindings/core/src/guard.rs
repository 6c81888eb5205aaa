//! The guard against a call back into a database from one of its own
//! callbacks.
//!
//! A callback (`process` and its kin) runs under the record's lock; had it
//! called into the same database, the call would wait for ever for the lock
//! its own thread holds. So each thread remembers which databases' callbacks
//! it is inside, and such a call is refused with an error instead. The
//! guard also counts the callback calls in progress in any thread, which
//! the bindings whose interpreter has one global lock (Python's GIL, Ruby's
//! VM lock) need to decide whether a call may keep that lock.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use kuradb::ErrorKind;

thread_local! {
    /// The guards (by address) whose callbacks this thread is inside.
    static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// One database's guard.
#[derive(Default, Debug)]
pub struct CallbackGuard {
    /// How many callback calls of the database are in progress, in any thread.
    running: AtomicUsize,
}

impl CallbackGuard {
    fn id(&self) -> usize {
        self as *const CallbackGuard as usize
    }

    /// Whether this thread is inside one of the database's callbacks.
    pub fn is_inside(&self) -> bool {
        INSIDE.with(|ids| ids.borrow().contains(&self.id()))
    }

    /// Fails if this thread is inside one of the database's callbacks.
    pub fn check(&self) -> kuradb::Result<()> {
        if self.is_inside() {
            return Err(reentered());
        }
        Ok(())
    }

    /// Whether a callback call of the database is in progress in any thread.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst) > 0
    }

    /// Runs `f`, a call that runs callbacks under the database's record
    /// locks, marked as such for [`CallbackGuard::check`] of this thread and
    /// [`CallbackGuard::is_running`] of every thread, however it ends.
    pub fn run_callbacks<R>(&self, f: impl FnOnce() -> R) -> R {
        self.running.fetch_add(1, Ordering::SeqCst);
        INSIDE.with(|ids| ids.borrow_mut().push(self.id()));
        let _done = Done(self);
        f()
    }

    /// Runs `f`, one callback, marked as inside the database for
    /// [`CallbackGuard::check`] of this thread: for a binding that counts
    /// the whole call with [`CallbackGuard::count_running`] before it lets
    /// its interpreter's lock go, and marks each callback as it runs.
    pub fn mark_inside<R>(&self, f: impl FnOnce() -> R) -> R {
        INSIDE.with(|ids| ids.borrow_mut().push(self.id()));
        let _unmark = Unmark(self);
        f()
    }

    /// Runs `f` counted as a callback call in [`CallbackGuard::is_running`]
    /// but without marking this thread: for a call whose callbacks run in
    /// another thread that the binding marks itself.
    pub fn count_running<R>(&self, f: impl FnOnce() -> R) -> R {
        self.running.fetch_add(1, Ordering::SeqCst);
        let _done = Counted(self);
        f()
    }
}

/// Ends a [`CallbackGuard::run_callbacks`] however it ends.
struct Done<'a>(&'a CallbackGuard);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let id = self.0.id();
        INSIDE.with(|ids| {
            let mut ids = ids.borrow_mut();
            if let Some(at) = ids.iter().rposition(|&x| x == id) {
                ids.remove(at);
            }
        });
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Ends a [`CallbackGuard::mark_inside`] however it ends.
struct Unmark<'a>(&'a CallbackGuard);

impl Drop for Unmark<'_> {
    fn drop(&mut self) {
        let id = self.0.id();
        INSIDE.with(|ids| {
            let mut ids = ids.borrow_mut();
            if let Some(at) = ids.iter().rposition(|&x| x == id) {
                ids.remove(at);
            }
        });
    }
}

/// Ends a [`CallbackGuard::count_running`] however it ends.
struct Counted<'a>(&'a CallbackGuard);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The error of a database used inside one of its own callbacks.
pub fn reentered() -> kuradb::Error {
    kuradb::Error::new(
        ErrorKind::Infeasible,
        "a database cannot be used or closed inside one of its callbacks: the callback runs under the \
         record's lock, which the call would wait for; return the new value instead, or use the \
         database after process returns",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_inside_a_callback_is_refused_and_the_mark_ends_with_it() {
        let guard = CallbackGuard::default();
        let other = CallbackGuard::default();
        assert!(guard.check().is_ok());
        guard.run_callbacks(|| {
            assert!(guard.is_running());
            assert_eq!(guard.check().unwrap_err().kind(), ErrorKind::Infeasible);
            assert!(other.check().is_ok());
        });
        assert!(guard.check().is_ok());
        assert!(!guard.is_running());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guard.run_callbacks(|| panic!("a failing callback"))
        }));
        assert!(caught.is_err());
        assert!(guard.check().is_ok() && !guard.is_running());
        guard.count_running(|| {
            assert!(guard.is_running() && guard.check().is_ok());
            guard.mark_inside(|| assert!(guard.check().is_err()));
            assert!(guard.check().is_ok());
        });
        assert!(!guard.is_running());
    }
}
