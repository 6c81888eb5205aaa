//! The first 128 bytes of a hash database's file.
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | magic `KuraHDB\n` |
//! | 8 | format version (1) |
//! | 9 | flags: 1 = appending updates |
//! | 10 | offset width |
//! | 11 | align_pow |
//! | 12 | 1 while a writer has the file open; 0 after a clean close |
//! | 16 | number of buckets (u64) |
//! | 24 | record count (u64, exact after a clean close) |
//! | 32 | bytes of keys and values (u64, exact after a clean close) |
//! | 40 | epoch: hard synchronizations so far (u32) |
//! | 48 | offset of the first record (u64) |
//! | 124 | CRC-32 of bytes 0 to 123 |
//!
//! Integers are little-endian.

use crate::error::{Error, ErrorKind, Result};

pub(crate) const SIZE: usize = 128;
const MAGIC: &[u8; 8] = b"KuraHDB\n";
const VERSION: u8 = 1;
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
    pub records_start: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; SIZE] {
        let mut b = [0u8; SIZE];
        b[..8].copy_from_slice(MAGIC);
        b[8] = VERSION;
        b[9] = u8::from(self.appending);
        b[10] = self.width;
        b[11] = self.align_pow;
        b[12] = u8::from(self.open_for_writing);
        b[16..24].copy_from_slice(&self.num_buckets.to_le_bytes());
        b[24..32].copy_from_slice(&self.count.to_le_bytes());
        b[32..40].copy_from_slice(&self.data_size.to_le_bytes());
        b[40..44].copy_from_slice(&self.epoch.to_le_bytes());
        b[48..56].copy_from_slice(&self.records_start.to_le_bytes());
        let crc = crc32fast::hash(&b[..124]);
        b[124..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a header, naming the file in errors.
    pub(crate) fn decode(b: &[u8], path: &std::path::Path) -> Result<Header> {
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
                    "it was written by Tkrzw; export it to TSV with tkrzw_dbm_util and import that",
                ));
            }
            return Err(bad("bad magic"));
        }
        if b[8] != VERSION {
            return Err(bad(&format!("format version {} is not supported (expected {VERSION})", b[8])));
        }
        if u32::from_le_bytes(b[124..128].try_into().unwrap_or_default()) != crc32fast::hash(&b[..124]) {
            return Err(bad("the header's checksum does not match"));
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let header = Header {
            appending: b[9] & 1 != 0,
            width: b[10],
            align_pow: b[11],
            open_for_writing: b[12] != 0,
            num_buckets: u64_at(16),
            count: u64_at(24),
            data_size: u64_at(32),
            epoch: u32::from_le_bytes(b[40..44].try_into().unwrap_or_default()),
            records_start: u64_at(48),
        };
        if !(3..=8).contains(&header.width) || header.align_pow > 16 || header.num_buckets == 0 {
            return Err(bad("impossible tuning parameters"));
        }
        let table_end = SIZE as u64 + header.num_buckets.saturating_mul(u64::from(header.width));
        if header.records_start < table_end {
            return Err(bad("the records overlap the bucket array"));
        }
        Ok(header)
    }
}
