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

use std::time::Duration;

use magnus::{Error, Ruby};

use kuradb::ErrorKind;
use kuradb_binding::guard::CallbackGuard;

use crate::error::to_rb;

/// One database's gate over the binding core's callback guard (its open
/// handle's), which marks the threads inside a block and counts the calls
/// running blocks.
pub struct Gate;

impl Gate {
    /// Waits until no block of the database runs in another thread; fails
    /// if this thread is inside one of them. Thread switches happen only in
    /// Ruby code, so no block can start between this check and the call.
    pub fn enter(&self, ruby: &Ruby, guard: &CallbackGuard) -> Result<(), Error> {
        if guard.is_inside() {
            return Err(to_rb(ruby, reentered()));
        }
        let mut tries = 0u32;
        while guard.is_running() {
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
