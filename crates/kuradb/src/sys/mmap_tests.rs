//! The map's own promises, each a condition of its unsafe copies: an
//! access outside the map panics before touching memory, a read-only map
//! is never written, and a replaced map stays valid (and shares the file's
//! pages with its successor) while other threads still copy through it.
//! `scripts/sanitize` runs these under AddressSanitizer and valgrind.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;

use super::*;

const PAGE: u64 = 4096;

/// An access to try, named for the failure message.
type Access<'a> = (&'static str, Box<dyn Fn() + 'a>);

fn file_of(len: u64) -> fs::File {
    let file = tempfile::tempfile().expect("a temporary file");
    file.set_len(len).expect("set the file's length");
    file
}

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the access did not panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn accesses_outside_the_map_panic_before_touching_memory() {
    let file = file_of(PAGE);
    let map = Mapping::new(&file, PAGE, true).expect("map");
    map.write(PAGE - 3, b"end");
    let mut buf = [0u8; 3];
    map.read(PAGE - 3, &mut buf);
    assert_eq!(&buf, b"end");
    let outside: [Access<'_>; 5] = [
        ("read across the end", Box::new(|| map.read(PAGE - 2, &mut [0u8; 3]))),
        ("write across the end", Box::new(|| map.write(PAGE, b"x"))),
        ("zero across the end", Box::new(|| map.zero(1, PAGE))),
        ("read at an offset that overflows", Box::new(|| map.read(u64::MAX, &mut [0u8; 2]))),
        ("zero of a length that overflows", Box::new(|| map.zero(2, u64::MAX - 1))),
    ];
    for (what, access) in outside {
        let message = panic_message(access);
        assert!(message.contains("outside a map"), "{what}: {message:?}");
    }
    map.read(PAGE - 3, &mut buf);
    assert_eq!(&buf, b"end", "a refused access changed the map");
}

#[test]
fn a_read_only_map_is_never_written() {
    let file = file_of(PAGE);
    let writer = Mapping::new(&file, PAGE, true).expect("map for writing");
    writer.write(0, b"kept");
    let reader = Mapping::new(&file, PAGE, false).expect("map for reading");
    let message = panic_message(|| reader.write(0, b"lost"));
    assert!(message.contains("read-only"), "{message:?}");
    let message = panic_message(|| reader.zero(0, 4));
    assert!(message.contains("read-only"), "{message:?}");
    let mut buf = [0u8; 4];
    reader.read(0, &mut buf);
    assert_eq!(&buf, b"kept");
}

#[test]
fn zero_clears_exactly_its_range() {
    let file = file_of(PAGE);
    let map = Mapping::new(&file, PAGE, true).expect("map");
    map.write(0, &[0xffu8; 64]);
    map.zero(10, 20);
    let mut buf = [0u8; 64];
    map.read(0, &mut buf);
    let expected: Vec<u8> = (0..64).map(|i| if (10..30).contains(&i) { 0 } else { 0xff }).collect();
    assert_eq!(buf.as_slice(), expected.as_slice());
}

#[test]
fn a_replaced_map_stays_valid_and_shares_the_files_pages() {
    let file = file_of(PAGE);
    let chain = MapChain::new(Some(Mapping::new(&file, PAGE, true).expect("map")));
    let old = chain.current().expect("the first map");
    old.write(0, b"abc");
    file.set_len(4 * PAGE).expect("grow the file");
    chain.install(Mapping::new(&file, 4 * PAGE, true).expect("a longer map"));
    let new = chain.current().expect("the new map");
    assert_eq!((old.len(), new.len(), chain.len()), (PAGE, 4 * PAGE, 4 * PAGE));
    let mut buf = [0u8; 3];
    new.read(0, &mut buf);
    assert_eq!(&buf, b"abc", "the new map sees what the old one wrote");
    old.write(1, b"Z");
    new.read(0, &mut buf);
    assert_eq!(&buf, b"aZc", "a write through the old map reaches the new one");
    new.write(3 * PAGE, b"far");
    new.read(3 * PAGE, &mut buf);
    assert_eq!(&buf, b"far");
    assert!(MapChain::new(None).current().is_none());
}

