//! What TinyDbm and CacheDbm both are: a sharded table of records and its
//! flat file, with the housekeeping they share written once.

use std::path::Path;

use super::cursor::HashCursor;
use super::shard::Shard;
use super::table::Table;
use crate::dbm::flat::{self, refused_change};
use crate::dbm::persistence::{FlatLock, Persistence};
use crate::dbm::{Access, Action, Cursor, Dbm, Durability, EachProcessor, MultiProcessor, Processor};
use crate::error::Result;

/// A table of records with `L` links each, and its flat file.
pub(crate) struct Store<const L: usize> {
    pub(crate) table: Table<L>,
    persistence: Persistence,
    closed: bool,
}

impl<const L: usize> Store<L> {
    /// Purely in memory.
    pub(crate) fn new(table: Table<L>) -> Store<L> {
        Store { table, persistence: Persistence::none(), closed: false }
    }

    /// Reads the flat file at `path` into the table (unless `truncate`),
    /// each record stored as a write would store it, `after` seeing its
    /// shard; the file is the table's from now on.
    pub(crate) fn load(
        &mut self,
        path: &Path,
        writable: bool,
        truncate: bool,
        lock: &FlatLock,
        after: impl Fn(&mut Shard<L>),
    ) -> Result<()> {
        let table = &self.table;
        self.persistence =
            Persistence::open(path, Access::from_writable(writable), truncate, lock, |k, v| {
                table.write(k, |_| Action::set(v), &after).map(|_| ())
            })?;
        Ok(())
    }

    /// Writes the flat file (if there is one and it may change) and marks the table closed.
    pub(crate) fn close(&mut self) -> Result<()> {
        self.closed = true;
        self.synchronize(Durability::Soft)
    }

    /// Shows `key`'s value to `f` under its shard's shared lock; any answer but keeping it is refused.
    pub(crate) fn read(&self, key: &[u8], f: &mut Processor<'_>) -> Result<()> {
        self.persistence.check_process()?;
        self.table.read(key, |v| match f(v) {
            Action::Keep => Ok(()),
            _ => Err(refused_change()),
        })
    }

    /// Carries out `f`'s answer for `key` (which may keep it unchanged
    /// unless `writable`), `after` seeing the shard.
    pub(crate) fn write(
        &self,
        key: &[u8],
        writable: bool,
        f: &mut Processor<'_>,
        after: impl FnOnce(&mut Shard<L>),
    ) -> Result<()> {
        self.persistence.check_writable(writable)?;
        if writable {
            return self.table.write(key, f, after).map(|_| ());
        }
        let mut refused = false;
        self.table.write(
            key,
            |v| {
                let action = f(v);
                if action != Action::Keep {
                    refused = true;
                    return Action::Keep;
                }
                action
            },
            after,
        )?;
        if refused {
            return Err(refused_change());
        }
        Ok(())
    }

    pub(crate) fn process_multi(
        &self,
        keys: &[&[u8]],
        access: Access,
        f: &mut MultiProcessor<'_>,
        after: impl FnMut(&mut Shard<L>),
    ) -> Result<()> {
        self.persistence.check_writable(access.is_writable())?;
        self.table.write_multi(keys, access.is_writable(), f, after)
    }

    pub(crate) fn process_each(&self, access: Access, f: &mut EachProcessor<'_>) -> Result<()> {
        self.persistence.check_writable(access.is_writable())?;
        self.table.each(access.is_writable(), f)
    }

    pub(crate) fn count(&self) -> Result<u64> {
        self.persistence.check_process()?;
        Ok(self.table.count())
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        self.persistence.path.as_deref()
    }

    pub(crate) fn clear(&self) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.table.clear()
    }

    /// Sizes the buckets to the records, at least `min_buckets` in all,
    /// after `trim` has had each shard.
    pub(crate) fn rebuild(&self, min_buckets: u64, trim: impl Fn(&mut Shard<L>)) -> Result<()> {
        self.persistence.check_writable(true)?;
        self.table.fit(min_buckets, trim);
        Ok(())
    }

    pub(crate) fn synchronize(&self, durability: Durability) -> Result<()> {
        self.persistence.save(durability.is_hard(), |w| self.table.put_all(w))
    }

    pub(crate) fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        flat::write(dest, durability.is_hard(), |w| self.table.put_all(w))
    }

    /// The figures of `class`, then `extra` ones.
    pub(crate) fn inspect(&self, class: &str, extra: &[(&str, u64)]) -> Vec<(String, String)> {
        let mut figures = vec![
            ("class".to_string(), class.to_string()),
            ("num_records".to_string(), self.table.count().to_string()),
            ("num_buckets".to_string(), self.table.num_buckets().to_string()),
            ("mem_size".to_string(), self.table.mem_size().to_string()),
        ];
        figures.extend(extra.iter().map(|(name, n)| (name.to_string(), n.to_string())));
        figures.push(("path".to_string(), self.path().map(|p| p.display().to_string()).unwrap_or_default()));
        figures
    }

    /// A cursor over the table, whose `set` and `remove` go through `db`.
    pub(crate) fn cursor<'a>(&'a self, db: &'a dyn Dbm) -> HashCursor<'a, L> {
        HashCursor::new(&self.table, db)
    }

    pub(crate) fn iter<'a>(&'a self, db: &'a dyn Dbm) -> Result<Box<dyn Cursor + 'a>> {
        self.persistence.check_process()?;
        Ok(Box::new(self.cursor(db)))
    }
}

impl<const L: usize> Drop for Store<L> {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.synchronize(Durability::Soft);
        }
    }
}

/// The `Dbm` methods TinyDbm and CacheDbm answer alike from their `store`
/// field: written once here, expanded inside each one's `impl Dbm`.
macro_rules! dbm_methods_of_store {
    () => {
        fn process_each<'a>(
            &self,
            access: $crate::dbm::Access,
            f: &mut $crate::dbm::EachProcessor<'a>,
        ) -> $crate::Result<()> {
            self.store.process_each(access, f)
        }

        fn count(&self) -> $crate::Result<u64> {
            self.store.count()
        }

        fn file_size(&self) -> $crate::Result<u64> {
            Ok(self.store.table.mem_size())
        }

        fn path(&self) -> Option<&std::path::Path> {
            self.store.path()
        }

        fn clear(&self) -> $crate::Result<()> {
            self.store.clear()
        }

        fn synchronize(&self, durability: $crate::dbm::Durability) -> $crate::Result<()> {
            self.store.synchronize(durability)
        }

        fn copy_file_data(
            &self,
            dest: &std::path::Path,
            durability: $crate::dbm::Durability,
        ) -> $crate::Result<()> {
            self.store.copy_file_data(dest, durability)
        }

        fn is_healthy(&self) -> bool {
            true
        }

        fn is_ordered(&self) -> bool {
            false
        }

        /// Its records live in memory; its file, if any, is written whole at a synchronization.
        fn restores_to_last_sync(&self) -> bool {
            true
        }

        fn iter(&self) -> $crate::Result<Box<dyn $crate::dbm::Cursor + '_>> {
            self.store.iter(self)
        }
    };
}

pub(crate) use dbm_methods_of_store;
