//! The changes waiting for the next synchronization, and [`SkipDbm::change`],
//! the one way in for every change: updates queue in a run in memory, in
//! arrival order, sorted and spilled to a temporary file whenever it passes
//! `sort_mem_size`; a clear forgets them and the built file alike.

use std::path::PathBuf;

use super::build::{self, MemoryRun};
use super::value::encode_value;
use super::{Reducer, SkipDbm};
use crate::dbm::{show_key, Action};
use crate::error::{Error, ErrorKind, Result};
use crate::file::temp_beside;

/// A change to the records, as [`SkipDbm::change`] takes it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Change<'a> {
    /// Adds a record beside the key's others.
    Add { key: &'a [u8], value: &'a [u8] },
    /// Removes every record of the key.
    Remove { key: &'a [u8] },
    /// Removes every record, built or queued.
    Clear,
    /// Reduces each key's records, built or queued, by a reducer other than
    /// [`Reducer::All`] (which changes nothing).
    Reduce(&'a Reducer),
}

/// Changes since the last synchronization.
#[derive(Default)]
pub(super) struct Pending {
    /// Whether a clear came since the last build: the next starts from no
    /// file. The updates queued before it are gone.
    cleared: bool,
    pub(super) spills: Vec<PathBuf>,
    pub(super) memory: MemoryRun,
    /// Names the next spill file.
    next_spill: u64,
}

impl Pending {
    /// Whether a build would change nothing.
    pub(super) fn is_empty(&self) -> bool {
        !self.cleared && self.memory.is_empty() && self.spills.is_empty()
    }

    /// Takes every change for a build: whether it starts from no file, the
    /// spills, oldest first, and the memory run.
    pub(super) fn take(&mut self) -> (bool, Vec<PathBuf>, MemoryRun) {
        (
            std::mem::take(&mut self.cleared),
            std::mem::take(&mut self.spills),
            std::mem::take(&mut self.memory),
        )
    }

    /// Gives back the changes of a build that failed, to wait for the next,
    /// before any that came since. No clear came since: a clear holds the
    /// building lock, as the failed build did.
    pub(super) fn restore(&mut self, cleared: bool, spills: Vec<PathBuf>, memory: MemoryRun) {
        self.cleared = cleared;
        let newer = std::mem::replace(&mut self.memory, memory);
        self.memory.append(newer);
        let newer_spills = std::mem::replace(&mut self.spills, spills);
        self.spills.extend(newer_spills);
    }

    fn clear(&mut self) {
        self.cleared = true;
        self.memory = MemoryRun::default();
        for path in self.spills.drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Spills beyond this many are merged into one before the next is written.
pub(super) const MAX_SPILLS: usize = 32;

impl SkipDbm {
    /// Makes a change: every change to the records comes here, under the
    /// lock of the pending changes, in the order the database applies them
    /// (see the module header of `skip`). Updates queue for the next build;
    /// a clear forgets the queue and has the next build start from no file;
    /// a reduction is reported by the build that carries it out, just
    /// before it takes the changes queued so far.
    pub(super) fn change(&self, pending: &mut Pending, change: Change<'_>) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        match change {
            Change::Add { key, value } => self.queue(pending, key, Some(encode_value(value))),
            Change::Remove { key } => self.queue(pending, key, None),
            Change::Clear => {
                pending.clear();
                Ok(())
            }
            Change::Reduce(reducer) => {
                // The build that reports it carries it out; `All` would
                // change nothing, and is not reported.
                debug_assert!(*reducer != Reducer::All, "Reducer::All reported as a change");
                Ok(())
            }
        }
    }

    /// Queues an update: a record (`Some`) or the removal of `key`'s records.
    fn queue(&self, pending: &mut Pending, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if key.len() > build::MAX_ITEM || value.is_some_and(|v| v.len() > build::MAX_ITEM) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the record of {} is too large: keys and values take at most 4 GiB - 2 bytes",
                    show_key(key)
                ),
            ));
        }
        if self.options.insert_in_order {
            if let Some(last) = pending.memory.last_key() {
                if key < last {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "insert_in_order is set but {} comes after {}",
                            show_key(key),
                            show_key(last)
                        ),
                    ));
                }
            }
        }
        pending.memory.push(key, value);
        if pending.memory.memory() >= self.tuning.read().sort_mem_size {
            self.spill(pending)?;
        }
        Ok(())
    }

    /// Sorts the memory run and writes it to a temporary file.
    fn spill(&self, pending: &mut Pending) -> Result<()> {
        if pending.spills.len() >= MAX_SPILLS {
            let path = self.spill_path(pending.next_spill);
            pending.next_spill += 1;
            build::combine_spills(&pending.spills, &path)?;
            for old in std::mem::replace(&mut pending.spills, vec![path]) {
                let _ = std::fs::remove_file(old);
            }
        }
        let mut memory = std::mem::take(&mut pending.memory);
        if !self.options.insert_in_order {
            memory.sort();
        }
        let path = self.spill_path(pending.next_spill);
        pending.next_spill += 1;
        if let Err(e) = memory.spill(&path) {
            let _ = std::fs::remove_file(&path);
            pending.memory = memory;
            return Err(e);
        }
        pending.spills.push(path);
        Ok(())
    }

    fn spill_path(&self, n: u64) -> PathBuf {
        temp_beside(&self.path, &format!("spill-{n}"))
    }

    /// Carries out a processor's answer for `key` as updates; `pending` is
    /// `None` for a read-only process, which may answer only [`Action::Keep`].
    pub(super) fn answer(&self, pending: Option<&mut Pending>, key: &[u8], action: Action<'_>) -> Result<()> {
        let Some(pending) = pending else {
            if action == Action::Keep {
                return Ok(());
            }
            return Err(Error::new(ErrorKind::InvalidArgument, "a read-only process answered a change"));
        };
        match action {
            Action::Keep => Ok(()),
            Action::Remove => self.change(pending, Change::Remove { key }),
            Action::Set(value) => {
                // Replaces the key's records: they go, then the new one comes.
                self.change(pending, Change::Remove { key })?;
                self.change(pending, Change::Add { key, value: &value })
            }
        }
    }
}
