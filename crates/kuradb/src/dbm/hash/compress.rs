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
//! checksum; zlib is a raw DEFLATE stream (the record's CRC-32 covers it).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx, DParameter, FrameFormat, ResetDirective};

use super::comp_mode::RecordCompMode;
use super::dictionary::{Dictionary, Sample, ZSTD_LEVEL};
use super::record::MAX_ITEM;
use crate::dbm::varint::{get_varint, put_varint};
use crate::error::{Error, ErrorKind, Result};

const RAW: u8 = 0;
const PLAIN: u8 = 1;
/// A compressed value claims at most this many times its stored size: a
/// damaged size field must not make a read allocate gigabytes.
const MAX_RATIO: u64 = 1 << 16;

thread_local! {
    static ZSTD_C: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
    static ZSTD_D: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
    static DEFLATE: RefCell<flate2::Compress> =
        RefCell::new(flate2::Compress::new(flate2::Compression::new(6), false));
    static INFLATE: RefCell<flate2::Decompress> = RefCell::new(flate2::Decompress::new(false));
}

/// The compression of a file's values: its mode, its dictionary if it has
/// one, and the sample a dictionary is being trained from.
pub(super) struct Compression {
    pub(super) mode: RecordCompMode,
    /// Set once: at open from the file, at training, or by a rebuild or
    /// restore carrying one over.
    dictionary: OnceLock<Dictionary>,
    /// Whether values are still sampled for a dictionary (zstd, none yet).
    sampling: AtomicBool,
    sample: Mutex<Sample>,
}

impl Compression {
    /// The compression of `mode`; `None` for mode none.
    pub(super) fn new(mode: RecordCompMode) -> Option<Compression> {
        mode.is_on().then(|| Compression {
            mode,
            dictionary: OnceLock::new(),
            sampling: AtomicBool::new(mode == RecordCompMode::Zstd),
            sample: Mutex::new(Sample::default()),
        })
    }

    /// The dictionary values are compressed with, if any.
    pub(super) fn dictionary(&self) -> Option<&Dictionary> {
        self.dictionary.get()
    }

    /// Makes `dict` the one values are compressed with from now on; a
    /// compression that has one already keeps it.
    pub(super) fn set_dictionary(&self, dict: Dictionary) {
        self.sampling.store(false, Ordering::Release);
        let _ = self.dictionary.set(dict);
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
        Some(std::mem::take(&mut *sample))
    }

    /// The stored form of `value`.
    pub(super) fn encode(&self, value: &[u8]) -> Result<Vec<u8>> {
        let dict = self.dictionary.get();
        let mut out = Vec::with_capacity(value.len() + 1);
        out.push(dict.map_or(PLAIN, |d| d.number));
        put_varint(&mut out, value.len() as u64);
        let at = out.len();
        // Room for no more than the value itself, a longer result being
        // stored raw; but LZ4 refuses to start with less than its bound.
        if value.len() > at {
            let room = match self.mode {
                RecordCompMode::Lz4 => lz4_flex::block::get_maximum_output_size(value.len()),
                _ => value.len() + 1 - at,
            };
            out.resize(at + room, 0);
            match self.compress_into(value, &mut out[at..], dict) {
                Some(n) if at + n <= value.len() => {
                    out.truncate(at + n);
                    return Ok(out);
                }
                _ => {}
            }
        }
        out.clear();
        out.push(RAW);
        out.extend_from_slice(value);
        Ok(out)
    }

    /// Compresses `value` into `out`, answering the size, or `None` if it
    /// does not fit.
    fn compress_into(&self, value: &[u8], out: &mut [u8], dict: Option<&Dictionary>) -> Option<usize> {
        match self.mode {
            RecordCompMode::None => None,
            RecordCompMode::Lz4 => lz4_flex::block::compress_into(value, out).ok(),
            RecordCompMode::Zlib => DEFLATE.with_borrow_mut(|c| {
                c.reset();
                match c.compress(value, out, flate2::FlushCompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => Some(c.total_out() as usize),
                    _ => None,
                }
            }),
            RecordCompMode::Zstd => ZSTD_C.with_borrow_mut(|c| {
                let n = zstd_compress(c, value, out, dict);
                // No reference to the dictionary stays behind in the context.
                let _ = c.reset(ResetDirective::SessionAndParameters);
                n
            }),
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
        let size = get_varint(rest, &mut pos).ok_or_else(|| broken("has a bad size field".into()))?;
        let body = &rest[pos..];
        if size > MAX_ITEM || size > (body.len() as u64).saturating_mul(MAX_RATIO) {
            return Err(broken(format!("claims an impossible size {size}")));
        }
        let mut out = vec![0u8; size as usize];
        let n = self
            .decompress(body, &mut out, dict)
            .map_err(|why| broken(format!("does not decompress: {why}")))?;
        if n != out.len() {
            return Err(broken(format!("decompresses to {n} bytes, not the {size} it claims")));
        }
        Ok(std::borrow::Cow::Owned(out))
    }

    /// Decompresses `body` into `out`, answering the size.
    fn decompress(
        &self,
        body: &[u8],
        out: &mut [u8],
        dict: Option<&Dictionary>,
    ) -> std::result::Result<usize, String> {
        match self.mode {
            RecordCompMode::None => Err("the file is not compressed".into()),
            RecordCompMode::Lz4 => lz4_flex::block::decompress_into(body, out).map_err(|e| e.to_string()),
            RecordCompMode::Zlib => INFLATE.with_borrow_mut(|d| {
                d.reset(false);
                match d.decompress(body, out, flate2::FlushDecompress::Finish) {
                    Ok(flate2::Status::StreamEnd) => Ok(d.total_out() as usize),
                    Ok(_) => Err("the stream is cut short".into()),
                    Err(e) => Err(e.to_string()),
                }
            }),
            RecordCompMode::Zstd => ZSTD_D.with_borrow_mut(|d| {
                let n = zstd_decompress(d, body, out, dict);
                let _ = d.reset(ResetDirective::SessionAndParameters);
                n
            }),
        }
    }
}

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
    if let Some(d) = dict {
        c.ref_cdict(&d.cdict).ok()?;
    }
    c.compress2(out, value).ok()
}

fn zstd_decompress(
    d: &mut DCtx<'static>,
    body: &[u8],
    out: &mut [u8],
    dict: Option<&Dictionary>,
) -> std::result::Result<usize, String> {
    let name = |code: usize| zstd_safe::get_error_name(code).to_string();
    d.reset(ResetDirective::SessionAndParameters).map_err(name)?;
    d.set_parameter(DParameter::Format(FrameFormat::Magicless)).map_err(name)?;
    if let Some(dict) = dict {
        d.ref_ddict(&dict.ddict).map_err(name)?;
    }
    d.decompress(out, body).map_err(name)
}