/// Readers copy through whichever map is current while another thread
/// installs longer ones: every map a reader loaded stays valid for its copy.
#[test]
fn readers_copy_through_maps_that_are_being_replaced() {
    let file = file_of(PAGE);
    let first = Mapping::new(&file, PAGE, true).expect("map");
    first.write(0, b"stable");
    let chain = MapChain::new(Some(first));
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) || reads < 100 {
                    let map = chain.current().expect("a map");
                    let mut buf = [0u8; 6];
                    map.read(0, &mut buf);
                    assert_eq!(&buf, b"stable");
                    let mut last = [0u8; 1];
                    map.read(map.len() - 1, &mut last);
                    reads += 1;
                }
            });
        }
        for i in 2..=40 {
            file.set_len(i * PAGE).expect("grow the file");
            chain.install(Mapping::new(&file, i * PAGE, true).expect("a longer map"));
        }
        done.store(true, Ordering::Release);
    });
    assert_eq!(chain.len(), 40 * PAGE);
}

#[test]
fn prefetch_takes_any_range_and_changes_nothing() {
    let file = file_of(PAGE);
    let map = Mapping::new(&file, PAGE, true).expect("map");
    map.write(0, b"kept");
    for (offset, len) in
        [(0, 4), (PAGE - 1, 1), (PAGE - 10, 100), (PAGE, 64), (PAGE * 5, 1), (u64::MAX, usize::MAX)]
    {
        map.prefetch(offset, len);
    }
    let mut buf = [0u8; 4];
    map.read(0, &mut buf);
    assert_eq!(&buf, b"kept");
}

/// The bytes of the mapping that holds `address` that are in the process's
/// page tables (its `Rss` in /proc/self/smaps). Found by range, not by its
/// first address: a tool such as valgrind may place a map inside a larger
/// region of its own.
#[cfg(target_os = "linux")]
fn resident_bytes(address: usize) -> u64 {
    let smaps = fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
    let holds = |line: &str| {
        let range = line.split_whitespace().next().unwrap_or("");
        let Some((low, high)) = range.split_once('-') else { return false };
        match (usize::from_str_radix(low, 16), usize::from_str_radix(high, 16)) {
            (Ok(low), Ok(high)) => low <= address && address < high,
            _ => false,
        }
    };
    let mut lines = smaps.lines().skip_while(|line| !holds(line));
    assert!(lines.next().is_some(), "no mapping holds {address:x} in /proc/self/smaps");
    let rss = lines.find_map(|line| line.strip_prefix("Rss:")).expect("an Rss line");
    let kib: u64 = rss.trim().trim_end_matches("kB").trim().parse().expect("a size in kB");
    kib * 1024
}

#[test]
#[cfg(target_os = "linux")]
fn unmapped_pages_leave_the_process_and_keep_every_written_byte() {
    use std::os::unix::fs::FileExt;
    const PAGES: u64 = 64;
    let file = file_of(PAGES * PAGE);
    let chain = MapChain::new(Some(Mapping::new(&file, PAGES / 2 * PAGE, true).expect("first map")));
    chain.install(Mapping::new(&file, PAGES * PAGE, true).expect("second map"));
    let starts: Vec<usize> = chain.all.lock().iter().map(|m| m.raw.as_ptr() as usize).collect();
    // Half the pages written through the older map, the rest through the newer.
    for page in 0..PAGES {
        let bytes = (page + 1).to_le_bytes();
        if page < PAGES / 2 {
            chain.all.lock()[0].write(page * PAGE + 9, &bytes);
        } else {
            chain.current().expect("a map").write(page * PAGE + 9, &bytes);
        }
    }
    assert!(resident_bytes(starts[0]) >= PAGES / 2 * PAGE, "the older map's written pages are not mapped");
    chain.unmap_pages().expect("unmap the pages");
    for start in &starts {
        assert_eq!(resident_bytes(*start), 0, "the map at {start:x} kept pages in the page tables");
    }
    let mut buf = [0u8; 8];
    for page in 0..PAGES {
        file.read_exact_at(&mut buf, page * PAGE + 9).expect("read the file");
        assert_eq!(u64::from_le_bytes(buf), page + 1, "page {page} lost its bytes in the file");
        chain.current().expect("a map").read(page * PAGE + 9, &mut buf);
        assert_eq!(u64::from_le_bytes(buf), page + 1, "page {page} lost its bytes in the map");
    }
}
