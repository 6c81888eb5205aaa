//! The one place a value's bytes pass between a record and a caller: every
//! stored value handed out is read through [`decode`], and every caller's
//! value stored is written through [`encode`]. Both are the identity today,
//! borrowing without a copy; a codec (compression, encryption) takes their
//! place and owns the bytes between the record and the caller.

use super::record;

/// The value a caller sees of the record that `header` describes, read
/// into `buf` from its start through its value.
#[inline]
pub(super) fn decode<'a>(header: &record::Header, buf: &'a [u8]) -> &'a [u8] {
    let at = header.header_size + header.key_size;
    &buf[at..at + header.value_size]
}

/// The bytes a record stores for a caller's `value`.
#[inline]
pub(super) fn encode(value: &[u8]) -> &[u8] {
    value
}
