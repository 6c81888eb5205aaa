//! Writing a skip database's file: the [`Builder`] lays records down in key
//! order with their skip pointers, and [`merge`] feeds it from the old file
//! and the updates waiting since the last synchronization.

use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::format::{encode_offset, encode_record, level_of, stride, Header, Window, HEADER_SIZE};
use super::reducer::{Group, Reducer};
use crate::error::{Error, ErrorKind, Result};
use crate::file::File;
use crate::varint::leb128;

/// Bytes the builder gathers before each write; a multiple of any block size.
const WRITE_CHUNK: usize = 1 << 20;
/// Bytes each sequential read of the old file takes.
const READ_CHUNK: usize = 1 << 20;

/// The cache of the upper levels: the offset and key of every record whose
/// position is a multiple of `stride`, in order (so entry `j` is the record
/// at position `j * stride`).
#[derive(Clone, Debug, Default)]
pub(crate) struct UpperIndex {
    pub level: u8,
    pub stride: u64,
    pub offsets: Vec<u64>,
    /// The first eight bytes of each key, big-endian (see [`prefix_of`]).
    pub prefixes: Vec<u64>,
    key_ends: Vec<usize>,
    keys: Vec<u8>,
}

impl UpperIndex {
    fn new(level: u8, step: u64) -> UpperIndex {
        UpperIndex { level, stride: stride(step, level), ..UpperIndex::default() }
    }

