//! The one place a value's bytes pass between a record and a caller: every
//! stored value handed out is read through [`Codec::decode`], and every
//! caller's value stored is written through [`Codec::encode_with`]. With no codec
//! on, both borrow without a copy; with one, they own the bytes between the
//! record and the caller: compression (`compress.rs`) shrinks what is
//! stored, then encryption (`cipher.rs`) seals it; reads undo both in the
//! reverse order.
//!
//! Keys pass likewise through [`Codec::seal_key`] (a caller's key, to the
//! bytes a record stores and a lookup compares) and [`Codec::open_key`] (a
//! stored key, to the caller's), which seal and open them in a file whose
//! keys are encrypted (`key_cipher.rs`) and borrow them otherwise. Below
//! those two, everything (buckets, chains, the value's binding) works on
//! stored keys.

use std::borrow::Cow;
use std::path::Path;

use super::cipher::{Cipher, CipherKey};
use super::compress::Compression;
use super::header::Header;
use super::record;
use crate::error::{Error, ErrorKind, Result};

/// The value codec of an open file, built at open from its header and the
/// options: compression (header byte 14) and encryption (byte 15), each
/// optional.
pub(super) struct Codec {
    pub(super) compression: Option<Compression>,
    /// Seals every value with the file's key.
    pub(super) cipher: Option<Cipher>,
}

impl Codec {
    /// The codec of the file at `path`, whose header is `header`, opened with
    /// `key`; `made` is the cipher a creation just derived for it, if any.
    /// An encrypted file needs its key and a plain one takes none: either
    /// mistake is an error naming the file, never the key.
    pub(super) fn open(
        header: &Header,
        key: Option<&CipherKey>,
        made: Option<Cipher>,
        path: &Path,
    ) -> Result<Codec> {
        let key = key.filter(|k| !k.is_empty());
        if !header.record_comp.is_built() {
            let what = format!("{} is compressed with {}, which", path.display(), header.record_comp);
            return Err(Error::needs_feature(what, header.record_comp.name()));
        }
        let cipher = match (&header.sealing, key) {
            (None, None) => None,
            (Some(_), _) if made.is_some() => made,
            (Some(sealing), Some(key)) => Some(Cipher::open(key, sealing, path)?),
            (Some(_), None) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("{} is encrypted: give cipher_key", path.display()),
                ))
            }
            (None, Some(_)) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "{} is not encrypted, but a cipher_key was given: open it without one, \
                         or rebuild it with the cipher_key parameter to encrypt it",
                        path.display()
                    ),
                ))
            }
        };
        let compression = Compression::new(header.record_comp, header.presets);
        // A dictionary is made of the values' common strings, and its record
        // is not sealed: an encrypted file compresses without one.
        if let (Some(c), Some(_)) = (&compression, &cipher) {
            c.stop_sampling();
        }
        Ok(Codec { compression, cipher })
    }

    /// The key the file was opened with, if it is encrypted.
    pub(super) fn key(&self) -> Option<&CipherKey> {
        self.cipher.as_ref().map(Cipher::key)
    }

    /// Whether records' keys are stored sealed.
    pub(super) fn seals_keys(&self) -> bool {
        self.cipher.as_ref().is_some_and(|c| c.keys().is_some())
    }

    /// The bytes a record of the caller's `key` stores, which a lookup
    /// compares and the bucket is hashed from: `key` itself unless keys are
    /// sealed. A key too large once sealed is an error naming the limit.
    #[inline(always)]
    pub(super) fn seal_key<'a>(&self, key: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match self.cipher.as_ref().and_then(Cipher::keys) {
            None => Ok(Cow::Borrowed(key)),
            Some(keys) => keys.seal(key).map(Cow::Owned),
        }
    }

    /// The caller's key that `stored`, the key of the record at `offset`,
    /// holds; one that fails authentication is an error naming the offset
    /// (the caller adds the file).
    #[inline(always)]
    pub(super) fn open_key<'a>(&self, offset: u64, stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match self.cipher.as_ref().and_then(Cipher::keys) {
            None => Ok(Cow::Borrowed(stored)),
            Some(keys) => keys.open(stored).map(Cow::Owned).ok_or_else(|| {
                Error::new(
                    ErrorKind::BrokenData,
                    format!(
                        "the record at offset {offset} is broken: its key fails authentication (changed)"
                    ),
                )
            }),
        }
    }

    /// Calls `f` with the bytes a record of `key` (as stored: see
    /// [`Codec::seal_key`]) stores for a caller's `value`: compressed (if
    /// on), then sealed (if on), bound to `key`. Compressed only, they are
    /// built in a buffer kept per thread (see `Compression::encode_with`).
    #[inline(always)]
    pub(super) fn encode_with<R>(
        &self,
        key: &[u8],
        value: &[u8],
        f: impl FnOnce(&[u8]) -> Result<R>,
    ) -> Result<R> {
        match (&self.compression, &self.cipher) {
            (None, None) => f(value),
            (Some(c), None) => c.encode_with(value, f),
            _ => f(&transform(self, key, value)?),
        }
    }

    /// The value a caller sees of the record at `offset` that `header`
    /// describes, read into `buf` from its start through its value: opened
    /// (if sealed), then decompressed (if on). A value that fails
    /// authentication or decompression is an error naming the offset (the
    /// caller adds the file).
    #[inline(always)]
    pub(super) fn decode<'a>(
        &self,
        offset: u64,
        header: &record::Header,
        buf: &'a [u8],
    ) -> Result<Cow<'a, [u8]>> {
        let at = header.header_size + header.key_size;
        let stored = &buf[at..at + header.value_size];
        if self.compression.is_none() && self.cipher.is_none() {
            return Ok(Cow::Borrowed(stored));
        }
        untransform(self, offset, &buf[header.header_size..at], stored)
    }
}

// Out of line, so that the plain path of every read and write stays as
// small as it was before there was a codec.

#[inline(never)]
fn transform<'a>(codec: &Codec, key: &[u8], value: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    let shrunk = match &codec.compression {
        None => Cow::Borrowed(value),
        Some(c) => Cow::Owned(c.encode(value)),
    };
    match &codec.cipher {
        None => Ok(shrunk),
        Some(cipher) => cipher.seal(key, &shrunk).map(Cow::Owned),
    }
}

#[inline(never)]
fn untransform<'a>(codec: &Codec, offset: u64, key: &[u8], stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    let opened = match &codec.cipher {
        None => Cow::Borrowed(stored),
        Some(cipher) => match cipher.unseal(key, stored) {
            Some(value) => Cow::Owned(value),
            None => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!(
                        "the record at offset {offset} is broken: its value fails authentication \
                         (changed, or moved from another key's record)"
                    ),
                ))
            }
        },
    };
    match (&codec.compression, opened) {
        (None, opened) => Ok(opened),
        (Some(c), Cow::Borrowed(stored)) => c.decode(offset, stored),
        (Some(c), Cow::Owned(plain)) => Ok(Cow::Owned(c.decode(offset, &plain)?.into_owned())),
    }
}
