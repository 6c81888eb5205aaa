//! The one place a value's bytes pass between a record and a caller: every
//! stored value handed out is read through [`Codec::decode`], and every
//! caller's value stored is written through [`Codec::encode`]. With no
//! codec on they are the identity, borrowing without a copy; compression
//! (`compress.rs`) makes them own the bytes between the record and the caller.

use std::borrow::Cow;

use super::compress::Compression;
use super::record;
use crate::error::Result;

/// How a file's values are stored: compressed or not, as its header says.
pub(super) struct Codec {
    pub(super) compression: Option<Compression>,
}

impl Codec {
    /// The bytes a record stores for a caller's `value`: compressed (if on).
    #[inline]
    pub(super) fn encode<'a>(&self, value: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match &self.compression {
            None => Ok(Cow::Borrowed(value)),
            Some(c) => Ok(Cow::Owned(c.encode(value)?)),
        }
    }

    /// The value a caller sees of the record at `offset` that `header`
    /// describes, read into `buf` from its start through its value:
    /// decompressed (if on).
    #[inline]
    pub(super) fn decode<'a>(
        &self,
        offset: u64,
        header: &record::Header,
        buf: &'a [u8],
    ) -> Result<Cow<'a, [u8]>> {
        let at = header.header_size + header.key_size;
        let stored = &buf[at..at + header.value_size];
        match &self.compression {
            None => Ok(Cow::Borrowed(stored)),
            Some(c) => c.decode(offset, stored),
        }
    }
}
