//! The records of one shard of an on-memory hash table, each one heap block,
//! chained in buckets and, for a cache, listed from most to least recently
//! used. This module is the only unsafe code of the on-memory databases:
//! it alone makes, reads, relinks and frees the blocks, and offers a safe API.
//!
//! A record's block holds `L` links of 6 bytes, then the key's and the
//! value's lengths (varints), the key and the value. Link 0 chains the
//! records of a bucket; a cache's records (`L == 3`) also link into the LRU
//! list (1: the more recently used neighbour, 2: the less). A link holds the
//! neighbour's address divided by 8 in 48 bits: blocks are 8-aligned and
//! user-space addresses stay below 2^51, and the two bytes saved bring a
//! record of 8-byte key and value from a 48-byte heap chunk to a 32-byte one.
//! An address beyond reach is refused as an error.
//!
//! Why the safe API is sound: every block belongs to exactly one
//! [`Records`] and is reachable only through it (its bucket chain and its
//! LRU list). Reading borrows the `Records` shared, so the slices it hands
//! out live no longer than that borrow; every change borrows it exclusively
//! (an [`Entry`], [`Records::rehash`], [`Records::clear`]), so no slice is
//! alive while a block moves or goes. A block is freed only once it is
//! unlinked from its chain and its list, so no link ever leads to freed
//! memory.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use crate::error::{Error, ErrorKind, Result};
use crate::varint::{leb128, MAX_LEN};

const LINK: usize = 6;
const LINK_MAX: u64 = 1 << 48;

/// The heap a block of `size` bytes takes, with the allocator's header and rounding.
fn heap_size(size: usize) -> usize {
    (size + 8).next_multiple_of(16).max(32)
}

/// A record's heap block, alive from [`Block::alloc`] to [`Block::free`].
/// Only the `Records` holding it reaches it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Block(NonNull<u8>);

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

    fn value_at(&self) -> usize {
        self.key_at + self.key_len
    }
}

impl Block {
    fn layout(size: usize) -> Layout {
        // 8-aligned, so that a link can drop an address's low three bits.
        Layout::from_size_align(size, 8).unwrap_or_else(|_| handle_alloc_error(Layout::new::<u64>()))
    }

    /// A new block holding `L` zeroed links, `key` and `value`.
    fn alloc<const L: usize>(key: &[u8], value: &[u8]) -> Result<Block> {
        let head = L * LINK + leb128::len(key.len() as u64) + leb128::len(value.len() as u64);
        let layout = Block::layout(head + key.len() + value.len());
        let block = Block(Block::allocate(layout));
        if (block.0.as_ptr().expose_provenance() as u64 >> 3) >= LINK_MAX {
            block.release(layout);
            return Err(Error::new(
                ErrorKind::System,
                "the allocator gave an address beyond the 51 bits a record link holds",
            ));
        }
        let mut at = 0;
        for _ in 0..L {
            block.write(at, &[0; LINK]);
            at += LINK;
        }
        for n in [key.len(), value.len()] {
            let mut digits = [0u8; MAX_LEN];
            let len = leb128::write(&mut digits, n as u64);
            block.write(at, &digits[..len]);
            at += len;
        }
        block.write(at, key);
        block.write(at + key.len(), value);
        Ok(block)
    }

    #[expect(unsafe_code, reason = "a record's block comes from the global allocator")]
    fn allocate(layout: Layout) -> NonNull<u8> {
        // SAFETY: the layout's size is at least 8 (a link and two lengths), never zero.
        let ptr = unsafe { alloc(layout) };
        NonNull::new(ptr).unwrap_or_else(|| handle_alloc_error(layout))
    }

    #[expect(unsafe_code, reason = "a record's block goes back to the global allocator")]
    fn release(self, layout: Layout) {
        // SAFETY: the block was allocated with `layout` (its size is recomputed
        // from the lengths the block holds, which never change), and callers
        // release it once, after unlinking it: nothing reaches it afterwards.
        unsafe { dealloc(self.0.as_ptr(), layout) };
    }

