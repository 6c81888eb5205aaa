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
//! covers the epoch too, and from version 7, in a record written void, its
//! magic byte (see [`Coverage`]).

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

/// What a record's checksum covers besides its body (the sizes through the
/// value), by the file's format version.
///
/// A write over a record's space can be torn: a process killed in the
/// middle of it, or a page cache that wrote back some of its blocks and not
/// the others, leaves the start of one record in front of the rest of the
/// other. Each step closes a way such a mix passed its checksum and read as
/// a value no one wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coverage {
    /// Versions 1 to 5: the body alone. A new record torn over an older
    /// one's space, its magic, link and epoch in front of the old record's
    /// checksum and body, reads as the old key and value at the new epoch,
    /// which outranks the version that replaced them.
    Body,
    /// Version 6: the epoch's four bytes, then the body; such a mix fails.
    Epoch,
    /// Version 7: as version 6, and a record written void (a removal
    /// rewritten over its record's space, a removal marker) covers its
    /// magic byte first. A void record torn over the live record it
    /// replaces, with the same epoch, can keep the live record's magic in
    /// front of the void one's checksum and body; without the magic that
    /// read as the key, live, with an empty value. A record marked void
    /// later, by its magic byte alone, keeps the checksum it was written
    /// with, so a void magic byte passes with either.
    EpochAndVoid,
}

impl Coverage {
    /// The coverage of the files written now.
    pub(crate) const CURRENT: Coverage = Coverage::EpochAndVoid;
}

/// How many of a record's epoch bytes its first alignment unit holds. A
/// tear falls at a multiple of the alignment, so a record torn over
/// another has at least these bytes of its epoch in front of the other's.
pub(crate) fn epoch_bytes_in_first_unit(width: usize, align_pow: u32) -> usize {
    let unit = 1usize.checked_shl(align_pow).unwrap_or(usize::MAX);
    unit.saturating_sub(1 + width).min(4)
}

/// Whether a new record of `epoch`, written over a record of `old_epoch`
/// whose checksum was written live (live still, or marked void or padding
/// by its magic byte since), could read as that record, live, if torn:
/// where a tear before the end of the epoch's bytes leaves the old checksum
/// and body behind the new magic byte, and the new epoch's bytes in front
/// of it, `ahead` of them ([`epoch_bytes_in_first_unit`]), are the old
/// one's. Not so for a record of the same epoch: torn, it is a version of
/// that epoch again, which no hard synchronization promised. (A record
/// written void cannot revive; see [`Coverage::EpochAndVoid`].)
pub(crate) fn revives_if_torn(old_epoch: u32, epoch: u32, ahead: usize) -> bool {
    old_epoch != epoch && old_epoch.to_le_bytes()[..ahead] == epoch.to_le_bytes()[..ahead]
}

/// A record's checksum under `coverage`; `written_void` says the record is
/// written as a void one (which only [`Coverage::EpochAndVoid`] tells apart).
pub(crate) fn checksum(epoch: u32, body: &[u8], coverage: Coverage, written_void: bool) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    if coverage == Coverage::EpochAndVoid && written_void {
        crc.update(&[MAGIC_VOID]);
    }
    if coverage != Coverage::Body {
        crc.update(&epoch.to_le_bytes());
    }
    crc.update(body);
    crc.finalize()
}

/// Encodes a record of exactly `size` bytes (at least [`size_for`]) into `out`.
/// `record.next` is a byte offset, stored in units of 2^`align_pow`; the
/// checksum is as `coverage` has it for a record live or void.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    width: usize,
    align_pow: u32,
    coverage: Coverage,
    record: &Record<'_>,
) {
    encode_through_value(out, width, align_pow, coverage, record);
    out.resize(record.size as usize, 0);
}

