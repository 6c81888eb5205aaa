//! A device read of the page cache stalled on purpose: other threads' hits
//! and misses of the same shard go on meanwhile, and what the stalled read
//! caches when it resumes is never older than the device.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};

use super::PageCache;
use crate::file::block::Device;
use crate::sys::Engine;

const BS: usize = 512;
/// Fewer than two shards' worth: every block lives in the one shard.
const CAPACITY: usize = 8;
const BLOCKS: u64 = 64;
/// Only against a deadlock: every wait below ends at once when the code is right.
const DEADLOCK: Duration = Duration::from_secs(20);

/// A device of `BLOCKS` blocks, block i filled with byte i, whose first read
/// of `stalled` (a block index), once it has its bytes, signals `started`
/// and waits for `resume`: meanwhile the device's copy may change.
struct Stall {
    device: Device,
    started: Receiver<()>,
    resume: Sender<()>,
    _dir: tempfile::TempDir,
}

fn stalled_device(stalled: u64) -> Stall {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let bytes: Vec<u8> = (0..BLOCKS).flat_map(|i| vec![i as u8; BS]).collect();
    std::fs::write(&path, &bytes).unwrap();
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let len = bytes.len() as u64;
    let (started_tx, started) = bounded(1);
    let (resume, resume_rx) = bounded::<()>(1);
    let once = AtomicBool::new(true);
    let hook = move |offset: u64| {
        if offset == stalled * BS as u64 && once.swap(false, Ordering::SeqCst) {
            started_tx.send(()).unwrap();
            resume_rx.recv_timeout(DEADLOCK).expect("the stalled read was never resumed");
        }
    };
    let device =
        Device::new(file, path, BS as u64, false, len, Engine::Serial).with_read_hook(Box::new(hook));
    Stall { device, started, resume, _dir: dir }
}

fn cache() -> PageCache {
    PageCache::new(CAPACITY, 80, BS as u64, 4096, BLOCKS * BS as u64, 0)
}

fn read_block(cache: &PageCache, device: &Device, block: u64) -> Vec<u8> {
    let mut buf = vec![0u8; BS];
    cache.read(device, block * BS as u64, &mut buf).unwrap();
    buf
}

/// Runs `f` on another thread and answers its result, or `None` if it has
/// not finished within the deadlock timeout (it is blocked).
fn finishes<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = bounded(1);
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLOCK).ok()
}

/// What a read stalled on purpose gave, and the cache and device it used.
struct StalledRead {
    seen: Vec<u8>,
    cache: Arc<PageCache>,
    device: Arc<Device>,
    _dir: tempfile::TempDir,
}

/// Reads `block` through `cache` on another thread over a device whose read
/// of block `stalled` waits, once it has its bytes, until `during` (run
/// meanwhile) has returned; answers what the read gave.
fn read_during_stall(
    stalled: u64,
    cache: PageCache,
    block: u64,
    during: impl FnOnce(&Arc<PageCache>, &Arc<Device>),
) -> StalledRead {
    let Stall { device, started, resume, _dir } = stalled_device(stalled);
    let (device, cache) = (Arc::new(device), Arc::new(cache));
    let reader = {
        let (device, cache) = (device.clone(), cache.clone());
        thread::spawn(move || read_block(&cache, &device, block))
    };
    started.recv_timeout(DEADLOCK).unwrap();
    during(&cache, &device);
    resume.send(()).unwrap();
    let seen = reader.join().unwrap();
    StalledRead { seen, cache, device, _dir }
}

#[test]
fn a_stalled_miss_blocks_neither_hits_nor_misses_of_its_shard() {
    let mut other = None;
    let read = read_during_stall(5, cache(), 5, |cache, device| {
        assert_eq!(cache.shards.len(), 1);
        // Block 7 of the same shard, a miss and then a hit, while block 5's
        // read waits.
        let (device, cache) = (device.clone(), cache.clone());
        other = finishes(move || (read_block(&cache, &device, 7), read_block(&cache, &device, 7)));
    });
    assert_eq!(read.seen, vec![5; BS]);
    let (miss, hit) = other.expect("a miss and a hit waited for another thread's device read");
    assert_eq!((miss, hit), (vec![7; BS], vec![7; BS]));
    let stats = read.cache.stats();
    assert_eq!((stats.hits, stats.misses, stats.device_reads), (1, 2, 2));
}

