//! Naming a file implementation and its options at run time.

use std::fmt;
use std::path::PathBuf;

use super::{File, IoEngine, MmapFile, OpenOptions, PositionalFile};
use crate::error::{Error, ErrorKind, Result};

/// The four file implementations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// Memory mapping, no whole-file lock (`mmap-para`).
    MmapParallel,
    /// Memory mapping with a whole-file reader-writer lock (`mmap-atom`).
    MmapAtomic,
    /// `pread`/`pwrite`, no whole-file lock (`pos-para`).
    PositionalParallel,
    /// `pread`/`pwrite` with a whole-file reader-writer lock (`pos-atom`).
    PositionalAtomic,
}

impl FileKind {
    /// Every kind, in the order the tools list them.
    pub const ALL: [FileKind; 4] = [
        FileKind::MmapParallel,
        FileKind::MmapAtomic,
        FileKind::PositionalParallel,
        FileKind::PositionalAtomic,
    ];

    /// The short name the CLI uses (`mmap-para`, …).
    pub fn name(self) -> &'static str {
        match self {
            FileKind::MmapParallel => "mmap-para",
            FileKind::MmapAtomic => "mmap-atom",
            FileKind::PositionalParallel => "pos-para",
            FileKind::PositionalAtomic => "pos-atom",
        }
    }

    /// The reference implementation's class name (`MemoryMapParallelFile`, …).
    pub fn class_name(self) -> &'static str {
        match self {
            FileKind::MmapParallel => "MemoryMapParallelFile",
            FileKind::MmapAtomic => "MemoryMapAtomicFile",
            FileKind::PositionalParallel => "PositionalParallelFile",
            FileKind::PositionalAtomic => "PositionalAtomicFile",
        }
    }

    /// Parses a short name or a class name, ignoring case. The reference's
    /// `StdFile` (`std`), a file of the C++ standard streams with every
    /// operation under one mutex, is the positional file with a whole-file
    /// lock (`pos-atom`): plain reads and writes, no memory map, atomic.
    pub fn parse(name: &str) -> Result<FileKind> {
        let lower = name.trim().to_ascii_lowercase();
        if lower == "std" || lower == "stdfile" {
            return Ok(FileKind::PositionalAtomic);
        }
        FileKind::ALL
            .into_iter()
            .find(|k| lower == k.name() || lower == k.class_name().to_ascii_lowercase())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown file implementation {name:?}: expected one of mmap-para, mmap-atom, \
                         pos-para, pos-atom"
                    ),
                )
            })
    }

    /// Whether this kind takes a whole-file lock.
    pub fn is_atomic(self) -> bool {
        matches!(self, FileKind::MmapAtomic | FileKind::PositionalAtomic)
    }

    /// Whether this kind uses positional system calls (and so takes block I/O,
    /// direct I/O, the page cache and the head buffer).
    pub fn is_positional(self) -> bool {
        matches!(self, FileKind::PositionalParallel | FileKind::PositionalAtomic)
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A file implementation with every option: what [`FileSpec::open`] opens.
///
/// Its text form is a comma-separated list: the implementation's name, then
/// `name=value` parameters. A word without `=` after a parameter continues that
/// parameter's value, so access options may be separated by commas or `+`:
///
/// ```
/// use kuradb::file::{FileKind, FileSpec};
/// let spec = FileSpec::parse("pos-para,block_size=512,access=direct,padding,pagecache").unwrap();
/// assert_eq!(spec.kind, FileKind::PositionalParallel);
/// assert!(spec.direct && spec.padding && spec.pagecache && !spec.sync);
/// assert_eq!(FileSpec::parse(&spec.to_string()).unwrap(), spec);
/// assert!(FileSpec::parse("pos-para,block_size=500").is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FileSpec {
    /// The implementation.
    pub kind: FileKind,
    /// Bytes reserved on disk when a writer opens a smaller file.
    pub alloc_init: u64,
    /// Factor by which the reserved space grows when a write passes its end.
    pub alloc_inc: f64,
    /// Unit of every system call: 1 (no block I/O) or a power of two.
    pub block_size: u64,
    /// Bypass the OS page cache (O_DIRECT); needs `block_size >= 512`.
    pub direct: bool,
    /// Make every write wait for the device (O_SYNC).
    pub sync: bool,
    /// Ask the database to pad the file's end to a multiple of the block size.
    /// The file layer itself never writes padding; it carries the wish.
    pub padding: bool,
    /// Keep recently used blocks in an in-process cache.
    pub pagecache: bool,
    /// Capacity of the page cache, in blocks: a cap on its memory at all times.
    /// `None` takes [`default_page_cache_capacity`] of the block size
    /// (512 KiB of blocks, 256 to 1024 of them); [`FileSpec::page_cache_blocks`]
    /// answers the capacity in effect.
    pub page_cache_capacity: Option<usize>,
    /// The share of the page cache, in percent (0 to 100), that blocks used
    /// again by lookups may hold (its protected segment); the rest is for
    /// blocks used once and for scans. 0 makes the cache a plain LRU; near
    /// 100, a scan finds little room of its own and evicts the working set.
    /// With read-ahead on, its 20% of the cache comes out of this share.
    pub page_cache_protected_percent: u8,
    /// Bytes a page-cache miss of a read inside one block reads from the
    /// device: the aligned range of this size around the missed block,
    /// whose other missing blocks are cached too (read-ahead), in at most a
    /// fifth of the cache taken from the protected share. 0 or a power of
    /// two; at most 64 blocks, and an eighth of a cache shard, are read
    /// together; no more than the block size reads the missed block alone.
    /// `None` takes [`DEFAULT_PAGE_CACHE_READ_AHEAD`] with direct I/O and
    /// none without it; [`FileSpec::page_cache_read_ahead_bytes`] answers
    /// the bytes in effect.
    pub page_cache_read_ahead: Option<u64>,
    /// Bytes at the file's start kept in memory, written back on sync and close.
    pub head_buffer: u64,
    /// How batched reads ([`File::read_many`]) reach the OS.
    pub io_engine: IoEngine,
}

