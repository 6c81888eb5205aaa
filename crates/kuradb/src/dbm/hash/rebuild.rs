//! Rebuilding a hash database into a compact new file, and restoring one
//! that was not closed cleanly.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::dictionary::{Dictionary, Sample};
use super::header::Kind;
use super::open::check_options;
use super::options::{CipherKey, HashOptions, RecordCompMode, RecordCrcMode, UpdateMode};
use super::record::size_for;
use super::restore::{self, Keys};
use super::state::State;
use super::HashDbm;
use crate::error::{Error, ErrorKind, Result};
use crate::file::temp_beside;

/// Tuning parameters a rebuild may change; `None` keeps the file's own
/// (for `num_buckets`: twice the record count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RebuildParams {
    /// Buckets of the new hash table.
    pub num_buckets: Option<u64>,
    /// Records aligned to 2^align_pow bytes.
    pub align_pow: Option<u8>,
    /// Bytes of an offset.
    pub offset_width: Option<u8>,
    /// In-place or appending updates.
    pub update_mode: Option<UpdateMode>,
    /// Whether every read verifies each record's checksum.
    pub record_crc_mode: Option<RecordCrcMode>,
    /// How values are compressed; a compressed rebuild trains a new
    /// dictionary from a sample of the records.
    pub record_comp_mode: Option<RecordCompMode>,
    /// The key the new file's values are encrypted with: `None` keeps the
    /// file's own (or none), an empty key writes them unencrypted, another
    /// key re-encrypts them under it.
    pub cipher_key: Option<CipherKey>,
}

impl HashDbm {
    /// Rewrites the database into a compact new file with the tuning of
    /// `params`, then replaces the old file with it atomically: a crash leaves
    /// either the old or the new file.
    pub fn rebuild_with(&self, params: &RebuildParams) -> Result<()> {
        self.owner.check(&self.path)?;
        // A growth under way would copy what the rebuild copies anyway.
        self.stop_growth();
        let _scan = crate::caching::ScanScope::enter();
        let mut guard = self.state.write();
        let state = guard.take().ok_or_else(|| self.closed())?;
        if !state.writable {
            let err = state.read_only();
            *guard = Some(state);
            return Err(err);
        }
        let options = match state.copy_options(&self.options, params) {
            Ok(options) => options,
            Err(e) => {
                *guard = Some(state);
                return Err(e);
            }
        };
        let temp = temp_beside(&self.path, "rebuild");
        let built = state
            .dictionary_for(options.record_comp_mode)
            .and_then(|dict| {
                restore::copy_into(&temp, &options, self.kind, dict, Keys::Distinct, |put| {
                    state.for_each(|k, v| put(k, v))
                })
            })
            .and_then(|built| restore::reopened(built, &options, self.kind))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            });
        // On failure the database goes on with its old file, untouched.
        match built.and_then(|built| restore::replace(&self.path, built)) {
            Ok(new) => {
                *guard = Some(new);
                // Unnamed now (see `restore::replace`): what a close would
                // write is lost with it, so it is closed writing nothing, and
                // what is left of that (freeing) is done off the caller's time.
                self.retirer.retire(state, |state| {
                    let _ = state.abandon();
                });
                Ok(())
            }
            Err(e) => {
                *guard = Some(state);
                Err(e)
            }
        }
    }

    /// The key the database's values are encrypted with, if they are: what a
    /// tree's rebuild encrypts its new store with unless told otherwise.
    pub(crate) fn cipher_key(&self) -> Result<Option<CipherKey>> {
        Ok(self.state()?.as_ref().and_then(|s| s.codec.key().cloned()))
    }

    /// Gives the open database's file the name `to` (replacing any file
    /// there) and keeps it open and locked: a tree puts its rebuilt node
    /// store in place this way.
    pub(crate) fn rename_file(&mut self, to: &Path) -> Result<()> {
        self.owner.check(&self.path)?;
        self.stop_growth();
        let mut guard = self.state.write();
        let Some(state) = guard.as_mut() else { return Err(self.closed()) };
        state.file.rename(to)?;
        self.path = to.to_path_buf();
        Ok(())
    }

    /// Restores the database at `src`, which was not closed cleanly (or is
    /// damaged), into a new database at `dest`: every record whose checksum
    /// holds is kept, in its latest version. Answers the number of records kept.
    /// A tree database's file is refused: `TreeDbm::restore` restores it.
    pub fn restore(src: impl AsRef<Path>, dest: impl AsRef<Path>, options: &HashOptions) -> Result<u64> {
        restore::restore(src.as_ref(), dest.as_ref(), options, Kind::Hash)
    }

    /// Point-in-time restore: like [`HashDbm::restore`], the state the
    /// database at `src` had when its file ended at `end_offset` bytes. Only a
    /// database in appending mode keeps the history this needs; another is
    /// refused. An offset taken from the file's size at some moment (after a
    /// synchronization, say) gives the records as they were then; a clear or
    /// a rebuild empties the history before it. A version with an empty
    /// value that was replaced later reads as removed before its
    /// replacement (docs/update-logs.md, "Point-in-time restore").
    ///
    /// ```
    /// use kuradb::dbm::{Dbm, Durability};
    /// use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
    /// # fn main() -> kuradb::Result<()> {
    /// let dir = tempfile::tempdir().unwrap();
    /// let (path, old) = (dir.path().join("a.tkh"), dir.path().join("old.tkh"));
    /// let options = HashOptions::default().update_mode(UpdateMode::Appending);
    /// let db = options.open(&path)?;
    /// db.set(b"k", b"first")?;
    /// db.synchronize(Durability::Soft)?;
    /// let then = db.file_size()?;
    /// db.set(b"k", b"second")?;
    /// db.close()?;
    /// HashDbm::restore_to_offset(&path, &old, &options, then)?;
    /// let db = options.open_read_only(&old)?;
    /// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"first"[..]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn restore_to_offset(
        src: impl AsRef<Path>,
        dest: impl AsRef<Path>,
        options: &HashOptions,
        end_offset: u64,
    ) -> Result<u64> {
        restore::restore_until(src.as_ref(), dest.as_ref(), options, Kind::Hash, Some(end_offset))
    }

    /// [`HashDbm::restore`] of a file of `kind` (a tree's node store).
    pub(crate) fn restore_kind(src: &Path, dest: &Path, options: &HashOptions, kind: Kind) -> Result<u64> {
        restore::restore(src, dest, options, kind)
    }
}

