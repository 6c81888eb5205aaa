//! RocksDB through rust-rocksdb, default options: each commit one
//! `WriteBatch`, synced or not.

use std::path::Path;

use rocksdb::{Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB};

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// A RocksDB database of the default column family.
pub struct Rocks {
    db: DB,
}

impl Rocks {
    /// Makes a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<Rocks, BoxError> {
        let mut options = Options::default();
        options.create_if_missing(true);
        Ok(Rocks { db: DB::open(&options, dir.join("rocksdb"))? })
    }

    fn commit(&self, batch: WriteBatch, durable: bool) -> Result<(), BoxError> {
        let mut options = WriteOptions::default();
        options.set_sync(durable);
        self.db.write_opt(batch, &options)?;
        Ok(())
    }
}

impl Store for Rocks {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        let mut batch = WriteBatch::default();
        for (key, value) in pairs {
            batch.put(key, value);
        }
        self.commit(batch, durable)
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        let mut batch = WriteBatch::default();
        for key in keys {
            batch.delete(key);
        }
        self.commit(batch, durable)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(RocksReader(&self.db)))
    }

    fn len(&self) -> Result<u64, BoxError> {
        // RocksDB keeps an estimate only: an exact count visits every key.
        self.iterate()
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let mut count = 0;
        for entry in self.db.iterator(IteratorMode::Start) {
            entry?;
            count += 1;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(true)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        self.db.flush()?;
        self.db.flush_wal(true)?;
        Ok(())
    }
}

struct RocksReader<'a>(&'a DB);

impl Reader for RocksReader<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        Ok(self.0.get_pinned(key)?.map(|value| value.len()))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        let mut bytes = 0;
        for entry in self.0.iterator(IteratorMode::From(start, Direction::Forward)).take(count) {
            let (key, value) = entry?;
            bytes += key.len() + value.len();
        }
        Ok(Some(bytes))
    }
}
