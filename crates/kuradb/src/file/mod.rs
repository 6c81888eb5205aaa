//! The file layer: random access to one file, by several threads at once.
//!
//! Every database stores its data through a [`File`], chosen at run time: memory
//! mapping or positional (`pread`/`pwrite`) system calls, each in a *parallel*
//! variant (no whole-file lock; callers coordinate by region) and an *atomic*
//! one (a whole-file reader-writer lock makes every write atomic against every
//! read). The positional file takes the options that change how bytes reach the
//! device: block I/O, direct I/O, synchronous I/O, a page cache and a head
//! buffer. [`FileSpec`] names an implementation with its options, in the one
//! syntax the CLI, the Python binding and parameter strings share.
//!
//! ```
//! use kuradb::file::{File, FileSpec, OpenOptions};
//! # fn main() -> kuradb::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let spec = FileSpec::parse("pos-para,block_size=512,access=pagecache")?;
//! let mut file = spec.open(dir.path().join("casket.dat"), &OpenOptions::writer())?;
//! let off = file.append(b"hello")?;
//! file.write(off + 5, b", world")?;
//! let mut buf = [0u8; 12];
//! file.read(0, &mut buf)?;
//! assert_eq!(&buf, b"hello, world");
//! file.close()?;
//! # Ok(())
//! # }
//! ```

mod access;
mod alloc;
mod block;
mod fault;
mod head_buffer;
mod io_engine;
mod mmap;
mod owner;
mod page_cache;
mod positional;
mod request;
mod spec;
mod tail_fill;
mod wrapper;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};

pub(crate) use access::lock_since;
pub use access::with_lock_interrupt;
pub use fault::{FaultControl, FaultFile, FaultKind};
pub use io_engine::{IoEngine, IO_ENGINE_VAR};
pub use mmap::MmapFile;
pub(crate) use owner::{FileKey, Owner};
pub use page_cache::PageCacheStats;
pub use positional::PositionalFile;
pub use request::ReadRequest;
pub(crate) use spec::parse_percent;
pub use spec::{
    default_page_cache_capacity, FileKind, FileSpec, DEFAULT_PAGE_CACHE_BYTES, DEFAULT_PAGE_CACHE_READ_AHEAD,
};
pub(crate) use wrapper::open_wrapped;
pub use wrapper::{FileWrapper, WrapFn};

/// How far a synchronization or a copy carries the data before it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Handed to the operating system: it survives the process crashing, not
    /// the machine.
    Soft,
    /// Synchronized to the device: it survives the machine losing power.
    Hard,
}

impl Durability {
    /// The durability a reference-shaped flag names: `true` is hard.
    #[inline(always)]
    pub(crate) const fn from_hard(hard: bool) -> Durability {
        if hard {
            Durability::Hard
        } else {
            Durability::Soft
        }
    }

    /// Whether the device must hold the data.
    #[inline(always)]
    pub const fn is_hard(self) -> bool {
        matches!(self, Durability::Hard)
    }
}

/// A temporary file beside `path` (`NAME.WHAT-tmp`), for a file that will
/// replace it by rename: on the same filesystem, so the rename is atomic.
pub(crate) fn temp_beside(path: &Path, what: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{what}-tmp"));
    path.with_file_name(name)
}

