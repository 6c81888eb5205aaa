//! StdHashDbm and StdTreeDbm: the standard library's hash set and ordered set
//! behind one reader-writer lock, the baselines of the on-memory databases.
//!
//! Each record is one allocation holding the key's length, the key and the
//! value (`Packed`), and the set compares records by key: the standard
//! containers with a pair of `Vec`s would take three times the memory.
//! Readers share the lock and use only `&self` methods of the containers;
//! writers hold it exclusively.

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::path::Path;

use parking_lot::RwLock;

use super::flat::{self, refused_change, Persistence};
use super::{duplication, show_key, Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

/// A record packed in one allocation: key length (varint), key, value.
struct Packed(Box<[u8]>);

impl Packed {
    fn new(key: &[u8], value: &[u8]) -> Packed {
        let mut bytes = Vec::with_capacity(key.len() + value.len() + 5);
        let mut n = key.len();
        while n >= 0x80 {
            bytes.push((n as u8) | 0x80);
            n >>= 7;
        }
        bytes.push(n as u8);
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        Packed(bytes.into_boxed_slice())
    }

    /// Where the key starts and its length.
    fn key_span(&self) -> (usize, usize) {
        let (mut n, mut shift, mut at) = (0usize, 0, 0);
        loop {
            let b = self.0[at];
            at += 1;
            n |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return (at, n);
            }
            shift += 7;
        }
    }

    fn key(&self) -> &[u8] {
        let (at, len) = self.key_span();
        &self.0[at..at + len]
    }

    fn value(&self) -> &[u8] {
        let (at, len) = self.key_span();
        &self.0[at + len..]
    }

    /// Heap bytes, with the allocator's header.
    fn heap_size(&self) -> usize {
        (self.0.len() + 8).next_multiple_of(16).max(32)
    }
}

impl Borrow<[u8]> for Packed {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl PartialEq for Packed {
    fn eq(&self, other: &Packed) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Packed {}

impl Hash for Packed {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl PartialOrd for Packed {
    fn partial_cmp(&self, other: &Packed) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Packed {
    fn cmp(&self, other: &Packed) -> std::cmp::Ordering {
        self.key().cmp(other.key())
    }
}

/// The standard set type behind a database, with what the databases need of it.
trait StdSet: Default + Send + Sync {
    const CLASS: &'static str;
    fn find(&self, key: &[u8]) -> Option<&Packed>;
    /// Stores `record`, answering the one it replaced.
    fn put(&mut self, record: Packed) -> Option<Packed>;
    /// Removes `key`'s record, answering it.
    fn take(&mut self, key: &[u8]) -> Option<Packed>;
    fn count(&self) -> usize;
    fn each(&self) -> Box<dyn Iterator<Item = &Packed> + '_>;
    fn wipe(&mut self);
    fn compact(&mut self);
    /// Bytes the container itself takes, besides the records' own.
    fn overhead(&self) -> usize;
}

/// Hashes a key in one call: `[u8]`'s `Hash` writes the length then the bytes.
#[derive(Clone, Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = self.0.wrapping_add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type KeyHashBuilder = std::hash::BuildHasherDefault<KeyHasher>;

impl StdSet for HashSet<Packed, KeyHashBuilder> {
    const CLASS: &'static str = "StdHashDbm";
    fn find(&self, key: &[u8]) -> Option<&Packed> {
        self.get(key)
    }
    fn put(&mut self, record: Packed) -> Option<Packed> {
        self.replace(record)
    }
    fn take(&mut self, key: &[u8]) -> Option<Packed> {
        self.take(key)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn each(&self) -> Box<dyn Iterator<Item = &Packed> + '_> {
        Box::new(self.iter())
    }
    fn wipe(&mut self) {
        *self = HashSet::default();
    }
    fn compact(&mut self) {
        self.shrink_to_fit();
    }
    fn overhead(&self) -> usize {
        // hashbrown: a slot and a control byte per bucket, buckets a power of two above 8/7 of capacity.
        let buckets = (self.capacity() * 8 / 7).next_power_of_two();
        buckets * (std::mem::size_of::<Packed>() + 1)
    }
}

impl StdSet for BTreeSet<Packed> {
    const CLASS: &'static str = "StdTreeDbm";
    fn find(&self, key: &[u8]) -> Option<&Packed> {
        self.get(key)
    }
    fn put(&mut self, record: Packed) -> Option<Packed> {
        self.replace(record)
    }
    fn take(&mut self, key: &[u8]) -> Option<Packed> {
        self.take(key)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn each(&self) -> Box<dyn Iterator<Item = &Packed> + '_> {
        Box::new(self.iter())
    }
    fn wipe(&mut self) {
        self.clear();
    }
    fn compact(&mut self) {}
    fn overhead(&self) -> usize {
        // Nodes of 11 slots, two thirds full on average, with their header and edges.
        std::mem::size_of::<Self>() + self.len() * (std::mem::size_of::<Packed>() * 3 / 2 + 8)
    }
}

/// What both databases are: a set behind a lock, and its flat file.
struct Core<S> {
    set: RwLock<Inner<S>>,
    persistence: Persistence,
    closed: bool,
}

struct Inner<S> {
    set: S,
    /// The records' heap bytes.
    bytes: usize,
    /// Bumped by every change, so that a cursor knows when what it saw still holds.
    version: u64,
}

impl<S: StdSet> Core<S> {
    fn new() -> Core<S> {
        Core {
            set: RwLock::new(Inner { set: S::default(), bytes: 0, version: 0 }),
            persistence: Persistence::none(),
            closed: false,
        }
    }

