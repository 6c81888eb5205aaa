//! The device under a positional file: system calls on whole aligned blocks.
//!
//! With a block size of 1 every access goes to the OS as it is. With a larger
//! block size every system call covers whole aligned blocks, and a write that
//! covers part of a block reads the block first (read-modify-write). Buffers
//! are aligned to the block size (at least 4096 bytes) so direct I/O accepts
//! them.

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::sys::{self, BatchRead, Engine};

/// A zeroed heap buffer whose start is aligned to `align` bytes.
pub(crate) struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes starting at a multiple of `align` (a power of two).
    pub(crate) fn new(len: usize, align: usize) -> AlignedBuf {
        let storage = vec![0u8; len + align];
        let start = storage.as_ptr().align_offset(align);
        AlignedBuf { storage, start, len }
    }

    /// The buffer's bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The buffer's bytes, mutable.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }

    /// Makes the buffer at least `len` bytes long and aligned to `align`; its
    /// content is then unspecified.
    fn reserve(&mut self, len: usize, align: usize) {
        if self.len < len || !(self.storage.as_ptr().wrapping_add(self.start) as usize).is_multiple_of(align)
        {
            *self = AlignedBuf::new(len.max(self.len), align);
        }
    }
}

/// Edge locks serialise read-modify-write cycles on the same block; striping
/// keeps them cheap and independent of the file's size.
const EDGE_LOCK_STRIPES: usize = 64;

/// The largest scratch buffer a thread keeps between accesses.
const MAX_KEPT_SCRATCH: usize = 1 << 20;

thread_local! {
    /// Scratch space for read-modify-write, reused so a small write costs no allocation.
    static SCRATCH: RefCell<AlignedBuf> = RefCell::new(AlignedBuf::new(0, 1));
}

/// An open file seen as a sequence of blocks.
pub(crate) struct Device {
    file: fs::File,
    path: PathBuf,
    block_size: u64,
    align: usize,
    direct: bool,
    /// How [`Device::read_many`] reaches the OS.
    engine: Engine,
    edge_locks: Box<[Mutex<()>]>,
    /// No byte at or past this offset has been written since the file was
    /// opened or cut, so a block there reads as zeros without asking the OS:
    /// reading a hole costs the kernel more than the read itself (it sets up
    /// large page-cache folios that every later write must walk).
    extent: AtomicU64,
    /// Called with the offset of every [`Device::read_blocks`] once it has
    /// read: tests stall a read with it, holding bytes that may go stale.
    #[cfg(test)]
    read_hook: Option<ReadHook>,
}

/// What a test runs after each of a device's block reads.
#[cfg(test)]
pub(crate) type ReadHook = Box<dyn Fn(u64) + Send + Sync>;

impl Device {
    /// Wraps `file`; `block_size` is 1 or a power of two; `engine` carries
    /// batches.
    ///
    /// Writes go to the OS without a lock of their own: buffered writes to
    /// one file are serialised by the kernel (the inode lock), and a gate in
    /// front of it, whether it spun or slept, only lengthened the queue
    /// (bench/results/2026-11-28-file-layer.md).
    pub(crate) fn new(
        file: fs::File,
        path: PathBuf,
        block_size: u64,
        direct: bool,
        len: u64,
        engine: Engine,
    ) -> Device {
        let align = (block_size as usize).max(4096);
        let stripes = if block_size > 1 { EDGE_LOCK_STRIPES } else { 0 };
        Device {
            file,
            path,
            block_size,
            align,
            direct,
            engine,
            edge_locks: (0..stripes).map(|_| Mutex::new(())).collect(),
            extent: AtomicU64::new(len),
            #[cfg(test)]
            read_hook: None,
        }
    }

    /// The same device calling `hook` after each block read.
    #[cfg(test)]
    pub(crate) fn with_read_hook(self, hook: ReadHook) -> Device {
        Device { read_hook: Some(hook), ..self }
    }

    /// Names errors after `path` from now on: the file was renamed.
    pub(crate) fn renamed(&mut self, path: &Path) {
        self.path = path.to_path_buf();
    }

