//! What a record's value holds, in the queue and in the file: the caller's
//! bytes as they are. These two functions are the only ways between a
//! caller's value and a stored one, so a codec (compression, encryption)
//! attaches here; a decoding that makes new bytes will need a buffer from
//! its callers.

/// The bytes stored for a caller's `value`.
#[inline]
pub(super) fn encode_value(value: &[u8]) -> &[u8] {
    value
}

/// The caller's value of `stored` bytes.
#[inline]
pub(super) fn decode_value(stored: &[u8]) -> &[u8] {
    stored
}
