//! The first 128 bytes of a hash database's file, in two halves with a
//! checksum each. The first half is written once, at creation; the second is
//! rewritten at every synchronization, so a write torn by a crash can damage
//! only the second half, and a second half that fails its checksum just means
//! "not closed cleanly": the restore needs only the first.
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | magic `KuraHDB\n` |
//! | 8 | format version: 1; 2 when byte 14 or 15 is set (a feature a version-1 reader would misread); 3 for an lz4, zlib or lzma file whose values may use a dictionary; 4 when byte 15 is 2 (keys sealed); 5 a tree's node store with epoch digests; 6 every file whose records' checksums cover their epochs |
//! | 9 | flags: 1 = appending updates |
//! | 10 | offset width |
//! | 11 | align_pow |
//! | 12 | kind: 0 = hash database, 1 = node store of a tree database |
//! | 13 | record checksum mode: 0 = reads do not verify records' checksums; 8, 16, 32 = every read does (files before it have 0) |
//! | 14 | record compression mode: 0 = none, 1 = zstd, 2 = lz4, 3 = zlib, 4 = lzma (files before it have 0) |
//! | 15 | cipher: 0 = values stored as given; 1 = sealed with XChaCha20-Poly1305 under an Argon2id key (see `cipher.rs`); 2 = so, and the records' keys sealed with AES-SIV (`key_cipher.rs`) |
//! | 16 | number of buckets (u64) |
//! | 24 | offset of the first record (u64) |
//! | 32 | with a cipher: the KDF's salt (16 bytes), memory as a power of two in KiB, passes and lanes (a byte each), 0, and the key-check value (8 bytes) |
//! | 60 | CRC-32 of bytes 0 to 59 |
//! | 64 | 1 while a writer has the file open; 0 after a clean close |
//! | 72 | record count (u64, exact after a clean close) |
//! | 80 | bytes of keys and values (u64, exact after a clean close) |
//! | 88 | epoch: hard synchronizations so far (u32) |
//! | 92 | the last epoch whose hard synchronization completed (u32) |
//! | 96 | offset of the compression dictionary's record (u64; 0 = none) |
//! | 104 | a tree of version 5 or 6: the digest of the epoch being synchronized, the xor of its records' hashes (u64) |
//! | 112 | a tree of version 5 or 6: that epoch (u32) |
//! | 116 | a tree of version 5 or 6: the number of its records (u32) |
//! | 120 | a tree of version 5 or 6: 1 when bytes 104 to 119 hold a digest |
//! | 124 | CRC-32 of bytes 64 to 123 |
//!
//! Integers are little-endian. A file whose values are encrypted has format
//! version 2, which readers before encryption refuse by name (they ignored
//! byte 15, and would have handed out ciphertext as values); every other
//! file keeps version 1. An lz4 or zlib file made since those modes have
//! dictionaries is version 3 (unless encrypted: an encrypted file keeps no
//! dictionary), which readers before it refuse by name: they would read its
//! values without the dictionary. A version-2 lz4 or zlib file reads as
//! before and stays without a dictionary until a rebuild makes it anew.
//! An lzma file (the mode came later) is version 3 unless encrypted, and
//! readers before the mode refuse its byte 14.
//! A tree's node store made since hard synchronizations take one device
//! sync is version 5, whatever its features: its header names the epoch
//! being synchronized with that epoch's digest (see `epoch_digest.rs`)
//! before the epoch is durable, and names it synchronized (byte 92) only
//! at the synchronization after. A reader before it, trusting byte 92
//! alone, could restore an epoch whose older versions were marked void
//! already, so it refuses the file by its version. Node stores of versions
//! 1 to 4 read and take writes as before, with two device syncs a hard
//! synchronization; a rebuild or restore writes them anew (as version 6,
//! below).
//! A hash database encrypted since keys are sealed is version 4 (cipher 2),
//! which readers before it refuse by name: they would compare a caller's
//! key with stored ciphertext and find nothing. Version-2 encrypted files
//! (keys in clear) read and take writes as before; a rebuild or restore
//! seals their keys (as version 6, below).
//! Every file made since records' checksums cover their epochs (see
//! `record::checksum`) is version 6, whatever its kind and features (a
//! tree's node store with epoch digests, an encrypted hash database with
//! sealed keys): a reader before it would find every record's checksum
//! wrong, so it refuses the file by its version. Files of versions 1 to 5
//! read and take writes as before, their checksums leaving out the epoch,
//! until a rebuild or restore writes them as version 7.
//! Every file made since the checksum of a record written void covers its
//! magic byte (`record::Coverage::EpochAndVoid`) is version 7, with the same
//! kinds and features as version 6: a reader before it would find the
//! checksum of every such record wrong and lose the removals they are.
//! Files of version 6 read and take writes as before, until a rebuild,
//! restore or growth writes them anew.