impl Default for FileSpec {
    fn default() -> FileSpec {
        FileSpec::new(FileKind::MmapParallel)
    }
}

/// The default of [`FileSpec::alloc_init`]: 1 MiB.
pub const DEFAULT_ALLOC_INIT: u64 = 1 << 20;
/// The default of [`FileSpec::alloc_inc`].
pub const DEFAULT_ALLOC_INC: f64 = 2.0;
/// The bytes of blocks a page cache holds when its capacity is not given:
/// 512 KiB, as large as keeps the hash database with the page cache under
/// the reference's memory on the benchmark's rows, where 16 threads' gets
/// then find their neighbours cached (docs/caches.md, "The default
/// capacity"; bench/results/2026-11-29-caches.md).
pub const DEFAULT_PAGE_CACHE_BYTES: u64 = 512 << 10;

/// The page cache's capacity in blocks when [`FileSpec::page_cache_capacity`]
/// is not given: [`DEFAULT_PAGE_CACHE_BYTES`] of blocks of `block_size`
/// bytes, at least 256 blocks (so large blocks keep the count the reference
/// uses) and at most 1024 (so tiny blocks do not pay more in bookkeeping
/// than in data).
///
/// ```
/// use kuradb::file::default_page_cache_capacity;
/// assert_eq!(default_page_cache_capacity(512), 1024);
/// assert_eq!(default_page_cache_capacity(1024), 512);
/// assert_eq!(default_page_cache_capacity(4096), 256);
/// ```
pub fn default_page_cache_capacity(block_size: u64) -> usize {
    (DEFAULT_PAGE_CACHE_BYTES / block_size.max(1)).clamp(256, 1024) as usize
}

/// The read-ahead of a page cache over direct I/O when
/// [`FileSpec::page_cache_read_ahead`] is not given: 4 KiB, which a device
/// reads about as fast as one 512-byte block. Without direct I/O a miss is
/// a copy out of the OS's page cache, which costs less than caching
/// neighbours that lookups spread over the file never ask for, so the
/// default there is no read-ahead (docs/caches.md, "Read-ahead").
pub const DEFAULT_PAGE_CACHE_READ_AHEAD: u64 = 4096;

impl FileSpec {
    /// The implementation `kind` with default options.
    pub fn new(kind: FileKind) -> FileSpec {
        FileSpec {
            kind,
            alloc_init: DEFAULT_ALLOC_INIT,
            alloc_inc: DEFAULT_ALLOC_INC,
            block_size: 1,
            direct: false,
            sync: false,
            padding: false,
            pagecache: false,
            page_cache_capacity: None,
            page_cache_protected_percent: crate::caching::DEFAULT_PROTECTED_PERCENT,
            page_cache_read_ahead: None,
            head_buffer: 0,
            io_engine: IoEngine::Auto,
        }
    }

