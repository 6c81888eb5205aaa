//! The processors: each locks its records' slots, finds the records, shows
//! their values to the caller's function and hands its answers to
//! [`State::apply`].

use super::buckets::bucket_of;
use super::chain::Found;
use super::change::Change;
use super::state::{slot_index, State};
use crate::dbm::{Action, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

impl State {
    pub(super) fn process(&self, key: &[u8], writable: bool, f: &mut Processor<'_>) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        let bucket = bucket_of(key, self.num_buckets);
        if writable {
            let _slot = self.slot(bucket).write();
            let found = self.find(key, bucket)?;
            let action = f(found.as_ref().map(Found::value));
            self.apply(Change::Record { key, bucket, found, action })
        } else {
            let _slot = self.slot(bucket).read();
            let found = self.find(key, bucket)?;
            match f(found.as_ref().map(Found::value)) {
                Action::Keep => Ok(()),
                _ => Err(refused()),
            }
        }
    }

    /// Like a writable [`State::process`] whose function needs only to know
    /// whether the record exists: the old value is not read.
    pub(super) fn process_presence<'a>(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(bool) -> Action<'a>,
    ) -> Result<()> {
        if !self.writable {
            return Err(self.read_only());
        }
        let bucket = bucket_of(key, self.num_buckets);
        let _slot = self.slot(bucket).write();
        let found = self.find_record(key, bucket, false)?;
        let action = f(found.is_some());
        self.apply(Change::Record { key, bucket, found, action })
    }

    pub(super) fn process_multi(
        &self,
        keys: &[&[u8]],
        writable: bool,
        f: &mut MultiProcessor<'_>,
    ) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        let buckets: Vec<u64> = keys.iter().map(|k| bucket_of(k, self.num_buckets)).collect();
        let mut slots: Vec<usize> = buckets.iter().map(|&b| slot_index(b)).collect();
        slots.sort_unstable();
        slots.dedup();
        // Locked in one global order, so two multi-key calls never deadlock.
        let (_w, _r): (Vec<_>, Vec<_>) = if writable {
            (slots.iter().map(|&i| self.slots[i].write()).collect(), Vec::new())
        } else {
            (Vec::new(), slots.iter().map(|&i| self.slots[i].read()).collect())
        };
        for (i, &key) in keys.iter().enumerate() {
            let bucket = buckets[i];
            let found = self.find(key, bucket)?;
            let action = f(i, key, found.as_ref().map(Found::value));
            if writable {
                self.apply(Change::Record { key, bucket, found, action })?;
            } else if action != Action::Keep {
                return Err(refused());
            }
        }
        Ok(())
    }

    /// Shows every record to `f`, bucket by bucket. The caller holds the
    /// database exclusively.
    pub(super) fn process_each(&self, writable: bool, f: &mut EachProcessor<'_>) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        for bucket in 0..self.num_buckets {
            for key in self.chain_keys(bucket)? {
                let found = self.find(&key, bucket)?;
                let Some(value) = found.as_ref().map(|f| f.value().to_vec()) else { continue };
                let action = f(&key, &value);
                if writable {
                    self.apply(Change::Record { key: &key, bucket, found, action })?;
                } else if action != Action::Keep {
                    return Err(refused());
                }
            }
        }
        Ok(())
    }
}

/// The error of a read-only process whose function asked for a change.
fn refused() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a read-only process asked to change a record")
}
