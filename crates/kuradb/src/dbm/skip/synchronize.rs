//! Synchronization: a build merges the last file (none after a clear) with
//! the pending updates into a new file written beside it, then renames it
//! over the old one and makes it the snapshot readers see.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::MutexGuard;

use super::build::{self, Builder, MemoryRun, OldFile, Run};
use super::pending::Change;
use super::search::Snapshot;
use super::{Reducer, SkipDbm, Tuning};
use crate::error::{Error, Result};
use crate::file::{temp_beside, Durability, File};

impl SkipDbm {
    /// A builder of a file laid out as the tuning says (the options', or
    /// the last rebuild's).
    pub(super) fn file_builder(&self, file: Box<dyn File>) -> Builder {
        let tuning = *self.tuning.read();
        Builder::new(
            file,
            &self.path,
            tuning.step_unit,
            tuning.max_level,
            tuning.offset_width,
            tuning.max_cached_records,
            self.options.file.padding || self.options.file.direct,
        )
    }

    /// Builds a new file from the last one and every update since, each
    /// key's records reduced by `reducer`, and puts it in the old one's
    /// place. With `hard`, the new file is on the device before this returns.
    /// A reducer other than [`Reducer::All`] rebuilds even if nothing is
    /// pending; [`Dbm::synchronize`](crate::dbm::Dbm::synchronize) builds
    /// only if something is, with the options' reducer.
    pub fn synchronize_with(&self, durability: Durability, reducer: &Reducer) -> Result<()> {
        let hard = durability.is_hard();
        if !self.writable {
            return self.snapshot()?.file.synchronize(durability);
        }
        self.build(hard, reducer, *reducer != Reducer::All)
    }

    /// Builds a new file even if nothing changed (`force`): a rebuild.
    pub(super) fn build(&self, hard: bool, reducer: &Reducer, force: bool) -> Result<()> {
        // Reads the whole old file once: a scan to the caches.
        let _scan = crate::caching::ScanScope::enter();
        let building = self.building.lock();
        self.build_holding(&building, hard, reducer, force)
    }

    /// [`build`](Self::build) for a caller that holds the building lock.
    pub(super) fn build_holding(
        &self,
        _building: &MutexGuard<'_, ()>,
        hard: bool,
        reducer: &Reducer,
        force: bool,
    ) -> Result<()> {
        let old = self.snapshot()?;
        let (cleared, spills, mut memory) = {
            let mut pending = self.pending.lock();
            if *reducer != Reducer::All && (force || !pending.is_empty()) {
                self.change(&mut pending, Change::Reduce(reducer))?;
            }
            pending.take()
        };
        if !cleared && spills.is_empty() && memory.is_empty() && !force {
            old.file.synchronize(Durability::from_hard(hard))?;
            if hard && !old.durable.load(Ordering::Acquire) {
                // A soft build renamed this file in place without making the
                // name durable; from now on it is the state a power cut must
                // keep, so the next build has to reach the device before it
                // replaces it.
                crate::sys::sync_parent_dir(&self.path)
                    .map_err(|e| Error::io("synchronizing the directory", &self.path, e))?;
                old.durable.store(true, Ordering::Release);
            }
            return Ok(());
        }
        if !self.options.insert_in_order {
            memory.sort();
        }
        let mut runs: Vec<Run> = spills.iter().cloned().map(Run::Spill).collect();
        runs.push(Run::Memory(memory));
        let temp = temp_beside(&self.path, "build");
        let durable = hard || (old.durable.load(Ordering::Acquire) && old.header.count > 0);
        let base = (!cleared).then_some(&*old);
        let built = self.build_file(base, &runs, reducer, &temp, durable);
        let memory = match runs.pop() {
            Some(Run::Memory(memory)) => memory,
            _ => MemoryRun::default(),
        };
        match built {
            Ok((snapshot, named)) => {
                *self.current.write() = Some(Arc::new(snapshot));
                for path in &spills {
                    let _ = std::fs::remove_file(path);
                }
                named
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                self.pending.lock().restore(cleared, spills, memory);
                Err(e)
            }
        }
    }

    /// Writes a file at `temp` from `old`'s records and `runs`, makes it the
    /// database's file and answers its snapshot. With `durable` the file is
    /// on the device before it takes the old one's name, and the name after;
    /// a failure of that last step still answers the snapshot, as the file
    /// has the name, with the error beside it.
    ///
    /// The new file is open and locked when it takes the name, and stays so
    /// as the database's file: the old one keeps its lock until its last
    /// reader lets it go, and an opener of another process that waited for
    /// that lock finds the path renamed and tries the new file.
    fn build_file(
        &self,
        old: Option<&Snapshot>,
        runs: &[Run],
        reducer: &Reducer,
        temp: &Path,
        durable: bool,
    ) -> Result<(Snapshot, Result<()>)> {
        let mut open = self.options.open.clone();
        open.writable = true;
        open.create = true;
        open.truncate = true;
        let file = self.options.open_file(temp, &open)?;
        let mut builder = self.file_builder(file);
        let source = old.map(|old| OldFile { file: old.file.as_ref(), header: &old.header });
        build::merge(source, runs, reducer, &mut builder)?;
        let (mut file, header, index) = builder.finish()?;
        file.synchronize(Durability::from_hard(durable))?;
        file.rename(&self.path)?;
        let named = match durable {
            true => crate::sys::sync_parent_dir(&self.path)
                .map_err(|e| Error::io("synchronizing the directory", &self.path, e)),
            false => Ok(()),
        };
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let durable = AtomicBool::new(durable && named.is_ok());
        Ok((Snapshot { file, header, index, durable, generation }, named))
    }

    /// Rebuilds the file with the options' step, levels and offset width,
    /// reducing each key's records by `reducer` (every pending update
    /// included).
    pub fn rebuild_with(&self, reducer: &Reducer) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        self.build(false, reducer, true)
    }

    /// Rebuilds the file as [`rebuild_with`](Self::rebuild_with) does, laid
    /// out by `tuning`, which later builds keep; a failed rebuild keeps the
    /// tuning it had.
    pub(super) fn rebuild_tuned(&self, reducer: &Reducer, tuning: Tuning) -> Result<()> {
        self.owner.check(&self.path)?;
        if !self.writable {
            return Err(self.read_only());
        }
        let _scan = crate::caching::ScanScope::enter();
        let building = self.building.lock();
        let before = std::mem::replace(&mut *self.tuning.write(), tuning);
        let built = self.build_holding(&building, false, reducer, true);
        if built.is_err() {
            *self.tuning.write() = before;
        }
        built
    }
}
