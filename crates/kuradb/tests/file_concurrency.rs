//! Threads sharing one file: disjoint writes all land, concurrent appends never
//! overlap, atomic files never show a half-done write, and reads of settled data
//! stay right while other threads grow the file.
//!
//! Every test runs for every spec of the matrix except synchronous I/O (too slow
//! for thousands of writes). Neighbouring records of different threads share
//! blocks: the `File` contract leaves only overlapping *bytes* unspecified on a
//! parallel file, so read-modify-write of shared blocks must not lose a
//! neighbour's bytes, with or without block I/O.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use common::ExpectSpec;
use kuradb::file::{File, FileSpec, OpenOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const THREADS: usize = 4;
const RECORD: usize = 100;

/// Where record `i` of the disjoint-writes test starts: back to back from an
/// odd offset, so every block boundary cuts some record.
fn record_offset(i: usize) -> u64 {
    13 + (i * RECORD) as u64
}

/// The length of the `j`-th record thread `thread` appends: 1 to 150 bytes.
fn append_len(thread: usize, j: usize) -> usize {
    1 + (thread * 131 + j * 17) % 150
}

/// How long reading threads keep going while other threads write; if the
/// writers have not finished by then, the readers stop and the test fails.
const WRITERS_DEADLINE: Duration = Duration::from_secs(10);

/// Tells reading threads when the writers are done, and notes whether they
/// gave up waiting (the writers starved).
struct ReadUntil {
    done: AtomicBool,
    starved: AtomicBool,
    deadline: Instant,
}

impl ReadUntil {
    fn new() -> ReadUntil {
        ReadUntil {
            done: AtomicBool::new(false),
            starved: AtomicBool::new(false),
            deadline: Instant::now() + WRITERS_DEADLINE,
        }
    }

    /// Whether a reader that has read `reads` times should read again.
    fn keep_reading(&self, reads: u64) -> bool {
        if reads == 0 {
            return true;
        }
        if self.done.load(Ordering::Relaxed) {
            return false;
        }
        if Instant::now() > self.deadline {
            self.starved.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    #[track_caller]
    fn assert_writers_finished(&self, spec: &FileSpec) {
        assert!(
            !self.starved.load(Ordering::Relaxed),
            "[{spec}] the writers did not finish within {WRITERS_DEADLINE:?} while two threads kept reading"
        );
    }
}

/// Four threads writing interleaved records (record `i` belongs to thread
/// `i % 4`) at unaligned offsets, each in ascending order so all of them extend
/// the file at once, leave every record intact and every gap zero, before and
/// after a reopen.
#[test]
fn concurrent_disjoint_writes_all_land() {
    const PER_THREAD: usize = 250;
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let (path, mut file) = common::create(&spec, dir.path(), "disjoint.dat");
        let records = THREADS * PER_THREAD;
        let f: &dyn File = file.as_ref();
        thread::scope(|s| {
            for t in 0..THREADS {
                let spec = &spec;
                s.spawn(move || {
                    for i in (t..records).step_by(THREADS) {
                        let offset = record_offset(i);
                        f.write(offset, &common::pattern(i as u64, RECORD))
                            .expect_spec(spec, format_args!("thread {t}: write record {i} at {offset}"));
                    }
                });
            }
        });
        let end = record_offset(records - 1) as usize + RECORD;
        let mut expected = vec![0u8; end];
        for i in 0..records {
            let offset = record_offset(i) as usize;
            expected[offset..offset + RECORD].copy_from_slice(&common::pattern(i as u64, RECORD));
        }
        common::assert_content(&spec, file.as_ref(), &expected, "after the concurrent writes");
        file.close().expect_spec(&spec, "close");
        let file = common::open(&spec, &path, &OpenOptions::reader());
        common::assert_content(&spec, file.as_ref(), &expected, "reopened");
    }
}

/// Four threads each appending 500 distinct records get regions that never
/// overlap, each holding its record, and the size is the sum of the lengths.
#[test]
fn concurrent_appends_never_overlap() {
    const PER_THREAD: usize = 500;
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let (_path, mut file) = common::create(&spec, dir.path(), "appends.dat");
        let f: &dyn File = file.as_ref();
        let mut appended: Vec<(u64, usize, u64)> = thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let spec = &spec;
                    s.spawn(move || {
                        (0..PER_THREAD)
                            .map(|j| {
                                let seed = (t * PER_THREAD + j) as u64;
                                let data = common::pattern(seed, append_len(t, j));
                                let offset =
                                    f.append(&data).expect_spec(spec, format_args!("thread {t}: append {j}"));
                                (offset, data.len(), seed)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().expect("an appending thread panicked")).collect()
        });
        appended.sort_unstable();
        for pair in appended.windows(2) {
            let ((a, a_len, a_seed), (b, _, b_seed)) = (pair[0], pair[1]);
            assert!(
                a + a_len as u64 <= b,
                "[{spec}] the append of seed {a_seed} at {a} (length {a_len}) overlaps that of seed {b_seed} at {b}"
            );
        }
        let total: u64 = appended.iter().map(|&(_, len, _)| len as u64).sum();
        assert_eq!(file.size(), total, "[{spec}] size after {} appends", appended.len());
        for &(offset, len, seed) in &appended {
            let mut buf = vec![0; len];
            file.read(offset, &mut buf).expect_spec(&spec, format_args!("read the append at {offset}"));
            assert!(buf == common::pattern(seed, len), "[{spec}] the append of seed {seed} at {offset}");
        }
        file.close().expect_spec(&spec, "close");
    }
}

/// On an atomic file, a read concurrent with writes of whole records (each one
/// repeated byte) sees every record entirely old or entirely new, even where
/// records share blocks and while another thread grows the file.
#[test]
fn atomic_files_never_show_half_a_write() {
    const RECORDS: usize = 64;
    const BASE: u64 = 13;
    const WRITES: usize = 1500;
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync().into_iter().filter(|s| s.kind.is_atomic()) {
        let (_path, mut file) = common::create(&spec, dir.path(), "atomic.dat");
        for r in 0..RECORDS {
            file.write(BASE + (r * RECORD) as u64, &[r as u8; RECORD]).expect_spec(&spec, "write a record");
        }
        let f: &dyn File = file.as_ref();
        let spec = &spec;
        let until = &ReadUntil::new();
        let start = &Barrier::new(5);
        let reads: u64 = thread::scope(|s| {
            let readers: Vec<_> = (0..2)
                .map(|r| {
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(100 + r);
                        let mut reads = 0;
                        start.wait();
                        while until.keep_reading(reads) {
                            let first = rng.gen_range(0..RECORDS - 2);
                            let count = rng.gen_range(1..=3);
                            let skip_front = rng.gen_range(0..RECORD / 2);
                            let skip_back = rng.gen_range(0..RECORD / 2);
                            let offset = BASE + (first * RECORD + skip_front) as u64;
                            let mut buf = vec![0; count * RECORD - skip_front - skip_back];
                            f.read(offset, &mut buf)
                                .expect_spec(spec, format_args!("reader {r}: read at {offset}"));
                            // The pieces of the read that lie in one record each.
                            let (head, rest) = buf.split_at((RECORD - skip_front).min(buf.len()));
                            let pieces = std::iter::once(head).chain(rest.chunks(RECORD));
                            for (k, piece) in pieces.enumerate() {
                                assert!(
                                    piece.iter().all(|&b| b == piece[0]),
                                    "[{spec}] reader {r}: record {} read at {offset} is torn: {piece:?}",
                                    first + k
                                );
                            }
                            reads += 1;
                        }
                        reads
                    })
                })
                .collect();
            let mut busy: Vec<_> = (0..2u64)
                .map(|w| {
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(w);
                        start.wait();
                        for _ in 0..WRITES {
                            let r = rng.gen_range(0..RECORDS / 2) * 2 + w as usize;
                            let value: u8 = rng.gen();
                            f.write(BASE + (r * RECORD) as u64, &[value; RECORD])
                                .expect_spec(spec, format_args!("writer {w}: write record {r}"));
                        }
                    })
                })
                .collect();
            busy.push(s.spawn(move || {
                start.wait();
                for j in 0..200 {
                    f.append(&[0xEE; 300]).expect_spec(spec, format_args!("grower: append {j}"));
                }
            }));
            for handle in busy {
                handle.join().expect("a writing thread panicked");
            }
            until.done.store(true, Ordering::Relaxed);
            readers.into_iter().map(|h| h.join().expect("a reading thread panicked")).sum()
        });
        until.assert_writers_finished(spec);
        assert!(reads >= 2, "[{spec}] only {reads} reads ran");
        file.close().expect_spec(spec, "close");
    }
}