impl State {
    /// The record count, bounded by what the file has room for. A damaged
    /// header may claim any count, and a rebuild sizes its bucket array (and
    /// so its new file) by it: a claim of 10^9 records in a file of a few
    /// kilobytes once made an 18 GB file.
    pub(super) fn plausible_count(&self) -> u64 {
        let smallest = size_for(self.width, 1 << self.align_pow, 0, 0).max(1);
        let room = self.file.size().saturating_sub(self.records_start);
        self.count.load(Ordering::Acquire).min(room / smallest)
    }
}

impl State {
    /// The file's compression mode.
    pub(super) fn comp_mode(&self) -> RecordCompMode {
        self.codec.compression.as_ref().map_or(RecordCompMode::None, |c| c.mode)
    }

    /// The dictionary a rebuild into a file of `mode` starts with: one
    /// trained anew from a sample of the records (numbered after the file's
    /// own, whose values the copy still reads with it), or else the file's
    /// own if it is of the same mode; none for mode none.
    fn dictionary_for(&self, mode: RecordCompMode) -> Result<Option<Dictionary>> {
        if !mode.is_on() {
            return Ok(None);
        }
        let mut sample = Sample::new(mode);
        // The sample is the first records in bucket order, which is the
        // order of the keys' hashes: as good as a random choice.
        let sampled = self.for_each(|_, v| match sample.add(v) {
            false => Ok(()),
            true => Err(Error::new(ErrorKind::Canceled, "the sample is full")),
        });
        match sampled {
            Err(e) if e.kind() != ErrorKind::Canceled => return Err(e),
            _ => {}
        }
        let old = self.codec.compression.as_ref().and_then(|c| c.dictionary());
        let number = Dictionary::next_number(old.map(|d| d.number));
        Ok(Dictionary::train(mode, number, &sample)
            .or_else(|| old.filter(|d| d.mode == mode).map(Dictionary::duplicate)))
    }
}

impl State {
    /// The options of a copy of this file into a new one (a rebuild's, a
    /// growth's): `base` with the file's own tuning, except where `params`
    /// changes it (`num_buckets` unset: twice the record count), checked
    /// for the records the copy will hold.
    pub(super) fn copy_options(&self, base: &HashOptions, params: &RebuildParams) -> Result<HashOptions> {
        let count = self.plausible_count();
        let mut options = base.clone();
        options.num_buckets =
            params.num_buckets.unwrap_or(count.saturating_mul(2).saturating_add(1).max(1021));
        options.offset_width = params.offset_width.unwrap_or(self.width as u8);
        options.align_pow = params.align_pow.unwrap_or(self.align_pow as u8);
        let mode = if self.appending { UpdateMode::Appending } else { UpdateMode::InPlace };
        options.update_mode = params.update_mode.unwrap_or(mode);
        options.record_crc_mode = params.record_crc_mode.unwrap_or(self.record_crc);
        options.record_comp_mode = params.record_comp_mode.unwrap_or(self.comp_mode());
        options.cipher_key = params.cipher_key.clone().or_else(|| self.codec.key().cloned());
        check_options(&options)?;
        check_capacity(self, &options)?;
        // Nobody else knows the temporary file: its lock is free, or
        // something is wrong that waiting would not mend.
        options.open.lock_wait = crate::file::LockWait::Fail;
        Ok(options)
    }
}

/// Refuses a rebuild whose offsets could not address the records it copies.
fn check_capacity(state: &State, o: &HashOptions) -> Result<()> {
    let max_file = (1u128 << (8 * u32::from(o.offset_width))) << o.align_pow;
    // Each record grows by at most its alignment and a few header bytes.
    let needed = u128::from(state.file.size())
        + u128::from(state.plausible_count()) * ((1u128 << o.align_pow) + 16)
        + u128::from(o.num_buckets) * u128::from(o.offset_width);
    if needed > max_file {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "offset_width {} with align_pow {} addresses {max_file} bytes, too few for the records of {}",
                o.offset_width,
                o.align_pow,
                state.file.path().display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::HashDbm;
    use crate::dbm::Dbm;

    #[test]
    fn the_old_file_is_closed_in_a_thread_that_a_close_waits_for() {
        let dir = tempfile::tempdir().unwrap();
        let db = HashDbm::builder().open(dir.path().join("h.kh")).unwrap();
        db.set(b"key", b"value").unwrap();
        db.rebuild().unwrap();
        let ended = db.retirer.queue_slow_close();
        db.close().unwrap();
        assert!(ended.load(Ordering::SeqCst), "the close did not wait");
    }
}
