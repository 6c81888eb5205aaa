//! The positional file: `pread`/`pwrite` at offsets, with every I/O option.
//!
//! Layers, from the caller down: the head buffer serves the file's first bytes;
//! the page cache, if enabled, serves whole blocks of the rest; the [`Device`]
//! turns what remains into system calls on whole aligned blocks (block I/O,
//! direct I/O) or passes it through as it is.

use super::Durability;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::access::{self, check_read, check_write, closed, FileLock, FileWriteGuard};
use super::alloc::Allocation;
use super::block::Device;
use super::head_buffer::HeadBuffer;
use super::io_engine;
use super::owner::Owner;
use super::page_cache::{PageCache, PageCacheStats};
use super::{File, FileSpec, LockMode, OpenOptions, ReadRequest};
use crate::error::Result;
use crate::sys::BatchRead;

/// A file accessed by positional system calls; parallel or atomic by its spec.
///
/// ```
/// use kuradb::file::{File, FileKind, FileSpec, OpenOptions, PositionalFile};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let mut spec = FileSpec::new(FileKind::PositionalAtomic);
/// spec.block_size = 512;
/// spec.pagecache = true;
/// let mut file = PositionalFile::open(dir.path().join("f"), &OpenOptions::writer(), &spec)?;
/// file.write(1020, b"spans two blocks")?;
/// assert_eq!(file.size(), 1036);
/// let stats = file.page_cache_stats().unwrap();
/// // Blocks past the end of the file are known to be zeros: no device read.
/// assert_eq!((stats.misses, stats.device_reads), (2, 0));
/// file.close()?;
/// # Ok(())
/// # }
/// ```
pub struct PositionalFile {
    path: PathBuf,
    state: Option<State>,
}

struct State {
    /// The process that opened the file, and its claim in the table of open
    /// files. First, so it is dropped first: the claim must go before the
    /// descriptor, whose closing may free an unlinked file's inode number
    /// for reuse by a file another thread creates.
    owner: Owner,
    device: Device,
    spec: FileSpec,
    writable: bool,
    /// The whole-file lock of the atomic kind; `None` for the parallel kind.
    atomic: Option<FileLock>,
    /// The logical size.
    size: AtomicU64,
    /// The file's length on disk; never below `size`.
    reserved: AtomicU64,
    growth: Mutex<()>,
    alloc: Allocation,
    head: Option<HeadBuffer>,
    cache: Option<PageCache>,
    poisoned: AtomicBool,
    /// The engine of batched reads and how it was chosen, for `inspect`.
    io_engine: io_engine::Resolved,
}

impl PositionalFile {
    /// Opens `path` with the options of `spec` (its kind chooses parallel or atomic).
    pub fn open(path: impl Into<PathBuf>, options: &OpenOptions, spec: &FileSpec) -> Result<PositionalFile> {
        spec.validate()?;
        let path = path.into();
        // Before the file is touched: a refused engine leaves it alone.
        let engine = io_engine::resolve(spec.io_engine)?;
        let (file, owner) = access::open_locked(&path, options, spec.direct, spec.sync)?;
        let size = file.metadata().map_err(|e| crate::Error::io("stat", &path, e))?.len();
        let device = Device::new(file, path.clone(), spec.block_size, spec.direct, size, engine.engine);
        let head = match spec.head_buffer {
            0 => None,
            n => Some(HeadBuffer::load(&device, n)?),
        };
        let cache = spec.pagecache.then(|| {
            let (capacity, percent) = (spec.page_cache_blocks(), spec.page_cache_protected_percent);
            let ahead = spec.page_cache_read_ahead_bytes();
            PageCache::new(capacity, percent, spec.block_size, device.align(), size, ahead)
                .serving_from(head.as_ref().map_or(0, HeadBuffer::len))
        });
        let state = State {
            owner,
            alloc: Allocation { init: spec.alloc_init, inc: spec.alloc_inc, unit: spec.block_size },
            device,
            spec: spec.clone(),
            writable: options.writable,
            atomic: spec.kind.is_atomic().then(|| FileLock::new(())),
            size: AtomicU64::new(size),
            reserved: AtomicU64::new(size),
            growth: Mutex::new(()),
            head,
            cache,
            poisoned: AtomicBool::new(false),
            io_engine: engine,
        };
        Ok(PositionalFile { path, state: Some(state) })
    }

    /// The page cache's counters, if the file has one.
    pub fn page_cache_stats(&self) -> Option<PageCacheStats> {
        self.state.as_ref()?.cache.as_ref().map(PageCache::stats)
    }

    fn state(&self) -> Result<&State> {
        let state = self.state.as_ref().ok_or_else(|| closed(&self.path))?;
        state.owner.check(&self.path)?;
        Ok(state)
    }

    fn check_write(&self, state: &State, offset: u64, len: usize) -> Result<u64> {
        check_write(&self.path, state.writable, state.poisoned.load(Ordering::Acquire), offset, len)
    }
}

