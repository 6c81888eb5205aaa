//! Batches of reads through io_uring: one submission for a whole batch, so
//! the device gets every request of it at once.
//!
//! Each thread has its own ring, made at its first batch: a ring's queues
//! take one submitter at a time, and a ring per file behind a mutex would
//! hold that mutex across the device's latency, making the threads of a
//! reader wait for each other's reads (the thread scaling asks for
//! the opposite). A ring costs a few pages; a thread that ends frees it.

use std::cell::RefCell;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{opcode, types, IoUring};

use super::batch::{read_full, BatchRead};

/// Entries of a thread's ring: the most reads one submission carries. A
/// larger batch goes in several submissions, one after the other.
const RING_ENTRIES: u32 = 64;

/// The longest read one entry carries (an entry's length is 32 bits); a
/// longer request is read by `pread` on the calling thread.
const MAX_ENTRY_LEN: usize = 1 << 30;

thread_local! {
    /// This thread's ring and the process it was made in: after a fork the
    /// child shares the parent's ring memory, so it must make its own.
    static RING: RefCell<Option<(u32, IoUring)>> = const { RefCell::new(None) };
}

/// Why a batch failed.
pub(crate) enum Failure {
    /// io_uring refused the batch (this thread could not set up a ring, or
    /// the kernel took none of a submission's entries); nothing of it is in
    /// flight, and reading it again another way is safe.
    Refused(io::Error),
    /// The read at this position of the batch failed.
    Read(usize, io::Error),
}

/// Whether io_uring works here: a ring can be set up (seccomp and old kernels
/// refuse it), the kernel knows the read operation (5.6 and later), and a
/// submission completes.
#[expect(unsafe_code, reason = "pushing an io_uring entry")]
pub(crate) fn probe() -> Result<(), String> {
    let mut ring = IoUring::new(2).map_err(|e| format!("io_uring_setup failed: {e}"))?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe).map_err(|e| format!("io_uring probe failed: {e}"))?;
    if !probe.is_supported(opcode::Read::CODE) {
        return Err("the kernel's io_uring has no read operation (Linux 5.6 or later has)".into());
    }
    // SAFETY: a no-op entry refers to no memory.
    unsafe { ring.submission().push(&opcode::Nop::new().build().user_data(7)) }
        .map_err(|_| "io_uring submission queue full".to_string())?;
    ring.submit_and_wait(1).map_err(|e| format!("io_uring_enter failed: {e}"))?;
    let result = ring.completion().next().map(|cqe| cqe.result());
    match result {
        Some(res) if res >= 0 => Ok(()),
        Some(res) => Err(format!("io_uring no-op failed: {}", io::Error::from_raw_os_error(-res))),
        None => Err("io_uring no-op did not complete".into()),
    }
}

/// Reads every request of `reads`, [`RING_ENTRIES`] at a time.
pub(crate) fn read_batch(file: &fs::File, reads: &mut [BatchRead<'_>]) -> Result<(), Failure> {
    RING.with_borrow_mut(|slot| {
        let pid = std::process::id();
        if slot.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            // Forgetting a ring inherited through a fork unmaps this process's
            // view of it; the parent's goes on.
            *slot = Some((pid, IoUring::new(RING_ENTRIES).map_err(Failure::Refused)?));
        }
        let Some((_, ring)) = slot.as_mut() else { unreachable!("set just above") };
        let mut first = 0;
        let mut failed: Option<(usize, io::Error)> = None;
        for chunk in reads.chunks_mut(RING_ENTRIES as usize) {
            let outcome = read_chunk(ring, file, chunk);
            match outcome {
                Ok(Some((i, e))) => {
                    failed.get_or_insert((first + i, e));
                }
                Ok(None) => {}
                Err(e) => {
                    // The ring may hold entries the kernel never took, which
                    // point into this batch's buffers: it goes with them.
                    *slot = None;
                    return Err(Failure::Refused(e));
                }
            }
            if failed.is_some() {
                break;
            }
            first += chunk.len();
        }
        match failed {
            Some((i, e)) => Err(Failure::Read(i, e)),
            None => Ok(()),
        }
    })
}

/// Submits one entry per request of `chunk` (at most the ring's size) and
/// waits for all of them. Answers the first failed request, or an error of
/// io_uring itself that happened before the kernel took any entry.
#[expect(unsafe_code, reason = "io_uring entries point into the caller's buffers")]
fn read_chunk(
    ring: &mut IoUring,
    file: &fs::File,
    chunk: &mut [BatchRead<'_>],
) -> io::Result<Option<(usize, io::Error)>> {
    let fd = types::Fd(file.as_raw_fd());
    let mut failed: Option<(usize, io::Error)> = None;
    let mut note = |i: usize, e: io::Error| {
        if failed.as_ref().is_none_or(|(at, _)| i < *at) {
            failed = Some((i, e));
        }
    };
    let mut queued = 0usize;
    for (i, read) in chunk.iter_mut().enumerate() {
        if read.buf.is_empty() {
            continue;
        }
        if read.buf.len() > MAX_ENTRY_LEN {
            if let Err(e) = read_full(file, read.offset, read.buf) {
                note(i, e);
            }
            continue;
        }
        let entry = opcode::Read::new(fd, read.buf.as_mut_ptr(), read.buf.len() as u32)
            .offset(read.offset)
            .build()
            .user_data(i as u64);
        // SAFETY: the entry points at `read.buf`, borrowed mutably for this
        // whole function, and this function returns only once the kernel
        // has completed every entry it took (the loop below), or, if it took
        // none, after the caller drops the ring with the entries in it, so
        // the kernel never writes into the buffer after it is given back.
        // The descriptor is `file`'s, borrowed for as long.
        unsafe { ring.submission().push(&entry) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        queued += 1;
    }
    let (mut taken, mut done) = (0usize, 0usize);
    while done < queued {
        match ring.submit_and_wait(1) {
            Ok(n) => taken += n,
            // An interrupted wait, or the kernel short of resources while
            // entries are in flight: their completions free them.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if taken > done && matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EBUSY)) => {}
            Err(e) if taken == done => return Err(e),
            Err(e) => {
                // Entries are in flight into the caller's buffers, and the
                // kernel refuses to wait for them: returning would let it
                // write into memory given back. io_uring_enter fails a wait
                // only for the causes handled above, so this is a kernel
                // breaking its contract.
                eprintln!("kuradb: io_uring wait failed with reads in flight: {e}; aborting");
                std::process::abort();
            }
        }
        for cqe in ring.completion() {
            done += 1;
            let i = cqe.user_data() as usize;
            let read = &mut chunk[i];
            let res = cqe.result();
            if res < 0 {
                note(i, io::Error::from_raw_os_error(-res));
                continue;
            }
            let n = res as usize;
            // A short read: the end of the file (zeros after it) or a read
            // the kernel cut, which `pread` finishes.
            if n < read.buf.len() {
                let rest = &mut read.buf[n..];
                if n == 0 {
                    rest.fill(0);
                } else if let Err(e) = read_full(file, read.offset + n as u64, rest) {
                    note(i, e);
                }
            }
        }
    }
    Ok(failed)
}
