//! Two byte strings as one: the key of a secondary index's record, which
//! holds the index's key and value (see [`crate::index`]).
//!
//! The layout is the reference's (Tkrzw's serialized string pair), so that a
//! pair-ordered tree file of the reference reads as the same pairs:
//!
//! ```text
//! first size (varint), first, second size (varint), second
//! ```
//!
//! The varint is the reference's ([`crate::varint::base128`]): seven bits a
//! byte, the most significant group first, the high bit set on every byte
//! but the last. The sizes make
//! every pair of byte strings encode differently, whatever bytes they hold
//! (no separator can be confused with data); the order of pairs is not the
//! order of their bytes, which is why pair orders have their own
//! comparators ([`KeyComparator::PairLexical`](super::comparator::KeyComparator::PairLexical) and the others).

use crate::varint::base128;

/// `first` and `second` as one byte string.
///
/// ```
/// use kuradb::dbm::pair::{decode_pair, encode_pair};
/// let record = encode_pair(b"tokyo", b"user:17");
/// assert_eq!(decode_pair(&record), Some((&b"tokyo"[..], &b"user:17"[..])));
/// ```
pub fn encode_pair(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(first.len() + second.len() + 4);
    base128::put(&mut out, first.len() as u64);
    out.extend_from_slice(first);
    base128::put(&mut out, second.len() as u64);
    out.extend_from_slice(second);
    out
}

/// The two parts of an encoded pair, or `None` if `bytes` is not exactly
/// one (a size runs past the end, or bytes are left over).
pub fn decode_pair(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut at = 0;
    let first = sized(bytes, &mut at)?;
    let second = sized(bytes, &mut at)?;
    (at == bytes.len()).then_some((first, second))
}

/// The byte string at `*at`, after its size; moves past it.
fn sized<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let n = base128::decode(bytes, at).ok()?;
    let end = at.checked_add(usize::try_from(n).ok()?)?;
    let part = bytes.get(*at..end)?;
    *at = end;
    Some(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_references_varints() {
        // 300 = 0b10_0101100: groups 0000010 and 0101100, most significant first.
        let long = vec![b'x'; 300];
        let record = encode_pair(&long, b"");
        assert_eq!(&record[..2], &[0x82, 0x2c]);
        assert_eq!(record.len(), 2 + 300 + 1);
        assert_eq!(encode_pair(b"", b""), [0, 0]);
        assert_eq!(encode_pair(b"a", b"bc"), [1, b'a', 2, b'b', b'c']);
    }

    #[test]
    fn every_pair_round_trips_and_distinct_pairs_differ() {
        let parts: [&[u8]; 6] = [b"", b"\0", b"\x01a", b"a\x00b", &[0x80, 0xff, 0x7f], &[7; 200]];
        let mut seen = std::collections::HashSet::new();
        for a in parts {
            for b in parts {
                let record = encode_pair(a, b);
                assert_eq!(decode_pair(&record), Some((a, b)));
                assert!(seen.insert(record), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn malformed_pairs_are_refused() {
        for bad in [&b""[..], &[1], &[2, b'a'], &[1, b'a', 1], &[0, 0, 0], &[0xff; 12]] {
            assert_eq!(decode_pair(bad), None, "{bad:?}");
        }
    }
}
