//! The tuning parameters of a hash database and how it is opened.

use crate::file::{File, FileSpec, FileWrapper, OpenOptions};

/// How updates reach the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateMode {
    /// A new value that fits the old record's space goes there; other records
    /// are written to free space or appended.
    InPlace,
    /// Every update is appended; old versions stay until a rebuild. The
    /// crash-safest mode.
    Appending,
}

/// What opening does with a file that was not closed cleanly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreMode {
    /// Rebuild the index from the records on disk before use.
    Automatic,
    /// Refuse to open it for writing, with an error saying to restore it.
    Refuse,
}

/// Everything [`HashDbm::open`](super::HashDbm::open) takes. The tuning
/// parameters apply when the file is created; a reopen reads them from the file.
#[derive(Clone, Debug)]
pub struct HashOptions {
    /// The file implementation and its options.
    pub file: FileSpec,
    /// Locking and creation of the file (its `writable` field is set by `open`).
    pub open: OpenOptions,
    /// Buckets of the hash table (tuning, at creation).
    pub num_buckets: u64,
    /// Records are aligned to 2^align_pow bytes (tuning, at creation).
    pub align_pow: u8,
    /// Bytes of an offset in the bucket array and chains: 3 to 6 (tuning, at creation).
    pub offset_width: u8,
    /// Capacity of the free block pool: freed regions remembered for reuse.
    pub fbp_cap: usize,
    /// In-place or appending updates (tuning, at creation).
    pub update_mode: UpdateMode,
    /// Keep a checksum in every record, checked on every read (tuning, at creation).
    pub record_crc: bool,
    /// Keep the bucket array in memory.
    pub cache_buckets: bool,
    /// Read at least this many bytes for a record, so most records take one
    /// read (copying a few hundred bytes costs little more than a few dozen).
    pub min_read_size: usize,
    /// What to do with a file that was not closed cleanly.
    pub restore: RestoreMode,
    /// Wraps every file the database opens (for tests).
    #[doc(hidden)]
    pub wrap_file: Option<FileWrapper>,
}

impl HashOptions {
    /// Opens a file of the database as `file` and `wrap_file` say.
    pub(crate) fn open_file(
        &self,
        path: &std::path::Path,
        open: &OpenOptions,
    ) -> crate::Result<Box<dyn File>> {
        crate::file::open_wrapped(&self.file, self.wrap_file.as_ref(), path, open)
    }
}

impl Default for HashOptions {
    fn default() -> HashOptions {
        HashOptions {
            file: FileSpec::default(),
            open: OpenOptions::writer(),
            num_buckets: 1_048_583,
            align_pow: 3,
            offset_width: 5,
            fbp_cap: 2048,
            update_mode: UpdateMode::InPlace,
            record_crc: false,
            cache_buckets: false,
            min_read_size: 256,
            restore: RestoreMode::Automatic,
            wrap_file: None,
        }
    }
}
