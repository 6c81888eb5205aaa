//! The compression dictionary of a compressed file: built from the file's
//! own values, so that values of a few hundred bytes, which share little
//! with themselves but much with each other (field names, common strings),
//! compress as well as large ones.
//!
//! A file holds at most one dictionary, in a record of its own kind
//! (`record::MAGIC_DICT`, never in a chain: its key is the dictionary's
//! number, its value the dictionary's bytes), which the header's second half
//! points at and a restore's scan finds by its magic. Values compressed
//! with it carry its number in their flag byte (see `compress.rs`); a
//! rebuild trains a new one with the next number into the new file, and
//! reads the old file's values with the old one.
//!
//! # What a dictionary holds
//! - zstd: a dictionary in zstd's own format (entropy tables, then content),
//!   trained by zstd's fastCover trainer with fixed parameters
//!   (`trainer`, `sys::zdict`).
//! - lz4, zlib and lzma: raw content, which their block, DEFLATE and LZMA2
//!   streams take as a preset dictionary (the bytes "before" each value, that matches may
//!   point into). It is the last [`preset_size`] bytes of a dictionary
//!   trained as for zstd: the trainer puts the segments most common in the
//!   sample last, where matches are cheapest to reach, and its entropy
//!   tables, at its head, stay out. Small on purpose: DEFLATE hashes the
//!   whole preset dictionary at every compression (lz4 hashes it once, see
//!   `lz4.rs`), and on JSON-like values 4 KiB gains nearly what 16 KiB does
//!   (see `docs/compression.md`).
//!
//! # When a dictionary is trained
//! Values of at most [`SAMPLE_MAX`] bytes are sampled as they are written
//! until [`TRAIN_BYTES`] of them have been seen ([`PRESET_TRAIN_BYTES`] for
//! lz4, zlib and lzma); then a dictionary of at most
//! [`DICT_SIZE`] bytes is trained from them (once: if the sample is unfit,
//! for values too few, too alike or that do not compress, the file goes on
//! without one until a rebuild tries again). A rebuild samples the same amount from the records
//! it copies.

use super::codec::Prepared;
use super::comp_mode::{DictionaryKind, RecordCompMode};
use super::header::Header;
use crate::dbm::hash::record;
use crate::error::{Error, ErrorKind, Result};
#[cfg(feature = "zstd")]
use crate::sys::zdict::{train_fast_cover, FastCover};

