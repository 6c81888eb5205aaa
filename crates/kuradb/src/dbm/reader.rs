//! Reads what encoded bytes hold (LEB128 numbers, byte strings), failing
//! with a message on anything short or malformed: the tree's nodes and
//! metadata are read through it.

use crate::varint::{leb128, VarintError};

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
        leb128::decode(self.bytes, &mut self.at).map_err(|e| match e {
            VarintError::Truncated => "a number is cut short",
            VarintError::Overflow => "a number does not fit in 64 bits",
        })
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
    fn reads_numbers_and_byte_strings() {
        let mut r = Reader::new(&[3, b'a', b'b']);
        assert_eq!(r.varint(), Ok(3));
        assert!(r.bytes(3).is_err());
        assert_eq!(r.bytes(2), Ok(&b"ab"[..]));
        assert!(r.done() && r.varint().is_err());
        assert_eq!(Reader::new(&[0x80]).varint(), Err("a number is cut short"));
        assert_eq!(Reader::new(&[0xff; 11]).varint(), Err("a number does not fit in 64 bits"));
    }
}