    fn open(path: &Path, writable: bool, truncate: bool) -> Result<Core<S>> {
        let mut inner = Inner { set: S::default(), bytes: 0, version: 0 };
        let persistence = Persistence::open(path, writable, truncate, |k, v| {
            inner.store(k, v);
            Ok(())
        })?;
        Ok(Core { set: RwLock::new(inner), persistence, closed: false })
    }

    fn save(&self, hard: bool) -> Result<()> {
        let inner = self.set.read();
        self.persistence.save(hard, |w| inner.set.each().try_for_each(|r| w.put(r.key(), r.value())))
    }

    fn close(&mut self) -> Result<()> {
        self.closed = true;
        self.save(false)
    }
}

impl<S: StdSet> Inner<S> {
    fn store(&mut self, key: &[u8], value: &[u8]) {
        let record = Packed::new(key, value);
        self.bytes += record.heap_size();
        self.version += 1;
        if let Some(old) = self.set.put(record) {
            self.bytes -= old.heap_size();
        }
    }

    fn apply(&mut self, key: &[u8], action: Action<'_>) {
        match action {
            Action::Keep => {}
            Action::Set(value) => self.store(key, &value),
            Action::Remove => {
                self.remove(key);
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> bool {
        let Some(old) = self.set.take(key) else { return false };
        self.bytes -= old.heap_size();
        self.version += 1;
        true
    }

    fn process(&mut self, key: &[u8], f: &mut Processor<'_>) {
        let action = f(self.set.find(key).map(Packed::value));
        self.apply(key, action);
    }
}

impl<S: StdSet> Core<S> {
    fn process(&self, key: &[u8], writable: bool, f: &mut Processor<'_>) -> Result<()> {
        if !writable {
            let inner = self.set.read();
            return match f(inner.set.find(key).map(Packed::value)) {
                Action::Keep => Ok(()),
                _ => Err(refused_change()),
            };
        }
        self.persistence.check_writable(true)?;
        self.set.write().process(key, f);
        Ok(())
    }

    fn process_multi(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'_>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        let mut inner = self.set.write();
        for (i, key) in keys.iter().enumerate() {
            let action = f(i, key, inner.set.find(key).map(Packed::value));
            if !writable && action != Action::Keep {
                return Err(refused_change());
            }
            inner.apply(key, action);
        }
        Ok(())
    }

    fn process_each(&self, writable: bool, f: &mut EachProcessor<'_>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        let mut inner = self.set.write();
        // Changes wait until the walk is over: the set cannot change under its iterator.
        let mut changes: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for record in inner.set.each() {
            match f(record.key(), record.value()) {
                Action::Keep => {}
                _ if !writable => return Err(refused_change()),
                Action::Remove => changes.push((record.key().to_vec(), None)),
                Action::Set(v) => changes.push((record.key().to_vec(), Some(v.into_owned()))),
            }
        }
        for (key, value) in changes {
            match value {
                Some(v) => inner.store(&key, &v),
                None => inner.apply(&key, Action::Remove),
            }
        }
        Ok(())
    }

    fn inspect(&self) -> Vec<(String, String)> {
        let inner = self.set.read();
        vec![
            ("class".to_string(), S::CLASS.to_string()),
            ("num_records".to_string(), inner.set.count().to_string()),
            ("mem_size".to_string(), (inner.bytes + inner.set.overhead()).to_string()),
            (
                "path".to_string(),
                self.persistence.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
            ),
        ]
    }
}

/// Options of [`StdHashDbm`] and [`StdTreeDbm`].
#[derive(Clone, Debug)]
pub struct StdOptions {
    /// Records to make room for at once (StdHashDbm only; 0 for none): the
    /// reference's bucket count, 1048583 by default as there.
    pub num_buckets: usize,
    /// Starts empty instead of reading an existing flat file (which the
    /// next synchronize or close overwrites).
    pub truncate: bool,
}

impl Default for StdOptions {
    fn default() -> StdOptions {
        StdOptions { num_buckets: 1_048_583, truncate: false }
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
        #[doc = concat!("let db = ", stringify!($name), "::open(&path, true, &StdOptions::default())?;")]
        /// db.set(b"tokyo", b"13", true)?;
        /// db.close()?;
        #[doc = concat!("let db = ", stringify!($name), "::open(&path, false, &StdOptions::default())?;")]
        /// assert_eq!(db.get(b"tokyo")?.as_deref(), Some(&b"13"[..]));
        /// # Ok(())
        /// # }
        /// ```
        pub struct $name {
            core: Core<$set>,
        }

        impl $name {
            /// A database purely in memory.
            pub fn new(options: &StdOptions) -> $name {
                let core = Core::<$set>::new();
                core.set.write().set.reserve_for(options.num_buckets);
                $name { core }
            }

            /// Opens the database kept in the flat file at `path`, reading it
            /// unless `options.truncate`. A missing file is an empty database
            /// for a writer and an error for a reader.
            pub fn open(path: impl AsRef<Path>, writable: bool, options: &StdOptions) -> Result<$name> {
                let core = Core::<$set>::open(path.as_ref(), writable, options.truncate)?;
                core.set.write().set.reserve_for(options.num_buckets);
                Ok($name { core })
            }

            /// Writes the flat file (if the database has one and is writable) and closes.
            pub fn close(mut self) -> Result<()> {
                self.core.close()
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                if !self.core.closed {
                    let _ = self.core.close();
                }
            }
        }

        impl Dbm for $name {
            fn process<'a>(&self, key: &[u8], writable: bool, f: &mut Processor<'a>) -> Result<()> {
                self.core.process(key, writable, f)
            }
            fn process_multi<'a>(
                &self,
                keys: &[&[u8]],
                writable: bool,
                f: &mut MultiProcessor<'a>,
            ) -> Result<()> {
                self.core.process_multi(keys, writable, f)
            }
            fn process_each<'a>(&self, writable: bool, f: &mut EachProcessor<'a>) -> Result<()> {
                self.core.process_each(writable, f)
            }
            // One walk of the container instead of a look and then a change.
            fn set(&self, key: &[u8], value: &[u8], overwrite: bool) -> Result<()> {
                self.core.persistence.check_writable(true)?;
                let mut inner = self.core.set.write();
                if !overwrite && inner.set.find(key).is_some() {
                    return Err(duplication(key));
                }
                inner.store(key, value);
                Ok(())
            }
            fn remove(&self, key: &[u8]) -> Result<bool> {
                self.core.persistence.check_writable(true)?;
                Ok(self.core.set.write().remove(key))
            }
            fn count(&self) -> Result<u64> {
                Ok(self.core.set.read().set.count() as u64)
            }
            fn file_size(&self) -> Result<u64> {
                let inner = self.core.set.read();
                Ok((inner.bytes + inner.set.overhead()) as u64)
            }
            fn path(&self) -> Option<&Path> {
                self.core.persistence.path.as_deref()
            }
            fn clear(&self) -> Result<()> {
                self.core.persistence.check_writable(true)?;
                let mut inner = self.core.set.write();
                inner.set.wipe();
                inner.bytes = 0;
                inner.version += 1;
                Ok(())
            }
            fn rebuild(&self) -> Result<()> {
                self.core.persistence.check_writable(true)?;
                self.core.set.write().set.compact();
                Ok(())
            }
            fn should_be_rebuilt(&self) -> Result<bool> {
                Ok(false)
            }
            fn synchronize(&self, hard: bool) -> Result<()> {
                self.core.save(hard)
            }
            fn copy_file_data(&self, dest: &Path, hard: bool) -> Result<()> {
                let inner = self.core.set.read();
                flat::write(dest, hard, |w| inner.set.each().try_for_each(|r| w.put(r.key(), r.value())))
            }
            fn inspect(&self) -> Result<Vec<(String, String)>> {
                Ok(self.core.inspect())
            }
            fn is_healthy(&self) -> bool {
                true
            }
            fn is_ordered(&self) -> bool {
                $ordered
            }
            fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
                Ok(Box::new(self.cursor()))
            }
        }
    };
}

trait Reserve {
    fn reserve_for(&mut self, n: usize);
}

impl Reserve for HashSet<Packed, KeyHashBuilder> {
    fn reserve_for(&mut self, n: usize) {
        self.reserve(n);
    }
}

impl Reserve for BTreeSet<Packed> {
    fn reserve_for(&mut self, _: usize) {}
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

fn bound(key: &[u8], inclusive: bool) -> Bound<&[u8]> {
    if inclusive {
        Bound::Included(key)
    } else {
        Bound::Excluded(key)
    }
}

fn past_end() -> Error {
    Error::new(ErrorKind::NotFound, "the cursor is past the last record")
}

impl StdHashDbm {
    /// A cursor, not yet positioned. It visits the keys present when it is
    /// moved to the first record (a snapshot of keys), skipping those removed since.
    pub fn cursor(&self) -> StdHashCursor<'_> {
        StdHashCursor { db: self, keys: Vec::new(), pos: 0, after_jump: false, seen: None }
    }
}

/// A cursor of a [`StdHashDbm`]: the keys to visit and the position among them.
pub struct StdHashCursor<'a> {
    db: &'a StdHashDbm,
    keys: Vec<Vec<u8>>,
    pos: usize,
    /// `keys` holds only the key jumped to: the walk on from it needs the rest.
    after_jump: bool,
    /// The value at the position and the set's version when it was read.
    seen: Option<(Vec<u8>, u64)>,
}

impl StdHashCursor<'_> {
    fn snapshot(&self) -> Vec<Vec<u8>> {
        self.db.core.set.read().set.iter().map(|r| r.key().to_vec()).collect()
    }

