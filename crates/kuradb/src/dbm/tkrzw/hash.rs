//! The reference's HashDBM file (`.tkh`, and the page store under its
//! TreeDBM): its 128-byte header and its record area, read by replaying the
//! records in file order.
//!
//! ```text
//! header (128 bytes, numbers big-endian):
//!   0  "TkrzwHDB\n"          9  cyclic magic (equal to byte 127 when whole)
//!   10 package major, minor  12 static flags (update mode, CRC width, codec)
//!   13 offset_width          14 align_pow        15 closure flags (bit 0: closed)
//!   16 num_buckets (8)       24 num_records (8)  32 eff_data_size (8)
//!   40 file_size (8)         48 modification time, µs (8)
//!   56 db_type (4)           62 opaque metadata (65; the tree keeps its own there)
//! then the bucket array, the free block pool (1008 bytes) and a 16-byte
//! "TkrzwREC\n" mark, up to the record base (aligned to max(4096, 2^align_pow)).
//! record: magic (op in the top 2 bits: 11 void, 10 set, 01 remove, 00 add;
//!         a 6-bit checksum of key and value below), child offset
//!         (offset_width bytes, in 2^align_pow units), key size, value size,
//!         padding size (varints), CRC (0, 1, 2 or 4 bytes), key, value,
//!         padding (0xDD then zeros); its whole size is a multiple of 2^align_pow.
//! ```
//!
//! Replaying every record in file order, the last word on each key wins:
//! that is the live set of an in-place file (a moved or removed record is
//! voided where it was) and of an appending one (older versions and removal
//! records stay in the file), and it is how a file whose writer was killed
//! is salvaged.

use std::borrow::Cow;
use std::collections::HashMap;

use super::bytes::{broken, fixnum, magic_checksum, record_crc, Bytes};
use super::codec::RefCodec;
use crate::error::{Error, ErrorKind, Result};

pub(super) const MAGIC: &[u8] = super::HASH_MAGIC;
const HEADER_SIZE: usize = 128;
const FBP_SECTION_SIZE: u64 = 1008;
const RECORD_BASE_MARK_SIZE: u64 = 16;
const RECORD_BASE_ALIGN: u64 = 4096;
const PADDING_MAGIC: u8 = 0xDD;

/// What the header of a reference hash file says.
#[derive(Clone, Debug)]
pub(super) struct HashHeader {
    pub pkg_version: (u8, u8),
    pub static_flags: u8,
    pub offset_width: usize,
    pub align_pow: u32,
    pub num_buckets: u64,
    pub num_records: u64,
    pub eff_data_size: u64,
    pub file_size: u64,
    pub mod_time_us: u64,
    pub db_type: u64,
    pub opaque: Vec<u8>,
    /// Closed cleanly, and the header written whole.
    pub healthy: bool,
}

impl HashHeader {
    /// Reads and checks the header at the start of `data`.
    pub fn parse(data: &[u8]) -> Result<HashHeader> {
        if data.len() < HEADER_SIZE || !data.starts_with(MAGIC) {
            return Err(broken(format!(
                "its header is cut short ({} bytes, a hash file's is {HEADER_SIZE})",
                data.len()
            )));
        }
        let h = &data[..HEADER_SIZE];
        let header = HashHeader {
            pkg_version: (h[10], h[11]),
            static_flags: h[12],
            offset_width: usize::from(h[13]),
            align_pow: u32::from(h[14]),
            num_buckets: fixnum(&h[16..24]),
            num_records: fixnum(&h[24..32]),
            eff_data_size: fixnum(&h[32..40]),
            file_size: fixnum(&h[40..48]),
            mod_time_us: fixnum(&h[48..56]),
            db_type: fixnum(&h[56..60]),
            opaque: h[62..127].to_vec(),
            healthy: h[15] & 1 != 0 && h[9] == h[127],
        };
        if !(3..=6).contains(&header.offset_width) {
            return Err(broken(format!("its offset width {} is not 3 to 6", header.offset_width)));
        }
        if header.align_pow > 16 {
            return Err(broken(format!("its alignment power {} is over 16", header.align_pow)));
        }
        if header.num_buckets == 0 || header.num_buckets > 1 << 40 {
            return Err(broken(format!("its bucket count {} is impossible", header.num_buckets)));
        }
        if header.static_flags & 3 == 0 || header.static_flags & 3 == 3 {
            return Err(broken(format!(
                "its static flags 0x{:02x} name no update mode",
                header.static_flags
            )));
        }
        if let Err(codec) = RefCodec::of_flags(header.static_flags) {
            return Err(Error::new(
                ErrorKind::NotImplemented,
                format!("its values are encoded with {codec}, which this reader does not decode"),
            ));
        }
        Ok(header)
    }

