//! Nodes of a B+ tree, shared by the tree database (whose node store holds
//! them as these bytes) and BabyDbm (which keeps them in memory).
//!
//! A leaf: `0`, the previous and next leaf's ids, the record count, then each
//! record as key length, value length, key, value. An inner node: `1`, the
//! child count, the first child's id, then for each further child its
//! separator key (length, bytes) and id. Numbers are LEB128 varints.

use super::comparator::KeyComparator;
use crate::dbm::reader::Reader;
use crate::dbm::Action;
use crate::error::{Error, ErrorKind, Result};
use crate::varint::leb128;

/// Ids of inner nodes start here; leaves count from 1, so the two never meet.
pub(crate) const INNER_BASE: u64 = 1 << 48;

/// Whether node `id` is a leaf's: ids say the kind (see [`INNER_BASE`]).
pub(crate) fn is_leaf_id(id: u64) -> bool {
    id < INNER_BASE
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    Leaf(Leaf),
    Inner(Inner),
}

/// A leaf's records packed one after another in one buffer, in key order,
/// each as key length and value length (varints), key, value: the same bytes
/// the node store holds, so loading a leaf is one copy and one walk, not an
/// allocation per key and value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Leaf {
    data: Vec<u8>,
    /// Where each record starts in `data`.
    starts: Vec<u32>,
    /// Each record's key head (see [`head`]): a search in byte order reads
    /// these, one array, and a key itself only when two heads are equal.
    heads: Vec<u64>,
    pub prev: u64,
    pub next: u64,
}

/// `keys[i]` is the least key of `children[i + 1]`'s subtree (or a bound
/// below it): a key at or above it goes right.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inner {
    pub keys: PackedSeparators,
    pub children: Vec<u64>,
}

impl Inner {
    /// Inserts separator `key` at `i` with `right`, the child after it.
    /// The buffers grow by an eighth, not double: a node loaded with buffers
    /// of its size would otherwise double at its first insert, and the node
    /// cache keeps every inner node of a large tree for good.
    pub(crate) fn insert(&mut self, i: usize, key: &[u8], right: u64) {
        self.keys.reserve_gently(key.len());
        grow_gently(&mut self.children, 1);
        self.keys.insert(i, key);
        self.children.insert(i + 1, right);
    }

    /// Splits off the separators from `at` and the children after them
    /// into a new node, and gives the separator at `at - 1` back to rise to
    /// the parent; both halves keep buffers of their size only.
    pub(crate) fn split_off(&mut self, at: usize) -> (Vec<u8>, Inner) {
        let right = Inner { keys: self.keys.split_off(at), children: self.children.split_off(at) };
        let up = self.keys.pop().unwrap_or_default();
        self.keys.shrink_to_fit();
        self.children.shrink_to_fit();
        (up, right)
    }

    /// Takes separator `sep` and every separator and child of `right`, the
    /// node after this one, into this one, which keeps buffers of the
    /// merged node's size.
    pub(crate) fn merge(&mut self, sep: &[u8], right: &mut Inner) {
        self.keys.push(sep);
        self.keys.append(&mut right.keys);
        self.children.append(&mut right.children);
        self.keys.shrink_to_fit();
        self.children.shrink_to_fit();
    }
}

/// An inner node's separator keys packed one after another in one buffer,
/// with where each starts and its head: what [`Separators`] holds, without
/// an allocation (and its header) a key. The tree's node cache keeps every
/// inner node of a large tree, whose keys are mostly short, so per-key
/// allocations were most of what they took.
#[derive(Clone, Debug, Default)]
pub(crate) struct PackedSeparators {
    bytes: Vec<u8>,
    /// Where each key starts in `bytes`; it ends where the next starts.
    starts: Vec<usize>,
    heads: Vec<u64>,
}

