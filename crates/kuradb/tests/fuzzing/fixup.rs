//! Checksum repairs, from the byte layouts documented in each format's
//! module. A mutated file almost always fails its first checksum, so half of
//! the inputs have their checksums made to match again: then the fuzzer
//! reaches what lies behind them (bucket offsets, chains, tree nodes, skip
//! pointers, record lengths), as a bug or a malicious writer would.

/// The CRC-32 of `bytes[from..to]` stored little-endian at `at`, when all
/// three lie inside `bytes`.
fn put_crc(bytes: &mut [u8], from: usize, to: usize, at: usize) {
    if from <= to && to <= bytes.len() && at + 4 <= bytes.len() {
        let crc = crc32(&bytes[from..to]);
        bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

/// CRC-32 (IEEE), as crc32fast computes it; written out so that the fuzz
/// crate needs no dependency but kuradb's.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

fn varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    kuradb::varint::leb128::decode(bytes, pos).ok()
}

/// A hash-format file (hash database or a tree's node store): both header
/// halves (CRCs at 60 and 124), then every record met walking from the first
/// record's offset, until a record does not parse (`hash/record.rs`).
pub fn hash(bytes: &mut [u8]) {
    if bytes.len() < 128 {
        return;
    }
    let width = usize::from(bytes[10]);
    let align = 1u64 << bytes[11].min(16);
    put_crc(bytes, 0, 60, 60);
    put_crc(bytes, 64, 124, 124);
    let Some(mut at) = u64_at(bytes, 24) else { return };
    // Records the walk may repair; it ends sooner at a record it cannot read.
    for _ in 0..100_000 {
        let Ok(start) = usize::try_from(at) else { return };
        let fixed = start.saturating_add(1 + width + 8);
        if !(3..=8).contains(&width) || fixed > bytes.len() {
            return;
        }
        if ![0xC8, 0xA5, 0xDF].contains(&bytes[start]) {
            // Not a record here: try the next aligned offset.
            at += align;
            continue;
        }
        let mut pos = fixed;
        let (Some(key), Some(value), Some(pad)) =
            (varint(bytes, &mut pos), varint(bytes, &mut pos), varint(bytes, &mut pos))
        else {
            return;
        };
        let Some(end) = (pos as u64).checked_add(key).and_then(|e| e.checked_add(value)) else { return };
        if end > bytes.len() as u64 {
            return;
        }
        let (epoch_at, body) = (start + 1 + width, start + 1 + width + 8);
        if bytes[8] >= 6 {
            // From version 6 the checksum covers the epoch, then the body.
            let mut covered = bytes[epoch_at..epoch_at + 4].to_vec();
            covered.extend_from_slice(&bytes[body..end as usize]);
            let crc = crc32(&covered);
            bytes[epoch_at + 4..body].copy_from_slice(&crc.to_le_bytes());
        } else {
            put_crc(bytes, body, end as usize, epoch_at + 4);
        }
        let size = end.saturating_add(pad).saturating_sub(at).max(1);
        at = (at + size).div_ceil(align) * align;
    }
}

/// A skip database's file: the index's CRC (at 48, over records end to
/// index end), then the header's (at 124, over bytes 0 to 123)
/// (`skip/format.rs`).
pub fn skip(bytes: &mut [u8]) {
    if bytes.len() < 128 {
        return;
    }
    if let (Some(from), Some(to)) = (u64_at(bytes, 32), u64_at(bytes, 40)) {
        if let (Ok(from), Ok(to)) = (usize::try_from(from), usize::try_from(to)) {
            put_crc(bytes, from, to, 48);
        }
    }
    put_crc(bytes, 0, 124, 124);
}

/// A flat file: the header's CRC (at 20, over bytes 0 to 19) and the
/// trailer, the CRC of every byte between the header and itself
/// (`dbm/flat.rs`).
pub fn flat(bytes: &mut [u8]) {
    if bytes.len() < 28 {
        return;
    }
    put_crc(bytes, 0, 20, 20);
    let end = bytes.len() - 4;
    put_crc(bytes, 24, end, end);
}
