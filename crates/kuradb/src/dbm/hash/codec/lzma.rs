//! The lzma mode: a raw LZMA2 stream at level 6 (see `sys/lzma.rs`), with
//! the file's dictionary as its preset dictionary.

use super::Codec;
use crate::dbm::hash::dictionary::Dictionary;
use crate::sys::lzma;

/// The lzma codec, the row of mode lzma in `MODES`.
pub(crate) struct Lzma;

impl Codec for Lzma {
    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
        lzma::compress(value, out, dict.map_or(&[], |d| &d.bytes))
    }

    fn decompress(&self, body: &[u8], size: usize, dict: Option<&Dictionary>) -> Result<Vec<u8>, String> {
        lzma::decompress(body, size, dict.map_or(&[], |d| &d.bytes))
    }
}
