//! One shard of an on-memory hash table: buckets of chained records, each
//! record a single heap block.
//!
//! A record's block holds `L` links of 6 bytes, then the key's and the
//! value's lengths (varints), the key and the value. Link 0 chains the
//! records of a bucket; a cache's records (`L == 3`) also link into the
//! shard's LRU list (1: the more recently used neighbour, 2: the less).
//! A link holds the neighbour's address divided by 8 in 48 bits: blocks are
//! 8-aligned and user-space addresses stay below 2^51, and the two bytes
//! saved bring a record of 8-byte key and value from a 48-byte heap chunk
//! to a 32-byte one. An address beyond reach is refused as an error.
//!
//! Records are ordered by (hash, key), and a bucket holds a contiguous
//! range of hashes (its index is the top bits of the hash below the shard's
//! bits), so the order survives resizing: cursors step through it.

#![allow(unsafe_code)]

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use crate::dbm::Action;
use crate::error::{Error, ErrorKind, Result};

const LINK: usize = 6;
const LINK_MAX: u64 = 1 << 48;

/// The hash of a key; its top bits pick the shard, the next ones the bucket.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

fn varint_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// A record's heap block. Only its shard holds it, and only through the
/// shard does anyone reach it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Rec(NonNull<u8>);

/// Where a record's parts are: the key's start and length, the value's length.
struct Span {
    key_at: usize,
    key_len: usize,
    value_len: usize,
}

impl Span {
    fn size(&self) -> usize {
        self.key_at + self.key_len + self.value_len
    }
}

impl Rec {
    fn layout(size: usize) -> Layout {
        // 8-aligned, so that a link can drop an address's low three bits.
        Layout::from_size_align(size, 8).unwrap_or_else(|_| handle_alloc_error(Layout::new::<u64>()))
    }

    fn alloc(links: usize, key: &[u8], value: &[u8]) -> Result<Rec> {
        let head = links * LINK + varint_len(key.len()) + varint_len(value.len());
        let size = head + key.len() + value.len();
        let layout = Rec::layout(size);
        // SAFETY: the layout's size is at least 8 (a link and two lengths), never zero.
        let ptr = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else { handle_alloc_error(layout) };
        if (ptr.as_ptr().expose_provenance() as u64 >> 3) >= LINK_MAX {
            // SAFETY: allocated just above with this layout and not shared.
            unsafe { dealloc(ptr.as_ptr(), layout) };
            return Err(Error::new(
                ErrorKind::System,
                "the allocator gave an address beyond the 51 bits a record link holds",
            ));
        }
        // SAFETY: the block is `size` bytes long and ours alone; every write below stays within it.
        unsafe {
            let block = std::slice::from_raw_parts_mut(ptr.as_ptr(), size);
            block[..links * LINK].fill(0);
            let mut at = links * LINK;
            for mut n in [key.len(), value.len()] {
                while n >= 0x80 {
                    block[at] = (n as u8) | 0x80;
                    n >>= 7;
                    at += 1;
                }
                block[at] = n as u8;
                at += 1;
            }
            block[at..at + key.len()].copy_from_slice(key);
            block[at + key.len()..].copy_from_slice(value);
        }
        Ok(Rec(ptr))
    }

    fn span(self, links: usize) -> Span {
        let mut at = links * LINK;
        let mut read = || {
            let (mut n, mut shift) = (0usize, 0);
            loop {
                // SAFETY: the lengths follow the links, as `alloc` wrote them, within the block.
                let b = unsafe { *self.0.as_ptr().add(at) };
                at += 1;
                n |= usize::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return n;
                }
                shift += 7;
            }
        };
        let key_len = read();
        let value_len = read();
        Span { key_at: at, key_len, value_len }
    }

    /// The key and value. The caller ties the lifetime to its borrow of the shard.
    fn record<'a>(self, links: usize) -> (&'a [u8], &'a [u8]) {
        let s = self.span(links);
        // SAFETY: the span lies within the block, which lives as long as the
        // shard keeps the record; callers borrow the shard for `'a`.
        unsafe {
            let key = std::slice::from_raw_parts(self.0.as_ptr().add(s.key_at), s.key_len);
            let value = std::slice::from_raw_parts(self.0.as_ptr().add(s.key_at + s.key_len), s.value_len);
            (key, value)
        }
    }

    fn link(self, i: usize) -> Option<Rec> {
        let mut bytes = [0u8; 8];
        // SAFETY: link `i` is within the block's first `links * 6` bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr().add(i * LINK), bytes.as_mut_ptr(), LINK) };
        let addr = u64::from_le_bytes(bytes) << 3;
        NonNull::new(std::ptr::with_exposed_provenance_mut::<u8>(addr as usize)).map(Rec)
    }

    fn set_link(self, i: usize, to: Option<Rec>) {
        let addr = to.map_or(0, |r| r.0.as_ptr().expose_provenance() as u64 >> 3);
        let bytes = addr.to_le_bytes();
        // SAFETY: as in `link`; the shard holding the record is borrowed mutably.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.0.as_ptr().add(i * LINK), LINK) };
    }

    /// Frees the block. The caller has unlinked it from everything.
    fn free(self, links: usize) {
        let size = self.span(links).size();
        // SAFETY: allocated by `alloc` with the same size (recomputed from its
        // own lengths) and alignment; unreachable once unlinked.
        unsafe { dealloc(self.0.as_ptr(), Rec::layout(size)) };
    }

    /// The heap the block takes, with the allocator's header and rounding.
    fn heap_size(self, links: usize) -> usize {
        heap_size(self.span(links).size())
    }
}