    /// The codec the values are compressed with, if any.
    pub fn codec(&self) -> Option<RefCodec> {
        // Checked by `parse`.
        RefCodec::of_flags(self.static_flags).ok().flatten()
    }

    /// Whether every update is appended (else updated in place).
    pub fn appending(&self) -> bool {
        self.static_flags & 2 != 0
    }

    /// The width of each record's CRC.
    pub fn crc_width(&self) -> usize {
        match self.static_flags >> 2 & 3 {
            0 => 0,
            1 => 1,
            2 => 2,
            _ => 4,
        }
    }

    /// Where the records start.
    pub fn record_base(&self) -> u64 {
        let align = RECORD_BASE_ALIGN.max(1 << self.align_pow);
        let base = HEADER_SIZE as u64
            + self.num_buckets * self.offset_width as u64
            + FBP_SECTION_SIZE
            + RECORD_BASE_MARK_SIZE;
        base.div_ceil(align) * align
    }

    /// The figures `inspect` reports, named as the reference names them.
    pub fn figures(&self, prefix: &str) -> Vec<(String, String)> {
        let mode = if self.appending() { "appending" } else { "in-place" };
        let crc = match self.crc_width() {
            0 => "none".to_string(),
            w => format!("crc-{}", w * 8),
        };
        [
            ("pkg_major_version", self.pkg_version.0.to_string()),
            ("pkg_minor_version", self.pkg_version.1.to_string()),
            ("static_flags", self.static_flags.to_string()),
            ("offset_width", self.offset_width.to_string()),
            ("align_pow", self.align_pow.to_string()),
            ("num_buckets", self.num_buckets.to_string()),
            ("num_records", self.num_records.to_string()),
            ("eff_data_size", self.eff_data_size.to_string()),
            ("file_size", self.file_size.to_string()),
            ("timestamp", format!("{:.6}", self.mod_time_us as f64 / 1e6)),
            ("db_type", self.db_type.to_string()),
            ("record_base", self.record_base().to_string()),
            ("update_mode", mode.to_string()),
            ("record_crc_mode", crc),
            ("record_comp_mode", self.codec().map_or("none", RefCodec::name).to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (format!("{prefix}{k}"), v))
        .collect()
    }
}

/// A live record found by [`replay`]: where it is, its key and its value
/// (decompressed if the file's values are).
pub(super) type Live<'a> = (u64, &'a [u8], Cow<'a, [u8]>);

/// What a salvaging replay skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Damage {
    /// Stretches of bytes that held no readable record (zeros the writer
    /// reserved but never wrote are not counted).
    pub regions: u64,
    /// Their total size.
    pub bytes: u64,
}

