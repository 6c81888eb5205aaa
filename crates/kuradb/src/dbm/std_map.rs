//! StdHashDbm and StdTreeDbm: the standard library's hash set and ordered set
//! behind one reader-writer lock, the baselines of the on-memory databases.
//!
//! Each record is one value of the set (`Packed`): a small record sits in
//! the set's own slot, a larger one is one allocation holding the key's
//! length, the key and the value; the set compares records by key. The
//! standard containers with a pair of `Vec`s would take three times the
//! memory.
//!
//! Readers share the lock and use only `&self` methods of the containers;
//! writers hold it exclusively and bump a version as they take it, so a
//! cursor can tell without the lock that the record it read still holds.

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{RwLock, RwLockWriteGuard};
use ref_cast::RefCast;

use super::comparator::compare_bytes;
use super::flat::{self, refused_change, Persistence};
use super::{duplication, show_key, Action, Cursor, Dbm, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

/// A record in the set's own slot when it is small (as C++'s short strings
/// are), else in one allocation holding the key's length, the key and the
/// value.
enum Packed {
    Inline(InlineRecord),
    Heap(Box<[u8]>),
}

/// The most key and value bytes a record keeps in its slot: what fits beside
/// the two lengths and the variant's tag in 24 bytes, which a boxed slice
/// with a tag, aligned, takes anyway.
const INLINE: usize = 21;

#[derive(Clone, Copy)]
struct InlineRecord {
    key_len: u8,
    len: u8,
    bytes: [u8; INLINE],
}

const _: () = assert!(std::mem::size_of::<Packed>() == 24);

impl Packed {
    fn new(key: &[u8], value: &[u8]) -> Packed {
        let len = key.len() + value.len();
        if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            bytes[key.len()..len].copy_from_slice(value);
            return Packed::Inline(InlineRecord { key_len: key.len() as u8, len: len as u8, bytes });
        }
        let mut bytes = Vec::with_capacity(len + 5);
        let mut n = key.len();
        while n >= 0x80 {
            bytes.push((n as u8) | 0x80);
            n >>= 7;
        }
        bytes.push(n as u8);
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        Packed::Heap(bytes.into_boxed_slice())
    }

    /// The key and the value.
    #[inline]
    fn parts(&self) -> (&[u8], &[u8]) {
        match self {
            Packed::Inline(r) => r.bytes[..usize::from(r.len)].split_at(usize::from(r.key_len)),
            Packed::Heap(bytes) => {
                let (mut n, mut shift, mut at) = (0usize, 0, 0);
                loop {
                    let b = bytes[at];
                    at += 1;
                    n |= usize::from(b & 0x7f) << shift;
                    if b & 0x80 == 0 {
                        break;
                    }
                    shift += 7;
                }
                bytes[at..].split_at(n)
            }
        }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.parts().0
    }

    fn value(&self) -> &[u8] {
        self.parts().1
    }

    /// Heap bytes, with the allocator's header: none for a record in its slot.
    fn heap_size(&self) -> usize {
        match self {
            Packed::Inline(_) => 0,
            Packed::Heap(bytes) => (bytes.len() + 8).next_multiple_of(16).max(32),
        }
    }
}

/// A key as the sets order and hash it: the byte order of `[u8]`, by the
/// comparison that spares most calls to `memcmp`.
#[derive(RefCast)]
#[repr(transparent)]
struct Key([u8]);

