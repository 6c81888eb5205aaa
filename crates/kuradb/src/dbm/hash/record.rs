//! The encoding of a hash database's records.
//!
//! A record sits at an offset that is a multiple of the alignment and fills a
//! whole number of alignment units:
//!
//! | field | bytes |
//! | --- | --- |
//! | magic: live, void, padding or dictionary | 1 |
//! | next record in the bucket's chain, as offset >> align_pow (0: none) | offset_width |
//! | epoch: the number of hard synchronizations before it was written | 4 |
//! | CRC-32 of everything after this field up to the end of the value | 4 |
//! | key size, value size, padding size | 3 varints |
//! | key, value, padding (zeros) | as the sizes say |
//!
//! The checksum and the epoch are what make a crash recoverable: a torn
//! record fails its checksum, and of two versions of one key the later epoch
//! wins (see `restore.rs`). In files of format version 6 on, the checksum
//! covers the epoch too (see [`checksum`]).

use crate::varint::{leb128, MAX_LEN};

/// The first byte of a record that holds data.
pub(crate) const MAGIC_LIVE: u8 = 0xC8;
/// The first byte of a removed record: it still names its key and epoch, so a
/// restore knows the key was removed after older versions were written.
pub(crate) const MAGIC_VOID: u8 = 0xA5;

/// The longest header: magic, an 8-byte offset, epoch, checksum, three varints.
pub(crate) const MAX_HEADER: usize = 1 + 8 + 4 + 4 + 3 * MAX_LEN;

/// The largest key or value.
pub(crate) const MAX_ITEM: u64 = u32::MAX as u64;

/// The first byte of the record holding a file's compression dictionary
/// (see `dictionary.rs`): never in a chain; a restore carries it over.
pub(crate) const MAGIC_DICT: u8 = 0xD1;

/// The first byte of a filler record that pads the file to a block multiple;
/// restores skip it.
pub(crate) const MAGIC_PAD: u8 = 0xDF;

/// A record's fields, borrowed from a buffer or the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub live: bool,
    pub next: u64,
    pub epoch: u32,
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// The whole record's size in bytes, header and padding included.
    pub size: u64,
}

/// What a record's header says, before its key and value are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub live: bool,
    pub next: u64,
    pub epoch: u32,
    pub crc: u32,
    pub key_size: usize,
    pub value_size: usize,
    pub header_size: usize,
    /// The whole record's size in bytes.
    pub size: u64,
}

/// The size a record of these sizes needs, rounded up to the alignment.
pub(crate) fn size_for(width: usize, align: u64, key: usize, value: usize) -> u64 {
    // One byte at least for the padding's own size field; `encode` widens
    // that field out of the padding when the padding is longer.
    let base = (1 + width + 8 + leb128::len(key as u64) + leb128::len(value as u64) + key + value) as u64;
    (base + 1).div_ceil(align) * align
}

/// A record's checksum: the CRC-32 of its body (the sizes through the
/// value), preceded, where `epoch_checked` (format version 6 on), by its
/// epoch's four bytes.
///
/// A record written over the space of an older one and torn (a process
/// killed in the middle of the write, a page cache that wrote back only its
/// first block) can leave the new record's first bytes, its epoch among
/// them, in front of the old record's checksum and body. Where the checksum
/// leaves out the epoch, that reads as the old key and value with the new
/// epoch, which outranks the version that replaced them: a synchronized
/// value would go back to an older one. Covering the epoch makes such a mix
/// fail its checksum like any torn record.
pub(crate) fn checksum(epoch: u32, body: &[u8], epoch_checked: bool) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    if epoch_checked {
        crc.update(&epoch.to_le_bytes());
    }
    crc.update(body);
    crc.finalize()
}