use super::cipher::Sealing;
use super::comp_mode::{DictionaryKind, RecordCompMode};
use super::crc_mode::RecordCrcMode;
use super::epoch_digest::Digest;
use super::record::Coverage;
use crate::error::{Error, ErrorKind, Result};

pub(crate) const SIZE: usize = 128;
const MAGIC: &[u8; 8] = b"KuraHDB\n";
const VERSION: u8 = 1;
/// The version of a file using a feature of bytes 14 or 15 (compression,
/// encryption): a reader of version 1 alone would hand out stored bytes as
/// values, so it must refuse the file, which it does by its version.
const VERSION_FEATURES: u8 = 2;
/// The version of an lz4, zlib or lzma file whose values may be compressed with
/// a preset dictionary: a reader of version 2 would misread them.
const VERSION_PRESETS: u8 = 3;
/// The version of a file whose keys are sealed (cipher 2): a reader of
/// version 3 would look keys up in clear among ciphertexts.
const VERSION_SEALED_KEYS: u8 = 4;
/// The version of a tree's node store whose header carries the digest of
/// the epoch being synchronized: a reader of version 4 would restore by
/// byte 92 alone, which may name an epoch whose older versions are gone.
const VERSION_EPOCH_DIGESTS: u8 = 5;
/// The version of a file whose records' checksums cover their epochs (see
/// `record::checksum`), whatever its kind and features: a reader of version
/// 5 would find every record's checksum wrong.
const VERSION_EPOCH_CHECKED: u8 = 6;
/// The version of a file whose void records' checksums, where written void,
/// cover their magic byte (see `record::Coverage`), with version 6's kinds
/// and features: a reader of version 6 would find those checksums wrong.
const VERSION_VOID_CHECKED: u8 = 7;
/// The reference implementation's hash files start with this.
const REFERENCE_MAGIC: &[u8] = b"TkrzwHDB";

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub appending: bool,
    pub width: u8,
    pub align_pow: u8,
    pub open_for_writing: bool,
    pub num_buckets: u64,
    pub count: u64,
    pub data_size: u64,
    pub epoch: u32,
    /// The last epoch whose hard synchronization completed: what a snapshot
    /// restore goes back to.
    pub synced_epoch: u32,
    pub kind: Kind,
    pub records_start: u64,
    pub record_crc: RecordCrcMode,
    pub record_comp: RecordCompMode,
    /// The offset of the compression dictionary's record; 0 if none.
    pub dict_offset: u64,
    /// How the values are encrypted, if they are.
    pub sealing: Option<Sealing>,
    /// Whether an lz4, zlib or lzma file's values may use a dictionary (version 3).
    pub presets: bool,
    /// Whether the header carries epoch digests (a tree's node store of
    /// version 5).
    pub digests: bool,
    /// The epoch being synchronized and its digest, where `digests`.
    pub pending: Option<(u32, Digest)>,
    /// What the records' checksums cover besides their bodies (versions 6
    /// and 7 tell).
    pub coverage: Coverage,
}

