//! Taking a growing memory-mapped file's space on the device ahead of its
//! writes, from a thread of the file's own.
//!
//! A write through a map cannot report a full device (it would raise
//! SIGBUS), so the file takes its space (`fallocate`) before a write lands
//! there, where a full device is an error. Taking it in large steps left an
//! open file holding up to twice its data on the device; taking it a
//! bounded step ahead put more, smaller allocations on the writer's path,
//! and one of them could wait for long behind the file system's writeback
//! (bench/results/2026-12-05-peers-file-space.md). This thread takes the
//! next step while the writer still has room, so that the writer takes
//! space itself only when it outruns the thread.
//!
//! Unlike the page-cache filler it runs in the normal scheduling class: it
//! does little work, but the writer may need it soon, and a filler in the
//! idle class is put off for as long as a writer and a copier keep both
//! processors busy.

use std::fs;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::alloc::Allocation;
use crate::sys::{self, ProcessStamp};

/// Pages: space is taken in whole pages.
const PAGE: u64 = 4096;

/// The space a memory-mapped file has taken on the device and its length,
/// shared by its writers and its [`SpaceAhead`] thread.
pub(super) struct Space {
    /// The end of the space taken on the device: every write goes below it;
    /// never above the length.
    pub(super) reserved: AtomicU64,
    /// The file's length, which serialises every change of these: the
    /// logical size rounded up by the allocation strategy; never above the
    /// current map's length.
    pub(super) length: Mutex<u64>,
    /// The current map's length, changed under `length`'s lock: the length
    /// may grow up to it without a new map.
    pub(super) mapped: AtomicU64,
    /// How the length grows.
    pub(super) alloc: Allocation,
}

impl Space {
    pub(super) fn new(reserved: u64, length: u64, mapped: u64, alloc: Allocation) -> Space {
        Space {
            reserved: AtomicU64::new(reserved),
            length: Mutex::new(length),
            mapped: AtomicU64::new(mapped),
            alloc,
        }
    }
}

/// How far ahead of `end` the space is taken: an eighth of the file, at
/// least `least` (the first reservation), so that an open file holds about
/// its data on the device and still takes space a few times per doubling.
pub(super) fn step_ahead(end: u64, least: u64) -> u64 {
    (end / 8).max(least)
}

/// What the writers and the thread share.
struct Shared {
    space: Arc<Space>,
    /// Take space up to here (an end plus a step, when last asked).
    wanted: AtomicU64,
    stop: AtomicBool,
    /// Held by the thread only to sleep, and by [`SpaceAhead::stop`].
    sleep: Mutex<()>,
    wake: Condvar,
}

/// The thread taking one file's space ahead of its writes.
pub(super) struct SpaceAhead {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process that started the thread: a forked child has none to stop.
    process: ProcessStamp,
}

impl SpaceAhead {
    /// Starts the thread taking space in `file` (a descriptor of its own);
    /// `None` if the system has no thread to give.
    pub(super) fn start(file: fs::File, space: Arc<Space>) -> Option<SpaceAhead> {
        let shared = Arc::new(Shared {
            space,
            wanted: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("kuradb-space".into())
            // It calls nothing deep: a small stack spares address space.
            .stack_size(64 << 10)
            .spawn(move || take_ahead(&theirs, &file))
            .ok()?;
        Some(SpaceAhead { shared, thread: Some(thread), process: ProcessStamp::now() })
    }

    /// Notes that the writes have reached `end`: once the space taken runs
    /// less than half of `step` ahead of it, asks for space up to `end`
    /// plus `step`.
    pub(super) fn note(&self, end: u64, step: u64) {
        let shared = &self.shared;
        let reserved = shared.space.reserved.load(Ordering::Acquire);
        if reserved.saturating_sub(end) >= step / 2 {
            return;
        }
        let wanted = end.saturating_add(step);
        // Stored only when it moved: many threads append at once, and a
        // line they all write would bounce between their processors.
        if wanted > shared.wanted.load(Ordering::Acquire) {
            shared.wanted.fetch_max(wanted, Ordering::AcqRel);
            // Without the sleep lock: a wake-up lost between the thread's
            // check and its sleep costs only the time until it wakes by
            // itself, during which the writer takes what it needs.
            shared.wake.notify_one();
        }
    }

    /// Notes that a truncation cut the file to `size` and gave back the
    /// space past it: what was asked for past that is asked no more. Called
    /// under the length's lock, so the thread is not taking space meanwhile.
    pub(super) fn cut(&self, size: u64) {
        self.shared.wanted.fetch_min(size, Ordering::AcqRel);
    }

    /// Stops the thread and waits for it, and with it its descriptor of
    /// the file, to end.
    pub(super) fn stop(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        if !self.process.is_current() {
            // A forked child: the thread is the parent's, and this copy of
            // its handle names nothing here.
            std::mem::forget(thread);
            return;
        }
        self.shared.stop.store(true, Ordering::Release);
        // Under the lock, so that the thread is either before its check of
        // `stop` or asleep, and this wakes it.
        drop(self.shared.sleep.lock());
        self.shared.wake.notify_one();
        let _ = thread.join();
    }
}

impl Drop for SpaceAhead {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How long the thread sleeps at most when no one wakes it.
const NAP: Duration = Duration::from_secs(1);

/// The thread's loop: takes space up to what was asked, within the current
/// map (a writer that needs more replaces the map itself), growing the
/// file's length first where the request passes it.
fn take_ahead(shared: &Shared, file: &fs::File) {
    let space = &shared.space;
    // The space no one took yet up to the request, within the map.
    let todo = || {
        let reserved = space.reserved.load(Ordering::Acquire);
        let wanted = shared.wanted.load(Ordering::Acquire).div_ceil(PAGE) * PAGE;
        let target = wanted.min(space.mapped.load(Ordering::Acquire));
        (target > reserved).then_some((reserved, target))
    };
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // Under the length's lock, as a writer takes space: a truncation
        // that punches pages out lowers `reserved` under it, and must not
        // find it raised again over the hole afterwards.
        let mut length = space.length.lock();
        let Some((from, to)) = todo() else {
            drop(length);
            let mut sleep = shared.sleep.lock();
            if !shared.stop.load(Ordering::Acquire) && todo().is_none() {
                shared.wake.wait_for(&mut sleep, NAP);
            }
            continue;
        };
        if to > *length {
            // A sparse extension, within the map: it takes no space yet.
            let grown = space.alloc.next(*length, to).min(space.mapped.load(Ordering::Acquire));
            if let Err(e) = file.set_len(grown) {
                log::debug!("growing the file to {grown} bytes ahead of the writes: {e}");
                shared.wanted.store(from, Ordering::Release);
                continue;
            }
            *length = grown;
        }
        match sys::allocate(file, from, to - from) {
            Ok(()) => space.reserved.store(to, Ordering::Release),
            Err(e) => {
                // A full device, say: the writer takes what it needs itself
                // and reports the error where it can. Asked again once the
                // writes come nearer.
                log::debug!("taking {} bytes ahead of the writes: {e}", to - from);
                shared.wanted.store(from, Ordering::Release);
            }
        }
    }
}