    /// The page cache's capacity in blocks: the one given, or the default
    /// for the block size ([`default_page_cache_capacity`]).
    pub fn page_cache_blocks(&self) -> usize {
        self.page_cache_capacity.unwrap_or_else(|| default_page_cache_capacity(self.block_size))
    }

    /// The page cache's read-ahead in bytes: the one given, or
    /// [`DEFAULT_PAGE_CACHE_READ_AHEAD`] with direct I/O and 0 (none)
    /// without it.
    ///
    /// ```
    /// use kuradb::file::{FileSpec, DEFAULT_PAGE_CACHE_READ_AHEAD};
    /// let buffered = FileSpec::parse("pos-para,block_size=512,access=pagecache").unwrap();
    /// assert_eq!(buffered.page_cache_read_ahead_bytes(), 0);
    /// let direct = FileSpec::parse("pos-para,block_size=512,access=direct+pagecache").unwrap();
    /// assert_eq!(direct.page_cache_read_ahead_bytes(), DEFAULT_PAGE_CACHE_READ_AHEAD);
    /// let given = FileSpec::parse("pos-para,block_size=512,access=pagecache,page_cache_read_ahead=8192").unwrap();
    /// assert_eq!(given.page_cache_read_ahead_bytes(), 8192);
    /// ```
    pub fn page_cache_read_ahead_bytes(&self) -> u64 {
        self.page_cache_read_ahead.unwrap_or(if self.direct { DEFAULT_PAGE_CACHE_READ_AHEAD } else { 0 })
    }

