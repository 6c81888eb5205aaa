//! The reference's `Utility` figures that the bindings' languages do not all
//! give: the memory page size.

/// The auxiliary vector's key of the page size.
const AT_PAGESZ: u64 = 6;

/// The size of a memory page, as the kernel told this process (its
/// auxiliary vector); 4096 where it cannot be read.
pub fn page_size() -> u64 {
    std::fs::read("/proc/self/auxv").ok().and_then(|auxv| page_size_of(&auxv)).unwrap_or(4096)
}

/// The page size an auxiliary vector (pairs of native words) holds.
fn page_size_of(auxv: &[u8]) -> Option<u64> {
    let word = |chunk: &[u8]| u64::from_ne_bytes(chunk.try_into().expect("chunks of 8"));
    auxv.chunks_exact(16)
        .map(|pair| (word(&pair[..8]), word(&pair[8..])))
        .find(|&(key, _)| key == AT_PAGESZ)
        .map(|(_, value)| value)
        .filter(|&size| size > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_size_is_a_power_of_two() {
        let size = page_size();
        assert!(size >= 4096 && size.is_power_of_two(), "{size}");
    }

    #[test]
    fn the_page_size_is_read_from_its_pair() {
        let mut auxv = Vec::new();
        for (k, v) in [(3u64, 77u64), (AT_PAGESZ, 16384), (0, 0)] {
            auxv.extend_from_slice(&k.to_ne_bytes());
            auxv.extend_from_slice(&v.to_ne_bytes());
        }
        assert_eq!(page_size_of(&auxv), Some(16384));
        assert_eq!(page_size_of(&auxv[..16]), None);
        assert_eq!(page_size_of(&[]), None);
    }
}
