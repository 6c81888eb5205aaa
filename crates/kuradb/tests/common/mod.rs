//! What the file-layer tests share: the matrix of file specs every behaviour is
//! checked against, and helpers that name the spec in every failure. The
//! database tests' helpers are in [`hash`] and [`tree`], the conformance suite
//! every class passes in [`conformance`], the crash tests' loop and helpers
//! in [`crash`], [`child`] and [`power_cut`], the fault sweep's in [`sweep`],
//! a file wrapper that shows every read to a test in [`hooked`].
//!
//! Each test binary uses only part of this module.
#![allow(dead_code)]

pub mod child;
pub mod conformance;
pub mod crash;
pub mod hash;
pub mod hooked;
pub mod power_cut;
pub mod sweep;
pub mod tree;

/// The enum a model's or a strategy's `writable` flag stands for.
pub fn access(writable: bool) -> kuradb::dbm::Access {
    if writable {
        kuradb::dbm::Access::ReadWrite
    } else {
        kuradb::dbm::Access::ReadOnly
    }
}

/// The enum a model's or a strategy's `hard` flag stands for.
pub fn durability(hard: bool) -> kuradb::dbm::Durability {
    if hard {
        kuradb::dbm::Durability::Hard
    } else {
        kuradb::dbm::Durability::Soft
    }
}

/// The enum a model's or a strategy's `inclusive` flag stands for.
pub fn edge(inclusive: bool) -> kuradb::dbm::Edge {
    if inclusive {
        kuradb::dbm::Edge::Inclusive
    } else {
        kuradb::dbm::Edge::Exclusive
    }
}

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kuradb::file::{File, FileKind, FileSpec, OpenOptions};
use kuradb::{ErrorKind, Result};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// The families of specs, each checked by its own test so that a failure names
/// the family and the slow ones (direct and sync I/O) can run fewer cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The two memory-mapped kinds, plain and with tiny allocation steps.
    Mmap,
    /// The two positional kinds without options, plain and with tiny allocation steps.
    Positional,
    /// Block I/O of every tested size, with and without padding.
    Block,
    /// Block I/O through the page cache, tiny (constant eviction) and default.
    PageCache,
    /// The head buffer, alone and with block I/O and the page cache.
    HeadBuffer,
    /// Direct I/O; empty where the test directory's filesystem refuses O_DIRECT.
    Direct,
    /// Synchronous I/O (slow: every write waits for the device).
    Sync,
}

impl Group {
    /// Every group, in the order above.
    pub const ALL: [Group; 7] = [
        Group::Mmap,
        Group::Positional,
        Group::Block,
        Group::PageCache,
        Group::HeadBuffer,
        Group::Direct,
        Group::Sync,
    ];
}

/// The block sizes block I/O is tested with: tiny, small, a sector, a page.
pub const BLOCK_SIZES: [u64; 4] = [2, 64, 512, 4096];

/// A page cache small enough that almost every access evicts a block.
pub const TINY_PAGE_CACHE: usize = 3;

const POSITIONAL: [FileKind; 2] = [FileKind::PositionalParallel, FileKind::PositionalAtomic];
const MMAP: [FileKind; 2] = [FileKind::MmapParallel, FileKind::MmapAtomic];

/// A spec of `kind` with the options `set` gives it; panics if they do not validate,
/// since the matrix must hold only specs a user could open.
pub fn spec(kind: FileKind, set: impl FnOnce(&mut FileSpec)) -> FileSpec {
    let mut spec = FileSpec::new(kind);
    set(&mut spec);
    if let Err(err) = spec.validate() {
        panic!("the test matrix holds an invalid spec {spec}: {err}");
    }
    spec
}

/// `kinds` plain, and with a one-byte initial allocation growing by 1.0 and 3.0.
fn plain_and_tiny_allocation(kinds: [FileKind; 2]) -> Vec<FileSpec> {
    let mut specs = Vec::new();
    for kind in kinds {
        specs.push(FileSpec::new(kind));
        for inc in [1.0, 3.0] {
            specs.push(spec(kind, |s| {
                s.alloc_init = 1;
                s.alloc_inc = inc;
            }));
        }
    }
    specs
}

