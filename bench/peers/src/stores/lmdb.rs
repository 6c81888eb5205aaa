//! LMDB through heed: synced commits by default, `MDB_NOSYNC` set around
//! the commits that are not to be synced.

use std::ops::Bound;
use std::path::Path;

use heed::types::Bytes;
use heed::{EnvFlags, EnvOpenOptions, FlagSetMode};

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// An LMDB environment of one unnamed database.
pub struct Lmdb {
    env: heed::Env,
    db: heed::Database<Bytes, Bytes>,
}

impl Lmdb {
    /// Makes a fresh environment in `dir`.
    pub fn open(dir: &Path) -> Result<Lmdb, BoxError> {
        // SAFETY: the folder is fresh and this process alone opens it, once.
        let env = unsafe { EnvOpenOptions::new().map_size(64 << 30).open(dir)? };
        let mut tx = env.write_txn()?;
        let db = env.create_database::<Bytes, Bytes>(&mut tx, None)?;
        tx.commit()?;
        Ok(Lmdb { env, db })
    }

    fn commit(
        &mut self,
        durable: bool,
        f: impl FnOnce(&mut heed::RwTxn, &heed::Database<Bytes, Bytes>) -> Result<(), BoxError>,
    ) -> Result<(), BoxError> {
        if !durable {
            // SAFETY: `&mut self`: no other thread sets flags meanwhile.
            unsafe { self.env.set_flags(EnvFlags::NO_SYNC, FlagSetMode::Enable)? };
        }
        let result = (|| {
            let mut tx = self.env.write_txn()?;
            f(&mut tx, &self.db)?;
            tx.commit()?;
            Ok(())
        })();
        if !durable {
            // SAFETY: as above.
            unsafe { self.env.set_flags(EnvFlags::NO_SYNC, FlagSetMode::Disable)? };
        }
        result
    }
}

impl Store for Lmdb {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        self.commit(durable, |tx, db| {
            for (key, value) in pairs {
                db.put(tx, &key, &value)?;
            }
            Ok(())
        })
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        self.commit(durable, |tx, db| {
            for key in keys {
                db.delete(tx, &key)?;
            }
            Ok(())
        })
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(LmdbReader { tx: self.env.read_txn()?, db: self.db }))
    }

    fn len(&self) -> Result<u64, BoxError> {
        let tx = self.env.read_txn()?;
        Ok(self.db.len(&tx)?)
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let tx = self.env.read_txn()?;
        let mut count = 0;
        for entry in self.db.iter(&tx)? {
            entry?;
            count += 1;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        Ok(false)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        self.env.force_sync()?;
        let closing = self.env.prepare_for_closing();
        closing.wait();
        Ok(())
    }
}

struct LmdbReader<'a> {
    tx: heed::RoTxn<'a, heed::WithTls>,
    db: heed::Database<Bytes, Bytes>,
}

impl Reader for LmdbReader<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        Ok(self.db.get(&self.tx, key)?.map(<[u8]>::len))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Included(start), Bound::Unbounded);
        let mut bytes = 0;
        for entry in self.db.range(&self.tx, &bounds)?.take(count) {
            let (key, value) = entry?;
            bytes += key.len() + value.len();
        }
        Ok(Some(bytes))
    }
}