    #[expect(unsafe_code, reason = "a record's bytes are read through the block's raw address")]
    fn read(self, at: usize, out: &mut [u8]) {
        // SAFETY: callers read within the block (links, lengths, key, value
        // as `alloc` laid them out), which is alive while its Records holds
        // it; `out` is the caller's buffer, never inside a block.
        unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr().add(at), out.as_mut_ptr(), out.len()) };
    }

    #[expect(unsafe_code, reason = "a record's bytes are written through the block's raw address")]
    fn write(self, at: usize, bytes: &[u8]) {
        // SAFETY: callers write within the block, which is alive; every
        // write happens under an exclusive borrow of its Records (or before
        // the block is shared), so no slice of it is alive meanwhile; `bytes`
        // never overlaps the destination: it is the caller's buffer, or the
        // key of the block a record moves out of, copied into a new block.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.0.as_ptr().add(at), bytes.len()) };
    }

    /// `len` bytes at `at`, for as long as the caller's borrow of the Records holding the block.
    #[expect(unsafe_code, reason = "a record's key and value are shown in place, without a copy")]
    fn view<'a>(self, at: usize, len: usize) -> &'a [u8] {
        // SAFETY: the range lies within the block; every caller ties `'a` to
        // a borrow of the Records holding the block, and no write or free
        // happens while such a borrow lives (they need the Records exclusively).
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(at), len) }
    }

    fn span<const L: usize>(self) -> Span {
        let mut at = L * LINK;
        let mut read = || {
            let mut decoder = leb128::Decoder::default();
            loop {
                let mut b = [0u8];
                self.read(at, &mut b);
                at += 1;
                // `alloc` wrote the lengths: they end and fit.
                if let Some(n) = decoder.push(b[0]).expect("a record's lengths as alloc wrote them") {
                    return n as usize;
                }
            }
        };
        let key_len = read();
        let value_len = read();
        Span { key_at: at, key_len, value_len }
    }

    /// The key and the value, for as long as the caller's borrow of the Records holding the block.
    fn record<'a, const L: usize>(self) -> (&'a [u8], &'a [u8]) {
        let s = self.span::<L>();
        (self.view(s.key_at, s.key_len), self.view(s.value_at(), s.value_len))
    }

    fn key<'a, const L: usize>(self) -> &'a [u8] {
        self.record::<L>().0
    }

    fn link(self, i: usize) -> Option<Block> {
        let mut bytes = [0u8; 8];
        self.read(i * LINK, &mut bytes[..LINK]);
        let addr = u64::from_le_bytes(bytes) << 3;
        NonNull::new(std::ptr::with_exposed_provenance_mut::<u8>(addr as usize)).map(Block)
    }

    fn set_link(self, i: usize, to: Option<Block>) {
        let addr = to.map_or(0, |b| b.0.as_ptr().expose_provenance() as u64 >> 3);
        self.write(i * LINK, &addr.to_le_bytes()[..LINK]);
    }

    fn heap_size<const L: usize>(self) -> usize {
        heap_size(self.span::<L>().size())
    }

    fn free<const L: usize>(self) {
        self.release(Block::layout(self.span::<L>().size()));
    }
}

/// The records of a shard: buckets of chained blocks, the LRU list (`L ==
/// 3`), and their counts. `Shard::change` is the only caller of what changes them.
pub(crate) struct Records<const L: usize> {
    buckets: Box<[Option<Block>]>,
    /// Most and least recently used (`L == 3`).
    head: Option<Block>,
    tail: Option<Block>,
    count: usize,
    /// Heap bytes of the blocks.
    bytes: usize,
    /// Bumped by every change of a record, so that a cursor knows when what it saw still holds.
    version: u64,
}

