//! The one place a value's bytes pass between a record and a caller: every
//! stored value handed out is read through [`Codec::decode`], and every
//! caller's value stored is written through [`Codec::encode`]. With no codec
//! on, both borrow without a copy; with one, they own the bytes between the
//! record and the caller: encryption (`cipher.rs`) seals what is stored.

use std::borrow::Cow;
use std::path::Path;

use super::cipher::{Cipher, CipherKey};
use super::header::Header;
use super::record;
use crate::error::{Error, ErrorKind, Result};

/// The value codec of an open file, built at open from its header and the
/// options: the identity, or encryption.
pub(super) struct Codec {
    /// Seals every value with the file's key (header byte 15 names it).
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
        Ok(Codec { cipher })
    }

    /// The key the file was opened with, if it is encrypted.
    pub(super) fn key(&self) -> Option<&CipherKey> {
        self.cipher.as_ref().map(Cipher::key)
    }

    /// The bytes a record of `key` stores for a caller's `value`.
    #[inline(always)]
    pub(super) fn encode<'a>(&self, key: &[u8], value: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match &self.cipher {
            None => Ok(Cow::Borrowed(value)),
            Some(cipher) => seal(cipher, key, value),
        }
    }

    /// The value a caller sees of the record at `offset` that `header`
    /// describes, read into `buf` from its start through its value. A value
    /// that fails authentication is an error naming the offset (the caller
    /// adds the file).
    #[inline(always)]
    pub(super) fn decode<'a>(
        &self,
        offset: u64,
        header: &record::Header,
        buf: &'a [u8],
    ) -> Result<Cow<'a, [u8]>> {
        let at = header.header_size + header.key_size;
        let stored = &buf[at..at + header.value_size];
        match &self.cipher {
            None => Ok(Cow::Borrowed(stored)),
            Some(cipher) => unseal(cipher, offset, &buf[header.header_size..at], stored),
        }
    }
}

// Out of line, so that the plain path of every read and write stays as
// small as it was before there was a codec.

#[inline(never)]
fn seal<'a>(cipher: &Cipher, key: &[u8], value: &[u8]) -> Result<Cow<'a, [u8]>> {
    cipher.seal(key, value).map(Cow::Owned)
}

#[inline(never)]
fn unseal<'a>(cipher: &Cipher, offset: u64, key: &[u8], stored: &[u8]) -> Result<Cow<'a, [u8]>> {
    match cipher.unseal(key, stored) {
        Some(value) => Ok(Cow::Owned(value)),
        None => Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "the record at offset {offset} is broken: its value fails authentication \
                 (changed, or moved from another key's record)"
            ),
        )),
    }
}