    /// The record at the position, moving past keys removed meanwhile.
    fn current(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        let inner = self.db.core.set.read();
        if let (Some((value, version)), Some(key)) = (&self.seen, self.keys.get(self.pos)) {
            if *version == inner.version {
                return Some((key.clone(), value.clone()));
            }
        }
        self.seen = None;
        while let Some(key) = self.keys.get(self.pos) {
            if let Some(r) = inner.set.get(key.as_slice()) {
                return Some((r.key().to_vec(), r.value().to_vec()));
            }
            self.pos += 1;
        }
        None
    }
}

impl Cursor for StdHashCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.seen = None;
        self.keys = self.snapshot();
        self.pos = 0;
        self.after_jump = false;
        Ok(())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let found = {
            let inner = self.db.core.set.read();
            inner.set.get(key).map(|r| (r.value().to_vec(), inner.version))
        };
        self.seen = found;
        if self.seen.is_none() {
            self.keys.clear();
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no record {} to jump to (a hash database jumps only to existing keys)",
                    show_key(key)
                ),
            ));
        }
        self.keys = vec![key.to_vec()];
        self.pos = 0;
        self.after_jump = true;
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.seen = None;
        if self.after_jump {
            self.after_jump = false;
            let key = self.keys.pop().unwrap_or_default();
            self.keys = self.snapshot();
            self.pos = self.keys.iter().position(|k| *k == key).unwrap_or(self.keys.len());
        }
        self.pos = (self.pos + 1).min(self.keys.len());
        Ok(())
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.current())
    }

    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.current() {
            Some((key, _)) => self.db.set(&key, value, true),
            None => Err(past_end()),
        }
    }

    fn remove(&mut self) -> Result<()> {
        match self.current() {
            Some((key, _)) => self.db.remove(&key).map(|_| ()),
            None => Err(past_end()),
        }
    }
}

