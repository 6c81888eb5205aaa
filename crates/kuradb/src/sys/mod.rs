//! Platform code: opening files with special flags, positional I/O, advisory
//! locks and memory maps. Everything here speaks `std::io`; the file layer
//! turns its errors into kuradb errors that name the file and operation.

mod batch;
mod lock_holder;
#[cfg(feature = "lz4")]
pub(crate) mod lz4;
#[cfg(feature = "lzma")]
pub(crate) mod lzma;
mod mmap;
mod process;
#[cfg(all(target_os = "linux", feature = "io-uring"))]
mod uring;
#[cfg(feature = "zstd")]
pub(crate) mod zdict;

use std::fs;
use std::io;
use std::path::Path;

pub(crate) use batch::{read_batch, uring_available, uring_probed, BatchRead, Engine};
pub(crate) use lock_holder::{lock_holder, LockHolder};
pub(crate) use mmap::{MapChain, Mapping, SYNC_DATA_COVERS_MAPS};
pub(crate) use process::{file_identity, path_identity, ProcessStamp};

/// The CPU's cache line, the unit [`prefetch`] loads.
pub(crate) const CACHE_LINE: usize = 64;

/// Asks the CPU to start loading the cache line holding `address`, so that
/// a read of it soon after finds it cached. A hint: it reads nothing the
/// program sees, and an address that is not mapped is ignored by the CPU
/// (a prefetch never faults), so any address may be given. A no-op where
/// the architecture's hint is not available to stable Rust.
#[inline]
#[cfg_attr(target_arch = "x86_64", expect(unsafe_code, reason = "the x86 prefetch instruction"))]
pub(crate) fn prefetch(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 accesses no memory in the program's sense and never
    // faults, whatever the address (the CPU drops a prefetch it cannot
    // serve); SSE, which it needs, is part of every x86_64 CPU.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Asks the CPU to start loading every cache line that holds one of the
/// `len` bytes at `start` (see [`prefetch`]): a hint, which reads nothing.
pub(crate) fn prefetch_lines(start: *const u8, len: usize) {
    let skew = start as usize % CACHE_LINE;
    // wrapping: the addresses are only hints, never dereferenced.
    let first = start.wrapping_sub(skew);
    for at in (0..skew + len).step_by(CACHE_LINE) {
        prefetch(first.wrapping_add(at));
    }
}

/// How the file layer wants a file opened.
pub(crate) struct OpenFlags {
    pub writable: bool,
    pub create: bool,
    pub direct: bool,
    pub sync: bool,
}

/// Opens `path`; with `direct`, bypassing the OS page cache where the platform
/// can. Where it cannot, or the filesystem refuses, the error has kind
/// `Unsupported`.
#[cfg_attr(target_os = "macos", expect(unsafe_code, reason = "fcntl(F_NOCACHE) for direct I/O"))]
pub(crate) fn open(path: &Path, flags: &OpenFlags) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = fs::OpenOptions::new();
    options.read(true).write(flags.writable);
    if flags.writable {
        options.create(flags.create);
    }
    let mut custom = 0;
    if flags.sync {
        custom |= libc::O_SYNC;
    }
    #[cfg(target_os = "linux")]
    if flags.direct {
        custom |= libc::O_DIRECT;
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    if flags.direct {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "direct I/O is not available on this platform",
        ));
    }
    options.mode(0o644);
    // Reads need not update the file's access time, as they do not through a
    // memory map: checking it costs about a tenth of a small pread. Only the
    // file's owner may ask (EPERM for anyone else), who then opens as usual.
    #[cfg(target_os = "linux")]
    let opened = match options.custom_flags(custom | libc::O_NOATIME).open(path) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => options.custom_flags(custom).open(path),
        other => other,
    };
    #[cfg(not(target_os = "linux"))]
    let opened = options.custom_flags(custom).open(path);
    let file = match opened {
        // Linux answers EINVAL at open when the filesystem (tmpfs, for one) has no O_DIRECT.
        Err(e) if flags.direct && e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("the filesystem refuses direct I/O (O_DIRECT): {e}"),
            ))
        }
        other => other?,
    };
    #[cfg(target_os = "macos")]
    if flags.direct {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor we own, with an integer argument; no memory is shared.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_NOCACHE, 1) };
        if rc == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(file)
}

