//! redb with its default settings: one write transaction a commit.

use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");

/// A redb database of one table.
pub struct RedbStore {
    db: redb::Database,
}

impl RedbStore {
    /// Makes a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<RedbStore, BoxError> {
        let db = redb::Database::create(dir.join("bench.redb"))?;
        let tx = db.begin_write()?;
        tx.open_table(TABLE)?;
        tx.commit()?;
        Ok(RedbStore { db })
    }

    fn commit(
        &self,
        durable: bool,
        f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<(), BoxError>,
    ) -> Result<(), BoxError> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(if durable { redb::Durability::Immediate } else { redb::Durability::None })?;
        {
            let mut table = tx.open_table(TABLE)?;
            f(&mut table)?;
        }
        tx.commit()?;
        Ok(())
    }
}

impl Store for RedbStore {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        self.commit(durable, |table| {
            for (key, value) in pairs {
                table.insert(key.as_slice(), value.as_slice())?;
            }
            Ok(())
        })
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        self.commit(durable, |table| {
            for key in keys {
                table.remove(key.as_slice())?;
            }
            Ok(())
        })
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        let tx = self.db.begin_read()?;
        Ok(Box::new(RedbReader(tx.open_table(TABLE)?)))
    }

    fn len(&self) -> Result<u64, BoxError> {
        Ok(self.db.begin_read()?.open_table(TABLE)?.len()?)
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let table = self.db.begin_read()?.open_table(TABLE)?;
        let mut count = 0;
        for entry in table.iter()? {
            entry?;
            count += 1;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        // Commits of `Durability::None` hold pages a compaction may not move
        // until a durable commit follows them.
        self.commit(true, |_| Ok(()))?;
        while self.db.compact()? {}
        Ok(true)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        self.commit(true, |_| Ok(()))?;
        drop(self.db);
        Ok(())
    }
}

struct RedbReader(redb::ReadOnlyTable<&'static [u8], &'static [u8]>);

impl Reader for RedbReader {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        Ok(self.0.get(key)?.map(|value| value.value().len()))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        let mut bytes = 0;
        for entry in self.0.range(start..)?.take(count) {
            let (key, value) = entry?;
            bytes += key.value().len() + value.value().len();
        }
        Ok(Some(bytes))
    }
}