/// Random access to one open file, shared by any number of threads.
///
/// # Contract
/// - The *logical size* ([`File::size`]) is the number of bytes the file holds.
///   The implementation may reserve more space on disk (the allocation strategy);
///   closing truncates the file to its logical size, so a reopen sees exactly the
///   logical size it had. After a crash the file may be longer than its last
///   logical size, the excess holding zeros.
/// - [`File::read`] fills the whole buffer or fails: reading any byte at or past
///   the logical size, or even nothing at an offset past it, is an
///   [`ErrorKind::Infeasible`](crate::ErrorKind) error and reads nothing.
/// - [`File::write`] ending past the logical size (even an empty write at an
///   offset past it) extends the size to its end; the gap, and every region
///   added by [`File::expand`] or by [`File::truncate`] to a larger size, reads as
///   zeros.
/// - [`File::append`] reserves its region atomically: concurrent appends never
///   overlap, whatever the implementation.
/// - Every method may run concurrently with every other except [`File::close`]
///   (which takes `&mut self`) and [`File::truncate`] to a smaller size, which
///   the caller must not race with accesses to the region it cuts. On a
///   *parallel* file, concurrent accesses to overlapping bytes give unspecified
///   bytes (never memory unsafety); on an *atomic* file every write is atomic
///   against every read.
/// - [`File::synchronize`] with [`Durability::Soft`] hands every buffered byte (page
///   cache, head buffer) to the operating system, so another process reading the
///   file sees it; with `hard == true` it also waits until the device holds it
///   (`fdatasync`/`msync`), so it survives a power cut. After a failed hard
///   synchronization the handle refuses further writes until reopened, because
///   what the device holds is then unknown.
/// - Writes on a file opened read-only fail with
///   [`ErrorKind::Infeasible`](crate::ErrorKind).
pub trait File: Send + Sync {
    /// Reads `buf.len()` bytes at `offset`.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// Reads every request of `reads`, each as [`File::read`] would: the
    /// whole buffer or an error, a byte at or past the logical size being an
    /// [`ErrorKind::Infeasible`](crate::ErrorKind) error naming the offset.
    /// Requests may overlap and come in any order; an empty batch does
    /// nothing. The call fails, with the error of the first failed request
    /// in the batch's order, if any request fails; the buffers' content is
    /// then unspecified.
    ///
    /// The positional file hands the requests to the device together
    /// (io_uring, or a pool of threads; see [`IoEngine`]), so a batch costs
    /// about one device latency instead of one per request. On an atomic
    /// file no write lands between the batch's requests. The default reads
    /// them one after another.
    fn read_many(&self, reads: &mut [ReadRequest<'_>]) -> Result<()> {
        for read in reads.iter_mut() {
            self.read(read.offset, read.buf)?;
        }
        Ok(())
    }

    /// A hint that the `len` bytes at `offset` will be read soon; answers
    /// whether the file took it. A file read from memory (the memory-mapped
    /// one) asks the CPU to start loading the bytes into its cache, so that
    /// lookups of several keys overlap their cache misses instead of paying
    /// them one after another; it answers true. The others, whose reads go
    /// to the OS, do nothing and answer false (the default), so a caller
    /// knows not to spend more work on hints. Bytes past the logical size
    /// are ignored; nothing is read, and nothing can fail.
    fn prefetch(&self, offset: u64, len: usize) -> bool {
        let _ = (offset, len);
        false
    }

    /// Writes `data` at `offset`, extending the logical size if it ends past it.
    fn write(&self, offset: u64, data: &[u8]) -> Result<()>;

    /// Writes `data` at the end of the file and returns the offset it went to.
    fn append(&self, data: &[u8]) -> Result<u64>;

    /// Grows the logical size by `increment` zero bytes and returns the old size.
    fn expand(&self, increment: u64) -> Result<u64>;

    /// Sets the logical size, cutting the file or extending it with zeros.
    fn truncate(&self, size: u64) -> Result<()>;

    /// The logical size in bytes.
    fn size(&self) -> u64;

    /// Hands buffered data to the OS and, with `hard`, makes the device hold it.
    fn synchronize(&self, durability: Durability) -> Result<()>;

    /// A hint, before a hard [`File::synchronize`] of much written data that
    /// this process will mostly not touch meanwhile (a copy of a database
    /// about to take the original's place): the memory-mapped file drops
    /// its page-table entries of the map, keeping every byte in the OS's page
    /// cache, so that writing the pages back does not have to make each one
    /// read-only in the view of every processor running the process, which
    /// costs an interrupt of each per page. Later accesses map the pages
    /// again, a minor fault each. The others hold no map and do nothing (the
    /// default). Nothing is lost whatever it answers; an error only means
    /// the entries stayed.
    fn unmap_pages(&self) -> Result<()> {
        Ok(())
    }

    /// A hint, before a hard [`File::synchronize`] of much written data
    /// while other work goes on beside it (a copy of a database about to
    /// take the original's place): writes the changed data to the device
    /// a few MiB at a time, waiting for each, so that the device's queue
    /// never holds more than a step of it, and another file's reads (the
    /// file system's own, when a writer beside takes space) wait behind one
    /// step rather than the whole file. The synchronization after it then
    /// has little left to write. Files that keep nothing in the OS's page
    /// cache do nothing (the default). Nothing is made durable by it.
    fn write_back(&self) -> Result<()> {
        Ok(())
    }

    /// A hint that writes from `from` to `end` will come soon, from a
    /// caller that holds locks of its own while it makes them (appends, or
    /// a table just made): the memory-mapped file takes the device space up
    /// to `end` now and brings those pages into the page cache (zeroing the
    /// ones never written), in the calling thread, so that the writes find
    /// both ready instead of waiting for them under the caller's locks. The
    /// others do nothing (the default). An error (a full device) is the one
    /// the writes would meet; nothing is written either way.
    fn prepare_writes(&self, from: u64, end: u64) -> Result<()> {
        let _ = (from, end);
        Ok(())
    }

    /// Takes the inter-process advisory lock of the file in `mode`, waiting for
    /// other processes' conflicting locks. Opening already takes the lock the
    /// [`OpenOptions`] ask for; this changes it.
    fn lock(&self, mode: LockMode) -> Result<()>;

    /// Like [`File::lock`], but failing at once with
    /// [`ErrorKind::WouldBlock`](crate::ErrorKind) where it would wait.
    fn try_lock(&self, mode: LockMode) -> Result<()>;

    /// Releases the inter-process lock.
    fn unlock(&self) -> Result<()>;

    /// The path the file was opened with, or last renamed to.
    fn path(&self) -> &Path;

    /// Gives the open file the name `to`, atomically replacing whatever file
    /// had it, and keeps it open with its lock; from then on [`File::path`]
    /// is `to`. A database puts a rebuilt file in place this way, so that the
    /// file at its path is locked at every moment. The new name reaches the
    /// device only once its directory is synchronized.
    fn rename(&mut self, to: &Path) -> Result<()>;

    /// Whether the file was opened for writing.
    fn is_writable(&self) -> bool;

    /// Whether every write is atomic against every read (the atomic variants).
    fn is_atomic(&self) -> bool;

    /// The unit of the file's system calls: 1, or the block size of block I/O.
    /// A database that wants direct I/O to reach its file's end pads the file to
    /// a multiple of it.
    fn block_size(&self) -> u64;

    /// Name/value pairs describing the file's state (class, sizes, cache counters).
    fn inspect(&self) -> Vec<(String, String)>;

    /// Writes back every buffer, truncates the file to its logical size, releases
    /// the lock and closes it. Every later call fails with
    /// [`ErrorKind::Infeasible`](crate::ErrorKind). Dropping an open file closes
    /// it too, but cannot report an error.
    fn close(&mut self) -> Result<()>;
}

/// The kind of an inter-process lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockMode {
    /// Many processes may hold it together: readers.
    Shared,
    /// Held by one process, excluding every other lock: a writer.
    Exclusive,
}

