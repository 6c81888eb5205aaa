//! Random operation sequences against a model (a `BTreeMap`) over the
//! fault-injecting file: sets, removes, appends, synchronizations,
//! rebuilds, walks, faults armed on the database's file or the next file it
//! opens (EIO or ENOSPC, once or from then on), power cuts and reopens.
//!
//! While no operation has failed the database must answer exactly as the
//! model does. After a failure the harness does what a program would: it
//! closes the database (whatever closing says), reopens it without faults
//! (which restores it) and requires every key to hold a value it had at the
//! last successful hard synchronization or was given since, or be absent if
//! it was so at one of those times; it never holds a value never written.
//!
//! The first byte chooses the database (hash in place, hash appending, tree,
//! tree over an appending store) and its file; each operation then takes a
//! byte and its arguments the bytes after.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use kuradb::dbm::hash::{HashOptions, UpdateMode};
use kuradb::dbm::{Access, Durability};
use kuradb::file::{FaultControl, FaultFile, FaultKind, FileKind, FileSpec, FileWrapper};
use kuradb::{Dbm, HashDbm, Result, TreeDbm, TreeOptions};

use super::checks::{clear, walk};

/// The keys an input can name.
const KEYS: u8 = 24;

/// A walk can show at most this many records (every key once).
const WALK_LIMIT: usize = KEYS as usize + 1;

/// Runs the operations `data` encodes.
pub fn run(data: &[u8]) {
    let mut input = Input(data);
    let config = input.byte();
    let dir = super::files::scratch();
    let mut run = Run::new(config, dir.path());
    let mut step = 0usize;
    while !input.0.is_empty() && step < 400 {
        run.step(step, &mut input);
        step += 1;
    }
    run.recover("the end of the input");
}

/// The bytes not read yet; zeros once they run out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else { return 0 };
        self.0 = rest;
        b
    }
}

/// A fault to arm on the next file the database opens.
#[derive(Clone, Copy, Debug)]
struct Arm {
    n: u64,
    kind: FaultKind,
    persistent: bool,
}

impl Arm {
    fn on(self, control: &FaultControl) {
        if self.persistent {
            control.fail_writes_from(self.n, self.kind);
        } else {
            control.fail_nth_operation(self.n, self.kind);
        }
    }
}

/// The files a database opened through the wrapper, newest last, and a
/// fault waiting for the next one. The controls are held weakly: a file the
/// database drops closes then, as a real one does (a strong hold would keep
/// it open, and entered in the process's table of open files).
#[derive(Default)]
struct Files {
    opened: Vec<(PathBuf, Weak<FaultControl>)>,
    pending: Option<Arm>,
}

#[derive(Clone, Default)]
struct Controls(Arc<Mutex<Files>>);

impl Controls {
    fn wrapper(&self) -> FileWrapper {
        let files = self.clone();
        FileWrapper(Arc::new(move |inner| {
            let path = inner.path().to_path_buf();
            let file = FaultFile::new(inner);
            let mut files = files.0.lock().expect("the controls");
            if let Some(arm) = files.pending.take() {
                arm.on(&file.control());
            }
            files.opened.push((path, Arc::downgrade(&file.control())));
            Box::new(file)
        }))
    }

    /// The control of the file open at `path` now: the last opened there.
    fn at(&self, path: &Path) -> Option<Arc<FaultControl>> {
        let files = self.0.lock().expect("the controls");
        files.opened.iter().rev().find(|(p, _)| p == path).and_then(|(_, c)| c.upgrade())
    }
}

struct Run {
    config: u8,
    path: PathBuf,
    db: Option<Box<dyn Dbm>>,
    controls: Controls,
    /// What the database holds, while no operation has failed since the
    /// last reopen.
    live: BTreeMap<Vec<u8>, Vec<u8>>,
    /// What it held at the last successful hard synchronization.
    synced: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Every state each key was given since (`None`: removed), whether or
    /// not the operation succeeded.
    since: BTreeMap<Vec<u8>, BTreeSet<Option<Vec<u8>>>>,
}