/// The size of the sample of values a zstd dictionary is trained from: 64
/// times the dictionary, where zstd's trainer has seen the segments worth
/// keeping.
pub(super) const TRAIN_BYTES: usize = 1 << 20;
/// The sample of an lz4, zlib or lzma dictionary, of which only the last few KiB
/// are kept ([`preset_size`]): a quarter of zstd's. A few KiB of dictionary
/// need no larger sample: on JSON-like values it gives the same sizes as
/// 1 MiB, trains in a quarter of the time the write that fills the sample
/// waits for, and fewer values are written before a dictionary serves them
/// (bench/results/2026-11-29-compression.md).
pub(super) const PRESET_TRAIN_BYTES: usize = 256 << 10;
/// How many bytes of values a dictionary of `mode` is trained from.
pub(super) fn train_bytes(mode: RecordCompMode) -> usize {
    match mode.spec().dictionary {
        DictionaryKind::Preset { .. } => PRESET_TRAIN_BYTES,
        DictionaryKind::Own | DictionaryKind::None => TRAIN_BYTES,
    }
}
/// Larger values are not sampled: they compress well on their own, and
/// would crowd the small ones the dictionary is for out of the sample.
pub(super) const SAMPLE_MAX: usize = 16 << 10;
/// The largest dictionary trained: a sixty-fourth of the sample.
#[cfg(feature = "zstd")]
pub(super) const DICT_SIZE: usize = 16 << 10;
/// The zstd level of every compression, with or without a dictionary.
#[cfg(feature = "zstd")]
pub(super) const ZSTD_LEVEL: i32 = 3;
/// The numbers of dictionaries, as the flag byte of a value names them (0 and
/// 1 mean raw and compressed without a dictionary).
pub(super) const FIRST_NUMBER: u8 = 2;
/// The size of an lz4, zlib or lzma dictionary: the content part of a trained
/// zstd dictionary's tail (see the module's doc), of the size the mode's row
/// in `MODES` gives. lz4 takes 4 KiB; zlib takes half of it:
/// DEFLATE hashes its preset dictionary again at every compression, and on
/// JSON-like values 2 KiB shrinks them nearly as much as 4 KiB, where lz4
/// hashes its dictionary once per thread. lzma takes 2 KiB too: its match
/// finder inserts every byte of the preset dictionary at every compression,
/// so each KiB costs time on every value, and on JSON-like values 4 KiB
/// gains little over 2 while a few hundred bytes lose much of the gain
/// (bench/results/2026-11-29-compression.md, "lzma").
#[cfg(any(feature = "zstd", test))]
pub(super) fn preset_size(mode: RecordCompMode) -> usize {
    match mode.spec().dictionary {
        DictionaryKind::Preset { size } => size,
        DictionaryKind::Own | DictionaryKind::None => 4 << 10,
    }
}
/// A trained zstd dictionary's head holds its entropy tables (a magic, an
/// id, a Huffman and three FSE tables): at most this many bytes, which the
/// content an lz4, zlib or lzma dictionary takes from its tail never reaches into.
#[cfg(feature = "zstd")]
const ZSTD_TABLES_MAX: usize = 1 << 10;
/// The trainer's parameters for `mode`: zstd's fastCover, once, where
/// `zstd::dict::from_continuous` (`ZDICT_trainFromBuffer`) trains five
/// times over (k from 50 to 2000) and compresses a quarter of the sample
/// with each result to pick one. On JSON-like values large segments do as
/// well as its search: 2000 bytes for a zstd dictionary (16 KiB, all of it
/// used), 1024 for the 4 KiB that lz4 and zlib take from a dictionary's
/// tail (more segments in those 4 KiB). Sizes and costs are in
/// bench/results/2026-11-29-compression.md.
#[cfg(feature = "zstd")]
fn trainer(mode: RecordCompMode) -> FastCover {
    let k = match mode.spec().dictionary {
        DictionaryKind::Preset { .. } => 1024,
        DictionaryKind::Own | DictionaryKind::None => 2000,
    };
    FastCover { k, d: 8, f: 18, accel: 1, level: ZSTD_LEVEL }
}
/// How much of a sample the compressibility test reads.
#[cfg(feature = "zstd")]
const PROBE_BYTES: usize = 256 << 10;
/// A sample whose probe lz4 shrinks by less than this fraction (in
/// 1/1024ths) gets no dictionary.
#[cfg(feature = "zstd")]
const MIN_SAVING: usize = 64;

/// Whether the values `data` holds, end to end, compress: a dictionary is
/// made of the substrings they share, so values that one lz4 pass over
/// their concatenation (which finds what they share within 64 KiB, and
/// what each repeats) cannot shrink by a sixteenth hold nothing a
/// dictionary could serve. Random or already compressed values are told
/// this way in well under a millisecond, where training took tens.
#[cfg(feature = "zstd")]
fn compressible(data: &[u8]) -> bool {
    let probe = &data[..data.len().min(PROBE_BYTES)];
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(probe.len())];
    // liblz4 where it is built; lz4_flex writes the same format otherwise.
    #[cfg(feature = "lz4")]
    let packed = crate::sys::lz4::compress(probe, &mut out, None);
    #[cfg(not(feature = "lz4"))]
    let packed = lz4_flex::block::compress_into(probe, &mut out).ok();
    let packed = packed.unwrap_or(probe.len());
    probe.len() - packed.min(probe.len()) >= probe.len() * MIN_SAVING / 1024
}

/// The largest preset dictionary a file may hold: lz4's window (zlib's is
/// half of it, and uses the last 32 KiB of a longer one).
const PRESET_MAX: usize = 64 << 10;

/// A trained dictionary, prepared for compressing and decompressing.
pub(super) struct Dictionary {
    /// The mode whose values it serves: its bytes mean nothing to another.
    pub(super) mode: RecordCompMode,
    pub(super) number: u8,
    pub(super) bytes: Vec<u8>,
    /// The form of `bytes` the mode's codec works with, made once, if it
    /// keeps one (zstd's digested tables, liblz4's hashed state).
    prepared: Option<Prepared>,
}

