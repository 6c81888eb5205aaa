//! Durability and epochs: synchronizing, marking replaced records void once
//! what replaced them is durable, advancing the epoch, padding, the header's
//! state half, closing and copying the file.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::free_pool::{REMOVED, REUSABLE};
use super::header::{self, Kind};
use super::record::{self, Record};
use super::state::State;
use crate::dbm::Durability;
use crate::error::{Error, Result};

impl State {
    /// Writes the void marks of `marks`, answering how many it wrote before
    /// a write failed, with the error.
    ///
    /// A void version outranks its key's versions of older epochs at a
    /// restore: it is a removal. A version of the current epoch that was
    /// replaced is not one: if what replaced it is lost in a crash, the
    /// older version must win. So it is marked as padding, which a restore
    /// skips, except in a hash file in appending mode, whose restore to an
    /// earlier point reads a void version with a value as what the key held
    /// there.
    fn mark_void(&self, marks: &[(u64, u64)]) -> std::result::Result<(), (usize, Error)> {
        let history = self.appending && self.kind == Kind::Hash;
        for (i, &(offset, size)) in marks.iter().enumerate() {
            let replaced_now = size & REUSABLE != 0 && size & REMOVED == 0;
            let mark = if replaced_now && !history { record::MAGIC_PAD } else { record::MAGIC_VOID };
            self.file.write(offset, &[mark]).map_err(|e| (i, e))?;
        }
        Ok(())
    }

    /// Writes the void marks of `marks` before a device sync; on failure every
    /// one not yet written, and every one of `later`, is doomed again for the
    /// next try.
    fn mark_void_now(&self, marks: &[(u64, u64)], later: &[(u64, u64)]) -> Result<()> {
        self.mark_void(marks).map_err(|(i, e)| {
            let mut free = self.free.lock();
            free.doom_again(&marks[i..]);
            free.doom_again(later);
            e
        })
    }

    /// Writes the void marks of `marks`, records whose replacement (for a
    /// tree: the header naming the epoch that replaced them) a device sync
    /// just made durable, and keeps them settling: the next hard
    /// synchronization makes the marks durable and frees their space. A mark
    /// that fails is written again by that synchronization, before anything
    /// else.
    fn mark_void_after(&self, marks: &[(u64, u64)]) -> Result<()> {
        let result = self.mark_void(marks);
        self.free.lock().settle(marks, result.is_err());
        result.map_err(|(_, e)| e)
    }

