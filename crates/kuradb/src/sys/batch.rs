//! Many positional reads of one file at once: through io_uring, through a
//! pool of threads each issuing `pread`, or one after another.
//!
//! Every engine gives the same answer: each buffer filled from its offset up
//! to the end of the file and zeros after it, or the first failed read (by
//! position in the batch) with its error. Whatever fails, no buffer is still
//! being written when a call returns.

use std::fs;
use std::io;
use std::sync::OnceLock;

/// One read of a batch: `buf.len()` bytes at `offset`.
pub(crate) struct BatchRead<'a> {
    pub offset: u64,
    pub buf: &'a mut [u8],
}

/// How a batch reaches the OS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Engine {
    /// One io_uring submission per batch (Linux). With `fallback`, a thread
    /// that cannot set up its ring reads through the thread pool instead of
    /// failing: the engine was chosen by a probe, not by the caller.
    Uring { fallback: bool },
    /// The process's read pool, one `pread` per request in parallel.
    Threads,
    /// One `pread` after another on the calling thread.
    Serial,
}

/// A failed batch: the position of the first failed read and its error.
pub(crate) type BatchError = (usize, io::Error);

/// Reads every request of `reads` as `engine` says.
pub(crate) fn read_batch(
    file: &fs::File,
    reads: &mut [BatchRead<'_>],
    engine: Engine,
) -> Result<(), BatchError> {
    read_batch_with(file, reads, engine, uring_available)
}

/// [`read_batch`], with `probe` answering whether io_uring works (asked only
/// by an automatic choice), so that a test can refuse it.
fn read_batch_with(
    file: &fs::File,
    reads: &mut [BatchRead<'_>],
    engine: Engine,
    probe: impl FnOnce() -> Result<(), String>,
) -> Result<(), BatchError> {
    match engine {
        _ if reads.len() <= 1 => read_serial(file, reads),
        // Probed at the first batch, not when a file opens: a process that
        // never batches never touches io_uring (some sandboxes kill a
        // process for the attempt rather than refuse it).
        Engine::Uring { fallback: true } if probe().inspect_err(|why| log_fallback(why)).is_err() => {
            read_threads(file, reads)
        }
        Engine::Serial => read_serial(file, reads),
        Engine::Threads => read_threads(file, reads),
        Engine::Uring { fallback } => {
            #[cfg(all(target_os = "linux", feature = "io-uring"))]
            match super::uring::read_batch(file, reads) {
                Err(super::uring::Failure::Refused(e)) if fallback => {
                    log_fallback(&e.to_string());
                    read_threads(file, reads)
                }
                Err(super::uring::Failure::Refused(e)) => Err((0, e)),
                Err(super::uring::Failure::Read(i, e)) => Err((i, e)),
                Ok(()) => Ok(()),
            }
            #[cfg(not(all(target_os = "linux", feature = "io-uring")))]
            {
                let _ = fallback;
                read_threads(file, reads)
            }
        }
    }
}

static PROBE: OnceLock<Result<(), String>> = OnceLock::new();

/// Says once per process, at info level, that batched reads asked for
/// io_uring automatically go through the pool of threads, and why.
fn log_fallback(why: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| log::info!("io_uring is refused ({why}): batched reads use a pool of threads"));
}

/// What the probe of io_uring found, if this process has made it.
pub(crate) fn uring_probed() -> Option<Result<(), String>> {
    PROBE.get().cloned()
}

/// Whether io_uring works in this process: `Ok` or why not. Asked once;
/// the answer is kept (a kernel does not change under a running process).
pub(crate) fn uring_available() -> Result<(), String> {
    PROBE
        .get_or_init(|| {
            #[cfg(all(target_os = "linux", feature = "io-uring"))]
            {
                super::uring::probe()
            }
            #[cfg(all(target_os = "linux", not(feature = "io-uring")))]
            {
                Err(crate::error::Error::needs_feature("io_uring", "io-uring").to_string())
            }
            #[cfg(not(target_os = "linux"))]
            {
                Err("io_uring exists on Linux only".to_string())
            }
        })
        .clone()
}

/// Reads `buf.len()` bytes at `offset` until the buffer is full or the file
/// ends, zero-filling the rest.
pub(crate) fn read_full(file: &fs::File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let n = super::read_at(file, buf, offset)?;
    buf[n..].fill(0);
    Ok(())
}

fn read_serial(file: &fs::File, reads: &mut [BatchRead<'_>]) -> Result<(), BatchError> {
    for (i, read) in reads.iter_mut().enumerate() {
        read_full(file, read.offset, read.buf).map_err(|e| (i, e))?;
    }
    Ok(())
}

/// Threads of the read pool: enough for the queue depth at which an SSD
/// gives most of its random-read rate (32 for a typical SSD);
/// they sleep in `pread` nearly all the time, so they cost no CPU.
const POOL_THREADS: usize = 32;

/// The process's read pool and the process it was started in: threads do not
/// survive a fork, so a forked child must not wait for them.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<(u32, rayon::ThreadPool)>> = OnceLock::new();
    let entry = POOL.get_or_init(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(POOL_THREADS)
            .thread_name(|i| format!("kuradb-read-{i}"))
            .build()
            .ok()?;
        Some((std::process::id(), pool))
    });
    entry.as_ref().filter(|(pid, _)| *pid == std::process::id()).map(|(_, pool)| pool)
}

