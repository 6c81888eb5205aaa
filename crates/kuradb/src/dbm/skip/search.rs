//! Finding records in a built file: a [`Snapshot`] is one built file with
//! its cache of the upper levels, and a search goes from that cache down the
//! skip pointers to the record wanted.

use std::sync::atomic::AtomicBool;

use super::build::{prefix_of, UpperIndex};
use super::format::{self, Header, Record, Window, HEADER_SIZE};
use super::value::decode_value;
use super::SkipDbm;
use crate::error::{Error, ErrorKind, Result};
use crate::file::File;

/// One built file and what is known of it.
pub(super) struct Snapshot {
    pub(super) file: Box<dyn File>,
    pub(super) header: Header,
    pub(super) index: UpperIndex,
    /// Whether the file is known to be on the device, name and all (it was
    /// there when opened, or it was synchronized hard, at its build or
    /// later): replacing it then requires the new file to be on the device
    /// first.
    pub(super) durable: AtomicBool,
    pub(super) generation: u64,
}

/// A record's place in a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Position {
    pub(super) index: u64,
    pub(super) offset: u64,
}

impl Snapshot {
    pub(super) fn width(&self) -> usize {
        usize::from(self.header.width)
    }

    pub(super) fn step(&self) -> u64 {
        u64::from(self.header.step_unit)
    }

    pub(super) fn read(&self, window: &mut Window, offset: u64, value: bool) -> Result<Record> {
        window.record(self.file.as_ref(), self.header.records_end, offset, self.width(), value)
    }

    /// Bytes a lookup's last step reads at once: the level-0 records between
    /// two level-1 records, by the file's average record size. From a memory
    /// map, only what each record's key needs: reading ahead there is copying.
    pub(super) fn span(&self) -> usize {
        let average = (self.header.records_end - HEADER_SIZE) / self.header.count.max(1);
        (average.saturating_mul(self.step() + 1) + 64).min(1 << 16) as usize
    }

    /// Where a seek leaves the cache of the upper levels.
    #[inline]
    pub(super) fn start(&self, below: Below<'_>) -> Start {
        if self.header.count == 0 {
            return Start::NoRecords;
        }
        let index = &self.index;
        // Most comparisons end at the first eight bytes, kept apart so the
        // search reads one compact array.
        let prefix = prefix_of(below.key);
        let p = index.partition_point(|i| match index.prefixes[i].cmp(&prefix) {
            std::cmp::Ordering::Equal => below.holds(index.key(i)),
            order => order == std::cmp::Ordering::Less,
        });
        if p == 0 {
            return Start::First;
        }
        Start::Walk(Position { index: (p as u64 - 1) * index.stride, offset: index.offsets[p - 1] })
    }

    /// The levels of pointers a seek follows from the cache down, highest
    /// first (level 0 follows them).
    pub(super) fn walked_levels(&self) -> std::ops::Range<u8> {
        1..self.index.level.min(self.header.max_level + 1)
    }

    /// The first record `below` does not hold for, or `None`.
    pub(super) fn seek(&self, window: &mut Window, below: Below<'_>) -> Result<Option<Position>> {
        let before = |k: &[u8]| below.holds(k);
        let mut at = match self.start(below) {
            Start::NoRecords => return Ok(None),
            Start::First => return Ok(Some(FIRST)),
            Start::Walk(at) => at,
        };
        window.set_chunk(self.span());
        for level in self.walked_levels().rev() {
            let stride = format::stride(self.step(), level);
            loop {
                // Read again: the window may have moved to a rejected target.
                let record = self.read(window, at.offset, false)?;
                let next = window.pointer(&record, level, self.width(), self.header.records_end)?;
                if next == 0 {
                    break;
                }
                if at.index.saturating_add(stride) >= self.header.count {
                    return Err(self.broken("a skip pointer leads past the last record"));
                }
                let target = self.read(window, next, false)?;
                if !before(window.key(&target)) {
                    break;
                }
                at = Position { index: at.index + stride, offset: next };
            }
        }
        // Level 0: at most step_unit records, usually in the window already.
        let mut record = self.read(window, at.offset, false)?;
        loop {
            let next = record.end();
            if next >= self.header.records_end {
                return Ok(None);
            }
            record = self.read(window, next, false)?;
            at = Position { index: at.index + 1, offset: next };
            if !before(window.key(&record)) {
                return Ok(Some(at));
            }
        }
    }