/// The specs of one group.
pub fn specs(group: Group) -> Vec<FileSpec> {
    let mut specs = Vec::new();
    match group {
        Group::Mmap => specs = plain_and_tiny_allocation(MMAP),
        Group::Positional => specs = plain_and_tiny_allocation(POSITIONAL),
        Group::Block => {
            for kind in POSITIONAL {
                for bs in BLOCK_SIZES {
                    specs.push(spec(kind, |s| s.block_size = bs));
                }
            }
            specs.push(spec(FileKind::PositionalParallel, |s| {
                s.block_size = 512;
                s.padding = true;
            }));
            specs.push(spec(FileKind::PositionalAtomic, |s| {
                s.block_size = 64;
                s.padding = true;
                s.alloc_init = 1;
            }));
        }
        Group::PageCache => {
            for kind in POSITIONAL {
                for bs in BLOCK_SIZES {
                    // A tiny cache (too small to read ahead), and the
                    // default for the block size reading ahead, which a
                    // buffered file does only when asked to.
                    for (capacity, ahead) in [(Some(TINY_PAGE_CACHE), None), (None, Some(4096))] {
                        specs.push(spec(kind, |s| {
                            s.block_size = bs;
                            s.pagecache = true;
                            s.page_cache_capacity = capacity;
                            s.page_cache_read_ahead = ahead;
                        }));
                    }
                }
            }
        }
        Group::HeadBuffer => {
            for kind in POSITIONAL {
                // (head buffer, block size, page cache capacity or 0 for none);
                // 100 is a multiple of no tested block size above 4.
                for (head, bs, cache) in [
                    (100, 1, 0),
                    (4096, 1, 0),
                    (100, 64, 0),
                    (100, 512, TINY_PAGE_CACHE),
                    (4096, 64, TINY_PAGE_CACHE),
                    (100, 4096, 256),
                    // Read-ahead's group of the first block past the head
                    // holds the head's block, which it must not read.
                    (100, 512, 256),
                ] {
                    specs.push(spec(kind, |s| {
                        s.head_buffer = head;
                        s.block_size = bs;
                        s.pagecache = cache > 0;
                        if cache > 0 {
                            s.page_cache_capacity = Some(cache);
                            // Buffered files read ahead only when asked to.
                            s.page_cache_read_ahead = Some(4096);
                        }
                    }));
                }
            }
        }
        Group::Direct => {
            if !direct_io_supported() {
                return specs;
            }
            for kind in POSITIONAL {
                for bs in [512, 4096] {
                    for cache in [false, true] {
                        for head in [0, 100] {
                            specs.push(spec(kind, |s| {
                                s.block_size = bs;
                                s.direct = true;
                                s.pagecache = cache;
                                if cache {
                                    s.page_cache_capacity = Some(TINY_PAGE_CACHE);
                                }
                                s.head_buffer = head;
                            }));
                        }
                    }
                }
            }
            specs.push(spec(FileKind::PositionalParallel, |s| {
                s.block_size = 4096;
                s.direct = true;
                s.padding = true;
                s.alloc_init = 1;
            }));
        }
        Group::Sync => {
            specs.push(spec(FileKind::PositionalParallel, |s| s.sync = true));
            specs.push(spec(FileKind::PositionalAtomic, |s| {
                s.sync = true;
                s.block_size = 512;
                s.pagecache = true;
                s.page_cache_capacity = Some(TINY_PAGE_CACHE);
                s.head_buffer = 100;
            }));
        }
    }
    specs
}

/// Every spec of every group.
pub fn matrix() -> Vec<FileSpec> {
    Group::ALL.into_iter().flat_map(specs).collect()
}

/// Every spec except the slow synchronous ones.
pub fn matrix_without_sync() -> Vec<FileSpec> {
    Group::ALL.into_iter().filter(|g| *g != Group::Sync).flat_map(specs).collect()
}

