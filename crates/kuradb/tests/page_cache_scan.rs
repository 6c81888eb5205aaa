//! The page cache resists scans: a pass over the whole file leaves the
//! working set of random lookups cached, and the cache never holds more
//! blocks than its capacity. Counts of hits and misses, never time.

use kuradb::caching::{ScanScope, ThreadCacheCounts};
use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::{Access, Action, Dbm, Durability};
use kuradb::file::{File, FileKind, FileSpec, OpenOptions, PositionalFile};

const BLOCK: u64 = 512;
const CAPACITY: usize = 256;
const FILE_BLOCKS: u64 = 4096;

fn cached_file(dir: &tempfile::TempDir, protected_percent: u8) -> PositionalFile {
    let mut spec = FileSpec::new(FileKind::PositionalParallel);
    spec.block_size = BLOCK;
    spec.pagecache = true;
    spec.page_cache_capacity = Some(CAPACITY);
    spec.page_cache_protected_percent = protected_percent;
    // Read-ahead's neighbours are the harder case for scan resistance.
    spec.page_cache_read_ahead = Some(4096);
    let path = dir.path().join("f");
    let mut file = PositionalFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
    file.write(0, &vec![7u8; (FILE_BLOCKS * BLOCK) as usize]).unwrap();
    file.synchronize(Durability::Soft).unwrap();
    file.close().unwrap();
    PositionalFile::open(&path, &OpenOptions::writer(), &spec).unwrap()
}

/// 100 blocks spread over the file: fewer than the protected share (80% of
/// each shard's 128) holds even if the shards get them unevenly.
fn working_set() -> Vec<u64> {
    (0..100).map(|i| i * 37 % FILE_BLOCKS).collect()
}

fn read_block(file: &PositionalFile, block: u64) {
    let mut buf = [0u8; 16];
    file.read(block * BLOCK + 8, &mut buf).unwrap();
    assert_eq!(buf, [7u8; 16]);
    let used = file.page_cache_stats().unwrap().used;
    assert!(used <= CAPACITY as u64, "the cache holds {used} blocks, past its {CAPACITY}");
}

/// Reads the working set twice (so it is used again and protected), scans
/// every block with `scan`, and answers the share of hits of a last round
/// of the working set.
fn hit_rate_after_scan(file: &PositionalFile, scan: impl Fn(&PositionalFile)) -> f64 {
    for _ in 0..2 {
        working_set().into_iter().for_each(|b| read_block(file, b));
    }
    scan(file);
    ThreadCacheCounts::take();
    working_set().into_iter().for_each(|b| read_block(file, b));
    ThreadCacheCounts::take().page_hit_rate().unwrap()
}

/// A scan as a database's walk reads: each block several times in a row
/// (one read per record), marked as a scan.
fn marked_scan(file: &PositionalFile) {
    let _scan = ScanScope::enter();
    for block in 0..FILE_BLOCKS {
        (0..3).for_each(|_| read_block(file, block));
    }
}

#[test]
fn a_marked_scan_keeps_the_working_set() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(&dir, 80);
    let rate = hit_rate_after_scan(&file, marked_scan);
    assert!(rate >= 0.9, "hit rate {rate} after a scan, want at least 0.9");
    let stats = file.page_cache_stats().unwrap();
    assert!(stats.protected >= 90 && stats.used <= CAPACITY as u64, "{stats:?}");
}

#[test]
fn an_unmarked_scan_reading_each_block_once_keeps_the_working_set() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(&dir, 80);
    let rate = hit_rate_after_scan(&file, |file| (0..FILE_BLOCKS).for_each(|b| read_block(file, b)));
    assert!(rate >= 0.9, "hit rate {rate} after a scan, want at least 0.9");
}

/// The same scan with no protected segment, a plain LRU, loses the whole
/// working set: what the tests above guard against.
#[test]
fn without_a_protected_share_a_scan_evicts_the_working_set() {
    let dir = tempfile::tempdir().unwrap();
    let file = cached_file(&dir, 0);
    let rate = hit_rate_after_scan(&file, marked_scan);
    assert!(rate <= 0.1, "hit rate {rate} with a plain LRU");
    assert_eq!(file.page_cache_stats().unwrap().protected, 0);
}

/// Through a hash database: an export (its `process_each`) between two
/// rounds of gets of the same keys leaves those gets hitting the cache.
#[test]
fn a_hash_export_keeps_the_gets_working_set() {
    let dir = tempfile::tempdir().unwrap();
    let params =
        "file=pos-para,block_size=512,access=pagecache,page_cache_capacity=1024,page_cache_read_ahead=4096,\
                  num_buckets=40000";
    let params = Params::parse(params).unwrap();
    let db = PolyDbm::open(dir.path().join("casket.tkh"), Access::ReadWrite, &params).unwrap();
    let value = [b'v'; 100];
    for i in 0..20_000u32 {
        db.set(format!("{i:08}").as_bytes(), &value).unwrap();
    }
    db.synchronize(Durability::Soft).unwrap();
    let keys: Vec<String> = (0..100u32).map(|i| format!("{:08}", i * 197)).collect();
    for _ in 0..2 {
        keys.iter().for_each(|k| assert!(db.get(k.as_bytes()).unwrap().is_some()));
    }
    let mut seen = 0;
    db.process_each(Access::ReadOnly, &mut |_, _| {
        seen += 1;
        Action::Keep
    })
    .unwrap();
    assert_eq!(seen, 20_000);
    ThreadCacheCounts::take();
    keys.iter().for_each(|k| assert!(db.get(k.as_bytes()).unwrap().is_some()));
    let rate = ThreadCacheCounts::take().page_hit_rate().unwrap();
    assert!(rate >= 0.9, "hit rate {rate} after an export, want at least 0.9");
    db.close().unwrap();
}

/// Without a capacity, a page cache holds 512 KiB of blocks, at least 256 and
/// at most 1024 of them; a capacity given, from a parameter string too, is
/// the one used; and the cap holds through a pass over a file larger than it.
#[test]
fn the_default_capacity_follows_the_block_size() {
    let dir = tempfile::tempdir().unwrap();
    for (block, expected) in [(64u64, 1024u64), (512, 1024), (1024, 512), (2048, 256), (4096, 256)] {
        let mut spec = FileSpec::new(FileKind::PositionalParallel);
        spec.block_size = block;
        spec.pagecache = true;
        assert_eq!(spec.page_cache_blocks() as u64, expected, "block size {block}");
        let path = dir.path().join(format!("d{block}"));
        let file = PositionalFile::open(&path, &OpenOptions::writer(), &spec).unwrap();
        file.write(0, &vec![1u8; (3 * expected * block) as usize]).unwrap();
        let mut buf = vec![0u8; block as usize];
        for i in 0..3 * expected {
            file.read(i * block, &mut buf).unwrap();
        }
        let stats = file.page_cache_stats().unwrap();
        assert_eq!(stats.capacity, expected, "block size {block}");
        assert!(stats.used <= expected, "block size {block}: {} blocks held", stats.used);
        assert!(file.inspect().contains(&("page_cache_capacity".to_string(), expected.to_string())));
    }
    let given = FileSpec::parse("pos-para,block_size=512,access=pagecache,page_cache_capacity=300").unwrap();
    assert_eq!(given.page_cache_blocks(), 300);
    assert!(given.to_string().contains("page_cache_capacity=300"), "{given}");
    let default = FileSpec::parse("pos-para,block_size=512,access=pagecache").unwrap();
    assert!(!default.to_string().contains("page_cache_capacity"), "{default}");
}