/// Encodes a record of exactly `size` bytes (at least [`size_for`]) into `out`.
/// `record.next` is a byte offset, stored in units of 2^`align_pow`; the
/// checksum covers the epoch where `epoch_checked` (see [`checksum`]).
pub(crate) fn encode(
    out: &mut Vec<u8>,
    width: usize,
    align_pow: u32,
    epoch_checked: bool,
    record: &Record<'_>,
) {
    encode_through_value(out, width, align_pow, epoch_checked, record);
    out.resize(record.size as usize, 0);
}

/// Encodes a record of `size` bytes as [`encode`] does, but only up to the
/// end of its value: its padding is covered by no checksum, so a record
/// written over another of the same size may leave the old bytes there.
pub(crate) fn encode_through_value(
    out: &mut Vec<u8>,
    width: usize,
    align_pow: u32,
    epoch_checked: bool,
    record: &Record<'_>,
) {
    out.clear();
    out.push(if record.live { MAGIC_LIVE } else { MAGIC_VOID });
    out.extend_from_slice(&(record.next >> align_pow).to_le_bytes()[..width]);
    out.extend_from_slice(&record.epoch.to_le_bytes());
    let crc_at = out.len();
    out.extend_from_slice(&[0; 4]);
    let body = out.len();
    leb128::put(out, record.key.len() as u64);
    leb128::put(out, record.value.len() as u64);
    let used = out.len() + record.key.len() + record.value.len();
    // The padding's size field comes out of the padding: with a field of
    // `len` bytes the padding is `room - len`, which never needs more than
    // `len` bytes, so the record ends exactly at `record.size`.
    let room = record.size as usize - used;
    let len = leb128::len(room as u64 - 1);
    leb128::put_padded(out, (room - len) as u64, len);
    out.extend_from_slice(record.key);
    out.extend_from_slice(record.value);
    let crc = checksum(record.epoch, &out[body..], epoch_checked);
    out[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Parses the header at the start of `buf`; `next` comes back as a byte
/// offset. An error says what is wrong; the caller names the file and offset.
pub(crate) fn parse_header(
    buf: &[u8],
    width: usize,
    align_pow: u32,
) -> std::result::Result<Header, &'static str> {
    let live = match buf.first() {
        Some(&MAGIC_LIVE) => true,
        Some(&MAGIC_VOID) | Some(&MAGIC_PAD) | Some(&MAGIC_DICT) => false,
        Some(_) => return Err("bad magic byte"),
        None => return Err("empty"),
    };
    let fixed = 1 + width + 8;
    if buf.len() < fixed {
        return Err("short header");
    }
    let mut next = [0u8; 8];
    next[..width].copy_from_slice(&buf[1..1 + width]);
    let epoch = u32::from_le_bytes(buf[1 + width..5 + width].try_into().unwrap_or_default());
    let crc = u32::from_le_bytes(buf[5 + width..9 + width].try_into().unwrap_or_default());
    let mut pos = fixed;
    let mut field = || leb128::decode(buf, &mut pos).map_err(|_| "bad size field");
    let key_size = field()?;
    let value_size = field()?;
    let pad = field()?;
    if key_size > MAX_ITEM || value_size > MAX_ITEM || pad > MAX_ITEM {
        return Err("impossible sizes");
    }
    let size = pos as u64 + key_size + value_size + pad;
    Ok(Header {
        live,
        next: u64::from_le_bytes(next) << align_pow,
        epoch,
        crc,
        key_size: key_size as usize,
        value_size: value_size as usize,
        header_size: pos,
        size,
    })
}

/// Checks the checksum of `record`, whose header is `header` (see [`checksum`]).
pub(crate) fn crc_matches(header: &Header, record: &[u8], width: usize, epoch_checked: bool) -> bool {
    let start = 1 + width + 8;
    let end = header.header_size + header.key_size + header.value_size;
    record.len() >= end && checksum(header.epoch, &record[start..end], epoch_checked) == header.crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_at_every_size() {
        for width in [3, 4, 5, 6] {
            for align in [1u64, 8, 128, 512] {
                for (k, v) in [(0, 0), (1, 0), (8, 100), (300, 17000), (0, 100), (3, 120), (5, 16370)] {
                    let key = vec![7u8; k];
                    let value = vec![9u8; v];
                    let size = size_for(width, align, k, v);
                    assert_eq!(size % align, 0);
                    let record =
                        Record { live: true, next: 12345 * 8, epoch: 7, key: &key, value: &value, size };
                    let mut out = Vec::new();
                    encode(&mut out, width, 3, true, &record);
                    assert_eq!(out.len() as u64, size, "w{width} a{align} k{k} v{v}");
                    let h = parse_header(&out, width, 3).unwrap();
                    assert_eq!(
                        (h.live, h.next, h.epoch, h.key_size, h.value_size, h.size),
                        (true, 12345 * 8, 7, k, v, size)
                    );
                    assert!(crc_matches(&h, &out, width, true));
                    let mut torn = out.clone();
                    let last = h.header_size + k + v - 1;
                    if k + v > 0 {
                        torn[last] ^= 1;
                        assert!(!crc_matches(&h, &torn, width, true));
                    }
                }
            }
        }
    }

    /// A record encoded into a region larger than it needs (a reused free
    /// block) still parses to exactly that region's size.
    #[test]
    fn records_fill_any_larger_region_exactly() {
        let (key, value) = (vec![1u8; 9], vec![2u8; 30]);
        let least = size_for(5, 8, 9, 30);
        for size in (least..least + 40_000).step_by(8) {
            let mut out = Vec::new();
            let rec = Record { live: true, next: 3, epoch: 1, key: &key, value: &value, size };
            encode(&mut out, 5, 3, true, &rec);
            let h = parse_header(&out, 5, 3).unwrap();
            assert_eq!(h.size, size, "region of {size} bytes");
            assert!(crc_matches(&h, &out, 5, true));
        }
    }

    /// A record written over an older one's space and torn after its first
    /// alignment unit (its magic, link and most of its epoch new, the rest
    /// the old record's) fails its checksum where the checksum covers the
    /// epoch; without, it read as the old key and value at the new epoch.
    #[test]
    fn a_new_record_torn_over_an_old_one_fails_its_checksum() {
        for width in [3, 4, 5, 6] {
            for epoch_checked in [false, true] {
                let encoded = |key: &[u8], value: &[u8], epoch: u32, live: bool| {
                    let size = size_for(width, 8, 8, 40);
                    let mut out = Vec::new();
                    let rec = Record { live, next: 4096, epoch, key, value, size };
                    encode(&mut out, width, 3, epoch_checked, &rec);
                    out
                };
                let old = encoded(b"key-old", b"the value that was replaced", 2, false);
                let new = encoded(b"key-new", b"a value being written", 9, true);
                // Torn at the first alignment unit: 8 bytes of the new record.
                let mut torn = old.clone();
                torn[..8].copy_from_slice(&new[..8]);
                let h = parse_header(&torn, width, 3).unwrap();
                let epoch_changed = h.epoch != 2;
                assert!(h.live && epoch_changed == (width < 7), "width {width}");
                assert_eq!(crc_matches(&h, &torn, width, epoch_checked), !epoch_checked, "width {width}");
                // The other way round: the old record's first unit, the new one's rest.
                let mut torn = new.clone();
                torn[..8].copy_from_slice(&old[..8]);
                let h = parse_header(&torn, width, 3).unwrap();
                assert_eq!(crc_matches(&h, &torn, width, epoch_checked), !epoch_checked, "width {width}");
            }
        }
    }

    #[test]
    fn garbage_headers_are_broken_data_not_panics() {
        for buf in [&[][..], &[0u8; 40][..], &[MAGIC_LIVE, 1, 2][..], &[MAGIC_LIVE; 40][..]] {
            if let Err(why) = parse_header(buf, 5, 3) {
                assert!(!why.is_empty());
            }
        }
    }
}