// SAFETY: a Records owns its blocks exclusively (no block is reachable from
// outside it), so it may move to another thread with them.
#[expect(unsafe_code, reason = "the blocks behind raw addresses travel with their Records")]
unsafe impl<const L: usize> Send for Records<L> {}

// SAFETY: through `&Records` blocks are only read; every change takes `&mut`.
#[expect(unsafe_code, reason = "the blocks behind raw addresses are only read through a shared Records")]
unsafe impl<const L: usize> Sync for Records<L> {}

impl<const L: usize> Records<L> {
    pub(crate) fn new(num_buckets: usize) -> Records<L> {
        Records {
            buckets: vec![None; num_buckets].into_boxed_slice(),
            head: None,
            tail: None,
            count: 0,
            bytes: 0,
            version: 0,
        }
    }

    pub(crate) fn num_buckets(&self) -> usize {
        self.buckets.len()
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Heap bytes of the records.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Heap bytes of the records and the buckets.
    pub(crate) fn mem_size(&self) -> usize {
        self.bytes + self.buckets.len() * std::mem::size_of::<Option<Block>>()
    }

    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    fn blocks(&self, bucket: usize) -> impl Iterator<Item = Block> + '_ {
        std::iter::successors(self.buckets[bucket], |b| b.link(0))
    }

    /// The key and stored value of every record of `bucket`, in chain order.
    pub(crate) fn chain(&self, bucket: usize) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.blocks(bucket).map(Block::record::<L>)
    }

    /// The record of `key` in `bucket`, or the place for it.
    pub(crate) fn entry<'s, 'k>(&'s mut self, bucket: usize, key: &'k [u8]) -> Entry<'s, 'k, L> {
        let mut prev = None;
        let mut found = self.buckets[bucket];
        while let Some(b) = found {
            if b.key::<L>() == key {
                break;
            }
            prev = found;
            found = b.link(0);
        }
        Entry { records: self, bucket, prev, found, key }
    }

    /// The least recently used record (`L == 3`), whose bucket `bucket_of`
    /// tells from its key (were it wrong, every bucket would be searched).
    pub(crate) fn oldest(&mut self, bucket_of: impl FnOnce(&[u8]) -> usize) -> Option<Entry<'_, 'static, L>> {
        let tail = self.tail?;
        // The record before the tail in the chain of `bucket`, if the tail is there.
        let before = |bucket: usize| {
            let mut prev = None;
            for b in self.blocks(bucket) {
                if b == tail {
                    return Some(prev);
                }
                prev = Some(b);
            }
            None
        };
        let hint = bucket_of(tail.key::<L>());
        let (bucket, prev) = std::iter::once(hint)
            .filter(|&h| h < self.buckets.len())
            .chain(0..self.buckets.len())
            .find_map(|bucket| before(bucket).map(|prev| (bucket, prev)))?;
        Some(Entry { records: self, bucket, prev, found: Some(tail), key: &[] })
    }

    /// Moves every record into `num_buckets` buckets, each where `bucket_of` places its key.
    pub(crate) fn rehash(&mut self, num_buckets: usize, bucket_of: impl Fn(&[u8]) -> usize) {
        let old = std::mem::replace(&mut self.buckets, vec![None; num_buckets].into_boxed_slice());
        for head in old.iter() {
            let mut cur = *head;
            while let Some(b) = cur {
                cur = b.link(0);
                let to = bucket_of(b.key::<L>());
                b.set_link(0, self.buckets[to]);
                self.buckets[to] = Some(b);
            }
        }
    }

    /// Frees every record.
    pub(crate) fn clear(&mut self) {
        self.free_all();
        self.version += 1;
    }

    fn free_all(&mut self) {
        for bucket in self.buckets.iter_mut() {
            let mut cur = bucket.take();
            while let Some(b) = cur {
                cur = b.link(0);
                b.free::<L>();
            }
        }
        self.count = 0;
        self.bytes = 0;
        self.head = None;
        self.tail = None;
    }

    /// Counts a new block in and puts it first in its bucket's chain after
    /// `prev` (at the head without one) and first in the LRU list.
    fn link_in(&mut self, bucket: usize, prev: Option<Block>, new: Block) {
        match prev {
            Some(p) => p.set_link(0, Some(new)),
            None => self.buckets[bucket] = Some(new),
        }
        self.count += 1;
        self.bytes += new.heap_size::<L>();
        self.push_front(new);
    }

    /// Takes `b` out of its chain (after `prev`) and the LRU list and frees it.
    fn unlink(&mut self, bucket: usize, prev: Option<Block>, b: Block) {
        match prev {
            Some(p) => p.set_link(0, b.link(0)),
            None => self.buckets[bucket] = b.link(0),
        }
        self.unlist(b);
        self.count -= 1;
        self.bytes -= b.heap_size::<L>();
        b.free::<L>();
    }

    fn push_front(&mut self, b: Block) {
        if L < 3 {
            return;
        }
        b.set_link(1, None);
        b.set_link(2, self.head);
        match self.head {
            Some(h) => h.set_link(1, Some(b)),
            None => self.tail = Some(b),
        }
        self.head = Some(b);
    }

    fn unlist(&mut self, b: Block) {
        if L < 3 {
            return;
        }
        let (newer, older) = (b.link(1), b.link(2));
        match newer {
            Some(n) => n.set_link(2, older),
            None => self.head = older,
        }
        match older {
            Some(o) => o.set_link(1, newer),
            None => self.tail = newer,
        }
    }
}

