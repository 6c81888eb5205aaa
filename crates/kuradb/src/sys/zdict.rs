//! zstd's fastCover dictionary trainer with fixed parameters, behind a safe
//! API.
//!
//! `zstd::dict::from_continuous` (`ZDICT_trainFromBuffer`) optimizes the
//! segment size `k` for each sample: it trains five dictionaries on three
//! quarters of the sample, compresses the last quarter with each to pick
//! the best, and computes entropy tables each time, a cost a whole load of
//! small values feels. One training with the parameters that search
//! settles on for such values costs a fraction of it (figures in
//! bench/results/2026-11-29-compression.md).

use std::os::raw::c_uint;

use zstd::zstd_safe::zstd_sys;

/// The parameters of one fastCover training (zstd's names).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FastCover {
    /// The size of the segments the dictionary is made of.
    pub(crate) k: u32,
    /// The length of the substrings counted (6 or 8).
    pub(crate) d: u32,
    /// The log2 of the frequency table's size (its memory is 6 * 2^f bytes).
    pub(crate) f: u32,
    /// 1 to 10: how much of the sample is counted and finalized (1: all).
    pub(crate) accel: u32,
    /// The zstd level the entropy tables are computed for.
    pub(crate) level: i32,
}

/// Trains a dictionary of at most `capacity` bytes from `samples`, the
/// values end to end whose sizes are `sizes`; `None` if zstd refuses
/// (too few or too small values, sizes that do not add up, parameters out
/// of range).
#[expect(unsafe_code, reason = "calls zstd's fastCover trainer")]
pub(crate) fn train_fast_cover(
    samples: &[u8],
    sizes: &[usize],
    capacity: usize,
    params: FastCover,
) -> Option<Vec<u8>> {
    let total = sizes.iter().try_fold(0usize, |sum, &n| sum.checked_add(n));
    if total != Some(samples.len()) || sizes.is_empty() || capacity == 0 {
        return None;
    }
    let count = c_uint::try_from(sizes.len()).ok()?;
    let mut out = vec![0u8; capacity];
    // SAFETY: ZDICT_fastCover_params_t is a plain C struct of integers and
    // a double, for which all zeros is valid and means "the default" to
    // zstd in every field set below.
    let mut p: zstd_sys::ZDICT_fastCover_params_t = unsafe { std::mem::zeroed() };
    p.k = params.k;
    p.d = params.d;
    p.f = params.f;
    p.accel = params.accel;
    p.zParams.compressionLevel = params.level;
    // SAFETY: `out` is a live buffer of `capacity` bytes that zstd writes at
    // most `capacity` bytes into; `samples` is a live buffer whose length
    // is the sum of the `count` sizes `sizes` points at (checked above), so
    // zstd reads inside it; nothing else refers to either during the call.
    let n = unsafe {
        zstd_sys::ZDICT_trainFromBuffer_fastCover(
            out.as_mut_ptr().cast(),
            capacity,
            samples.as_ptr().cast(),
            sizes.as_ptr(),
            count,
            p,
        )
    };
    // SAFETY: ZDICT_isError only inspects the number it is given.
    if unsafe { zstd_sys::ZDICT_isError(n) } != 0 || n > capacity {
        return None;
    }
    out.truncate(n);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: FastCover = FastCover { k: 200, d: 8, f: 18, accel: 1, level: 3 };

    fn sample() -> (Vec<u8>, Vec<usize>) {
        let (mut data, mut sizes) = (Vec::new(), Vec::new());
        for i in 0..2000u32 {
            let v = format!(
                "{{\"id\":{i},\"sku\":\"SKU-{:06}\",\"status\":\"shipped\",\"qty\":{}}}",
                i * 7919 % 999_983,
                i % 17
            );
            data.extend_from_slice(v.as_bytes());
            sizes.push(v.len());
        }
        (data, sizes)
    }

    /// A dictionary comes out within its capacity, and zstd takes it.
    #[test]
    fn trains_a_dictionary_zstd_loads() {
        let (data, sizes) = sample();
        let dict = train_fast_cover(&data, &sizes, 4096, PARAMS).unwrap();
        assert!(dict.len() <= 4096 && dict.len() > 256, "{} bytes", dict.len());
        let mut c = zstd::bulk::Compressor::with_dictionary(3, &dict).unwrap();
        let value = &data[..sizes[0]];
        let packed = c.compress(value).unwrap();
        let mut d = zstd::bulk::Decompressor::with_dictionary(&dict).unwrap();
        assert_eq!(d.decompress(&packed, value.len()).unwrap(), value);
    }

    /// Sizes that do not add up to the data, no values, or no room are
    /// refused before zstd reads anything.
    #[test]
    fn inconsistent_arguments_are_refused() {
        let (data, mut sizes) = sample();
        assert!(train_fast_cover(&data, &sizes, 0, PARAMS).is_none());
        assert!(train_fast_cover(&data, &[], 4096, PARAMS).is_none());
        sizes[0] += 1;
        assert!(train_fast_cover(&data, &sizes, 4096, PARAMS).is_none());
        sizes[0] = usize::MAX;
        assert!(train_fast_cover(&data, &sizes, 4096, PARAMS).is_none());
    }
}
