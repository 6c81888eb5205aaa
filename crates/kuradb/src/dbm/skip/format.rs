//! The file of a skip database: a header, the records in key order, and an
//! index of the upper levels' records.
//!
//! | offset | field |
//! | --- | --- |
//! | 0 | magic `KuraSkp\n` |
//! | 8 | format version (1) |
//! | 9 | offset width: bytes of a skip pointer |
//! | 10 | max level |
//! | 11 | level of the index: it lists every record whose position is a multiple of step_unit^this |
//! | 12 | step unit (u32) |
//! | 16 | record count (u64) |
//! | 24 | bytes of keys and values (u64) |
//! | 32 | end of the records = start of the index (u64) |
//! | 40 | end of the index (u64); padding to a block multiple may follow |
//! | 48 | CRC-32 of the index (u32) |
//! | 124 | CRC-32 of bytes 0 to 123 |
//!
//! A record at position `i` (counting from 0) has a level: the number of
//! levels `l` in 1..=max_level with `i` a multiple of step_unit^l (record 0
//! has them all). It holds one skip pointer per level: the offset of the
//! record at `i + step_unit^l`, or 0 if there is none.
//!
//! | field | bytes |
//! | --- | --- |
//! | magic `0xE0` plus the level | 1 |
//! | key size, value size | 2 varints |
//! | skip pointers, level 1 first | level × offset width |
//! | key, value | as the sizes say |
//!
//! The index holds, for each listed record in order, its offset and key (two
//! varints and the key's bytes); it is what opening loads as the cache of
//! the upper levels, so that no open walks the file. The file is written
//! once, sequentially, and never changed: every update builds a new file.
//! Integers are little-endian.

use crate::error::{Error, ErrorKind, Result};
use crate::file::File;
use crate::varint::leb128;

pub(crate) const HEADER_SIZE: u64 = 128;
const MAGIC: &[u8; 8] = b"KuraSkp\n";
const VERSION: u8 = 1;
/// The reference implementation's skip files start with this.
const REFERENCE_MAGIC: &[u8] = b"TkrzwSDB";
pub(crate) const RECORD_MAGIC: u8 = 0xE0;
/// The highest level a record's first byte can say.
pub(crate) const MAX_LEVEL: u8 = 0x1F;

/// What the header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub width: u8,
    pub max_level: u8,
    pub index_level: u8,
    pub step_unit: u32,
    pub count: u64,
    pub data_size: u64,
    pub records_end: u64,
    pub index_end: u64,
    pub index_crc: u32,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_SIZE as usize] {
        let mut out = [0u8; HEADER_SIZE as usize];
        out[..8].copy_from_slice(MAGIC);
        out[8] = VERSION;
        out[9] = self.width;
        out[10] = self.max_level;
        out[11] = self.index_level;
        out[12..16].copy_from_slice(&self.step_unit.to_le_bytes());
        out[16..24].copy_from_slice(&self.count.to_le_bytes());
        out[24..32].copy_from_slice(&self.data_size.to_le_bytes());
        out[32..40].copy_from_slice(&self.records_end.to_le_bytes());
        out[40..48].copy_from_slice(&self.index_end.to_le_bytes());
        out[48..52].copy_from_slice(&self.index_crc.to_le_bytes());
        let crc = crc32fast::hash(&out[..124]);
        out[124..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes and checks the header of `path`'s file of `file_size` bytes.
    pub(crate) fn decode(bytes: &[u8], file_size: u64, path: &std::path::Path) -> Result<Header> {
        let broken = |what: String| {
            Error::new(
                ErrorKind::BrokenData,
                format!("{} is not a usable skip database: {what}", path.display()),
            )
        };
        if bytes.len() < HEADER_SIZE as usize {
            if bytes.starts_with(REFERENCE_MAGIC) {
                return Err(reference(path));
            }
            return Err(broken(format!("it has {} bytes, fewer than a header", bytes.len())));
        }
        if bytes.starts_with(REFERENCE_MAGIC) {
            return Err(reference(path));
        }
        if &bytes[..8] != MAGIC {
            return Err(broken("it does not start as one".into()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if u32_at(124) != crc32fast::hash(&bytes[..124]) {
            return Err(broken("its header fails its checksum".into()));
        }
        if bytes[8] != VERSION {
            return Err(broken(format!("its format version {} is not known to this kuradb", bytes[8])));
        }
        let header = Header {
            width: bytes[9],
            max_level: bytes[10],
            index_level: bytes[11],
            step_unit: u32_at(12),
            count: u64_at(16),
            data_size: u64_at(24),
            records_end: u64_at(32),
            index_end: u64_at(40),
            index_crc: u32_at(48),
        };
        if !(2..=8).contains(&header.width)
            || header.max_level == 0
            || header.max_level > MAX_LEVEL
            || header.step_unit < 2
            || header.index_level == 0
            || header.index_level > header.max_level + 1
        {
            return Err(broken("its header holds impossible parameters".into()));
        }
        if header.records_end < HEADER_SIZE || header.index_end < header.records_end {
            return Err(broken("its header holds impossible sizes".into()));
        }
        if file_size < header.index_end {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!(
                    "{} is truncated: it has {file_size} bytes where its header says {}; restore it \
                     (SkipDbm::restore) to keep the records it still holds",
                    path.display(),
                    header.index_end
                ),
            ));
        }
        Ok(header)
    }
}

fn reference(path: &std::path::Path) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "{} is a skip database of the reference implementation (Tkrzw), which kuradb opens read-only \
             by its header (`kura util list`, `get`, `export`; dbm=auto) and `kura util convert OLD NEW` \
             turns into a kuradb database",
            path.display()
        ),
    )
}

