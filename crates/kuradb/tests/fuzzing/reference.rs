//! The reference-file target: arbitrary bytes written as a file of the
//! reference implementation (Tkrzw), read the ways `kura util` reads one
//! (opened, salvaged, converted to a kuradb database).
//!
//! An input's first byte chooses how: bits 0-1 the file's extension (which
//! only a conversion's destination class follows; the reader goes by the
//! file's magic), bit 2 whether the file is salvaged whatever its header
//! says (as `kura util convert` does with a killed writer's file). The
//! rest is the file. Every outcome must be a clear error or records read
//! back whole: a conversion holds exactly the records the reader listed
//! (one of each key's values, for a key listed twice).

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::tkrzw::ReferenceDbm;
use kuradb::dbm::Access;
use kuradb::Params;

use super::checks::{clear, read_everything, walk, Opened, Record};
use super::files::scratch;

/// A file of the reference implementation.
pub fn reference_file(data: &[u8]) {
    let config = data.first().copied().unwrap_or(0);
    let ext = ["tkh", "tkt", "tks", "flat"][usize::from(config & 3)];
    let dir = scratch();
    let path = dir.path().join(format!("old.{ext}"));
    std::fs::write(&path, data.get(1..).unwrap_or_default()).expect("write the input file");
    let opened =
        if config & 4 != 0 { ReferenceDbm::open_salvaging(&path) } else { ReferenceDbm::open(&path) };
    let db = match opened {
        Ok(db) => db,
        Err(e) => return clear(&e, "opening a reference file"),
    };
    // The reader holds the records in memory: no more than the bytes could hold.
    let limit = data.len() + 16;
    if let Ok(listed) = walk(&db, limit).map_err(|e| clear(&e, "a walk")) {
        check_conversion(&db, &dir.path().join("new"), listed, limit);
    }
    let order = db.key_order();
    let opened = Opened { db: Box::new(db), order, repeats: false };
    read_everything(&opened, limit);
    // Read-only, however asked: every change is refused with a clear error.
    for result in [opened.db.set(b"k", b"v"), opened.db.remove(b"k").map(drop), opened.db.clear()] {
        let err = result.expect_err("a write to a reference file succeeded");
        clear(&err, "a write to a reference file");
    }
}

/// Converts `db` as `kura util convert` does, to a database of its class
/// at `stem` (with the class's extension), and checks that the new
/// database holds exactly the keys `listed` (a walk of `db`).
fn check_conversion(db: &ReferenceDbm, stem: &std::path::Path, mut listed: Vec<Record>, limit: usize) {
    let class = db.class();
    let dest = stem.with_extension(class.extensions()[0]);
    // A small bucket array: the default (a million buckets) costs each run
    // milliseconds and tests nothing more.
    let mut params = Params::new();
    if class.takes("num_buckets") {
        params.insert("num_buckets", "64").expect("a number");
    }
    let count = match db.convert(&dest, &params, &mut |_| {}) {
        Ok(count) => count,
        Err(e) => return clear(&e, "a conversion"),
    };
    let new = PolyDbm::open(&dest, Access::ReadOnly, &Params::new())
        .unwrap_or_else(|e| panic!("the converted database: {e}"));
    let mut converted = walk(&new, limit).unwrap_or_else(|e| panic!("a walk of the converted database: {e}"));
    assert_eq!(count, converted.len() as u64, "the conversion's count of records");
    listed.sort();
    converted.sort();
    let listed_before_dedup = listed.len();
    // A key the reader lists twice (a skip file may hold it twice) is
    // compared once: the conversion keeps it, with one of its values.
    for records in [&mut listed, &mut converted] {
        records.dedup_by(|a, b| a.0 == b.0);
    }
    let keys = |records: &[Record]| records.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&converted), keys(&listed), "the converted keys");
    if listed.len() == listed_before_dedup {
        assert_eq!(converted, listed, "the converted records");
    }
    new.close().unwrap_or_else(|e| panic!("closing the converted database: {e}"));
}
