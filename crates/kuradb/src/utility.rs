//! The reference's utility functions, for the compatibility layers of the
//! bindings: its two hash functions, bit for bit, the Levenshtein distance,
//! and the process's memory figures.
//!
//! The hash functions exist so that a program that placed keys with the
//! reference's `Utility.PrimaryHash`/`SecondaryHash` (its own sharding, a
//! bucket chosen outside the database) gets the same numbers from kuradb.
//! kuradb's own files do not use them: their hash is in
//! [`crate::dbm::hash`] and does not change between versions either.
//!
//! ```
//! use kuradb::utility;
//!
//! assert_eq!(utility::primary_hash(b"abc", 0), 16973900370012003622);
//! assert_eq!(utility::secondary_hash(b"abc", 7), 4);
//! assert_eq!(utility::edit_distance_lev("kitten", "sitting"), 3);
//! ```

/// kuradb's version, as the compatibility layers report it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The reference's primary hash (the one its hash database places keys
/// with): a 64-bit multiply-rotate hash of the MurmurHash family with a
/// fixed seed, reduced to `0..num_buckets`.
///
/// `num_buckets` 0 means the whole 64-bit range, as the reference's
/// bindings take "0 or less". Below 2^32 buckets the 16-bit quarters are
/// folded first, as the reference does, so small tables still see the
/// high bits.
pub fn primary_hash(data: &[u8], num_buckets: u64) -> u64 {
    reduce(murmur(data, 19_780_211), num_buckets)
}

/// The reference's secondary hash (the one it shards by): an FNV-style
/// xor-multiply hash, reduced to `0..num_shards` like [`primary_hash`].
///
/// Its multiplier is the reference's, 109,951,162,811, which is not the
/// FNV prime (1,099,511,628,211); compatibility means keeping it.
pub fn secondary_hash(data: &[u8], num_shards: u64) -> u64 {
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(109_951_162_811)
    });
    reduce(hash, num_shards)
}

/// The Levenshtein distance between two strings, counted in Unicode
/// characters (the reference's `EditDistanceLev` on text).
pub fn edit_distance_lev(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    crate::dbm::search::edit_distance(&a, &b)
}

/// The Levenshtein distance between two byte strings, counted in bytes.
pub fn edit_distance_lev_bytes(a: &[u8], b: &[u8]) -> usize {
    crate::dbm::search::edit_distance(a, b)
}

/// The process's resident memory in bytes, or 0 where the platform does
/// not say.
///
/// The reference reports kilobytes times 1,000; this is kilobytes times
/// 1,024, the true byte count.
pub fn memory_usage() -> u64 {
    proc_field("/proc/self/status", "VmRSS:")
}

/// The machine's total memory in bytes, or 0 where the platform does not
/// say. Bytes, as [`memory_usage`].
pub fn memory_capacity() -> u64 {
    proc_field("/proc/meminfo", "MemTotal:")
}

fn murmur(data: &[u8], seed: u64) -> u64 {
    const MUL: u64 = 0xc6a4_a793_5bd1_e995;
    const SHIFT: u32 = 47;
    let mut hash = seed ^ (data.len() as u64).wrapping_mul(MUL);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut k = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        k = k.wrapping_mul(MUL);
        k ^= k >> SHIFT;
        k = k.wrapping_mul(MUL);
        // The reference multiplies before it mixes the word in: the other
        // order from the published MurmurHash64A, so its values differ
        // from that function's on keys of 8 bytes or more.
        hash = hash.wrapping_mul(MUL) ^ k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut last = [0u8; 8];
        last[..tail.len()].copy_from_slice(tail);
        hash = (hash ^ u64::from_le_bytes(last)).wrapping_mul(MUL);
    }
    hash ^= hash >> SHIFT;
    hash = hash.wrapping_mul(MUL);
    hash ^ (hash >> SHIFT)
}

fn reduce(hash: u64, buckets: u64) -> u64 {
    let buckets = if buckets == 0 { u64::MAX } else { buckets };
    let hash = if buckets <= u64::from(u32::MAX) {
        let high = ((hash >> 48) & 0xffff) | ((hash >> 16) & 0xffff_0000);
        let low = ((hash & 0xffff) << 16) | ((hash >> 16) & 0xffff);
        high ^ low
    } else {
        hash
    };
    hash % buckets
}

/// A "Name:   1234 kB" line of a /proc file, in bytes.
fn proc_field(path: &str, name: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (data, primary full, primary mod 1000, secondary full, secondary mod 7),
    /// as python3-tkrzw 0.1.29 over tkrzw 1.0.25 prints them.
    fn vectors() -> Vec<(Vec<u8>, u64, u64, u64, u64)> {
        vec![
            (b"".to_vec(), 6174749910581742733, 400, 14695981039346656037, 2),
            (b"a".to_vec(), 10539727041093872063, 110, 4097711627072661164, 6),
            (b"abc".to_vec(), 16973900370012003622, 208, 1765794342254572867, 4),
            (b"hello world".to_vec(), 17353818626280676278, 121, 1620680688316839199, 4),
            ((0..=255u8).collect(), 15152283110235508819, 250, 3426200110659722789, 6),
            (vec![b'x'; 17], 2270535938905000610, 682, 11860520465486012975, 0),
        ]
    }

    #[test]
    fn the_hashes_are_the_references() {
        for (data, primary, primary_1000, secondary, secondary_7) in vectors() {
            assert_eq!(primary_hash(&data, 0), primary, "{data:?}");
            assert_eq!(primary_hash(&data, 1000), primary_1000, "{data:?}");
            assert_eq!(secondary_hash(&data, 0), secondary, "{data:?}");
            assert_eq!(secondary_hash(&data, 7), secondary_7, "{data:?}");
        }
    }

    #[test]
    fn edit_distances_count_characters_or_bytes() {
        assert_eq!(edit_distance_lev("kitten", "sitting"), 3);
        assert_eq!(edit_distance_lev("日本語", "日本"), 1);
        assert_eq!(edit_distance_lev_bytes("日本語".as_bytes(), "日本".as_bytes()), 3);
        assert_eq!(edit_distance_lev("", "abc"), 3);
    }

    #[test]
    fn memory_figures_are_plausible_on_linux() {
        if cfg!(target_os = "linux") {
            let (usage, capacity) = (memory_usage(), memory_capacity());
            assert!(usage > 1 << 20 && usage < capacity, "{usage} of {capacity}");
        }
    }
}