impl Key {
    fn of(bytes: &[u8]) -> &Key {
        Key::ref_cast(bytes)
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.0 == other.0
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        compare_bytes(&self.0, &other.0)
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl Borrow<Key> for Packed {
    fn borrow(&self) -> &Key {
        Key::of(self.key())
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
        Key::of(self.key()).hash(state)
    }
}

impl PartialOrd for Packed {
    fn partial_cmp(&self, other: &Packed) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Packed {
    fn cmp(&self, other: &Packed) -> std::cmp::Ordering {
        Key::of(self.key()).cmp(Key::of(other.key()))
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
        self.get(Key::of(key))
    }
    fn put(&mut self, record: Packed) -> Option<Packed> {
        self.replace(record)
    }
    fn take(&mut self, key: &[u8]) -> Option<Packed> {
        self.take(Key::of(key))
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
        self.get(Key::of(key))
    }
    fn put(&mut self, record: Packed) -> Option<Packed> {
        self.replace(record)
    }
    fn take(&mut self, key: &[u8]) -> Option<Packed> {
        self.take(Key::of(key))
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
    /// Bumped by every writer as it takes the lock, before it changes
    /// anything: a cursor that reads the number it saw with its record knows
    /// that record still holds, without taking the lock.
    version: AtomicU64,
    persistence: Persistence,
    closed: bool,
}

struct Inner<S> {
    set: S,
    /// The records' heap bytes.
    bytes: usize,
}

impl<S: StdSet> Core<S> {
    fn new() -> Core<S> {
        Core {
            set: RwLock::new(Inner { set: S::default(), bytes: 0 }),
            version: AtomicU64::new(0),
            persistence: Persistence::none(),
            closed: false,
        }
    }

    fn open(path: &Path, writable: bool, truncate: bool) -> Result<Core<S>> {
        let mut inner = Inner { set: S::default(), bytes: 0 };
        let persistence = Persistence::open(path, writable, truncate, |k, v| {
            inner.store(k, v);
            Ok(())
        })?;
        Ok(Core { set: RwLock::new(inner), version: AtomicU64::new(0), persistence, closed: false })
    }

    /// The set, for a change.
    fn write(&self) -> RwLockWriteGuard<'_, Inner<S>> {
        let inner = self.set.write();
        self.version.fetch_add(1, Ordering::AcqRel);
        inner
    }

    /// The version now: see [`Core::version`].
    fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
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
            self.persistence.check_process()?;
            let inner = self.set.read();
            return match f(inner.set.find(key).map(Packed::value)) {
                Action::Keep => Ok(()),
                _ => Err(refused_change()),
            };
        }
        self.persistence.check_writable(true)?;
        self.write().process(key, f);
        Ok(())
    }

    fn process_multi(&self, keys: &[&[u8]], writable: bool, f: &mut MultiProcessor<'_>) -> Result<()> {
        self.persistence.check_writable(writable)?;
        let mut inner = self.write();
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
        let mut inner = self.write();
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
            fn close(self: Box<Self>) -> Result<()> {
                $name::close(*self)
            }
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
                let mut inner = self.core.write();
                if !overwrite && inner.set.find(key).is_some() {
                    return Err(duplication(key));
                }
                inner.store(key, value);
                Ok(())
            }
            fn remove(&self, key: &[u8]) -> Result<bool> {
                self.core.persistence.check_writable(true)?;
                Ok(self.core.write().remove(key))
            }
            fn count(&self) -> Result<u64> {
                self.core.persistence.check_process()?;
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
                let mut inner = self.core.write();
                inner.set.wipe();
                inner.bytes = 0;
                Ok(())
            }
            fn rebuild(&self) -> Result<()> {
                self.core.persistence.check_writable(true)?;
                self.core.write().set.compact();
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
                self.core.persistence.check_process()?;
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

fn bound(key: &[u8], inclusive: bool) -> Bound<&Key> {
    if inclusive {
        Bound::Included(Key::of(key))
    } else {
        Bound::Excluded(Key::of(key))
    }
}

fn past_end() -> Error {
    Error::new(ErrorKind::NotFound, "the cursor is past the last record")
}

/// A record as a cursor saw it, in buffers kept from move to move, and the
/// set's version then.
#[derive(Default)]
struct Seen {
    key: Vec<u8>,
    value: Vec<u8>,
    version: u64,
    /// Whether the buffers hold a record (else the cursor has none).
    valid: bool,
}

impl Seen {
    fn fill(&mut self, record: &Packed, version: u64) {
        let (key, value) = record.parts();
        self.key.clear();
        self.key.extend_from_slice(key);
        self.value.clear();
        self.value.extend_from_slice(value);
        self.version = version;
        self.valid = true;
    }

    /// Whether the record seen is there as it was: nothing changed since.
    fn holds(&self, version: u64) -> bool {
        self.valid && self.version == version
    }

    fn record(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.valid.then(|| (self.key.clone(), self.value.clone()))
    }
}

impl StdHashDbm {
    /// A cursor, not yet positioned. It visits the keys present when it is
    /// moved to the first record (a snapshot of keys), skipping those removed since.
    pub fn cursor(&self) -> StdHashCursor<'_> {
        StdHashCursor { db: self, keys: Vec::new(), pos: 0, after_jump: false, seen: Seen::default() }
    }
}

/// A cursor of a [`StdHashDbm`]: the keys to visit and the position among them.
pub struct StdHashCursor<'a> {
    db: &'a StdHashDbm,
    keys: Vec<Vec<u8>>,
    pos: usize,
    /// The cursor stands on the key jumped to (`seen.key`), outside `keys`:
    /// the walk on from it needs a snapshot.
    after_jump: bool,
    /// The record at the position as last read.
    seen: Seen,
}

impl StdHashCursor<'_> {
    fn snapshot(&self) -> Vec<Vec<u8>> {
        self.db.core.set.read().set.iter().map(|r| r.key().to_vec()).collect()
    }

    /// The record at the position, moving past keys removed meanwhile.
    fn current(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        if self.seen.holds(self.db.core.version()) {
            return self.seen.record();
        }
        let inner = self.db.core.set.read();
        let version = self.db.core.version();
        if self.after_jump {
            // The key stays in `seen` even when its record is gone: `next` walks on from it.
            match inner.set.find(&self.seen.key) {
                Some(r) => self.seen.fill(r, version),
                None => self.seen.valid = false,
            }
            return self.seen.record();
        }
        self.seen.valid = false;
        while let Some(key) = self.keys.get(self.pos) {
            if let Some(r) = inner.set.find(key) {
                self.seen.fill(r, version);
                break;
            }
            self.pos += 1;
        }
        self.seen.record()
    }
}