impl PackedSeparators {
    /// The separators `keys`, in buffers of exactly their size.
    pub(crate) fn of<K: AsRef<[u8]>>(keys: &[K]) -> PackedSeparators {
        let mut packed = PackedSeparators {
            bytes: Vec::with_capacity(keys.iter().map(|k| k.as_ref().len()).sum()),
            starts: Vec::with_capacity(keys.len()),
            heads: Vec::with_capacity(keys.len()),
        };
        keys.iter().for_each(|k| packed.push(k.as_ref()));
        packed
    }

    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    fn span(&self, i: usize) -> std::ops::Range<usize> {
        self.starts[i]..self.starts.get(i + 1).copied().unwrap_or(self.bytes.len())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| &self[i])
    }

    pub(crate) fn insert(&mut self, i: usize, key: &[u8]) {
        let at = self.starts.get(i).copied().unwrap_or(self.bytes.len());
        self.bytes.splice(at..at, key.iter().copied());
        self.starts[i..].iter_mut().for_each(|s| *s += key.len());
        self.starts.insert(i, at);
        self.heads.insert(i, head(key));
    }

    pub(crate) fn remove(&mut self, i: usize) -> Vec<u8> {
        let span = self.span(i);
        let key: Vec<u8> = self.bytes.drain(span.clone()).collect();
        self.starts.remove(i);
        self.starts[i..].iter_mut().for_each(|s| *s -= key.len());
        self.heads.remove(i);
        key
    }

    pub(crate) fn push(&mut self, key: &[u8]) {
        self.starts.push(self.bytes.len());
        self.heads.push(head(key));
        self.bytes.extend_from_slice(key);
    }

    pub(crate) fn pop(&mut self) -> Option<Vec<u8>> {
        let start = self.starts.pop()?;
        self.heads.pop();
        Some(self.bytes.split_off(start))
    }

    pub(crate) fn split_off(&mut self, at: usize) -> PackedSeparators {
        let cut = self.starts.get(at).copied().unwrap_or(self.bytes.len());
        let bytes = self.bytes.split_off(cut);
        let starts = self.starts.split_off(at).into_iter().map(|s| s - cut).collect();
        PackedSeparators { bytes, starts, heads: self.heads.split_off(at) }
    }

    /// Makes room for one more key of `len` bytes, growing the buffers by
    /// an eighth rather than doubling them (see [`Inner::insert`]).
    fn reserve_gently(&mut self, len: usize) {
        grow_gently(&mut self.bytes, len);
        grow_gently(&mut self.starts, 1);
        grow_gently(&mut self.heads, 1);
    }

    fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.heads.shrink_to_fit();
    }

    pub(crate) fn append(&mut self, other: &mut PackedSeparators) {
        let base = self.bytes.len();
        self.bytes.append(&mut other.bytes);
        self.starts.extend(other.starts.drain(..).map(|s| s + base));
        self.heads.append(&mut other.heads);
    }

    /// How many separators are at or below the key `probe` seeks: the
    /// index of the child whose subtree holds it.
    pub(crate) fn child_index(&self, probe: &Probe<'_>) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if probe.order(self.heads[mid], || &self[mid]) == std::cmp::Ordering::Greater {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

impl std::ops::Index<usize> for PackedSeparators {
    type Output = [u8];
    fn index(&self, i: usize) -> &[u8] {
        &self.bytes[self.span(i)]
    }
}

/// An inner node's separator keys with their heads (as a leaf keeps them),
/// so that a descent compares integers in one array and reads a key, a
/// separate allocation, only on a tie.
#[derive(Clone, Debug, Default)]
pub(crate) struct Separators<K> {
    keys: Vec<K>,
    heads: Vec<u64>,
}

impl<K: AsRef<[u8]>> Separators<K> {
    pub(crate) fn of(keys: Vec<K>) -> Separators<K> {
        let heads = keys.iter().map(|k| head(k.as_ref())).collect();
        Separators { keys, heads }
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn insert(&mut self, i: usize, key: K) {
        self.heads.insert(i, head(key.as_ref()));
        self.keys.insert(i, key);
    }

    pub(crate) fn remove(&mut self, i: usize) -> K {
        self.heads.remove(i);
        self.keys.remove(i)
    }

    pub(crate) fn push(&mut self, key: K) {
        self.heads.push(head(key.as_ref()));
        self.keys.push(key);
    }

    pub(crate) fn pop(&mut self) -> Option<K> {
        self.heads.pop();
        self.keys.pop()
    }

    pub(crate) fn split_off(&mut self, at: usize) -> Separators<K> {
        Separators { keys: self.keys.split_off(at), heads: self.heads.split_off(at) }
    }

    pub(crate) fn append(&mut self, other: &mut Separators<K>) {
        self.keys.append(&mut other.keys);
        self.heads.append(&mut other.heads);
    }

    /// How many separators are at or below the key `probe` seeks: the
    /// index of the child whose subtree holds it.
    pub(crate) fn child_index(&self, probe: &Probe<'_>) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if probe.order(self.heads[mid], || self.keys[mid].as_ref()) == std::cmp::Ordering::Greater {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Heap bytes, with the allocator's header for each key.
    pub(crate) fn heap_size(&self) -> usize {
        self.keys.iter().map(|k| k.as_ref().len() + 16).sum::<usize>()
            + self.keys.capacity() * std::mem::size_of::<K>()
            + self.heads.capacity() * std::mem::size_of::<u64>()
    }
}

impl<K> std::ops::Index<usize> for Separators<K> {
    type Output = K;
    fn index(&self, i: usize) -> &K {
        &self.keys[i]
    }
}

/// Makes room in `buffer` for `extra` more items, growing it by an eighth
/// more than that rather than doubling it: a cached node's spare room is
/// memory the cache holds as long as the node.
fn grow_gently<T>(buffer: &mut Vec<T>, extra: usize) {
    if buffer.capacity() - buffer.len() < extra {
        buffer.reserve_exact(extra + buffer.len() / 8);
    }
}

/// The bytes a record takes in a leaf.
pub(crate) fn record_size(key: &[u8], value: &[u8]) -> usize {
    leb128::len(key.len() as u64) + leb128::len(value.len() as u64) + key.len() + value.len()
}

/// A key's first eight bytes as a big-endian integer, zeros after a shorter
/// key: heads order as their keys do in byte order, and two keys with
/// different heads differ.
pub(crate) fn head(key: &[u8]) -> u64 {
    match key.first_chunk::<8>() {
        Some(first) => u64::from_be_bytes(*first),
        None => {
            let mut bytes = [0u8; 8];
            bytes[..key.len()].copy_from_slice(key);
            u64::from_be_bytes(bytes)
        }
    }
}

/// The head of `key`, the next key of a node, if it rises strictly past
/// `last` (the previous one, with its head) in `order`'s order; `key`
/// becomes `last`. Without `order`, any key follows.
// Always inlined: a load calls it for every key, and a call costs more
// than the comparison.
#[inline(always)]
fn next_key<'a>(
    order: Option<KeyComparator>,
    last: &mut Option<(u64, &'a [u8])>,
    key: &'a [u8],
) -> std::result::Result<u64, &'static str> {
    let head = head(key);
    if let (Some(cmp), Some((last_head, last_key))) = (order, *last) {
        let rises = match cmp {
            // Heads differ in almost every pair: one comparison of integers.
            KeyComparator::Lexical => last_head < head || (last_head == head && last_key < key),
            KeyComparator::LexicalReverse => last_head > head || (last_head == head && last_key > key),
            cmp => cmp.compare(last_key, key) == std::cmp::Ordering::Less,
        };
        if !rises {
            return Err("its keys are out of order");
        }
    }
    *last = Some((head, key));
    Ok(head)
}

/// A key sought, ready to be compared with stored keys and their heads.
pub(crate) struct Probe<'k> {
    key: &'k [u8],
    head: u64,
    cmp: KeyComparator,
}

impl<'k> Probe<'k> {
    pub(crate) fn new(key: &'k [u8], cmp: KeyComparator) -> Probe<'k> {
        Probe { key, head: head(key), cmp }
    }

    /// How a stored key (what `key` answers, with head `stored_head`)
    /// compares with the one sought, in `cmp`'s order: by heads when that
    /// is byte order or its reverse, finding the key only on a tie. `key`
    /// is a closure because finding a leaf's key decodes its record's
    /// lengths, which a search decided by heads never needs.
    #[inline]
    pub(crate) fn order<'s>(&self, stored_head: u64, key: impl FnOnce() -> &'s [u8]) -> std::cmp::Ordering {
        // Equal heads mean equal first eight bytes (or zero-padded shorter
        // keys): a comparison by the prefix first would tie again.
        let reverse = match self.cmp {
            KeyComparator::Lexical => false,
            KeyComparator::LexicalReverse => true,
            cmp => return cmp.compare(key(), self.key),
        };
        let by_bytes = stored_head.cmp(&self.head).then_with(|| key().cmp(self.key));
        if reverse {
            by_bytes.reverse()
        } else {
            by_bytes
        }
    }
}

/// Reads a varint that a leaf's own walk has already checked.
#[inline]
fn known_varint(data: &[u8], at: &mut usize) -> usize {
    leb128::decode(data, at).expect("a leaf's sizes were checked when it was read or written") as usize
}

impl Leaf {
    /// A leaf of `records`, which must be in order.
    #[cfg(test)]
    pub(crate) fn of<'r>(
        records: impl IntoIterator<Item = (&'r [u8], &'r [u8])>,
        prev: u64,
        next: u64,
    ) -> Leaf {
        let mut leaf = Leaf { prev, next, ..Leaf::default() };
        for (k, v) in records {
            leaf.push(k, v);
        }
        leaf
    }

    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The bytes the records take.
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Record `i`'s key and value.
    pub(crate) fn record(&self, i: usize) -> (&[u8], &[u8]) {
        let (key, value, _) = Leaf::unpack(&self.data[self.starts[i] as usize..]);
        (key, value)
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        self.record(i).0
    }

    /// The records from `i` on, packed as the leaf packs them (see
    /// [`Leaf::unpack`]): record `i` whole (nothing past the last), then as
    /// many more whole ones as fit in `bytes` in all.
    pub(crate) fn packed_from(&self, i: usize, bytes: usize) -> &[u8] {
        let start = self.start(i);
        let mut end = self.start(i + 1);
        for j in i + 1..self.len() {
            let next = self.start(j + 1);
            if next - start > bytes {
                break;
            }
            end = next;
        }
        &self.data[start..end.max(start)]
    }

    /// The first record of `packed` (bytes from [`Leaf::packed_from`]): its
    /// key, its value and the bytes it takes there.
    pub(crate) fn unpack(packed: &[u8]) -> (&[u8], &[u8], usize) {
        let (key_start, key_end, end) = Leaf::unpack_at(packed, 0);
        (&packed[key_start..key_end], &packed[key_end..end], end)
    }

    /// Where the parts of the record at `at` of `packed` lie: its key from
    /// the first offset to the second, its value from there to the third,
    /// where the next record starts.
    pub(crate) fn unpack_at(packed: &[u8], at: usize) -> (usize, usize, usize) {
        let mut key_start = at;
        let klen = known_varint(packed, &mut key_start);
        let vlen = known_varint(packed, &mut key_start);
        let key_end = key_start + klen;
        (key_start, key_end, key_end + vlen)
    }

    /// Asks the CPU to start loading up to `bytes` of the records from
    /// record `i` on, which a walk from `i` reads next: a hint, which reads
    /// nothing.
    pub(crate) fn prefetch_from(&self, i: usize, bytes: usize) {
        let start = self.start(i);
        let end = self.data.len().min(start + bytes);
        crate::sys::prefetch_lines(self.data.as_ptr().wrapping_add(start), end - start);
    }

    pub(crate) fn records(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.len()).map(|i| self.record(i))
    }

    /// Where `key` is (`Ok`) or would go (`Err`), in the order of `cmp`:
    /// what [`Leaf::find_in`] answers, without heads.
    #[cfg(test)]
    pub(crate) fn find(
        &self,
        key: &[u8],
        cmp: impl Fn(&[u8], &[u8]) -> std::cmp::Ordering,
    ) -> std::result::Result<usize, usize> {
        self.search(|i| cmp(self.key(i), key))
    }

    /// [`Leaf::find`] in `cmp`'s order, by the key heads when that is byte
    /// order (or its reverse).
    pub(crate) fn find_in(&self, key: &[u8], cmp: KeyComparator) -> std::result::Result<usize, usize> {
        let probe = Probe::new(key, cmp);
        self.search(|i| probe.order(self.heads[i], || self.key(i)))
    }

    /// A binary search by `order`, which tells how record `i` compares
    /// with the key sought.
    fn search(&self, order: impl Fn(usize) -> std::cmp::Ordering) -> std::result::Result<usize, usize> {
        let n = self.len();
        if n == 0 {
            return Err(0);
        }
        // Keys arriving in order meet the last record (appends) or the first
        // (removals from the front): one comparison instead of a search.
        match order(n - 1) {
            std::cmp::Ordering::Less => return Err(n),
            std::cmp::Ordering::Equal => return Ok(n - 1),
            std::cmp::Ordering::Greater => {}
        }
        match order(0) {
            std::cmp::Ordering::Greater => return Err(0),
            std::cmp::Ordering::Equal => return Ok(0),
            std::cmp::Ordering::Less => {}
        }
        let (mut lo, mut hi) = (1, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match order(mid) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The index of the record a seek lands on in this leaf: from the start
    /// (`key` none) or from `key` in `cmp`'s order, forward to the first
    /// record at or after it (after it unless `inclusive`), or backward to
    /// the last at or before it; `None` if the seek goes past the leaf's end.
    #[inline]
    pub(crate) fn seek_index(
        &self,
        key: Option<&[u8]>,
        cmp: KeyComparator,
        forward: bool,
        inclusive: bool,
    ) -> Option<usize> {
        let before = match key {
            None if forward => 0,
            None => self.len(),
            Some(k) => self.records_before(k, cmp, forward, inclusive),
        };
        if forward {
            (before < self.len()).then_some(before)
        } else {
            before.checked_sub(1)
        }
    }

    /// How many records come before the position a seek for `key` in
    /// `cmp`'s order lands on: one past those below `key`, and past `key`
    /// itself too when it is there and the seek goes forward exclusively or
    /// backward inclusively.
    pub(crate) fn records_before(
        &self,
        key: &[u8],
        cmp: KeyComparator,
        forward: bool,
        inclusive: bool,
    ) -> usize {
        match self.find_in(key, cmp) {
            Ok(i) if inclusive != forward => i + 1,
            Ok(i) | Err(i) => i,
        }
    }

    fn encode_record(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
        leb128::put(out, key.len() as u64);
        leb128::put(out, value.len() as u64);
        out.extend_from_slice(key);
        out.extend_from_slice(value);
    }

    /// Adds a record after all the others.
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        self.starts.push(self.data.len() as u32);
        self.heads.push(head(key));
        Leaf::encode_record(&mut self.data, key, value);
    }

    /// Where record `i` starts, or the end for `i == len()`.
    fn start(&self, i: usize) -> usize {
        self.starts.get(i).map_or(self.data.len(), |&s| s as usize)
    }

    /// Replaces the `len` bytes at `at` with `size` bytes (their content
    /// left to the caller), moving the bytes after and the starts of records
    /// `moved..` by the difference: one move of the tail, no copy of the rest.
    fn resize_span(&mut self, at: usize, len: usize, size: usize, moved: usize) {
        let end = self.data.len();
        if size > len {
            self.data.resize(end + size - len, 0);
        }
        self.data.copy_within(at + len..end, at + size);
        if size < len {
            self.data.truncate(end - (len - size));
        }
        for s in &mut self.starts[moved..] {
            *s = (*s as usize + size - len) as u32;
        }
    }

    /// Replaces the `len` bytes at `at` with record (`key`, `value`).
    fn put_record(&mut self, at: usize, len: usize, key: &[u8], value: &[u8], moved: usize) {
        let size = record_size(key, value);
        self.resize_span(at, len, size, moved);
        let mut w = at;
        w += leb128::write(&mut self.data[w..], key.len() as u64);
        w += leb128::write(&mut self.data[w..], value.len() as u64);
        self.data[w..w + key.len()].copy_from_slice(key);
        self.data[w + key.len()..at + size].copy_from_slice(value);
    }

    pub(crate) fn insert(&mut self, i: usize, key: &[u8], value: &[u8]) {
        let at = self.start(i);
        self.put_record(at, 0, key, value, i);
        self.starts.insert(i, at as u32);
        self.heads.insert(i, head(key));
    }

    pub(crate) fn remove(&mut self, i: usize) {
        let at = self.start(i);
        self.resize_span(at, self.start(i + 1) - at, 0, i + 1);
        self.starts.remove(i);
        self.heads.remove(i);
    }

    pub(crate) fn set_value(&mut self, i: usize, value: &[u8]) {
        let (at, end) = (self.start(i), self.start(i + 1));
        let (key, old) = self.record(i);
        if old.len() == value.len() {
            self.data[end - value.len()..end].copy_from_slice(value);
            return;
        }
        let key = key.to_vec();
        self.put_record(at, end - at, &key, value, i + 1);
    }

    /// Drops every record, keeping the buffers' room and the links.
    pub(crate) fn clear(&mut self) {
        self.data.clear();
        self.starts.clear();
        self.heads.clear();
    }

    /// Gives back the room the buffers hold beyond the records (an
    /// in-memory leaf keeps no slack after a split).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.starts.shrink_to_fit();
        self.heads.shrink_to_fit();
    }

    /// Makes room for `extra` more bytes and one more record, growing the
    /// buffers by an eighth rather than doubling them: an in-memory leaf's
    /// slack is memory the database holds for good.
    pub(crate) fn reserve_gently(&mut self, extra: usize) {
        grow_gently(&mut self.data, extra);
        grow_gently(&mut self.starts, 1);
        grow_gently(&mut self.heads, 1);
    }

    /// The heap bytes the leaf's buffers take.
    pub(crate) fn heap_size(&self) -> usize {
        self.data.capacity()
            + self.starts.capacity() * std::mem::size_of::<u32>()
            + self.heads.capacity() * std::mem::size_of::<u64>()
    }

    /// Moves the records from `at` on into a new leaf.
    pub(crate) fn split_off(&mut self, at: usize) -> Leaf {
        let cut = self.starts[at] as usize;
        let data = self.data.split_off(cut);
        let starts = self.starts.split_off(at).into_iter().map(|s| s - cut as u32).collect();
        let heads = self.heads.split_off(at);
        Leaf { data, starts, heads, prev: 0, next: 0 }
    }

    /// Moves every record of `other`, whose keys all come after these, to the end.
    pub(crate) fn append(&mut self, other: &mut Leaf) {
        let base = self.data.len() as u32;
        self.data.append(&mut other.data);
        self.starts.extend(other.starts.drain(..).map(|s| s + base));
        self.heads.append(&mut other.heads);
    }

    /// Keeps, changes or drops each record as `f` says; answers whether any changed.
    pub(crate) fn rewrite<'a>(&mut self, mut f: impl FnMut(&[u8], &[u8]) -> Action<'a>) -> bool {
        let old = std::mem::take(self);
        let mut changed = false;
        for (key, value) in old.records() {
            match f(key, value) {
                Action::Keep => self.push(key, value),
                Action::Set(new) => {
                    changed = true;
                    self.push(key, &new);
                }
                Action::Remove => changed = true,
            }
        }
        self.prev = old.prev;
        self.next = old.next;
        changed
    }
}