/// What a file of the hash format holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A hash database's records.
    Hash,
    /// The nodes of a tree database: only whole synchronized states are
    /// consistent, so a restore goes back to the last one.
    TreeNodes,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Hash => "a hash database",
            Kind::TreeNodes => "a tree database",
        }
    }
}

impl Header {
    /// Whether a file of `mode`, encrypted or not, is made as version 3: lz4,
    /// zlib and lzma files that may hold a dictionary.
    pub(crate) fn may_have_presets(mode: RecordCompMode, encrypted: bool) -> bool {
        matches!(mode.spec().dictionary, DictionaryKind::Preset { .. }) && !encrypted
    }

    /// The format version the header is written as (its byte 8): the one
    /// each feature it has needs, the newest of them.
    pub(crate) fn format_version(&self) -> u8 {
        let sealing = self.sealing.as_ref().map_or(0, |sealing| sealing.id());
        if self.coverage == Coverage::EpochAndVoid {
            VERSION_VOID_CHECKED
        } else if self.coverage == Coverage::Epoch {
            VERSION_EPOCH_CHECKED
        } else if self.digests {
            VERSION_EPOCH_DIGESTS
        } else if sealing == Sealing::ID_KEYS {
            VERSION_SEALED_KEYS
        } else if self.presets {
            VERSION_PRESETS
        } else if self.record_comp.byte() != 0 || sealing != 0 {
            VERSION_FEATURES
        } else {
            VERSION
        }
    }

