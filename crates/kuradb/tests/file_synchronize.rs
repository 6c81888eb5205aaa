//! Synchronization hands the process's buffers to the operating system: after
//! `synchronize`, a plain read of the file (what another process would see)
//! shows every byte of the logical content, and whatever lies past the logical
//! size is zeros, so a handle that dies without closing leaves a file that
//! reopens with its content followed only by zeros. Sync I/O opens with O_SYNC.

mod common;

use std::path::Path;

use common::ExpectSpec;
use kuradb::dbm::Durability;
use kuradb::file::{File, FileSpec, OpenOptions};

/// Applies a mix of writes that cross blocks, the head buffer and cached pages,
/// returning the new model. `round` varies the data.
fn scribble(spec: &FileSpec, file: &dyn File, model: &mut Vec<u8>, round: u64) {
    let mut write = |offset: usize, len: usize, seed: u64| {
        let data = common::pattern(seed, len);
        file.write(offset as u64, &data).expect_spec(spec, format_args!("write {len} at {offset}"));
        if model.len() < offset + len {
            model.resize(offset + len, 0);
        }
        model[offset..offset + len].copy_from_slice(&data);
    };
    write(0, 20_000, round);
    write(37, 90, round + 1);
    write(4000, 300, round + 2);
    write(30_001, 7, round + 3);
    let data = common::pattern(round + 4, 1234);
    let offset = file.append(&data).expect_spec(spec, "append") as usize;
    assert_eq!(offset, model.len(), "[{spec}] append offset");
    model.extend_from_slice(&data);
    // Cut deep into written data: what was there must not reach the OS's view.
    file.truncate(9_999).expect_spec(spec, "truncate to 9999");
    model.truncate(9_999);
    file.expand(501).expect_spec(spec, "expand by 501");
    model.resize(10_500, 0);
    let mut write = |offset: usize, len: usize, seed: u64| {
        let data = common::pattern(seed, len);
        file.write(offset as u64, &data).expect_spec(spec, format_args!("write {len} at {offset}"));
        model[offset..offset + len].copy_from_slice(&data);
    };
    write(10, 3, round + 5);
    write(10_400, 100, round + 6);
}

/// Panics unless the file at `path`, read plainly, starts with `model` and holds
/// only zeros after it.
#[track_caller]
fn assert_os_view(spec: &FileSpec, path: &Path, model: &[u8], when: &str) {
    let seen = std::fs::read(path).expect("read the file");
    assert!(
        seen.len() >= model.len(),
        "[{spec}] {when}: the OS holds {} of {} bytes",
        seen.len(),
        model.len()
    );
    if let Some(at) = common::first_difference(&seen[..model.len()], model) {
        panic!("[{spec}] {when}: the OS's view differs first at offset {at} of {}", model.len());
    }
    if let Some(at) = seen[model.len()..].iter().position(|&b| b != 0) {
        panic!(
            "[{spec}] {when}: non-zero byte at {} past the logical size {}",
            model.len() + at,
            model.len()
        );
    }
}

/// After a soft or hard synchronization the OS holds the whole logical content
/// and nothing but zeros past it, also after a second round of changes; a handle
/// abandoned without closing reopens with that content followed only by zeros.
#[test]
fn synchronize_hands_every_byte_to_the_os() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (i, spec) in common::matrix().into_iter().enumerate() {
        for hard in [false, true] {
            // A fresh name each time: the abandoned handle keeps its lock.
            let (path, file) = common::create(&spec, dir.path(), &format!("sync-{i}-{hard}.dat"));
            let mut model = Vec::new();
            for round in 0..2 {
                scribble(&spec, file.as_ref(), &mut model, round * 10);
                file.synchronize(if hard { Durability::Hard } else { Durability::Soft })
                    .expect_spec(&spec, format_args!("synchronize({hard})"));
                assert_os_view(&spec, &path, &model, &format!("after synchronize({hard}) round {round}"));
            }
            // A process that dies does not close its files.
            std::mem::forget(file);
            let mut reopened = common::open(&spec, &path, &OpenOptions::writer().without_lock());
            let size = reopened.size() as usize;
            assert!(size >= model.len(), "[{spec}] reopened size {size} < {}", model.len());
            let mut expected = model.clone();
            expected.resize(size, 0);
            common::assert_content(
                &spec,
                reopened.as_ref(),
                &expected,
                "reopened after abandoning the handle",
            );
            reopened.close().expect_spec(&spec, "close");
        }
    }
}

/// A sync I/O file holds its descriptor with O_SYNC, and a plain one does not.
#[test]
fn sync_io_opens_with_o_sync() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::specs(common::Group::Sync).into_iter().chain(common::specs(common::Group::Positional))
    {
        let (path, mut file) = common::create(&spec, dir.path(), "o_sync.dat");
        let flags = common::open_flags(&path);
        assert!(!flags.is_empty(), "[{spec}] no descriptor of {} found", path.display());
        for f in flags {
            assert_eq!(f & libc::O_SYNC == libc::O_SYNC, spec.sync, "[{spec}] O_SYNC in flags {f:o}");
        }
        file.close().expect_spec(&spec, "close");
    }
}
