//! What opening a skip database takes: [`SkipOptions`], their checks, and
//! how every file of the database (the built file, a build's temporary one,
//! a restore's source) is opened.

use std::path::Path;

use super::format::MAX_LEVEL;
use super::Reducer;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{File, FileSpec, FileWrapper, OpenOptions};

/// Everything [`SkipDbm::open`](super::SkipDbm::open) takes. `step_unit`,
/// `max_level` and `offset_width` apply when a file is built; a reopen reads
/// them from the file until the next rebuild.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SkipOptions {
    /// The file implementation and its options (reads are random; builds
    /// write sequentially through the same implementation).
    pub file: FileSpec,
    /// Locking and creation of the file (its `writable` field is set by `open`).
    pub open: OpenOptions,
    /// Each level's pointers skip step_unit times as many records as the
    /// level below's (tuning, at build; at least 2).
    pub step_unit: u32,
    /// The number of levels of pointers (tuning, at build; 1 to 31).
    pub max_level: u8,
    /// Bytes of a skip pointer, 3 to 8: 2^(8 × width) bytes of records at
    /// most (tuning, at build).
    pub offset_width: u8,
    /// Records of the upper levels kept in memory: the highest levels whose
    /// records number at most this many.
    pub max_cached_records: usize,
    /// Bytes of updates held in memory before they are sorted and spilled
    /// to a temporary file.
    pub sort_mem_size: usize,
    /// The caller promises updates in ascending key order: they are checked
    /// as they arrive (an update out of order is refused) and never sorted.
    pub insert_in_order: bool,
    /// How [`Dbm::synchronize`](crate::dbm::Dbm::synchronize) and closing
    /// reduce each key's records.
    pub reducer: Reducer,
    /// Wraps every file the database opens (for tests).
    #[doc(hidden)]
    pub wrap_file: Option<FileWrapper>,
}

impl Default for SkipOptions {
    fn default() -> SkipOptions {
        SkipOptions {
            file: FileSpec::default(),
            open: OpenOptions::writer(),
            step_unit: 4,
            max_level: 14,
            offset_width: 5,
            max_cached_records: 65_536,
            sort_mem_size: 256 << 20,
            insert_in_order: false,
            reducer: Reducer::All,
            wrap_file: None,
        }
    }
}

impl SkipOptions {
    /// Sets the file implementation and its options.
    pub fn file(mut self, file: FileSpec) -> SkipOptions {
        self.file = file;
        self
    }

    /// Sets the locking and creation of the file.
    pub fn open_options(mut self, open: OpenOptions) -> SkipOptions {
        self.open = open;
        self
    }

    /// Sets how many times more records each level skips (tuning, at build).
    pub fn step_unit(mut self, step_unit: u32) -> SkipOptions {
        self.step_unit = step_unit;
        self
    }

    /// Sets the number of levels of pointers (tuning, at build).
    pub fn max_level(mut self, max_level: u8) -> SkipOptions {
        self.max_level = max_level;
        self
    }

    /// Sets the bytes of a skip pointer, 3 to 8 (tuning, at build).
    pub fn offset_width(mut self, offset_width: u8) -> SkipOptions {
        self.offset_width = offset_width;
        self
    }

    /// Sets the most records of the upper levels kept in memory.
    pub fn max_cached_records(mut self, max_cached_records: usize) -> SkipOptions {
        self.max_cached_records = max_cached_records;
        self
    }

    /// Sets the bytes of updates held in memory before a sorted spill.
    pub fn sort_mem_size(mut self, sort_mem_size: usize) -> SkipOptions {
        self.sort_mem_size = sort_mem_size;
        self
    }

    /// Promises updates in ascending key order, or not.
    pub fn insert_in_order(mut self, insert_in_order: bool) -> SkipOptions {
        self.insert_in_order = insert_in_order;
        self
    }

    /// Sets how synchronizing and closing reduce each key's records.
    pub fn reducer(mut self, reducer: Reducer) -> SkipOptions {
        self.reducer = reducer;
        self
    }

    /// Wraps every file the database opens (for tests).
    #[doc(hidden)]
    pub fn wrap_file(mut self, wrap_file: Option<FileWrapper>) -> SkipOptions {
        self.wrap_file = wrap_file;
        self
    }

    pub(super) fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
        if self.step_unit < 2 {
            return bad(format!("step_unit must be at least 2, not {}", self.step_unit));
        }
        if self.max_level == 0 || self.max_level > MAX_LEVEL {
            return bad(format!("max_level must be 1 to {}, not {}", MAX_LEVEL, self.max_level));
        }
        if !(3..=8).contains(&self.offset_width) {
            return bad(format!("offset_width must be 3 to 8, not {}", self.offset_width));
        }
        self.file.validate()
    }

    pub(super) fn open_file(&self, path: &Path, open: &OpenOptions) -> Result<Box<dyn File>> {
        crate::file::open_wrapped(&self.file, self.wrap_file.as_ref(), path, open)
    }
}
