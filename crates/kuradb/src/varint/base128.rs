//! The reference's variable-length numbers: seven bits a byte, most
//! significant first, the high bit set on every byte but the last. The
//! decoders follow the rule in [`super`].

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
pub fn write(out: &mut [u8], n: u64) -> usize {
    let len = len(n);
    for (i, byte) in out[..len].iter_mut().enumerate() {
        let group = (n >> (7 * (len - 1 - i))) as u8 & 0x7f;
        *byte = if i + 1 < len { group | 0x80 } else { group };
    }
    len
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
        // Seven more bits must fit, and a tenth byte must be the last.
        if self.n >> 57 != 0 || (self.len as usize == MAX_LEN - 1 && b >= 0x80) {
            return Err(VarintError::Overflow);
        }
        self.n = self.n << 7 | u64::from(b & 0x7f);
        self.len += 1;
        Ok((b < 0x80).then_some(self.n))
    }
}