    /// Parses the text form (see the type's documentation) and validates it.
    pub fn parse(text: &str) -> Result<FileSpec> {
        let mut spec = FileSpec::default();
        let mut last: Option<String> = None;
        let mut values: Vec<(String, String)> = Vec::new();
        for (i, word) in text.split(',').map(str::trim).enumerate() {
            if word.is_empty() {
                continue;
            }
            match word.split_once('=') {
                Some((name, value)) => {
                    values.push((name.trim().to_string(), value.trim().to_string()));
                    last = Some(name.to_string());
                }
                None if i == 0 => spec.kind = FileKind::parse(word)?,
                None => match (last.as_ref(), values.last_mut()) {
                    (Some(_), Some((_, value))) => {
                        value.push(',');
                        value.push_str(word);
                    }
                    _ => {
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!("file parameter {word:?} has no value: expected name=value"),
                        ))
                    }
                },
            }
        }
        for (name, value) in values {
            if !spec.set(&name, &value)? {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("unknown file parameter {name:?}"),
                ));
            }
        }
        spec.validate()?;
        Ok(spec)
    }

    /// Sets one parameter by name from its text value. Answers `Ok(false)` if the
    /// name is not a file parameter (so a caller parsing a larger parameter set can
    /// try its own), and an error if the value is malformed.
    ///
    /// Names: `file` (the implementation), `block_size`, `access_options` or
    /// `access` (words among `direct`, `sync`, `padding`, `pagecache`, separated
    /// by `,`, `+`, `|` or spaces), `alloc_init_size` or `alloc_init`,
    /// `alloc_inc_factor` or `alloc_inc`, `head_buffer_size` or `head_buffer`,
    /// `page_cache_capacity`, `page_cache_protected_percent`,
    /// `page_cache_read_ahead`, `io_engine`
    /// (`auto`, `uring`, `threads` or `serial`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<bool> {
        match name {
            "file" => self.kind = FileKind::parse(value)?,
            "block_size" => self.block_size = parse_number(name, value)?,
            "access_options" | "access" => {
                self.direct = false;
                self.sync = false;
                self.padding = false;
                self.pagecache = false;
                for word in value.split([',', '+', '|', ' ']).map(str::trim) {
                    match word.to_ascii_lowercase().as_str() {
                        "" => {}
                        "direct" => self.direct = true,
                        "sync" => self.sync = true,
                        "padding" => self.padding = true,
                        "pagecache" => self.pagecache = true,
                        _ => {
                            return Err(Error::new(
                                ErrorKind::InvalidArgument,
                                format!(
                                    "unknown access option {word:?}: expected direct, sync, padding \
                                     or pagecache"
                                ),
                            ))
                        }
                    }
                }
            }
            "alloc_init_size" | "alloc_init" => self.alloc_init = parse_number(name, value)?,
            "alloc_inc_factor" | "alloc_inc" => {
                self.alloc_inc = value.trim().parse::<f64>().map_err(|_| {
                    Error::new(ErrorKind::InvalidArgument, format!("{name} must be a number, not {value:?}"))
                })?
            }
            "head_buffer_size" | "head_buffer" => self.head_buffer = parse_number(name, value)?,
            "page_cache_capacity" => self.page_cache_capacity = Some(parse_number(name, value)? as usize),
            "io_engine" => self.io_engine = IoEngine::parse(value, name)?,
            "page_cache_protected_percent" => {
                self.page_cache_protected_percent = parse_percent(name, value)?;
            }
            "page_cache_read_ahead" => self.page_cache_read_ahead = Some(parse_number(name, value)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks that the options fit together, naming the first that does not.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::new(ErrorKind::InvalidArgument, msg));
        if !self.alloc_inc.is_finite() || self.alloc_inc < 1.0 {
            return bad(format!("alloc_inc must be at least 1.0, not {}", self.alloc_inc));
        }
        if self.block_size == 0 || !self.block_size.is_power_of_two() {
            return bad(format!("block_size must be a power of two, not {}", self.block_size));
        }
        if self.block_size > 1 << 24 {
            return bad(format!("block_size must be at most 16 MiB, not {}", self.block_size));
        }
        if !self.kind.is_positional() {
            let what = if self.block_size > 1 {
                Some("block_size")
            } else if self.direct {
                Some("direct I/O")
            } else if self.sync {
                Some("sync I/O")
            } else if self.padding {
                Some("padding")
            } else if self.pagecache {
                Some("the page cache")
            } else if self.head_buffer > 0 {
                Some("the head buffer")
            } else if self.io_engine != IoEngine::Auto {
                Some("io_engine")
            } else {
                None
            };
            if let Some(what) = what {
                return bad(format!(
                    "{what} needs a positional file (pos-para or pos-atom), not {}",
                    self.kind
                ));
            }
        }
        if self.direct && self.block_size < 512 {
            return bad(format!("direct I/O needs block_size of at least 512, not {}", self.block_size));
        }
        if self.padding && self.block_size < 2 {
            return bad("padding needs block I/O (block_size of 2 or more)".to_string());
        }
        if self.pagecache && self.page_cache_capacity == Some(0) {
            return bad("page_cache_capacity must be at least 1".to_string());
        }
        if self.page_cache_protected_percent > 100 {
            return bad(format!(
                "page_cache_protected_percent must be at most 100, not {}",
                self.page_cache_protected_percent
            ));
        }
        if let Some(bytes) = self.page_cache_read_ahead.filter(|&b| b != 0 && !b.is_power_of_two()) {
            return bad(format!("page_cache_read_ahead must be 0 or a power of two, not {bytes}"));
        }
        Ok(())
    }

    /// Opens the file at `path` with this implementation and these options.
    pub fn open(&self, path: impl Into<PathBuf>, options: &OpenOptions) -> Result<Box<dyn File>> {
        self.validate()?;
        let path = path.into();
        Ok(if self.kind.is_positional() {
            Box::new(PositionalFile::open(path, options, self)?)
        } else {
            Box::new(MmapFile::open(path, options, self)?)
        })
    }
}

