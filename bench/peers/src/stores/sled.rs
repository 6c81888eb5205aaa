//! sled with its default config: each commit one `Batch`, flushed to the
//! device for the durable ones.

use std::path::Path;

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// A sled database's default tree.
pub struct Sled {
    db: sled::Db,
}

impl Sled {
    /// Makes a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<Sled, BoxError> {
        Ok(Sled { db: sled::open(dir.join("sled"))? })
    }

    fn commit(&self, batch: sled::Batch, durable: bool) -> Result<(), BoxError> {
        self.db.apply_batch(batch)?;
        if durable {
            self.db.flush()?;
        }
        Ok(())
    }
}

impl Store for Sled {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        let mut batch = sled::Batch::default();
        for (key, value) in pairs {
            batch.insert(key.as_slice(), value.as_slice());
        }
        self.commit(batch, durable)
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        let mut batch = sled::Batch::default();
        for key in keys {
            batch.remove(key.as_slice());
        }
        self.commit(batch, durable)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(SledReader(&self.db)))
    }

    fn len(&self) -> Result<u64, BoxError> {
        Ok(self.db.len() as u64)
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let mut count = 0;
        for entry in self.db.iter() {
            entry?;
            count += 1;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        Ok(false)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        self.db.flush()?;
        Ok(())
    }
}

struct SledReader<'a>(&'a sled::Db);

impl Reader for SledReader<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        Ok(self.0.get(key)?.map(|value| value.len()))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        let mut bytes = 0;
        for entry in self.0.range(start..).take(count) {
            let (key, value) = entry?;
            bytes += key.len() + value.len();
        }
        Ok(Some(bytes))
    }
}
