//! Record compression: the stored form of a value when the file's
//! `record_comp_mode` is not none.
//!
//! | bytes | field |
//! | --- | --- |
//! | 1 | flag: 0 = raw, 1 = compressed without a dictionary, 2-255 = compressed with the dictionary of that number |
//! | varint | (compressed only) the value's size |
//! | rest | the value, raw or compressed by the file's codec |
//!
//! A value whose compressed form (with its size) would not be shorter than
//! itself is stored raw, so incompressible data costs one byte a value. The
//! codecs' own framing is trimmed where the record already says it: zstd
//! frames are magicless and carry neither content size, dictionary id nor
//! checksum; zlib is a raw DEFLATE stream (the record's CRC-32 covers it);
//! lz4 is the block format (see `lz4.rs`); lzma is a raw LZMA2 stream
//! (see `sys/lzma.rs`).
//!
//! Every mode may have a dictionary (see `dictionary.rs`): zstd's own, and
//! the preset dictionaries of the lz4 block, DEFLATE and LZMA2 formats. The codecs'
//! states are kept per thread and reset between values, never made anew.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
#[cfg(feature = "zstd")]
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx, DParameter, FrameFormat, ResetDirective};

use super::comp_mode::RecordCompMode;
#[cfg(feature = "zstd")]
use super::dictionary::ZSTD_LEVEL;
use super::dictionary::{Dictionary, Sample};
#[cfg(feature = "lz4")]
use super::lz4;
use super::record::MAX_ITEM;
use crate::error::{Error, ErrorKind, Result};
#[cfg(feature = "lzma")]
use crate::sys::lzma;
use crate::varint::{leb128, MAX_LEN};

const RAW: u8 = 0;
const PLAIN: u8 = 1;
/// A compressed value claims at most this many times its stored size: a
/// damaged size field must not make a read allocate gigabytes.
const MAX_RATIO: u64 = 1 << 16;

