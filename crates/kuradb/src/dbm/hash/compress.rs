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
//! codecs (`codec/`, one file per mode) trim their own framing where the
//! record already says it.
//!
//! Every mode may have a dictionary (see `dictionary.rs`): zstd's own, and
//! the preset dictionaries of the lz4 block, DEFLATE and LZMA2 formats. The codecs'
//! states are kept per thread and reset between values, never made anew.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use super::codec::Codec;
use super::comp_mode::{DictionaryKind, RecordCompMode};
use super::dictionary::{Dictionary, Sample};
use super::record::MAX_ITEM;
use crate::error::{Error, ErrorKind, Result};
use crate::varint::{leb128, MAX_LEN};

const RAW: u8 = 0;
const PLAIN: u8 = 1;
/// A compressed value claims at most this many times its stored size: a
/// damaged size field must not make a read allocate gigabytes.
const MAX_RATIO: u64 = 1 << 16;

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
    /// The mode's codec; `None` in a build without it, which opens no file
    /// of the mode (values are then stored raw, and reads fail naming the
    /// feature).
    codec: Option<&'static dyn Codec>,
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
        let dictionaries = mode.spec().dictionary == DictionaryKind::Own || presets;
        mode.is_on().then(|| Compression {
            mode,
            codec: mode.spec().codec,
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
        // Room for the raw form, and for the codec's body however large it
        // may grow (the codec's room at its largest, with the head before it).
        let need = MAX_LEN + 1 + self.codec.map_or(0, |c| c.room(value.len(), 0)).max(value.len());
        if out.len() < need {
            out.resize(need, 0);
        }
        out[0] = dict.map_or(PLAIN, |d| d.number);
        let at = 1 + leb128::write(&mut out[1..], value.len() as u64);
        if let (Some(codec), true) = (self.codec, value.len() > at) {
            let room = codec.room(value.len(), at);
            match codec.compress_into(value, &mut out[at..at + room], dict) {
                Some(n) if at + n <= value.len() => return at + n,
                _ => {}
            }
        }
        out[0] = RAW;
        out[1..1 + value.len()].copy_from_slice(value);
        1 + value.len()
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
        match self.codec {
            Some(codec) => codec.decompress(body, size, dict),
            None => Err(Error::needs_feature(
                format!("the record compression mode {}", self.mode),
                self.mode.name(),
            )
            .to_string()),
        }
    }
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
        for mode in RecordCompMode::compressing().filter(|m| m.is_built()) {
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
        for mode in RecordCompMode::compressing().filter(|m| m.is_built()) {
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
