//! The bytes of a message-queue file, as the reference lays them out.
//!
//! A file starts with 32 bytes of metadata: the magic `TkrzwMQX\n`, a
//! "cyclic" byte at 9, the file id (6 bytes, big-endian) at 10, the latest
//! timestamp in the file (6 bytes) at 16, the file's size (6 bytes) at 22,
//! zeros, and the cyclic byte again at 31. The writer rewrites the metadata
//! on every synchronization with a new cyclic value (1 to 255), so a reader
//! that finds the two cyclic bytes different saw a torn rewrite.
//!
//! Each message is then a record: `ff`, the timestamp in milliseconds
//! (6 bytes, big-endian), the message's size (4 bytes), the message, and a
//! checksum byte: the sum of every earlier byte of the record modulo 251,
//! plus one.

use crate::error::{Error, ErrorKind, Result};

/// The size of the metadata at the start of a file.
pub(crate) const META_SIZE: u64 = 32;
const MAGIC: &[u8; 9] = b"TkrzwMQX\n";
/// The size of a record's fixed part before the message.
pub(crate) const RECORD_HEADER: usize = 11;
const RECORD_MAGIC: u8 = 0xff;
/// Timestamps must fit in 6 bytes, and the reference keeps the top one aside.
pub(crate) const MAX_TIMESTAMP: u64 = (1 << 48) - 2;

/// What a file's metadata says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// The file's number, the ten digits of its name.
    pub file_id: u64,
    /// The latest timestamp written before the metadata was last saved.
    pub timestamp: u64,
    /// The file's size when the metadata was last saved.
    pub file_size: u64,
    /// Whether the two cyclic bytes agree (false: torn while rewritten).
    pub consistent: bool,
}

/// The metadata bytes for a file.
pub(crate) fn encode_meta(cyclic: u8, file_id: u64, timestamp: u64, file_size: u64) -> [u8; 32] {
    let mut meta = [0u8; 32];
    meta[..9].copy_from_slice(MAGIC);
    meta[9] = cyclic;
    meta[10..16].copy_from_slice(&file_id.to_be_bytes()[2..]);
    meta[16..22].copy_from_slice(&timestamp.to_be_bytes()[2..]);
    meta[22..28].copy_from_slice(&file_size.to_be_bytes()[2..]);
    meta[31] = cyclic;
    meta
}

/// Parses metadata; `what` names the file in the error of a wrong magic.
pub(crate) fn decode_meta(meta: &[u8], what: &dyn std::fmt::Display) -> Result<FileMeta> {
    if meta.len() < META_SIZE as usize || &meta[..9] != MAGIC {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!("{what} is not a message queue file: its first bytes are not TkrzwMQX"),
        ));
    }
    Ok(FileMeta {
        file_id: be48(&meta[10..16]),
        timestamp: be48(&meta[16..22]),
        file_size: be48(&meta[22..28]),
        consistent: meta[9] == meta[31],
    })
}

fn be48(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |n, &b| (n << 8) | u64::from(b))
}

/// The checksum byte of a record whose earlier bytes are `parts`.
fn checksum(parts: &[&[u8]]) -> u8 {
    // A u64 cannot overflow on a record under 4 GiB: one division at the end.
    let sum: u64 = parts.iter().map(|p| p.iter().map(|&b| u64::from(b)).sum::<u64>()).sum();
    (sum % 251 + 1) as u8
}

/// Appends the record of `message` written at `timestamp` to `out`.
#[cfg(test)]
pub(crate) fn encode_record(out: &mut Vec<u8>, timestamp: u64, message: &[u8]) {
    let mut record = record_buffer(message.len());
    record.extend_from_slice(message);
    finish_record(&mut record, timestamp);
    out.extend_from_slice(&record);
}

/// An empty record with room for a message of `capacity` bytes: the fixed
/// part as zeros, which [`finish_record`] fills once the message follows it.
pub(crate) fn record_buffer(capacity: usize) -> Vec<u8> {
    let mut record = Vec::with_capacity(RECORD_HEADER + capacity + 1);
    record.resize(RECORD_HEADER, 0);
    record
}

/// Makes `record` (a [`record_buffer`] with the message after its fixed
/// part) whole: the magic, `timestamp`, the message's size and the checksum.
/// The message must be under 4 GiB.
pub(crate) fn finish_record(record: &mut Vec<u8>, timestamp: u64) {
    let size = (record.len() - RECORD_HEADER) as u32;
    record[0] = RECORD_MAGIC;
    record[1..7].copy_from_slice(&timestamp.to_be_bytes()[2..]);
    record[7..RECORD_HEADER].copy_from_slice(&size.to_be_bytes());
    let sum = checksum(&[record]);
    record.push(sum);
}