#[cfg(feature = "zstd")]
thread_local! {
    static ZSTD_C: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    static ZSTD_D: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

#[cfg(feature = "zlib")]
thread_local! {
    static DEFLATE: RefCell<flate2::Compress> =
        RefCell::new(flate2::Compress::new(flate2::Compression::new(6), false));
    static INFLATE: RefCell<flate2::Decompress> = RefCell::new(flate2::Decompress::new(false));
}

thread_local! {
    /// The stored form of the value being written (see
    /// [`Compression::encode_with`]).
    static STORED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A thread's buffer for stored forms keeps at most this much room once a
/// larger value has gone through it.
const KEPT_STORED: usize = 1 << 20;

/// The compression of a file's values: its mode, its dictionary if it has
/// one, and the sample a dictionary is being trained from.
pub(super) struct Compression {
    pub(super) mode: RecordCompMode,
    /// Whether the file may hold a dictionary: zstd files always, lz4, zlib
    /// and lzma ones from format version 3 (see `header.rs`), which readers
    /// that knew no preset dictionary refuse.
    dictionaries: bool,
    /// Set once: at open from the file, at training, or by a rebuild or
    /// restore carrying one over.
    dictionary: OnceLock<Dictionary>,
    /// Whether values are still sampled for a dictionary (the file may hold
    /// one and has none yet).
    sampling: AtomicBool,
    sample: Mutex<Sample>,
}

impl Compression {
    /// The compression of `mode`; `None` for mode none. `presets` says
    /// whether an lz4, zlib or lzma file may hold a dictionary (a zstd file always
    /// may).
    pub(super) fn new(mode: RecordCompMode, presets: bool) -> Option<Compression> {
        let dictionaries = mode == RecordCompMode::Zstd || presets;
        mode.is_on().then(|| Compression {
            mode,
            dictionaries,
            dictionary: OnceLock::new(),
            sampling: AtomicBool::new(dictionaries),
            sample: Mutex::new(Sample::new(mode)),
        })
    }

    /// Whether the file may hold a dictionary.
    pub(super) fn takes_dictionary(&self) -> bool {
        self.dictionaries
    }

    /// The dictionary values are compressed with, if any.
    pub(super) fn dictionary(&self) -> Option<&Dictionary> {
        self.dictionary.get()
    }

    /// Makes `dict` the one values are compressed with from now on; a
    /// compression that has one already keeps it, and one of a file that
    /// takes none, or of another mode, is refused.
    pub(super) fn set_dictionary(&self, dict: Dictionary) -> bool {
        if !self.dictionaries || dict.mode != self.mode {
            return false;
        }
        self.sampling.store(false, Ordering::Release);
        self.dictionary.set(dict).is_ok()
    }

    /// Stops sampling, for good: training failed or is not wanted.
    pub(super) fn stop_sampling(&self) {
        self.sampling.store(false, Ordering::Release);
    }

    /// Samples `value` while a dictionary is wanted; answers the sample once
    /// it is large enough to train from (once: sampling stops then).
    pub(super) fn sample(&self, value: &[u8]) -> Option<Sample> {
        if !self.sampling.load(Ordering::Relaxed) {
            return None;
        }
        let mut sample = self.sample.lock();
        if !sample.add(value) || !self.sampling.swap(false, Ordering::AcqRel) {
            return None;
        }
        Some(std::mem::replace(&mut *sample, Sample::new(self.mode)))
    }

    /// The stored form of `value`, owned.
    pub(super) fn encode(&self, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let n = self.encode_into(value, &mut out);
        out.truncate(n);
        out
    }

    /// Calls `f` with the stored form of `value`, built in a buffer kept
    /// per thread: a write allocates nothing and zeroes nothing once the
    /// buffer has grown (it used to allocate and zero the codec's bound at
    /// every value, then free it).
    pub(super) fn encode_with<R>(&self, value: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        STORED.with(|cell| match cell.try_borrow_mut() {
            Ok(mut out) => {
                let n = self.encode_into(value, &mut out);
                let r = f(&out[..n]);
                // A large value's room is not kept for the small ones after.
                if out.len() > KEPT_STORED {
                    *out = Vec::new();
                }
                r
            }
            // Re-entered from `f` (a database written from inside another
            // one's write): a buffer of its own.
            Err(_) => f(&self.encode(value)),
        })
    }

    /// Writes the stored form of `value` at the start of `out`, answering
    /// its length. `out` keeps its length between calls (bytes past the
    /// answer are leftovers), so that its room is zeroed once, when it
    /// grows, not at every value.
    fn encode_into(&self, value: &[u8], out: &mut Vec<u8>) -> usize {
        let dict = self.dictionary.get();
        // Room for no more than the value itself, a longer result being
        // stored raw; but LZ4 gets its bound (liblz4's faster path, and
        // lz4_flex, for values over 2 GiB, refuses to start with less), and
        // DEFLATE gets its own bound, so that every stream ends in one call
        // (zlib-rs 0.6 can panic on incompressible data left waiting for
        // room in its pending buffer). The raw form fits too.
        let room = match self.mode {
            #[cfg(feature = "lz4")]
            RecordCompMode::Lz4 => lz4::bound(value.len()),
            #[cfg(feature = "zlib")]
            RecordCompMode::Zlib => deflate_bound(value.len()),
            _ => value.len() + 1,
        };
        let need = MAX_LEN + 1 + room;
        if out.len() < need {
            out.resize(need, 0);
        }
        out[0] = dict.map_or(PLAIN, |d| d.number);
        let at = 1 + leb128::write(&mut out[1..], value.len() as u64);
        if value.len() > at {
            let room = if self.mode == RecordCompMode::Zstd { value.len() + 1 - at } else { room };
            match self.compress_into(value, &mut out[at..at + room], dict) {
                Some(n) if at + n <= value.len() => return at + n,
                _ => {}
            }
        }
        out[0] = RAW;
        out[1..1 + value.len()].copy_from_slice(value);
        1 + value.len()
    }

    /// Compresses `value` into `out`, answering the size, or `None` if it
    /// does not fit (or, in a build without the mode's codec, which no file
    /// opens, always: the value is stored raw).
    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
        match self.mode {
            RecordCompMode::None => None,
            #[cfg(feature = "lz4")]
            RecordCompMode::Lz4 => lz4::compress_into(value, out, dict),
            #[cfg(feature = "zlib")]
            RecordCompMode::Zlib => DEFLATE.with_borrow_mut(|c| {
                c.reset();
                if let Some(d) = dict {
                    c.set_dictionary(&d.bytes).ok()?;
                }
                match c.compress(value, out, flate2::FlushCompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => Some(c.total_out() as usize),
                    _ => None,
                }
            }),
            #[cfg(feature = "lzma")]
            RecordCompMode::Lzma => lzma::compress(value, out, dict.map_or(&[], |d| &d.bytes)),
            #[cfg(feature = "zstd")]
            RecordCompMode::Zstd => ZSTD_C.with_borrow_mut(|c| {
                let n = zstd_compress(c, value, out, dict);
                // No reference to the dictionary stays behind in the context.
                let _ = c.reset(ResetDirective::SessionAndParameters);
                n
            }),
            #[cfg(not(all(feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma")))]
            _ => {
                let _ = (value, out, dict);
                None
            }
        }
    }

    /// The value `stored` holds, the value part of the record at `offset`.
    pub(super) fn decode<'a>(&self, offset: u64, stored: &'a [u8]) -> Result<std::borrow::Cow<'a, [u8]>> {
        let broken = |why: String| {
            Error::new(
                ErrorKind::BrokenData,
                format!("the record at offset {offset} is broken: its {} value {why}", self.mode),
            )
        };
        let (&flag, rest) = stored.split_first().ok_or_else(|| broken("has no flag byte".into()))?;
        if flag == RAW {
            return Ok(std::borrow::Cow::Borrowed(rest));
        }
        let dict = match flag {
            PLAIN => None,
            n => match self.dictionary.get() {
                Some(d) if d.number == n => Some(d),
                Some(d) => {
                    return Err(broken(format!(
                        "names dictionary {n}, but the file holds dictionary {}",
                        d.number
                    )))
                }
                None => return Err(broken(format!("names dictionary {n}, but the file holds none"))),
            },
        };
        let mut pos = 0;
        let size = leb128::decode(rest, &mut pos).map_err(|_| broken("has a bad size field".into()))?;
        let body = &rest[pos..];
        if size > MAX_ITEM || size > (body.len() as u64).saturating_mul(MAX_RATIO) {
            return Err(broken(format!("claims an impossible size {size}")));
        }
        let out = self
            .decompress(body, size as usize, dict)
            .map_err(|why| broken(format!("does not decompress: {why}")))?;
        if out.len() as u64 != size {
            return Err(broken(format!("decompresses to {} bytes, not the {size} it claims", out.len())));
        }
        Ok(std::borrow::Cow::Owned(out))
    }

    /// Decompresses `body`, which decodes to at most `size` bytes.
    fn decompress(
        &self,
        body: &[u8],
        size: usize,
        dict: Option<&Dictionary>,
    ) -> std::result::Result<Vec<u8>, String> {
        match self.mode {
            RecordCompMode::None => Err("the file is not compressed".into()),
            #[cfg(feature = "lz4")]
            RecordCompMode::Lz4 => lz4::decompress(body, size, dict),
            #[cfg(feature = "lzma")]
            RecordCompMode::Lzma => lzma::decompress(body, size, dict.map_or(&[], |d| &d.bytes)),
            #[cfg(feature = "zlib")]
            RecordCompMode::Zlib => decode_sized(size, |out| {
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
            }),
            #[cfg(feature = "zstd")]
            RecordCompMode::Zstd => decode_sized(size, |out| {
                ZSTD_D.with_borrow_mut(|d| {
                    let n = zstd_decompress(d, body, out, dict);
                    let _ = d.reset(ResetDirective::SessionAndParameters);
                    n
                })
            }),
            #[cfg(not(all(feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma")))]
            mode => {
                let _ = (body, size, dict);
                Err(Error::needs_feature(format!("the record compression mode {mode}"), mode.name())
                    .to_string())
            }
        }
    }
}

