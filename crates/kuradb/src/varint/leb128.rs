//! LEB128: seven bits a byte, least significant first, the high bit set on
//! every byte but the last. The decoders follow the rule in [`super`].

use super::{encoded_len, VarintError, MAX_LEN};

/// The bytes `n` takes.
#[inline]
pub fn len(n: u64) -> usize {
    encoded_len(n)
}

/// Appends `n`.
#[inline]
pub fn put(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; MAX_LEN];
    let len = write(&mut buf, n);
    out.extend_from_slice(&buf[..len]);
}

/// Writes `n` at the start of `out`, which must hold [`len`]`(n)` bytes;
/// answers how many it wrote.
///
/// # Panics
///
/// If `out` is shorter than the number.
#[inline]
pub fn write(out: &mut [u8], mut n: u64) -> usize {
    let mut at = 0;
    while n >= 0x80 {
        out[at] = (n as u8) | 0x80;
        n >>= 7;
        at += 1;
    }
    out[at] = n as u8;
    at + 1
}

/// Appends `n` in exactly `len` bytes, a longer form than needed when `len`
/// is more than [`len`]`(n)` (it still reads back as `n`); the bits of `n`
/// that do not fit in `len` bytes are not written.
pub fn put_padded(out: &mut Vec<u8>, mut n: u64, len: usize) {
    for i in 0..len {
        let more = if i + 1 < len { 0x80 } else { 0 };
        out.push((n & 0x7f) as u8 | more);
        n >>= 7;
    }
}

/// Reads a number at `*pos`, moving past it.
///
/// A one-byte number takes a single branch; longer ones go through
/// [`Decoder`]. On an error `*pos` is left somewhere inside the number.
#[inline]
pub fn decode(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Ok(u64::from(b))
        }
        _ => decode_long(buf, pos),
    }
}

// Inline too: a value or key past 127 bytes has a two-byte size, read on
// every record read of the databases whose records hold such.
#[inline]
fn decode_long(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    let mut decoder = Decoder::default();
    loop {
        let b = *buf.get(*pos).ok_or(VarintError::Truncated)?;
        *pos += 1;
        if let Some(n) = decoder.push(b)? {
            return Ok(n);
        }
    }
}

/// Decodes a number fed one byte at a time, for readers of streams.
#[derive(Clone, Copy, Debug, Default)]
pub struct Decoder {
    n: u64,
    len: u32,
}

impl Decoder {
    /// Takes the next byte: the number once it is whole, `None` while more
    /// bytes are wanted.
    #[inline]
    pub fn push(&mut self, b: u8) -> Result<Option<u64>, VarintError> {
        if self.len as usize == MAX_LEN - 1 {
            // The tenth byte holds the 64th bit and nothing more.
            if b > 1 {
                return Err(VarintError::Overflow);
            }
            return Ok(Some(self.n | u64::from(b) << 63));
        }
        self.n |= u64::from(b & 0x7f) << (7 * self.len);
        self.len += 1;
        Ok((b < 0x80).then_some(self.n))
    }
}