impl State {
    fn exclusive(&self) -> Option<FileWriteGuard<'_>> {
        self.atomic.as_ref().map(access::exclusive)
    }

    /// Makes the file on disk at least `end` bytes long.
    fn reserve(&self, end: u64) -> Result<()> {
        if end <= self.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let _growth = self.growth.lock();
        self.reserve_locked(end)
    }

    fn reserve_locked(&self, end: u64) -> Result<()> {
        let reserved = self.reserved.load(Ordering::Acquire);
        if end > reserved {
            let target = self.alloc.next(reserved, end);
            self.device.set_len(target)?;
            self.reserved.store(target, Ordering::Release);
        }
        Ok(())
    }

    /// Splits an access at the head buffer's end: (bytes for the head, rest).
    fn head_split(&self, offset: u64, len: usize) -> usize {
        match &self.head {
            Some(head) if offset < head.len() => ((head.len() - offset) as usize).min(len),
            _ => 0,
        }
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let n = self.head_split(offset, buf.len());
        let (front, rest) = buf.split_at_mut(n);
        if let Some(head) = self.head.as_ref().filter(|_| n > 0) {
            head.read(offset, front);
        }
        if rest.is_empty() {
            return Ok(());
        }
        let offset = offset + n as u64;
        match &self.cache {
            Some(cache) => cache.read(&self.device, offset, rest),
            None => self.device.read(offset, rest),
        }
    }

    /// Reads a batch: what the head buffer covers from it, the rest through
    /// the page cache or the device in one batch.
    fn read_many_at(&self, reads: &mut [ReadRequest<'_>]) -> Result<()> {
        let mut rest = Vec::with_capacity(reads.len());
        for read in reads.iter_mut() {
            let n = self.head_split(read.offset, read.buf.len());
            let (front, back) = read.buf.split_at_mut(n);
            if let Some(head) = self.head.as_ref().filter(|_| n > 0) {
                head.read(read.offset, front);
            }
            if !back.is_empty() {
                rest.push(BatchRead { offset: read.offset + n as u64, buf: back });
            }
        }
        match &self.cache {
            Some(cache) => cache.read_many(&self.device, &mut rest),
            None => self.device.read_many(&mut rest),
        }
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let n = self.head_split(offset, data.len());
        let (front, rest) = data.split_at(n);
        if let Some(head) = self.head.as_ref().filter(|_| n > 0) {
            head.write(offset, front);
        }
        if rest.is_empty() {
            return Ok(());
        }
        let offset = offset + n as u64;
        match &self.cache {
            Some(cache) => cache.write(&self.device, offset, rest),
            None => self.device.write(offset, rest),
        }
    }

    /// Grows the logical size by `len` once the space is reserved; answers the old size.
    fn grow_size(&self, len: u64) -> Result<u64> {
        loop {
            let old = self.size.load(Ordering::Acquire);
            let end = old.checked_add(len).ok_or_else(|| {
                crate::Error::new(crate::ErrorKind::InvalidArgument, "file size would overflow")
            })?;
            self.reserve(end)?;
            if self.size.compare_exchange(old, end, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Ok(old);
            }
        }
    }

    fn flush(&self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        if let Some(head) = &self.head {
            head.flush(&self.device, self.size.load(Ordering::Acquire))?;
        }
        if let Some(cache) = &self.cache {
            cache.flush(&self.device)?;
        }
        Ok(())
    }
}