/// Runs `decode` into room for `size` bytes; answers the bytes it wrote.
#[cfg(any(feature = "zstd", feature = "zlib"))]
fn decode_sized(
    size: usize,
    decode: impl FnOnce(&mut [u8]) -> std::result::Result<usize, String>,
) -> std::result::Result<Vec<u8>, String> {
    let mut out = vec![0u8; size];
    let n = decode(&mut out)?;
    out.truncate(n);
    Ok(out)
}

/// The most bytes a raw DEFLATE stream of `len` bytes takes: stored
/// blocks of at most 65,535 bytes with 5 bytes of header each, and slack for
/// the final block's bits.
#[cfg(feature = "zlib")]
fn deflate_bound(len: usize) -> usize {
    len + 5 * (len / 65_535 + 1) + 64
}

#[cfg(feature = "zstd")]
fn zstd_compress(
    c: &mut CCtx<'static>,
    value: &[u8],
    out: &mut [u8],
    dict: Option<&Dictionary>,
) -> Option<usize> {
    c.reset(ResetDirective::SessionAndParameters).ok()?;
    c.set_parameter(CParameter::CompressionLevel(ZSTD_LEVEL)).ok()?;
    c.set_parameter(CParameter::Format(FrameFormat::Magicless)).ok()?;
    c.set_parameter(CParameter::ContentSizeFlag(false)).ok()?;
    c.set_parameter(CParameter::ChecksumFlag(false)).ok()?;
    c.set_parameter(CParameter::DictIdFlag(false)).ok()?;
    if let Some((cdict, _)) = dict.and_then(|d| d.zstd.as_ref()) {
        c.ref_cdict(cdict).ok()?;
    }
    c.compress2(out, value).ok()
}

