//! Authenticated encryption of the values of a hash-format file (a hash
//! database's values, a tree database's pages): the `cipher` half of the
//! value codec (`value.rs`). See docs/encryption.md for the whole design.
//!
//! - Cipher: XChaCha20-Poly1305. Its 192-bit nonces may be drawn at random
//!   for every write with no bound worth counting on the writes one key
//!   makes (a 96-bit random nonce, as AES-GCM takes, should not exceed about
//!   2^32 writes a key, which a busy database could reach in its life), and
//!   it runs at the same speed in constant time on every machine, with or
//!   without AES instructions.
//! - Key: Argon2id of the caller's `cipher_key` (a passphrase of any length)
//!   with a random 16-byte salt kept in the header; the file's KDF cost is
//!   kept beside it, so a later version may raise the default and still open
//!   older files. The 64 bytes derived are the cipher's key (32) and a
//!   key-check value (the next 8 of them, kept in the header), which tells a
//!   wrong key at open and reveals nothing of the cipher's key.
//! - A stored value is nonce (24 bytes), ciphertext, tag (16 bytes); the
//!   associated data is the record's key, so a value moved to another key
//!   fails authentication. The offset is not bound: it changes whenever a
//!   record moves (a rebuild, a restore, an update that does not fit).
//! - Keys (a hash database's, in files of format version 4): sealed
//!   deterministically by `key_cipher.rs`, under a key derived apart. A
//!   value is then bound to its record's stored key, the key's ciphertext,
//!   which stands for exactly one key as the key itself did.

use std::fmt;
use std::sync::Arc;

#[cfg(feature = "cipher")]
use argon2::{Algorithm, Argon2, Params as KdfParams, Version};
#[cfg(feature = "cipher")]
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
#[cfg(feature = "cipher")]
use chacha20poly1305::{Tag, XChaCha20Poly1305, XNonce};
#[cfg(feature = "cipher")]
use rand::RngCore;

#[cfg(feature = "cipher")]
use super::key_cipher::KeyCipher;
#[cfg(feature = "cipher")]
use crate::error::ErrorKind;
use crate::error::{Error, Result};

/// The bytes of a nonce.
#[cfg(feature = "cipher")]
const NONCE: usize = 24;
/// The bytes of an authentication tag.
#[cfg(feature = "cipher")]
const TAG: usize = 16;
/// The bytes encryption adds to a value.
#[cfg(feature = "cipher")]
pub(crate) const OVERHEAD: usize = NONCE + TAG;

/// A database's passphrase or key, of any length: the key that encrypts its
/// values is derived from it. Its `Debug` form shows no byte of it, so
/// options holding it may be logged.
///
/// ```
/// use kuradb::dbm::hash::CipherKey;
/// let key = CipherKey::from("correct horse battery staple");
/// assert_eq!(format!("{key:?}"), "CipherKey(..)");
/// assert!(CipherKey::from("").is_empty());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct CipherKey(Arc<[u8]>);

impl CipherKey {
    /// The key of these bytes.
    pub fn new(bytes: impl AsRef<[u8]>) -> CipherKey {
        CipherKey(Arc::from(bytes.as_ref()))
    }

    /// Whether it has no byte: an empty key means no encryption.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for CipherKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CipherKey(..)")
    }
}

impl From<&str> for CipherKey {
    fn from(key: &str) -> CipherKey {
        CipherKey::new(key)
    }
}

impl From<String> for CipherKey {
    fn from(key: String) -> CipherKey {
        CipherKey::new(key)
    }
}

impl From<&[u8]> for CipherKey {
    fn from(key: &[u8]) -> CipherKey {
        CipherKey::new(key)
    }
}

impl From<Vec<u8>> for CipherKey {
    fn from(key: Vec<u8>) -> CipherKey {
        CipherKey::new(key)
    }
}