/// How to open a file: for writing or reading, creation, and locking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for writing (and take an exclusive lock) rather than reading (shared).
    pub writable: bool,
    /// Create the file if it does not exist (writers only).
    pub create: bool,
    /// Empty an existing file on open (writers only).
    pub truncate: bool,
    /// What to do while another process holds a conflicting lock: fail at
    /// once (the default), wait a while, or wait as long as it takes.
    pub lock_wait: LockWait,
    /// Take no inter-process lock at all. Such a handle is not entered in the
    /// process's table of open files either: its caller coordinates access.
    pub no_lock: bool,
}

/// What an open does while another process holds a conflicting lock on the
/// file (a writer excludes every other process; readers share).
///
/// The default fails at once: a program that meets another's lock is told
/// so, with the holder's process id where the platform lists it, rather than
/// hanging without a word. A program that expects to take turns with
/// another asks to wait.
///
/// ```
/// use std::time::Duration;
/// use kuradb::file::{LockWait, OpenOptions};
///
/// assert_eq!(OpenOptions::writer().lock_wait, LockWait::Fail);
/// let patient = OpenOptions::reader().with_lock_timeout(Duration::from_secs(5));
/// assert_eq!(patient.lock_wait, LockWait::Timeout(Duration::from_secs(5)));
/// assert_eq!(OpenOptions::reader().waiting().lock_wait, LockWait::Forever);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockWait {
    /// Fail at once with an [`ErrorKind::WouldBlock`](crate::ErrorKind) error
    /// that names the holder.
    #[default]
    Fail,
    /// Wait at most this long, then fail with a "locked" error.
    Timeout(Duration),
    /// Wait as long as it takes (an interrupt, Ctrl-C, ends the wait).
    Forever,
}

impl LockWait {
    /// The wait that the open parameters ask for: `lock_timeout` seconds
    /// waits at most that long; `wait` true, or `no_wait` false (the
    /// reference's spelling) with `wait` not false, as long as it takes;
    /// anything else fails at once. `no_wait` true beside `wait` true or a
    /// `lock_timeout` contradicts itself and is refused. Every front end that
    /// reads the parameters (`Params`, the bindings' file objects) calls
    /// this, so they all read them alike.
    pub fn from_choices(
        no_wait: Option<bool>,
        wait: Option<bool>,
        lock_timeout: Option<f64>,
    ) -> Result<LockWait> {
        if no_wait == Some(true) && (wait == Some(true) || lock_timeout.is_some()) {
            let other = if lock_timeout.is_some() { "lock_timeout" } else { "wait=true" };
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("parameters no_wait=true and {other} contradict each other: give one"),
            ));
        }
        if let Some(seconds) = lock_timeout {
            return Duration::try_from_secs_f64(seconds).map(LockWait::Timeout).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("parameter lock_timeout must be a number of seconds from 0 up, not {seconds}"),
                )
            });
        }
        Ok(match (wait, no_wait) {
            (Some(true), _) | (None, Some(false)) => LockWait::Forever,
            _ => LockWait::Fail,
        })
    }
}

