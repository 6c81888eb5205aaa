//! The command-line flags that choose a file implementation and its options.
//!
//! The names follow the reference tools (`--block_size`, `--direct_io`, …) so a
//! command line written for `tkrzw_file_perf` or `tkrzw_dbm_perf` runs unchanged.

use clap::Args;
use kuradb::file::{FileKind, FileSpec};
use kuradb::Result;

use crate::dbm_options::Given;

/// Flags naming a [`FileSpec`]: the implementation and every option of it.
#[derive(Args, Clone, Debug)]
pub struct FileOptions {
    /// The file implementation: mmap-para, mmap-atom, pos-para or pos-atom.
    #[arg(long = "file", value_name = "IMPL", default_value = "mmap-para", value_parser = parse_kind)]
    pub file: FileKind,

    /// Bytes reserved on disk when a writer opens a smaller file [default: 1048576].
    #[arg(long = "alloc_init", value_name = "NUM")]
    pub alloc_init: Option<u64>,

    /// Factor by which the reserved space grows [default: 2.0].
    #[arg(long = "alloc_inc", value_name = "NUM")]
    pub alloc_inc: Option<f64>,

    /// The block size of the positional file: every system call reads or writes whole blocks.
    #[arg(long = "block_size", value_name = "NUM", default_value_t = 1)]
    pub block_size: u64,

    /// Bytes at the head of the positional file kept in memory until synchronization.
    #[arg(long = "head_buffer", value_name = "NUM", default_value_t = 0)]
    pub head_buffer: u64,

    /// Bypasses the OS page cache (O_DIRECT); needs --block_size of 512 or more.
    #[arg(long = "direct_io")]
    pub direct_io: bool,

    /// Makes every write wait for the device (O_SYNC).
    #[arg(long = "sync_io")]
    pub sync_io: bool,

    /// Pads the end of the file to a multiple of the block size.
    #[arg(long = "padding")]
    pub padding: bool,

    /// Keeps recently used blocks in an in-process page cache.
    #[arg(long = "pagecache")]
    pub pagecache: bool,

    /// The capacity of the page cache, in blocks [default: 512 KiB of blocks, 256 to 1024 of them].
    #[arg(long = "page_cache_capacity", value_name = "NUM")]
    pub page_cache_capacity: Option<usize>,

    /// The share of the page cache, in percent, for blocks lookups use again
    /// (its protected segment; 0 makes it a plain LRU) [default: 80].
    #[arg(long = "page_cache_protected_percent", value_name = "NUM",
          value_parser = clap::builder::RangedU64ValueParser::<u8>::new().range(0..=100))]
    pub page_cache_protected_percent: Option<u8>,

    /// Bytes a page-cache miss reads: the aligned range around the missed
    /// block, whose other missing blocks are cached too (0 or a power of
    /// two; the block size or less turns read-ahead off) [default: 4096
    /// with --direct_io, 0 without].
    #[arg(long = "page_cache_read_ahead", value_name = "BYTES")]
    pub page_cache_read_ahead: Option<u64>,
}

impl FileOptions {
    /// The file specification these flags describe, checked for consistency.
    pub fn spec(&self) -> Result<FileSpec> {
        let mut spec = FileSpec::new(self.file);
        if let Some(alloc_init) = self.alloc_init {
            spec.alloc_init = alloc_init;
        }
        if let Some(alloc_inc) = self.alloc_inc {
            spec.alloc_inc = alloc_inc;
        }
        spec.block_size = self.block_size;
        spec.head_buffer = self.head_buffer;
        spec.direct = self.direct_io;
        spec.sync = self.sync_io;
        spec.padding = self.padding;
        spec.pagecache = self.pagecache;
        if let Some(capacity) = self.page_cache_capacity {
            spec.page_cache_capacity = Some(capacity);
        }
        if let Some(percent) = self.page_cache_protected_percent {
            spec.page_cache_protected_percent = percent;
        }
        if let Some(bytes) = self.page_cache_read_ahead {
            spec.page_cache_read_ahead = Some(bytes);
        }
        spec.validate()?;
        Ok(spec)
    }
}

impl FileOptions {
    /// The flags given that differ from the defaults, as the parameters
    /// they stand for (`--file` aside: every file database takes it). Each
    /// access flag is a word of the one `access` parameter.
    pub fn given(&self) -> Vec<Given> {
        let mut out = Vec::new();
        if let Some(n) = self.alloc_init {
            out.push(Given::new("--alloc_init", "alloc_init_size", n));
        }
        if let Some(f) = self.alloc_inc {
            out.push(Given::new("--alloc_inc", "alloc_inc_factor", f));
        }
        if self.block_size != 1 {
            out.push(Given::new("--block_size", "block_size", self.block_size));
        }
        if self.head_buffer != 0 {
            out.push(Given::new("--head_buffer", "head_buffer_size", self.head_buffer));
        }
        for (flag, word, given) in [
            ("--direct_io", "direct", self.direct_io),
            ("--sync_io", "sync", self.sync_io),
            ("--padding", "padding", self.padding),
            ("--pagecache", "pagecache", self.pagecache),
        ] {
            if given {
                out.push(Given::new(flag, "access", word));
            }
        }
        if let Some(n) = self.page_cache_capacity {
            out.push(Given::new("--page_cache_capacity", "page_cache_capacity", n));
        }
        if let Some(n) = self.page_cache_protected_percent {
            out.push(Given::new("--page_cache_protected_percent", "page_cache_protected_percent", n));
        }
        if let Some(n) = self.page_cache_read_ahead {
            out.push(Given::new("--page_cache_read_ahead", "page_cache_read_ahead", n));
        }
        out
    }
}

/// Lets clap report an unknown implementation with the library's own message,
/// which names the value and lists the valid ones.
fn parse_kind(name: &str) -> std::result::Result<FileKind, String> {
    FileKind::parse(name).map_err(|e| e.message().to_string())
}