    /// Makes everything written durable with one device sync (two for a
    /// tree's node store before version 5, and for a hash database in the
    /// case below), so that a crash at any moment leaves a file a restore
    /// reads right; the current epoch is synchronized from then on.
    ///
    /// What a restore needs is the order things reach the device, which one
    /// sync does not give among the writes it covers: so a void mark that
    /// must come after something is written after the sync that makes that
    /// durable, and is made durable by the next (its record's space is
    /// reused only then).
    /// - A version replaced within this epoch was never promised: its mark
    ///   goes before the sync.
    /// - A hash database's version of an earlier epoch that was replaced is
    ///   marked after the sync: marked sooner, a crash could leave neither
    ///   version. Left live until the next sync, it loses to its
    ///   replacement, whose epoch is later.
    /// - One that was removed is marked before the sync, which makes the
    ///   removal durable. But where a removed record had itself replaced
    ///   one whose mark is deferred (a replacement of this epoch, or of the
    ///   epoch just before while that one's marks settle), nothing newer
    ///   stands in front of the replaced version: its mark must be durable
    ///   before, or with, the removal's, never after, or a crash could bring
    ///   it back. Such a synchronization is ordered
    ///   (`FreePool::take_ordering`): one device sync makes the data and the
    ///   settling marks durable, then every mark of the epoch is written,
    ///   and a second sync makes them durable.
    /// - A tree's restore goes back to a whole epoch and needs every version
    ///   that epoch used, so a tree's versions of earlier epochs are marked
    ///   only after the sync that makes this epoch restorable; a removal is
    ///   a void version of this epoch (see `State::put_removal`), which beats
    ///   the older versions not yet marked. A node store of version 5 marks
    ///   only removed versions: a replaced one loses to its replacement, so
    ///   its space goes to the pool right after the sync, unmarked
    ///   (`State::leaves_replaced_unmarked`). A node store of version 5 names
    ///   this epoch in its header, with the epoch's digest, before the sync
    ///   (see `epoch_digest.rs`): a crash in the sync restores the previous
    ///   epoch whole, unless every record of this one made it. An older one
    ///   names the epoch only after a first sync has made its records
    ///   durable, and a second makes the header durable.
    /// - A hash database in appending mode needs no mark for a restore (its
    ///   records are in time order and a removal is a record), so all its
    ///   marks of earlier epochs go after the sync.
    fn make_durable(&self) -> Result<()> {
        let epoch = self.epoch.load(Ordering::Acquire);
        // A node store with epoch digests names this epoch, with its digest,
        // before the one sync; one without names it between two.
        let digests = self.epoch_records.is_some();
        if let Some(records) = &self.epoch_records {
            let mut header = self.header(true);
            header.pending = Some((epoch, records.lock().digest()));
            self.file.write(header::SIZE as u64 / 2, &header.encode_state())?;
        }
        let doomed = self.free.lock().take_doomed();
        let (settled, unwritten, ordered) = {
            let mut free = self.free.lock();
            let ordered = free.take_ordering();
            let (settled, unwritten) = free.take_settling();
            (settled, unwritten, ordered)
        };
        let tree = self.kind == Kind::TreeNodes && !digests;
        // Only a hash database updated in place marks removals before the sync.
        let ordered = ordered && self.kind == Kind::Hash && !self.appending;
        // What each step marks: before the (first) sync, between the two
        // syncs of an ordered one, and after the last. The current epoch's
        // marks go before; a tree's node store, an appending file and an
        // ordered sync leave every older one for later, an unordered sync
        // of a hash database only the replaced ones.
        let (before, between, after) = if self.appending && self.kind == Kind::Hash {
            // An appending hash file's restore reads a void version as a
            // removal when it is the last of its key: even the current
            // epoch's marks wait until what replaced them is durable.
            (Vec::new(), Vec::new(), doomed)
        } else {
            let plain = self.kind == Kind::Hash && !self.appending && !ordered;
            let early = if plain { REUSABLE | REMOVED } else { REUSABLE };
            let (now, later) = split_where(doomed, |&(_, size)| size & early != 0);
            if ordered {
                (now, later, Vec::new())
            } else {
                (now, Vec::new(), later)
            }
        };
        let resettle = |e: Error| {
            let mut free = self.free.lock();
            free.settle(&settled, unwritten);
            free.doom_again(&between);
            free.doom_again(&after);
            free.order_next();
            e
        };
        if unwritten {
            // Their replacements are durable: marking them now is safe.
            if let Err((_, e)) = self.mark_void(&settled) {
                self.free.lock().doom_again(&before);
                return Err(resettle(e));
            }
        }
        self.mark_void_now(&before, &[]).map_err(resettle)?;
        let two = ordered || tree;
        if two {
            self.file.synchronize(Durability::Hard).map_err(resettle)?;
            // The epoch's records are durable from here, whatever fails
            // below: `synchronize` closes the epoch, so that none of them
            // is rewritten in place while the marks of what they replaced
            // may reach the device.
            self.synced_epoch.store(epoch, Ordering::Release);
            self.pool(&settled);
            self.mark_void_now(&between, &after)?;
            if tree {
                self.write_header(true).inspect_err(|_| self.free.lock().doom_again(&after))?;
            }
        }
        if let Err(e) = self.file.synchronize(Durability::Hard) {
            let mut free = self.free.lock();
            if !two {
                free.settle(&settled, unwritten);
            }
            free.doom_again(&before);
            free.doom_again(&between);
            free.doom_again(&after);
            free.order_next();
            return Err(e);
        }
        if !two {
            self.pool(&settled);
        }
        self.pool(&before);
        self.pool(&between);
        self.synced_epoch.store(epoch, Ordering::Release);
        if let Some(records) = &self.epoch_records {
            records.lock().clear();
        }
        if self.leaves_replaced_unmarked() {
            // Their replacements' epoch is the one a restore takes now.
            let (removed, replaced) = split_where(after, |&(_, size)| size & REMOVED != 0);
            self.pool(&replaced);
            return self.mark_void_after(&removed);
        }
        self.mark_void_after(&after)
    }