fn heap_size(size: usize) -> usize {
    (size + 8).next_multiple_of(16).max(32)
}

/// What a write did to a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Kept,
    Added,
    Replaced,
    Removed,
}

/// A record as a cursor sees it: its hash, key and value.
pub(crate) type Found = (u64, Vec<u8>, Vec<u8>);

/// Buckets of chained records; `L` links per record (1, or 3 with an LRU list).
pub(crate) struct Shard<const L: usize> {
    buckets: Box<[Option<Rec>]>,
    bits: u32,
    /// Bits of the hash above the bucket's, which pick the shard.
    shard_bits: u32,
    count: usize,
    bytes: usize,
    /// Most and least recently used (`L == 3`).
    head: Option<Rec>,
    tail: Option<Rec>,
    /// Bumped by every change of a record, so that a cursor knows when what it saw still holds.
    version: u64,
}

// SAFETY: a shard owns its records exclusively (no block is reachable from
// outside it), so it may move to another thread with them.
unsafe impl<const L: usize> Send for Shard<L> {}
// SAFETY: through `&Shard` records are only read; every change takes `&mut`.
unsafe impl<const L: usize> Sync for Shard<L> {}

impl<const L: usize> Shard<L> {
    pub(crate) fn new(bits: u32, shard_bits: u32) -> Shard<L> {
        Shard {
            buckets: vec![None; 1 << bits].into_boxed_slice(),
            bits,
            shard_bits,
            count: 0,
            bytes: 0,
            head: None,
            tail: None,
            version: 0,
        }
    }

    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// The hash's bits below the shard's: what orders and places records here.
    fn local(&self, hash: u64) -> u64 {
        if self.shard_bits == 0 {
            hash
        } else {
            hash << self.shard_bits
        }
    }

