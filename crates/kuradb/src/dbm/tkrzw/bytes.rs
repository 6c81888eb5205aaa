//! The number encodings and checksums the reference's files share, and a
//! bounds-checked reader over a byte slice so that a damaged length is an
//! error naming what it was reading, never a panic or a huge allocation.

use crate::error::{Error, ErrorKind, Result};
use crate::varint::{base128, VarintError};

/// The reference's record CRC-8 (polynomial 0x07, no reflection, zero start).
const CRC_8: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_8_SMBUS);
/// The reference's record CRC-16 (polynomial 0x1021, no reflection, zero start).
const CRC_16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// The 6-bit checksum every hash record carries in its magic byte: the sum
/// of its key's and value's bytes, plus 11, modulo 61, plus 3 (so that it
/// never reads as 0, 1 or 2).
pub(super) fn magic_checksum(key: &[u8], value: &[u8]) -> u8 {
    let sum: u64 = key.iter().chain(value).map(|&b| u64::from(b)).sum();
    ((sum + 11) % 61 + 3) as u8
}

/// The record CRC of `width` bytes (1, 2 or 4) over the key then the value.
pub(super) fn record_crc(width: usize, key: &[u8], value: &[u8]) -> u32 {
    match width {
        1 => {
            let mut d = CRC_8.digest();
            d.update(key);
            d.update(value);
            u32::from(d.finalize())
        }
        2 => {
            let mut d = CRC_16.digest();
            d.update(key);
            d.update(value);
            u32::from(d.finalize())
        }
        _ => {
            let mut h = crc32fast::Hasher::new();
            h.update(key);
            h.update(value);
            h.finalize()
        }
    }
}

/// A big-endian unsigned number of `bytes.len()` bytes (at most 8).
pub(super) fn fixnum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |n, &b| n << 8 | u64::from(b))
}

/// Reads the reference's numbers and byte strings from a slice, checking
/// every length against what remains.
pub(super) struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub(super) fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data, at: 0 }
    }

    /// How many bytes have been read.
    pub(super) fn position(&self) -> usize {
        self.at
    }

    /// How many bytes remain.
    pub(super) fn remaining(&self) -> usize {
        self.data.len() - self.at
    }

    /// The next `n` bytes, or an error saying `what` was cut short.
    pub(super) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(broken(format!("{what} is cut short ({n} bytes wanted, {} left)", self.remaining())));
        }
        let out = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    /// A big-endian number of `width` bytes.
    pub(super) fn fixnum(&mut self, width: usize, what: &str) -> Result<u64> {
        self.take(width, what).map(fixnum)
    }

    /// The reference's variable-length number ([`base128`]).
    pub(super) fn varint(&mut self, what: &str) -> Result<u64> {
        base128::decode(self.data, &mut self.at).map_err(|e| match e {
            VarintError::Truncated => broken(format!("{what} is cut short (it ends inside a number)")),
            VarintError::Overflow => broken(format!("{what} is not a valid number (too long)")),
        })
    }

    /// A byte string preceded by its length as a varint.
    pub(super) fn sized(&mut self, what: &str) -> Result<&'a [u8]> {
        let n = self.varint(what)?;
        let n = usize::try_from(n).map_err(|_| broken(format!("{what} has an impossible length {n}")))?;
        self.take(n, what)
    }
}

/// A `BrokenData` error with `message`.
pub(super) fn broken(message: String) -> Error {
    Error::new(ErrorKind::BrokenData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's own test vectors for its CRCs and checksum.
    #[test]
    fn checksums_match_the_reference_vectors() {
        assert_eq!(record_crc(1, b"hello", b""), 0x92);
        assert_eq!(record_crc(1, b"Hello", b" World"), 0x25);
        assert_eq!(record_crc(2, b"hello", b""), 0xC362);
        assert_eq!(record_crc(2, b"Hello ", b"World"), 0x992A);
        assert_eq!(record_crc(4, b"hel", b"lo"), 0x3610_A686);
        // A record "cherry" -> "x" written by tkrzw_dbm_util has magic 0x37.
        assert_eq!(magic_checksum(b"cherry", b"x"), 0x37);
    }

    #[test]
    fn varints_are_big_endian_base_128() {
        let mut b = Bytes::new(&[0x87, 0x44, 0x05, 0x80]);
        assert_eq!(b.varint("a").unwrap(), 7 * 128 + 0x44);
        assert_eq!(b.varint("b").unwrap(), 5);
        assert!(b.varint("c").unwrap_err().message().contains("c is cut short"));
        let long = [0xff; 12];
        assert!(Bytes::new(&long).varint("d").unwrap_err().message().contains("too long"));
        assert!(Bytes::new(&[3, b'a']).sized("e").is_err());
        assert_eq!(Bytes::new(&[2, b'a', b'b']).sized("f").unwrap(), b"ab");
    }
}
