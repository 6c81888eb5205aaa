//! The content of the sequence workload's records: derived from an id alone, so
//! any thread can write any record and a reader can check it without a model.
//!
//! A record is an 8-byte tag repeated and cut to the record's size. The tag is
//! `id XOR "kura\0\0\0\0"` in big-endian order, so for ids below 2^32 a dump
//! shows `kura` followed by the id, and no record reads as zeros (which stand for
//! a record never written). Records shorter than the tag carry only part of it.

/// The length of the tag, and the shortest record that carries its whole id.
pub const TAG_LEN: usize = 8;

const MAGIC: u64 = u64::from_be_bytes(*b"kura\0\0\0\0");

fn tag(id: u64) -> [u8; TAG_LEN] {
    (id ^ MAGIC).to_be_bytes()
}

/// Fills `record` with the content of record `id`.
#[inline]
pub fn fill(record: &mut [u8], id: u64) {
    let tag = tag(id);
    // Whole tags first: fixed-size copies compile to plain stores, where a
    // variable-length copy per tag would call memcpy in the hot loop.
    let mut chunks = record.chunks_exact_mut(TAG_LEN);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&tag);
    }
    let rest = chunks.into_remainder();
    rest.copy_from_slice(&tag[..rest.len()]);
}

/// Whether `record` holds the content of record `id`.
#[inline]
pub fn holds(record: &[u8], id: u64) -> bool {
    let tag = tag(id);
    let word = u64::from_ne_bytes(tag);
    let chunks = record.chunks_exact(TAG_LEN);
    let rest = chunks.remainder();
    // Word compares, folded without early exit, so the loop vectorizes.
    let differ = chunks
        .fold(0u64, |acc, chunk| acc | (u64::from_ne_bytes(chunk.try_into().unwrap_or_default()) ^ word));
    // The tail byte by byte: a slice compare would call memcmp for a few bytes.
    differ == 0 && rest.iter().zip(tag).all(|(a, b)| *a == b)
}

/// The id of the record `record` holds, if it holds a whole, well-formed one.
#[inline]
pub fn identify(record: &[u8]) -> Option<u64> {
    let tag = u64::from_be_bytes(record.get(..TAG_LEN)?.try_into().ok()?);
    // A zero tag is the one no id produces in practice (id == MAGIC): an unwritten record.
    let id = tag ^ MAGIC;
    (tag != 0 && holds(record, id)).then_some(id)
}

/// Whether every byte of `record` is zero: a record never written.
#[inline]
pub fn is_zero(record: &[u8]) -> bool {
    record.iter().fold(0u8, |acc, &b| acc | b) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_differ() {
        for size in [1, 7, 8, 9, 100, 4096] {
            let mut record = vec![0u8; size];
            fill(&mut record, 12345);
            assert!(holds(&record, 12345), "size {size}");
            assert!(!is_zero(&record), "size {size}");
            if size >= TAG_LEN {
                assert_eq!(identify(&record), Some(12345), "size {size}");
                assert!(!holds(&record, 12346), "size {size}");
                record[size - 1] ^= 1;
                let expected = if size > TAG_LEN { None } else { Some(12345 ^ 1) };
                assert_eq!(identify(&record), expected, "size {size}");
            }
        }
    }

    #[test]
    fn dumps_read_as_kura_and_the_id() {
        let mut record = [0u8; 12];
        fill(&mut record, 0x0102_0304);
        assert_eq!(&record, b"kura\x01\x02\x03\x04kura");
        assert_eq!(identify(&[0u8; 16]), None);
    }
}
