//! A rebuild gives the device back what the old file held beyond its data
//! at once, while the database stays open: the new file is cut to its
//! logical size as a close cuts it, not left with the room a memory-mapped
//! file reserves ahead of its end.

use std::os::unix::fs::MetadataExt;

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Dbm};
use kuradb::Params;

#[test]
fn a_rebuild_leaves_no_room_reserved_past_the_end() {
    for ext in ["kh", "kt"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("r.{ext}"));
        // Memory-mapped, the default: the file reserves room ahead of its end.
        let params = Params::parse("num_buckets=1000").unwrap();
        let db = PolyDbm::open(&path, Access::ReadWrite, &params).unwrap();
        let value = [b'v'; 100];
        for n in 0..30_000 {
            db.set(format!("{n:08}").as_bytes(), &value).unwrap();
        }
        for n in (0..30_000).filter(|n| n % 10 != 0) {
            db.remove(format!("{n:08}").as_bytes()).unwrap();
        }
        db.rebuild().unwrap();
        let size = db.file_size().unwrap();
        let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(
            allocated <= size.div_ceil(4096) * 4096,
            "{ext}: {allocated} bytes on the device for a file of {size}"
        );
        // The next write past the end reserves room again.
        for n in 30_000..31_000 {
            db.set(format!("{n:08}").as_bytes(), &value).unwrap();
        }
        db.close().unwrap();
        let db = PolyDbm::open(&path, Access::ReadOnly, &Params::default()).unwrap();
        assert_eq!(db.count().unwrap(), 4_000, "{ext}");
        assert_eq!(db.get(b"00029990").unwrap().as_deref(), Some(&value[..]), "{ext}");
        assert_eq!(db.get(b"00030999").unwrap().as_deref(), Some(&value[..]), "{ext}");
        assert_eq!(db.get(b"00000001").unwrap(), None, "{ext}");
    }
}

/// The descriptors this process holds on files under `dir` that no name
/// reaches any more (a rebuilt database's old file until it is closed).
#[cfg(target_os = "linux")]
fn unnamed_files_under(dir: &std::path::Path) -> Vec<String> {
    // The links name the files by their canonical paths.
    let dir = dir.canonicalize().unwrap().to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        if let Ok(target) = std::fs::read_link(entry.path()) {
            let target = target.to_string_lossy().into_owned();
            if target.starts_with(&dir) && target.ends_with(" (deleted)") {
                found.push(target);
            }
        }
    }
    found
}

#[test]
#[cfg(target_os = "linux")]
fn a_rebuilds_old_file_is_closed_after_it_and_a_close_waits_for_that() {
    for ext in ["kh", "kt"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("r.{ext}"));
        let db = PolyDbm::open(&path, Access::ReadWrite, &Params::default()).unwrap();
        let value = [b'v'; 100];
        for n in 0..50_000 {
            db.set(format!("{n:08}").as_bytes(), &value).unwrap();
        }
        db.rebuild().unwrap();
        // A second rebuild waits for the first's old file to be closed.
        db.rebuild().unwrap();
        db.close().unwrap();
        assert_eq!(unnamed_files_under(dir.path()), Vec::<String>::new(), "{ext}: after the close");

        // Without a close, the old file is closed all the same, by itself.
        let db = PolyDbm::open(&path, Access::ReadWrite, &Params::default()).unwrap();
        db.rebuild().unwrap();
        let started = std::time::Instant::now();
        while !unnamed_files_under(dir.path()).is_empty() {
            assert!(started.elapsed().as_secs() < 30, "{ext}: the old file is still open");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(db.count().unwrap(), 50_000, "{ext}");
        db.close().unwrap();
    }
}
