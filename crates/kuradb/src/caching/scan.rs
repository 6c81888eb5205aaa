//! The scan mark: a thread-local flag that makes the caches treat this
//! thread's reads as one pass over the data, not as lookups to keep.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    /// How many [`ScanScope`]s this thread holds (scopes nest).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// While a `ScanScope` lives, the caches treat the reads of the thread that
/// made it as a scan: blocks and nodes it brings in enter the probationary
/// segment, and its hits promote nothing, so a pass over the whole database
/// does not evict what random lookups use. The databases' walks (cursor
/// moves, `process_each`, `export`, rebuilds) hold one; a program that walks
/// a database through lookups of its own may hold one too. Scopes nest, and
/// a scope belongs to its thread (it is not `Send`).
///
/// ```
/// use kuradb::caching::ScanScope;
/// assert!(!ScanScope::active());
/// {
///     let _scan = ScanScope::enter();
///     assert!(ScanScope::active());
/// }
/// assert!(!ScanScope::active());
/// ```
#[must_use = "the scope ends when the value is dropped"]
pub struct ScanScope {
    /// Not `Send`: the mark is the creating thread's.
    _thread: PhantomData<*const ()>,
}

impl ScanScope {
    /// Marks this thread's reads as a scan until the value is dropped.
    pub fn enter() -> ScanScope {
        DEPTH.with(|d| d.set(d.get() + 1));
        ScanScope { _thread: PhantomData }
    }

    /// Whether this thread is in a scan.
    pub fn active() -> bool {
        in_scan()
    }
}

impl Drop for ScanScope {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Whether this thread's reads are a scan now.
pub(crate) fn in_scan() -> bool {
    DEPTH.with(|d| d.get() > 0)
}