impl StdTreeDbm {
    /// An ordered cursor, not yet positioned. Each move looks its key up
    /// afresh, so concurrent updates never invalidate it.
    pub fn cursor(&self) -> StdTreeCursor<'_> {
        StdTreeCursor { db: self, at: None }
    }

    /// The version of the set now.
    fn version(&self) -> u64 {
        self.core.set.read().version
    }

    /// Forward: the first record at or after `key` (after only unless
    /// `inclusive`), the first of all without a key; backward likewise.
    fn seek(&self, forward: bool, key: Option<&[u8]>, inclusive: bool) -> Option<Seen> {
        let inner = self.core.set.read();
        let set = &inner.set;
        let exact = key.filter(|_| inclusive).and_then(|k| set.get(k));
        let found = match (forward, key) {
            // A key that is there is found in one descent; a range walks both of its edges.
            _ if exact.is_some() => exact,
            (true, None) => set.first(),
            (false, None) => set.last(),
            (true, Some(k)) => set.range::<[u8], _>((bound(k, inclusive), Bound::Unbounded)).next(),
            (false, Some(k)) => set.range::<[u8], _>((Bound::Unbounded, bound(k, inclusive))).next_back(),
        };
        found.map(|r| Seen { key: r.key().to_vec(), value: r.value().to_vec(), version: inner.version })
    }
}