    /// Gives the space of records whose void marks are durable to the pool.
    fn pool(&self, marked: &[(u64, u64)]) {
        if self.appending {
            return;
        }
        let mut free = self.free.lock();
        for &(offset, size) in marked {
            let size = size & !REMOVED;
            // Size 0: not kept, as the pool would not take it.
            if size & REUSABLE == 0 && size > 0 {
                free.put(offset, size, None);
            }
        }
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
                let mut clean = self.header(false);
                if self.writable {
                    // Synchronized just now, with nothing written since: no
                    // record is of a later epoch, and the copy's writer
                    // begins the next, as after a close.
                    clean.epoch = clean.synced_epoch;
                }
                buf[header::SIZE / 2..header::SIZE].copy_from_slice(&clean.encode_state());
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
            self.coverage,
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
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut result = self.make_durable();
        if result.is_ok() && self.kind == Kind::Hash {
            // The header names the epoch just made durable, for a restore
            // to the last synchronization (a tree's store wrote it in
            // `make_durable`). Not waited for: after a power cut that lost
            // it, such a restore goes back to the synchronization before.
            result = self.write_header(true);
        }
        // Records written from now on may be torn by a crash; older ones may
        // not. That holds as soon as a device sync covered this epoch, even
        // where a write after it failed: a record of it rewritten in place
        // could tear a synchronized version, and a node store's next digest
        // would miss the records counted before.
        if self.synced_epoch.load(Ordering::Acquire) == epoch {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        result
    }

    /// Writes everything back, marks the file closed cleanly and closes it.
    pub(super) fn close(mut self) -> Result<()> {
        if let Err(e) = self.check_untorn() {
            return self.abandon().and(Err(e));
        }
        let mut result = Ok(());
        if self.writable {
            // The data must be durable before the header says the file is
            // clean, and so must the void marks written after it: a clean
            // file forgets which records wait for one.
            result = self
                .flush_buckets()
                .and_then(|_| self.pad())
                .and_then(|_| self.make_durable())
                .and_then(|_| self.file.synchronize(Durability::Hard))
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

/// A record's offset and its size with the pool's flags, as the pool dooms it.
type Mark = (u64, u64);

/// Splits `marks` into those `early` answers true for, left in place in
/// their order, and the others, in theirs, in a vector of exactly their
/// count. A synchronization after a million removals takes a million
/// marks: `Iterator::partition` would grow two more vectors by doubling
/// beside them.
fn split_where(mut marks: Vec<Mark>, early: impl Fn(&Mark) -> bool) -> (Vec<Mark>, Vec<Mark>) {
    let mut later = Vec::with_capacity(marks.iter().filter(|&mark| !early(mark)).count());
    marks.retain(|mark| {
        if !early(mark) {
            later.push(*mark);
        }
        early(mark)
    });
    (marks, later)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_keeps_each_side_in_order_and_takes_no_room_to_spare() {
        let marks: Vec<(u64, u64)> = (0..1000u64).map(|i| (i * 128, (i * 7) % 3)).collect();
        let (early, later) = split_where(marks.clone(), |&(_, size)| size == 1);
        assert!(early.iter().all(|&(_, size)| size == 1) && later.iter().all(|&(_, size)| size != 1));
        assert_eq!(early.len() + later.len(), marks.len());
        assert!(early.is_sorted() && later.is_sorted());
        assert_eq!(later.capacity(), later.len());
        let (all, none) = split_where(marks.clone(), |_| true);
        assert_eq!((all, none), (marks, Vec::new()));
    }
}
