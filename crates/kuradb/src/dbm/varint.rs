//! Variable-length unsigned integers, as every file format of the databases
//! writes sizes: seven bits a byte, least significant first, the high bit set
//! on every byte but the last.

/// Appends `n` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Writes `n` as a varint at the start of `out`, which must hold
/// [`varint_len`] bytes; answers how many it wrote.
pub(crate) fn write_varint(out: &mut [u8], mut n: u64) -> usize {
    let mut at = 0;
    while n >= 0x80 {
        out[at] = (n as u8) | 0x80;
        n >>= 7;
        at += 1;
    }
    out[at] = n as u8;
    at + 1
}

/// The bytes `n` takes as a varint.
pub(crate) fn varint_len(n: u64) -> usize {
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a varint at `*pos`, moving past it; `None` if the bytes end inside
/// it or it is longer than any u64.
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// Reads what encoded bytes hold, failing with a message on anything short
/// or malformed.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    pub(crate) fn varint(&mut self) -> std::result::Result<u64, &'static str> {
        if self.at >= self.bytes.len() {
            return Err("it ends inside a number");
        }
        get_varint(self.bytes, &mut self.at).ok_or("a number is cut short or too long")
    }

    pub(crate) fn bytes(&mut self, len: u64) -> std::result::Result<&'a [u8], &'static str> {
        let end =
            usize::try_from(len).ok().and_then(|n| self.at.checked_add(n)).ok_or("a length is impossible")?;
        let out = self.bytes.get(self.at..end).ok_or("it ends inside a key or value")?;
        self.at = end;
        Ok(out)
    }

    pub(crate) fn byte(&mut self) -> std::result::Result<u8, &'static str> {
        let b = *self.bytes.get(self.at).ok_or("it is empty")?;
        self.at += 1;
        Ok(b)
    }

    pub(crate) fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// Bytes read so far.
    pub(crate) fn position(&self) -> usize {
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_know_their_length() {
        for n in [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX.into(), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            assert_eq!(out.len(), varint_len(n), "{n}");
            let mut slice = [0u8; 10];
            assert_eq!(write_varint(&mut slice, n), out.len(), "{n}");
            assert_eq!(&slice[..out.len()], &out[..], "{n}");
            let mut at = 0;
            assert_eq!(get_varint(&out, &mut at), Some(n));
            assert_eq!(at, out.len());
            assert_eq!(get_varint(&out[..out.len() - 1], &mut 0), None.filter(|_: &u64| out.len() == 1));
        }
        assert_eq!(get_varint(&[0xff; 11], &mut 0), None);
        let mut r = Reader::new(&[3, b'a', b'b']);
        assert_eq!(r.varint(), Ok(3));
        assert!(r.bytes(3).is_err());
        assert_eq!(r.bytes(2), Ok(&b"ab"[..]));
        assert!(r.done() && r.varint().is_err());
    }
}
