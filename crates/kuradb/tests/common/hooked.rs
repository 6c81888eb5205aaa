//! A file that passes every call on to the file it wraps, after showing each
//! read (and prefetch hint) to a hook: tests count the reads a database makes, fail chosen ones,
//! or hold one open while other threads go on.

use std::path::Path;
use std::sync::Arc;

use kuradb::file::{File, LockMode, ReadRequest};
use kuradb::Result;

/// What a test does before each read reaches the wrapped file. An error
/// fails the read (or the whole batch) without reaching the file.
pub trait ReadHook: Send + Sync {
    /// Before a single read of `len` bytes at `offset`.
    fn read(&self, _offset: u64, _len: usize) -> Result<()> {
        Ok(())
    }

    /// Before a batch of reads.
    fn read_many(&self, _reads: &[ReadRequest<'_>]) -> Result<()> {
        Ok(())
    }

    /// Before a prefetch hint of `len` bytes at `offset`.
    fn prefetch(&self, _offset: u64, _len: usize) {}
}

/// `inner` with `hook` shown every read.
pub struct HookedFile<H> {
    pub inner: Box<dyn File>,
    pub hook: Arc<H>,
}

impl<H: ReadHook> HookedFile<H> {
    pub fn new(inner: Box<dyn File>, hook: Arc<H>) -> HookedFile<H> {
        HookedFile { inner, hook }
    }
}

impl<H: ReadHook> File for HookedFile<H> {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.hook.read(offset, buf.len())?;
        self.inner.read(offset, buf)
    }
    fn read_many(&self, reads: &mut [ReadRequest<'_>]) -> Result<()> {
        self.hook.read_many(reads)?;
        self.inner.read_many(reads)
    }
    fn prefetch(&self, offset: u64, len: usize) -> bool {
        self.hook.prefetch(offset, len);
        self.inner.prefetch(offset, len)
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.inner.write(offset, data)
    }
    fn append(&self, data: &[u8]) -> Result<u64> {
        self.inner.append(data)
    }
    fn expand(&self, increment: u64) -> Result<u64> {
        self.inner.expand(increment)
    }
    fn truncate(&self, size: u64) -> Result<()> {
        self.inner.truncate(size)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn synchronize(&self, durability: kuradb::dbm::Durability) -> Result<()> {
        self.inner.synchronize(durability)
    }
    fn lock(&self, mode: LockMode) -> Result<()> {
        self.inner.lock(mode)
    }
    fn try_lock(&self, mode: LockMode) -> Result<()> {
        self.inner.try_lock(mode)
    }
    fn unlock(&self) -> Result<()> {
        self.inner.unlock()
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn rename(&mut self, to: &Path) -> Result<()> {
        self.inner.rename(to)
    }
    fn is_writable(&self) -> bool {
        self.inner.is_writable()
    }
    fn is_atomic(&self) -> bool {
        self.inner.is_atomic()
    }
    fn block_size(&self) -> u64 {
        self.inner.block_size()
    }
    fn inspect(&self) -> Vec<(String, String)> {
        self.inner.inspect()
    }
    fn close(&mut self) -> Result<()> {
        self.inner.close()
    }
}
