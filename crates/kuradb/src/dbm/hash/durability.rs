//! Durability and epochs: synchronizing, marking replaced records void once
//! what replaced them is durable, advancing the epoch, padding, the header's
//! state half, closing and copying the file.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::free_pool::REUSABLE;
use super::header::{self, Kind};
use super::record::{self, Record};
use super::state::State;
use crate::dbm::Durability;
use crate::error::Result;

impl State {
    /// Writes the void marks of `marks`. On failure every record not yet
    /// marked, and every one of `later`, is doomed again for the next try.
    fn mark_void(&self, marks: &[(u64, u64)], later: &[(u64, u64)]) -> Result<()> {
        for (i, &(offset, _)) in marks.iter().enumerate() {
            if let Err(e) = self.file.write(offset, &[record::MAGIC_VOID]) {
                let mut free = self.free.lock();
                free.doom_again(&marks[i..]);
                free.doom_again(later);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Makes everything written durable, then every doomed record's void mark,
    /// so that a crash at any moment leaves a file a restore reads right; the
    /// current epoch is synchronized from then on.
    ///
    /// A tree's restore goes back to the epoch its header names and needs
    /// every version that epoch used, so a tree's store marks in two steps:
    /// versions replaced within this epoch first, then the header names this
    /// epoch, and only then are versions of older epochs marked. A crash
    /// before the header is durable restores the previous epoch whole; one
    /// after it restores this one, where a key removed in it stays removed:
    /// its removal is a void version of this epoch (see `State::put_removal`),
    /// which beats the older versions not yet marked.
    fn make_durable(&self) -> Result<()> {
        self.file.synchronize(Durability::Hard)?;
        let doomed = self.free.lock().take_doomed();
        let epoch = self.epoch.load(Ordering::Acquire);
        if self.kind == Kind::TreeNodes {
            let (current, older): (Vec<_>, Vec<_>) =
                doomed.iter().partition(|(_, size)| size & REUSABLE != 0);
            self.mark_void(&current, &older)?;
            self.file.synchronize(Durability::Hard)?;
            self.synced_epoch.store(epoch, Ordering::Release);
            self.write_header(true)?;
            self.file.synchronize(Durability::Hard)?;
            self.mark_void(&older, &[])?;
        } else {
            self.mark_void(&doomed, &[])?;
        }
        self.file.synchronize(Durability::Hard)?;
        self.synced_epoch.store(epoch, Ordering::Release);
        if !self.appending {
            let mut free = self.free.lock();
            // Size 0: not kept, as the pool would not take it.
            for (offset, size) in doomed {
                if size & REUSABLE == 0 && size > 0 {
                    free.put(offset, size);
                }
            }
        }
        Ok(())
    }

    /// Writes the header; `open` says whether the file stays open for writing.
    pub(super) fn write_header(&self, open: bool) -> Result<()> {
        self.file.write(header::SIZE as u64 / 2, &self.header(open).encode_state())
    }

    /// Copies the file to `dest` as a cleanly closed database. The caller
    /// keeps every other operation out.
    pub(super) fn copy_file(&self, dest: &Path, hard: bool) -> Result<()> {
        if self.writable {
            // Every replaced version marked void first, so the copy holds one
            // live version of each key even for a restore.
            self.synchronize(Durability::Hard)?;
        }
        crate::dbm::copy_file_to(self.file.as_ref(), dest, hard, |at, buf| {
            if at == 0 {
                // The copy is closed cleanly whatever this file's state says.
                let clean = self.header(false).encode_state();
                buf[header::SIZE / 2..header::SIZE].copy_from_slice(&clean);
            }
        })
    }

    /// Pads the file to a whole number of blocks with a filler record, where the
    /// file asks for padding; the filler is reused by nothing and skipped by restores.
    fn pad(&self) -> Result<()> {
        let block = self.file.block_size();
        let size = self.file.size();
        if !self.padding || block <= 1 || size.is_multiple_of(block) {
            return Ok(());
        }
        let mut gap = block - size % block;
        let align = 1u64 << self.align_pow;
        let least = record::size_for(self.width, align, 0, 0);
        while gap < least {
            gap += block;
        }
        let mut buf = Vec::new();
        record::encode(
            &mut buf,
            self.width,
            self.align_pow,
            &Record { live: false, next: 0, epoch: 0, key: b"", value: b"", size: gap },
        );
        buf[0] = record::MAGIC_PAD;
        // Reserved first, like a record (see `State::put`): a filler torn
        // by a short write still ends where the next record begins.
        let offset = self.file.expand(gap)?;
        self.file.write(offset, &buf)
    }

    pub(super) fn synchronize(&self, durability: Durability) -> Result<()> {
        if self.writable {
            // Nothing torn may be made durable or marked clean, nor any
            // older version it needs voided.
            self.check_untorn()?;
            // A soft synchronization leaves the cached bucket array in memory:
            // no other process reads the file while this writer holds its lock,
            // and a crash is repaired from the records alone.
            if durability.is_hard() {
                self.flush_buckets()?;
            }
            self.pad()?;
            self.write_header(true)?;
        }
        if !durability.is_hard() || !self.writable {
            return self.file.synchronize(durability);
        }
        self.make_durable()?;
        if self.kind == Kind::Hash {
            // The header names the epoch just made durable, for a restore
            // to the last synchronization (a tree's store wrote it in
            // `make_durable`). Not waited for: after a power cut that lost
            // it, such a restore goes back to the synchronization before.
            self.write_header(true)?;
        }
        // Records written from now on may be torn by a crash; older ones may not.
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Writes everything back, marks the file closed cleanly and closes it.
    pub(super) fn close(mut self) -> Result<()> {
        if let Err(e) = self.check_untorn() {
            return self.abandon().and(Err(e));
        }
        let mut result = Ok(());
        if self.writable {
            // The data must be durable before the header says the file is clean.
            result = self
                .flush_buckets()
                .and_then(|_| self.pad())
                .and_then(|_| self.make_durable())
                .and_then(|_| self.write_header(false))
                .and_then(|_| self.file.synchronize(Durability::Hard));
        }
        let closed = self.file.close();
        let origin_closed = self.origin.as_mut().map_or(Ok(()), |origin| origin.close());
        result.and(closed).and(origin_closed)
    }

    /// Closes the file as a crash would: nothing more is written, so the
    /// header still says the file is open and the next writer restores it.
    /// For a store whose caller could not write a consistent state.
    pub(super) fn abandon(mut self) -> Result<()> {
        let closed = self.file.close();
        let origin_closed = self.origin.as_mut().map_or(Ok(()), |origin| origin.close());
        closed.and(origin_closed)
    }
}
