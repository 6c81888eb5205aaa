//! The one mutation path: every change to the records is a [`Change`]
//! carried out by [`State::apply`]. The writing it takes (new records into
//! free or appended space, records rewritten in place, chains relinked,
//! replaced space handed to the free pool, the file emptied) is private to
//! this file, so nothing else can change a record.

use std::sync::atomic::Ordering;

use super::buckets::Link;
use super::chain::Found;
use super::dictionary::Dictionary;
use super::epoch_digest::record_hash;
use super::free_pool::Doom;
use super::header::{self, Kind};
use super::record::{self, Record, MAX_ITEM};
use super::state::State;
use crate::dbm::{show_key, Action};
use crate::error::{Error, ErrorKind, Result};

/// A change to the records.
pub(super) enum Change<'a> {
    /// A processor's answer about `key`, which hashes to `bucket` and whose
    /// record is `found` (read with or without its value); the caller holds
    /// the bucket's slot exclusively.
    Record { key: &'a [u8], bucket: u64, found: Option<Found>, action: Action<'a> },
    /// Every record removed; the caller holds the database exclusively.
    Clear,
    /// The compression dictionary values are compressed with from now on,
    /// written to its record (see `dictionary.rs`). A file has one at most:
    /// given another, it keeps its own.
    Dictionary(Dictionary),
}

