//! Writes the seed inputs of the fuzz targets: small, valid files of every
//! format, closed cleanly and left open as a crash leaves them, each behind
//! the first byte the targets read (`tests/fuzzing/files.rs`). The kept
//! corpus in `corpus/` grew from these; `scripts/fuzz --seed` rewrites them.
//!
//! Usage: `cargo run --example seeds -- CORPUS_DIR`

use std::path::{Path, PathBuf};

use kuradb::dbm::poly::PolyDbm;
use kuradb::{Dbm, DbmClass, Params, ShardDbm};
use kuradb_fuzz::fuzzing::files::SHARD_SEPARATOR;

/// Fills `db` with `n` records of mixed sizes, overwrites some and removes some.
fn fill(db: &dyn Dbm, n: usize) {
    for i in 0..n {
        let value = vec![b'a' + (i % 26) as u8; (i * 7) % 40];
        db.set(format!("key{i:03}").as_bytes(), &value).expect("set");
    }
    for i in (0..n).step_by(4) {
        db.set(format!("key{i:03}").as_bytes(), b"again").expect("overwrite");
    }
    for i in (0..n).step_by(5) {
        db.remove(format!("key{i:03}").as_bytes()).expect("remove");
    }
}

/// The file a database of `params` holds after `fill`: closed cleanly, or
/// copied while still open (as a crash leaves it).
fn database(dir: &Path, class: DbmClass, params: &str, n: usize, crashed: bool) -> Vec<u8> {
    let path = dir.join(format!("seed.{}", class.extensions()[0]));
    let _ = std::fs::remove_file(&path);
    let db =
        PolyDbm::open_class(class, Some(&path), Access::ReadWrite, &Params::parse(params).expect("params")).expect("open");
    fill(&db, n);
    if crashed {
        db.synchronize(Durability::Soft).expect("synchronize");
        db.set(b"unsynchronized", b"value").expect("set");
        let mut bytes = std::fs::read(&path).expect("read");
        drop(db);
        // A crash leaves the space reserved past the data as zeros; a few
        // of them are enough.
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |at| at + 1);
        bytes.truncate((end + 64).min(bytes.len()));
        return bytes;
    }
    db.close().expect("close");
    std::fs::read(&path).expect("read")
}

fn put(out: &Path, target: &str, name: &str, config: u8, file: &[u8]) {
    let dir = out.join(target);
    std::fs::create_dir_all(&dir).expect("create the corpus directory");
    let mut input = vec![config];
    input.extend_from_slice(file);
    std::fs::write(dir.join(format!("seed-{name}")), input).expect("write a seed");
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: seeds CORPUS_DIR"));
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = temp.path();
    let on_memory: Vec<DbmClass> = DbmClass::all().filter(|c| c.is_on_memory()).collect();
    for crashed in [false, true] {
        let state = if crashed { "open" } else { "closed" };
        for (params, name) in [
            ("num_buckets=7,align_pow=0", "inplace"),
            ("num_buckets=3,align_pow=3,update_mode=appending", "appending"),
            ("num_buckets=16,offset_width=3,record_crc_mode=32", "crc"),
        ] {
            let file = database(dir, DbmClass::Hash, params, 30, crashed);
            put(&out, "hash_file", &format!("{name}-{state}"), 4, &file);
        }
        for (params, name) in [
            ("buckets=5,max_page_size=128,max_branches=4", "small-pages"),
            ("buckets=5,max_page_size=256,key_comparator=decimal", "decimal"),
        ] {
            let file = database(dir, DbmClass::Tree, params, 60, crashed);
            put(&out, "tree_file", &format!("{name}-{state}"), 5, &file);
        }
    }
    for (params, name) in [("step_unit=2,max_level=4", "step2"), ("step_unit=3,offset_width=3", "step3")] {
        let file = database(dir, DbmClass::Skip, params, 40, false);
        put(&out, "skip_file", name, 5, &file);
    }
    for (i, class) in on_memory.iter().enumerate() {
        let file = database(dir, *class, "", 30, false);
        put(&out, "flat_file", class.name(), 4 | ((i as u8) << 3), &file);
    }
    // Operation sequences: a pseudo-random walk for each database and file
    // (the first byte), then the operations (tests/fuzzing/fault_model.rs).
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for config in 0..16u8 {
        let mut ops = Vec::new();
        for _ in 0..240 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ops.push((x >> 24) as u8);
        }
        put(&out, "fault_model", &format!("ops-{config:02}"), config, &ops);
    }
    for (i, class) in DbmClass::all().enumerate() {
        let path = dir.join(format!("shards-{i}.{}", class.extensions()[0]));
        let params = match class {
            DbmClass::Hash => "num_shards=3,num_buckets=5",
            DbmClass::Tree => "num_shards=2,buckets=5,max_page_size=128",
            _ => "num_shards=2",
        };
        let db =
            ShardDbm::open(&path, Access::ReadWrite, &Params::parse(params).expect("params")).expect("open a shard set");
        fill(&db, 20);
        let count = db.num_shards();
        db.close().expect("close");
        let mut joined = Vec::new();
        for shard in 0..count {
            if shard > 0 {
                joined.extend_from_slice(SHARD_SEPARATOR);
            }
            joined.extend(std::fs::read(ShardDbm::shard_path(&path, shard, count)).expect("read a shard"));
        }
        put(&out, "shard_set", class.name(), 4 | ((i as u8) << 3), &joined);
    }
}