/// Reads into `buf` at `offset` until it is full or the file ends; returns the
/// number of bytes read (less than `buf.len()` only at the end of the file).
pub(crate) fn read_at(file: &fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes all of `data` at `offset`.
pub(crate) fn write_at(file: &fs::File, data: &[u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(data, offset)
}

/// Takes the advisory lock of the whole file, shared or exclusive, if no
/// other open file description holds a conflicting one; else fails with
/// `WouldBlock`. Waiting is the caller's loop, so that it can time out and
/// be interrupted.
pub(crate) fn try_lock(file: &fs::File, exclusive: bool) -> io::Result<()> {
    let result = if exclusive { file.try_lock() } else { file.try_lock_shared() };
    result.map_err(|e| match e {
        fs::TryLockError::WouldBlock => {
            io::Error::new(io::ErrorKind::WouldBlock, "another process holds a conflicting lock")
        }
        fs::TryLockError::Error(e) => e,
    })
}

/// Releases the advisory lock.
pub(crate) fn unlock(file: &fs::File) -> io::Result<()> {
    file.unlock()
}

/// Makes `len` bytes at `offset` read as zeros without changing the file's
/// length, so maps of the file stay valid. Fails with `Unsupported` where the
/// filesystem cannot punch holes.
#[cfg_attr(target_os = "linux", expect(unsafe_code, reason = "fallocate(PUNCH_HOLE)"))]
pub(crate) fn punch_hole(file: &fs::File, offset: u64, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "range too large"));
        };
        // SAFETY: fallocate on a descriptor we own with integer arguments; it
        // touches no memory of ours.
        let rc = unsafe {
            libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, off, n)
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if matches!(err.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)) {
            return Err(io::Error::new(io::ErrorKind::Unsupported, err));
        }
        Err(err)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        Err(io::Error::new(io::ErrorKind::Unsupported, "no hole punching on this platform"))
    }
}

/// Makes the device hold space for the bytes of `file` from `offset` to
/// `offset + len`, so that writes there through a memory map cannot fail
/// later: a page of a sparse file that a full device cannot back raises
/// SIGBUS when touched, where this answers ENOSPC. Where the platform has no
/// way to reserve space, it does nothing.
#[cfg_attr(target_os = "linux", expect(unsafe_code, reason = "posix_fallocate"))]
pub(crate) fn allocate(file: &fs::File, offset: u64, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "range too large"));
        };
        if n == 0 {
            return Ok(());
        }
        // SAFETY: posix_fallocate on a descriptor we own with integer
        // arguments; it touches no memory of ours and answers an error number.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), off, n) };
        match rc {
            0 => Ok(()),
            // A filesystem that cannot reserve space: keep the sparse file.
            libc::EOPNOTSUPP | libc::ENOSYS => Ok(()),
            rc => Err(io::Error::from_raw_os_error(rc)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        Ok(())
    }
}

/// Writes the changed pages of `file` from `offset` for `len` bytes to the
/// device and waits for them (and for writes of them already under way),
/// as a synchronization does but without the file's metadata or a device
/// flush: a later `sync_data` makes them durable. Answers `Ok` without
/// writing where the platform has no such request: the later sync writes
/// them then.
#[cfg_attr(target_os = "linux", expect(unsafe_code, reason = "sync_file_range"))]
pub(crate) fn write_back(file: &fs::File, offset: u64, len: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(n)) = (libc::off64_t::try_from(offset), libc::off64_t::try_from(len)) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "range too large"));
        };
        // All three: the system then writes the range as a synchronization
        // does, not as background write-back, which it throttles.
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: sync_file_range on a descriptor we own with integer
        // arguments; it touches no memory of ours and answers -1 on error.
        let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), off, n, flags) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        Ok(())
    }
}

/// Where the first hole of `file` (`len` bytes long) begins: a range with
/// no space taken on the device, as an extension of its length leaves. `len`
/// where it has none, or where the platform cannot say.
#[cfg_attr(target_os = "linux", expect(unsafe_code, reason = "lseek"))]
pub(crate) fn first_hole(file: &fs::File, len: u64) -> u64 {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: lseek on a descriptor we own with integer arguments; it
        // touches no memory of ours. The file offset it moves is put back.
        let at = unsafe {
            let at = libc::lseek(fd, 0, libc::SEEK_HOLE);
            libc::lseek(fd, 0, libc::SEEK_SET);
            at
        };
        u64::try_from(at).map_or(len, |at| at.min(len))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        len
    }
}

