//! The reference's SkipDBM file (`.tks`): a 128-byte header, then the
//! records sorted by key, each with its skip pointers.
//!
//! ```text
//! header (numbers big-endian):
//!   0 "TkrzwSDB\n"  9 cyclic magic (equal to byte 127 when whole)
//!   10 package major, minor  12 offset_width  13 step_unit  14 max_level
//!   15 closure flags (bit 0: closed)  24 num_records (8)
//!   32 eff_data_size (8)  40 file_size (8)  48 modification time, µs (8)
//! record i (from offset 128): 0xFF, one pointer of offset_width bytes for
//!   each level l in 1..=max_level that step_unit^l divides i, key size,
//!   value size (varints), key, value
//! ```
//!
//! The reference rewrites the whole file at each synchronization, so the
//! records are read in file order and the pointers are skipped; a file
//! whose writer was killed keeps the records up to the first damage.

use super::bytes::{broken, fixnum, Bytes};
use super::hash::Damage;
use crate::error::Result;

const HEADER_SIZE: usize = 128;
const RECORD_MAGIC: u8 = 0xFF;

/// What the header says.
#[derive(Clone, Debug)]
pub(super) struct SkipHeader {
    pub pkg_version: (u8, u8),
    pub offset_width: usize,
    pub step_unit: u64,
    pub max_level: u32,
    pub num_records: u64,
    pub eff_data_size: u64,
    pub file_size: u64,
    pub mod_time_us: u64,
    pub healthy: bool,
}

impl SkipHeader {
    /// The figures `inspect` reports, named as the reference names them.
    pub fn figures(&self) -> Vec<(String, String)> {
        [
            ("pkg_major_version", self.pkg_version.0.to_string()),
            ("pkg_minor_version", self.pkg_version.1.to_string()),
            ("offset_width", self.offset_width.to_string()),
            ("step_unit", self.step_unit.to_string()),
            ("max_level", self.max_level.to_string()),
            ("num_records", self.num_records.to_string()),
            ("eff_data_size", self.eff_data_size.to_string()),
            ("file_size", self.file_size.to_string()),
            ("timestamp", format!("{:.6}", self.mod_time_us as f64 / 1e6)),
            ("record_base", HEADER_SIZE.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// The records of a skip file, sorted by key (duplicates kept, in order).
pub(super) struct SkipRecords<'a> {
    pub header: SkipHeader,
    pub records: Vec<(&'a [u8], &'a [u8])>,
    pub damage: Option<Damage>,
}

/// Reads the skip file `data`. A file closed cleanly must hold exactly the
/// records its header counts; with `salvage` (or for a file whose writer was
/// killed) the records up to the first damage are kept and the rest counted.
pub(super) fn read(data: &[u8], salvage: bool) -> Result<SkipRecords<'_>> {
    if data.len() < HEADER_SIZE {
        return Err(broken(format!("its header is cut short ({} bytes of {HEADER_SIZE})", data.len())));
    }
    let h = &data[..HEADER_SIZE];
    let header = SkipHeader {
        pkg_version: (h[10], h[11]),
        offset_width: usize::from(h[12]),
        step_unit: u64::from(h[13]),
        max_level: u32::from(h[14]),
        num_records: fixnum(&h[24..32]),
        eff_data_size: fixnum(&h[32..40]),
        file_size: fixnum(&h[40..48]),
        mod_time_us: fixnum(&h[48..56]),
        healthy: h[15] & 1 != 0 && h[9] == h[127],
    };
    if !(3..=6).contains(&header.offset_width) || header.step_unit < 2 || header.max_level == 0 {
        return Err(broken(format!(
            "its tuning is impossible (offset width {}, step unit {}, max level {})",
            header.offset_width, header.step_unit, header.max_level
        )));
    }
    let salvage = salvage || !header.healthy;
    let end = if salvage {
        data.len()
    } else if header.file_size > data.len() as u64 || header.file_size < HEADER_SIZE as u64 {
        return Err(broken(format!(
            "it is {} bytes long but its header says {}: the file is truncated",
            data.len(),
            header.file_size
        )));
    } else {
        header.file_size as usize
    };
    let mut b = Bytes::new(&data[HEADER_SIZE..end]);
    let mut records = Vec::new();
    let mut damage = Damage::default();
    let mut index = 0u64;
    while b.remaining() > 0 {
        let at = HEADER_SIZE + b.position();
        match read_record(&mut b, index, &header) {
            Ok(record) => records.push(record),
            Err(e) if !salvage => return Err(broken(format!("the record at offset {at}: {}", e.message()))),
            Err(_) => {
                damage = Damage { regions: 1, bytes: (end - at) as u64 };
                break;
            }
        }
        index += 1;
    }
    if !salvage && records.len() as u64 != header.num_records {
        return Err(broken(format!(
            "it holds {} records but its header says {}",
            records.len(),
            header.num_records
        )));
    }
    Ok(SkipRecords { header, records, damage: salvage.then_some(damage) })
}

fn read_record<'a>(b: &mut Bytes<'a>, index: u64, header: &SkipHeader) -> Result<(&'a [u8], &'a [u8])> {
    let magic = b.take(1, "its magic byte")?[0];
    if magic != RECORD_MAGIC {
        return Err(broken(format!("its magic byte 0x{magic:02x} is not a record's")));
    }
    let mut levels = 0;
    let mut step = header.step_unit;
    if index == 0 {
        levels = header.max_level as usize;
    }
    while levels < header.max_level as usize && index.is_multiple_of(step) {
        levels += 1;
        step = match step.checked_mul(header.step_unit) {
            Some(s) => s,
            None => break,
        };
    }
    b.take(levels * header.offset_width, "its skip pointers")?;
    let key_size = b.varint("its key size")?;
    let value_size = b.varint("its value size")?;
    let key = b.take(usize::try_from(key_size).unwrap_or(usize::MAX), "its key")?;
    let value = b.take(usize::try_from(value_size).unwrap_or(usize::MAX), "its value")?;
    Ok((key, value))
}
