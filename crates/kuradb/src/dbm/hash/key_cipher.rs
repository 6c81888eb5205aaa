//! Deterministic authenticated encryption of a hash database's keys: the
//! key half of the cipher (`cipher.rs`; docs/encryption.md).
//!
//! A lookup must find a record by its key without reading every record, so
//! a key must encrypt to the same bytes every time: AES-SIV (RFC 5297,
//! AES-256-CMAC-SIV), a deterministic AEAD whose synthetic IV is also its
//! tag. The stored key is the 16-byte tag followed by the ciphertext; a
//! lookup encrypts the probe once and compares stored bytes, and the bucket
//! is the hash of the stored bytes, so the bucket array and chains tell
//! nothing of a key but which records share one. Equal keys encrypting
//! equally is what a hash index needs and all it reveals.
//!
//! Its 64-byte key is HKDF-SHA256 of the file's Argon2id output with a
//! label of its own, so it shares no bytes with the values' cipher key.

use aes_siv::siv::Aes256Siv;
use aes_siv::KeyInit;
use hkdf::Hkdf;
use sha2::Sha256;

use super::record::MAX_ITEM;
use crate::error::{Error, ErrorKind, Result};

/// The bytes encryption adds to a key: the SIV tag.
pub(crate) const KEY_OVERHEAD: usize = 16;

/// The longest key an encrypted hash database stores: a record's key field
/// holds at most [`MAX_ITEM`] bytes, the tag included.
pub(crate) const MAX_SEALED_KEY: u64 = MAX_ITEM - KEY_OVERHEAD as u64;

/// HKDF's info for the keys' cipher: what sets its key apart from every
/// other key derived from the same passphrase.
const LABEL: &[u8] = b"kuradb hash-format record keys: AES-256-CMAC-SIV";

/// The sealing of a file's record keys.
pub(crate) struct KeyCipher {
    /// AES-SIV's key (MAC half, then CTR half). `Aes256Siv` takes `&mut self`
    /// and is not `Clone`, so one is made per call from these bytes: two AES
    /// key schedules, small beside the work on the key.
    key: [u8; 64],
}

impl KeyCipher {
    /// The keys' cipher of a file whose Argon2id output is `derived`.
    pub(crate) fn derive(derived: &[u8]) -> KeyCipher {
        let mut key = [0u8; 64];
        // 64 bytes is far below HKDF-SHA256's limit of 255 blocks.
        let expanded = Hkdf::<Sha256>::new(None, derived).expand(LABEL, &mut key);
        debug_assert!(expanded.is_ok());
        KeyCipher { key }
    }

    /// `key` encrypted: the same bytes every time, [`KEY_OVERHEAD`] longer.
    /// A key too long for a record once encrypted is an error naming the limit.
    pub(crate) fn seal(&self, key: &[u8]) -> Result<Vec<u8>> {
        check_size(key.len() as u64)?;
        Aes256Siv::new((&self.key).into())
            .encrypt::<[&[u8]; 0], &[u8]>([], key)
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "a key too large to encrypt"))
    }

    /// The key `stored` holds, if this cipher sealed it and it is unchanged.
    pub(crate) fn open(&self, stored: &[u8]) -> Option<Vec<u8>> {
        if stored.len() < KEY_OVERHEAD {
            return None;
        }
        Aes256Siv::new((&self.key).into()).decrypt::<[&[u8]; 0], &[u8]>([], stored).ok()
    }
}

impl Drop for KeyCipher {
    fn drop(&mut self) {
        self.key.fill(0);
    }
}

/// An error unless a key of `len` bytes fits a record once encrypted.
fn check_size(len: u64) -> Result<()> {
    if len <= MAX_SEALED_KEY {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "a key of {len} bytes is too large for an encrypted hash database: at most {MAX_SEALED_KEY} \
             bytes (4 GiB less the {KEY_OVERHEAD} bytes its encryption adds)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_seals_the_same_way_every_time_and_opens_only_unchanged() {
        let cipher = KeyCipher::derive(&[7u8; 64]);
        let sealed = cipher.seal(b"secret-key").unwrap();
        assert_eq!(sealed.len(), 10 + KEY_OVERHEAD);
        assert_eq!(cipher.seal(b"secret-key").unwrap(), sealed);
        assert_ne!(cipher.seal(b"secret-kez").unwrap(), sealed);
        assert!(!sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(cipher.open(&sealed).as_deref(), Some(&b"secret-key"[..]));
        for i in 0..sealed.len() {
            let mut tampered = sealed.clone();
            tampered[i] ^= 0x04;
            assert_eq!(cipher.open(&tampered), None, "byte {i}");
        }
        assert_eq!(cipher.open(&sealed[..KEY_OVERHEAD - 1]), None);
        // The empty key is a key too.
        let empty = cipher.seal(b"").unwrap();
        assert_eq!(cipher.open(&empty).as_deref(), Some(&b""[..]));
        // Another file's derived bytes make another cipher.
        assert_eq!(KeyCipher::derive(&[8u8; 64]).open(&sealed), None);
    }

    #[test]
    fn a_key_too_large_once_sealed_is_an_error_naming_the_limit() {
        assert!(check_size(MAX_SEALED_KEY).is_ok());
        let err = check_size(MAX_SEALED_KEY + 1).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(&format!("at most {MAX_SEALED_KEY} bytes")), "{err}");
    }
}
