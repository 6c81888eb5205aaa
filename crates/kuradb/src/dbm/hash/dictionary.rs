//! The zstd dictionary of a compressed file: trained from the file's own
//! values, so that values of a few hundred bytes, which share little with
//! themselves but much with each other (field names, common strings),
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
//! # When a dictionary is trained
//! Values of at most [`SAMPLE_MAX`] bytes are sampled as they are written
//! until [`TRAIN_BYTES`] of them have been seen; then a dictionary of at most
//! [`DICT_SIZE`] bytes is trained from them (once: if training fails, for
//! values too few or too alike, the file goes on without one until a
//! rebuild tries again). A rebuild samples the same amount from the records
//! it copies.

use crate::dbm::hash::record;
use crate::error::{Error, ErrorKind, Result};
use zstd::zstd_safe::{CDict, DDict};

/// The size of the sample of values a dictionary is trained from.
pub(super) const TRAIN_BYTES: usize = 1 << 20;
/// Larger values are not sampled: they compress well on their own, and
/// would crowd the small ones the dictionary is for out of the sample.
pub(super) const SAMPLE_MAX: usize = 16 << 10;
/// The largest dictionary trained: a sixty-fourth of the sample.
pub(super) const DICT_SIZE: usize = 16 << 10;
/// The zstd level of every compression, with or without a dictionary.
pub(super) const ZSTD_LEVEL: i32 = 3;
/// The numbers of dictionaries, as the flag byte of a value names them (0 and
/// 1 mean raw and compressed without a dictionary).
pub(super) const FIRST_NUMBER: u8 = 2;

/// A trained dictionary, prepared for compressing and decompressing.
pub(super) struct Dictionary {
    pub(super) number: u8,
    pub(super) bytes: Vec<u8>,
    pub(super) cdict: CDict<'static>,
    pub(super) ddict: DDict<'static>,
}

impl Dictionary {
    /// Prepares the dictionary `bytes` numbered `number`.
    pub(super) fn new(number: u8, bytes: Vec<u8>) -> Dictionary {
        let cdict = CDict::create(&bytes, ZSTD_LEVEL);
        let ddict = DDict::create(&bytes);
        Dictionary { number, bytes, cdict, ddict }
    }

    /// Trains a dictionary numbered `number` from `sample`; `None` if zstd
    /// finds the sample unfit (too few or too uniform values).
    pub(super) fn train(number: u8, sample: &Sample) -> Option<Dictionary> {
        if sample.sizes.len() < 8 {
            return None;
        }
        let bytes = zstd::dict::from_continuous(&sample.data, &sample.sizes, DICT_SIZE).ok()?;
        Some(Dictionary::new(number, bytes))
    }

    /// The number of the dictionary trained after the one numbered `number`.
    pub(super) fn next_number(number: Option<u8>) -> u8 {
        match number {
            None | Some(u8::MAX) => FIRST_NUMBER,
            Some(n) => n.max(FIRST_NUMBER - 1) + 1,
        }
    }

    /// Reads the dictionary a record of the file holds: `head` is its
    /// parsed header, `buf` the record read from its start, `width` the
    /// file's offset width.
    pub(super) fn from_record(
        offset: u64,
        head: &record::Header,
        buf: &[u8],
        width: usize,
        path: &std::path::Path,
    ) -> Result<Dictionary> {
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
        if buf.len() < end || !record::crc_matches(head, buf, width) {
            return Err(broken("its checksum does not match"));
        }
        let key = &buf[head.header_size..head.header_size + head.key_size];
        let number = match key {
            [n] if *n >= FIRST_NUMBER => *n,
            _ => return Err(broken("it has no valid dictionary number")),
        };
        let bytes = buf[head.header_size + head.key_size..end].to_vec();
        // A dictionary zstd cannot load would fail every value: refuse it
        // here, naming it, rather than at each read.
        let check = zstd::zstd_safe::DCtx::create().load_dictionary(&bytes).is_ok() && !bytes.is_empty();
        if !check {
            return Err(broken("zstd cannot load it"));
        }
        Ok(Dictionary::new(number, bytes))
    }
}

/// Values sampled for training, end to end, with their sizes.
#[derive(Default)]
pub(super) struct Sample {
    pub(super) data: Vec<u8>,
    pub(super) sizes: Vec<usize>,
}

impl Sample {
    /// Adds `value` if it is one a dictionary serves; answers whether the
    /// sample is now large enough to train from.
    pub(super) fn add(&mut self, value: &[u8]) -> bool {
        if (8..=SAMPLE_MAX).contains(&value.len()) && self.data.len() < TRAIN_BYTES {
            self.data.extend_from_slice(value);
            self.sizes.push(value.len());
        }
        self.data.len() >= TRAIN_BYTES
    }
}