impl<const L: usize> Drop for Records<L> {
    fn drop(&mut self) {
        self.free_all();
    }
}

/// A key's record in a [`Records`], or the place for it, holding the
/// records exclusively until it is used.
pub(crate) struct Entry<'s, 'k, const L: usize> {
    records: &'s mut Records<L>,
    bucket: usize,
    /// The record before in the chain (none: the record is or goes first).
    prev: Option<Block>,
    found: Option<Block>,
    /// The key sought, for a new record.
    key: &'k [u8],
}

impl<const L: usize> Entry<'_, '_, L> {
    /// The stored value, if there is a record.
    pub(crate) fn value(&self) -> Option<&[u8]> {
        self.found.map(|b| b.record::<L>().1)
    }

    /// Makes the record the most recently used (`L == 3`).
    pub(crate) fn touch(self) {
        if let Some(b) = self.found {
            if L >= 3 && self.records.head != Some(b) {
                self.records.unlist(b);
                self.records.push_front(b);
            }
        }
    }

    /// Removes the record; answers whether there was one.
    pub(crate) fn remove(self) -> bool {
        self.records.version += 1;
        let Some(b) = self.found else { return false };
        self.records.unlink(self.bucket, self.prev, b);
        true
    }

    /// Stores `value` (the bytes as kept), in place if it is as long as the
    /// old one, else in a new block; answers whether a record was replaced.
    /// A failed allocation changes nothing.
    pub(crate) fn set(self, value: &[u8]) -> Result<bool> {
        self.records.version += 1;
        let Some(old) = self.found else {
            let new = Block::alloc::<L>(self.key, value)?;
            new.set_link(0, self.records.buckets[self.bucket]);
            self.records.link_in(self.bucket, None, new);
            return Ok(false);
        };
        let span = old.span::<L>();
        if span.value_len == value.len() {
            old.write(span.value_at(), value);
            self.touch();
            return Ok(true);
        }
        let new = Block::alloc::<L>(old.key::<L>(), value)?;
        new.set_link(0, old.link(0));
        // `old` leaves the chain before `new` takes its place: unlink then relink.
        self.records.unlink(self.bucket, self.prev, old);
        self.records.link_in(self.bucket, self.prev, new);
        Ok(true)
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