    /// The record at position `target`, or `None` past the last.
    pub(super) fn locate(&self, window: &mut Window, target: u64) -> Result<Option<Position>> {
        if target >= self.header.count {
            return Ok(None);
        }
        let index = &self.index;
        let j = (target / index.stride) as usize;
        let offset = *index.offsets.get(j).ok_or_else(|| self.broken("its index is too short"))?;
        let mut at = Position { index: j as u64 * index.stride, offset };
        let mut record = self.read(window, at.offset, false)?;
        for level in (1..index.level.min(self.header.max_level + 1)).rev() {
            let stride = format::stride(self.step(), level);
            while at.index + stride <= target {
                let next = window.pointer(&record, level, self.width(), self.header.records_end)?;
                if next == 0 {
                    return Err(self.broken("a skip pointer is missing"));
                }
                record = self.read(window, next, false)?;
                at = Position { index: at.index + stride, offset: next };
            }
        }
        while at.index < target {
            let next = record.end();
            record = self.read(window, next, false)?;
            at = Position { index: at.index + 1, offset: next };
        }
        Ok(Some(at))
    }

    /// The first record of `key`'s, with its value.
    fn get(&self, window: &mut Window, key: &[u8]) -> Result<Option<Record>> {
        let Some(at) = self.seek(window, Below { key, or_equal: false })? else { return Ok(None) };
        let record = self.read(window, at.offset, true)?;
        Ok((window.key(&record) == key).then_some(record))
    }

    pub(super) fn broken(&self, what: &str) -> Error {
        Error::new(
            ErrorKind::BrokenData,
            format!("the skip database {} is damaged: {what}", self.file.path().display()),
        )
    }
}

/// Where a seek leaves the cache of the upper levels.
pub(super) enum Start {
    /// The file holds no records.
    NoRecords,
    /// The seek passes over no cached record: the first record is the answer.
    First,
    /// The last cached record the seek passes over, whose pointers lead on.
    Walk(Position),
}

/// The position of the first record.
pub(super) const FIRST: Position = Position { index: 0, offset: HEADER_SIZE };

/// The records a seek passes over: those whose keys are below `key`, or
/// not above it (`or_equal`).
#[derive(Clone, Copy)]
pub(super) struct Below<'k> {
    pub(super) key: &'k [u8],
    pub(super) or_equal: bool,
}

impl Below<'_> {
    pub(super) fn holds(&self, k: &[u8]) -> bool {
        if self.or_equal {
            k <= self.key
        } else {
            k < self.key
        }
    }
}

impl SkipDbm {
    /// Shows `f` the value of `key`'s first record as of the last
    /// synchronization, or `None`.
    pub(super) fn lookup(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>)) -> Result<()> {
        thread_local! {
            /// A lookup's buffer, kept for the thread's next (emptied first:
            /// it may hold bytes of another file).
            static WINDOW: std::cell::RefCell<Window> = std::cell::RefCell::new(Window::new(256));
        }
        let snapshot = self.snapshot()?;
        WINDOW.with(|cell| {
            let mut guard = cell.try_borrow_mut();
            let mut own = None;
            // A processor that looks up again from inside gets a buffer of its own.
            let window = match guard.as_deref_mut() {
                Ok(window) => window,
                Err(_) => own.insert(Window::new(256)),
            };
            window.reset();
            match snapshot.get(window, key)? {
                Some(record) => f(Some(decode_value(window.value(&record)))),
                None => f(None),
            }
            Ok(())
        })
    }
}
