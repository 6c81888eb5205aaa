//! Keeps Ruby threads from deadlocking on a database whose `process` block
//! is running.
//!
//! A block runs under the record's lock, and Ruby may switch to another
//! thread inside it. Had that thread called into the same database, it
//! would wait for the record lock while holding the VM lock the block needs
//! to finish: both would wait for ever. So every call first waits, with the
//! VM lock released, until no block of the database is running; and a call
//! from inside a block of the same database (which could never get the
//! lock its own thread holds) is refused with an error instead.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use magnus::{Error, Ruby};

use kuradb::ErrorKind;

use crate::error::to_rb;

thread_local! {
    /// The databases (by the address of their [`Gate`]) whose blocks this
    /// thread is inside.
    static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// How many blocks of one database are running; one per database.
#[derive(Default)]
pub struct Gate {
    running: AtomicUsize,
}

impl Gate {
    fn id(&self) -> usize {
        self as *const Gate as usize
    }

    /// Waits until no block of the database runs in another thread; fails
    /// if this thread is inside one of them. Thread switches happen only in
    /// Ruby code, so no block can start between this check and the call.
    pub fn enter(&self, ruby: &Ruby) -> Result<(), Error> {
        if INSIDE.with(|ids| ids.borrow().contains(&self.id())) {
            return Err(to_rb(ruby, reentered()));
        }
        let mut tries = 0u32;
        while self.running.load(Ordering::SeqCst) > 0 {
            // Let the block's thread run; sleep after a few passes so a
            // block that waits on something else does not make us spin.
            if tries < 16 {
                ruby.thread_schedule();
            } else {
                ruby.thread_sleep(Duration::from_micros(200))?;
            }
            tries += 1;
        }
        Ok(())
    }

    /// Runs `f`, a call that will run Ruby blocks under the database's
    /// locks, marked as such for [`Gate::enter`] of every thread.
    pub fn run_blocks<R>(&self, f: impl FnOnce() -> R) -> R {
        self.running.fetch_add(1, Ordering::SeqCst);
        INSIDE.with(|ids| ids.borrow_mut().push(self.id()));
        let _done = Done(self);
        f()
    }
}

/// Unmarks a [`Gate::run_blocks`] call however it ends.
struct Done<'a>(&'a Gate);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        INSIDE.with(|ids| ids.borrow_mut().pop());
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The error of a database used inside one of its own blocks.
fn reentered() -> kuradb::Error {
    kuradb::Error::new(
        ErrorKind::Infeasible,
        "a database cannot be used or closed inside one of its own process blocks: the block runs \
         under the record's lock, which the call would wait for; return the new value instead, or \
         use the database after process returns",
    )
}
