//! A memory map of a file, read and written by copying.
//!
//! If another process truncates the file below the mapped length, touching the
//! missing pages raises SIGBUS. kuradb prevents that with its locks: a writer
//! holds the file's exclusive advisory lock, readers a shared one, and only a
//! writer changes the file's length. Within a process the file never becomes
//! shorter than a live map: a [`MapChain`] keeps every map it made until it is
//! dropped, and the owner cuts data by punching holes, not by shrinking the file,
//! until every map is gone.

use std::fs;
use std::io;
use std::sync::atomic::{AtomicPtr, Ordering};

use memmap2::{MmapOptions, MmapRaw};
use parking_lot::Mutex;

/// The maps of one file, the newest in use: a longer map replaces the current
/// one without waiting for the threads copying through it, because the old map
/// stays valid (and coherent with the new one: both share the file's pages)
/// until the chain is dropped.
pub(crate) struct MapChain {
    /// The newest map, or null while there is none.
    current: AtomicPtr<Mapping>,
    /// Every map made, kept until drop so that `current` never dangles; boxed so
    /// that a map does not move when the vector grows.
    #[allow(clippy::vec_box)]
    all: Mutex<Vec<Box<Mapping>>>,
}

impl MapChain {
    /// A chain whose first map is `first`.
    pub(crate) fn new(first: Option<Mapping>) -> MapChain {
        let chain = MapChain { current: AtomicPtr::new(std::ptr::null_mut()), all: Mutex::new(Vec::new()) };
        if let Some(map) = first {
            chain.install(map);
        }
        chain
    }

    /// The newest map.
    #[expect(unsafe_code, reason = "dereferences the pointer to the newest map, which the chain keeps alive")]
    pub(crate) fn current(&self) -> Option<&Mapping> {
        let ptr = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was stored by `install` from a Box now owned
        // by `all`, which frees nothing before `self` is dropped; the Acquire load
        // pairs with install's Release store, so the Mapping is fully visible.
        // The borrow is tied to &self, so it cannot outlive the chain.
        unsafe { ptr.as_ref() }
    }

    /// The newest map's length, or 0.
    pub(crate) fn len(&self) -> u64 {
        self.current().map_or(0, Mapping::len)
    }

    /// Lets go of every map's page-table entries (see [`Mapping::unmap_pages`]).
    pub(crate) fn unmap_pages(&self) -> io::Result<()> {
        self.all.lock().iter().try_for_each(|map| map.unmap_pages())
    }

    /// Makes `map` the newest. Callers serialise installs among themselves.
    pub(crate) fn install(&self, map: Mapping) {
        let mut all = self.all.lock();
        let mut boxed = Box::new(map);
        let ptr: *mut Mapping = &mut *boxed;
        all.push(boxed);
        self.current.store(ptr, Ordering::Release);
    }
}

/// A shared mapping of the first `len` bytes of a file.
pub(crate) struct Mapping {
    raw: MmapRaw,
    writable: bool,
}