/// The level of the record at position `index`.
pub(crate) fn level_of(index: u64, step: u64, max_level: u8) -> u8 {
    if index == 0 {
        return max_level;
    }
    let mut level = 0;
    let mut rest = index;
    while level < max_level && rest.is_multiple_of(step) {
        rest /= step;
        level += 1;
    }
    level
}

/// `step^level`, saturating.
pub(crate) fn stride(step: u64, level: u8) -> u64 {
    step.checked_pow(u32::from(level)).unwrap_or(u64::MAX)
}

/// Appends a record's encoding with zero pointers; answers where its
/// pointers start within `out`.
pub(crate) fn encode_record(out: &mut Vec<u8>, level: u8, width: usize, key: &[u8], value: &[u8]) -> usize {
    out.push(RECORD_MAGIC | level);
    leb128::put(out, key.len() as u64);
    leb128::put(out, value.len() as u64);
    let pointers = out.len();
    out.resize(out.len() + usize::from(level) * width, 0);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    pointers
}

pub(crate) fn encode_offset(offset: u64, width: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..width].copy_from_slice(&offset.to_le_bytes()[..width]);
    out
}

/// A record parsed in a [`Window`]: where its parts are, relative to its
/// start. Its key, value and pointers can be taken from the window for as
/// long as the window holds it (until the next read of another record).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub offset: u64,
    pub level: u8,
    pub size: u64,
    pointers_at: usize,
    key_at: usize,
    key_len: usize,
    value_len: usize,
}

impl Record {
    /// The offset of the record after it in the file.
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.size
    }
}

/// A buffer of file bytes that reads ahead, so that records close to each
/// other (a level-0 scan, a sequential walk) cost one read together.
pub(crate) struct Window {
    start: u64,
    buf: Vec<u8>,
    /// Bytes read at least per refill.
    chunk: usize,
}

impl Window {
    pub(crate) fn new(chunk: usize) -> Window {
        Window { start: 0, buf: Vec::new(), chunk: chunk.max(64) }
    }