    pub(crate) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// The first entry `before` does not hold for (`before` holds for a
    /// prefix of the entries). Every 64th entry is searched first: those
    /// few stay in the processor's caches, so a search touches memory
    /// elsewhere only within one block of 64.
    pub(crate) fn partition_point(&self, before: impl Fn(usize) -> bool) -> usize {
        const BLOCK: usize = 64;
        let blocks = self.len().div_ceil(BLOCK);
        let first_not = partition_point(0, blocks, |j| before(j * BLOCK));
        if first_not == 0 {
            return 0;
        }
        partition_point((first_not - 1) * BLOCK + 1, (first_not * BLOCK).min(self.len()), before)
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    fn push(&mut self, offset: u64, key: &[u8]) {
        self.offsets.push(offset);
        self.prefixes.push(prefix_of(key));
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
    }

    /// Keeps every `step`-th entry: the index one level up.
    fn raise(&mut self, step: u64) {
        let old = std::mem::take(self);
        *self = UpperIndex::new(old.level + 1, step);
        self.stride = old.stride.saturating_mul(step);
        for i in (0..old.len()).step_by(step.min(usize::MAX as u64) as usize) {
            self.push(old.offsets[i], old.key(i));
        }
    }

    /// Raises the level until at most `cap` entries remain (or the level is
    /// the highest that lists anything but the first record).
    pub(crate) fn fit(&mut self, cap: usize, step: u64, max_level: u8) {
        while self.len() > cap.max(1) && self.level <= max_level {
            self.raise(step);
        }
    }

    /// Bytes in memory.
    pub(crate) fn memory(&self) -> usize {
        self.keys.capacity()
            + (self.offsets.capacity() + self.prefixes.capacity() + self.key_ends.capacity()) * 8
    }

    fn encode(&self, out: &mut Vec<u8>) {
        for i in 0..self.len() {
            leb128::put(out, self.offsets[i]);
            leb128::put(out, self.key(i).len() as u64);
            out.extend_from_slice(self.key(i));
        }
    }

    /// Reads the index section of a file.
    pub(crate) fn load(file: &dyn File, header: &Header, path: &Path) -> Result<UpperIndex> {
        let size = (header.index_end - header.records_end) as usize;
        let mut bytes = vec![0u8; size];
        file.read(header.records_end, &mut bytes)?;
        let broken = |what: &str| {
            Error::new(ErrorKind::BrokenData, format!("the index of {} {what}: restore it", path.display()))
        };
        if crc32fast::hash(&bytes) != header.index_crc {
            return Err(broken("fails its checksum"));
        }
        let mut index = UpperIndex::new(header.index_level, u64::from(header.step_unit));
        let mut at = 0;
        while at < bytes.len() {
            let offset = leb128::decode(&bytes, &mut at).map_err(|_| broken("is cut short"))?;
            let len = leb128::decode(&bytes, &mut at).map_err(|_| broken("is cut short"))? as usize;
            let key = at
                .checked_add(len)
                .and_then(|end| bytes.get(at..end))
                .ok_or_else(|| broken("is cut short"))?;
            at += len;
            if offset < HEADER_SIZE || offset >= header.records_end {
                return Err(broken("points outside the records"));
            }
            index.push(offset, key);
        }
        let expected = if header.count == 0 { 0 } else { (header.count - 1) / index.stride + 1 };
        if index.len() as u64 != expected {
            return Err(broken("lists a wrong number of records"));
        }
        Ok(index)
    }
}

/// The first `i` in `low..high` for which `pred(i)` is false (`pred` holds
/// for a prefix of the range), or `high`.
pub(crate) fn partition_point(mut low: usize, mut high: usize, pred: impl Fn(usize) -> bool) -> usize {
    while low < high {
        let mid = low + (high - low) / 2;
        if pred(mid) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low
}

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

/// An update waiting for the next synchronization.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    /// The first eight bytes of the key, big-endian: most comparisons end here.
    prefix: u64,
    at: usize,
    key_len: u32,
    /// The value's length, or `REMOVE`.
    value_len: u32,
}

const REMOVE: u32 = u32::MAX;

/// The largest key or value an update may carry.
pub(crate) const MAX_ITEM: usize = (u32::MAX - 1) as usize;

/// The first eight bytes of `key`, big-endian, zeros after a shorter key: a
/// number whose order agrees with the keys' (a smaller number, a smaller
/// key; equal numbers say nothing).
pub(crate) fn prefix_of(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

/// Updates in memory, in arrival order until sorted.
#[derive(Default)]
pub(crate) struct MemoryRun {
    ops: Vec<Op>,
    bytes: Vec<u8>,
}

impl MemoryRun {
    /// Adds a record (`Some` value) or the removal of every record of `key`.
    pub(crate) fn push(&mut self, key: &[u8], value: Option<&[u8]>) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(key);
        if let Some(value) = value {
            self.bytes.extend_from_slice(value);
        }
        self.ops.push(Op {
            prefix: prefix_of(key),
            at,
            key_len: key.len() as u32,
            value_len: value.map_or(REMOVE, |v| v.len() as u32),
        });
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Adds `later`'s updates after these.
    pub(crate) fn append(&mut self, later: MemoryRun) {
        for op in &later.ops {
            let value = later.value(op);
            self.push(later.key(op), value);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    /// Bytes in memory.
    pub(crate) fn memory(&self) -> usize {
        self.bytes.len() + self.ops.len() * std::mem::size_of::<Op>()
    }

    pub(crate) fn last_key(&self) -> Option<&[u8]> {
        self.ops.last().map(|op| self.key(op))
    }

    fn key(&self, op: &Op) -> &[u8] {
        &self.bytes[op.at..op.at + op.key_len as usize]
    }

    fn value(&self, op: &Op) -> Option<&[u8]> {
        if op.value_len == REMOVE {
            return None;
        }
        let at = op.at + op.key_len as usize;
        Some(&self.bytes[at..at + op.value_len as usize])
    }

    /// Sorts by key, keeping the arrival order of equal keys.
    pub(crate) fn sort(&mut self) {
        let bytes = &self.bytes;
        let key = |op: &Op| &bytes[op.at..op.at + op.key_len as usize];
        self.ops.sort_by(|a, b| a.prefix.cmp(&b.prefix).then_with(|| key(a).cmp(key(b))));
    }

    /// Writes the (sorted) updates to a spill file at `path`.
    pub(crate) fn spill(&self, path: &Path) -> Result<()> {
        let file = fs::File::create(path).map_err(|e| Error::io("creation of a sort file", path, e))?;
        let mut out = BufWriter::with_capacity(1 << 18, file);
        let mut head = Vec::with_capacity(32);
        for op in &self.ops {
            write_item(&mut out, &mut head, self.key(op), self.value(op), path)?;
        }
        out.flush().map_err(|e| Error::io("writing a sort file", path, e))
    }
}

/// Writes one update to a sort file: 1 for a record or 0 for a removal, the
/// key's and value's sizes as varints, the key, the value.
fn write_item(
    out: &mut impl Write,
    head: &mut Vec<u8>,
    key: &[u8],
    value: Option<&[u8]>,
    path: &Path,
) -> Result<()> {
    head.clear();
    head.push(u8::from(value.is_some()));
    leb128::put(head, key.len() as u64);
    leb128::put(head, value.map_or(0, |v| v.len() as u64));
    let written = out
        .write_all(head)
        .and_then(|_| out.write_all(key))
        .and_then(|_| out.write_all(value.unwrap_or_default()));
    written.map_err(|e| Error::io("writing a sort file", path, e))
}

/// One sorted source of the merge, positioned on its current item.
enum Source<'a> {
    Old { file: &'a dyn File, header: &'a Header, window: Window, next: u64 },
    Spill { path: PathBuf, reader: BufReader<fs::File> },
    Memory { run: &'a MemoryRun, next: usize },
}

/// A source with its current item: the key and, for a record, the value.
struct Cursor<'a> {
    source: Source<'a>,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    done: bool,
}

impl Cursor<'_> {
    fn advance(&mut self) -> Result<()> {
        match &mut self.source {
            Source::Old { file, header, window, next } => {
                if *next >= header.records_end {
                    self.done = true;
                    return Ok(());
                }
                let record =
                    window.record(*file, header.records_end, *next, usize::from(header.width), true)?;
                self.key.clear();
                self.key.extend_from_slice(window.key(&record));
                let value = self.value.get_or_insert_with(Vec::new);
                value.clear();
                value.extend_from_slice(window.value(&record));
                *next = record.end();
            }
            Source::Spill { path, reader } => {
                let mut kind = [0u8; 1];
                match reader.read(&mut kind) {
                    Ok(0) => {
                        self.done = true;
                        return Ok(());
                    }
                    Ok(_) => {}
                    Err(e) => return Err(Error::io("reading a sort file", path, e)),
                }
                let key_len = read_varint(reader, path)?;
                let value_len = read_varint(reader, path)?;
                read_exact(reader, path, &mut self.key, key_len)?;
                if kind[0] == 1 {
                    read_exact(reader, path, self.value.get_or_insert_with(Vec::new), value_len)?;
                } else {
                    self.value = None;
                }
            }
            Source::Memory { run, next } => {
                let Some(op) = run.ops.get(*next) else {
                    self.done = true;
                    return Ok(());
                };
                *next += 1;
                self.key.clear();
                self.key.extend_from_slice(run.key(op));
                match run.value(op) {
                    Some(v) => {
                        let value = self.value.get_or_insert_with(Vec::new);
                        value.clear();
                        value.extend_from_slice(v);
                    }
                    None => self.value = None,
                }
            }
        }
        Ok(())
    }
}

fn read_varint(reader: &mut impl Read, path: &Path) -> Result<u64> {
    let mut decoder = leb128::Decoder::default();
    loop {
        let mut b = [0u8; 1];
        reader.read_exact(&mut b).map_err(|e| Error::io("reading a sort file", path, e))?;
        match decoder.push(b[0]) {
            Ok(Some(n)) => return Ok(n),
            Ok(None) => {}
            Err(e) => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("the sort file {} is damaged: {e}", path.display()),
                ))
            }
        }
    }
}