/// A record as a cursor saw it, and the set's version then.
struct Seen {
    key: Vec<u8>,
    value: Vec<u8>,
    version: u64,
}

/// A position in a [`StdTreeDbm`]: the key of its record.
pub struct StdTreeCursor<'a> {
    db: &'a StdTreeDbm,
    at: Option<Seen>,
}

impl StdTreeCursor<'_> {
    fn seek(&mut self, forward: bool, key: Option<&[u8]>, inclusive: bool) {
        self.at = self.db.seek(forward, key, inclusive);
    }

    /// Moves by `step` records (0: stays, finding the key again if the set
    /// changed since it was seen).
    fn step(&mut self, step: isize) {
        let Some(seen) = self.at.take() else { return };
        if step == 0 && seen.version == self.db.version() {
            // Nothing changed since the record was seen: it is still there as it was.
            self.at = Some(seen);
            return;
        }
        self.seek(step >= 0, Some(seen.key.as_slice()), step == 0);
    }

    /// The record at the position, as it is now.
    fn current(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.step(0);
        self.at.as_ref().map(|s| (s.key.clone(), s.value.clone()))
    }
}

impl Cursor for StdTreeCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.seek(true, None, true);
        Ok(())
    }
    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.seek(true, Some(key), true);
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.step(1);
        Ok(())
    }
    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.current())
    }
    fn set(&mut self, value: &[u8]) -> Result<()> {
        match self.current() {
            Some((key, _)) => self.db.set(&key, value, true),
            None => Err(past_end()),
        }
    }
    fn remove(&mut self) -> Result<()> {
        match self.current() {
            Some((key, _)) => self.db.remove(&key).map(|_| ()),
            None => Err(past_end()),
        }
    }
    fn last(&mut self) -> Result<()> {
        self.seek(false, None, true);
        Ok(())
    }
    fn jump_lower(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(false, Some(key), inclusive);
        Ok(())
    }
    fn jump_upper(&mut self, key: &[u8], inclusive: bool) -> Result<()> {
        self.seek(true, Some(key), inclusive);
        Ok(())
    }
    fn previous(&mut self) -> Result<()> {
        self.step(-1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_records_answer_key_and_value() {
        for (k, v) in [(&b""[..], &b""[..]), (b"a", b"xyz"), (&[7u8; 300][..], b"")] {
            let r = Packed::new(k, v);
            assert_eq!((r.key(), r.value()), (k, v));
        }
    }

    #[test]
    fn a_tree_cursor_walks_both_ways_and_survives_removal() {
        let db = StdTreeDbm::new(&StdOptions::default());
        for k in [b"b", b"d", b"f"] {
            db.set(k, b"v", true).unwrap();
        }
        let mut c = db.cursor();
        c.jump(b"c").unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"d");
        c.remove().unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"f");
        c.previous().unwrap();
        assert_eq!(c.get().unwrap().unwrap().0, b"b");
        c.jump_lower(b"b", false).unwrap();
        assert_eq!(c.get().unwrap(), None);
    }

    #[test]
    fn a_hash_cursor_visits_every_record_once() {
        let db = StdHashDbm::new(&StdOptions { num_buckets: 10, truncate: false });
        for i in 0..100u32 {
            db.set(&i.to_be_bytes(), b"v", true).unwrap();
        }
        let mut c = db.cursor();
        c.jump(&5u32.to_be_bytes()).unwrap();
        c.next().unwrap();
        c.first().unwrap();
        let mut seen = std::collections::BTreeSet::new();
        while let Some((k, _)) = c.get().unwrap() {
            assert!(seen.insert(k));
            c.next().unwrap();
        }
        assert_eq!(seen.len(), 100);
        assert_eq!(c.jump(b"none").unwrap_err().kind(), ErrorKind::NotFound);
    }
}