fn read_threads(file: &fs::File, reads: &mut [BatchRead<'_>]) -> Result<(), BatchError> {
    // Without a pool (no threads could be started, or a forked child) the
    // reads still happen, one after another.
    let Some(pool) = pool() else { return read_serial(file, reads) };
    let mut results: Vec<io::Result<()>> = Vec::with_capacity(reads.len());
    results.resize_with(reads.len(), || Ok(()));
    pool.scope(|scope| {
        for (read, result) in reads.iter_mut().zip(results.iter_mut()) {
            scope.spawn(move |_| *result = read_full(file, read.offset, read.buf));
        }
    });
    match results.into_iter().enumerate().find_map(|(i, r)| r.err().map(|e| (i, e))) {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn every_engine_reads_the_same_and_zero_fills_past_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let file =
            fs::File::options().read(true).write(true).create_new(true).open(dir.path().join("f")).unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        file.write_all_at(&data, 0).unwrap();
        let spans = [(0u64, 100usize), (9_990, 20), (20_000, 5), (1, 0), (4096, 4096), (5, 100)];
        let mut engines = vec![Engine::Serial, Engine::Threads];
        if uring_available().is_ok() {
            engines.push(Engine::Uring { fallback: false });
        }
        for engine in engines {
            let mut bufs: Vec<Vec<u8>> = spans.iter().map(|&(_, n)| vec![0xEE; n]).collect();
            let mut reads: Vec<BatchRead<'_>> = spans
                .iter()
                .zip(bufs.iter_mut())
                .map(|(&(offset, _), buf)| BatchRead { offset, buf })
                .collect();
            read_batch(&file, &mut reads, engine).unwrap();
            for (&(offset, n), buf) in spans.iter().zip(&bufs) {
                let expect: Vec<u8> =
                    (offset..offset + n as u64).map(|i| data.get(i as usize).copied().unwrap_or(0)).collect();
                assert_eq!(buf, &expect, "{engine:?} at {offset}");
            }
        }
    }

    #[test]
    fn an_automatic_io_uring_that_is_refused_reads_through_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        let file =
            fs::File::options().read(true).write(true).create_new(true).open(dir.path().join("f")).unwrap();
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
        file.write_all_at(&data, 0).unwrap();
        let refused = || Err("io_uring_setup failed: Operation not permitted (os error 1)".to_string());
        let (mut a, mut b) = ([0u8; 100], [0u8; 100]);
        let mut reads = [BatchRead { offset: 4950, buf: &mut a }, BatchRead { offset: 7, buf: &mut b }];
        read_batch_with(&file, &mut reads, Engine::Uring { fallback: true }, refused).unwrap();
        assert_eq!((&a[..50], &a[50..]), (&data[4950..], &[0u8; 50][..]));
        assert_eq!(&b[..], &data[7..107]);
        // Forced, io_uring is not probed at the batch (the open did it): no fallback.
        let asked = std::cell::Cell::new(false);
        let probe = || {
            asked.set(true);
            Err("refused".to_string())
        };
        let mut reads = [BatchRead { offset: 0, buf: &mut a }, BatchRead { offset: 7, buf: &mut b }];
        let _ = read_batch_with(&file, &mut reads, Engine::Threads, probe);
        assert!(!asked.get());
    }

    #[test]
    fn a_failed_read_names_its_position() {
        let dir = tempfile::tempdir().unwrap();
        // A directory's descriptor refuses reads with EISDIR, whatever the engine.
        let file = fs::File::open(dir.path()).unwrap();
        let mut engines = vec![Engine::Serial, Engine::Threads];
        if uring_available().is_ok() {
            engines.push(Engine::Uring { fallback: false });
        }
        for engine in engines {
            let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
            let mut reads = [BatchRead { offset: 0, buf: &mut a }, BatchRead { offset: 8, buf: &mut b }];
            let (at, err) = read_batch(&file, &mut reads, engine).unwrap_err();
            assert_eq!((at, err.raw_os_error()), (0, Some(libc::EISDIR)), "{engine:?}");
        }
    }
}