fn key(k: u8) -> Vec<u8> {
    format!("key{:02}", k % KEYS).into_bytes()
}

fn value(step: usize, k: u8, len: u8) -> Vec<u8> {
    let mut v = format!("{step}:{k}:").into_bytes();
    v.resize(v.len().max(usize::from(len) * 8), b'a' + (step % 26) as u8);
    v
}

impl Run {
    fn new(config: u8, dir: &Path) -> Run {
        let ext = if config & 2 == 0 { "kh" } else { "kt" };
        let mut run = Run {
            config,
            path: dir.join(format!("model.{ext}")),
            db: None,
            controls: Controls::default(),
            live: BTreeMap::new(),
            synced: BTreeMap::new(),
            since: BTreeMap::new(),
        };
        run.db = Some(run.open().unwrap_or_else(|e| panic!("creating the database: {e}")));
        run
    }

    /// Opens the database as the first byte says, through a fresh wrapper.
    fn open(&mut self) -> Result<Box<dyn Dbm>> {
        self.controls = Controls::default();
        let file = match (self.config >> 2) & 3 {
            0 => FileSpec::new(FileKind::MmapParallel),
            1 => FileSpec::new(FileKind::PositionalParallel),
            2 => {
                let mut block = FileSpec::new(FileKind::PositionalAtomic);
                block.block_size = 512;
                block.pagecache = true;
                block.page_cache_capacity = Some(4);
                block
            }
            _ => FileSpec::new(FileKind::MmapAtomic),
        };
        let mode = if self.config & 1 == 0 { UpdateMode::InPlace } else { UpdateMode::Appending };
        let hash = HashOptions::default()
            .file(file)
            .num_buckets(7)
            .align_pow(2)
            .update_mode(mode)
            .wrap_file(Some(self.controls.wrapper()));
        Ok(if self.config & 2 == 0 {
            Box::new(HashDbm::open(&self.path, Access::ReadWrite, &hash)?)
        } else {
            let tree = TreeOptions::default().hash(hash).max_page_size(256).max_branches(4);
            Box::new(TreeDbm::open(&self.path, Access::ReadWrite, &tree)?)
        })
    }

    fn db(&self) -> &dyn Dbm {
        self.db.as_deref().expect("the database is open")
    }

    /// Records that `k` may now hold `state`.
    fn given(&mut self, k: &[u8], state: Option<Vec<u8>>) {
        self.since.entry(k.to_vec()).or_default().insert(state);
    }

