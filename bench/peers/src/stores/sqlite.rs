//! SQLite through rusqlite (bundled): one `WITHOUT ROWID` table in WAL
//! mode, `synchronous=FULL` for the durable commits and `OFF` for the
//! others; each reading thread opens its own connection, as SQLite wants.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// An SQLite database of one table.
pub struct Sqlite {
    path: PathBuf,
    // `Connection` is not `Sync`; the writes take it through `&mut self`
    // and the few reads of the whole store through the lock.
    conn: Mutex<Connection>,
    durable: bool,
}

impl Sqlite {
    /// Makes a fresh database in `dir`.
    pub fn open(dir: &Path) -> Result<Sqlite, BoxError> {
        let path = dir.join("bench.sqlite");
        let conn = Connection::open(&path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch("CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")?;
        Ok(Sqlite { path, conn: Mutex::new(conn), durable: true })
    }

    fn commit(
        &mut self,
        durable: bool,
        sql: &str,
        f: impl FnOnce(&mut rusqlite::Statement) -> Result<(), BoxError>,
    ) -> Result<(), BoxError> {
        let conn = self.conn.get_mut().map_err(|_| "the SQLite connection's lock is poisoned")?;
        if durable != self.durable {
            conn.pragma_update(None, "synchronous", if durable { "FULL" } else { "OFF" })?;
            self.durable = durable;
        }
        let tx = conn.transaction()?;
        {
            let mut statement = tx.prepare_cached(sql)?;
            f(&mut statement)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn conn(&self) -> Result<std::sync::MutexGuard<'_, Connection>, BoxError> {
        Ok(self.conn.lock().map_err(|_| "the SQLite connection's lock is poisoned")?)
    }
}

impl Store for Sqlite {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        self.commit(durable, "INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)", |statement| {
            for (key, value) in pairs {
                statement.execute(params![key, value])?;
            }
            Ok(())
        })
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        self.commit(durable, "DELETE FROM kv WHERE key = ?1", |statement| {
            for key in keys {
                statement.execute(params![key])?;
            }
            Ok(())
        })
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(SqliteReader(Connection::open(&self.path)?)))
    }

    fn len(&self) -> Result<u64, BoxError> {
        let count: i64 = self.conn()?.query_row("SELECT COUNT(*) FROM kv", [], |row| row.get(0))?;
        Ok(count as u64)
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let conn = self.conn()?;
        let mut statement = conn.prepare("SELECT key, value FROM kv ORDER BY key")?;
        let mut rows = statement.query([])?;
        let mut count = 0;
        while let Some(row) = rows.next()? {
            let _value: &[u8] = row.get_ref(1)?.as_blob()?;
            count += 1;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        let conn = self.conn.get_mut().map_err(|_| "the SQLite connection's lock is poisoned")?;
        conn.execute_batch("VACUUM")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(true)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        let conn = self.conn.into_inner().map_err(|_| "the SQLite connection's lock is poisoned")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        conn.close().map_err(|(_, e)| e)?;
        Ok(())
    }
}

struct SqliteReader(Connection);

impl Reader for SqliteReader {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        let mut statement = self.0.prepare_cached("SELECT length(value) FROM kv WHERE key = ?1")?;
        let length: Option<i64> = statement.query_row(params![key], |row| row.get(0)).optional()?;
        Ok(length.map(|n| n as usize))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        let mut statement =
            self.0.prepare_cached("SELECT key, value FROM kv WHERE key >= ?1 ORDER BY key LIMIT ?2")?;
        let mut rows = statement.query(params![start, count as i64])?;
        let mut bytes = 0;
        while let Some(row) = rows.next()? {
            bytes += row.get_ref(0)?.as_blob()?.len() + row.get_ref(1)?.as_blob()?.len();
        }
        Ok(Some(bytes))
    }
}