/// What a file's header keeps of its encryption (bytes 32 to 59; byte 15
/// holds [`Sealing::ID`] or [`Sealing::ID_KEYS`]): the KDF's salt and cost,
/// the key-check value, and whether the keys are sealed too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sealing {
    /// Whether the records' keys are sealed too (`key_cipher.rs`).
    pub keys: bool,
    pub salt: [u8; 16],
    /// Argon2id's memory, 2^mem_log2 KiB.
    pub mem_log2: u8,
    /// Argon2id's passes over the memory.
    pub passes: u8,
    /// Argon2id's lanes.
    pub lanes: u8,
    pub check: [u8; 8],
}

impl Sealing {
    /// Byte 15 of a header whose values are sealed with XChaCha20-Poly1305
    /// under an Argon2id key (0: not encrypted).
    pub(crate) const ID: u8 = 1;
    /// Byte 15 of a header whose values are sealed so and whose keys are
    /// sealed with AES-SIV (format version 4).
    pub(crate) const ID_KEYS: u8 = 2;
    /// The bytes of the header it takes.
    pub(crate) const SIZE: usize = 28;
    /// The name `inspect` shows.
    pub(crate) const NAME: &'static str = "xchacha20-poly1305";
    /// The name `inspect` shows of the keys' cipher.
    pub(crate) const KEYS_NAME: &'static str = "aes-256-siv";

    /// Byte 15 of the header.
    pub(crate) fn id(&self) -> u8 {
        if self.keys {
            Sealing::ID_KEYS
        } else {
            Sealing::ID
        }
    }

    /// Writes it into `b`, the header's bytes 32 to 59.
    pub(crate) fn encode(&self, b: &mut [u8]) {
        b[..16].copy_from_slice(&self.salt);
        b[16] = self.mem_log2;
        b[17] = self.passes;
        b[18] = self.lanes;
        b[19] = 0;
        b[20..28].copy_from_slice(&self.check);
    }

    /// Reads it from `b`, the header's bytes 32 to 59, of a file whose keys
    /// are sealed if `keys` says so; an error says what is wrong.
    pub(crate) fn decode(b: &[u8], keys: bool) -> std::result::Result<Sealing, String> {
        let mut sealing =
            Sealing { keys, salt: [0; 16], mem_log2: b[16], passes: b[17], lanes: b[18], check: [0; 8] };
        sealing.salt.copy_from_slice(&b[..16]);
        sealing.check.copy_from_slice(&b[20..28]);
        // Bounded, so that a damaged or hostile header cannot make an open
        // take gigabytes or minutes.
        if !(3..=20).contains(&sealing.mem_log2)
            || !(1..=16).contains(&sealing.passes)
            || !(1..=16).contains(&sealing.lanes)
        {
            return Err(format!(
                "impossible key derivation parameters (memory 2^{} KiB, {} passes, {} lanes)",
                sealing.mem_log2, sealing.passes, sealing.lanes
            ));
        }
        Ok(sealing)
    }
}

/// The sealing of a file's values: the cipher under the key derived from the
/// caller's, and that key, for the new file a rebuild writes.
#[cfg(feature = "cipher")]
pub(crate) struct Cipher {
    aead: XChaCha20Poly1305,
    /// Seals the records' keys, in a file whose header says so.
    keys: Option<KeyCipher>,
    key: CipherKey,
    sealing: Sealing,
}

/// Argon2id's cost for a new file: 16 MiB and 2 passes, about the OWASP
/// minimum (19 MiB, 2 passes), which takes some 20 ms here: an open is a
/// little slower, a guess at a passphrase as slow.
#[cfg(feature = "cipher")]
const MEM_LOG2: u8 = 14;
#[cfg(feature = "cipher")]
const PASSES: u8 = 2;
#[cfg(feature = "cipher")]
const LANES: u8 = 1;

#[cfg(feature = "cipher")]
impl Cipher {
    /// The cipher of a new file under `key`, with a fresh salt, sealing the
    /// records' keys too if `keys` says so.
    pub(crate) fn create(key: &CipherKey, keys: bool) -> Result<Cipher> {
        let mut salt = [0u8; 16];
        rand::rngs::OsRng.fill_bytes(&mut salt);
        let mut sealing =
            Sealing { keys, salt, mem_log2: MEM_LOG2, passes: PASSES, lanes: LANES, check: [0; 8] };
        let (aead, check, keys) = derive(key, &sealing)?;
        sealing.check = check;
        Ok(Cipher { aead, keys, key: key.clone(), sealing })
    }

