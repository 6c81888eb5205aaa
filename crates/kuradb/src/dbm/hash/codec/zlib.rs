//! The zlib mode: a raw DEFLATE stream (the record's CRC-32 covers it, so
//! zlib's own checksum is left out) at level 6, with the file's dictionary
//! as its preset dictionary, on flate2's zlib-rs backend.

use std::cell::RefCell;

use super::{decode_sized, Codec};
use crate::dbm::hash::dictionary::Dictionary;

/// The zlib codec, the row of mode zlib in `MODES`.
pub(crate) struct Zlib;

thread_local! {
    static DEFLATE: RefCell<flate2::Compress> =
        RefCell::new(flate2::Compress::new(flate2::Compression::new(6), false));
    static INFLATE: RefCell<flate2::Decompress> = RefCell::new(flate2::Decompress::new(false));
}

/// The most bytes a raw DEFLATE stream of `len` bytes takes: stored
/// blocks of at most 65,535 bytes with 5 bytes of header each, and slack for
/// the final block's bits.
fn deflate_bound(len: usize) -> usize {
    len + 5 * (len / 65_535 + 1) + 64
}

impl Codec for Zlib {
    /// DEFLATE's bound, so that every stream ends in one call: zlib-rs can
    /// panic on incompressible data left waiting for room in its pending
    /// buffer.
    fn room(&self, len: usize, _at: usize) -> usize {
        deflate_bound(len)
    }

    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
        DEFLATE.with_borrow_mut(|c| {
            c.reset();
            if let Some(d) = dict {
                c.set_dictionary(&d.bytes).ok()?;
            }
            match c.compress(value, out, flate2::FlushCompress::Finish) {
                Ok(flate2::Status::StreamEnd) => Some(c.total_out() as usize),
                _ => None,
            }
        })
    }

    fn decompress(&self, body: &[u8], size: usize, dict: Option<&Dictionary>) -> Result<Vec<u8>, String> {
        decode_sized(size, |out| {
            INFLATE.with_borrow_mut(|d| {
                d.reset(false);
                if let Some(dict) = dict {
                    d.set_dictionary(&dict.bytes).map_err(|e| e.to_string())?;
                }
                match d.decompress(body, out, flate2::FlushDecompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => Ok(d.total_out() as usize),
                    Ok(_) => Err("the stream is cut short".into()),
                    Err(e) => Err(e.to_string()),
                }
            })
        })
    }
}