    fn step(&mut self, step: usize, input: &mut Input<'_>) {
        let op = input.byte() % 12;
        let k = input.byte();
        let outcome: Result<()> = match op {
            0..=2 => {
                let (key, value) = (key(k), value(step, k, input.byte()));
                self.given(&key, Some(value.clone()));
                let done = self.db().set(&key, &value);
                done.map(|()| drop(self.live.insert(key, value)))
            }
            3 => {
                let key = key(k);
                self.given(&key, None);
                let done = self.db().remove(&key);
                done.map(|existed| {
                    assert_eq!(
                        existed,
                        self.live.remove(&key).is_some(),
                        "remove {key:?}: whether it existed"
                    );
                })
            }
            4 => {
                let key = key(k);
                self.db().get(&key).map(|got| {
                    assert_eq!(got.as_ref(), self.live.get(&key), "get {key:?} at step {step}");
                })
            }
            5 => {
                let key = key(k);
                let mut appended = self.live.get(&key).cloned().unwrap_or_default();
                if self.live.contains_key(&key) {
                    appended.push(b',');
                }
                appended.extend_from_slice(format!("+{step}").as_bytes());
                self.given(&key, Some(appended.clone()));
                let done = self.db().append(&key, format!("+{step}").as_bytes(), b",");
                done.map(|()| drop(self.live.insert(key, appended)))
            }
            6 => {
                let hard = k & 1 == 1;
                self.db().synchronize(if hard { Durability::Hard } else { Durability::Soft }).map(|()| {
                    if hard {
                        self.synced = self.live.clone();
                        self.since.clear();
                    }
                })
            }
            7 => self.db().rebuild().and_then(|()| self.compare(&format!("a rebuild at step {step}"))),
            8 => self.compare(&format!("a walk at step {step}")),
            9 => {
                let arm = Arm {
                    n: u64::from(input.byte() % 16) + 1,
                    kind: if k & 1 == 0 { FaultKind::Io } else { FaultKind::NoSpace },
                    persistent: k & 2 != 0,
                };
                if k & 4 == 0 {
                    if let Some(control) = self.controls.at(&self.path) {
                        arm.on(&control);
                    }
                } else {
                    self.controls.0.lock().expect("the controls").pending = Some(arm);
                }
                Ok(())
            }
            10 => {
                if std::env::var_os("KURADB_FUZZ_TRACE").is_some() {
                    eprintln!("step {step}: power cut");
                }
                // A cut on a file already closed fails, and cuts nothing.
                if let Some(control) = self.controls.at(&self.path) {
                    let _ = control.power_cut();
                }
                return self.recover(&format!("a power cut at step {step}"));
            }
            _ => {
                if std::env::var_os("KURADB_FUZZ_TRACE").is_some() {
                    eprintln!("step {step}: close and reopen");
                }
                let db = self.db.take().expect("the database is open");
                if let Err(e) = db.close() {
                    clear(&e, "a close");
                }
                return self.recover(&format!("a close at step {step}"));
            }
        };
        if std::env::var_os("KURADB_FUZZ_TRACE").is_some() {
            eprintln!("step {step}: op {op} key {k}: {outcome:?}");
        }
        if let Err(e) = outcome {
            clear(&e, "an operation");
            self.recover(&format!("a failure at step {step} ({e})"));
        }
    }

    /// Panics unless a walk shows exactly the model (a walk may fail: a
    /// fault may be armed on a read).
    fn compare(&self, when: &str) -> Result<()> {
        let found: BTreeMap<Vec<u8>, Vec<u8>> = walk(self.db(), WALK_LIMIT)?.into_iter().collect();
        assert_eq!(found, self.live, "{when}: the database differs from the model");
        let count = self.db().count()?;
        assert_eq!(count, self.live.len() as u64, "{when}: the count differs from the model");
        Ok(())
    }

    /// Closes the database as a program would after a failure, reopens it
    /// without faults and checks that it holds only states its keys were
    /// given since the last hard synchronization.
    fn recover(&mut self, after: &str) {
        if let Some(db) = self.db.take() {
            if let Err(e) = db.close() {
                clear(&e, "a close after a failure");
            }
        }
        let db = self.open().unwrap_or_else(|e| panic!("reopening after {after}: {e}"));
        let found: BTreeMap<Vec<u8>, Vec<u8>> = match walk(db.as_ref(), WALK_LIMIT) {
            Ok(records) => records.into_iter().collect(),
            Err(e) => panic!("walking the database reopened after {after}: {e}"),
        };
        let keys: BTreeSet<&Vec<u8>> =
            found.keys().chain(self.synced.keys()).chain(self.since.keys()).collect();
        for key in keys {
            let state = found.get(key);
            let allowed = self.synced.get(key) == state
                || self.since.get(key).is_some_and(|states| states.contains(&state.cloned()));
            assert!(
                allowed,
                "after {after}, {key:?} holds {state:?}: neither its state at the last hard \
                 synchronization ({:?}) nor one given since ({:?})",
                self.synced.get(key),
                self.since.get(key)
            );
        }
        let count = db.count().unwrap_or_else(|e| panic!("count after {after}: {e}"));
        assert_eq!(count, found.len() as u64, "after {after}: the count differs from a walk");
        self.live = found;
        self.db = Some(db);
    }
}
