//! The memory-mapped file: reads and writes are copies to and from a map of
//! the file, which grows by remapping.
//!
//! The map is always at least as long as the logical size, so every access the
//! size allows is inside it. The parallel kind copies under a shared lock of the
//! map, taken exclusively only to replace it with a longer one; the atomic kind
//! takes the same lock exclusively for every write.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;

use super::access::{self, check_read, check_write, closed};
use super::alloc::Allocation;
use super::{File, FileSpec, LockMode, OpenOptions};
use crate::error::{Error, Result};
use crate::sys::Mapping;

/// Maps are grown in whole pages.
const PAGE: u64 = 4096;

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
    file: fs::File,
    spec: FileSpec,
    writable: bool,
    atomic: bool,
    /// The map of the file's reserved space; `None` while that is empty.
    map: RwLock<Option<Mapping>>,
    /// The logical size; never above the map's length.
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
                crate::ErrorKind::InvalidArgument,
                format!("MmapFile cannot open a {} spec", spec.kind),
            ));
        }
        let path = path.into();
        let file = access::open_locked(&path, options, false, false)?;
        let size = file.metadata().map_err(|e| Error::io("stat", &path, e))?.len();
        let map = match size {
            0 => None,
            n => Some(Mapping::new(&file, n, options.writable).map_err(|e| Error::io("map", &path, e))?),
        };
        let state = State {
            file,
            spec: spec.clone(),
            writable: options.writable,
            atomic: spec.kind.is_atomic(),
            map: RwLock::new(map),
            size: AtomicU64::new(size),
            alloc: Allocation { init: spec.alloc_init, inc: spec.alloc_inc, unit: PAGE },
            poisoned: AtomicBool::new(false),
        };
        Ok(MmapFile { path, state: Some(state) })
    }

    fn state(&self) -> Result<&State> {
        self.state.as_ref().ok_or_else(|| closed(&self.path))
    }

    fn check_write(&self, state: &State, offset: u64, len: usize) -> Result<u64> {
        check_write(&self.path, state.writable, state.poisoned.load(Ordering::Acquire), offset, len)
    }

    /// Makes the map at least `end` bytes long; the caller holds the map exclusively.
    fn grow(&self, state: &State, map: &mut Option<Mapping>, end: u64) -> Result<()> {
        let current = map.as_ref().map_or(0, Mapping::len);
        if end <= current {
            return Ok(());
        }
        let target = state.alloc.next(current, end);
        state
            .file
            .set_len(target)
            .map_err(|e| Error::io(format_args!("truncate to {target} bytes"), &self.path, e))?;
        // The old map goes first so that address space for both is never needed.
        *map = None;
        *map = Some(
            Mapping::new(&state.file, target, true)
                .map_err(|e| Error::io(format_args!("map of {target} bytes"), &self.path, e))?,
        );
        Ok(())
    }

    /// Runs `f` with a map at least `end` bytes long: under the exclusive lock on
    /// the atomic kind, under the shared one (after growing if needed) otherwise.
    fn with_map<R>(&self, state: &State, end: u64, f: impl FnOnce(Option<&Mapping>) -> R) -> Result<R> {
        if state.atomic {
            let mut map = state.map.write();
            self.grow(state, &mut map, end)?;
            return Ok(f(map.as_ref()));
        }
        loop {
            let map = state.map.read();
            if map.as_ref().map_or(0, Mapping::len) >= end {
                return Ok(f(map.as_ref()));
            }
            drop(map);
            self.grow(state, &mut state.map.write(), end)?;
        }
    }
}

impl File for MmapFile {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let state = self.state()?;
        let map = state.map.read();
        check_read(&self.path, offset, buf.len(), state.size.load(Ordering::Acquire))?;
        if let Some(map) = map.as_ref() {
            map.read(offset, buf);
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let state = self.state()?;
        let end = self.check_write(state, offset, data.len())?;
        self.with_map(state, end, |map| {
            if let Some(map) = map {
                map.write(offset, data);
            }
            state.size.fetch_max(end, Ordering::AcqRel);
        })
    }

    fn append(&self, data: &[u8]) -> Result<u64> {
        let state = self.state()?;
        self.check_write(state, state.size.load(Ordering::Acquire), data.len())?;
        self.grow_size(state, data.len() as u64, Some(data))
    }