#[cfg(feature = "zstd")]
fn zstd_decompress(
    d: &mut DCtx<'static>,
    body: &[u8],
    out: &mut [u8],
    dict: Option<&Dictionary>,
) -> std::result::Result<usize, String> {
    let name = |code: usize| zstd_safe::get_error_name(code).to_string();
    d.reset(ResetDirective::SessionAndParameters).map_err(name)?;
    d.set_parameter(DParameter::Format(FrameFormat::Magicless)).map_err(name)?;
    if let Some((_, ddict)) = dict.and_then(|d| d.zstd.as_ref()) {
        d.ref_ddict(ddict).map_err(name)?;
    }
    d.decompress(out, body).map_err(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbm::hash::dictionary::preset_size;

    /// Every mode, with and without a dictionary, gives back what it took,
    /// for values of every length up to a few KiB, compressible or not
    /// (incompressible ones once made zlib-rs panic for want of room).
    #[test]
    fn values_of_every_length_round_trip_in_every_mode() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let noise: Vec<u8> = (0..6000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let text = "{\"sku\":\"SKU-000123\",\"price\":4500,\"status\":\"shipped\"},".repeat(120).into_bytes();
        for mode in RecordCompMode::COMPRESSING.into_iter().filter(|m| m.is_built()) {
            for with_dict in [false, true] {
                let c = Compression::new(mode, true).unwrap();
                if with_dict {
                    let bytes = text[..preset_size(mode).min(text.len())].to_vec();
                    assert!(c.set_dictionary(Dictionary::new(mode, 2, bytes)));
                }
                let lengths = (0..6000).step_by(37).map(|n| (0, n));
                // Many different incompressible values in a row, through
                // the same thread's codec state.
                let runs = (0..200).map(|i| (i * 29 % 5000, 300));
                for (at, len) in lengths.chain(runs) {
                    for source in [&noise, &text] {
                        let value = &source[at.min(source.len())..(at + len).min(source.len())];
                        let stored = c.encode(value);
                        assert!(stored.len() <= value.len() + 1, "{mode} {len}");
                        let back = c.decode(0, &stored).unwrap();
                        assert_eq!(&back[..], value, "{mode} dict {with_dict} len {len}");
                    }
                }
            }
        }
    }

    /// The stored form built in the thread's buffer is the one a fresh
    /// buffer gets, value after value of every size and kind, although that
    /// buffer keeps its length, and the bytes of longer values before, from
    /// one value to the next; a stored form asked for while the buffer is in
    /// use (from inside the function) gets a buffer of its own.
    #[test]
    fn stored_forms_from_the_thread_buffer_are_fresh_ones() {
        let text = "{\"sku\":\"SKU-000123\",\"status\":\"shipped\"},".repeat(150).into_bytes();
        let noise: Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for mode in RecordCompMode::COMPRESSING.into_iter().filter(|m| m.is_built()) {
            let c = Compression::new(mode, true).unwrap();
            for len in [5000, 3, 1200, 0, 64, 4999, 17, 2500] {
                for source in [&text, &noise] {
                    let value = &source[..len.min(source.len())];
                    let stored = c.encode_with(value, <[u8]>::to_vec);
                    assert_eq!(stored, c.encode(value), "{mode} {len}");
                    assert_eq!(&c.decode(0, &stored).unwrap()[..], value, "{mode} {len}");
                }
            }
            let (a, b) = (&text[..900], &noise[..700]);
            let (sa, sb) = c.encode_with(a, |sa| c.encode_with(b, |sb| (sa.to_vec(), sb.to_vec())));
            assert_eq!(&c.decode(0, &sa).unwrap()[..], a);
            assert_eq!(&c.decode(0, &sb).unwrap()[..], b);
        }
    }
}