impl Cursor for StdHashCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.seen.valid = false;
        self.keys = self.snapshot();
        self.pos = 0;
        self.after_jump = false;
        Ok(())
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        let inner = self.db.core.set.read();
        match inner.set.find(key) {
            Some(r) => {
                self.seen.fill(r, self.db.core.version());
                self.after_jump = true;
                Ok(())
            }
            None => {
                self.seen.valid = false;
                self.after_jump = false;
                self.keys.clear();
                self.pos = 0;
                Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "no record {} to jump to (a hash database jumps only to existing keys)",
                        show_key(key)
                    ),
                ))
            }
        }
    }

    fn next(&mut self) -> Result<()> {
        self.seen.valid = false;
        if self.after_jump {
            self.after_jump = false;
            self.keys = self.snapshot();
            self.pos = self.keys.iter().position(|k| *k == self.seen.key).unwrap_or(self.keys.len());
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
        StdTreeCursor { db: self, seen: Seen::default(), spare: Seen::default() }
    }

    /// Forward: the first record at or after `key` (after only unless
    /// `inclusive`), the first of all without a key; backward likewise.
    fn seek(&self, forward: bool, key: Option<&[u8]>, inclusive: bool, out: &mut Seen) {
        let inner = self.core.set.read();
        let set = &inner.set;
        let exact = key.filter(|_| inclusive).and_then(|k| set.get(Key::of(k)));
        let found = match (forward, key) {
            // A key that is there is found in one descent; a range walks both of its edges.
            _ if exact.is_some() => exact,
            (true, None) => set.first(),
            (false, None) => set.last(),
            (true, Some(k)) => set.range::<Key, _>((bound(k, inclusive), Bound::Unbounded)).next(),
            (false, Some(k)) => set.range::<Key, _>((Bound::Unbounded, bound(k, inclusive))).next_back(),
        };
        match found {
            Some(r) => out.fill(r, self.core.version()),
            None => out.valid = false,
        }
    }
}

/// A position in a [`StdTreeDbm`]: the key of its record.
pub struct StdTreeCursor<'a> {
    db: &'a StdTreeDbm,
    /// The record at the position as last read; none if the cursor has none.
    seen: Seen,
    /// The buffers the next move fills while it reads `seen`'s key.
    spare: Seen,
}

impl StdTreeCursor<'_> {
    fn seek(&mut self, forward: bool, key: Option<&[u8]>, inclusive: bool) {
        self.db.seek(forward, key, inclusive, &mut self.seen);
    }

    /// Moves by `step` records (0: stays, finding the key again if the set
    /// changed since it was seen).
    fn step(&mut self, step: isize) {
        if !self.seen.valid || (step == 0 && self.seen.holds(self.db.core.version())) {
            return;
        }
        self.db.seek(step >= 0, Some(&self.seen.key), step == 0, &mut self.spare);
        std::mem::swap(&mut self.seen, &mut self.spare);
    }

    /// The record at the position, as it is now.
    fn current(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.step(0);
        self.seen.record()
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

impl StdOptions {
    /// `self` with the parameters StdHashDbm and StdTreeDbm take: `truncate`,
    /// and with `buckets` (a hash set's), `num_buckets` (or `buckets`).
    pub(crate) fn take_params(
        mut self,
        t: &mut crate::dbm::params::Taker<'_>,
        buckets: bool,
    ) -> Result<StdOptions> {
        self.truncate = t.memory_truncate()?;
        if buckets {
            if let Some(n) = t.number(&["num_buckets", "buckets"])? {
                self.num_buckets = n;
            }
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_records_answer_key_and_value() {
        let long = [7u8; 300];
        let cases: [(&[u8], &[u8], bool); 7] = [
            (b"", b"", true),
            (b"a", b"xyz", true),
            (&long[..21], b"", true),
            (b"", &long[..21], true),
            (&long[..10], &long[..12], false),
            (&long[..22], b"", false),
            (&long, b"v", false),
        ];
        for (k, v, inline) in cases {
            let r = Packed::new(k, v);
            assert_eq!((r.key(), r.value()), (k, v));
            assert_eq!(matches!(r, Packed::Inline(_)), inline, "{} + {} bytes", k.len(), v.len());
            assert_eq!(r.heap_size() == 0, inline);
        }
    }

    #[test]
    fn keys_order_as_their_bytes() {
        let samples: Vec<Vec<u8>> = [
            &b""[..],
            b"a",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefghij",
            b"abcdefghik",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x00\x00\x00\x00\x00\x00\x00\x00\x01",
            b"\x80",
        ]
        .iter()
        .map(|k| k.to_vec())
        .collect();
        for a in &samples {
            for b in &samples {
                assert_eq!(Key::of(a).cmp(Key::of(b)), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(Packed::new(a, b"x").cmp(&Packed::new(b, b"yy")), a.cmp(b));
            }
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