/// How a "locked" error tells its reader to wait instead, in the parameters
/// every front end takes; a front end that spells them otherwise (the CLI's
/// `--wait`) replaces this text with its own spelling.
pub const LOCK_WAIT_HINT: &str =
    "open it with wait=true to wait for it, or lock_timeout=SECONDS to wait at most that long";

impl OpenOptions {
    /// Read and write, creating the file if missing, keeping its content.
    pub fn writer() -> OpenOptions {
        OpenOptions {
            writable: true,
            create: true,
            truncate: false,
            lock_wait: LockWait::Fail,
            no_lock: false,
        }
    }

    /// Read only; the file must exist.
    pub fn reader() -> OpenOptions {
        OpenOptions {
            writable: false,
            create: false,
            truncate: false,
            lock_wait: LockWait::Fail,
            no_lock: false,
        }
    }

    /// The same options, emptying the file on open.
    pub fn truncating(mut self) -> OpenOptions {
        self.truncate = true;
        self
    }

    /// The same options, failing at once on a conflicting lock (the default).
    pub fn without_waiting(mut self) -> OpenOptions {
        self.lock_wait = LockWait::Fail;
        self
    }

    /// The same options, waiting as long as it takes for a conflicting lock.
    pub fn waiting(mut self) -> OpenOptions {
        self.lock_wait = LockWait::Forever;
        self
    }

    /// The same options, taking no inter-process lock.
    pub fn without_lock(mut self) -> OpenOptions {
        self.no_lock = true;
        self
    }

    /// The same options, waiting at most `timeout` for a conflicting lock.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> OpenOptions {
        self.lock_wait = LockWait::Timeout(timeout);
        self
    }
}

#[cfg(test)]
mod lock_wait_tests {
    use super::*;

    #[test]
    fn the_parameters_choose_the_wait_and_contradictions_are_refused() {
        let choose = |no_wait, wait, timeout| LockWait::from_choices(no_wait, wait, timeout);
        assert_eq!(choose(None, None, None).unwrap(), LockWait::Fail);
        assert_eq!(choose(Some(true), None, None).unwrap(), LockWait::Fail);
        assert_eq!(choose(Some(false), None, None).unwrap(), LockWait::Forever);
        assert_eq!(choose(None, Some(true), None).unwrap(), LockWait::Forever);
        // An explicit wait=false wins over the reference's no_wait=false.
        assert_eq!(choose(Some(false), Some(false), None).unwrap(), LockWait::Fail);
        assert_eq!(
            choose(Some(false), None, Some(0.5)).unwrap(),
            LockWait::Timeout(Duration::from_millis(500))
        );
        assert!(choose(Some(true), Some(true), None).is_err());
        assert!(choose(Some(true), None, Some(1.0)).is_err());
        assert!(choose(None, None, Some(-1.0)).is_err());
    }
}

#[cfg(all(test, target_os = "linux"))]
mod write_back_tests {
    use super::*;
    use crate::sys;

    #[test]
    fn write_back_leaves_no_page_changed_and_every_byte_as_written() {
        let data: Vec<u8> = (0..40u32 << 20).map(|i| (i % 251) as u8).collect();
        for kind in FileKind::ALL {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            let mut file = FileSpec::new(kind).open(&path, &OpenOptions::writer()).unwrap();
            // Steps of the write-back and a partial one after them.
            for chunk in data.chunks(1 << 20) {
                file.append(chunk).unwrap();
            }
            let reader = std::fs::File::open(&path).unwrap();
            let Some(before) = sys::dirty_pages(&reader).unwrap() else {
                eprintln!("skipped: no count of changed pages here (a kernel before 6.5, or tmpfs)");
                return;
            };
            if before == 0 {
                // A system that writes back at once (a low dirty_bytes) leaves
                // nothing to see here.
                eprintln!("skipped: {kind:?}'s pages were written back before the call");
                continue;
            }
            file.write_back().unwrap();
            assert_eq!(sys::dirty_pages(&reader).unwrap(), Some(0), "{kind:?}: pages left changed");
            let mut back = vec![0u8; data.len()];
            file.read(0, &mut back).unwrap();
            assert!(back == data, "{kind:?}: the bytes changed");
            assert_eq!(file.size(), data.len() as u64);
            file.close().unwrap();
        }
    }

    #[test]
    fn write_back_of_a_reader_or_a_closed_file_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for kind in FileKind::ALL {
            let spec = FileSpec::new(kind);
            let mut file = spec.open(&path, &OpenOptions::writer()).unwrap();
            file.append(b"kept").unwrap();
            file.close().unwrap();
            assert!(file.write_back().is_err(), "{kind:?}: a write-back of a closed file");
            let reader = spec.open(&path, &OpenOptions::reader()).unwrap();
            reader.write_back().unwrap();
            let mut buf = [0u8; 4];
            reader.read(0, &mut buf).unwrap();
            assert_eq!(&buf, b"kept");
        }
    }
}
