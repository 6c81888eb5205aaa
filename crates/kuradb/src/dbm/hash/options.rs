//! The tuning parameters of a hash database and how it is opened.

pub use super::cipher::CipherKey;
pub use super::comp_mode::RecordCompMode;
pub use super::crc_mode::RecordCrcMode;
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

/// What opening for writing does with a file that was not closed cleanly
/// (or whose records end inside an alignment unit: cut or damaged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestoreMode {
    /// Rebuild the index from the records on disk before use: a hash
    /// database keeps every intact record, a tree goes back to its last
    /// hard synchronization.
    Automatic,
    /// Rebuild the database as it was at its last completed hard
    /// synchronization, leaving out every later change. A tree's restore
    /// always does; a hash database in appending mode goes back in its
    /// history. A hash database updated in place overwrites and voids the
    /// versions of that state, so it is refused there, at open.
    Synchronized,
    /// Leave the file as it is and open it for reading only: the handle
    /// sees what a restore would make of it (as a reader's open does) and
    /// refuses every change.
    ReadOnly,
    /// Refuse to open it for writing, with an error saying to restore it.
    Refuse,
}

/// Everything [`HashDbm::open`](super::HashDbm::open) takes. The tuning
/// parameters apply when the file is created; a reopen reads them from the file.
///
/// Built from the defaults by a setter per field, so that a field added later
/// breaks no caller:
///
/// ```
/// use kuradb::dbm::Dbm;
/// use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.kh");
/// let options = HashOptions::default().num_buckets(1000).update_mode(UpdateMode::Appending);
/// let db = options.open(&path)?;
/// db.set(b"japan", b"tokyo")?;
/// db.close()?;
///
/// // A reopen keeps the tuning the file was created with.
/// let db = HashDbm::builder().open_read_only(&path)?;
/// let info = db.inspect()?;
/// let get = |name: &str| info.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
/// assert_eq!(get("num_buckets"), Some("1000"));
/// assert_eq!(get("update_mode"), Some("appending"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HashOptions {
    /// The file implementation and its options.
    pub file: FileSpec,
    /// Locking and creation of the file (its `writable` field is set by `open`).
    pub open: OpenOptions,
    /// Buckets of the hash table (tuning, at creation).
    pub num_buckets: u64,
    /// Records are aligned to 2^align_pow bytes (tuning, at creation).
    pub align_pow: u8,
    /// Bytes of an offset in the bucket array and chains: 3 to 6 (tuning, at
    /// creation; default 4, the reference's: 2^32 units of the alignment).
    pub offset_width: u8,
    /// Capacity of the free block pool: freed regions remembered for reuse.
    pub fbp_cap: usize,
    /// In-place or appending updates (tuning, at creation).
    pub update_mode: UpdateMode,
    /// Whether every read verifies each record's checksum: none, or the
    /// reference's 8, 16 or 32 bits, each of which verifies the record's whole
    /// CRC-32 here (tuning, at creation; kept in the file).
    pub record_crc_mode: RecordCrcMode,
    /// How values are compressed: none, zstd (with a dictionary trained from
    /// the file's values), lz4, zlib or lzma (tuning, at creation; kept in the
    /// file, a rebuild may change it).
    pub record_comp_mode: RecordCompMode,
    /// Keep the bucket array in memory.
    pub cache_buckets: bool,
    /// Grow the bucket array by itself once the records outnumber the
    /// buckets (on by default): a writer copies the database, in a thread of
    /// its own, into a new file with several times the buckets while
    /// readers and writers go on, then puts it in the old file's place. Off,
    /// the bucket count stays what the file was created (or rebuilt) with,
    /// as in the reference. A database in appending mode never grows so.
    /// See docs/rust.md, "The hash table grows by itself".
    pub auto_grow: bool,
    /// Read at least this many bytes for a record, so most records take one
    /// read (copying a few hundred bytes costs little more than a few dozen).
    pub min_read_size: usize,
    /// What to do with a file that was not closed cleanly.
    pub restore: RestoreMode,
    /// Encrypts every value with a key derived from this one (at creation;
    /// an encrypted file must be opened with it, a plain one without any).
    /// An empty key is none. See docs/encryption.md.
    pub cipher_key: Option<CipherKey>,
    /// Wraps every file the database opens (for tests).
    #[doc(hidden)]
    pub wrap_file: Option<FileWrapper>,
}

impl HashOptions {
    /// Sets the file implementation and its options.
    pub fn file(mut self, file: FileSpec) -> HashOptions {
        self.file = file;
        self
    }