/// Replays the records of the hash file `data` (whose header is `header`)
/// and answers the live ones in file order. A file closed cleanly must read
/// through to the end its header gives, or the damage is an error naming its
/// offset; with `salvage`, unreadable stretches are skipped (to the next
/// offset where a whole, checksummed record starts) and counted.
pub(super) fn replay<'a>(
    data: &'a [u8],
    header: &HashHeader,
    salvage: bool,
) -> Result<(Vec<Live<'a>>, Damage)> {
    let end = if salvage {
        data.len() as u64
    } else if header.file_size > data.len() as u64 {
        return Err(broken(format!(
            "it is {} bytes long but its header says {}: the file is truncated",
            data.len(),
            header.file_size
        )));
    } else {
        header.file_size
    };
    let data = &data[..end as usize];
    let align = 1u64 << header.align_pow;
    let mut live: HashMap<&'a [u8], (u64, &'a [u8])> = HashMap::new();
    let mut damage = Damage::default();
    let mut at = header.record_base();
    while at < end {
        match read_record(data, at, header) {
            Ok(rec) => {
                match rec.op {
                    Op::Set => {
                        live.insert(rec.key, (at, rec.value));
                    }
                    Op::Remove => {
                        live.remove(rec.key);
                    }
                    Op::Void => {}
                }
                at += rec.size;
            }
            Err(e) if !salvage => return Err(broken(format!("the record at offset {at}: {}", e.message()))),
            Err(_) => {
                let from = at;
                at += align;
                while at < end && !starts_record(data, at, header) {
                    at += align;
                }
                // Trailing zeros are space the writer reserved and never
                // used (a memory-mapped file grows ahead of its records):
                // no record was lost there.
                let skipped = &data[from as usize..at.min(end) as usize];
                if let Some(last) = skipped.iter().rposition(|&b| b != 0) {
                    damage.regions += 1;
                    damage.bytes += last as u64 + 1;
                }
            }
        }
    }
    let mut stored: Vec<(u64, &'a [u8], &'a [u8])> =
        live.into_iter().map(|(k, (at, v))| (at, k, v)).collect();
    stored.sort_unstable_by_key(|r| r.0);
    let Some(codec) = header.codec() else {
        return Ok((stored.into_iter().map(|(at, k, v)| (at, k, Cow::Borrowed(v))).collect(), damage));
    };
    // Only the live values are decoded: the older versions a replay passes
    // over cost no decompression.
    let mut records = Vec::with_capacity(stored.len());
    for (at, key, value) in stored {
        match codec.decode(value) {
            Ok(plain) => records.push((at, key, Cow::Owned(plain))),
            Err(why) if !salvage => return Err(broken(format!("the record at offset {at}: {why}"))),
            // Its checksums matched, so the value was stored so: it is lost.
            Err(_) => {
                damage.regions += 1;
                damage.bytes += value.len() as u64;
            }
        }
    }
    Ok((records, damage))
}

/// Whether a record a salvage can trust starts at `at`: it reads whole with
/// matching checksums, and so does the one after it (or it ends the file).
fn starts_record(data: &[u8], at: u64, header: &HashHeader) -> bool {
    match read_record(data, at, header) {
        Ok(rec) => {
            let next = at + rec.size;
            next >= data.len() as u64 || read_record(data, next, header).is_ok()
        }
        Err(_) => false,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Set,
    Remove,
    Void,
}

struct Record<'a> {
    op: Op,
    key: &'a [u8],
    value: &'a [u8],
    size: u64,
}

/// The record at `at`, checked: every length fits, the size is aligned, the
/// padding is marked, and the checksum (and CRC, if the file has them) match.
fn read_record<'a>(data: &'a [u8], at: u64, header: &HashHeader) -> Result<Record<'a>> {
    let mut b = Bytes::new(data.get(at as usize..).unwrap_or_default());
    let magic = b.take(1, "its magic byte")?[0];
    if magic & 0x3f < 3 {
        return Err(broken(format!("its magic byte 0x{magic:02x} is not a record's")));
    }
    let op = match magic & 0xc0 {
        0xc0 => Op::Void,
        0x40 => Op::Remove,
        _ => Op::Set,
    };
    b.fixnum(header.offset_width, "its child offset")?;
    let key_size = b.varint("its key size")?;
    let value_size = b.varint("its value size")?;
    let before = b.position();
    let padding = b.varint("its padding size")?;
    let extra = (b.position() - before - 1) as u64;
    let crc = b.fixnum(header.crc_width(), "its CRC")?;
    let head = b.position() as u64;
    let size = (head + key_size)
        .checked_add(value_size)
        .and_then(|n| n.checked_add(padding))
        .and_then(|n| n.checked_sub(extra))
        .ok_or_else(|| broken("its sizes are impossible".to_string()))?;
    if size > b.remaining() as u64 + head {
        return Err(broken(format!("its size {size} goes past the end of the file")));
    }
    if size % (1 << header.align_pow) != 0 {
        return Err(broken(format!("its size {size} is not aligned to 2^{}", header.align_pow)));
    }
    let key = b.take(key_size as usize, "its key")?;
    let value = b.take(value_size as usize, "its value")?;
    if padding > 0 && b.take(1, "its padding")?[0] != PADDING_MAGIC {
        return Err(broken("its padding is not marked".to_string()));
    }
    if magic & 0x3f != magic_checksum(key, value) {
        return Err(broken("its checksum does not match its key and value".to_string()));
    }
    if header.crc_width() > 0
        && op != Op::Void
        && u64::from(record_crc(header.crc_width(), key, value)) != crc
    {
        return Err(broken("its CRC does not match its key and value".to_string()));
    }
    Ok(Record { op, key, value, size })
}
