//! The memory-mapped file: reads and writes are copies to and from a map of
//! the file, which grows by mapping the file anew, longer.
//!
//! The map reaches past the file's end (touching a page there would raise
//! SIGBUS), and the file is always at least as long as the logical size, so
//! every access the size allows is inside both. The parallel kind takes no lock to read or write:
//! a longer map replaces the current one while other threads still copy through
//! the old, which stays valid until the file closes ([`MapChain`]). The atomic
//! kind adds a whole-file reader-writer lock, exclusive for every write.

use super::Durability;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use super::access::{self, check_read, check_write, closed, SpinFileLock, SpinReadGuard, SpinWriteGuard};
use super::alloc::Allocation;
use super::owner::Owner;
use super::tail_fill::{self, TailFill};
use super::{File, FileSpec, LockMode, OpenOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::sys::{self, MapChain, Mapping};

/// Maps are grown in whole pages.
const PAGE: u64 = 4096;

/// A writer's map reaches well past the file's end, so the file grows many
/// times before the map must be replaced; each replacement costs a page fault
/// on every page touched again through the new map. Address space is cheap;
/// only touched pages cost memory.
const MIN_WINDOW: u64 = 1 << 30;

/// A file accessed through a memory map; parallel or atomic by its spec.
///
/// ```
/// use kuradb::file::{File, FileKind, FileSpec, MmapFile, OpenOptions};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let spec = FileSpec::new(FileKind::MmapParallel);
/// let mut file = MmapFile::open(dir.path().join("f"), &OpenOptions::writer(), &spec)?;
/// assert_eq!(file.append(b"abc")?, 0);
/// assert_eq!(file.expand(5)?, 3);
/// let mut buf = [1u8; 8];
/// file.read(0, &mut buf)?;
/// assert_eq!(&buf, b"abc\0\0\0\0\0");
/// file.close()?;
/// assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 8);
/// # Ok(())
/// # }
/// ```
pub struct MmapFile {
    path: PathBuf,
    state: Option<State>,
}

struct State {
    /// The process that opened the file, and its claim in the table of open files.
    owner: Owner,
    file: fs::File,
    spec: FileSpec,
    writable: bool,
    /// The whole-file lock of the atomic kind; `None` for the parallel kind.
    atomic: Option<SpinFileLock>,
    maps: MapChain,
    /// A writer's filler of the page cache ahead of its end, started once
    /// the file is large enough to want one; `None` inside if no thread
    /// could be started.
    fill: OnceLock<Option<TailFill>>,
    /// The end of the space taken on the device: every write goes below it
    /// (see [`MmapFile::reserve`]); never above the file's length.
    reserved: AtomicU64,
    /// The file's length, which serialises growth of the file and its map:
    /// the logical size rounded up by the allocation strategy; never above
    /// the current map's length.
    growth: Mutex<u64>,
    /// The logical size; never above `reserved`.
    size: AtomicU64,
    alloc: Allocation,
    poisoned: AtomicBool,
}

impl MmapFile {
    /// Opens `path`; `spec` gives the kind and the allocation strategy (the
    /// positional options are refused).
    pub fn open(path: impl Into<PathBuf>, options: &OpenOptions, spec: &FileSpec) -> Result<MmapFile> {
        spec.validate()?;
        if spec.kind.is_positional() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("MmapFile cannot open a {} spec", spec.kind),
            ));
        }
        let path = path.into();
        let (file, owner) = access::open_locked(&path, options, false, false)?;
        let size = file.metadata().map_err(|e| Error::io("stat", &path, e))?.len();
        let first = match size {
            0 => None,
            n => {
                // A reader's file cannot grow (writers are locked out); a writer's will.
                let window = if options.writable {
                    n.saturating_mul(2).max(MIN_WINDOW).div_ceil(PAGE) * PAGE
                } else {
                    n
                };
                Some(Mapping::new(&file, window, options.writable).map_err(|e| Error::io("map", &path, e))?)
            }
        };
        // A file left by a crash may end in a sparse stretch of its length,
        // which writes must take space for first.
        let reserved = if options.writable { sys::first_hole(&file, size) } else { size };
        let state = State {
            owner,
            file,
            spec: spec.clone(),
            writable: options.writable,
            atomic: spec.kind.is_atomic().then(|| SpinFileLock::new(())),
            maps: MapChain::new(first),
            fill: OnceLock::new(),
            reserved: AtomicU64::new(reserved),
            growth: Mutex::new(size),
            size: AtomicU64::new(size),
            alloc: Allocation { init: spec.alloc_init, inc: spec.alloc_inc, unit: PAGE },
            poisoned: AtomicBool::new(false),
        };
        Ok(MmapFile { path, state: Some(state) })
    }

    fn state(&self) -> Result<&State> {
        let state = self.state.as_ref().ok_or_else(|| closed(&self.path))?;
        state.owner.check(&self.path)?;
        Ok(state)
    }

    fn check_write(&self, state: &State, offset: u64, len: usize) -> Result<u64> {
        check_write(&self.path, state.writable, state.poisoned.load(Ordering::Acquire), offset, len)
    }

    /// Makes the file and its current map at least `end` bytes long, with
    /// space on the device for all of its length.
    ///
    /// Taking space only a bounded step ahead of the writes (an eighth of
    /// the file) would keep an open file near its data's size on the
    /// device, but was measured to make a growing hash database's worst set
    /// many times longer: more, smaller allocations met the file system's
    /// allocator waiting behind writeback
    /// (bench/results/2026-12-05-peers-file-space.md).
    fn reserve(&self, state: &State, end: u64) -> Result<()> {
        if end <= state.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut length = state.growth.lock();
        let current = state.reserved.load(Ordering::Acquire);
        if end <= current {
            return Ok(());
        }
        let least = end.div_ceil(PAGE) * PAGE;
        if least > *length {
            let target = state.alloc.next(*length, end);
            state
                .file
                .set_len(target)
                .map_err(|e| Error::io(format_args!("truncate to {target} bytes"), &self.path, e))?;
            *length = target;
        }
        // Writes through the map cannot report a full device (they would
        // raise SIGBUS): the space is taken here, where ENOSPC is an error. A
        // device too full for the whole length may still hold what is
        // needed now.
        let mut wanted = *length;
        loop {
            match sys::allocate(&state.file, current, wanted - current) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) && wanted > least => wanted = least,
                Err(e) => {
                    let what = format_args!("allocation of {} bytes", wanted - current);
                    return Err(Error::io(what, &self.path, e));
                }
            }
        }
        if *length > state.maps.len() {
            let window = length.saturating_mul(2).max(MIN_WINDOW).div_ceil(PAGE) * PAGE;
            let map = Mapping::new(&state.file, window, true)
                .map_err(|e| Error::io(format_args!("map of {window} bytes"), &self.path, e))?;
            state.maps.install(map);
        }
        state.reserved.store(wanted, Ordering::Release);
        Ok(())
    }

    /// Has the filler keep the pages past `end` cached (see [`tail_fill`]).
    fn fill_ahead(&self, state: &State, end: u64) {
        let fill = state.fill.get_or_init(|| {
            let limit = state.reserved.load(Ordering::Acquire);
            let fill = state.file.try_clone().ok().and_then(|file| TailFill::start(file, end, limit));
            if fill.is_none() {
                log::warn!("{}: no thread to fill the page cache ahead of writes", self.path.display());
            }
            fill
        });
        if let Some(fill) = fill {
            fill.note(end, state.reserved.load(Ordering::Acquire));
        }
    }

    /// Grows the logical size by `len` (copying `data` into the new region if
    /// given) once the map covers it; answers the old size.
    fn grow_size(&self, state: &State, len: u64, data: Option<&[u8]>) -> Result<u64> {
        loop {
            let old = state.size.load(Ordering::Acquire);
            let end = old
                .checked_add(len)
                .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "file size would overflow"))?;
            self.reserve(state, end)?;
            if state.size.compare_exchange(old, end, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                if let (Some(map), Some(data)) = (state.maps.current(), data) {
                    map.write(old, data);
                }
                if end >= tail_fill::MIN_SIZE {
                    self.fill_ahead(state, end);
                }
                return Ok(old);
            }
        }
    }
}