    pub(crate) fn encode(&self) -> [u8; SIZE] {
        let mut b = [0u8; SIZE];
        b[..8].copy_from_slice(MAGIC);
        b[8] = VERSION;
        b[9] = u8::from(self.appending);
        b[10] = self.width;
        b[11] = self.align_pow;
        b[12] = match self.kind {
            Kind::Hash => 0,
            Kind::TreeNodes => 1,
        };
        b[13] = self.record_crc.bits();
        if let Some(sealing) = &self.sealing {
            b[15] = sealing.id();
            sealing.encode(&mut b[32..32 + Sealing::SIZE]);
        }
        b[14] = self.record_comp.byte();
        b[8] = self.format_version();
        b[16..24].copy_from_slice(&self.num_buckets.to_le_bytes());
        b[24..32].copy_from_slice(&self.records_start.to_le_bytes());
        let crc = crc32fast::hash(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        b[64..].copy_from_slice(&self.encode_state());
        b
    }

    /// The second half: what changes while the file is open.
    pub(crate) fn encode_state(&self) -> [u8; SIZE / 2] {
        let mut b = [0u8; SIZE / 2];
        b[0] = u8::from(self.open_for_writing);
        b[8..16].copy_from_slice(&self.count.to_le_bytes());
        b[16..24].copy_from_slice(&self.data_size.to_le_bytes());
        b[24..28].copy_from_slice(&self.epoch.to_le_bytes());
        b[28..32].copy_from_slice(&self.synced_epoch.to_le_bytes());
        b[32..40].copy_from_slice(&self.dict_offset.to_le_bytes());
        if let Some((epoch, digest)) = self.pending.filter(|_| self.digests) {
            b[40..48].copy_from_slice(&digest.xor.to_le_bytes());
            b[48..52].copy_from_slice(&epoch.to_le_bytes());
            b[52..56].copy_from_slice(&digest.count.to_le_bytes());
            b[56] = 1;
        }
        let crc = crc32fast::hash(&b[..60]);
        b[60..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a header, naming the file in errors. `file_size` is the
    /// file's: one shorter than its bucket array is refused here, before
    /// anything (a restore, a cursor) trusts the header's bucket count.
    pub(crate) fn decode(b: &[u8], file_size: u64, path: &std::path::Path) -> Result<Header> {
        let bad = |what: &str| {
            Error::new(
                ErrorKind::BrokenData,
                format!("{} is not a kuradb hash database: {what}", path.display()),
            )
        };
        if b.len() < SIZE {
            return Err(bad("the file is shorter than the header"));
        }
        if &b[..8] != MAGIC {
            if b.starts_with(REFERENCE_MAGIC) {
                return Err(bad(
                    "it is a hash database of the reference implementation (Tkrzw), which kuradb opens \
                     read-only by its header (`kura util list`, `get`, `export`; dbm=auto) and `kura util \
                     convert OLD NEW` turns into a kuradb database",
                ));
            }
            return Err(bad("bad magic"));
        }
        if ![
            VERSION,
            VERSION_FEATURES,
            VERSION_PRESETS,
            VERSION_SEALED_KEYS,
            VERSION_EPOCH_DIGESTS,
            VERSION_EPOCH_CHECKED,
            VERSION_VOID_CHECKED,
        ]
        .contains(&b[8])
        {
            return Err(bad(&format!(
                "format version {} is not supported (expected {VERSION} to {VERSION_VOID_CHECKED})",
                b[8]
            )));
        }
        let crc_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        if crc_at(60) != crc32fast::hash(&b[..60]) {
            return Err(bad("the header's checksum does not match"));
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        // A torn second half reads as a file not closed cleanly.
        let state_ok = crc_at(124) == crc32fast::hash(&b[64..124]);
        let kind = match b[12] {
            0 => Kind::Hash,
            1 => Kind::TreeNodes,
            other => return Err(bad(&format!("unknown kind {other}"))),
        };
        let record_crc = RecordCrcMode::from_bits(b[13])
            .ok_or_else(|| bad(&format!("unknown record checksum mode {}", b[13])))?;
        let record_comp = RecordCompMode::from_byte(b[14])
            .ok_or_else(|| bad(&format!("unknown record compression mode {}", b[14])))?;
        let sealing = match b[15] {
            0 => None,
            id @ (Sealing::ID | Sealing::ID_KEYS) => Some(
                Sealing::decode(&b[32..32 + Sealing::SIZE], id == Sealing::ID_KEYS)
                    .map_err(|why| bad(&why))?,
            ),
            other => return Err(bad(&format!("unknown cipher {other}"))),
        };
        // Version 2 says exactly that a feature of bytes 14 or 15 is on,
        // keys not sealed; version 3 that the file is lz4, zlib or lzma, and not
        // encrypted; version 4 that its keys are sealed.
        // Version 5 is a tree's node store with digests, and any features;
        // versions 6 and 7 any file with any features, a tree's with digests.
        let coverage = match b[8] {
            VERSION_VOID_CHECKED => Coverage::EpochAndVoid,
            VERSION_EPOCH_CHECKED => Coverage::Epoch,
            _ => Coverage::Body,
        };
        let epoch_checked = coverage != Coverage::Body;
        let digests = b[8] == VERSION_EPOCH_DIGESTS || (epoch_checked && kind == Kind::TreeNodes);
        let presets = b[8] == VERSION_PRESETS
            || ((digests || epoch_checked) && Header::may_have_presets(record_comp, sealing.is_some()));
        let keys_sealed = b[15] == Sealing::ID_KEYS;
        let mismatched = match b[8] {
            // Any features, but only of a tree's node store.
            VERSION_EPOCH_DIGESTS => kind != Kind::TreeNodes,
            // A hash database of this version seals its keys if encrypted.
            VERSION_EPOCH_CHECKED | VERSION_VOID_CHECKED => kind == Kind::Hash && b[15] == Sealing::ID,
            VERSION_PRESETS => !Header::may_have_presets(record_comp, sealing.is_some()),
            VERSION_SEALED_KEYS => !keys_sealed,
            // lzma came with dictionaries: unencrypted, it is version 3.
            version => {
                keys_sealed
                    || (version == VERSION_FEATURES) != (b[14] != 0 || b[15] != 0)
                    || (record_comp.spec().since_presets && sealing.is_none())
            }
        };
        if mismatched {
            return Err(bad(&format!(
                "format version {} with compression mode {} and cipher {}",
                b[8], b[14], b[15]
            )));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        let header = Header {
            appending: b[9] & 1 != 0,
            width: b[10],
            align_pow: b[11],
            open_for_writing: !state_ok || b[64] != 0,
            num_buckets: u64_at(16),
            count: if state_ok { u64_at(72) } else { 0 },
            data_size: if state_ok { u64_at(80) } else { 0 },
            epoch: if state_ok { u32_at(88) } else { 0 },
            // Unknown when torn: a snapshot restore then keeps every epoch.
            synced_epoch: if state_ok { u32_at(92) } else { u32::MAX },
            kind,
            records_start: u64_at(24),
            record_crc,
            record_comp,
            dict_offset: if state_ok { u64_at(96) } else { 0 },
            sealing,
            presets,
            digests,
            pending: (digests && state_ok && b[120] == 1)
                .then(|| (u32_at(112), Digest { xor: u64_at(104), count: u32_at(116) })),
            coverage,
        };
        if !(3..=8).contains(&header.width) || header.align_pow > 16 || header.num_buckets == 0 {
            return Err(bad("impossible tuning parameters"));
        }
        let table_end =
            (SIZE as u64).saturating_add(header.num_buckets.saturating_mul(u64::from(header.width)));
        if header.records_start < table_end {
            return Err(bad("the records overlap the bucket array"));
        }
        if !header.records_start.is_multiple_of(1u64 << header.align_pow) {
            return Err(bad(&format!(
                "the records start at offset {}, not a multiple of their alignment {}",
                header.records_start,
                1u64 << header.align_pow
            )));
        }
        if file_size < table_end {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!(
                    "{} is truncated: it has {file_size} bytes, shorter than its bucket array of {} \
                     buckets, which ends at offset {}",
                    path.display(),
                    header.num_buckets,
                    table_end
                ),
            ));
        }
        Ok(header)
    }
}

/// Whether `head`, a file's first bytes, begins a kuradb hash-format file,
/// and of which kind.
pub(crate) fn sniff(head: &[u8]) -> Option<Kind> {
    if head.len() <= 12 || &head[..8] != MAGIC {
        return None;
    }
    Some(if head[12] == 1 { Kind::TreeNodes } else { Kind::Hash })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            appending: false,
            width: 5,
            align_pow: 3,
            open_for_writing: false,
            num_buckets: 1021,
            count: 7,
            data_size: 99,
            epoch: 4,
            synced_epoch: 3,
            kind: Kind::TreeNodes,
            records_start: 5248,
            record_crc: RecordCrcMode::Crc16,
            record_comp: RecordCompMode::None,
            dict_offset: 0,
            sealing: None,
            presets: false,
            digests: false,
            pending: None,
            coverage: Coverage::Body,
        }
    }

    /// A file whose checksums cover the epochs is version 6 whatever its
    /// kind and features, a node store's digests included, and version 7
    /// where void records' checksums cover their magic too; a hash database
    /// of either with keys in clear is refused.
    #[test]
    fn a_file_with_epoch_checked_records_is_version_6_or_7() {
        let path = std::path::Path::new("x");
        let pending = Some((5, Digest { count: 3, xor: 0xDEAD_BEEF_0123 }));
        for (coverage, version) in [(Coverage::Epoch, 6), (Coverage::EpochAndVoid, 7)] {
            let tree = Header { coverage, digests: true, pending, ..sample() };
            let hash = Header { coverage, kind: Kind::Hash, ..sample() };
            let lz4 = Header { record_comp: RecordCompMode::Lz4, presets: true, ..hash.clone() };
            for h in [tree, hash, lz4] {
                let b = h.encode();
                assert_eq!(b[8], version);
                assert_eq!(Header::decode(&b, 1 << 20, path).unwrap(), h);
            }
            let sealing =
                Sealing { keys: false, salt: [7; 16], mem_log2: 14, passes: 2, lanes: 1, check: [9; 8] };
            let clear_keys = Header { coverage, kind: Kind::Hash, sealing: Some(sealing), ..sample() };
            let err = Header::decode(&clear_keys.encode(), 1 << 20, path).unwrap_err();
            let expected = format!("format version {version} with compression mode 0 and cipher 1");
            assert!(err.message().contains(&expected), "{err}");
            let tree = Header { kind: Kind::TreeNodes, digests: true, ..clear_keys };
            assert_eq!(Header::decode(&tree.encode(), 1 << 20, path).unwrap(), tree);
        }
        let older = Header { digests: true, pending, ..sample() }.encode();
        assert_eq!(Header::decode(&older, 1 << 20, path).unwrap().coverage, Coverage::Body);
    }

    /// A node store with epoch digests is version 5 whatever its features,
    /// and its pending epoch comes back; a hash database of version 5 is
    /// refused, and an older version's bytes 104 to 120 mean nothing.
    #[test]
    fn a_node_store_with_epoch_digests_is_version_5() {
        let path = std::path::Path::new("x");
        let pending = Some((5, Digest { count: 3, xor: 0xDEAD_BEEF_0123 }));
        for comp in [RecordCompMode::None, RecordCompMode::Lz4] {
            let presets = Header::may_have_presets(comp, false);
            let h = Header { digests: true, pending, record_comp: comp, presets, ..sample() };
            let b = h.encode();
            assert_eq!(b[8], VERSION_EPOCH_DIGESTS);
            assert_eq!(Header::decode(&b, 1 << 20, path).unwrap(), h);
        }
        let mut b = Header { digests: true, pending, kind: Kind::Hash, ..sample() }.encode();
        assert!(Header::decode(&b, 1 << 20, path).is_err());
        b[12] = 1; // a node store after all, once its checksum agrees
        let crc = crc32fast::hash(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        assert!(Header::decode(&b, 1 << 20, path).unwrap().digests);
        let old = Header { pending, ..sample() }.encode();
        let read = Header::decode(&old, 1 << 20, path).unwrap();
        assert_eq!((read.digests, read.pending), (false, None));
    }

    /// Lz4 and zlib files that may hold a dictionary are version 3, which
    /// says so; version 3 with another mode, or version 2 claiming it, is
    /// refused.
    #[test]
    fn a_header_with_presets_is_version_3() {
        let path = std::path::Path::new("x");
        let h = Header { record_comp: RecordCompMode::Lz4, presets: true, ..sample() };
        let b = h.encode();
        assert_eq!(b[8], 3);
        assert_eq!(Header::decode(&b, 1 << 20, path).unwrap(), h);
        let h = Header { record_comp: RecordCompMode::Zlib, ..sample() };
        let b = h.encode();
        assert_eq!(b[8], 2);
        assert!(!Header::decode(&b, 1 << 20, path).unwrap().presets);
        for mode in [RecordCompMode::None, RecordCompMode::Zstd] {
            let mut b = Header { record_comp: mode, presets: true, ..sample() }.encode();
            assert_eq!(b[8], 3);
            let crc = crc32fast::hash(&b[..60]);
            b[60..64].copy_from_slice(&crc.to_le_bytes());
            let err = Header::decode(&b, 1 << 20, path).unwrap_err();
            assert!(err.to_string().contains("format version 3"), "{err}");
        }
    }

    #[test]
    fn headers_round_trip() {
        for record_crc in RecordCrcMode::ALL {
            let h = Header { record_crc, ..sample() };
            assert_eq!(Header::decode(&h.encode(), 1 << 20, std::path::Path::new("x")).unwrap(), h);
        }
    }

    /// The mode is byte 13, which files written before it hold as 0: they
    /// read as mode none, as they were written.
    #[test]
    fn the_record_checksum_mode_is_byte_13_and_zero_means_none() {
        let b = Header { record_crc: RecordCrcMode::Crc32, ..sample() }.encode();
        assert_eq!(b[13], 32);
        let b = Header { record_crc: RecordCrcMode::None, ..sample() }.encode();
        assert_eq!(b[13], 0);
        let mut b = sample().encode();
        b[13] = 12;
        let crc = crc32fast::hash(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        let err = Header::decode(&b, 1 << 20, std::path::Path::new("casket.kh")).unwrap_err();
        assert!(err.to_string().contains("casket.kh") && err.to_string().contains("mode 12"), "{err}");
    }

    /// An encrypted file is format version 2 with its cipher in byte 15 and
    /// its KDF's salt, cost and key check in bytes 32 to 59; a plain one
    /// stays version 1; an unknown cipher is an error naming it.
    #[test]
    fn a_sealed_header_is_version_2_and_an_unknown_cipher_is_refused() {
        let sealing =
            Sealing { keys: false, salt: [7; 16], mem_log2: 14, passes: 2, lanes: 1, check: [9; 8] };
        let h = Header { sealing: Some(sealing), ..sample() };
        let b = h.encode();
        assert_eq!((b[8], b[15], &b[32..48], &b[52..60]), (2, 1, &[7u8; 16][..], &[9u8; 8][..]));
        assert_eq!(Header::decode(&b, 1 << 20, std::path::Path::new("x")).unwrap(), h);
        assert_eq!(sample().encode()[8], 1);
        let mut b = h.encode();
        b[15] = 9;
        let crc = crc32fast::hash(&b[..60]);
        b[60..64].copy_from_slice(&crc.to_le_bytes());
        let err = Header::decode(&b, 1 << 20, std::path::Path::new("casket.kh")).unwrap_err();
        assert!(err.to_string().contains("unknown cipher 9"), "{err}");
    }

    /// A file whose keys are sealed is version 4 with cipher 2, and
    /// nothing else is; a reader of version 3 refuses it by its version.
    #[test]
    fn sealed_keys_are_cipher_2_of_version_4_and_nothing_else_is() {
        let path = std::path::Path::new("casket.kh");
        let sealing = Sealing { keys: true, salt: [7; 16], mem_log2: 14, passes: 2, lanes: 1, check: [9; 8] };
        let h = Header { sealing: Some(sealing), kind: Kind::Hash, ..sample() };
        let b = h.encode();
        assert_eq!((b[8], b[15]), (4, 2));
        assert_eq!(Header::decode(&b, 1 << 20, path).unwrap(), h);
        let with_comp = Header { record_comp: RecordCompMode::Lz4, ..h.clone() };
        assert_eq!(with_comp.encode()[8], 4);
        let resealed = |mut b: [u8; SIZE], at: usize, value: u8| {
            b[at] = value;
            let crc = crc32fast::hash(&b[..60]);
            b[60..64].copy_from_slice(&crc.to_le_bytes());
            Header::decode(&b, 1 << 20, path)
        };
        // Version 2 or 3 claiming sealed keys, version 4 claiming none.
        for version in [1, 2, 3] {
            let err = resealed(b, 8, version).unwrap_err();
            assert!(err.to_string().contains(&format!("format version {version}")), "{err}");
        }
        let err = resealed(b, 15, 1).unwrap_err();
        assert!(err.to_string().contains("format version 4 with compression mode 0 and cipher 1"), "{err}");
        let err = resealed(b, 8, 8).unwrap_err();
        assert!(err.to_string().contains("format version 8 is not supported (expected 1 to 7)"), "{err}");
    }

    /// A torn second half makes the file read as not closed cleanly, which a
    /// restore repairs; a damaged first half is an error naming the file.
    #[test]
    fn a_torn_state_half_means_restore_and_a_torn_first_half_an_error() {
        let mut b = sample().encode();
        b[75] ^= 0xff;
        let h = Header::decode(&b, 1 << 20, std::path::Path::new("x")).unwrap();
        assert!(h.open_for_writing);
        assert_eq!((h.num_buckets, h.records_start, h.width), (1021, 5248, 5));
        let mut b = sample().encode();
        b[17] ^= 1;
        let err = Header::decode(&b, 1 << 20, std::path::Path::new("casket.kh")).unwrap_err();
        assert!(err.to_string().contains("casket.kh") && err.to_string().contains("checksum"), "{err}");
    }
}
