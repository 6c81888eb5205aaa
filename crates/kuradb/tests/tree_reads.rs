//! A tree node that is not cached costs one read call (but for collisions in
//! the node store's buckets), with block I/O and with a page cache under it
//! too: counted by the kernel (`syscr` of /proc/self/io), so this file holds
//! one test and nothing else reads meanwhile.
#![cfg(target_os = "linux")]

mod common;

use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm};
use kuradb::file::{FileKind, FileSpec};

/// Read calls this process has made so far, counting those of this call.
fn read_calls() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io is readable");
    io.lines()
        .find_map(|line| line.strip_prefix("syscr: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("/proc/self/io has syscr")
}

fn cached_pages(db: &TreeDbm) -> u64 {
    let info = db.inspect().unwrap();
    info.iter().find(|(k, _)| k == "cached_pages").map(|(_, v)| v.parse().unwrap()).unwrap()
}

fn key(i: u64) -> Vec<u8> {
    format!("{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

#[test]
fn a_node_load_is_one_read_call() {
    let plain = common::spec(FileKind::PositionalParallel, |s| {
        s.block_size = 1024;
        s.padding = true;
    });
    // One shard of page cache (it has fewer than 256 blocks), so that no
    // node's blocks are split between two shards' locks.
    let cached = common::spec(FileKind::PositionalParallel, |s| {
        s.block_size = 1024;
        s.padding = true;
        s.pagecache = true;
        s.page_cache_capacity = Some(128);
    });
    for spec in [FileSpec::new(FileKind::PositionalParallel), plain, cached] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tkt");
        let mut o = TreeOptions::default().max_page_size(4060).max_cached_pages(100_000);
        o.hash.file = spec.clone();
        o.hash.cache_buckets = true;
        let db = TreeDbm::open(&path, Access::ReadWrite, &o).unwrap();
        let value = [b'v'; 100];
        for i in 0..20_000 {
            db.set(&key(i), &value).unwrap();
        }
        db.close().unwrap();

        let db = TreeDbm::open(&path, Access::ReadOnly, &o).unwrap();
        // What the counting itself costs, to take off the count.
        let own = {
            let before = read_calls();
            cached_pages(&db);
            read_calls() - before
        };
        let (calls, pages) = (read_calls(), cached_pages(&db));
        for i in (0..20_000).step_by(37) {
            assert_eq!(db.get(&key(i)).unwrap().as_deref(), Some(&value[..]), "[{spec}]");
        }
        let (calls, loads) = (read_calls() - calls - own, cached_pages(&db) - pages);
        assert!(loads > 100, "[{spec}] the gets loaded only {loads} nodes");
        // A node whose bucket it shares with another may cost a read of that
        // other node first: a few in a hundred, at these sizes.
        assert!(calls <= loads + loads / 20, "[{spec}] {loads} node loads took {calls} read calls");
        db.close().unwrap();
    }
}
