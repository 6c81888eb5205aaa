//! The record of StdHashDbm and StdTreeDbm: one value of the standard
//! set, small records in the set's own slot, larger ones in one allocation;
//! and the key as the sets order and hash it.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

use ref_cast::RefCast;

use crate::dbm::comparator::compare_bytes;
use crate::varint::leb128;

/// A record in the set's own slot when it is small (as C++'s short strings
/// are), else in one allocation holding the key's length, the key and the
/// value.
pub(super) enum Packed {
    Inline(InlineRecord),
    Heap(Box<[u8]>),
}

/// The most key and value bytes a record keeps in its slot: what fits beside
/// the two lengths and the variant's tag in 24 bytes, which a boxed slice
/// with a tag, aligned, takes anyway.
const INLINE: usize = 21;

#[derive(Clone, Copy)]
pub(super) struct InlineRecord {
    key_len: u8,
    len: u8,
    bytes: [u8; INLINE],
}

const _: () = assert!(std::mem::size_of::<Packed>() == 24);

impl Packed {
    pub(super) fn new(key: &[u8], value: &[u8]) -> Packed {
        let len = key.len() + value.len();
        if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            bytes[key.len()..len].copy_from_slice(value);
            return Packed::Inline(InlineRecord { key_len: key.len() as u8, len: len as u8, bytes });
        }
        let mut bytes = Vec::with_capacity(len + 5);
        leb128::put(&mut bytes, key.len() as u64);
        bytes.extend_from_slice(key);
        bytes.extend_from_slice(value);
        Packed::Heap(bytes.into_boxed_slice())
    }

    /// The key and the value.
    #[inline]
    pub(super) fn parts(&self) -> (&[u8], &[u8]) {
        match self {
            Packed::Inline(r) => r.bytes[..usize::from(r.len)].split_at(usize::from(r.key_len)),
            Packed::Heap(bytes) => {
                let mut at = 0;
                let n = leb128::decode(bytes, &mut at).expect("a heap record starts with its key's length");
                bytes[at..].split_at(n as usize)
            }
        }
    }

    #[inline]
    pub(super) fn key(&self) -> &[u8] {
        self.parts().0
    }

    pub(super) fn value(&self) -> &[u8] {
        self.parts().1
    }

    /// Heap bytes, with the allocator's header: none for a record in its slot.
    pub(super) fn heap_size(&self) -> usize {
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
pub(super) struct Key([u8]);

impl Key {
    pub(super) fn of(bytes: &[u8]) -> &Key {
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
}