    /// The cipher of the file at `path`, whose header holds `sealing`, under
    /// `key`: an error if the key is not the file's.
    pub(crate) fn open(key: &CipherKey, sealing: &Sealing, path: &std::path::Path) -> Result<Cipher> {
        let (aead, check, keys) = derive(key, sealing)?;
        if check != sealing.check {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "wrong cipher_key for {}: it is not the key the file was encrypted with",
                    path.display()
                ),
            ));
        }
        Ok(Cipher { aead, keys, key: key.clone(), sealing: *sealing })
    }

    /// The cipher of the records' keys, if they are sealed.
    pub(crate) fn keys(&self) -> Option<&KeyCipher> {
        self.keys.as_ref()
    }

    /// The key it was made from.
    pub(crate) fn key(&self) -> &CipherKey {
        &self.key
    }

    /// What the header keeps of it.
    pub(crate) fn sealing(&self) -> &Sealing {
        &self.sealing
    }

    /// `value` encrypted under a fresh nonce and bound to `key`.
    pub(crate) fn seal(&self, key: &[u8], value: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(OVERHEAD + value.len());
        let mut nonce = [0u8; NONCE];
        rand::thread_rng().fill_bytes(&mut nonce);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(value);
        let tag = self
            .aead
            .encrypt_in_place_detached(XNonce::from_slice(&nonce), key, &mut out[NONCE..])
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "a value too large to encrypt"))?;
        out.extend_from_slice(&tag);
        Ok(out)
    }

    /// The value `stored` holds, if it was sealed by this cipher for `key`
    /// and is unchanged.
    pub(crate) fn unseal(&self, key: &[u8], stored: &[u8]) -> Option<Vec<u8>> {
        if stored.len() < OVERHEAD {
            return None;
        }
        let (nonce, rest) = stored.split_at(NONCE);
        let (sealed, tag) = rest.split_at(rest.len() - TAG);
        let mut out = sealed.to_vec();
        self.aead
            .decrypt_in_place_detached(XNonce::from_slice(nonce), key, &mut out, Tag::from_slice(tag))
            .ok()?;
        Some(out)
    }
}

/// The values' cipher, the key-check value and (if `sealing` says the keys
/// are sealed) the keys' cipher that `key` derives under `sealing`'s salt and cost.
#[cfg(feature = "cipher")]
fn derive(key: &CipherKey, sealing: &Sealing) -> Result<(XChaCha20Poly1305, [u8; 8], Option<KeyCipher>)> {
    let failed = |e: argon2::Error| {
        Error::new(ErrorKind::InvalidArgument, format!("the cipher key's derivation failed: {e}"))
    };
    let params =
        KdfParams::new(1 << sealing.mem_log2, u32::from(sealing.passes), u32::from(sealing.lanes), Some(64))
            .map_err(failed)?;
    let mut derived = [0u8; 64];
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_into(key.as_bytes(), &sealing.salt, &mut derived)
        .map_err(failed)?;
    let aead = XChaCha20Poly1305::new_from_slice(&derived[..32]).map_err(|_| {
        Error::new(ErrorKind::InvalidArgument, "the derived key has the wrong length".to_string())
    })?;
    let mut check = [0u8; 8];
    check.copy_from_slice(&derived[32..40]);
    let keys = sealing.keys.then(|| KeyCipher::derive(&derived));
    derived.fill(0);
    Ok((aead, check, keys))
}

/// A build without the `cipher` feature has no cipher: no value of it is
/// ever sealed, and making one is an error naming the feature. The type has
/// no values, so its methods cannot be called.
#[cfg(not(feature = "cipher"))]
pub(crate) enum Cipher {}

#[cfg(not(feature = "cipher"))]
impl Cipher {
    /// An error: encryption needs the `cipher` feature.
    pub(crate) fn create(_key: &CipherKey, _keys: bool) -> Result<Cipher> {
        Err(Error::needs_feature("encryption (cipher_key)", "cipher"))
    }