/// Reads of data written before they start return it exactly while other
/// threads append and expand the file (remapping it, evicting cached blocks), and
/// each appender reads its own record back at once.
#[test]
fn settled_data_reads_right_while_the_file_grows() {
    const PREFIX: usize = 16 << 10;
    const PER_THREAD: usize = 200;
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for spec in common::matrix_without_sync() {
        let (_path, mut file) = common::create(&spec, dir.path(), "growing.dat");
        let prefix = common::pattern(99, PREFIX);
        file.write(0, &prefix).expect_spec(&spec, "write the prefix");
        let f: &dyn File = file.as_ref();
        let (spec, prefix) = (&spec, &prefix);
        let until = &ReadUntil::new();
        let start = &Barrier::new(4);
        // (offset, length, Some(seed) for appended data or None for expanded zeros)
        let mut regions: Vec<(u64, usize, Option<u64>)> = thread::scope(|s| {
            let readers: Vec<_> = (0..2u64)
                .map(|r| {
                    s.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(r);
                        let mut reads = 0;
                        start.wait();
                        while until.keep_reading(reads) {
                            let offset = rng.gen_range(0..PREFIX);
                            let len = rng.gen_range(1..=(PREFIX - offset).min(3000));
                            let mut buf = vec![0; len];
                            f.read(offset as u64, &mut buf)
                                .expect_spec(spec, format_args!("reader {r}: read {len} at {offset}"));
                            assert!(
                                buf == prefix[offset..offset + len],
                                "[{spec}] reader {r}: {len} bytes at {offset} changed"
                            );
                            reads += 1;
                        }
                    })
                })
                .collect();
            let growers: Vec<_> = (0..2usize)
                .map(|t| {
                    s.spawn(move || {
                        let mut regions = Vec::new();
                        start.wait();
                        for j in 0..PER_THREAD {
                            let len = append_len(t, j) * 3;
                            if j % 10 == 9 {
                                let offset = f.expand(len as u64).expect_spec(spec, "expand");
                                regions.push((offset, len, None));
                                continue;
                            }
                            let seed = (t * PER_THREAD + j) as u64;
                            let data = common::pattern(seed, len);
                            let offset =
                                f.append(&data).expect_spec(spec, format_args!("grower {t}: append"));
                            let mut back = vec![0; len];
                            f.read(offset, &mut back).expect_spec(spec, "read an append back");
                            assert!(
                                back == data,
                                "[{spec}] grower {t}: the append at {offset} read back wrong"
                            );
                            regions.push((offset, len, Some(seed)));
                        }
                        regions
                    })
                })
                .collect();
            let regions: Vec<_> =
                growers.into_iter().flat_map(|h| h.join().expect("a growing thread panicked")).collect();
            until.done.store(true, Ordering::Relaxed);
            for reader in readers {
                reader.join().expect("a reading thread panicked");
            }
            regions
        });
        until.assert_writers_finished(spec);
        regions.sort_unstable();
        let mut expected = prefix.clone();
        for (offset, len, seed) in regions {
            assert_eq!(offset, expected.len() as u64, "[{spec}] regions must tile the file");
            match seed {
                Some(seed) => expected.extend(common::pattern(seed, len)),
                None => expected.resize(expected.len() + len, 0),
            }
        }
        common::assert_content(spec, file.as_ref(), &expected, "after growing");
        file.close().expect_spec(spec, "close");
    }
}
