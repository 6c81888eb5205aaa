//! A node load does not hold its cache shard while it reads the store: a
//! thread whose leaf read is stalled on the device does not stop another
//! thread's lookups of nodes cached in the same shard, and a third thread
//! that wants the same leaf waits for the first load and shares it. The
//! stall is a read held by a file wrapper until the test lets it go; no
//! timing is asserted but a generous deadline against a hang.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::hooked::{HookedFile, ReadHook};
use kuradb::dbm::hash::HashOptions;
use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm};
use kuradb::file::{FileWrapper, ReadRequest};
use kuradb::Result;

/// Long enough for any loaded machine; only a hang reaches it.
const DEADLINE: Duration = Duration::from_secs(20);

/// Holds the first read after [`Gate::arm`] until the test releases it.
struct Gate {
    armed: AtomicBool,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

impl Gate {
    fn pass(&self) {
        if self.armed.swap(false, Ordering::AcqRel) {
            self.entered.lock().unwrap().send(()).unwrap();
            // A test that fails lets the read go at its deadline.
            let _ = self.release.lock().unwrap().recv_timeout(DEADLINE * 2);
        }
    }
}

impl ReadHook for Gate {
    fn read(&self, _offset: u64, _len: usize) -> Result<()> {
        self.pass();
        Ok(())
    }
    fn read_many(&self, _reads: &[ReadRequest<'_>]) -> Result<()> {
        self.pass();
        Ok(())
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("{i:06}").into_bytes()
}

fn inspected(db: &TreeDbm, name: &str) -> u64 {
    db.inspect().unwrap().into_iter().find(|(k, _)| k == name).unwrap().1.parse().unwrap()
}

#[test]
fn a_stalled_load_blocks_only_its_own_node() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.kt");
    // 16 cache shards; node `id` is in shard `id % 16`.
    let options = TreeOptions::default().max_page_size(512).max_cached_pages(1000);
    let db = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
    // Keys in order fill leaves one after another: the key whose insertion
    // makes a new last leaf is that leaf's first.
    let mut first_key: BTreeMap<u64, u32> = BTreeMap::from([(1, 0)]);
    let mut i = 0;
    while !first_key.contains_key(&34) {
        db.set(&key(i), &[b'v'; 40]).unwrap();
        first_key.entry(inspected(&db, "last_id")).or_insert(i);
        i += 1;
    }
    assert_eq!(inspected(&db, "tree_level"), 2, "a root over leaves");
    let root = inspected(&db, "root_id");
    assert_eq!(root % 16, 0, "the root shares a shard with leaves 16 and 32");
    db.close().unwrap();

    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    let gate = Arc::new(Gate {
        armed: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let wrap_gate = gate.clone();
    let wrap = FileWrapper(Arc::new(move |inner| Box::new(HookedFile::new(inner, wrap_gate.clone()))));
    let options = options.hash(HashOptions::default().wrap_file(Some(wrap)));
    let db = TreeDbm::open(&path, Access::ReadOnly, &options).unwrap();
    // Cached: the root and leaf 32.
    let cached_key = key(first_key[&32]);
    let stalled_key = key(first_key[&16]);
    assert!(db.get(&cached_key).unwrap().is_some());

    std::thread::scope(|s| {
        gate.armed.store(true, Ordering::Release);
        let stalled = s.spawn(|| db.get(&stalled_key).unwrap());
        entered.recv_timeout(DEADLINE).expect("the leaf's load reached the store");
        // The same leaf: waits for the stalled load.
        let same = s.spawn(|| db.get(&stalled_key).unwrap());
        let (done_tx, done) = channel();
        let db = &db;
        let cached_key = &cached_key;
        s.spawn(move || {
            for _ in 0..100 {
                assert!(db.get(cached_key).unwrap().is_some());
            }
            done_tx.send(()).unwrap();
        });
        let finished = done.recv_timeout(DEADLINE);
        release.send(()).unwrap();
        finished.expect("lookups of cached nodes of the shard finished while a load of it was stalled");
        assert!(stalled.join().unwrap().is_some());
        assert!(same.join().unwrap().is_some());
    });
    // One read of the leaf for both threads that wanted it.
    assert_eq!(inspected(&db, "node_reads"), 3, "the root, leaf 32, and leaf 16 once");
    db.close().unwrap();
}