/// Lets the calling thread run only on a processor no other thread wants
/// (Linux's idle scheduling class), for work that is worth doing only when
/// it takes nothing from the rest. Where the platform has no such class, the
/// thread keeps its priority.
#[cfg_attr(target_os = "linux", expect(unsafe_code, reason = "sched_setscheduler"))]
pub(crate) fn run_only_when_idle() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler on the calling thread (0) with a valid
        // parameter that lives through the call; it only changes how the
        // thread is scheduled. A refusal leaves the thread as it was.
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    }
}

/// Which of the pages of `file` from `offset` (page-aligned) for `len`
/// bytes the system holds in memory: for tests of what brings pages in.
#[cfg(all(test, target_os = "linux"))]
#[expect(unsafe_code, reason = "mincore on a map of our own")]
pub(crate) fn resident_pages(file: &fs::File, offset: u64, len: usize) -> io::Result<Vec<bool>> {
    let map = map_read_only(file, offset, len)?;
    let pages = len.div_ceil(4096);
    let mut flags = vec![0u8; pages];
    // SAFETY: the map is `len` bytes long and lives through the call, and
    // `flags` holds a byte for each of its pages.
    let rc = unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, len, flags.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags.iter().map(|f| f & 1 == 1).collect())
}

/// How many pages of `file` the system holds changed and not yet written
/// back (Linux's `cachestat`, from 6.5); `None` where that cannot be told:
/// a kernel without the call, or a file system in memory (tmpfs), whose
/// pages stay changed with no device to write them to. For tests of what
/// writes pages back.
#[cfg(all(test, target_os = "linux"))]
#[expect(unsafe_code, reason = "the fstatfs and cachestat system calls")]
pub(crate) fn dirty_pages(file: &fs::File) -> io::Result<Option<u64>> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero statfs is a valid value of the plain C struct.
    let mut fs_stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs writes the struct, which lives through the call.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs_stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if fs_stat.f_type == libc::TMPFS_MAGIC {
        return Ok(None);
    }
    // The call's number is the same on every architecture (the generic
    // table's); the libc crate does not name it for x86-64 yet.
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        cache: u64,
        dirty: u64,
        writeback: u64,
        evicted: u64,
        recently_evicted: u64,
    }
    // A length of 0 is the whole file.
    let range = Range { off: 0, len: 0 };
    let mut stat = Stat::default();
    // SAFETY: cachestat reads `range` and writes `stat`, both live through
    // the call and laid out as the kernel's structures (five and two u64s).
    let rc = unsafe {
        libc::syscall(SYS_CACHESTAT, file.as_raw_fd(), &range as *const Range, &mut stat as *mut Stat, 0u32)
    };
    if rc == 0 {
        return Ok(Some(stat.dirty + stat.writeback));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENOSYS) {
        return Ok(None);
    }
    Err(e)
}

#[cfg(all(test, target_os = "linux"))]
fn map_read_only(file: &fs::File, offset: u64, len: usize) -> io::Result<memmap2::MmapRaw> {
    memmap2::MmapOptions::new().offset(offset).len(len).map_raw_read_only(file)
}

/// Makes the directory holding `path` durable, so a rename into it survives
/// a power cut.
pub(crate) fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;
    use std::time::{Duration, SystemTime};

    /// A read through a file opened here leaves its access time, as a read
    /// through a memory map does: with relatime, a read would otherwise set an
    /// access time older than a day to now.
    #[cfg(target_os = "linux")]
    #[test]
    fn reads_leave_the_access_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"some bytes").unwrap();
        let old = SystemTime::now() - Duration::from_secs(3 * 86400);
        let times = fs::FileTimes::new().set_accessed(old).set_modified(old);
        fs::File::options().write(true).open(&path).unwrap().set_times(times).unwrap();
        let flags = OpenFlags { writable: false, create: false, direct: false, sync: false };
        let file = open(&path, &flags).unwrap();
        let mut buf = [0u8; 4];
        file.read_at(&mut buf, 2).unwrap();
        assert_eq!(&buf, b"me b");
        let accessed = fs::metadata(&path).unwrap().accessed().unwrap();
        assert_eq!(accessed, old, "the read moved the access time");
    }
}