    fn bucket(&self, hash: u64) -> usize {
        if self.bits == 0 {
            0
        } else {
            (self.local(hash) >> (64 - self.bits)) as usize
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn num_buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Heap bytes of the records.
    pub(crate) fn record_bytes(&self) -> usize {
        self.bytes
    }

    /// Heap bytes of the records and the buckets.
    pub(crate) fn mem_size(&self) -> usize {
        self.bytes + self.buckets.len() * std::mem::size_of::<Option<Rec>>()
    }

    fn chain(&self, b: usize) -> impl Iterator<Item = Rec> + '_ {
        std::iter::successors(self.buckets[b], |r| r.link(0))
    }

    /// The value of `key`.
    pub(crate) fn get(&self, hash: u64, key: &[u8]) -> Option<&[u8]> {
        self.chain(self.bucket(hash)).map(|r| r.record(L)).find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Shows `key`'s value to `f` and carries out its answer. A cache's
    /// record moves to the front of the LRU list, as a new one goes there.
    pub(crate) fn process<'a>(
        &mut self,
        hash: u64,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> Action<'a>,
    ) -> Result<Outcome> {
        let b = self.bucket(hash);
        let mut prev: Option<Rec> = None;
        let mut cur = self.buckets[b];
        while let Some(r) = cur {
            if r.record(L).0 == key {
                break;
            }
            prev = cur;
            cur = r.link(0);
        }
        let action = f(cur.map(|r| r.record(L).1));
        if !matches!(action, Action::Keep) {
            self.version += 1;
        }
        Ok(match (action, cur) {
            (Action::Keep, Some(r)) => {
                self.touch(r);
                Outcome::Kept
            }
            (Action::Keep | Action::Remove, None) => Outcome::Kept,
            (Action::Remove, Some(r)) => {
                self.unchain(b, prev, r);
                self.drop_record(r);
                Outcome::Removed
            }
            (Action::Set(value), Some(r)) => {
                let (_, old) = r.record(L);
                if old.len() == value.len() {
                    // Same size: the block stays, the bytes change.
                    let span = r.span(L);
                    // SAFETY: the value's bytes lie at the end of the block, which
                    // this `&mut self` alone reaches; `value` is the caller's, not the block's.
                    unsafe {
                        let at = r.0.as_ptr().add(span.key_at + span.key_len);
                        std::ptr::copy_nonoverlapping(value.as_ptr(), at, span.value_len);
                    }
                    self.touch(r);
                } else {
                    let new = Rec::alloc(L, key, &value)?;
                    new.set_link(0, r.link(0));
                    match prev {
                        Some(p) => p.set_link(0, Some(new)),
                        None => self.buckets[b] = Some(new),
                    }
                    self.bytes += new.heap_size(L);
                    self.count += 1;
                    self.drop_record(r);
                    self.push_front(new);
                }
                Outcome::Replaced
            }
            (Action::Set(value), None) => {
                let new = Rec::alloc(L, key, &value)?;
                new.set_link(0, self.buckets[b]);
                self.buckets[b] = Some(new);
                self.bytes += new.heap_size(L);
                self.count += 1;
                self.push_front(new);
                Outcome::Added
            }
        })
    }

    fn unchain(&mut self, b: usize, prev: Option<Rec>, r: Rec) {
        match prev {
            Some(p) => p.set_link(0, r.link(0)),
            None => self.buckets[b] = r.link(0),
        }
    }

    /// Takes a record out of the LRU list and the counts and frees it; the
    /// caller has taken it out of its chain.
    fn drop_record(&mut self, r: Rec) {
        self.unlist(r);
        self.count -= 1;
        self.bytes -= r.heap_size(L);
        r.free(L);
    }

    fn push_front(&mut self, r: Rec) {
        if L < 3 {
            return;
        }
        r.set_link(1, None);
        r.set_link(2, self.head);
        match self.head {
            Some(h) => h.set_link(1, Some(r)),
            None => self.tail = Some(r),
        }
        self.head = Some(r);
    }

    fn unlist(&mut self, r: Rec) {
        if L < 3 {
            return;
        }
        let (newer, older) = (r.link(1), r.link(2));
        match newer {
            Some(n) => n.set_link(2, older),
            None => self.head = older,
        }
        match older {
            Some(o) => o.set_link(1, newer),
            None => self.tail = newer,
        }
    }

    fn touch(&mut self, r: Rec) {
        if L >= 3 && self.head != Some(r) {
            self.unlist(r);
            self.push_front(r);
        }
    }

    /// Removes the least recently used record (`L == 3`); answers whether there was one.
    pub(crate) fn evict(&mut self) -> bool {
        let Some(r) = self.tail else { return false };
        let b = self.bucket(key_hash(r.record(L).0));
        let mut prev = None;
        for c in self.chain(b) {
            if c == r {
                break;
            }
            prev = Some(c);
        }
        self.unchain(b, prev, r);
        self.drop_record(r);
        self.version += 1;
        true
    }

    /// Every record, bucket by bucket.
    pub(crate) fn records(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.buckets.len()).flat_map(move |b| self.chain(b).map(|r| r.record(L)))
    }

