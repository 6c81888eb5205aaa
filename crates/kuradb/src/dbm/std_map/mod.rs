//! StdHashDbm and StdTreeDbm: the standard library's hash set and ordered set
//! behind one reader-writer lock, the baselines of the on-memory databases.
//!
//! Each record is one value of the set (`packed`): a small record sits in
//! the set's own slot, a larger one is one allocation holding the key's
//! length, the key and the value; the set compares records by key. The
//! standard containers with a pair of `Vec`s would take three times the
//! memory. The sets and what the databases need of them are in `set`.
//!
//! Readers share the lock and use only `&self` methods of the containers;
//! writers hold it exclusively and bump a version as they take it, so a
//! cursor (`cursor`) can tell without the lock that the record it read
//! still holds.
//!
//! Every change to the records (process, process_multi, process_each, set,
//! remove, cursor set and remove, clear, the load of the flat file) goes
//! through one function, `Records::change` in `store`: an update log, an
//! index or a statistics counter attaches there. A caller's value is stored
//! only through `store::encode_value` and handed back only through
//! `store::decode_value`: a value codec attaches there.

mod cursor;
mod packed;
mod set;
mod store;

use std::collections::{BTreeSet, HashSet};
use std::marker::PhantomData;
use std::path::Path;

use super::persistence::FlatLock;

pub use self::cursor::{StdHashCursor, StdTreeCursor};
use self::packed::Packed;
use self::set::{KeyHashBuilder, Reserve};
use self::store::Store;
use super::{Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::dbm::{Access, Durability};
use crate::error::Result;

/// Options of [`StdHashDbm`] and [`StdTreeDbm`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StdOptions {
    /// Records to make room for at once (StdHashDbm only; 0 for none): the
    /// reference's bucket count, 1048583 by default as there.
    pub num_buckets: usize,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
    /// How a writer locks the flat file against writers in other processes.
    pub lock: FlatLock,
}

impl Default for StdOptions {
    fn default() -> StdOptions {
        StdOptions { num_buckets: 1_048_583, truncate: false, lock: FlatLock::default() }
    }
}

impl StdOptions {
    /// Sets the records to make room for at once (StdHashDbm only; 0 for none).
    pub fn num_buckets(mut self, num_buckets: usize) -> StdOptions {
        self.num_buckets = num_buckets;
        self
    }

    /// Starts empty instead of reading an existing flat file, or not.
    pub fn truncate(mut self, truncate: bool) -> StdOptions {
        self.truncate = truncate;
        self
    }

    /// Sets how a writer locks the flat file against writers in other processes.
    pub fn lock(mut self, lock: FlatLock) -> StdOptions {
        self.lock = lock;
        self
    }

    /// `self` with the parameters StdHashDbm and StdTreeDbm take: `truncate`,
    /// and with `buckets` (a hash set's), `num_buckets` (or `buckets`).
    pub(crate) fn take_params(
        mut self,
        t: &mut crate::dbm::params::Taker<'_>,
        buckets: bool,
    ) -> Result<StdOptions> {
        (self.truncate, self.lock) = t.memory_open()?;
        if buckets {
            if let Some(n) = t.number(&["num_buckets", "buckets"])? {
                self.num_buckets = n;
            }
        }
        Ok(self)
    }
}

/// [`StdOptions`] for one of the two classes, ended by `open(path)` or
/// `open_read_only(path)`: `StdTreeDbm::builder().truncate(true).open(path)`.
#[derive(Clone, Debug)]
pub struct StdBuilder<D> {
    options: StdOptions,
    class: PhantomData<fn() -> D>,
}

impl<D> StdBuilder<D> {
    /// Sets the records to make room for at once (StdHashDbm only; 0 for none).
    pub fn num_buckets(mut self, num_buckets: usize) -> StdBuilder<D> {
        self.options.num_buckets = num_buckets;
        self
    }

    /// Starts empty instead of reading an existing flat file, or not.
    pub fn truncate(mut self, truncate: bool) -> StdBuilder<D> {
        self.options.truncate = truncate;
        self
    }

    /// Sets how a writer locks the flat file against writers in other processes.
    pub fn lock(mut self, lock: FlatLock) -> StdBuilder<D> {
        self.options.lock = lock;
        self
    }

    /// The options gathered.
    pub fn options(&self) -> &StdOptions {
        &self.options
    }
}