#[test]
fn a_partial_write_reads_its_block_with_no_shard_locked() {
    let Stall { device, started, resume, _dir } = stalled_device(5);
    let (device, cache) = (Arc::new(device), Arc::new(cache()));
    let writer = {
        let (device, cache) = (device.clone(), cache.clone());
        thread::spawn(move || cache.write(&device, 5 * BS as u64 + 10, b"new").unwrap())
    };
    started.recv_timeout(DEADLOCK).unwrap();
    let other = {
        let (device, cache) = (device.clone(), cache.clone());
        finishes(move || read_block(&cache, &device, 7))
    };
    resume.send(()).unwrap();
    writer.join().unwrap();
    assert_eq!(other.expect("a miss waited for a writer's device read"), vec![7; BS]);
    let mut expected = vec![5; BS];
    expected[10..13].copy_from_slice(b"new");
    assert_eq!(read_block(&cache, &device, 5), expected);
}

#[test]
fn a_block_written_back_during_a_stalled_read_is_not_cached_stale() {
    let read = read_during_stall(5, cache(), 5, |cache, device| {
        // Block 5 written whole (no read), then evicted by other blocks, which
        // writes it back: the stalled read holds its old bytes.
        cache.write(device, 5 * BS as u64, &[0xAB; BS]).unwrap();
        for block in 10..10 + CAPACITY as u64 {
            cache.write(device, block * BS as u64, &[0; BS]).unwrap();
        }
        assert!(cache.stats().device_writes >= 1);
    });
    assert!(read.seen == vec![5; BS] || read.seen == vec![0xAB; BS]);
    assert_eq!(read_block(&read.cache, &read.device, 5), vec![0xAB; BS]);
}

#[test]
fn a_block_written_past_the_cache_during_a_stalled_read_is_not_cached_stale() {
    let read = read_during_stall(5, cache(), 5, |cache, device| {
        // Long enough to go past the cache, straight to the device.
        cache.write(device, 0, &[0xCD; 32 * BS]).unwrap();
    });
    assert!(read.seen == vec![5; BS] || read.seen == vec![0xCD; BS]);
    assert_eq!(read_block(&read.cache, &read.device, 5), vec![0xCD; BS]);
}

#[test]
fn a_readers_own_eviction_does_not_let_it_cache_a_block_stale() {
    let Stall { device, started, resume, _dir } = stalled_device(4);
    let device = Arc::new(device);
    let cache = Arc::new(PageCache::new(2, 80, BS as u64, 4096, BLOCKS * BS as u64, 0));
    // Blocks 4 and 5 in one read, stalled once it holds both.
    let stalled = {
        let (device, cache) = (device.clone(), cache.clone());
        thread::spawn(move || {
            let mut buf = vec![0u8; 2 * BS];
            cache.read(&device, 4 * BS as u64, &mut buf).unwrap();
            buf
        })
    };
    started.recv_timeout(DEADLOCK).unwrap();
    // Block 5 cached and changed meanwhile, then block 9 cached clean: the
    // stalled read's caching of block 4 evicts block 5, writing it back.
    cache.write(&device, 5 * BS as u64 + 10, b"new").unwrap();
    assert_eq!(read_block(&cache, &device, 9), vec![9; BS]);
    resume.send(()).unwrap();
    stalled.join().unwrap();
    assert!(cache.stats().device_writes >= 1);
    let mut expected = vec![5; BS];
    expected[10..13].copy_from_slice(b"new");
    assert_eq!(read_block(&cache, &device, 5), expected);
}

/// A block no test reads: a device stalled at it never stalls.
const NEVER: u64 = BLOCKS + 1;

/// A device of `BLOCKS` blocks, block i filled with byte i, that never stalls.
fn plain_device() -> (Device, tempfile::TempDir) {
    let Stall { device, _dir, .. } = stalled_device(NEVER);
    (device, _dir)
}

/// One shard of 128 blocks: a miss reads the 8 blocks (4 KiB) around it.
fn cache_reading_ahead() -> PageCache {
    let cache = PageCache::new(128, 80, BS as u64, 4096, BLOCKS * BS as u64, 4096);
    assert_eq!((cache.shards.len(), cache.ahead_blocks), (1, 8));
    cache
}

#[test]
fn read_ahead_sizes_stay_within_the_shard_and_its_run() {
    use super::ahead_blocks;
    assert_eq!(ahead_blocks(4096, 512, 128), 8);
    assert_eq!(ahead_blocks(4096, 1024, 128), 4);
    // Off: no more than a block, or none asked for.
    assert_eq!(ahead_blocks(4096, 4096, 128), 1);
    assert_eq!(ahead_blocks(512, 512, 128), 1);
    assert_eq!(ahead_blocks(0, 512, 128), 1);
    // An eighth of a shard at most, and a power of two.
    assert_eq!(ahead_blocks(4096, 512, 8), 1);
    assert_eq!(ahead_blocks(4096, 512, 48), 4);
    // One shard's run of blocks at most.
    assert_eq!(ahead_blocks(1 << 20, 512, 4096), 64);
}