impl State {
    fn shared(&self) -> Option<SpinReadGuard<'_>> {
        self.atomic.as_ref().map(|l| l.read())
    }

    fn exclusive(&self) -> Option<SpinWriteGuard<'_>> {
        self.atomic.as_ref().map(access::exclusive_spin)
    }
}

impl File for MmapFile {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let state = self.state()?;
        let _shared = state.shared();
        check_read(&self.path, offset, buf.len(), state.size.load(Ordering::Acquire))?;
        if let Some(map) = state.maps.current() {
            map.read(offset, buf);
        }
        Ok(())
    }

    fn prefetch(&self, offset: u64, len: usize) -> bool {
        // No lock: a map stays valid until the file is dropped, and a
        // prefetch reads nothing (a stale size or map costs only the hint).
        let Some(state) = self.state.as_ref() else { return false };
        let size = state.size.load(Ordering::Acquire);
        if let Some(map) = state.maps.current() {
            map.prefetch(offset, len.min(size.saturating_sub(offset) as usize));
        }
        true
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let state = self.state()?;
        let end = self.check_write(state, offset, data.len())?;
        let _exclusive = state.exclusive();
        self.reserve(state, end)?;
        if let Some(map) = state.maps.current() {
            map.write(offset, data);
        }
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
        self.grow_size(state, data.len() as u64, Some(data))
    }

    fn expand(&self, increment: u64) -> Result<u64> {
        let state = self.state()?;
        self.check_write(state, state.size.load(Ordering::Acquire), 0)?;
        let _exclusive = state.exclusive();
        self.grow_size(state, increment, None)
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let state = self.state()?;
        self.check_write(state, size, 0)?;
        let _exclusive = state.exclusive();
        let _growth = state.growth.lock();
        let old = state.size.load(Ordering::Acquire);
        if size < old {
            // The file must not get shorter than a live map, so the cut bytes are
            // zeroed in place: by punching a hole where the filesystem can.
            match sys::punch_hole(&state.file, size, old - size) {
                // The hole's pages have no space on the device any more: a
                // write there takes it again first.
                Ok(()) => {
                    state.reserved.fetch_min(size.div_ceil(PAGE) * PAGE, Ordering::AcqRel);
                    if let Some(Some(fill)) = state.fill.get() {
                        fill.cut(size);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    if let Some(map) = state.maps.current() {
                        map.zero(size, old - size);
                    }
                }
                Err(e) => {
                    return Err(Error::io(format_args!("hole punch from {size} to {old}"), &self.path, e))
                }
            }
        } else {
            drop(_growth);
            self.reserve(state, size)?;
        }
        state.size.store(size, Ordering::Release);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.size.load(Ordering::Acquire))
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        let state = self.state()?;
        // Writes to the map are in the OS's page cache already: soft has nothing to do.
        if !durability.is_hard() || !state.writable {
            return Ok(());
        }
        let _exclusive = state.exclusive();
        // Older maps share the current one's pages, so flushing it covers
        // them; where the file's sync covers maps, one device sync does.
        let synced = match state.maps.current() {
            Some(m) if !crate::sys::SYNC_DATA_COVERS_MAPS => m.flush().and_then(|_| state.file.sync_data()),
            _ => state.file.sync_data(),
        };
        synced.map_err(|e| {
            state.poisoned.store(true, Ordering::Release);
            Error::io("synchronize", &self.path, e)
        })
    }

    fn prepare_writes(&self, from: u64, end: u64) -> Result<()> {
        let state = self.state()?;
        if !state.writable {
            return Ok(());
        }
        self.reserve(state, end)?;
        let mut buf = [0u8; tail_fill::STEP];
        tail_fill::bring_in(
            &state.file,
            from,
            end.min(state.reserved.load(Ordering::Acquire)),
            &mut buf,
            || false,
        );
        Ok(())
    }

    fn unmap_pages(&self) -> Result<()> {
        let state = self.state()?;
        state.maps.unmap_pages().map_err(|e| Error::io("unmap pages", &self.path, e))
    }

    fn write_back(&self) -> Result<()> {
        let state = self.state()?;
        if !state.writable {
            return Ok(());
        }
        // Its error, as a synchronization's, may be the only report of
        // writes lost: the file takes no more.
        access::write_back(&state.file, &self.path, self.size())
            .inspect_err(|_| state.poisoned.store(true, Ordering::Release))
    }

    fn lock(&self, mode: LockMode) -> Result<()> {
        access::lock(&self.state()?.file, &self.path, mode, true)
    }

    fn try_lock(&self, mode: LockMode) -> Result<()> {
        access::lock(&self.state()?.file, &self.path, mode, false)
    }

    fn unlock(&self) -> Result<()> {
        access::unlock(&self.state()?.file, &self.path)
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn rename(&mut self, to: &Path) -> Result<()> {
        self.state()?;
        access::rename(&self.path, to)?;
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
        1
    }

    fn inspect(&self) -> Vec<(String, String)> {
        let open = self.state.as_ref().map(|s| (&s.spec, s.size.load(Ordering::Acquire), s.writable));
        let mut out = access::describe(&self.path, open);
        if let Some(state) = &self.state {
            out.push(("reserved_size".into(), state.reserved.load(Ordering::Acquire).to_string()));
            out.push(("file_length".into(), state.growth.lock().to_string()));
            out.push(("mapped_size".into(), state.maps.len().to_string()));
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
        let State { owner, file, maps, fill, size, writable, poisoned, .. } = state;
        // The filler stops first, and its descriptor of the file goes with
        // it. Every map goes next: the file must not shrink under a live one.
        drop(fill);
        drop(maps);
        let mut result = Ok(());
        if writable && !poisoned.load(Ordering::Acquire) {
            let size = size.load(Ordering::Acquire);
            result = file
                .set_len(size)
                .map_err(|e| Error::io(format_args!("truncate to {size} bytes"), &self.path, e));
        }
        // Released explicitly, as the positional file does: a process forked
        // by another thread may hold a copy of the descriptor.
        let _ = sys::unlock(&file);
        // The claim goes before the descriptor: once that closes, an unlinked
        // file's inode number may be reused by a file another thread creates,
        // which a stale claim would refuse.
        drop(owner);
        drop(file);
        result
    }
}

impl Drop for MmapFile {
    fn drop(&mut self) {
        if self.state.is_some() {
            let _ = self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::file::FileKind;

    /// The end of the space the file has taken on the device, as `inspect` says.
    fn reserved_size(file: &MmapFile) -> u64 {
        let info = file.inspect();
        info.iter().find(|(k, _)| k == "reserved_size").unwrap().1.parse().unwrap()
    }

    #[test]
    fn a_write_past_the_end_takes_space_for_the_whole_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let spec = FileSpec::new(FileKind::MmapParallel);
        let file = MmapFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        let chunk = vec![7u8; 64 << 10];
        for _ in 0..(5 << 20) / chunk.len() {
            file.append(&chunk).unwrap();
            let meta = std::fs::metadata(&path).unwrap();
            assert!(meta.len() >= file.size());
            assert!(
                meta.blocks() * 512 >= meta.len(),
                "{} of {} bytes have space",
                meta.blocks() * 512,
                meta.len()
            );
        }
    }

    /// Pages a truncation punched out have no space on the device: a write
    /// there takes it again first.
    #[test]
    fn a_write_into_punched_pages_takes_their_space_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let spec = FileSpec::new(FileKind::MmapParallel);
        let file = MmapFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        file.append(&vec![3u8; 2 << 20]).unwrap();
        file.truncate(4096).unwrap();
        assert_eq!(reserved_size(&file), 4096);
        file.write(1 << 20, b"again").unwrap();
        assert!(reserved_size(&file) >= (1 << 20) + 5);
        assert!(std::fs::metadata(&path).unwrap().blocks() * 512 >= 1 << 20);
    }

    /// A file a crash left with a sparse end: a write there takes its space
    /// first, where a full device is an error rather than SIGBUS.
    #[test]
    fn a_sparse_end_gets_space_before_a_write_lands_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![5u8; 1 << 20]).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4 << 20).unwrap();
        let sparse = std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(sparse < 2 << 20, "the file system filled the extension: {sparse} bytes");
        let spec = FileSpec::new(FileKind::MmapParallel);
        let file = MmapFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        assert_eq!(reserved_size(&file), 1 << 20);
        file.write(3 << 20, b"late").unwrap();
        assert!(reserved_size(&file) >= (3 << 20) + 4);
        assert!(std::fs::metadata(&path).unwrap().blocks() * 512 >= 3 << 20);
        let mut buf = [0u8; 4];
        file.read(3 << 20, &mut buf).unwrap();
        assert_eq!(&buf, b"late");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn prepared_writes_find_their_space_taken_and_their_pages_cached() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let spec = FileSpec::new(FileKind::MmapParallel);
        let file = MmapFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        file.append(b"head").unwrap();
        // Far enough past the first page that its fault's read-around
        // cannot have brought these in.
        let (from, end) = (16u64 << 20, 20u64 << 20);
        let reader = std::fs::File::open(&path).unwrap();
        file.prepare_writes(from, end).unwrap();
        assert!(reserved_size(&file) >= end, "space up to {} only", reserved_size(&file));
        assert_eq!(file.size(), 4, "a preparation changed the logical size");
        let cached = sys::resident_pages(&reader, from, (end - from) as usize).unwrap();
        let count = cached.iter().filter(|&&c| c).count();
        assert_eq!(count, cached.len(), "{count} of {} pages cached", cached.len());
        let mut buf = [0u8; 4];
        file.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"head");
    }
}
