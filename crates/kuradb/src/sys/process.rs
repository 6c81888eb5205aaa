//! Which process a handle belongs to: a counter that the child side of every
//! `fork` advances, so a handle can tell in one atomic load that it is being
//! used by a process other than the one that opened it.
//!
//! A forked child shares the parent's open file descriptions, its advisory
//! locks and its shared memory maps. A database handle that went on working in
//! the child would write the parent's file behind the parent's back (and its
//! close would release the parent's lock), so handles refuse to work there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Forks seen on the child's side since this process started (its ancestors'
/// included, as the counter is inherited).
static FORKS: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();

extern "C" fn after_fork_in_child() {
    // Only an atomic add: the child of a multithreaded process may run no
    // more than async-signal-safe code before it execs.
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// The process a handle was opened in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProcessStamp {
    forks: u64,
    pid: u32,
}

impl ProcessStamp {
    /// The current process. The first call installs the fork handler, so
    /// every fork after any handle exists is counted.
    #[expect(unsafe_code, reason = "pthread_atfork, to count forks")]
    pub(crate) fn now() -> ProcessStamp {
        INSTALL.call_once(|| {
            // SAFETY: pthread_atfork only records the function pointer, which
            // stays valid for the life of the process; the handler touches
            // nothing but an atomic.
            let rc = unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
            // It fails only without memory for the record; then forks go
            // unnoticed, as before this existed.
            debug_assert_eq!(rc, 0, "pthread_atfork");
        });
        ProcessStamp { forks: FORKS.load(Ordering::Relaxed), pid: std::process::id() }
    }

    /// Whether this is still the process the stamp was taken in.
    pub(crate) fn is_current(&self) -> bool {
        FORKS.load(Ordering::Relaxed) == self.forks
    }

    /// The id of the process the stamp was taken in.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }
}

/// What identifies an open file within the system, whatever path reached it:
/// its device and inode numbers.
pub(crate) fn file_identity(file: &std::fs::File) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// The identity of the file `path` names now (following symbolic links), to
/// compare with [`file_identity`] of a file opened earlier.
pub(crate) fn path_identity(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}
