//! The codecs of record compression, one file each, behind one trait.
//!
//! A codec turns a value into its compressed body and back, with the file's
//! dictionary if it has one; `compress.rs` does the rest (the flag byte, the
//! size field, storing raw what does not shrink) once for every mode. The
//! modes themselves, with what the file format says of each (header byte,
//! names, dictionary kind), are the rows of `comp_mode.rs`'s `MODES`.
//!
//! # Adding a mode
//! Write its codec as a file here (a unit struct implementing [`Codec`],
//! behind a Cargo feature named as the mode), then give the mode its
//! variant of `RecordCompMode` and its row in `MODES`, which names the
//! codec. Nothing else matches on the mode.

use std::any::Any;

use super::dictionary::Dictionary;

#[cfg(feature = "lz4")]
pub(super) mod lz4;
#[cfg(feature = "lzma")]
pub(super) mod lzma;
#[cfg(feature = "zlib")]
pub(super) mod zlib;
#[cfg(feature = "zstd")]
pub(super) mod zstd;

/// A dictionary in the form a codec works with, made once from its bytes
/// ([`Codec::prepare`]): zstd's digested tables, liblz4's hashed state.
pub(super) type Prepared = Box<dyn Any + Send + Sync>;

/// One compression mode's codec. Its states are kept per thread and reset
/// between values, never made anew; nothing of one value stays behind for
/// the next.
pub(super) trait Codec: Sync {
    /// The room [`Codec::compress_into`] gets for a value of `len` bytes
    /// whose body starts at byte `at` of the stored form: by default the
    /// value's own length and one, a longer body being stored raw anyway.
    fn room(&self, len: usize, at: usize) -> usize {
        let _ = at;
        len + 1
    }

    /// Compresses `value` into `out`, answering the body's size, or `None`
    /// if it does not fit.
    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize>;

    /// Decompresses `body`, which decodes to at most `size` bytes; answers
    /// them, or why the body is not one of this codec.
    fn decompress(&self, body: &[u8], size: usize, dict: Option<&Dictionary>) -> Result<Vec<u8>, String>;

    /// The form of the dictionary `bytes` this codec works with, if it
    /// keeps one beside the bytes.
    fn prepare(&self, bytes: &[u8]) -> Option<Prepared> {
        let _ = bytes;
        None
    }

    /// Why the dictionary `bytes`, read from a file, cannot serve this
    /// codec, if it cannot: refused at open, so that no read fails on it.
    fn check_dictionary(&self, bytes: &[u8]) -> Result<(), String> {
        let _ = bytes;
        Ok(())
    }
}

/// Runs `decode` into room for `size` bytes; answers the bytes it wrote.
#[cfg(any(feature = "zstd", feature = "zlib"))]
fn decode_sized(
    size: usize,
    decode: impl FnOnce(&mut [u8]) -> Result<usize, String>,
) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; size];
    let n = decode(&mut out)?;
    out.truncate(n);
    Ok(out)
}