    fn expand(&self, increment: u64) -> Result<u64> {
        let state = self.state()?;
        self.check_write(state, state.size.load(Ordering::Acquire), 0)?;
        self.grow_size(state, increment, None)
    }

    fn truncate(&self, size: u64) -> Result<()> {
        let state = self.state()?;
        self.check_write(state, size, 0)?;
        let mut map = state.map.write();
        if size < state.size.load(Ordering::Acquire) {
            // Cutting the file and restoring its length zeroes the cut bytes in
            // the page cache, so the map stays valid and later growth reads zeros.
            let mapped = map.as_ref().map_or(0, Mapping::len);
            let resize = |len: u64| {
                state
                    .file
                    .set_len(len)
                    .map_err(|e| Error::io(format_args!("truncate to {len} bytes"), &self.path, e))
            };
            resize(size)?;
            resize(mapped.max(size))?;
        } else {
            self.grow(state, &mut map, size)?;
        }
        state.size.store(size, Ordering::Release);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.size.load(Ordering::Acquire))
    }

    fn synchronize(&self, hard: bool) -> Result<()> {
        let state = self.state()?;
        // Writes to the map are in the OS's page cache already: soft has nothing to do.
        if !hard || !state.writable {
            return Ok(());
        }
        let map = state.map.read();
        let synced = match map.as_ref() {
            Some(m) => m.flush().and_then(|_| state.file.sync_data()),
            None => state.file.sync_data(),
        };
        synced.map_err(|e| {
            state.poisoned.store(true, Ordering::Release);
            Error::io("synchronize", &self.path, e)
        })
    }

    fn lock(&self, mode: LockMode, wait: bool) -> Result<()> {
        access::lock(&self.state()?.file, &self.path, mode, wait)
    }

    fn unlock(&self) -> Result<()> {
        access::unlock(&self.state()?.file, &self.path)
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn is_writable(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.writable)
    }

    fn is_atomic(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.atomic)
    }

    fn block_size(&self) -> u64 {
        1
    }

    fn inspect(&self) -> Vec<(String, String)> {
        let mut out = vec![("path".to_string(), self.path.display().to_string())];
        let Some(state) = &self.state else {
            out.push(("open".into(), "false".into()));
            return out;
        };
        out.push(("class".into(), state.spec.kind.class_name().into()));
        out.push(("spec".into(), state.spec.to_string()));
        out.push(("size".into(), state.size.load(Ordering::Acquire).to_string()));
        let mapped = state.map.read().as_ref().map_or(0, Mapping::len);
        out.push(("mapped_size".into(), mapped.to_string()));
        out.push(("writable".into(), state.writable.to_string()));
        out
    }

    fn close(&mut self) -> Result<()> {
        let state = self.state.take().ok_or_else(|| closed(&self.path))?;
        // Unmapped first: the file must not shrink under a live map.
        state.map.write().take();
        let mut result = Ok(());
        if state.writable && !state.poisoned.load(Ordering::Acquire) {
            let size = state.size.load(Ordering::Acquire);
            result = state
                .file
                .set_len(size)
                .map_err(|e| Error::io(format_args!("truncate to {size} bytes"), &self.path, e));
        }
        drop(state);
        result
    }
}

impl MmapFile {
    /// Grows the logical size by `len` (copying `data` into the new region if
    /// given) once the map covers it; answers the old size.
    fn grow_size(&self, state: &State, len: u64, data: Option<&[u8]>) -> Result<u64> {
        loop {
            let old = state.size.load(Ordering::Acquire);
            let end = old
                .checked_add(len)
                .ok_or_else(|| Error::new(crate::ErrorKind::InvalidArgument, "file size would overflow"))?;
            let claimed = self.with_map(state, end, |map| {
                if state.size.compare_exchange(old, end, Ordering::AcqRel, Ordering::Acquire).is_err() {
                    return false;
                }
                if let (Some(map), Some(data)) = (map, data) {
                    map.write(old, data);
                }
                true
            })?;
            if claimed {
                return Ok(old);
            }
        }
    }
}

impl Drop for MmapFile {
    fn drop(&mut self) {
        if self.state.is_some() {
            let _ = self.close();
        }
    }
}
