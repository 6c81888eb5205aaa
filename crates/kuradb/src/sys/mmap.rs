//! A memory map of a file, read and written by copying.
//!
//! If another process truncates the file below the mapped length, touching the
//! missing pages raises SIGBUS. kuradb prevents that with its locks: a writer
//! holds the file's exclusive advisory lock, readers a shared one, and only a
//! writer changes the file's length; within a process the mapping is replaced
//! only under the owner's exclusive lock, never while a copy is running.

use std::fs;
use std::io;

use memmap2::{MmapOptions, MmapRaw};

/// A shared mapping of the first `len` bytes of a file.
pub(crate) struct Mapping {
    raw: MmapRaw,
    writable: bool,
}

impl Mapping {
    /// Maps the first `len` bytes of `file` (which must be at least that long),
    /// for writing if `writable`.
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
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) {
        let start = self.checked_start(offset, buf.len());
        // SAFETY: start + buf.len() <= the mapped length (checked above), the map
        // lives as long as &self, and buf is a distinct allocation. Other threads
        // may write the same bytes concurrently, as another process could: the
        // file contract leaves overlapping concurrent accesses unspecified, and
        // the bytes are plain data with no validity invariant.
        unsafe { std::ptr::copy_nonoverlapping(self.raw.as_ptr().add(start), buf.as_mut_ptr(), buf.len()) }
    }

    /// Copies `data` into the map at `offset`. Panics as [`Mapping::read`] does,
    /// and if the map is read-only.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) {
        assert!(self.writable, "write to a read-only mapping");
        let start = self.checked_start(offset, data.len());
        // SAFETY: the range is inside the map (checked above), the map was made
        // writable (asserted), it lives as long as &self, and data cannot alias
        // the map's memory because callers pass their own buffers.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.raw.as_mut_ptr().add(start), data.len()) }
    }

    /// Waits until the device holds every modified page (msync).
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.raw.flush()
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
