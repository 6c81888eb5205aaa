//! fjall with its default settings: one keyspace, each commit one write
//! batch, persisted with `SyncAll` or not at all.

use std::path::Path;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// A fjall database of one keyspace.
pub struct Fjall {
    db: Database,
    keyspace: Keyspace,
}

impl Fjall {
    /// Makes a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<Fjall, BoxError> {
        let db = Database::builder(dir.join("fjall")).open()?;
        let keyspace = db.keyspace("bench", KeyspaceCreateOptions::default)?;
        Ok(Fjall { db, keyspace })
    }

    fn durability(durable: bool) -> Option<PersistMode> {
        durable.then_some(PersistMode::SyncAll)
    }
}

impl Store for Fjall {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        let mut batch = self.db.batch().durability(Fjall::durability(durable));
        for (key, value) in pairs {
            batch.insert(&self.keyspace, key.as_slice(), value.as_slice());
        }
        batch.commit()?;
        Ok(())
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        let mut batch = self.db.batch().durability(Fjall::durability(durable));
        for key in keys {
            batch.remove(&self.keyspace, key.as_slice());
        }
        batch.commit()?;
        Ok(())
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(FjallReader(&self.keyspace)))
    }

    fn len(&self) -> Result<u64, BoxError> {
        Ok(self.keyspace.len()? as u64)
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let mut count = 0;
        for entry in self.keyspace.iter() {
            entry.into_inner()?;
            count += 1;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        // fjall compacts in its background threads; its one call that
        // compacts on demand (`major_compact`) is hidden from its
        // documentation, not an API a user is offered.
        Ok(false)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

struct FjallReader<'a>(&'a Keyspace);

impl Reader for FjallReader<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        Ok(self.0.get(key)?.map(|value| value.len()))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        let mut bytes = 0;
        for entry in self.0.range(start..).take(count) {
            let (key, value) = entry.into_inner()?;
            bytes += key.len() + value.len();
        }
        Ok(Some(bytes))
    }
}