    /// Keeps, changes or drops every record as `f` says. A failed allocation
    /// stops the walk with its error.
    pub(crate) fn rewrite<'a>(&mut self, f: &mut dyn FnMut(&[u8], &[u8]) -> Action<'a>) -> Result<()> {
        for b in 0..self.buckets.len() {
            let keys: Vec<Vec<u8>> = self.chain(b).map(|r| r.record(L).0.to_vec()).collect();
            for key in keys {
                let hash = key_hash(&key);
                self.process(hash, &key, |v| f(&key, v.unwrap_or_default()))?;
            }
        }
        Ok(())
    }

    /// The first record from `(hash, key)` on in (hash, key) order — after
    /// it only unless `inclusive` — or the first of all without a start.
    pub(crate) fn seek(&self, from: Option<(u64, &[u8])>, inclusive: bool) -> Option<Found> {
        let start = from.map_or(0, |(h, _)| self.bucket(h));
        for b in start..self.buckets.len() {
            let mut best: Option<(u64, Rec)> = None;
            for r in self.chain(b) {
                let (k, _) = r.record(L);
                let h = key_hash(k);
                let ordered = (self.local(h), k);
                if let Some((fh, fk)) = from {
                    let past = ordered.cmp(&(self.local(fh), fk));
                    if past.is_lt() || (past.is_eq() && !inclusive) {
                        continue;
                    }
                }
                if best.is_none_or(|(bh, br)| ordered < (self.local(bh), br.record(L).0)) {
                    best = Some((h, r));
                }
            }
            if let Some((h, r)) = best {
                let (k, v) = r.record(L);
                return Some((h, k.to_vec(), v.to_vec()));
            }
        }
        None
    }

    /// Moves every record into `2^bits` buckets.
    pub(crate) fn resize(&mut self, bits: u32) {
        let old = std::mem::replace(&mut self.buckets, vec![None; 1 << bits].into_boxed_slice());
        self.bits = bits;
        for head in old.iter() {
            let mut cur = *head;
            while let Some(r) = cur {
                cur = r.link(0);
                let b = self.bucket(key_hash(r.record(L).0));
                r.set_link(0, self.buckets[b]);
                self.buckets[b] = Some(r);
            }
        }
    }

    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// Frees every record.
    pub(crate) fn clear(&mut self) {
        for b in 0..self.buckets.len() {
            let mut cur = self.buckets[b].take();
            while let Some(r) = cur {
                cur = r.link(0);
                r.free(L);
            }
        }
        self.count = 0;
        self.bytes = 0;
        self.version += 1;
        self.head = None;
        self.tail = None;
    }
}

impl<const L: usize> Drop for Shard<L> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &mut Shard<3>, key: &[u8], value: &[u8]) -> Outcome {
        s.process(key_hash(key), key, |_| Action::set(value)).unwrap()
    }

    #[test]
    fn records_keep_empty_long_and_binary_parts_across_resizes() {
        let mut s = Shard::<1>::new(0, 4);
        let long = vec![0xa5u8; 70_000];
        let keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0xff; 200], b"k".to_vec()];
        for k in &keys {
            let v: &[u8] = if k.is_empty() { &long } else { k };
            assert_eq!(s.process(key_hash(k), k, |_| Action::set(v)).unwrap(), Outcome::Added);
        }
        for bits in [3, 0, 5] {
            s.resize(bits);
            for k in &keys {
                let v: &[u8] = if k.is_empty() { &long } else { k };
                assert_eq!(s.get(key_hash(k), k), Some(v));
            }
        }
        assert_eq!(s.records().count(), 4);
        assert_eq!(s.process(key_hash(b"k"), b"k", |_| Action::Remove).unwrap(), Outcome::Removed);
        assert_eq!(s.get(key_hash(b"k"), b"k"), None);
    }

    #[test]
    fn the_lru_list_evicts_the_least_recently_used() {
        let mut s = Shard::<3>::new(1, 0);
        for k in [b"a", b"b", b"c"] {
            set(&mut s, k, b"1");
        }
        s.process(key_hash(b"a"), b"a", |_| Action::Keep).unwrap();
        assert_eq!(set(&mut s, b"b", b"22"), Outcome::Replaced);
        assert!(s.evict());
        assert_eq!(s.get(key_hash(b"c"), b"c"), None, "c was used least recently");
        assert!(s.evict());
        assert_eq!(s.get(key_hash(b"a"), b"a"), None);
        assert_eq!(s.get(key_hash(b"b"), b"b"), Some(&b"22"[..]));
        assert!(s.evict());
        assert!(!s.evict());
        assert_eq!((s.count(), s.mem_size()), (0, 2 * 8));
    }

    #[test]
    fn seek_walks_every_record_once_in_hash_order() {
        let mut s = Shard::<1>::new(2, 0);
        for i in 0..200u32 {
            s.process(key_hash(&i.to_le_bytes()), &i.to_le_bytes(), |_| Action::set(b"v")).unwrap();
        }
        let mut seen = Vec::new();
        let mut at = s.seek(None, true);
        while let Some((h, k, _)) = at {
            seen.push((h, k.clone()));
            if seen.len() == 100 {
                s.resize(6);
            }
            at = s.seek(Some((h, k.as_slice())), false);
        }
        assert_eq!(seen.len(), 200);
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
    }
}