thread_local! {
    /// The record being written, encoded: one buffer a thread, so that a
    /// write allocates nothing once it has grown.
    static ENCODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl State {
    /// Carries out `change`: the one function through which the records change.
    #[inline]
    pub(super) fn apply(&self, change: Change<'_>) -> Result<()> {
        self.check_untorn()?;
        match change {
            Change::Record { key, bucket, found, action } => {
                match (&action, found) {
                    (Action::Keep, _) | (Action::Remove, None) => return Ok(()),
                    (Action::Remove, Some(found)) => {
                        self.note_change(bucket);
                        self.remove_record(key, found)?
                    }
                    (Action::Set(value), found) => {
                        self.note_change(bucket);
                        let codec = &self.codec;
                        codec
                            .encode_with(key, value, |stored| self.set_record(key, bucket, found, stored))?;
                        self.train_on(value);
                        self.note_set_for_growth();
                    }
                }
                self.grow_along(key, bucket, &action);
                Ok(())
            }
            Change::Clear => {
                // What a growth under way copied is gone with the records.
                self.cancel_growth();
                self.note_every_change();
                // Half a clear leaves chains cut at random: only a restore
                // can say what the file holds.
                let cleared = self.remove_all();
                self.tear_on(cleared)?;
                // The dictionary's record went with the rest; the values
                // written from now on still use it.
                match self.codec.compression.as_ref().and_then(|c| c.dictionary()) {
                    Some(dict) => self.put_dictionary(dict.number, &dict.bytes),
                    None => Ok(()),
                }
            }
            Change::Dictionary(dict) => {
                let Some(c) = &self.codec.compression else { return Ok(()) };
                if c.dictionary().is_some() || !c.takes_dictionary() || dict.mode != c.mode {
                    return Ok(());
                }
                self.put_dictionary(dict.number, &dict.bytes)?;
                c.set_dictionary(dict);
                Ok(())
            }
        }
    }

    /// Samples `value` for the compression dictionary while one is wanted;
    /// once the sample is large enough, keeps it for training after the
    /// locks are let go (see `training.rs`).
    #[inline]
    fn train_on(&self, value: &[u8]) {
        if let Some(sample) = self.codec.compression.as_ref().and_then(|c| c.sample(value)) {
            self.keep_untrained(sample);
        }
    }

    /// Writes the record of dictionary `number`, `bytes`, into new space and
    /// points the header at it (the next time the header is written; a
    /// restore finds the record by its magic).
    fn put_dictionary(&self, number: u8, bytes: &[u8]) -> Result<()> {
        let align = 1u64 << self.align_pow;
        let size = record::size_for(self.width, align, 1, bytes.len());
        let offset = self.reserve(size)?;
        let written = ENCODED.with_borrow_mut(|buf| {
            let epoch = self.epoch.load(Ordering::Acquire);
            let rec = Record { live: false, next: 0, epoch, key: &[number], value: bytes, size };
            record::encode(buf, self.width, self.align_pow, self.coverage, &rec);
            buf[0] = record::MAGIC_DICT;
            self.file.write(offset, buf)
        });
        if let Err(e) = written {
            self.discard(offset, size, None);
            return Err(e);
        }
        self.dict_offset.store(offset, Ordering::Release);
        Ok(())
    }

    fn remove_record(&self, key: &[u8], f: Found) -> Result<()> {
        let counted = self.counted_hash(&f)?;
        // A hash file in appending mode keeps its history: the removal is a
        // record too, so a restore to an end offset after it finds it.
        if self.kind == Kind::TreeNodes || self.keeps_history() {
            self.put_removal(key)?;
        }
        self.tear_on(self.write_link(f.link, f.header.next))?;
        let voided = self.voids_on_removal(&f.header);
        if voided {
            self.tear_on(self.write_void(&f))?;
        }
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.data_size.fetch_sub((key.len() + f.header.value_size) as u64, Ordering::AcqRel);
        self.release(f.offset, &f.header, true, counted, voided);
        Ok(())
    }

    /// Whether removing the record with `header` rewrites it as a void
    /// record at once rather than marking it void at the next hard
    /// synchronization: a record of the current epoch in a hash database
    /// updated in place. A mark is one byte written over the record, and
    /// the record's own write, of this epoch too, may not reach the device
    /// before a power cut: the mark would then land on whatever the space
    /// held before (another key's version of this epoch, given up since),
    /// and a restore would read that key as removed, hiding its
    /// synchronized version. A whole void record reaches the device whole
    /// or not at all. (A tree's restore takes an epoch only if its digest
    /// of the epoch's records agrees, and an appending file marks nothing
    /// of this epoch before the sync.)
    fn voids_on_removal(&self, header: &record::Header) -> bool {
        self.kind == Kind::Hash && !self.appending && header.epoch == self.epoch.load(Ordering::Acquire)
    }

    /// Writes the record `f` again as a void record of its key, with no
    /// value, over the same space: a removal a restore reads.
    fn write_void(&self, f: &Found) -> Result<()> {
        let key = &f.buf[f.header.header_size..f.header.header_size + f.header.key_size];
        ENCODED.with_borrow_mut(|buf| {
            let rec = Record {
                live: false,
                next: f.header.next,
                epoch: f.header.epoch,
                key,
                value: b"",
                size: f.header.size,
            };
            record::encode_through_value(buf, self.width, self.align_pow, self.coverage, &rec);
            self.file.write(f.offset, buf)
        })
    }

    /// Stores `value`, encoded already, as `key`'s record.
    fn set_record(&self, key: &[u8], bucket: u64, found: Option<Found>, value: &[u8]) -> Result<()> {
        if key.len() as u64 > MAX_ITEM || value.len() as u64 > MAX_ITEM {
            // A sealed key's bytes would mean nothing to the caller.
            let shown =
                if self.codec.seals_keys() { "of an encrypted key".to_string() } else { show_key(key) };
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the record {shown} is too large (at most 4 GiB each for key and value)"),
            ));
        }
        let Some(f) = found else {
            let head = self.read_bucket(bucket)?;
            self.put_linked(key, value, head, Link::Bucket(bucket))?;
            self.count.fetch_add(1, Ordering::AcqRel);
            self.data_size.fetch_add((key.len() + value.len()) as u64, Ordering::AcqRel);
            return Ok(());
        };
        let counted = self.counted_hash(&f)?;
        self.data_size.fetch_add(value.len() as u64, Ordering::AcqRel);
        self.data_size.fetch_sub(f.header.value_size as u64, Ordering::AcqRel);
        let align = 1u64 << self.align_pow;
        let fits = record::size_for(self.width, align, key.len(), value.len()) <= f.header.size;
        // Only a record no hard synchronization has covered may be torn by a crash.
        if !self.appending && fits && f.header.epoch == self.epoch.load(Ordering::Acquire) {
            return ENCODED.with_borrow_mut(|buf| {
                let rec = Record {
                    live: true,
                    next: f.header.next,
                    epoch: f.header.epoch,
                    key,
                    value,
                    size: f.header.size,
                };
                record::encode(buf, self.width, self.align_pow, self.coverage, &rec);
                // Torn, the record would read half old and half new, and its
                // older version, still on disk, is what a restore finds.
                self.tear_on(self.file.write(f.offset, buf))?;
                self.uncount_in_epoch(f.offset, counted);
                self.count_in_epoch(f.offset, key, value);
                Ok(())
            });
        }
        let at = self.put_linked(key, value, f.header.next, f.link)?;
        self.free.lock().replaced_by(at);
        self.release(f.offset, &f.header, false, counted, false);
        Ok(())
    }

    /// Writes a void record of `key` in the current epoch: the removal as a
    /// tree's restore sees it. Such a restore goes back to the epoch the
    /// header names, and the key's older versions are marked void only after
    /// the header names this one (see `State::make_durable`); a crash between
    /// the two would bring the key back from an older version (a tree node
    /// merged away, as an orphan no link reaches) unless a version of this
    /// epoch says it is removed. The current epoch's own versions of the key
    /// cannot: their space may hold another record by then. The marker's
    /// space is freed, not reused, until a hard synchronization has marked
    /// the older versions. Where replaced versions are never marked (see
    /// [`State::leaves_replaced_unmarked`]) the marker is all that keeps
    /// them from coming back, so it stays until a rebuild.
    fn put_removal(&self, key: &[u8]) -> Result<()> {
        let (offset, size) = self.put(key, b"", 0, false)?;
        if !self.leaves_replaced_unmarked() {
            self.free.lock().doom(offset, size, Doom::Replaced);
        }
        Ok(())
    }

    /// Whether a version of an earlier epoch that was replaced (not
    /// removed) is left unmarked, its space going back to the pool as soon
    /// as a device sync has made its replacement's epoch the one a restore
    /// takes: a tree's node store with epoch digests, updated in place. Its
    /// restore takes the latest version of each key up to a whole epoch,
    /// and the replacement, of a later epoch, beats it; a void mark would
    /// only cost a page written back at the next synchronization, and a
    /// synchronization more before the space is reused. Removals keep
    /// their marks and their markers (see [`State::put_removal`]).
    pub(super) fn leaves_replaced_unmarked(&self) -> bool {
        self.kind == Kind::TreeNodes && self.epoch_records.is_some() && !self.appending
    }

    /// Writes a new live record followed by `next` and points `link` at it,
    /// answering its offset. If the link cannot be written, the record is
    /// given up, and the chain the link belongs to may be torn.
    fn put_linked(&self, key: &[u8], value: &[u8], next: u64, link: Link) -> Result<u64> {
        let (offset, size) = self.put(key, value, next, true)?;
        let linked = self.write_link(link, offset);
        if linked.is_err() {
            let counted = self.epoch_records.as_ref().map(|_| record_hash(offset, key, value));
            self.discard(offset, size, counted);
        }
        self.tear_on(linked).map(|()| offset)
    }

    /// Writes a new record, live or void, reusing free space if allowed;
    /// answers its offset and size. New space is reserved before it is
    /// written, so that a write that fails part-way (a short write on a full
    /// device) leaves a region of known place and size: the file's end stays
    /// aligned, a restore's scan skips the torn record whole, and the region
    /// goes back to the free pool, doomed like a replaced record in case
    /// what it holds still reads as a record.
    fn put(&self, key: &[u8], value: &[u8], next: u64, live: bool) -> Result<(u64, u64)> {
        let align = 1u64 << self.align_pow;
        let mut size = record::size_for(self.width, align, key.len(), value.len());
        let epoch = self.epoch.load(Ordering::Acquire);
        let reused = if self.appending { None } else { self.take_free(size, epoch)? };
        let offset = match reused {
            Some((offset, whole)) => {
                size = whole;
                offset
            }
            None => self.reserve(size)?,
        };
        let written = ENCODED.with_borrow_mut(|buf| {
            let rec = Record { live, next, epoch, key, value, size };
            record::encode(buf, self.width, self.align_pow, self.coverage, &rec);
            self.file.write(offset, buf)
        });
        if let Err(e) = written {
            // Not counted yet.
            self.discard(offset, size, None);
            return Err(e);
        }
        self.count_in_epoch(offset, key, value);
        Ok((offset, size))
    }

    /// Free space for a new record of `size` bytes in `epoch`, as its offset
    /// and whole size, if the pool has some a torn write cannot turn back
    /// into the record that was there (see [`record::revives_if_torn`]).
    /// Space that could is given up, until a rebuild or restore compacts
    /// the file.
    fn take_free(&self, size: u64, epoch: u32) -> Result<Option<(u64, u64)>> {
        let ahead = record::epoch_bytes_in_first_unit(self.width, self.align_pow);
        // No earlier epoch's bytes there can be this one's: the epochs
        // would differ by a multiple of 2^(8 x those bytes), more than this
        // epoch is (or the unit holds all four).
        let no_match = ahead > 0 && u64::from(epoch) >> (8 * ahead) == 0;
        // A few tries, so a pool full of such space costs little.
        for _ in 0..4 {
            let (offset, whole, reusable) = {
                let mut free = self.free.lock();
                let Some((offset, whole, written)) = free.take(size) else { return Ok(None) };
                let reusable = match written {
                    Some(old) => Some(!record::revives_if_torn(old, epoch, ahead)),
                    None if no_match => Some(true),
                    None => None,
                };
                if reusable == Some(true) {
                    free.claim(offset);
                    return Ok(Some((offset, whole)));
                }
                (offset, whole, reusable)
            };
            if reusable.is_none() {
                let mut old = [0u8; 4];
                self.file.read(offset + 1 + self.width as u64, &mut old)?;
                if !record::revives_if_torn(u32::from_le_bytes(old), epoch, ahead) {
                    self.free.lock().claim(offset);
                    return Ok(Some((offset, whole)));
                }
            }
        }
        Ok(None)
    }

    /// Counts the record at `offset` in the current epoch's digest, where
    /// the file keeps one.
    fn count_in_epoch(&self, offset: u64, key: &[u8], value: &[u8]) {
        if let Some(records) = &self.epoch_records {
            records.lock().put(offset, record_hash(offset, key, value));
        }
    }

    /// Takes the record at `offset`, counted with hash `counted` (see
    /// [`State::counted_hash`]), out of the current epoch's digest.
    fn uncount_in_epoch(&self, offset: u64, counted: Option<u64>) {
        if let (Some(records), Some(hash)) = (&self.epoch_records, counted) {
            records.lock().forget(offset, hash);
        }
    }

    /// The hash the current epoch's digest counts the record `f` with: none
    /// where the file keeps no digest or `f` is of an earlier epoch. Read
    /// before the record is changed or its space given up, from what its
    /// lookup read, or from the file where that stopped short of the value.
    fn counted_hash(&self, f: &Found) -> Result<Option<u64>> {
        if self.epoch_records.is_none() || f.header.epoch != self.epoch.load(Ordering::Acquire) {
            return Ok(None);
        }
        let key_end = f.header.header_size + f.header.key_size;
        let end = key_end + f.header.value_size;
        let hash =
            |buf: &[u8]| record_hash(f.offset, &buf[f.header.header_size..key_end], &buf[key_end..end]);
        if f.buf.len() >= end {
            return Ok(Some(hash(&f.buf)));
        }
        let (_, whole) = self.read_record(f.offset, None, true)?;
        // Read twice, the record could differ only on a device that lost
        // a write between the reads.
        if whole.len() < end {
            return Err(self.broken(f.offset, "a record that changed between two reads"));
        }
        Ok(Some(hash(&whole)))
    }

    /// Reserves `size` bytes at the end of the file for a new record.
    fn reserve(&self, size: u64) -> Result<u64> {
        let offset = self.file.expand(size)?;
        if u128::from(offset + size) > self.max_file_size() {
            // Zeros that no chain reaches and every restore skips.
            return Err(self.full());
        }
        Ok(offset)
    }

    /// Gives up the region of a record of this epoch that no chain reaches
    /// (a write into it failed, or the link to it did): it is marked void at
    /// the next hard synchronization, so that a restore never takes it for a
    /// version of its key, and is reusable at once. `counted` is the hash it
    /// was counted with in the epoch's digest, if it was.
    fn discard(&self, offset: u64, size: u64, counted: Option<u64>) {
        self.uncount_in_epoch(offset, counted);
        let mut free = self.free.lock();
        free.doom(offset, size, Doom::Current);
        if !self.appending {
            // What the region holds is unknown: the write may have failed
            // before it reached the record there.
            free.put(offset, size, None);
        }
    }

    /// Frees the space of a record that no chain reaches any more, `removed`
    /// or replaced. A replaced one is marked void only after what replaced
    /// it is durable (see `State::make_durable`): marked sooner, a crash could
    /// leave neither version; left live, a crash before the next hard
    /// synchronization brings back a version that was written, which is
    /// allowed. Space of the current epoch is reusable at once (unless the
    /// file appends), since no hard synchronization has covered it; older
    /// space once its void mark is durable. `counted` is the record's hash in
    /// the epoch's digest ([`State::counted_hash`]); `voided` says the
    /// removal rewrote it as a void record already
    /// ([`State::voids_on_removal`]), which needs no mark.
    fn release(
        &self,
        offset: u64,
        header: &record::Header,
        removed: bool,
        counted: Option<u64>,
        voided: bool,
    ) {
        let mut free = self.free.lock();
        let epoch = self.epoch.load(Ordering::Acquire);
        if removed {
            free.removed(offset, header.epoch, epoch);
        }
        if header.epoch == epoch {
            // Never promised: marked before the sync, and with its space
            // reused at once where the file reuses space.
            debug_assert!(counted.is_some() || self.epoch_records.is_none());
            self.uncount_in_epoch(offset, counted);
            if !voided {
                free.doom(offset, header.size, if removed { Doom::CurrentRemoved } else { Doom::Current });
            }
            if !self.appending {
                free.put(offset, header.size, Some(epoch));
            }
            return;
        }
        free.doom(offset, header.size, if removed { Doom::Removed } else { Doom::Replaced });
    }

    /// Whether every version stays in the file, in file order, a removal
    /// being a record too: a hash database (not a tree's node store) in
    /// appending mode, which a restore to an end offset can go back in.
    pub(super) fn keeps_history(&self) -> bool {
        self.appending && self.kind == Kind::Hash
    }

    /// Empties the bucket array and cuts the file back to its first record.
    fn remove_all(&self) -> Result<()> {
        let zeros = vec![0u8; 1 << 16];
        let mut at = header::SIZE as u64;
        while at < self.records_start {
            let n = (self.records_start - at).min(zeros.len() as u64) as usize;
            self.file.write(at, &zeros[..n])?;
            at += n as u64;
        }
        self.file.truncate(self.records_start)?;
        if let Some(cached) = &self.buckets {
            cached.iter().for_each(|b| b.store(0, Ordering::Relaxed));
            self.buckets_dirty.store(false, Ordering::Release);
        }
        self.count.store(0, Ordering::Release);
        self.data_size.store(0, Ordering::Release);
        self.free.lock().clear();
        if let Some(records) = &self.epoch_records {
            records.lock().clear();
        }
        Ok(())
    }
}
