//! The lz4 codec of record compression: values as lz4 blocks, with the
//! file's dictionary, if it has one, as their preset dictionary.
//!
//! liblz4 (`sys::lz4`) does the work: it keeps its state per thread and
//! hashes a dictionary once, where lz4_flex rebuilt both at every value
//! (bench/results/2026-11-29-compression.md has the figures). Its sizes are C `int`s, so a
//! value over 2 GiB ([`LZ4_MAX_INPUT`]) still goes through lz4_flex, which
//! wrote every lz4 value before: the block format is the same either way, so
//! files written by either read with the other.

use super::{Codec, Prepared};
use crate::dbm::hash::dictionary::Dictionary;
use crate::sys::lz4::{self, Lz4Dictionary, LZ4_MAX_INPUT};

/// The lz4 codec, the row of mode lz4 in `MODES`.
pub(crate) struct Lz4;

impl Codec for Lz4 {
    /// LZ4's bound: with it liblz4 takes its faster path, and lz4_flex, for
    /// values over 2 GiB, refuses to start with less.
    fn room(&self, len: usize, _at: usize) -> usize {
        bound(len)
    }

    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
        compress_into(value, out, dict)
    }

    fn decompress(&self, body: &[u8], size: usize, dict: Option<&Dictionary>) -> Result<Vec<u8>, String> {
        decompress(body, size, dict)
    }

    /// The dictionary hashed once into a state of its own, which each
    /// compression attaches to its thread's working one.
    fn prepare(&self, bytes: &[u8]) -> Option<Prepared> {
        Some(Box::new(Lz4Dictionary::new(bytes)))
    }
}

fn hashed(dict: Option<&Dictionary>) -> Option<&Lz4Dictionary> {
    dict.and_then(Dictionary::prepared::<Lz4Dictionary>)
}

/// The room a compression of `len` bytes needs to be sure to fit: with it,
/// liblz4 takes its faster path, which checks no output bound.
fn bound(len: usize) -> usize {
    lz4_flex::block::get_maximum_output_size(len)
}

/// Compresses `value` into `out`, answering the size, or `None` if it does
/// not fit.
fn compress_into(value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
    if value.len() > LZ4_MAX_INPUT {
        return match dict {
            None => lz4_flex::block::compress_into(value, out).ok(),
            Some(d) => lz4_flex::block::compress_into_with_dict(value, out, &d.bytes).ok(),
        };
    }
    lz4::compress(value, out, hashed(dict))
}

/// Decompresses the block `body`, which decodes to at most `size` bytes;
/// answers them, or why the block is not one.
fn decompress(body: &[u8], size: usize, dict: Option<&Dictionary>) -> std::result::Result<Vec<u8>, String> {
    let bytes = dict.map(|d| &d.bytes[..]);
    if size > LZ4_MAX_INPUT {
        let mut out = vec![0u8; size];
        let n = match bytes {
            None => lz4_flex::block::decompress_into(body, &mut out),
            Some(b) => lz4_flex::block::decompress_into_with_dict(body, &mut out, b),
        }
        .map_err(|e| e.to_string())?;
        out.truncate(n);
        return Ok(out);
    }
    lz4::decompress(body, size, hashed(dict)).map_err(|at| {
        format!(
            "the lz4 block ({} bytes) is malformed or decodes to more than {size} bytes; decoding stopped at its byte {at}",
            body.len(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbm::hash::comp_mode::RecordCompMode;
    use crate::dbm::hash::compress::Compression;
    use crate::error::ErrorKind;

    fn values() -> Vec<Vec<u8>> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..60)
            .map(|i| {
                let mut s = format!("{{\"id\":{i},\"items\":[");
                for _ in 0..(i % 20 + 1) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s += &format!(
                        "{{\"sku\":\"SKU-{:06}\",\"price\":{},\"status\":\"shipped\"}},",
                        x % 1_000_000,
                        x % 9999
                    );
                }
                s.into_bytes()
            })
            .collect()
    }

    fn dictionary() -> Dictionary {
        let text = "{\"sku\":\"SKU-000123\",\"price\":4500,\"status\":\"shipped\"},".repeat(80);
        Dictionary::new(RecordCompMode::Lz4, 2, text.as_bytes()[..4096].to_vec())
    }

    /// The block format is lz4_flex's, which wrote every lz4 value before
    /// liblz4 did: blocks of either decode with the other, with and without
    /// a dictionary, so files of the old code read now and the other way
    /// round.
    #[test]
    fn blocks_decode_with_lz4_flex_and_the_other_way_round() {
        let dict = dictionary();
        for value in values() {
            let mut out = vec![0u8; bound(value.len())];
            let n = compress_into(&value, &mut out, None).unwrap();
            assert_eq!(lz4_flex::block::decompress(&out[..n], value.len()).unwrap(), value);
            let n = compress_into(&value, &mut out, Some(&dict)).unwrap();
            let flex = lz4_flex::block::decompress_with_dict(&out[..n], value.len(), &dict.bytes).unwrap();
            assert_eq!(flex, value);
            let old = lz4_flex::block::compress(&value);
            assert_eq!(decompress(&old, value.len(), None).unwrap(), value);
            let old = lz4_flex::block::compress_with_dict(&value, &dict.bytes);
            assert_eq!(decompress(&old, value.len(), Some(&dict)).unwrap(), value);
        }
    }

    /// A damaged lz4 value (bits flipped, bytes cut off or added, garbage in
    /// place of the block, its size field changed) decodes to something or
    /// is a broken-data error naming the record and the lz4 block; it never
    /// panics (and liblz4's checked decoder never reads or writes outside
    /// its buffers: this test also ran clean under valgrind's memcheck).
    #[test]
    fn damaged_blocks_are_broken_data_never_a_panic() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut errors, mut tries) = (0, 0);
        for with_dict in [false, true] {
            let c = Compression::new(RecordCompMode::Lz4, true).unwrap();
            if with_dict {
                assert!(c.set_dictionary(dictionary()));
            }
            for value in values() {
                let stored = c.encode(&value);
                if stored[0] == 0 {
                    continue; // stored raw: too short to gain
                }
                for round in 0..200 {
                    let mut bad = stored.clone();
                    let at = 1 + next() as usize % (bad.len() - 1);
                    match round % 5 {
                        0 => bad[at] ^= 1 << (next() % 8),
                        1 => bad.truncate(at),
                        2 => bad.extend((0..1 + next() % 40).map(|_| next() as u8)),
                        3 => bad[at..].iter_mut().for_each(|b| *b = next() as u8),
                        _ => bad[1] = bad[1].wrapping_add(1 + next() as u8 % 8),
                    }
                    tries += 1;
                    if let Err(e) = c.decode(77, &bad) {
                        assert_eq!(e.kind(), ErrorKind::BrokenData, "{e}");
                        assert!(e.to_string().contains("the record at offset 77 is broken"), "{e}");
                        errors += 1;
                    }
                }
            }
        }
        assert!(errors > tries / 2, "{errors} of {tries} damaged values refused");
        let c = Compression::new(RecordCompMode::Lz4, true).unwrap();
        let mut garbage = vec![1u8, 0x80, 0x08];
        garbage.extend([0xFFu8; 64]);
        let e = c.decode(9, &garbage).unwrap_err();
        assert!(e.to_string().contains("the lz4 block (64 bytes) is malformed"), "{e}");
    }
}
