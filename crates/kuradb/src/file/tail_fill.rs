//! Bringing a growing memory-mapped file's next pages into the page cache
//! from a thread of the file's own, ahead of the writes that land there.
//!
//! The first touch of a page past what the system has cached is a fault
//! that reads the page in, and around it a whole read-ahead window: for a
//! page the file reserved but never wrote, the system zeroes the window. A
//! writer appending at the end meets one such fault per window, and with a
//! large window (a device setting) that one write waits for all of it: the
//! stalls of bench/results/2026-12-05-tail-fill.md. A filler thread reads
//! the file a little ahead of the end, in order, so that the system's
//! read-ahead of its reads takes that work, in the same large pieces, and
//! the writer finds the pages cached. It reads with `pread`, not through
//! the map, so the pages it brings in are not in the process's resident
//! set until the writer touches them.
//!
//! The filler is a hint: a writer that outruns it takes the fault itself,
//! as without it, and nothing it does changes a byte of the file.

use std::fs;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::sys::ProcessStamp;

/// How far past the end the filler keeps the pages cached; more than a
/// common read-ahead window, so that a window the writer reaches is whole.
const AHEAD: u64 = 16 << 20;

/// The filler is woken again once the end comes this close to what it was
/// last asked to fill: a wake-up for every few megabytes of appends.
const WAKE_WITHIN: u64 = AHEAD / 2;

/// The size of one read: reads in order let the system's read-ahead grow
/// to its whole window whatever their size, and a small buffer on the
/// thread's stack costs the process no memory of the heap's.
pub(super) const STEP: usize = 16 << 10;

/// A file smaller than this gets no filler: its windows are few and small.
pub(super) const MIN_SIZE: u64 = 8 << 20;

/// What the writer and the filler share. The writer never waits for the
/// filler: it runs in the idle class, and may be put off for long.
struct Shared {
    /// Fill below this offset (the end plus [`AHEAD`] when last asked).
    until: AtomicU64,
    /// Below this, the file has space: never read at or past it.
    limit: AtomicU64,
    /// Where a truncation cut the file, for the filler to fill from again;
    /// `u64::MAX` if none since it last looked.
    cut: AtomicU64,
    stop: AtomicBool,
    /// Held by the filler only to sleep, and by [`TailFill::stop`].
    sleep: Mutex<()>,
    wake: Condvar,
}

/// The filler of one file: its thread, and the request it serves.
pub(super) struct TailFill {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process that started the thread: a forked child has none to stop.
    process: ProcessStamp,
}