impl Dictionary {
    /// Prepares the dictionary `bytes` of `mode` numbered `number`.
    pub(super) fn new(mode: RecordCompMode, number: u8, bytes: Vec<u8>) -> Dictionary {
        let prepared = mode.spec().codec.and_then(|codec| codec.prepare(&bytes));
        Dictionary { mode, number, bytes, prepared }
    }

    /// The form the mode's codec made of the dictionary, as the codec's
    /// type `T`.
    #[cfg_attr(
        not(any(feature = "zstd", feature = "lz4")),
        expect(dead_code, reason = "only the zstd and lz4 codecs keep a prepared form")
    )]
    pub(super) fn prepared<T: 'static>(&self) -> Option<&T> {
        self.prepared.as_ref().and_then(|p| p.downcast_ref::<T>())
    }

    /// A copy, for a file that carries this one over (a restore, a rebuild
    /// whose sample is unfit).
    pub(super) fn duplicate(&self) -> Dictionary {
        Dictionary::new(self.mode, self.number, self.bytes.clone())
    }

    /// Trains a dictionary of `mode` numbered `number` from `sample`; `None`
    /// if the sample is unfit: too few values, values that do not compress
    /// (see [`compressible`]), or values zstd's trainer finds too uniform.
    /// Every mode's trainer is zstd's: a build without the `zstd` feature
    /// trains none, and its files go on without a dictionary.
    #[cfg(feature = "zstd")]
    pub(super) fn train(mode: RecordCompMode, number: u8, sample: &Sample) -> Option<Dictionary> {
        if sample.sizes.len() < 8 || !mode.is_on() || !compressible(&sample.data) {
            return None;
        }
        let mut bytes = train_fast_cover(&sample.data, &sample.sizes, DICT_SIZE, trainer(mode))?;
        if let DictionaryKind::Preset { .. } = mode.spec().dictionary {
            let content = bytes.len().checked_sub(ZSTD_TABLES_MAX).filter(|&n| n >= 256)?;
            bytes.drain(..bytes.len() - content.min(preset_size(mode)));
        }
        Some(Dictionary::new(mode, number, bytes))
    }

    /// No dictionary: a build without the `zstd` feature has no trainer.
    #[cfg(not(feature = "zstd"))]
    pub(super) fn train(_mode: RecordCompMode, _number: u8, _sample: &Sample) -> Option<Dictionary> {
        None
    }

    /// The number of the dictionary trained after the one numbered `number`.
    pub(super) fn next_number(number: Option<u8>) -> u8 {
        match number {
            None | Some(u8::MAX) => FIRST_NUMBER,
            Some(n) => n.max(FIRST_NUMBER - 1) + 1,
        }
    }

    /// Reads the dictionary a record of the file whose header is `file`
    /// holds: `head` is the record's parsed header, `buf` the record read
    /// from its start.
    pub(super) fn from_record(
        file: &Header,
        offset: u64,
        head: &record::Header,
        buf: &[u8],
        path: &std::path::Path,
    ) -> Result<Dictionary> {
        let mode = file.record_comp;
        let broken = |why: &str| {
            Error::new(
                ErrorKind::BrokenData,
                format!(
                    "the compression dictionary at offset {offset} of {} is broken: {why}",
                    path.display()
                ),
            )
        };
        if buf.first() != Some(&record::MAGIC_DICT) {
            return Err(broken("no dictionary record is there"));
        }
        let end = head.header_size + head.key_size + head.value_size;
        if buf.len() < end || !record::crc_matches(head, buf, file.width as usize, file.coverage) {
            return Err(broken("its checksum does not match"));
        }
        let key = &buf[head.header_size..head.header_size + head.key_size];
        let number = match key {
            [n] if *n >= FIRST_NUMBER => *n,
            _ => return Err(broken("it has no valid dictionary number")),
        };
        let bytes = buf[head.header_size + head.key_size..end].to_vec();
        // A dictionary the codec cannot load would fail every value: refuse
        // it here, naming it, rather than at each read.
        let spec = mode.spec();
        match spec.dictionary {
            DictionaryKind::None => return Err(broken("the file is not compressed")),
            _ if bytes.is_empty() => return Err(broken("it is empty")),
            DictionaryKind::Preset { .. } if bytes.len() > PRESET_MAX => {
                return Err(broken(&format!("it has {} bytes, more than {PRESET_MAX}", bytes.len())))
            }
            _ => {}
        }
        if let Some(codec) = spec.codec {
            codec.check_dictionary(&bytes).map_err(|why| broken(&why))?;
        }
        Ok(Dictionary::new(mode, number, bytes))
    }
}