impl File for PositionalFile {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let state = self.state()?;
        let _shared = state.atomic.as_ref().map(access::shared);
        check_read(&self.path, offset, buf.len(), state.size.load(Ordering::Acquire))?;
        state.read_at(offset, buf)
    }

    fn read_many(&self, reads: &mut [ReadRequest<'_>]) -> Result<()> {
        let state = self.state()?;
        // Held for the whole batch: on the atomic kind no write lands in it.
        let _shared = state.atomic.as_ref().map(access::shared);
        let size = state.size.load(Ordering::Acquire);
        for read in reads.iter() {
            check_read(&self.path, read.offset, read.buf.len(), size)?;
        }
        state.read_many_at(reads)
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let state = self.state()?;
        let end = self.check_write(state, offset, data.len())?;
        let _exclusive = state.exclusive();
        state.reserve(end)?;
        state.write_at(offset, data)?;
        // Most writes land inside the file: a plain load spares them the
        // contended read-modify-write of the size.
        if end > state.size.load(Ordering::Acquire) {
            state.size.fetch_max(end, Ordering::AcqRel);
        }
        Ok(())
    }

    fn append(&self, data: &[u8]) -> Result<u64> {
        let state = self.state()?;
        self.check_write(state, state.size.load(Ordering::Acquire), data.len())?;
        let _exclusive = state.exclusive();
        let offset = state.grow_size(data.len() as u64)?;
        state.write_at(offset, data)?;
        Ok(offset)
    }

    fn expand(&self, increment: u64) -> Result<u64> {
        let state = self.state()?;
        self.check_write(state, state.size.load(Ordering::Acquire), 0)?;
        let _exclusive = state.exclusive();
        state.grow_size(increment)
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let state = self.state()?;
        self.check_write(state, size, 0)?;
        let _exclusive = state.exclusive();
        let _growth = state.growth.lock();
        if size < state.size.load(Ordering::Acquire) {
            if let Some(head) = &state.head {
                head.truncate(size);
            }
            if let Some(cache) = &state.cache {
                cache.truncate(size);
            }
            // Cutting the file on disk is what makes the cut bytes read as zeros
            // if the file grows again.
            state.device.set_len(size)?;
            state.reserved.store(size, Ordering::Release);
        } else {
            state.reserve_locked(size)?;
        }
        state.size.store(size, Ordering::Release);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.size.load(Ordering::Acquire))
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        let state = self.state()?;
        // On the atomic kind this makes the flushed image one consistent moment.
        let _exclusive = state.exclusive();
        state.flush()?;
        if durability.is_hard() && state.writable {
            if let Err(e) = state.device.sync_data() {
                state.poisoned.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }

    fn write_back(&self) -> Result<()> {
        let state = self.state()?;
        if !state.writable {
            return Ok(());
        }
        {
            let _exclusive = state.exclusive();
            state.flush()?;
        }
        // Its error, as a synchronization's, may be the only report of
        // writes lost: the file takes no more.
        access::write_back(state.device.file(), &self.path, state.size.load(Ordering::Acquire))
            .inspect_err(|_| state.poisoned.store(true, Ordering::Release))
    }

    fn lock(&self, mode: LockMode) -> Result<()> {
        access::lock(self.state()?.device.file(), &self.path, mode, true)
    }

    fn try_lock(&self, mode: LockMode) -> Result<()> {
        access::lock(self.state()?.device.file(), &self.path, mode, false)
    }

    fn unlock(&self) -> Result<()> {
        access::unlock(self.state()?.device.file(), &self.path)
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn rename(&mut self, to: &Path) -> Result<()> {
        let state = self.state.as_mut().ok_or_else(|| closed(&self.path))?;
        state.owner.check(&self.path)?;
        access::rename(&self.path, to)?;
        state.device.renamed(to);
        self.path = to.to_path_buf();
        Ok(())
    }

    fn is_writable(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.writable)
    }

    fn is_atomic(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.atomic.is_some())
    }

    fn block_size(&self) -> u64 {
        self.state.as_ref().map_or(1, |s| s.device.block_size())
    }

    fn inspect(&self) -> Vec<(String, String)> {
        let open = self.state.as_ref().map(|s| (&s.spec, s.size.load(Ordering::Acquire), s.writable));
        let mut out = access::describe(&self.path, open);
        let Some(state) = &self.state else { return out };
        out.push(("reserved_size".into(), state.reserved.load(Ordering::Acquire).to_string()));
        out.push(("io_engine".into(), state.io_engine.describe()));
        if let Some(s) = state.cache.as_ref().map(PageCache::stats) {
            out.push(("page_cache_hits".into(), s.hits.to_string()));
            out.push(("page_cache_misses".into(), s.misses.to_string()));
            out.push(("page_cache_device_reads".into(), s.device_reads.to_string()));
            out.push(("page_cache_read_ahead_blocks".into(), s.read_ahead.to_string()));
            out.push(("page_cache_device_writes".into(), s.device_writes.to_string()));
            out.push(("page_cache_used".into(), s.used.to_string()));
            out.push(("page_cache_protected".into(), s.protected.to_string()));
            out.push(("page_cache_capacity".into(), s.capacity.to_string()));
            let percent = state.spec.page_cache_protected_percent;
            out.push(("page_cache_protected_percent".into(), percent.to_string()));
        }
        out
    }

    fn close(&mut self) -> Result<()> {
        let state = self.state.take().ok_or_else(|| closed(&self.path))?;
        if !state.owner.is_current() {
            // In a forked child: write back, truncate and unlock nothing, as
            // all of it is the parent's; only this process's descriptor and
            // maps go.
            return state.owner.check(&self.path);
        }
        let mut result = state.flush();
        if state.writable && !state.poisoned.load(Ordering::Acquire) {
            let resized = state.device.set_len(state.size.load(Ordering::Acquire));
            result = result.and(resized);
        }
        // The lock is released explicitly: closing our descriptor does not
        // release it while a process forked by another thread (not yet at
        // its exec) holds a copy. Its failure cannot matter, as the close
        // releases it too once no copy is left.
        let _ = crate::sys::unlock(state.device.file());
        drop(state);
        result
    }
}

impl Drop for PositionalFile {
    fn drop(&mut self) {
        if self.state.is_some() {
            let _ = self.close();
        }
    }
}