    /// Forgets the bytes held, which belong to another file now.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.start = 0;
    }

    pub(crate) fn set_chunk(&mut self, chunk: usize) {
        self.chunk = chunk.max(64);
    }

    /// Makes the buffer hold `[offset, offset + len)`, having `fill` bring
    /// the bytes from `offset` on, at least a chunk (never past `end`), if
    /// it does not. Answers whether it holds them now: a batch's `fill`
    /// notes the read for later instead (see `lockstep.rs`).
    #[inline(always)]
    fn cover(&mut self, end: u64, offset: u64, len: usize, fill: &mut impl Fill) -> Result<bool> {
        if offset >= self.start && offset + len as u64 <= self.start + self.buf.len() as u64 {
            return Ok(true);
        }
        let want = (len.max(self.chunk) as u64).min(end.saturating_sub(offset)) as usize;
        if want < len {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!("a record at {offset} runs past the records' end"),
            ));
        }
        fill.fill(self, offset, want)
    }

    /// The buffer, made to stand for the `len` bytes at `offset`, for a
    /// read to fill. A failed read must [`forget`](Self::forget) them.
    pub(crate) fn hold(&mut self, offset: u64, len: usize) -> &mut [u8] {
        self.buf.resize(len, 0);
        self.start = offset;
        &mut self.buf
    }

    /// Forgets the bytes of a read that failed.
    pub(crate) fn forget(&mut self) {
        self.buf.clear();
    }

    /// The bytes held, and where they start in the file.
    pub(crate) fn held(&self) -> (u64, &[u8]) {
        (self.start, &self.buf)
    }

    /// Gives back memory a large record left, keeping `cap` bytes.
    pub(crate) fn shrink(&mut self, cap: usize) {
        if self.buf.capacity() > cap {
            self.buf.clear();
            self.buf.shrink_to(cap);
        }
    }

    /// Reads the record at `offset` (key included; the value too if
    /// `value`). `end` is the end of the records.
    pub(crate) fn record(
        &mut self,
        file: &dyn File,
        end: u64,
        offset: u64,
        width: usize,
        value: bool,
    ) -> Result<Record> {
        match self.record_with(end, offset, width, value, &mut ReadNow(file))? {
            Some(record) => Ok(record),
            None => unreachable!("a read now always covers"),
        }
    }

    /// [`record`](Self::record) with the missing bytes brought by `fill`:
    /// `None` if it did not bring them (a batch reads them later; asked
    /// again then, this finds them held).
    #[inline]
    pub(crate) fn record_with(
        &mut self,
        end: u64,
        offset: u64,
        width: usize,
        value: bool,
        fill: &mut impl Fill,
    ) -> Result<Option<Record>> {
        let broken = |what: &str| Error::new(ErrorKind::BrokenData, format!("the record at {offset} {what}"));
        if offset < HEADER_SIZE || offset >= end {
            return Err(broken("is outside the records"));
        }
        let head = ((end - offset) as usize).min(21);
        if !self.cover(end, offset, head, fill)? {
            return Ok(None);
        }
        let at = (offset - self.start) as usize;
        let bytes = &self.buf[at..];
        let magic = bytes[0];
        if magic & !MAX_LEVEL != RECORD_MAGIC {
            return Err(broken("does not start as a record"));
        }
        let level = magic & MAX_LEVEL;
        let mut pos = 1;
        let key_len = leb128::decode(bytes, &mut pos).map_err(|_| broken("has a broken key size"))?;
        let value_len = leb128::decode(bytes, &mut pos).map_err(|_| broken("has a broken value size"))?;
        let pointers_at = pos;
        let key_at = pos + usize::from(level) * width;
        let size = (key_at as u64).checked_add(key_len).and_then(|n| n.checked_add(value_len));
        let size = match size {
            Some(size) if size <= end - offset => size,
            _ => return Err(broken("runs past the records' end")),
        };
        let needed = if value { size } else { key_at as u64 + key_len };
        if !self.cover(end, offset, needed as usize, fill)? {
            return Ok(None);
        }
        Ok(Some(Record {
            offset,
            level,
            size,
            pointers_at,
            key_at,
            key_len: key_len as usize,
            value_len: value_len as usize,
        }))
    }

    /// Where `record` starts in the buffer.
    fn base(&self, record: &Record) -> usize {
        debug_assert!(record.offset >= self.start, "the window has moved past the record");
        (record.offset - self.start) as usize
    }

    pub(crate) fn key(&self, record: &Record) -> &[u8] {
        let at = self.base(record) + record.key_at;
        &self.buf[at..at + record.key_len]
    }

    /// The value of a record read with its value.
    pub(crate) fn value(&self, record: &Record) -> &[u8] {
        let at = self.base(record) + record.key_at + record.key_len;
        &self.buf[at..at + record.value_len]
    }

    /// The record's skip pointer of `level` (1 or more): the offset of the
    /// record step_unit^level positions on, or 0 for none. A record without
    /// that level, or a pointer that does not lead forward within the
    /// records (`end`), is damage: following it could loop.
    pub(crate) fn pointer(&self, record: &Record, level: u8, width: usize, end: u64) -> Result<u64> {
        let broken =
            |what: &str| Error::new(ErrorKind::BrokenData, format!("the record at {} {what}", record.offset));
        if level == 0 || level > record.level {
            return Err(broken(&format!("lacks the skip pointer of level {level} that its position needs")));
        }
        let at = self.base(record) + record.pointers_at + usize::from(level - 1) * width;
        let mut bytes = [0u8; 8];
        bytes[..width].copy_from_slice(&self.buf[at..at + width]);
        let target = u64::from_le_bytes(bytes);
        if target != 0 && (target <= record.offset || target >= end) {
            return Err(broken("has a skip pointer that does not lead forward within the records"));
        }
        Ok(target)
    }
}