/// Encodes a record of `size` bytes as [`encode`] does, but only up to the
/// end of its value: its padding is covered by no checksum, so a record
/// written over another of the same size may leave the old bytes there.
pub(crate) fn encode_through_value(
    out: &mut Vec<u8>,
    width: usize,
    align_pow: u32,
    coverage: Coverage,
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
    let crc = checksum(record.epoch, &out[body..], coverage, !record.live);
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

/// Checks the checksum of `record`, whose header is `header`: a live record
/// must have been written live; a void one may have been either (see
/// [`Coverage::EpochAndVoid`]).
pub(crate) fn crc_matches(header: &Header, record: &[u8], width: usize, coverage: Coverage) -> bool {
    let start = 1 + width + 8;
    let end = header.header_size + header.key_size + header.value_size;
    if record.len() < end {
        return false;
    }
    let body = &record[start..end];
    checksum(header.epoch, body, coverage, false) == header.crc
        || (!header.live
            && coverage == Coverage::EpochAndVoid
            && checksum(header.epoch, body, coverage, true) == header.crc)
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
                    encode(&mut out, width, 3, Coverage::CURRENT, &record);
                    assert_eq!(out.len() as u64, size, "w{width} a{align} k{k} v{v}");
                    let h = parse_header(&out, width, 3).unwrap();
                    assert_eq!(
                        (h.live, h.next, h.epoch, h.key_size, h.value_size, h.size),
                        (true, 12345 * 8, 7, k, v, size)
                    );
                    assert!(crc_matches(&h, &out, width, Coverage::CURRENT));
                    let mut torn = out.clone();
                    let last = h.header_size + k + v - 1;
                    if k + v > 0 {
                        torn[last] ^= 1;
                        assert!(!crc_matches(&h, &torn, width, Coverage::CURRENT));
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
            encode(&mut out, 5, 3, Coverage::CURRENT, &rec);
            let h = parse_header(&out, 5, 3).unwrap();
            assert_eq!(h.size, size, "region of {size} bytes");
            assert!(crc_matches(&h, &out, 5, Coverage::CURRENT));
        }
    }

    /// A record written over an older one's space and torn after its first
    /// alignment unit (its magic, link and most of its epoch new, the rest
    /// the old record's) fails its checksum where the checksum covers the
    /// epoch; without, it read as the old key and value at the new epoch.
    #[test]
    fn a_new_record_torn_over_an_old_one_fails_its_checksum() {
        for width in [3, 4, 5, 6] {
            for coverage in [Coverage::Body, Coverage::Epoch, Coverage::EpochAndVoid] {
                let epoch_checked = coverage != Coverage::Body;
                let encoded = |key: &[u8], value: &[u8], epoch: u32, live: bool| {
                    let size = size_for(width, 8, 8, 40);
                    let mut out = Vec::new();
                    let rec = Record { live, next: 4096, epoch, key, value, size };
                    encode(&mut out, width, 3, coverage, &rec);
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
                assert_eq!(crc_matches(&h, &torn, width, coverage), !epoch_checked, "width {width}");
                // The other way round: the old record's first unit, the new one's rest.
                let mut torn = new.clone();
                torn[..8].copy_from_slice(&old[..8]);
                let h = parse_header(&torn, width, 3).unwrap();
                assert_eq!(crc_matches(&h, &torn, width, coverage), !epoch_checked, "width {width}");
            }
        }
    }

    /// Every mix of two records over one space that a tear at an alignment
    /// multiple can leave: the first `cut` bytes of `front`, the rest of
    /// `back`. Answers the mixes that parse and pass their checksums, as
    /// (live, key, value).
    fn passing_mixes(
        front: &[u8],
        back: &[u8],
        width: usize,
        align: usize,
        coverage: Coverage,
    ) -> Vec<(bool, Vec<u8>, Vec<u8>)> {
        let mut passing = Vec::new();
        for cut in (align..front.len().min(back.len())).step_by(align) {
            let mut torn = back.to_vec();
            torn[..cut].copy_from_slice(&front[..cut]);
            let Ok(h) = parse_header(&torn, width, 0) else { continue };
            if h.size as usize == torn.len() && crc_matches(&h, &torn, width, coverage) {
                let key = torn[h.header_size..h.header_size + h.key_size].to_vec();
                let value = torn[h.header_size + h.key_size..][..h.value_size].to_vec();
                passing.push((h.live, key, value));
            }
        }
        passing
    }

    /// A removal of a record of the current epoch rewrites it as a void
    /// record over the same space, with the same epoch. Torn with the live
    /// record's first bytes in front of the void one's checksum and body,
    /// it read as the key, live, with an empty value, until version 7's
    /// checksum of a record written void covers its magic byte. So does a
    /// live record torn over a void one's space before its epoch (records
    /// aligned to fewer bytes than their link and epoch take).
    #[test]
    fn a_void_record_torn_with_a_live_magic_byte_fails_its_checksum() {
        let encoded = |coverage, width, live, key: &[u8], value: &[u8], epoch, size| {
            let mut out = Vec::new();
            let rec = Record { live, next: 4096, epoch, key, value, size };
            encode(&mut out, width, 0, coverage, &rec);
            out
        };
        for width in [3, 4, 5, 8] {
            for align in [1, 2, 4, 8] {
                for coverage in [Coverage::Epoch, Coverage::EpochAndVoid] {
                    let size = size_for(width, align as u64, 9, 40);
                    let live = encoded(coverage, width, true, b"key-fresh", &[7; 40], 5, size);
                    let void = encoded(coverage, width, false, b"key-fresh", b"", 5, size);
                    let phantom = passing_mixes(&live, &void, width, align, coverage)
                        .into_iter()
                        .any(|(live, _, value)| live && value.is_empty());
                    let what = format!("width {width}, align {align}, {coverage:?}");
                    assert_eq!(phantom, coverage == Coverage::Epoch, "{what}: a removal torn");
                    // The other way round, the void record's first bytes in front
                    // of the live one's rest: the key reads removed or as it was.
                    for (is_live, _, value) in passing_mixes(&void, &live, width, align, coverage) {
                        assert!(!is_live || value == [7; 40], "{what}");
                    }
                    // A live record written over a void record's space, whose
                    // old removal must not read as a live empty record.
                    let old = encoded(coverage, width, false, b"key-gone!", b"", 2, size);
                    let new = encoded(coverage, width, true, b"key-other", &[8; 40], 9, size);
                    let revived = passing_mixes(&new, &old, width, align, coverage)
                        .into_iter()
                        .any(|(live, key, _)| live && key == b"key-gone!");
                    let before_epoch = align <= 1 + width;
                    assert_eq!(revived, coverage == Coverage::Epoch && before_epoch, "{what}: a reuse torn");
                }
            }
        }
    }

    /// [`revives_if_torn`] says exactly when some tear of a new record
    /// over a record marked void later reads as the old one, live.
    #[test]
    fn a_record_marked_void_revives_if_torn_as_the_rule_says() {
        let encoded = |width, live, key: &[u8], epoch, size| {
            let mut out = Vec::new();
            let rec = Record { live, next: 4096, epoch, key, value: &[3; 40], size };
            encode(&mut out, width, 0, Coverage::CURRENT, &rec);
            out
        };
        let epochs = [(5, 6), (0x105, 0x205), (0x1_0005, 0x2_0005), (0x100_0005, 0x200_0005)];
        for width in [3, 4, 5, 6, 7, 8] {
            for align_pow in 0..=4 {
                let align = 1usize << align_pow;
                let ahead = epoch_bytes_in_first_unit(width, align_pow);
                for (old_epoch, new_epoch) in epochs {
                    let size = size_for(width, align as u64, 9, 40);
                    let mut old = encoded(width, true, b"key-gone!", old_epoch, size);
                    old[0] = MAGIC_VOID;
                    let new = encoded(width, true, b"key-other", new_epoch, size);
                    let revived = passing_mixes(&new, &old, width, align, Coverage::CURRENT)
                        .into_iter()
                        .any(|(live, key, _)| live && key == b"key-gone!");
                    let rule = revives_if_torn(old_epoch, new_epoch, ahead);
                    assert_eq!(
                        revived, rule,
                        "width {width}, align {align}, epochs {old_epoch:#x} {new_epoch:#x}"
                    );
                }
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