impl Node {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match self {
            Node::Leaf(leaf) => {
                out.push(0);
                leb128::put(out, leaf.prev);
                leb128::put(out, leaf.next);
                leb128::put(out, leaf.len() as u64);
                out.extend_from_slice(&leaf.data);
            }
            Node::Inner(inner) => {
                out.push(1);
                leb128::put(out, inner.children.len() as u64);
                leb128::put(out, inner.children[0]);
                for (key, &child) in inner.keys.iter().zip(&inner.children[1..]) {
                    leb128::put(out, key.len() as u64);
                    out.extend_from_slice(key);
                    leb128::put(out, child);
                }
            }
        }
    }

    /// Parses node `id`'s bytes; `path` names the file in errors.
    /// With `order`, a leaf whose keys, or an inner node whose separators,
    /// do not rise strictly in it is broken: a search in it would find one
    /// copy of a key and miss another, so a get could answer a value a
    /// remove had just removed. Checked here, where every key passes anyway,
    /// with the heads first, so that a load costs a comparison of integers
    /// per key in byte order.
    pub(crate) fn decode(
        id: u64,
        bytes: &[u8],
        path: &std::path::Path,
        order: Option<KeyComparator>,
    ) -> Result<Node> {
        Node::parse(id, bytes, order).map_err(|why| {
            Error::new(ErrorKind::BrokenData, format!("node {id} of {} is broken: {why}", path.display()))
        })
    }

    fn parse(id: u64, bytes: &[u8], order: Option<KeyComparator>) -> std::result::Result<Node, &'static str> {
        let mut r = Reader::new(bytes);
        // The previous key, with its head.
        let mut last: Option<(u64, &[u8])> = None;
        let node = match r.byte()? {
            0 if is_leaf_id(id) => {
                let prev = r.varint()?;
                let next = r.varint()?;
                let n = r.varint()?;
                let base = r.position();
                let data = &bytes[base..];
                if u32::try_from(data.len()).is_err() {
                    return Err("a leaf is too large");
                }
                let mut starts = Vec::with_capacity(n.min(data.len() as u64) as usize);
                let mut heads = Vec::with_capacity(starts.capacity());
                for _ in 0..n {
                    starts.push((r.position() - base) as u32);
                    let klen = r.varint()?;
                    let vlen = r.varint()?;
                    heads.push(next_key(order, &mut last, r.bytes(klen)?)?);
                    r.bytes(vlen)?;
                }
                Node::Leaf(Leaf { data: data.to_vec(), starts, heads, prev, next })
            }
            1 if !is_leaf_id(id) => {
                let n = r.varint()?;
                if n == 0 {
                    return Err("an inner node has no children");
                }
                let mut children = Vec::with_capacity(n.min(bytes.len() as u64) as usize);
                let mut keys = Vec::with_capacity(children.capacity());
                children.push(r.varint()?);
                for _ in 1..n {
                    let klen = r.varint()?;
                    let key = r.bytes(klen)?;
                    next_key(order, &mut last, key)?;
                    keys.push(key);
                    children.push(r.varint()?);
                }
                Node::Inner(Inner { keys: PackedSeparators::of(&keys), children })
            }
            _ => return Err("its kind does not match its id"),
        };
        if !r.done() {
            return Err("bytes follow its end");
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leaf holding a key twice, or keys out of order, and an inner node
    /// whose separators fall, are broken when loaded in an order (a search
    /// would find one copy and miss the other); without one (a salvage that
    /// sets every record again) they decode.
    #[test]
    fn keys_out_of_order_are_broken_in_every_order() {
        let path = std::path::Path::new("t.kt");
        let keys: [&[u8]; 3] = [b"apple-pie-1", b"apple-pie-1", b"banana"];
        let twice = Node::Leaf(Leaf::of(keys.iter().map(|k| (*k, &b"v"[..])), 0, 0));
        let falling = Node::Leaf(Leaf::of([(&b"b"[..], &b"1"[..]), (&b"a"[..], &b"2"[..])], 0, 0));
        let inner =
            Node::Inner(Inner { keys: PackedSeparators::of(&[&b"m"[..], b"c"]), children: vec![1, 2, 3] });
        for (id, node) in [(5, &twice), (6, &falling), (INNER_BASE + 1, &inner)] {
            let mut bytes = Vec::new();
            node.encode(&mut bytes);
            assert!(Node::decode(id, &bytes, path, None).is_ok());
            for cmp in [KeyComparator::Lexical, KeyComparator::Decimal] {
                let err = Node::decode(id, &bytes, path, Some(cmp)).expect_err("decoded out of order");
                assert_eq!(err.kind(), ErrorKind::BrokenData, "{err}");
                assert!(err.to_string().contains("out of order"), "{err}");
            }
        }
        // The same keys rising decode in their order.
        let rising = Node::Leaf(Leaf::of([(&b"a"[..], &b"1"[..]), (&b"b"[..], &b"2"[..])], 0, 0));
        let mut bytes = Vec::new();
        rising.encode(&mut bytes);
        assert!(Node::decode(7, &bytes, path, Some(KeyComparator::Lexical)).is_ok());
        assert!(Node::decode(7, &bytes, path, Some(KeyComparator::LexicalReverse)).is_err());
    }

    #[test]
    fn nodes_round_trip_and_damage_is_an_error() {
        let big = [0u8; 300];
        let leaf = Node::Leaf(Leaf::of([(&b"a"[..], &b"1"[..]), (&b""[..], &big[..])], 3, 1 << 40));
        let inner =
            Node::Inner(Inner { keys: PackedSeparators::of(&[b"m"]), children: vec![1, INNER_BASE + 7] });
        let path = std::path::Path::new("t.kt");
        for (id, node) in [(5, &leaf), (INNER_BASE + 1, &inner)] {
            let mut bytes = Vec::new();
            node.encode(&mut bytes);
            let back = Node::decode(id, &bytes, path, None).unwrap();
            let mut again = Vec::new();
            back.encode(&mut again);
            assert_eq!(bytes, again);
            for cut in 0..bytes.len() {
                let err = Node::decode(id, &bytes[..cut], path, None).unwrap_err();
                assert_eq!(err.kind(), ErrorKind::BrokenData, "{err}");
            }
        }
        let mut bytes = Vec::new();
        leaf.encode(&mut bytes);
        assert!(Node::decode(INNER_BASE + 1, &bytes, path, None).is_err());
    }

    #[derive(Debug, Clone)]
    enum LeafOp {
        Insert(u8, usize),
        Remove(u8),
        Set(u8, usize),
        SplitAndAppend(u8),
    }

    fn leaf_op() -> impl proptest::strategy::Strategy<Value = LeafOp> {
        use proptest::prelude::*;
        prop_oneof![
            (any::<u8>(), 0..300usize).prop_map(|(k, n)| LeafOp::Insert(k, n)),
            any::<u8>().prop_map(LeafOp::Remove),
            (any::<u8>(), 0..300usize).prop_map(|(k, n)| LeafOp::Set(k, n)),
            any::<u8>().prop_map(LeafOp::SplitAndAppend),
        ]
    }

    proptest::proptest! {
        /// Every change to a packed leaf matches the same change to a list of
        /// pairs, and the leaf's bytes decode back to it.
        #[test]
        fn a_packed_leaf_follows_a_list(ops in proptest::collection::vec(leaf_op(), 1..120)) {
            let mut leaf = Leaf::default();
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let cmp = |a: &[u8], b: &[u8]| a.cmp(b);
            for op in ops {
                match op {
                    LeafOp::Insert(k, n) | LeafOp::Set(k, n) => {
                        let (key, value) = (key_of(k), vec![k; n]);
                        match (leaf.find(&key, cmp), model.binary_search_by(|(mk, _)| mk.as_slice().cmp(&key))) {
                            (Ok(i), Ok(j)) => {
                                assert_eq!(i, j);
                                leaf.set_value(i, &value);
                                model[j].1 = value;
                            }
                            (Err(i), Err(j)) => {
                                assert_eq!(i, j);
                                leaf.insert(i, &key, &value);
                                model.insert(j, (key, value));
                            }
                            other => panic!("find disagrees: {other:?}"),
                        }
                    }
                    LeafOp::Remove(k) => {
                        let key = key_of(k);
                        if let Ok(i) = leaf.find(&key, cmp) {
                            leaf.remove(i);
                            model.remove(i);
                        }
                    }
                    LeafOp::SplitAndAppend(at) => {
                        if !model.is_empty() {
                            let mut right = leaf.split_off(usize::from(at) % model.len());
                            leaf.append(&mut right);
                        }
                    }
                }
                let got: Vec<(Vec<u8>, Vec<u8>)> = leaf.records().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
                assert_eq!(&got, &model);
                assert_eq!(leaf.size(), model.iter().map(|(k, v)| record_size(k, v)).sum::<usize>());
                assert_heads_hold(&leaf);
            }
            let mut bytes = Vec::new();
            Node::Leaf(leaf).encode(&mut bytes);
            let Ok(Node::Leaf(back)) = Node::decode(1, &bytes, std::path::Path::new("t.kt"), None) else { panic!("decode") };
            let got: Vec<(Vec<u8>, Vec<u8>)> = back.records().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            assert_eq!(got, model);
            assert_heads_hold(&back);
        }
    }

    #[test]
    fn separators_lead_to_the_child_a_whole_key_comparison_does() {
        for cmp in [KeyComparator::Lexical, KeyComparator::LexicalReverse, KeyComparator::Decimal] {
            let mut keys: Vec<Vec<u8>> = (0..=255u8).step_by(7).map(key_of).collect();
            keys.extend((0..40).map(|n| format!("{}", n * 13).into_bytes()));
            keys.sort_by(|a, b| cmp.compare(a, b));
            keys.dedup();
            let mut separators = Separators::of(keys.clone());
            let extra = separators.split_off(keys.len() / 2);
            separators.append(&mut { extra });
            let mut packed = PackedSeparators::of(&keys);
            let extra = packed.split_off(keys.len() / 2);
            packed.append(&mut { extra });
            let probes = (0..=255u8).map(key_of).chain((0..600).map(|n| format!("{n}").into_bytes()));
            for probe in probes {
                let expected =
                    keys.iter().filter(|k| cmp.compare(k, &probe) != std::cmp::Ordering::Greater).count();
                let found = separators.child_index(&Probe::new(&probe, cmp));
                assert_eq!(found, expected, "{} {probe:?}", cmp.name());
                let found = packed.child_index(&Probe::new(&probe, cmp));
                assert_eq!(found, expected, "packed, {} {probe:?}", cmp.name());
            }
        }
    }

    /// Packed separators hold what a list of keys holds through every edit
    /// an inner node makes, their heads with them.
    #[test]
    fn packed_separators_follow_a_list() {
        let mut model: Vec<Vec<u8>> = Vec::new();
        let mut packed = PackedSeparators::default();
        for step in 0..400usize {
            let key = key_of((step * 37 % 251) as u8);
            match step % 7 {
                0..=2 => {
                    let i = step % (model.len() + 1);
                    model.insert(i, key.clone());
                    packed.insert(i, &key);
                }
                3 if !model.is_empty() => {
                    let i = step % model.len();
                    assert_eq!(packed.remove(i), model.remove(i));
                }
                4 => {
                    model.push(key.clone());
                    packed.push(&key);
                }
                5 => assert_eq!(packed.pop(), model.pop()),
                _ => {
                    let at = step % (model.len() + 1);
                    let mut tail = model.split_off(at);
                    let mut packed_tail = packed.split_off(at);
                    assert!(packed_tail.iter().eq(tail.iter().map(Vec::as_slice)));
                    model.append(&mut tail);
                    packed.append(&mut packed_tail);
                }
            }
            assert!(packed.iter().eq(model.iter().map(Vec::as_slice)), "step {step}");
            for (i, key) in model.iter().enumerate() {
                assert_eq!(packed.heads[i], head(key));
            }
        }
    }

    /// An inner node grows its buffers by an eighth, from a load's exact
    /// size as from a split's, and both halves of a split, and a merged
    /// node, keep no room beyond their entries: the cache holds these nodes
    /// for good.
    #[test]
    fn an_inner_node_keeps_little_room_beyond_its_entries() {
        let room = |inner: &Inner| {
            let k = &inner.keys;
            [
                (k.bytes.capacity(), k.bytes.len()),
                (k.starts.capacity(), k.starts.len()),
                (k.heads.capacity(), k.heads.len()),
                (inner.children.capacity(), inner.children.len()),
            ]
        };
        let keys: Vec<Vec<u8>> = (0..200u32).map(|i| format!("key{:05}", i * 2).into_bytes()).collect();
        let mut bytes = Vec::new();
        let children: Vec<u64> = (0..=200).collect();
        Node::Inner(Inner { keys: PackedSeparators::of(&keys), children }).encode(&mut bytes);
        let Ok(Node::Inner(mut inner)) = Node::decode(INNER_BASE, &bytes, std::path::Path::new("t.kt"), None)
        else {
            panic!("the inner node did not decode");
        };
        for (i, n) in (0..56u32).enumerate() {
            inner.insert(2 * i + 1, format!("key{:05}", n * 2 + 1).as_bytes(), 1000 + u64::from(n));
            for (capacity, len) in room(&inner) {
                assert!(capacity <= len + len / 8 + 9, "room for {capacity} holding {len}");
            }
        }
        assert!(inner.keys.iter().is_sorted());
        let (up, mut right) = inner.split_off(inner.keys.len() / 2 + 1);
        assert_eq!(inner.keys.len() + 1 + right.keys.len(), 256);
        assert_eq!(
            (inner.children.len(), right.children.len()),
            (inner.keys.len() + 1, right.keys.len() + 1)
        );
        assert!(*inner.keys.iter().last().unwrap() < up[..] && up[..] < right.keys[0]);
        for (capacity, len) in room(&inner).into_iter().chain(room(&right)) {
            assert_eq!(capacity, len);
        }
        let (keys, children) =
            (inner.keys.len() + 1 + right.keys.len(), inner.children.len() + right.children.len());
        inner.merge(&up, &mut right);
        assert_eq!((inner.keys.len(), inner.children.len()), (keys, children));
        assert!(inner.keys.iter().is_sorted());
        for (capacity, len) in room(&inner) {
            assert_eq!(capacity, len);
        }
    }

    /// Records packed from any place, unpacked one after another, are the
    /// leaf's records from there, whole ones only, within the bytes asked
    /// but for the first, which comes whole.
    #[test]
    fn packed_records_unpack_to_the_leafs_own() {
        let values: Vec<Vec<u8>> = (0..20).map(|i| vec![b'v'; i * 13 % 150]).collect();
        let keys: Vec<Vec<u8>> = (0..20).map(|i| format!("key{i:02}").into_bytes()).collect();
        let leaf = Leaf::of(keys.iter().zip(&values).map(|(k, v)| (k.as_slice(), v.as_slice())), 0, 0);
        for i in 0..=leaf.len() {
            for bytes in [0, 5, 100, 400, 10_000] {
                let packed = leaf.packed_from(i, bytes);
                let first = if i < leaf.len() { record_size(leaf.key(i), leaf.record(i).1) } else { 0 };
                assert!(packed.len() <= bytes.max(first), "from {i} in {bytes}: {} bytes", packed.len());
                let mut rest = packed;
                let mut j = i;
                while !rest.is_empty() {
                    let (key, value, size) = Leaf::unpack(rest);
                    assert_eq!((key, value), leaf.record(j), "record {j} from {i} in {bytes}");
                    rest = &rest[size..];
                    j += 1;
                }
                let next_fits =
                    j < leaf.len() && packed.len() + record_size(leaf.key(j), leaf.record(j).1) <= bytes;
                assert!(!next_fits, "from {i} in {bytes}: record {j} would have fitted");
            }
        }
    }

    /// A prefetch from any record, the end and past it, of any length, reads
    /// and changes nothing: a cursor asks for one after the last record too.
    #[test]
    fn a_prefetch_from_anywhere_leaves_the_leaf_as_it_was() {
        let leaf = Leaf::of([(&b"a"[..], &[b'1'; 100][..]), (b"b", b"2"), (b"c", b"")], 0, 0);
        let before: Vec<_> = leaf.records().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        for i in 0..=leaf.len() + 2 {
            for bytes in [0, 1, 64, 100_000] {
                leaf.prefetch_from(i, bytes);
            }
        }
        Leaf::default().prefetch_from(0, 1024);
        let after: Vec<_> = leaf.records().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(before, after);
    }

    /// Keys of 0 to 11 bytes, many sharing their first eight bytes, so that
    /// searches by heads meet equal heads of different keys.
    fn key_of(k: u8) -> Vec<u8> {
        let mut key = b"prefix".to_vec();
        key.extend_from_slice(&[k; 6]);
        key.truncate(usize::from(k % 12));
        key
    }

    /// Each head is its key's, and a search by heads finds what a search by
    /// whole keys finds, for keys there and between them.
    fn assert_heads_hold(leaf: &Leaf) {
        assert_eq!(leaf.heads.len(), leaf.len());
        for i in 0..leaf.len() {
            assert_eq!(leaf.heads[i], head(leaf.key(i)), "head {i}");
        }
        let cmp = |a: &[u8], b: &[u8]| a.cmp(b);
        for k in 0..=255u8 {
            let key = key_of(k);
            assert_eq!(leaf.find_in(&key, KeyComparator::Lexical), leaf.find(&key, cmp), "{key:?}");
            for (forward, inclusive) in [(true, true), (true, false), (false, true), (false, false)] {
                let before = leaf
                    .records()
                    .filter(|(k, _)| *k < key.as_slice() || (*k == key.as_slice() && inclusive != forward))
                    .count();
                let found = leaf.records_before(&key, KeyComparator::Lexical, forward, inclusive);
                assert_eq!(found, before, "{key:?} forward {forward} inclusive {inclusive}");
            }
        }
    }
}
