//! Batches of reads through io_uring: a whole batch in flight at once (handed
//! to the kernel in groups, see [`SUBMIT_GROUP`]), so the device gets every
//! request of it together.
//!
//! Each thread has its own ring, made at its first batch: a ring's queues
//! take one submitter at a time, and a ring per file behind a mutex would
//! hold that mutex across the device's latency, making the threads of a
//! reader wait for each other's reads, where threads are meant to keep more
//! reads in flight. A ring costs a few pages; a thread that ends frees it.

use std::cell::RefCell;
use std::fs;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{opcode, types, IoUring};

use super::batch::{read_full, BatchRead};

/// Entries of a thread's ring: the most reads one submission carries. A
/// larger batch goes in several submissions, one after the other.
const RING_ENTRIES: u32 = 64;

/// Entries handed to the kernel by one `io_uring_enter` while a batch is
/// still being queued. The kernel prepares a submission's reads one by one
/// (the file system's mapping, the block layer) and sends them to the device
/// together when it has prepared the last; in a virtual machine that takes
/// about as long as the device then needs. Sent in groups, the device works
/// on the first group while the kernel prepares the next.
const SUBMIT_GROUP: usize = 8;

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

/// A ring for this thread. Where the kernel allows (6.1 and later), the
/// completions' work is deferred to this thread's wait: the kernel then wakes
/// it once, when the batch's last read completes, not once per completion
/// (each a switch into the thread and out again, a good part of a batch's
/// cost in a virtual machine). The ring is this thread's alone, as that asks.
fn new_ring() -> io::Result<IoUring> {
    let deferred = IoUring::builder().setup_single_issuer().setup_defer_taskrun().build(RING_ENTRIES);
    deferred.or_else(|_| IoUring::new(RING_ENTRIES))
}

/// Reads every request of `reads`, [`RING_ENTRIES`] at a time.
pub(crate) fn read_batch(file: &fs::File, reads: &mut [BatchRead<'_>]) -> Result<(), Failure> {
    RING.with_borrow_mut(|slot| {
        let pid = std::process::id();
        if slot.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            // Forgetting a ring inherited through a fork unmaps this process's
            // view of it; the parent's goes on.
            *slot = Some((pid, new_ring().map_err(Failure::Refused)?));
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
    let (mut queued, mut taken) = (0usize, 0usize);
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
        if queued % SUBMIT_GROUP == 0 {
            match ring.submit() {
                Ok(n) => taken += n,
                // Nothing in flight: the caller drops the ring with the
                // entries, as when the wait below fails first.
                Err(e) if taken == 0 => return Err(e),
                // What the kernel did not take stays queued: the wait below
                // submits it, or meets the error again and handles it there.
                Err(_) => {}
            }
        }
    }
    let mut done = 0usize;
    while done < queued {
        // Every entry the kernel has not taken is submitted first; it waits
        // only once all are, so this waits for no read that is not in flight.
        match ring.submit_and_wait(queued - done) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// Batches of every size around the submission groups and the ring's
    /// size, with empty requests and requests past the end among them: each
    /// reads what `pread` reads, and the wait for a whole batch returns
    /// (a wait for more reads than are in flight would never return).
    #[test]
    fn batches_across_submission_groups_read_what_pread_reads() {
        if crate::sys::batch::uring_available().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file =
            fs::File::options().read(true).write(true).create_new(true).open(dir.path().join("f")).unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 241) as u8).collect();
        file.write_all_at(&data, 0).unwrap();
        let group = SUBMIT_GROUP;
        let ring = RING_ENTRIES as usize;
        for n in
            [1, group - 1, group, group + 1, 2 * group, 3 * group + 1, ring - 1, ring, ring + 1, 2 * ring + 5]
        {
            let spans: Vec<(u64, usize)> = (0..n as u64)
                .map(|i| match i % 7 {
                    3 => (i * 1000, 0),
                    5 => (299_990 + i, 50),
                    _ => ((i * 104_729) % 290_000, 1 + (i as usize * 37) % 5000),
                })
                .collect();
            let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, len)| vec![0xEE; len]).collect();
            let mut reads: Vec<BatchRead<'_>> = spans
                .iter()
                .zip(bufs.iter_mut())
                .map(|(&(offset, _), buf)| BatchRead { offset, buf })
                .collect();
            assert!(read_batch(&file, &mut reads).is_ok(), "a batch of {n}");
            for (&(offset, len), buf) in spans.iter().zip(&bufs) {
                let expect: Vec<u8> = (offset..offset + len as u64)
                    .map(|i| data.get(i as usize).copied().unwrap_or(0))
                    .collect();
                assert_eq!(buf, &expect, "a batch of {n}, at {offset}");
            }
        }
    }

    /// A batch whose every read fails, in several groups, answers the first
    /// and returns (every read in flight waited for), and the ring serves the
    /// next batch.
    #[test]
    fn failures_in_every_group_name_the_first_and_leave_the_ring_usable() {
        if crate::sys::batch::uring_available().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // A directory's descriptor refuses reads with EISDIR.
        let bad = fs::File::open(dir.path()).unwrap();
        let mut bufs = vec![[0u8; 16]; 3 * SUBMIT_GROUP + 2];
        let mut reads: Vec<BatchRead<'_>> =
            bufs.iter_mut().enumerate().map(|(i, buf)| BatchRead { offset: i as u64 * 16, buf }).collect();
        match read_batch(&bad, &mut reads) {
            Err(Failure::Read(at, e)) => assert_eq!((at, e.raw_os_error()), (0, Some(libc::EISDIR))),
            Err(Failure::Refused(e)) => panic!("refused: {e}"),
            Ok(()) => panic!("a directory was read"),
        }
        let good =
            fs::File::options().read(true).write(true).create_new(true).open(dir.path().join("f")).unwrap();
        good.write_all_at(&[7u8; 64], 0).unwrap();
        let mut buf = [0u8; 64];
        let mut again = [BatchRead { offset: 0, buf: &mut buf[..32] }];
        assert!(read_batch(&good, &mut again).is_ok());
        assert_eq!(buf[..32], [7u8; 32]);
    }
}