impl TailFill {
    /// Starts a filler reading `file` (a descriptor of its own) from
    /// `from`; `None` if the system has no thread to give.
    pub(super) fn start(file: fs::File, from: u64, limit: u64) -> Option<TailFill> {
        let shared = Arc::new(Shared {
            until: AtomicU64::new(from),
            limit: AtomicU64::new(limit),
            cut: AtomicU64::new(u64::MAX),
            stop: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("kuradb-fill".into())
            // It calls nothing deep: a small stack spares address space.
            .stack_size(64 << 10)
            .spawn(move || fill(&theirs, &file, from))
            .ok()?;
        Some(TailFill { shared, thread: Some(thread), process: ProcessStamp::now() })
    }

    /// Notes that the file's logical end is `end` and that it has space
    /// below `limit`; wakes the filler when the end nears what it was
    /// asked to fill.
    pub(super) fn note(&self, end: u64, limit: u64) {
        let shared = &self.shared;
        // Stored only when it moved: many threads append at once, and a
        // line they all write would bounce between their processors.
        if shared.limit.load(Ordering::Relaxed) != limit {
            shared.limit.store(limit, Ordering::Release);
        }
        if end.saturating_add(WAKE_WITHIN) > shared.until.load(Ordering::Acquire) {
            shared.until.fetch_max(end.saturating_add(AHEAD), Ordering::AcqRel);
            // Without the sleep lock, which the filler may hold while put
            // off: a wake-up lost between its check and its sleep costs only
            // the time until it wakes by itself.
            shared.wake.notify_one();
        }
    }

    /// Notes that the file was cut to `size`: its pages past that are gone
    /// from the cache, and the writes will come there again.
    pub(super) fn cut(&self, size: u64) {
        self.shared.cut.fetch_min(size, Ordering::AcqRel);
        self.shared.until.store(size, Ordering::Release);
    }

    /// Stops the filler and waits for its thread, and with it its
    /// descriptor of the file, to end.
    pub(super) fn stop(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        if !self.process.is_current() {
            // A forked child: the thread is the parent's, and this copy of
            // its handle names nothing here.
            std::mem::forget(thread);
            return;
        }
        self.shared.stop.store(true, Ordering::Release);
        // Under the lock, so that the filler is either before its check of
        // `stop` or asleep, and this wakes it.
        drop(self.shared.sleep.lock());
        self.shared.wake.notify_one();
        let _ = thread.join();
    }
}

impl Drop for TailFill {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How long the filler sleeps at most when no one wakes it: long enough to
/// cost an idle file nothing, short enough that a wake-up it missed costs
/// only a window or two of faults to the writer.
const NAP: Duration = Duration::from_secs(1);

/// The filler's loop: reads [`STEP`] bytes at a time from where it stopped
/// up to what it was asked to fill, never at or past the limit.
fn fill(shared: &Shared, file: &fs::File, mut done: u64) {
    // Its reads are work the writer would do itself: worth doing only on
    // a processor that would otherwise be idle.
    crate::sys::run_only_when_idle();
    let wanted = || shared.until.load(Ordering::Acquire).min(shared.limit.load(Ordering::Acquire));
    let mut buf = [0u8; STEP];
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        done = done.min(shared.cut.swap(u64::MAX, Ordering::AcqRel));
        let end = wanted();
        if end <= done {
            let mut sleep = shared.sleep.lock();
            if !shared.stop.load(Ordering::Acquire) && wanted() <= done {
                shared.wake.wait_for(&mut sleep, NAP);
            }
            continue;
        }
        done = bring_in(file, done, end, &mut buf, || shared.stop.load(Ordering::Acquire));
    }
}

/// Reads `file` from `from` up to `end` in order, [`STEP`] bytes at a time
/// into `buf`, so that the pages come into the page cache with the system's
/// read-ahead; stops early once `stop` answers true. Answers how far it
/// came: `end` also after an error or the file's end, past which a writer
/// will fault in what is left itself.
pub(super) fn bring_in(
    file: &fs::File,
    from: u64,
    end: u64,
    buf: &mut [u8; STEP],
    stop: impl Fn() -> bool,
) -> u64 {
    let mut done = from;
    while done < end && !stop() {
        let len = STEP.min((end - done) as usize);
        match file.read_at(&mut buf[..len], done) {
            Ok(n) if n > 0 => done += n as u64,
            _ => return end,
        }
    }
    done
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::sys;
    use std::time::Instant;

    const MIB: u64 = 1 << 20;

    /// A file of `len` bytes with space taken and no page of it cached, and
    /// a descriptor of it for the filler.
    fn fresh(len: u64) -> (tempfile::TempDir, std::fs::File, std::fs::File) {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("f"))
            .unwrap();
        file.set_len(len).unwrap();
        sys::allocate(&file, 0, len).unwrap();
        let theirs = file.try_clone().unwrap();
        (dir, file, theirs)
    }

    /// Whether every page of `len` bytes at `offset` is cached, waiting up
    /// to a few seconds for it.
    fn comes_in(file: &std::fs::File, offset: u64, len: u64) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if sys::resident_pages(file, offset, len as usize).unwrap().iter().all(|&r| r) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    fn cached(file: &std::fs::File, offset: u64, len: u64) -> usize {
        sys::resident_pages(file, offset, len as usize).unwrap().iter().filter(|&&r| r).count()
    }

    #[test]
    fn pages_ahead_of_the_end_come_into_the_cache() {
        let (_dir, file, theirs) = fresh(64 * MIB);
        let mut fill = TailFill::start(theirs, 0, 64 * MIB).unwrap();
        assert_eq!(cached(&file, 0, 64 * MIB), 0, "nothing touched the file yet");
        fill.note(MIB, 64 * MIB);
        assert!(comes_in(&file, 0, MIB + AHEAD), "the filler did not bring the pages ahead in");
        // It fills what it was asked, not the whole file: the system's
        // read-ahead of its last read reaches a window past.
        fill.stop();
        assert!(cached(&file, 48 * MIB, 16 * MIB) < 4096, "{} pages", cached(&file, 48 * MIB, 16 * MIB));
    }

    #[test]
    fn after_a_cut_it_fills_from_the_cut_again() {
        let (_dir, file, theirs) = fresh(64 * MIB);
        let fill = TailFill::start(theirs, 0, 64 * MIB).unwrap();
        fill.note(MIB, 64 * MIB);
        assert!(comes_in(&file, 0, 8 * MIB));
        // A punched hole's pages leave the cache. The system's read-ahead
        // can bring the pages in before the filler's own reads reach them,
        // and a read still below the hole's end brings its page back: punch
        // again until the filler is past.
        let start = Instant::now();
        loop {
            sys::punch_hole(&file, 0, 64 * MIB).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            if cached(&file, 0, 8 * MIB) == 0 {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "the punched pages stay cached");
        }
        fill.cut(0);
        fill.note(MIB, 64 * MIB);
        assert!(comes_in(&file, 0, 8 * MIB), "the filler did not fill the cut part again");
    }
}