macro_rules! std_dbm {
    ($name:ident, $set:ty, $ordered:expr, $doc:literal, $example:literal) => {
        #[doc = $doc]
        ///
        /// Without a path it is purely in memory; with one it reads the flat
        /// file (see [`crate::dbm::flat`]) at open and writes it whole at
        /// synchronize and at close.
        ///
        /// ```
        /// use kuradb::dbm::Dbm;
        #[doc = $example]
        /// # fn main() -> kuradb::Result<()> {
        /// let dir = tempfile::tempdir().unwrap();
        /// let path = dir.path().join("casket.flat");
        #[doc = concat!("let db = ", stringify!($name), "::builder().open(&path)?;")]
        /// db.set(b"tokyo", b"13")?;
        /// db.close()?;
        #[doc = concat!("let db = ", stringify!($name), "::builder().open_read_only(&path)?;")]
        /// assert_eq!(db.get(b"tokyo")?.as_deref(), Some(&b"13"[..]));
        /// # Ok(())
        /// # }
        /// ```
        pub struct $name {
            store: Store<$set>,
        }

        impl $name {
            /// A database purely in memory.
            pub fn new(options: &StdOptions) -> $name {
                let store = Store::<$set>::new();
                store.write().set.reserve_for(options.num_buckets);
                $name { store }
            }

            /// Opens the database kept in the flat file at `path`, reading it
            /// unless `options.truncate`. A missing file is an empty database
            /// for a writer and an error for a reader.
            pub fn open(path: impl AsRef<Path>, access: Access, options: &StdOptions) -> Result<$name> {
                let store = Store::<$set>::open(path.as_ref(), access, options.truncate, &options.lock)?;
                store.write().set.reserve_for(options.num_buckets);
                Ok($name { store })
            }

            /// Options to open a database with, set one by one and ended
            /// by [`StdBuilder::open`] or [`StdBuilder::open_read_only`].
            pub fn builder() -> StdBuilder<$name> {
                StdBuilder { options: StdOptions::default(), class: PhantomData }
            }

            /// Writes the flat file (if the database has one and is writable) and closes.
            pub fn close(mut self) -> Result<()> {
                self.store.close()
            }
        }

        impl StdBuilder<$name> {
            #[doc = concat!("Opens the database at `path` for reading and writing: [`", stringify!($name), "::open`] with [`Access::ReadWrite`].")]
            pub fn open(&self, path: impl AsRef<Path>) -> Result<$name> {
                $name::open(path, Access::ReadWrite, &self.options)
            }

            #[doc = concat!("Opens the database at `path` for reading only: [`", stringify!($name), "::open`] with [`Access::ReadOnly`].")]
            pub fn open_read_only(&self, path: impl AsRef<Path>) -> Result<$name> {
                $name::open(path, Access::ReadOnly, &self.options)
            }
        }

        impl Dbm for $name {
            fn close(self: Box<Self>) -> Result<()> {
                $name::close(*self)
            }
            fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
                self.store.process(key, access, f)
            }
            fn process_multi<'a>(
                &self,
                keys: &[&[u8]],
                access: Access,
                f: &mut MultiProcessor<'a>,
            ) -> Result<()> {
                self.store.process_multi(keys, access, f)
            }
            fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
                self.store.process_each(access, f)
            }
            // One walk of the container instead of a look and then a change.
            fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
                self.store.put(key, value, true)
            }
            fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
                self.store.put(key, value, false)
            }
            fn remove(&self, key: &[u8]) -> Result<bool> {
                self.store.remove(key)
            }
            fn count(&self) -> Result<u64> {
                self.store.count()
            }
            fn file_size(&self) -> Result<u64> {
                Ok(self.store.mem_size() as u64)
            }
            fn path(&self) -> Option<&Path> {
                self.store.persistence.path.as_deref()
            }
            fn clear(&self) -> Result<()> {
                self.store.clear()
            }
            fn rebuild(&self) -> Result<()> {
                self.store.rebuild()
            }
            /// A hash set's rebuild takes `num_buckets` (or `buckets`): it
            /// makes room for that many records; an ordered set has no
            /// buckets and refuses it.
            fn rebuild_with_params(&self, params: &crate::dbm::params::Params) -> Result<()> {
                let what = concat!("rebuilding a ", stringify!($name));
                let mut t = crate::dbm::params::Taker::new(params, what);
                let room = if $ordered { None } else { t.number::<usize>(&["num_buckets", "buckets"])? };
                t.finish()?;
                self.store.rebuild()?;
                if let Some(n) = room {
                    let mut records = self.store.write();
                    let more = n.saturating_sub(set::StdSet::count(&records.set));
                    records.set.reserve_for(more);
                }
                Ok(())
            }
            fn should_be_rebuilt(&self) -> Result<bool> {
                Ok(false)
            }
            fn synchronize(&self, durability: Durability) -> Result<()> {
                self.store.synchronize(durability)
            }
            fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
                self.store.copy_file_data(dest, durability)
            }
            fn inspect(&self) -> Result<Vec<(String, String)>> {
                Ok(self.store.inspect())
            }
            fn is_healthy(&self) -> bool {
                true
            }
            fn is_ordered(&self) -> bool {
                $ordered
            }
            /// Its records live in memory; its file, if any, is written whole at a synchronization.
            fn restores_to_last_sync(&self) -> bool {
                true
            }
            fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
                self.store.persistence.check_process()?;
                Ok(Box::new(self.cursor()))
            }
        }
    };
}

std_dbm!(
    StdHashDbm,
    HashSet<Packed, KeyHashBuilder>,
    false,
    "An on-memory database on the standard hash set, behind one reader-writer lock.",
    "use kuradb::dbm::std_map::{StdHashDbm, StdOptions};"
);

std_dbm!(
    StdTreeDbm,
    BTreeSet<Packed>,
    true,
    "An on-memory database on the standard ordered set, behind one reader-writer lock; keys in byte order.",
    "use kuradb::dbm::std_map::{StdTreeDbm, StdOptions};"
);
