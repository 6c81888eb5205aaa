//! The updates waiting for the next synchronization: a run in memory, in
//! arrival order, sorted and spilled to a temporary file whenever it passes
//! `sort_mem_size`.

use std::path::PathBuf;

use super::build::{self, MemoryRun};
use super::SkipDbm;
use crate::dbm::{show_key, Action};
use crate::error::{Error, ErrorKind, Result};
use crate::file::temp_beside;

/// Updates since the last synchronization.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) spills: Vec<PathBuf>,
    pub(super) memory: MemoryRun,
    /// Names the next spill file.
    next_spill: u64,
}

/// Spills beyond this many are merged into one before the next is written.
pub(super) const MAX_SPILLS: usize = 32;

impl SkipDbm {
    /// Queues an update: a record (`Some`) or the removal of `key`'s records.
    pub(super) fn queue(&self, pending: &mut Pending, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
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
        if pending.memory.memory() >= self.options.sort_mem_size {
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

    /// Builds a new file from the last one and every update since, each
    /// key's records reduced by `reducer`, and puts it in the old one's
    /// place. With `hard`, the new file is on the device before this returns.
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
            Action::Remove => self.queue(pending, key, None),
            Action::Set(value) => {
                // Replaces the key's records: they go, then the new one comes.
                self.queue(pending, key, None)?;
                self.queue(pending, key, Some(&value))
            }
        }
    }
}