    pub(crate) fn file(&self) -> &fs::File {
        &self.file
    }

    pub(crate) fn block_size(&self) -> u64 {
        self.block_size
    }

    /// The alignment of buffers handed to the OS.
    pub(crate) fn align(&self) -> usize {
        self.align
    }

    pub(crate) fn error(&self, what: impl std::fmt::Display, e: std::io::Error) -> Error {
        let hint = if self.direct && e.raw_os_error() == Some(libc::EINVAL) {
            " with direct I/O (is the block size smaller than the device's?)"
        } else {
            ""
        };
        Error::io(format_args!("{what}{hint}"), &self.path, e)
    }

    pub(crate) fn set_len(&self, len: u64) -> Result<()> {
        self.file.set_len(len).map_err(|e| self.error(format_args!("truncate to {len} bytes"), e))?;
        self.extent.fetch_min(len, Ordering::AcqRel);
        Ok(())
    }

    pub(crate) fn sync_data(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| self.error("synchronize", e))
    }

    /// Reads whole blocks at an aligned `offset` into an aligned `buf`; bytes past
    /// the end of the file read as zeros.
    pub(crate) fn read_blocks(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        debug_assert!(self.is_aligned(offset, buf.len(), buf.as_ptr()));
        let n = sys::read_at(&self.file, buf, offset)
            .map_err(|e| self.error(format_args!("read of {} bytes at offset {offset}", buf.len()), e))?;
        // Tested first: a read inside the file, the usual one, fills nothing.
        if n < buf.len() {
            buf[n..].fill(0);
        }
        #[cfg(test)]
        if let Some(hook) = &self.read_hook {
            hook(offset);
        }
        Ok(())
    }

    /// Writes whole blocks at an aligned `offset` from an aligned `data`.
    pub(crate) fn write_blocks(&self, offset: u64, data: &[u8]) -> Result<()> {
        debug_assert!(self.is_aligned(offset, data.len(), data.as_ptr()));
        sys::write_at(&self.file, data, offset)
            .map_err(|e| self.error(format_args!("write of {} bytes at offset {offset}", data.len()), e))?;
        let end = offset + data.len() as u64;
        // Most writes land below the extent: a plain load spares them a locked
        // read-modify-write of a line every writing thread shares.
        if end > self.extent.load(Ordering::Acquire) {
            self.extent.fetch_max(end, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Reads any range; bytes past the end of the file read as zeros.
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        if self.block_size == 1 || self.is_aligned(offset, buf.len(), buf.as_ptr()) {
            return self.read_blocks(offset, buf);
        }
        let (start, end) = self.cover(offset, buf.len());
        self.with_scratch((end - start) as usize, |block| {
            self.read_blocks(start, block)?;
            let skip = (offset - start) as usize;
            buf.copy_from_slice(&block[skip..skip + buf.len()]);
            Ok(())
        })
    }

    /// Reads every range of `reads` (any offsets and lengths) in one batch of
    /// the device's engine; bytes past the end of the file read as zeros. A
    /// range the OS cannot take as it is (unaligned, with block I/O) is read
    /// as the whole blocks covering it, into an aligned buffer, and copied out.
    pub(crate) fn read_many(&self, reads: &mut [BatchRead<'_>]) -> Result<()> {
        let covers: Vec<Option<(u64, u64)>> = reads
            .iter()
            .map(|r| {
                let direct = r.buf.is_empty()
                    || self.block_size == 1
                    || self.is_aligned(r.offset, r.buf.len(), r.buf.as_ptr());
                (!direct).then(|| self.cover(r.offset, r.buf.len()))
            })
            .collect();
        let total: usize = covers.iter().flatten().map(|(start, end)| (end - start) as usize).sum();
        self.with_scratch(total, |scratch| {
            {
                let mut rest = &mut *scratch;
                let mut ops = Vec::with_capacity(reads.len());
                for (read, cover) in reads.iter_mut().zip(&covers) {
                    match *cover {
                        None if read.buf.is_empty() => {}
                        None => ops.push(BatchRead { offset: read.offset, buf: &mut *read.buf }),
                        Some((start, end)) => {
                            let (buf, tail) = std::mem::take(&mut rest).split_at_mut((end - start) as usize);
                            rest = tail;
                            ops.push(BatchRead { offset: start, buf });
                        }
                    }
                }
                sys::read_batch(&self.file, &mut ops, self.engine).map_err(|(i, e)| {
                    self.error(
                        format_args!("read of {} bytes at offset {}", ops[i].buf.len(), ops[i].offset),
                        e,
                    )
                })?;
            }
            let mut at = 0;
            for (read, cover) in reads.iter_mut().zip(&covers) {
                if let Some((start, end)) = *cover {
                    let skip = at + (read.offset - start) as usize;
                    read.buf.copy_from_slice(&scratch[skip..skip + read.buf.len()]);
                    at += (end - start) as usize;
                }
            }
            Ok(())
        })
    }

    /// Writes any range, reading the partly covered blocks at its edges first.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if self.block_size == 1 || self.is_aligned(offset, data.len(), data.as_ptr()) {
            return self.write_blocks(offset, data);
        }
        let (start, end) = self.cover(offset, data.len());
        let bs = self.block_size;
        let last = end - bs;
        let head_partial = offset != start;
        let tail_partial = offset + data.len() as u64 != end;
        // Another thread's read-modify-write of an edge block would undo this
        // write's bytes in it (and this one theirs), so edges are locked.
        let mut stripes = [usize::MAX; 2];
        if head_partial {
            stripes[0] = self.stripe(start);
        }
        if tail_partial {
            stripes[1] = self.stripe(last);
        }
        stripes.sort_unstable();
        let _first = (stripes[0] != usize::MAX).then(|| self.edge_locks[stripes[0]].lock());
        let _second = (stripes[1] != usize::MAX && stripes[1] != stripes[0])
            .then(|| self.edge_locks[stripes[1]].lock());
        let len = (end - start) as usize;
        self.with_scratch(len, |buf| {
            // Read under the edge locks, so a block another thread writes is
            // either read whole or past the extent it had not raised yet.
            let extent = self.extent.load(Ordering::Acquire);
            let load = |at: u64, block: &mut [u8]| {
                if at < extent {
                    self.read_blocks(at, block)
                } else {
                    block.fill(0);
                    Ok(())
                }
            };
            if head_partial {
                load(start, &mut buf[..bs as usize])?;
            }
            if tail_partial && (last != start || !head_partial) {
                load(last, &mut buf[len - bs as usize..])?;
            }
            let skip = (offset - start) as usize;
            buf[skip..skip + data.len()].copy_from_slice(data);
            self.write_blocks(start, buf)
        })
    }

    /// Runs `f` with an aligned buffer of `len` bytes (content unspecified):
    /// the thread's reusable one, or for a large `len` a temporary one, so a
    /// single large access does not leave every thread holding its size.
    pub(crate) fn with_scratch<R>(&self, len: usize, f: impl FnOnce(&mut [u8]) -> Result<R>) -> Result<R> {
        if len > MAX_KEPT_SCRATCH {
            let mut temp = AlignedBuf::new(len, self.align);
            return f(temp.as_mut_slice());
        }
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.reserve(len, self.align);
            f(&mut scratch.as_mut_slice()[..len])
        })
    }

    /// The aligned range of whole blocks covering `len` bytes at `offset`.
    fn cover(&self, offset: u64, len: usize) -> (u64, u64) {
        let mask = self.block_size - 1;
        (offset & !mask, (offset + len as u64 + mask) & !mask)
    }

    /// Whether a range can go to the OS as it is. Direct I/O also needs the
    /// memory aligned, to the block size (buffers allocated here are aligned
    /// further, page cache slots only to the block size).
    fn is_aligned(&self, offset: u64, len: usize, ptr: *const u8) -> bool {
        let mask = self.block_size - 1;
        offset & mask == 0
            && len as u64 & mask == 0
            && (!self.direct || (ptr as usize).is_multiple_of(self.block_size as usize))
    }

    fn stripe(&self, block_offset: u64) -> usize {
        ((block_offset / self.block_size) as usize) % self.edge_locks.len()
    }
}