fn read_exact(reader: &mut impl Read, path: &Path, out: &mut Vec<u8>, len: u64) -> Result<()> {
    if len > MAX_ITEM as u64 {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!("the sort file {} is damaged", path.display()),
        ));
    }
    out.resize(len as usize, 0);
    reader.read_exact(out).map_err(|e| Error::io("reading a sort file", path, e))
}

/// Updates waiting for the next synchronization: spilled runs, oldest first,
/// then the memory run.
pub(crate) enum Run {
    Spill(PathBuf),
    Memory(MemoryRun),
}

/// The old file a merge starts from.
pub(crate) struct OldFile<'a> {
    pub file: &'a dyn File,
    pub header: &'a Header,
}

/// Merges the old file's records with `runs` (each sorted; later runs are
/// later updates) into `out`, applying removals and `reducer` key by key.
pub(crate) fn merge(
    old: Option<OldFile<'_>>,
    runs: &[Run],
    reducer: &Reducer,
    out: &mut Builder,
) -> Result<()> {
    let mut cursors = Vec::with_capacity(runs.len() + 1);
    if let Some(old) = old {
        let source = Source::Old {
            file: old.file,
            header: old.header,
            window: Window::new(READ_CHUNK),
            next: HEADER_SIZE,
        };
        cursors.push(Cursor { source, key: Vec::new(), value: None, done: false });
    }
    for run in runs {
        let source = match run {
            Run::Spill(path) => {
                let file = fs::File::open(path).map_err(|e| Error::io("opening a sort file", path, e))?;
                Source::Spill { path: path.clone(), reader: BufReader::with_capacity(1 << 18, file) }
            }
            Run::Memory(run) => Source::Memory { run, next: 0 },
        };
        cursors.push(Cursor { source, key: Vec::new(), value: None, done: false });
    }
    for cursor in &mut cursors {
        cursor.advance()?;
    }
    let mut group = Group::default();
    merge_sorted(&mut cursors, |key, item| match item {
        Item::Record(value) => {
            group.push(value);
            Ok(())
        }
        Item::Removal => {
            group.clear();
            Ok(())
        }
        Item::End => {
            reducer.reduce(key, &group, out)?;
            group.clear();
            Ok(())
        }
    })
}