impl fmt::Display for FileSpec {
    /// The text form [`FileSpec::parse`] reads, listing only non-default options.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = FileSpec::new(self.kind);
        f.write_str(self.kind.name())?;
        if self.alloc_init != default.alloc_init {
            write!(f, ",alloc_init_size={}", self.alloc_init)?;
        }
        if self.alloc_inc != default.alloc_inc {
            write!(f, ",alloc_inc_factor={}", self.alloc_inc)?;
        }
        if self.block_size != default.block_size {
            write!(f, ",block_size={}", self.block_size)?;
        }
        let access: Vec<&str> = [
            (self.direct, "direct"),
            (self.sync, "sync"),
            (self.padding, "padding"),
            (self.pagecache, "pagecache"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if !access.is_empty() {
            write!(f, ",access_options={}", access.join("+"))?;
        }
        if let Some(capacity) = self.page_cache_capacity {
            write!(f, ",page_cache_capacity={capacity}")?;
        }
        if self.page_cache_protected_percent != default.page_cache_protected_percent {
            write!(f, ",page_cache_protected_percent={}", self.page_cache_protected_percent)?;
        }
        if let Some(bytes) = self.page_cache_read_ahead {
            write!(f, ",page_cache_read_ahead={bytes}")?;
        }
        if self.head_buffer != default.head_buffer {
            write!(f, ",head_buffer_size={}", self.head_buffer)?;
        }
        if self.io_engine != default.io_engine {
            write!(f, ",io_engine={}", self.io_engine)?;
        }
        Ok(())
    }
}

/// A share in percent: an integer from 0 to 100.
pub(crate) fn parse_percent(name: &str, value: &str) -> Result<u8> {
    match parse_number(name, value)? {
        n @ 0..=100 => Ok(n as u8),
        n => Err(Error::new(ErrorKind::InvalidArgument, format!("{name} must be at most 100, not {n}"))),
    }
}

fn parse_number(name: &str, value: &str) -> Result<u64> {
    value.trim().parse::<u64>().map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("{name} must be a non-negative integer, not {value:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_class_names_parse() {
        for kind in FileKind::ALL {
            assert_eq!(FileKind::parse(kind.name()).unwrap(), kind);
            assert_eq!(FileKind::parse(kind.class_name()).unwrap(), kind);
        }
        assert_eq!(FileKind::parse("StdFile").unwrap(), FileKind::PositionalAtomic);
        assert_eq!(FileKind::parse("std").unwrap(), FileKind::PositionalAtomic);
        let err = FileKind::parse("stdio").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("\"stdio\""));
    }

    #[test]
    fn access_options_accept_every_separator() {
        for text in [
            "pos-atom,block_size=4096,access=direct+sync",
            "pos-atom,block_size=4096,access_options=direct,sync",
            "file=pos-atom,block_size=4096,access=direct|sync",
        ] {
            let spec = FileSpec::parse(text).unwrap();
            assert_eq!(spec.kind, FileKind::PositionalAtomic, "{text}");
            assert!(spec.direct && spec.sync && !spec.pagecache && !spec.padding, "{text}");
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let cases = [
            ("pos-para,block_size=3", "block_size must be a power of two"),
            ("pos-para,block_size=x", "block_size must be a non-negative integer"),
            ("pos-para,access=fast", "unknown access option \"fast\""),
            ("pos-para,colour=red", "unknown file parameter \"colour\""),
            ("pos-para,access=direct", "direct I/O needs block_size of at least 512"),
            ("mmap-para,block_size=512", "block_size needs a positional file"),
            ("mmap-atom,head_buffer=4096", "the head buffer needs a positional file"),
            ("pos-para,alloc_inc=0.5", "alloc_inc must be at least 1.0"),
            ("pos-para,block_size=512,access=pagecache,page_cache_capacity=0", "page_cache_capacity"),
            ("pos-para,io_engine=fast", "io_engine must be one of auto, uring, threads, serial"),
            ("mmap-para,io_engine=threads", "io_engine needs a positional file"),
            ("pos-para,page_cache_protected_percent=101", "page_cache_protected_percent must be at most 100"),
            ("pos-para,page_cache_protected_percent=300", "page_cache_protected_percent must be at most 100"),
            ("pos-para,page_cache_read_ahead=3000", "page_cache_read_ahead must be 0 or a power of two"),
        ];
        for (text, expected) in cases {
            let err = FileSpec::parse(text).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{text}");
            assert!(err.to_string().contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn display_round_trips() {
        let mut spec = FileSpec::new(FileKind::PositionalAtomic);
        spec.block_size = 1024;
        spec.pagecache = true;
        spec.page_cache_capacity = Some(77);
        spec.page_cache_protected_percent = 50;
        spec.page_cache_read_ahead = Some(0);
        spec.head_buffer = 8192;
        spec.alloc_init = 4096;
        spec.alloc_inc = 1.5;
        spec.io_engine = IoEngine::Serial;
        assert!(spec.to_string().contains(",io_engine=serial"), "{spec}");
        assert_eq!(FileSpec::parse(&spec.to_string()).unwrap(), spec);
        assert_eq!(FileSpec::default().to_string(), "mmap-para");
    }
}