#[test]
fn a_miss_caches_its_group_up_to_the_extent() {
    let (device, _dir) = plain_device();
    let cache = PageCache::new(128, 80, BS as u64, 4096, 12 * BS as u64, 4096);
    assert_eq!(read_block(&cache, &device, 10), vec![10; BS]);
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.device_reads, stats.read_ahead), (1, 1, 3));
    for block in 8..12 {
        assert_eq!(read_block(&cache, &device, block), vec![block as u8; BS]);
    }
    assert_eq!(cache.stats().hits, 4);
    assert_eq!(cache.stats().device_reads, 1);
    // Block 12 starts at the extent: zeros, and no read for it earlier.
    assert_eq!(read_block(&cache, &device, 12), vec![0; BS]);
    assert_eq!(cache.stats().device_reads, 1);
}

#[test]
fn a_read_of_several_blocks_reads_no_neighbours() {
    let (device, _dir) = plain_device();
    let cache = cache_reading_ahead();
    let mut buf = [0u8; 10];
    cache.read(&device, 10 * BS as u64 - 5, &mut buf).unwrap();
    assert_eq!(buf, [9, 9, 9, 9, 9, 10, 10, 10, 10, 10]);
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.device_reads, stats.read_ahead), (2, 2, 0));
}

#[test]
fn read_ahead_stops_at_the_head_buffer() {
    let (device, _dir) = plain_device();
    let cache = cache_reading_ahead().serving_from(2 * BS as u64);
    assert_eq!(read_block(&cache, &device, 3), vec![3; BS]);
    // Blocks 2 and 4 to 7 of the group 0 to 7; not the head's 0 and 1.
    assert_eq!(cache.stats().read_ahead, 5);
    assert_eq!(cache.stats().used, 6);
}

#[test]
fn read_ahead_keeps_the_cached_copy_of_a_neighbour() {
    let (device, _dir) = plain_device();
    let cache = cache_reading_ahead();
    // Block 13 changed in the cache only: dirty, newer than the device's.
    cache.write(&device, 13 * BS as u64 + 3, b"new").unwrap();
    assert_eq!(read_block(&cache, &device, 10), vec![10; BS]);
    let mut expected = vec![13; BS];
    expected[3..6].copy_from_slice(b"new");
    assert_eq!(read_block(&cache, &device, 13), expected);
    // Written back, the device has it too.
    cache.flush(&device).unwrap();
    let mut on_device = vec![0u8; BS];
    device.read_blocks(13 * BS as u64, &mut on_device).unwrap();
    assert_eq!(on_device, expected);
}

#[test]
fn neighbours_changed_during_a_stalled_group_read_are_not_cached_stale() {
    // The group of block 10 starts at block 8: its read stalls.
    let read = read_during_stall(8, cache_reading_ahead(), 10, |cache, device| {
        // Past the cache, straight to the device: blocks 0 to 31 change.
        cache.write(device, 0, &[0xCD; 32 * BS]).unwrap();
    });
    assert!(read.seen == vec![10; BS] || read.seen == vec![0xCD; BS]);
    // The epoch moved: block 10 was read again, its neighbours left out.
    assert_eq!(read.cache.stats().read_ahead, 0);
    for block in 8..16 {
        assert_eq!(read_block(&read.cache, &read.device, block), vec![0xCD; BS], "block {block}");
    }
}

#[test]
fn a_batch_reads_only_the_blocks_it_misses() {
    let (device, _dir) = plain_device();
    let cache = cache_reading_ahead();
    let blocks = [14u64, 40, 9, 17];
    let mut bufs = [[0u8; 10]; 4];
    let mut reads: Vec<crate::sys::BatchRead<'_>> = blocks
        .iter()
        .zip(bufs.iter_mut())
        .map(|(&b, buf)| crate::sys::BatchRead { offset: b * BS as u64 + 5, buf: &mut buf[..] })
        .collect();
    cache.read_many(&device, &mut reads).unwrap();
    for (&b, buf) in blocks.iter().zip(&bufs) {
        assert_eq!(buf, &[b as u8; 10], "block {b}");
    }
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.device_reads, stats.read_ahead, stats.used), (4, 4, 0, 4));
}