/// What [`merge_sorted`] shows of a key.
enum Item<'a> {
    Record(&'a [u8]),
    Removal,
    /// Every item of the key was shown.
    End,
}

/// Shows the items of `cursors` in key order, each key's from the oldest
/// source to the newest, then the key's end.
fn merge_sorted(cursors: &mut [Cursor<'_>], mut f: impl FnMut(&[u8], Item<'_>) -> Result<()>) -> Result<()> {
    let mut key = Vec::new();
    while let Some(least) = cursors.iter().filter(|c| !c.done).map(|c| &c.key).min() {
        key.clear();
        key.extend_from_slice(least);
        for cursor in cursors.iter_mut() {
            while !cursor.done && cursor.key == key {
                match &cursor.value {
                    Some(value) => f(&key, Item::Record(value))?,
                    None => f(&key, Item::Removal)?,
                }
                cursor.advance()?;
            }
        }
        f(&key, Item::End)?;
    }
    Ok(())
}

/// Merges the oldest spilled runs into one, keeping their order, so that a
/// merge never holds more than a few files open.
pub(crate) fn combine_spills(paths: &[PathBuf], dest: &Path) -> Result<()> {
    let mut cursors = Vec::with_capacity(paths.len());
    for path in paths {
        let file = fs::File::open(path).map_err(|e| Error::io("opening a sort file", path, e))?;
        let source = Source::Spill { path: path.clone(), reader: BufReader::with_capacity(1 << 16, file) };
        let mut cursor = Cursor { source, key: Vec::new(), value: None, done: false };
        cursor.advance()?;
        cursors.push(cursor);
    }
    let file = fs::File::create(dest).map_err(|e| Error::io("creation of a sort file", dest, e))?;
    let mut out = BufWriter::with_capacity(1 << 18, file);
    let mut head = Vec::with_capacity(32);
    merge_sorted(&mut cursors, |key, item| {
        let value = match item {
            Item::End => return Ok(()),
            Item::Record(value) => Some(value),
            Item::Removal => None,
        };
        write_item(&mut out, &mut head, key, value, dest)
    })?;
    out.flush().map_err(|e| Error::io("writing a sort file", dest, e))
}

/// Reads the records of a damaged file from the start for as long as they
/// parse and stay in order, giving each to `f`; answers how many it gave.
pub(crate) fn salvage(
    file: &dyn File,
    end: u64,
    width: u8,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    let mut window = Window::new(READ_CHUNK);
    let mut at = HEADER_SIZE;
    let mut last: Option<Vec<u8>> = None;
    let mut count = 0;
    while at < end {
        let Ok(record) = window.record(file, end, at, usize::from(width), true) else { break };
        let key = window.key(&record);
        if last.as_deref().is_some_and(|last| key < last) {
            break;
        }
        f(key, window.value(&record))?;
        last = Some(key.to_vec());
        count += 1;
        at = record.end();
    }
    Ok(count)
}