/// A record's fixed part, read before its message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// A record of `size` message bytes written at `timestamp`.
    Record { timestamp: u64, size: u32 },
    /// Zeros: the end of what was written.
    Zero,
    /// Something else: the file is damaged here.
    Broken,
}

/// Parses a record's fixed part.
pub(crate) fn decode_head(head: &[u8; RECORD_HEADER]) -> Head {
    if head[0] != RECORD_MAGIC {
        return if head.iter().all(|&b| b == 0) { Head::Zero } else { Head::Broken };
    }
    let size = u32::from_be_bytes([head[7], head[8], head[9], head[10]]);
    if size == u32::MAX {
        return Head::Broken;
    }
    Head::Record { timestamp: be48(&head[1..7]), size }
}

/// Whether the checksum byte that follows the record `head` + `message` is right.
pub(crate) fn checksum_holds(head: &[u8; RECORD_HEADER], message: &[u8], sum: u8) -> bool {
    checksum(&[head, message]) == sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_metadata_match_the_reference_bytes() {
        // A file `tkrzw_ulog_util writeset --server_id 3 --dbm_index 5 P key1 value1` wrote.
        let meta = encode_meta(4, 0, 0x01a2_0e26_5629, 94);
        assert_eq!(&meta[..], b"TkrzwMQX\n\x04\0\0\0\0\0\0\x01\xa2\x0e\x26\x56\x29\0\0\0\0\0\x5e\0\0\0\x04");
        let parsed = decode_meta(&meta, &"f").unwrap();
        assert_eq!((parsed.file_id, parsed.timestamp, parsed.file_size), (0, 0x01a2_0e26_5629, 94));
        assert!(parsed.consistent);
        let mut out = Vec::new();
        encode_record(&mut out, 0x01a2_0e26_5622, b"\xa1\x03\x05\x04\x06key1value1");
        assert_eq!(out, b"\xff\x01\xa2\x0e\x26\x56\x22\0\0\0\x0f\xa1\x03\x05\x04\x06key1value1\xf7");
        let head: [u8; RECORD_HEADER] = out[..RECORD_HEADER].try_into().unwrap();
        assert_eq!(decode_head(&head), Head::Record { timestamp: 0x01a2_0e26_5622, size: 15 });
        assert!(checksum_holds(&head, &out[11..26], 0xf7));
        assert!(!checksum_holds(&head, &out[11..26], 0xf6));
        assert_eq!(decode_head(&[0; RECORD_HEADER]), Head::Zero);
        assert_eq!(decode_head(&[1; RECORD_HEADER]), Head::Broken);
        assert!(decode_meta(b"TkrzwHDB\n", &"f").unwrap_err().message().contains("not a message queue"));
    }

    #[test]
    fn records_of_8_mib_and_more_carry_the_checksum_the_reference_writes() {
        // The reference sums a record in batches of 8 MiB, taking the modulo
        // after each: the same byte as one modulo at the end. Pinned by
        // records its python3-tkrzw wrote with `ulog_prefix`: a 20 MiB value
        // of ff bytes, and one whose record (without the checksum) is
        // 2^23 + 1 bytes, one past a batch.
        let mut message = b"\xa1\x00\x00\x01\x8a\x80\x80\x00k".to_vec();
        message.resize(message.len() + (20 << 20), 0xff);
        let mut out = Vec::new();
        encode_record(&mut out, 0x01a2_103b_520a, &message);
        assert_eq!(
            (&out[..11], out.last()),
            (&b"\xff\x01\xa2\x10\x3b\x52\x0a\x01\x40\x00\x09"[..], Some(&191))
        );
        let mut message = b"\xa1\x00\x00\x02\x83\xff\xff\x6ck2".to_vec();
        message.resize(8_388_598, 0xfe);
        let mut out = Vec::new();
        encode_record(&mut out, 0x01a2_103b_53d3, &message);
        assert_eq!(out.len() - 1, (1 << 23) + 1);
        assert_eq!(out.last(), Some(&228));
        let head: [u8; RECORD_HEADER] = out[..RECORD_HEADER].try_into().unwrap();
        assert!(checksum_holds(&head, &out[RECORD_HEADER..out.len() - 1], 228));
    }
}
