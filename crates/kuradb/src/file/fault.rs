//! A file that fails on command, for tests of what lies above the file layer.
//!
//! [`FaultFile`] wraps any [`File`] and passes every call through, except that
//! its [`FaultControl`] can make the N-th operation fail with EIO or ENOSPC, or
//! be a short write that stores only the first half of its data before
//! failing with ENOSPC (once or from then on; an injected failure of a hard
//! synchronization makes the handle refuse later writes, as a real file does),
//! and can simulate a power cut: everything written since the
//! last successful hard synchronization is undone, as if the device had never
//! received it, and the handle then fails every call as a dead process would.

use super::Durability;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::{File, LockMode, ReadRequest};
use crate::error::{Error, ErrorKind, Result};

/// The error an injected fault produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// EIO: the device failed.
    Io,
    /// ENOSPC: the device is full.
    NoSpace,
    /// A write or append that stores the first half of its data (rounded
    /// down) and then fails with ENOSPC, as a device that fills part-way
    /// through does. Other operations fail with ENOSPC and store nothing.
    ShortWrite,
}

impl FaultKind {
    fn errno(self) -> i32 {
        match self {
            FaultKind::Io => libc::EIO,
            FaultKind::NoSpace | FaultKind::ShortWrite => libc::ENOSPC,
        }
    }
}

/// Why [`FaultFile::enter`] refused an operation: the error to answer, and
/// whether it is an injected short write (which stores part of its data first).
struct Refused {
    error: Error,
    short: bool,
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Error {
        refused.error
    }
}

/// What an operation does, for counting and refusing it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    /// Changes data or size: refused after a failed hard synchronization.
    Change,
    Sync,
}

#[derive(Clone, Copy)]
enum Counter {
    Operations,
    Writes,
}

#[derive(Clone, Copy)]
struct Rule {
    counter: Counter,
    /// The counter's value at which the fault fires.
    at: u64,
    persistent: bool,
    kind: FaultKind,
}

#[derive(Default)]
struct Counts {
    operations: u64,
    writes: u64,
    rule: Option<Rule>,
    cut: bool,
    /// The hard synchronization, by the count of them, that is torn by a
    /// power cut instead of done, with the seed that picks what survives.
    tear: Option<Tear>,
    hard_syncs: u64,
    /// How many injected faults have fired.
    fired: u64,
    /// An injected failure hit a hard synchronization: writes are refused.
    poisoned: bool,
}

/// A hard synchronization armed to be torn by a power cut.
#[derive(Clone, Copy)]
struct Tear {
    at: u64,
    seed: u64,
}

/// A change since the last hard synchronization, as what undoes it (and,
/// for a write, what it wrote).
enum Undo {
    Bytes { offset: u64, old: Vec<u8>, new: Vec<u8> },
    Size(u64),
}

/// The handle a test keeps to steer a [`FaultFile`] it handed to a database.
pub struct FaultControl {
    counts: Mutex<Counts>,
    inner: RwLock<Box<dyn File>>,
    /// Changes since the last hard synchronization, oldest first. Its lock also
    /// serialises changes, so each entry describes the state its change met.
    undo: Mutex<Vec<Undo>>,
}

/// A [`File`] wrapper that injects faults as its [`FaultControl`] says.
///
/// ```
/// use kuradb::file::{FaultFile, FaultKind, File, FileSpec, OpenOptions};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let inner = FileSpec::default().open(dir.path().join("f"), &OpenOptions::writer())?;
/// let file = FaultFile::new(inner);
/// let control = file.control();
/// control.fail_nth_write(2, FaultKind::NoSpace);
/// file.append(b"first")?;
/// let err = file.append(b"second").unwrap_err();
/// assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
/// file.append(b"third")?;
/// assert_eq!(file.size(), 10);
/// # Ok(())
/// # }
/// ```
pub struct FaultFile {
    control: Arc<FaultControl>,
    path: PathBuf,
}