/// Whether the filesystem of `tempfile::tempdir()` accepts O_DIRECT, probed once
/// per test binary; says why on stderr when it does not.
pub fn direct_io_supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let path = dir.path().join("direct-probe.dat");
        let probe = spec(FileKind::PositionalParallel, |s| {
            s.block_size = 4096;
            s.direct = true;
        });
        match probe.open(&path, &OpenOptions::writer()) {
            Ok(mut file) => {
                file.close().expect_spec(&probe, "close the direct I/O probe");
                true
            }
            Err(err) if err.kind() == ErrorKind::NotImplemented => {
                eprintln!(
                    "skipping direct I/O specs: the filesystem of {} refuses O_DIRECT: {err}",
                    dir.path().display()
                );
                false
            }
            Err(err) => panic!("probing direct I/O with {probe} at {}: {err}", path.display()),
        }
    })
}

/// Unwrapping a kuradb result with a panic message that names the spec.
pub trait ExpectSpec<T> {
    /// The value, or a panic naming `spec`, `what` was being done and the error.
    fn expect_spec(self, spec: &FileSpec, what: impl Display) -> T;
}

impl<T> ExpectSpec<T> for Result<T> {
    #[track_caller]
    fn expect_spec(self, spec: &FileSpec, what: impl Display) -> T {
        match self {
            Ok(value) => value,
            Err(err) => panic!("[{spec}] {what}: {err}"),
        }
    }
}

/// Opens `path` with `spec` and `options`, panicking with the spec's name on error.
#[track_caller]
pub fn open(spec: &FileSpec, path: &Path, options: &OpenOptions) -> Box<dyn File> {
    spec.open(path, options).expect_spec(spec, format_args!("open {}", path.display()))
}

/// A fresh, empty file `name` in `dir`, opened for writing.
#[track_caller]
pub fn create(spec: &FileSpec, dir: &Path, name: &str) -> (PathBuf, Box<dyn File>) {
    let path = dir.join(name);
    let file = open(spec, &path, &OpenOptions::writer().truncating());
    (path, file)
}

/// `len` pseudo-random bytes determined by `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0; len];
    SmallRng::seed_from_u64(seed).fill_bytes(&mut data);
    data
}

/// The whole logical content of `file`.
pub fn read_all(file: &dyn File) -> Result<Vec<u8>> {
    let mut data = vec![0; file.size() as usize];
    file.read(0, &mut data)?;
    Ok(data)
}

/// The first offset where `actual` and `expected` differ, for failure messages
/// that would otherwise print kilobytes.
pub fn first_difference(actual: &[u8], expected: &[u8]) -> Option<usize> {
    actual
        .iter()
        .zip(expected)
        .position(|(a, e)| a != e)
        .or_else(|| (actual.len() != expected.len()).then(|| actual.len().min(expected.len())))
}

/// Panics, naming `spec` and the first differing offset, unless `file` holds
/// exactly `expected`.
#[track_caller]
pub fn assert_content(spec: &FileSpec, file: &dyn File, expected: &[u8], when: &str) {
    assert_eq!(file.size(), expected.len() as u64, "[{spec}] size {when}");
    let actual = read_all(file).expect_spec(spec, format_args!("read everything {when}"));
    if let Some(at) = first_difference(&actual, expected) {
        let show = |d: &[u8]| d[at..d.len().min(at + 16)].to_vec();
        panic!(
            "[{spec}] content {when} differs first at offset {at} of {}: read {:?}, expected {:?}",
            expected.len(),
            show(&actual),
            show(expected)
        );
    }
}

/// Every descriptor this process holds on `path`.
pub fn descriptors(path: &Path) -> Vec<i32> {
    let target = path.canonicalize().expect("canonicalize the path");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").expect("list /proc/self/fd") {
        let fd = entry.expect("read /proc/self/fd").file_name();
        let Ok(link) = std::fs::read_link(Path::new("/proc/self/fd").join(&fd)) else { continue };
        if link == target {
            found.push(fd.to_string_lossy().parse().expect("descriptors are numbers"));
        }
    }
    found
}

/// The open-file flags (as in `/proc/self/fdinfo`) of every descriptor this
/// process holds on `path`.
pub fn open_flags(path: &Path) -> Vec<i32> {
    let mut flags = Vec::new();
    for fd in descriptors(path) {
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) else { continue };
        let line = info.lines().find_map(|l| l.strip_prefix("flags:")).expect("fdinfo has flags");
        flags.push(i32::from_str_radix(line.trim(), 8).expect("flags are octal"));
    }
    flags
}