    /// An error naming the file, which this build cannot decrypt.
    pub(crate) fn open(_key: &CipherKey, _sealing: &Sealing, path: &std::path::Path) -> Result<Cipher> {
        Err(Error::needs_feature(format!("{} is encrypted, which", path.display()), "cipher"))
    }

    pub(crate) fn keys(&self) -> Option<&KeyCipher> {
        match *self {}
    }

    pub(crate) fn key(&self) -> &CipherKey {
        match *self {}
    }

    pub(crate) fn sealing(&self) -> &Sealing {
        match *self {}
    }

    pub(crate) fn seal(&self, _key: &[u8], _value: &[u8]) -> Result<Vec<u8>> {
        match *self {}
    }

    pub(crate) fn unseal(&self, _key: &[u8], _stored: &[u8]) -> Option<Vec<u8>> {
        match *self {}
    }
}

/// The keys' cipher of a build without the `cipher` feature: none exists.
#[cfg(not(feature = "cipher"))]
pub(crate) enum KeyCipher {}

#[cfg(not(feature = "cipher"))]
impl KeyCipher {
    pub(crate) fn seal(&self, _key: &[u8]) -> Result<Vec<u8>> {
        match *self {}
    }

    pub(crate) fn open(&self, _stored: &[u8]) -> Option<Vec<u8>> {
        match *self {}
    }
}

#[cfg(all(test, feature = "cipher"))]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_for_its_key_and_unchanged() {
        let cipher = Cipher::create(&CipherKey::from("passphrase"), false).unwrap();
        let sealed = cipher.seal(b"japan", b"tokyo").unwrap();
        assert_eq!(sealed.len(), 5 + OVERHEAD);
        assert!(!sealed.windows(5).any(|w| w == b"tokyo"));
        assert_eq!(cipher.unseal(b"japan", &sealed).as_deref(), Some(&b"tokyo"[..]));
        assert_eq!(cipher.unseal(b"china", &sealed), None);
        for i in 0..sealed.len() {
            let mut tampered = sealed.clone();
            tampered[i] ^= 0x10;
            assert_eq!(cipher.unseal(b"japan", &tampered), None, "byte {i}");
        }
        assert_eq!(cipher.unseal(b"japan", &sealed[..OVERHEAD - 1]), None);
        // A fresh nonce each time: the same value never seals the same way.
        assert_ne!(cipher.seal(b"japan", b"tokyo").unwrap(), sealed);
    }

    #[test]
    fn the_key_check_tells_the_right_key_from_a_wrong_one() {
        let cipher = Cipher::create(&CipherKey::from("right"), true).unwrap();
        let mut header = [0u8; Sealing::SIZE];
        cipher.sealing().encode(&mut header);
        let sealing = Sealing::decode(&header, true).unwrap();
        assert_eq!(&sealing, cipher.sealing());
        let path = std::path::Path::new("casket.kh");
        let reopened = Cipher::open(&CipherKey::from("right"), &sealing, path).unwrap();
        let sealed = cipher.seal(b"k", b"v").unwrap();
        assert_eq!(reopened.unseal(b"k", &sealed).as_deref(), Some(&b"v"[..]));
        // The keys' cipher is derived anew, the same: a key seals as before.
        let seal = |c: &Cipher| c.keys().expect("keys sealed").seal(b"k").unwrap();
        assert_eq!(seal(&reopened), seal(&cipher));
        assert!(Cipher::create(&CipherKey::from("right"), false).unwrap().keys().is_none());
        let err = Cipher::open(&CipherKey::from("wrong"), &sealing, path).err().unwrap();
        assert!(err.to_string().contains("wrong cipher_key for casket.kh"), "{err}");
        assert!(!err.to_string().contains("right"), "{err}");
    }

    #[test]
    fn impossible_kdf_costs_are_refused() {
        let cipher = Cipher::create(&CipherKey::from("k"), false).unwrap();
        let mut header = [0u8; Sealing::SIZE];
        cipher.sealing().encode(&mut header);
        for (at, value) in [(16, 30u8), (16, 0), (17, 0), (18, 0), (18, 200)] {
            let mut bad = header;
            bad[at] = value;
            assert!(Sealing::decode(&bad, false).is_err(), "byte {at} = {value}");
        }
    }
}