impl FaultFile {
    /// Wraps `inner`; no fault is armed.
    pub fn new(inner: Box<dyn File>) -> FaultFile {
        FaultFile {
            path: inner.path().to_path_buf(),
            control: Arc::new(FaultControl {
                counts: Mutex::new(Counts::default()),
                inner: RwLock::new(inner),
                undo: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The control of this file, to keep after handing the file away.
    pub fn control(&self) -> Arc<FaultControl> {
        Arc::clone(&self.control)
    }

    /// Counts one operation and answers the injected error if it is due.
    fn enter(&self, op: Op, what: impl fmt::Display) -> std::result::Result<(), Refused> {
        let write = op != Op::Read;
        let mut counts = self.control.counts.lock();
        let refused = |error| Refused { error, short: false };
        if counts.cut {
            return Err(refused(Error::new(
                ErrorKind::System,
                format!("{what} of {}: the power was cut (simulated)", self.path.display()),
            )));
        }
        if op == Op::Change && counts.poisoned {
            return Err(refused(Error::new(
                ErrorKind::Infeasible,
                format!(
                    "{what} of {} refused: a hard synchronization failed, so what the device holds \
                     is unknown; reopen the file",
                    self.path.display()
                ),
            )));
        }
        counts.operations += 1;
        if write {
            counts.writes += 1;
        }
        let Some(rule) = counts.rule else { return Ok(()) };
        let value = match rule.counter {
            Counter::Operations => counts.operations,
            Counter::Writes if write => counts.writes,
            Counter::Writes => return Ok(()),
        };
        let due = if rule.persistent { value >= rule.at } else { value == rule.at };
        if !due {
            return Ok(());
        }
        if !rule.persistent {
            counts.rule = None;
        }
        counts.fired += 1;
        drop(counts);
        let cause = io::Error::from_raw_os_error(rule.kind.errno());
        let error = Error::io(format_args!("{what} (injected fault)"), &self.path, cause);
        Err(Refused { error, short: rule.kind == FaultKind::ShortWrite })
    }

    /// Enters a write of `data`: answers the part of it to store, and the
    /// error to answer after storing it if the write is an injected short one.
    fn stored<'d>(&self, data: &'d [u8], what: String) -> Result<(&'d [u8], Option<Error>)> {
        match self.enter(Op::Change, &what) {
            Ok(()) => Ok((data, None)),
            Err(Refused { short: true, .. }) => {
                let (kept, len) = (data.len() / 2, data.len());
                let cause = io::Error::from_raw_os_error(libc::ENOSPC);
                let what = format!("{what} (injected short write: {kept} of {len} bytes stored)");
                Ok((&data[..kept], Some(Error::io(what, &self.path, cause))))
            }
            Err(refused) => Err(refused.into()),
        }
    }
}

impl FaultControl {
    fn arm(&self, counter: Counter, n: u64, persistent: bool, kind: FaultKind) {
        let mut counts = self.counts.lock();
        let base = match counter {
            Counter::Operations => counts.operations,
            Counter::Writes => counts.writes,
        };
        counts.rule = Some(Rule { counter, at: base + n.max(1), persistent, kind });
    }

    /// Makes the `n`-th operation from now (1: the next) of any kind fail once.
    /// Operations are read, write, append, expand, truncate and synchronize.
    pub fn fail_nth_operation(&self, n: u64, kind: FaultKind) {
        self.arm(Counter::Operations, n, false, kind);
    }

    /// Makes the `n`-th changing operation from now (write, append, expand,
    /// truncate, synchronize) fail once.
    pub fn fail_nth_write(&self, n: u64, kind: FaultKind) {
        self.arm(Counter::Writes, n, false, kind);
    }

    /// Makes the `n`-th changing operation from now and every later one fail,
    /// until [`FaultControl::heal`].
    pub fn fail_writes_from(&self, n: u64, kind: FaultKind) {
        self.arm(Counter::Writes, n, true, kind);
    }

    /// Disarms any fault, and forgets a failed hard synchronization, so the
    /// file takes writes again.
    pub fn heal(&self) {
        let mut counts = self.counts.lock();
        counts.rule = None;
        counts.poisoned = false;
    }

    /// How many operations have been attempted (including failed ones).
    pub fn operations(&self) -> u64 {
        self.counts.lock().operations
    }

    /// How many changing operations have been attempted (including failed
    /// ones): what [`FaultControl::fail_nth_write`] counts.
    pub fn writes(&self) -> u64 {
        self.counts.lock().writes
    }

    /// How many hard synchronizations have reached the wrapped file (one
    /// an injected fault refused does not count).
    pub fn hard_syncs(&self) -> u64 {
        self.counts.lock().hard_syncs
    }

    /// How many injected faults have fired (refusals after a power cut or a
    /// failed hard synchronization do not count).
    pub fn fired(&self) -> u64 {
        self.counts.lock().fired
    }

    /// The path of the file now: the one it was opened with, or last
    /// renamed to (a rebuilt database file is opened beside the database,
    /// then renamed over it).
    pub fn path(&self) -> PathBuf {
        self.inner.read().path().to_path_buf()
    }

    /// Undoes everything changed since the last successful hard
    /// synchronization, then makes every later call fail. Closing the
    /// [`FaultFile`] still closes the wrapped file, so the test can reopen its
    /// path and see what a power cut would have left.
    pub fn power_cut(&self) -> Result<()> {
        let inner = self.inner.write();
        let mut undo = self.undo.lock();
        self.counts.lock().cut = true;
        for change in undo.drain(..).rev() {
            match change {
                Undo::Bytes { offset, old, .. } => inner.write(offset, &old)?,
                Undo::Size(size) => inner.truncate(size)?,
            }
        }
        Ok(())
    }

    /// Cuts the power in the middle of a hard synchronization: of the writes
    /// made since the last successful one, each reached the device whole or
    /// not at all, as `seed` picks, in any order (a later write over the
    /// same bytes wins where both did); the file's size is the new one, and
    /// what appends added reads as zeros. Then
    /// every later call fails, as after [`FaultControl::power_cut`]. What a
    /// database writes before one hard synchronization must survive any
    /// such mix: this is the test of the order it makes things durable in.
    /// (A write torn inside, part of its sectors on the device, is another
    /// matter: a record's checksum is what finds that.)
    pub fn power_cut_torn(&self, seed: u64) -> Result<()> {
        let inner = self.inner.write();
        let mut undo = self.undo.lock();
        self.counts.lock().cut = true;
        let new_size = inner.size();
        let changes: Vec<Undo> = undo.drain(..).collect();
        for change in changes.iter().rev() {
            match change {
                Undo::Bytes { offset, old, .. } => inner.write(*offset, old)?,
                Undo::Size(size) => inner.truncate(*size)?,
            }
        }
        inner.truncate(new_size)?;
        let mut state = seed;
        for change in &changes {
            if let Undo::Bytes { offset, new, .. } = change {
                if !new.is_empty() && splitmix(&mut state) & 1 == 1 {
                    inner.write(*offset, new)?;
                }
            }
        }
        Ok(())
    }

    /// Arms the `n`-th hard synchronization from now (1 for the next) to be
    /// torn by [`FaultControl::power_cut_torn`] with `seed` instead of done:
    /// it fails, and so does every later call.
    pub fn tear_nth_hard_sync(&self, n: u64, seed: u64) {
        let mut counts = self.counts.lock();
        counts.tear = Some(Tear { at: counts.hard_syncs + n.max(1), seed });
    }

    /// Makes every later call fail, keeping everything written since the
    /// last hard synchronization: the power cut that comes after the OS
    /// wrote every dirty page back, which it may do at any moment. A
    /// database must survive this one as well as [`FaultControl::power_cut`].
    pub fn power_cut_after_writeback(&self) {
        let _inner = self.inner.write();
        self.undo.lock().clear();
        self.counts.lock().cut = true;
    }
}

/// The next of a splitmix64 sequence: enough to pick writes reproducibly.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl File for FaultFile {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.enter(Op::Read, format_args!("read of {} bytes at offset {offset}", buf.len()))?;
        self.control.inner.read().read(offset, buf)
    }

    /// Each request counts as one read operation, as if read one by one, so
    /// that a fault sweep reaches each; the batch then goes to the inner
    /// file whole, unless a request's fault fired.
    fn read_many(&self, reads: &mut [ReadRequest<'_>]) -> Result<()> {
        for read in reads.iter() {
            let what = format_args!(
                "read of {} bytes at offset {} (in a batch of {})",
                read.buf.len(),
                read.offset,
                reads.len()
            );
            self.enter(Op::Read, what)?;
        }
        self.control.inner.read().read_many(reads)
    }

    /// A hint is no operation a fault can fail: passed on as it is.
    fn prefetch(&self, offset: u64, len: usize) -> bool {
        self.control.inner.read().prefetch(offset, len)
    }

    fn prepare_writes(&self, from: u64, end: u64) -> Result<()> {
        self.control.inner.read().prepare_writes(from, end)
    }

    fn unmap_pages(&self) -> Result<()> {
        self.control.inner.read().unmap_pages()
    }

    fn write_back(&self) -> Result<()> {
        self.control.inner.read().write_back()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let what = format!("write of {} bytes at offset {offset}", data.len());
        let (stored, short) = self.stored(data, what)?;
        let inner = self.control.inner.read();
        let mut undo = self.control.undo.lock();
        let size = inner.size();
        let kept = size.min(offset.saturating_add(stored.len() as u64)).saturating_sub(offset.min(size));
        let mut old = vec![0u8; kept as usize];
        inner.read(offset.min(size), &mut old)?;
        inner.write(offset, stored)?;
        undo.push(Undo::Size(size));
        undo.push(Undo::Bytes { offset, old, new: stored.to_vec() });
        short.map_or(Ok(()), Err)
    }

    fn append(&self, data: &[u8]) -> Result<u64> {
        let (stored, short) = self.stored(data, format!("append of {} bytes", data.len()))?;
        let inner = self.control.inner.read();
        let mut undo = self.control.undo.lock();
        let size = inner.size();
        let offset = inner.append(stored)?;
        undo.push(Undo::Size(size));
        short.map_or(Ok(offset), Err)
    }

    fn expand(&self, increment: u64) -> Result<u64> {
        self.enter(Op::Change, format_args!("expansion by {increment} bytes"))?;
        let inner = self.control.inner.read();
        let mut undo = self.control.undo.lock();
        let old = inner.expand(increment)?;
        undo.push(Undo::Size(old));
        Ok(old)
    }

    fn truncate(&self, size: u64) -> Result<()> {
        self.enter(Op::Change, format_args!("truncation to {size} bytes"))?;
        let inner = self.control.inner.read();
        let mut undo = self.control.undo.lock();
        let old_size = inner.size();
        if size < old_size {
            let mut cut = vec![0u8; (old_size - size) as usize];
            inner.read(size, &mut cut)?;
            inner.truncate(size)?;
            undo.push(Undo::Bytes { offset: size, old: cut, new: Vec::new() });
        } else {
            inner.truncate(size)?;
        }
        undo.push(Undo::Size(old_size));
        Ok(())
    }

    fn size(&self) -> u64 {
        self.control.inner.read().size()
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        let entered = self
            .enter(
                Op::Sync,
                format_args!("{} synchronization", if durability.is_hard() { "hard" } else { "soft" }),
            )
            .map_err(Error::from);
        if let (Err(_), true) = (&entered, durability.is_hard()) {
            // As a real file does: what the device holds is now unknown.
            self.control.counts.lock().poisoned = true;
        }
        entered?;
        if durability.is_hard() {
            let mut counts = self.control.counts.lock();
            counts.hard_syncs += 1;
            if let Some(tear) = counts.tear.filter(|t| t.at == counts.hard_syncs) {
                counts.tear = None;
                counts.fired += 1;
                drop(counts);
                self.control.power_cut_torn(tear.seed)?;
                return Err(Error::new(
                    ErrorKind::System,
                    format!(
                        "hard synchronization of {}: the power was cut during it (simulated)",
                        self.path.display()
                    ),
                ));
            }
        }
        let inner = self.control.inner.read();
        let mut undo = self.control.undo.lock();
        inner.synchronize(durability)?;
        if durability.is_hard() {
            undo.clear();
        }
        Ok(())
    }

    fn lock(&self, mode: LockMode) -> Result<()> {
        self.control.inner.read().lock(mode)
    }

    fn try_lock(&self, mode: LockMode) -> Result<()> {
        self.control.inner.read().try_lock(mode)
    }

    fn unlock(&self) -> Result<()> {
        self.control.inner.read().unlock()
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Not a fault point (a rename changes the directory, not the file's
    /// bytes, which is all a power cut here undoes), but refused after a cut.
    fn rename(&mut self, to: &Path) -> Result<()> {
        if self.control.counts.lock().cut {
            return Err(Error::new(
                ErrorKind::System,
                format!("rename of {}: the power was cut (simulated)", self.path.display()),
            ));
        }
        self.control.inner.write().rename(to)?;
        self.path = to.to_path_buf();
        Ok(())
    }

    fn is_writable(&self) -> bool {
        self.control.inner.read().is_writable()
    }

    fn is_atomic(&self) -> bool {
        self.control.inner.read().is_atomic()
    }

    fn block_size(&self) -> u64 {
        self.control.inner.read().block_size()
    }

    fn inspect(&self) -> Vec<(String, String)> {
        let mut out = self.control.inner.read().inspect();
        out.push(("fault_operations".into(), self.control.operations().to_string()));
        out
    }

    fn close(&mut self) -> Result<()> {
        self.control.inner.write().close()
    }
}
