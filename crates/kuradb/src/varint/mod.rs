//! Variable-length unsigned integers: the two forms kuradb's files use, with
//! one rule for what a decoder accepts.
//!
//! Both forms write seven bits a byte with the high bit set on every byte
//! but the last; they differ in the order of the groups:
//!
//! - [`leb128`]: least significant group first (LEB128). kuradb's own
//!   formats (hash, tree and skip records, flat files, sort files) use it.
//! - [`base128`]: most significant group first, as the reference writes
//!   its numbers (its flat records, update-log entries, serialized pairs and
//!   database files). 300 is `ac 02` in the first form and `82 2c` in this.
//!
//! # The decoding rule
//!
//! A number is at most [`MAX_LEN`] bytes, and its value must fit in a `u64`.
//! Anything else is an error, never a silently wrapped value:
//!
//! - the bytes end before a byte without the high bit:
//!   [`VarintError::Truncated`];
//! - the number has more than [`MAX_LEN`] bytes, or its bits go past the
//!   64th (in LEB128 a tenth byte above 1; in base 128 a tenth group after
//!   a first group above 1): [`VarintError::Overflow`].
//!
//! A longer form than needed is read as its value (LEB128 `80 00` is 0,
//! base-128 `80 05` is 5) as long as it keeps to [`MAX_LEN`] bytes: the hash
//! database writes a record's padding size in a fixed number of bytes.
//! Encoders always write the shortest form.
//!
//! ```
//! use kuradb::varint::{base128, leb128, VarintError};
//! let mut out = Vec::new();
//! leb128::put(&mut out, 300);
//! base128::put(&mut out, 300);
//! assert_eq!(out, [0xac, 0x02, 0x82, 0x2c]);
//! let mut at = 0;
//! assert_eq!(leb128::decode(&out, &mut at), Ok(300));
//! assert_eq!(base128::decode(&out, &mut at), Ok(300));
//! assert_eq!(leb128::decode(&[0xff; 11], &mut 0), Err(VarintError::Overflow));
//! assert_eq!(base128::decode(&[0x81], &mut 0), Err(VarintError::Truncated));
//! ```

pub mod base128;
pub mod leb128;
#[cfg(test)]
mod tests;

use std::fmt;

/// The most bytes a number takes: 64 bits at seven a byte.
pub const MAX_LEN: usize = 10;

/// Why bytes are not a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes end inside the number.
    Truncated,
    /// The number is longer than [`MAX_LEN`] bytes or does not fit in 64 bits.
    Overflow,
}

impl fmt::Display for VarintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VarintError::Truncated => "a number is cut short",
            VarintError::Overflow => "a number does not fit in 64 bits",
        })
    }
}

impl std::error::Error for VarintError {}

/// The bytes `n` takes in either form.
#[inline]
pub fn encoded_len(n: u64) -> usize {
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}