/// Values sampled for training, end to end, with their sizes.
pub(super) struct Sample {
    pub(super) data: Vec<u8>,
    pub(super) sizes: Vec<usize>,
    /// How many bytes make it full.
    target: usize,
}

impl Sample {
    /// An empty sample for a dictionary of `mode`.
    pub(super) fn new(mode: RecordCompMode) -> Sample {
        Sample { data: Vec::new(), sizes: Vec::new(), target: train_bytes(mode) }
    }

    /// Adds `value` if it is one a dictionary serves; answers whether the
    /// sample is now large enough to train from.
    pub(super) fn add(&mut self, value: &[u8]) -> bool {
        if (8..=SAMPLE_MAX).contains(&value.len()) && self.data.len() < self.target {
            self.data.extend_from_slice(value);
            self.sizes.push(value.len());
        }
        self.data.len() >= self.target
    }
}

// Every mode's dictionary is trained by zstd's trainer: the tests train
// one of each mode.
#[cfg(all(test, feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma"))]
mod tests {
    use super::*;

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// A full sample (zstd's, 1 MiB) of values of 200 to 2000 bytes,
    /// JSON-like or random.
    fn sample(random: bool) -> Sample {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        let mut sample = Sample::new(RecordCompMode::Zstd);
        let mut i = 0u64;
        loop {
            let len = 200 + next() as usize % 1800;
            let value: Vec<u8> = if random {
                (0..len).map(|_| next() as u8).collect()
            } else {
                let mut s = format!("{{\"id\":{i},\"user\":\"user{}\",\"items\":[", next() % 50_000);
                while s.len() + 80 < len {
                    let status = ["shipped", "pending", "returned"][next() as usize % 3];
                    s += &format!(
                        "{{\"sku\":\"SKU-{:06}\",\"price\":{},\"status\":\"{status}\"}},",
                        next() % 1_000_000,
                        next() % 100_000
                    );
                }
                (s + "]}").into_bytes()
            };
            i += 1;
            if sample.add(&value) {
                return sample;
            }
        }
    }

    /// Random values make no dictionary in any mode, and are told by the
    /// lz4 probe, before the trainer runs; JSON-like ones pass it.
    #[test]
    fn random_values_train_no_dictionary() {
        let random = sample(true);
        assert!(!compressible(&random.data));
        assert!(compressible(&sample(false).data));
        for mode in RecordCompMode::compressing() {
            assert!(Dictionary::train(mode, FIRST_NUMBER, &random).is_none(), "{mode}");
        }
    }

    /// A JSON-like sample still trains, in every mode, a dictionary of the
    /// mode's size that takes a large share off the values compressed with
    /// it (by the codec, as the file stores them).
    #[test]
    fn a_compressible_sample_trains_a_dictionary_that_shrinks_values() {
        use super::super::compress::Compression;
        let sample = sample(false);
        let mut at = 0;
        let values: Vec<&[u8]> = sample
            .sizes
            .iter()
            .take(300)
            .map(|&n| {
                at += n;
                &sample.data[at - n..at]
            })
            .collect();
        let given: usize = values.iter().map(|v| v.len()).sum();
        for mode in RecordCompMode::compressing() {
            let dict = Dictionary::train(mode, FIRST_NUMBER, &sample).expect("a dictionary");
            let limit = match mode.spec().dictionary {
                DictionaryKind::Preset { .. } => preset_size(mode),
                _ => DICT_SIZE,
            };
            assert!(dict.bytes.len() > limit / 2 && dict.bytes.len() <= limit, "{mode}");
            let (plain, with) =
                (Compression::new(mode, true).unwrap(), Compression::new(mode, true).unwrap());
            assert!(with.set_dictionary(dict));
            let stored = |c: &Compression| values.iter().map(|v| c.encode(v).len()).sum::<usize>();
            let (without, with) = (stored(&plain), stored(&with));
            // A dictionary must take a fifth off at least: the trainer with
            // fixed parameters takes off about as much as the search did.
            assert!(with * 10 < without * 8, "{mode}: {with} with, {without} without, of {given}");
        }
    }
}
