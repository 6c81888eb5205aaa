//! Direct I/O on a real filesystem: the file really is opened with O_DIRECT,
//! unaligned data of any length survives a reopen, and a filesystem that refuses
//! O_DIRECT (tmpfs) gets a clear `NotImplemented` error.

mod common;

use std::os::unix::fs::OpenOptionsExt;

use common::ExpectSpec;
use kuradb::file::{FileKind, FileSpec, OpenOptions};
use kuradb::ErrorKind;

fn direct_spec(kind: FileKind, block_size: u64, pagecache: bool) -> FileSpec {
    common::spec(kind, |s| {
        s.block_size = block_size;
        s.direct = true;
        s.pagecache = pagecache;
    })
}

/// A direct-I/O file holds its descriptor with O_DIRECT, and one without the
/// option does not.
#[test]
fn direct_io_opens_with_o_direct() {
    if !common::direct_io_supported() {
        eprintln!("skipped: O_DIRECT is refused here (see above)");
        return;
    }
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (spec, direct) in [
        (direct_spec(FileKind::PositionalParallel, 512, false), true),
        (direct_spec(FileKind::PositionalAtomic, 4096, true), true),
        (common::spec(FileKind::PositionalParallel, |s| s.block_size = 512), false),
    ] {
        let (path, mut file) = common::create(&spec, dir.path(), "flags.dat");
        file.write(0, b"x").expect_spec(&spec, "write");
        let flags = common::open_flags(&path);
        assert!(!flags.is_empty(), "[{spec}] no descriptor of {} found", path.display());
        for f in flags {
            assert_eq!(f & libc::O_DIRECT != 0, direct, "[{spec}] O_DIRECT in flags {f:o}");
        }
        file.close().expect_spec(&spec, "close");
    }
}

/// Unaligned writes of odd lengths through direct I/O read back exactly, and
/// after close the file on disk has exactly the logical size and the bytes,
/// whether reopened with direct I/O or read plainly.
#[test]
fn direct_io_round_trips_unaligned_data() {
    if !common::direct_io_supported() {
        eprintln!("skipped: O_DIRECT is refused here (see above)");
        return;
    }
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for kind in [FileKind::PositionalParallel, FileKind::PositionalAtomic] {
        for block_size in [512, 4096] {
            for pagecache in [false, true] {
                let spec = direct_spec(kind, block_size, pagecache);
                let (path, mut file) = common::create(&spec, dir.path(), "direct.dat");
                let mut expected = Vec::new();
                for (offset, len) in [(0, 1), (1, 511), (511, 2), (700, 5000), (4095, 4098), (9001, 3)] {
                    let data = common::pattern(offset, len);
                    file.write(offset, &data).expect_spec(&spec, format_args!("write {len} at {offset}"));
                    let end = offset as usize + len;
                    if end > expected.len() {
                        expected.resize(end, 0);
                    }
                    expected[offset as usize..end].copy_from_slice(&data);
                }
                let tail = file.append(b"tail").expect_spec(&spec, "append");
                assert_eq!(tail, 9004, "[{spec}] append offset");
                expected.extend_from_slice(b"tail");
                common::assert_content(&spec, file.as_ref(), &expected, "before close");
                file.close().expect_spec(&spec, "close");
                assert_eq!(
                    std::fs::read(&path).expect("read the file"),
                    expected,
                    "[{spec}] the file on disk"
                );

                let mut file = common::open(&spec, &path, &OpenOptions::writer());
                common::assert_content(&spec, file.as_ref(), &expected, "reopened");
                file.write(9007, b"!").expect_spec(&spec, "write the last byte again");
                expected[9007] = b'!';
                file.close().expect_spec(&spec, "close again");
                let reader = common::open(&spec, &path, &OpenOptions::reader());
                common::assert_content(&spec, reader.as_ref(), &expected, "reopened read-only");
            }
        }
    }
}

/// Whether `/dev/shm` is a tmpfs mount, from `/proc/mounts`.
fn dev_shm_is_tmpfs() -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(1) == Some(&"/dev/shm") && fields.get(2) == Some(&"tmpfs")
    })
}

/// Opening a direct-I/O file on tmpfs, which refuses O_DIRECT, fails with
/// `NotImplemented` and a message naming O_DIRECT and the path.
#[test]
fn direct_io_on_tmpfs_is_not_implemented() {
    if !dev_shm_is_tmpfs() {
        eprintln!("skipped: /dev/shm is absent or not a tmpfs mount");
        return;
    }
    let dir = tempfile::tempdir_in("/dev/shm").expect("create a directory in /dev/shm");
    let path = dir.path().join("direct.dat");
    let raw = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_DIRECT)
        .open(dir.path().join("probe.dat"));
    if raw.is_ok() {
        eprintln!(
            "skipped: this kernel's tmpfs accepts O_DIRECT (Linux 6.6 and later), so nothing refuses it"
        );
        return;
    }
    for kind in [FileKind::PositionalParallel, FileKind::PositionalAtomic] {
        let spec = direct_spec(kind, 4096, false);
        let err = match spec.open(&path, &OpenOptions::writer()) {
            Ok(_) => panic!("[{spec}] opened {} with O_DIRECT on tmpfs", path.display()),
            Err(err) => err,
        };
        assert_eq!(err.kind(), ErrorKind::NotImplemented, "[{spec}] {err}");
        let text = err.to_string();
        assert!(text.contains("O_DIRECT"), "[{spec}] the error does not name O_DIRECT: {text}");
        assert!(
            text.contains(&path.display().to_string()),
            "[{spec}] the error does not name the path: {text}"
        );
    }
}