impl Mapping {
    /// Maps the first `len` bytes of `file`, for writing if `writable`. The map
    /// may reach past the file's end, to leave room for growth; the caller must
    /// not touch bytes past the end, which would raise SIGBUS.
    pub(crate) fn new(file: &fs::File, len: u64, writable: bool) -> io::Result<Mapping> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mapping too large"))?;
        let options = {
            let mut o = MmapOptions::new();
            o.len(len);
            o
        };
        let raw = if writable { options.map_raw(file)? } else { options.map_raw_read_only(file)? };
        Ok(Mapping { raw, writable })
    }

    /// The mapped length.
    pub(crate) fn len(&self) -> u64 {
        self.raw.len() as u64
    }

    /// Copies `buf.len()` bytes at `offset` out of the map.
    ///
    /// Panics if the range is outside the map: callers check it against the
    /// logical size first, so a panic here is a bug in kuradb, not bad input.
    #[expect(unsafe_code, reason = "copies out of the mapped memory")]
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) {
        let start = self.checked_start(offset, buf.len());
        // SAFETY: start + buf.len() <= the mapped length (checked above), the map
        // lives as long as &self, and buf cannot overlap the map (no slice of a
        // map is ever handed out). Another thread may write the same bytes at
        // once; strictly that is a data race in Rust's memory model, and it is
        // accepted as for any memory another process may write: the map is only
        // ever copied, never borrowed, so the copy yields unspecified bytes (as
        // the file contract says of overlapping accesses) and nothing that
        // holds an invariant depends on them.
        unsafe { std::ptr::copy_nonoverlapping(self.raw.as_ptr().add(start), buf.as_mut_ptr(), buf.len()) }
    }

    /// Asks the CPU to start loading the `len` bytes at `offset` into its
    /// cache (see [`super::prefetch`]); bytes outside the map are left out.
    pub(crate) fn prefetch(&self, offset: u64, len: usize) {
        if len == 0 || offset >= self.len() {
            return;
        }
        let end = offset.saturating_add(len as u64).min(self.len());
        // wrapping_add: the address is only a hint, never dereferenced.
        super::prefetch_lines(self.raw.as_ptr().wrapping_add(offset as usize), (end - offset) as usize);
    }

    /// Copies `data` into the map at `offset`. Panics as [`Mapping::read`] does,
    /// and if the map is read-only.
    #[expect(unsafe_code, reason = "copies into the mapped memory")]
    pub(crate) fn write(&self, offset: u64, data: &[u8]) {
        assert!(self.writable, "write to a read-only mapping");
        let start = self.checked_start(offset, data.len());
        // SAFETY: the range is inside the map (checked above), the map was made
        // writable (asserted), it lives as long as &self, and data cannot overlap
        // the map (no slice of a map is ever handed out). A concurrent access of
        // the same bytes is the accepted race described in `read`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.raw.as_mut_ptr().add(start), data.len()) }
    }

    /// Sets `len` bytes at `offset` to zero. Panics as [`Mapping::write`] does.
    #[expect(unsafe_code, reason = "zeroes the mapped memory")]
    pub(crate) fn zero(&self, offset: u64, len: u64) {
        assert!(self.writable, "write to a read-only mapping");
        let start = self.checked_start(offset, len as usize);
        // SAFETY: the range is inside the writable map (checked and asserted
        // above) and the map lives as long as &self.
        unsafe { std::ptr::write_bytes(self.raw.as_mut_ptr().add(start), 0, len as usize) }
    }

    /// Waits until the device holds every modified page (msync). Not needed
    /// before a sync of the file where [`SYNC_DATA_COVERS_MAPS`] holds.
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.raw.flush()
    }

    /// Drops the process's page-table entries of the map, leaving its bytes
    /// (written ones included) in the file's page cache; a later access maps
    /// the page again, as a first one does. Writing a page back to the
    /// device makes its entry read-only in every processor that may have it
    /// cached, an interrupt of each other processor running the process
    /// per page; a page with no entry costs none. A no-op off Linux, where
    /// the advice may not keep a shared map's written bytes.
    #[cfg_attr(target_os = "linux", expect(unsafe_code, reason = "drops page-table entries of the map"))]
    pub(crate) fn unmap_pages(&self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        // SAFETY: on Linux, MADV_DONTNEED on a shared file map only removes
        // the page-table entries: a written page's dirty bit goes to the page
        // cache first, and a later access maps the page cache's current page,
        // so no byte written changes or is lost. The map stays mapped, so
        // every address of it stays valid; no reference into it exists (it is
        // only ever copied), so nothing borrowed sees its memory change.
        unsafe {
            self.raw.unchecked_advise(memmap2::UncheckedAdvice::DontNeed)
        }
        #[cfg(not(target_os = "linux"))]
        Ok(())
    }

    fn checked_start(&self, offset: u64, len: usize) -> usize {
        let end = offset.checked_add(len as u64);
        assert!(
            end.is_some_and(|end| end <= self.len()),
            "access of {len} bytes at {offset} outside a map of {}",
            self.len()
        );
        offset as usize
    }
}

/// Whether an fdatasync of a file makes durable what shared maps of it
/// wrote, with no msync first. On Linux a shared file map's pages are the
/// page cache's own, marked dirty when first written through the map, and
/// `fdatasync` writes back every dirty page of the file; `msync(MS_SYNC)` is
/// itself an fdatasync of its range there, so doing both waits on the
/// device twice. Elsewhere (POSIX leaves it open) the map is flushed first.
pub(crate) const SYNC_DATA_COVERS_MAPS: bool = cfg!(target_os = "linux");

#[cfg(test)]
#[path = "mmap_tests.rs"]
mod tests;