/// How a [`Window`] gets bytes it does not hold.
pub(crate) trait Fill {
    /// Brings the `len` bytes at `offset` into `window` (through
    /// [`Window::hold`]), or notes that they are wanted; answers whether
    /// `window` holds them now.
    fn fill(&mut self, window: &mut Window, offset: u64, len: usize) -> Result<bool>;
}

/// Reads what a window lacks from the file at once: a single lookup's way.
struct ReadNow<'f>(&'f dyn File);

impl Fill for ReadNow<'_> {
    #[inline(always)]
    fn fill(&mut self, window: &mut Window, offset: u64, len: usize) -> Result<bool> {
        if let Err(e) = self.0.read(offset, window.hold(offset, len)) {
            window.forget();
            return Err(e);
        }
        Ok(true)
    }
}

/// Whether `head`, a file's first bytes, begins a kuradb skip database.
pub(crate) fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_the_positions() {
        assert_eq!(level_of(0, 4, 3), 3);
        assert_eq!(level_of(1, 4, 3), 0);
        assert_eq!(level_of(4, 4, 3), 1);
        assert_eq!(level_of(16, 4, 3), 2);
        assert_eq!(level_of(64, 4, 3), 3);
        assert_eq!(level_of(256, 4, 3), 3);
        assert_eq!(stride(16, 5), 1 << 20);
        assert_eq!(stride(1 << 20, 5), u64::MAX);
    }

    #[test]
    fn headers_round_trip_and_refuse_damage() {
        let header = Header {
            width: 5,
            max_level: 4,
            index_level: 1,
            step_unit: 16,
            count: 3,
            data_size: 30,
            records_end: 200,
            index_end: 220,
            index_crc: 7,
        };
        let bytes = header.encode();
        let path = std::path::Path::new("x.skip");
        assert_eq!(Header::decode(&bytes, 220, path).unwrap(), header);
        let err = Header::decode(&bytes, 219, path).unwrap_err();
        assert!(err.message().contains("truncated"), "{err}");
        let mut bad = bytes;
        bad[20] ^= 1;
        assert!(Header::decode(&bad, 220, path).unwrap_err().message().contains("checksum"));
        assert!(Header::decode(&bytes[..50], 50, path)
            .unwrap_err()
            .message()
            .contains("fewer than a header"));
        let err = Header::decode(b"TkrzwSDB\n\0\0\0", 12, path).unwrap_err();
        assert!(err.message().contains("reference implementation"), "{err}");
    }
}