    /// Sets the locking and creation of the file.
    pub fn open_options(mut self, open: OpenOptions) -> HashOptions {
        self.open = open;
        self
    }

    /// Sets the buckets of the hash table (tuning, at creation).
    pub fn num_buckets(mut self, num_buckets: u64) -> HashOptions {
        self.num_buckets = num_buckets;
        self
    }

    /// Aligns records to 2^align_pow bytes (tuning, at creation).
    pub fn align_pow(mut self, align_pow: u8) -> HashOptions {
        self.align_pow = align_pow;
        self
    }

    /// Sets the bytes of an offset, 3 to 6 (tuning, at creation).
    pub fn offset_width(mut self, offset_width: u8) -> HashOptions {
        self.offset_width = offset_width;
        self
    }

    /// Sets the capacity of the free block pool.
    pub fn fbp_cap(mut self, fbp_cap: usize) -> HashOptions {
        self.fbp_cap = fbp_cap;
        self
    }

    /// Chooses in-place or appending updates (tuning, at creation).
    pub fn update_mode(mut self, update_mode: UpdateMode) -> HashOptions {
        self.update_mode = update_mode;
        self
    }

    /// Sets whether every read verifies each record's checksum (tuning, at
    /// creation; a reopen keeps the file's own, a rebuild may change it).
    pub fn record_crc_mode(mut self, record_crc_mode: RecordCrcMode) -> HashOptions {
        self.record_crc_mode = record_crc_mode;
        self
    }

    /// Sets how values are compressed (tuning, at creation; a reopen keeps
    /// the file's own, a rebuild may change it).
    ///
    /// ```
    /// use kuradb::dbm::Dbm;
    /// use kuradb::dbm::hash::{HashDbm, HashOptions, RecordCompMode};
    /// # fn main() -> kuradb::Result<()> {
    /// # if !RecordCompMode::Zstd.is_built() { return Ok(()); }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("casket.kh");
    /// let options = HashOptions::default().record_comp_mode(RecordCompMode::Zstd);
    /// let db = options.open(&path)?;
    /// db.set(b"japan", "tokyo ".repeat(100).as_bytes())?;
    /// db.close()?;
    /// // The mode is the file's: a reopen needs no option.
    /// let db = HashDbm::builder().open_read_only(&path)?;
    /// assert_eq!(db.record_comp_mode()?, RecordCompMode::Zstd);
    /// assert_eq!(db.get(b"japan")?.map(|v| v.len()), Some(600));
    /// # Ok(())
    /// # }
    /// ```
    pub fn record_comp_mode(mut self, record_comp_mode: RecordCompMode) -> HashOptions {
        self.record_comp_mode = record_comp_mode;
        self
    }

    /// Grows the bucket array by itself, or not (see
    /// [`HashOptions::auto_grow`](HashOptions#structfield.auto_grow)).
    pub fn auto_grow(mut self, auto_grow: bool) -> HashOptions {
        self.auto_grow = auto_grow;
        self
    }

    /// Keeps the bucket array in memory, or not.
    pub fn cache_buckets(mut self, cache_buckets: bool) -> HashOptions {
        self.cache_buckets = cache_buckets;
        self
    }

    /// Sets the fewest bytes read for a record.
    pub fn min_read_size(mut self, min_read_size: usize) -> HashOptions {
        self.min_read_size = min_read_size;
        self
    }

    /// Sets what to do with a file that was not closed cleanly.
    pub fn restore(mut self, restore: RestoreMode) -> HashOptions {
        self.restore = restore;
        self
    }

    /// Sets the key the values are encrypted with (see
    /// [`HashOptions::cipher_key`](HashOptions#structfield.cipher_key)).
    pub fn cipher_key(mut self, key: impl Into<CipherKey>) -> HashOptions {
        self.cipher_key = Some(key.into());
        self
    }

    /// Wraps every file the database opens (for tests).
    #[doc(hidden)]
    pub fn wrap_file(mut self, wrap_file: Option<FileWrapper>) -> HashOptions {
        self.wrap_file = wrap_file;
        self
    }

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
            // The reference's default: 4 bytes address 2^32 aligned units
            // (32 GiB at align_pow 3, 512 GiB at 7), and a cached bucket
            // array costs 4 bytes a bucket instead of 5.
            offset_width: 4,
            fbp_cap: 2048,
            update_mode: UpdateMode::InPlace,
            record_crc_mode: RecordCrcMode::None,
            record_comp_mode: RecordCompMode::None,
            cache_buckets: false,
            auto_grow: true,
            min_read_size: 256,
            restore: RestoreMode::Automatic,
            cipher_key: None,
            wrap_file: None,
        }
    }
}
