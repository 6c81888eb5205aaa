//! The [`Builder`]: lays records down in key order with their skip
//! pointers, then the index and the header.

use std::path::{Path, PathBuf};

use super::UpperIndex;
use crate::dbm::skip::format::{encode_offset, encode_record, level_of, stride, Header, HEADER_SIZE};
use crate::error::{Error, ErrorKind, Result};
use crate::file::File;

/// Bytes the builder gathers before each write; a multiple of any block size.
const WRITE_CHUNK: usize = 1 << 20;

/// Writes a new file of records given in key order.
pub(crate) struct Builder {
    file: Box<dyn File>,
    path: PathBuf,
    step: u64,
    max_level: u8,
    width: usize,
    /// Bytes not yet written, starting at file offset `buf_start`.
    buf: Vec<u8>,
    buf_start: u64,
    count: u64,
    data_size: u64,
    /// For each level, where the last record that has a pointer of that level
    /// keeps it, waiting for the record it points to.
    waiting: Vec<Option<u64>>,
    /// Pointers whose bytes were written before their target was known.
    patches: Vec<(u64, u64)>,
    index: UpperIndex,
    index_cap: usize,
    last_key: Vec<u8>,
    padding: bool,
}

impl Builder {
    /// Starts a file in `file` (empty, opened for writing).
    pub(crate) fn new(
        file: Box<dyn File>,
        path: &Path,
        step: u32,
        max_level: u8,
        width: u8,
        index_cap: usize,
        padding: bool,
    ) -> Builder {
        let step = u64::from(step);
        Builder {
            file,
            path: path.to_path_buf(),
            step,
            max_level,
            width: usize::from(width),
            buf: Vec::with_capacity(WRITE_CHUNK + 4096),
            buf_start: HEADER_SIZE,
            count: 0,
            data_size: 0,
            waiting: vec![None; usize::from(max_level) + 1],
            patches: Vec::new(),
            index: UpperIndex::new(1, step),
            index_cap: index_cap.max(1),
            last_key: Vec::new(),
            padding,
        }
    }

    fn offset_limit(&self) -> u64 {
        if self.width >= 8 {
            u64::MAX
        } else {
            1u64 << (8 * self.width)
        }
    }

    /// Adds the next record; its key must not be below the last one's.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.count > 0 && key < self.last_key.as_slice() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "records reach the skip database's builder out of order: {} after {}",
                    crate::dbm::show_key(key),
                    crate::dbm::show_key(&self.last_key)
                ),
            ));
        }
        let offset = self.buf_start + self.buf.len() as u64;
        if offset >= self.offset_limit() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "offset_width {} cannot address the {offset}th byte of {}: rebuild with a wider offset_width",
                    self.width,
                    self.path.display()
                ),
            ));
        }
        let index = self.count;
        // Every earlier record that points to this one learns its offset.
        let mut level = 1u8;
        while level <= self.max_level && index > 0 && index.is_multiple_of(stride(self.step, level)) {
            if let Some(slot) = self.waiting[usize::from(level)].take() {
                self.fill(slot, offset);
            }
            level += 1;
        }
        let level = level_of(index, self.step, self.max_level);
        let at = self.buf.len();
        let pointers = encode_record(&mut self.buf, level, self.width, key, value);
        for l in 1..=level {
            let slot = offset + (pointers - at) as u64 + u64::from(l - 1) * self.width as u64;
            self.waiting[usize::from(l)] = Some(slot);
        }
        if index.is_multiple_of(self.index.stride) {
            self.index.push(offset, key);
            if self.index.len() > self.index_cap && self.index.level <= self.max_level {
                self.index.raise(self.step);
            }
        }
        self.count += 1;
        self.data_size += (key.len() + value.len()) as u64;
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        if self.buf.len() >= WRITE_CHUNK {
            self.flush(false)?;
        }
        Ok(())
    }

    fn fill(&mut self, slot: u64, target: u64) {
        if slot >= self.buf_start {
            let at = (slot - self.buf_start) as usize;
            self.buf[at..at + self.width].copy_from_slice(&encode_offset(target, self.width)[..self.width]);
        } else {
            self.patches.push((slot, target));
        }
    }

    /// Writes the buffer out: whole blocks only unless `all`, so that the
    /// writes of a direct-I/O file stay aligned.
    fn flush(&mut self, all: bool) -> Result<()> {
        let block = self.file.block_size().max(1) as usize;
        let n = if all { self.buf.len() } else { self.buf.len() / block * block };
        if n == 0 {
            return Ok(());
        }
        self.file.write(self.buf_start, &self.buf[..n])?;
        self.buf.drain(..n);
        self.buf_start += n as u64;
        Ok(())
    }

    /// Writes the index, the pointers still waiting and the header; answers
    /// the file, its header and its index. A build that fails leaves its
    /// file empty, as far as the file lets it: a database being created is
    /// then new again to the next writer, never half a header no open takes.
    pub(crate) fn finish(mut self) -> Result<(Box<dyn File>, Header, UpperIndex)> {
        match self.write_tail() {
            Ok(header) => Ok((self.file, header, self.index)),
            Err(e) => {
                let _ = self.file.truncate(0);
                Err(e)
            }
        }
    }

    /// What [`Builder::finish`] writes, answering the header.
    fn write_tail(&mut self) -> Result<Header> {
        let records_end = self.buf_start + self.buf.len() as u64;
        self.index.fit(self.index_cap, self.step, self.max_level);
        let mut section = Vec::new();
        self.index.encode(&mut section);
        let index_crc = crc32fast::hash(&section);
        self.buf.extend_from_slice(&section);
        let index_end = records_end + section.len() as u64;
        let block = self.file.block_size();
        if self.padding && block > 1 && !index_end.is_multiple_of(block) {
            let padded = index_end.div_ceil(block) * block;
            self.buf.resize(self.buf.len() + (padded - index_end) as usize, 0);
        }
        self.flush(true)?;
        self.patches.sort_unstable();
        for &(slot, target) in &self.patches {
            self.file.write(slot, &encode_offset(target, self.width)[..self.width])?;
        }
        let header = Header {
            width: self.width as u8,
            max_level: self.max_level,
            index_level: self.index.level,
            step_unit: self.step as u32,
            count: self.count,
            data_size: self.data_size,
            records_end,
            index_end,
            index_crc,
        };
        self.file.write(0, &header.encode())?;
        Ok(header)
    }
}
