//! The fault sweep's machinery: a switchboard of fault-injecting files that
//! can arm the N-th operation counted across every file a database opens, and
//! cut the power on all of them; and the model of what a database may hold
//! after a fault, given the workload it ran.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kuradb::file::{FaultControl, FaultFile, FaultKind, FileWrapper};

use super::hash::Model;

/// How a fault is injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// EIO at the N-th operation of any kind, reads included.
    Io,
    /// ENOSPC at the N-th changing operation.
    NoSpace,
    /// A short write (half the data stored, then ENOSPC) at the N-th changing
    /// operation.
    ShortWrite,
}

impl Class {
    /// Every class, in the order above.
    pub const ALL: [Class; 3] = [Class::Io, Class::NoSpace, Class::ShortWrite];

    /// The fault the class injects.
    pub fn kind(self) -> FaultKind {
        match self {
            Class::Io => FaultKind::Io,
            Class::NoSpace => FaultKind::NoSpace,
            Class::ShortWrite => FaultKind::ShortWrite,
        }
    }

    /// Whether the class counts reads as well as changes.
    pub fn counts_reads(self) -> bool {
        self == Class::Io
    }
}

/// Where a fault is due: the operation `n` (from 1) of the `file`-th file
/// opened (from 0), counted as its class counts.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub file: usize,
    pub n: u64,
    pub class: Class,
}

/// A file the database opened, and the control of its faults.
type Opened = (PathBuf, Arc<FaultControl>);

/// Fault-injecting files for every file a database opens, in the order opened.
#[derive(Clone, Default)]
pub struct Switchboard {
    files: Arc<Mutex<Vec<Opened>>>,
    /// Once the power is off, files opened later are dead at once, so that the
    /// dying database cannot write a new file after the cut.
    off: Arc<AtomicBool>,
    armed: Arc<Mutex<Option<Point>>>,
}

impl Switchboard {
    /// A board that will fail the operation at `point`.
    pub fn armed(point: Point) -> Switchboard {
        let board = Switchboard::default();
        *board.armed.lock().expect("armed") = Some(point);
        board
    }

    /// The wrapper to give the database's options.
    pub fn wrapper(&self) -> FileWrapper {
        let board = self.clone();
        FileWrapper(Arc::new(move |inner| {
            let path = inner.path().to_path_buf();
            let file = FaultFile::new(inner);
            let control = file.control();
            if board.off.load(Ordering::SeqCst) {
                control.power_cut().expect("cut a file opened after the power cut");
            }
            let mut files = board.files.lock().expect("files");
            if let Some(point) = *board.armed.lock().expect("armed") {
                if point.file == files.len() {
                    if point.class.counts_reads() {
                        control.fail_nth_operation(point.n, point.class.kind());
                    } else {
                        control.fail_nth_write(point.n, point.class.kind());
                    }
                }
            }
            files.push((path, control));
            Box::new(file)
        }))
    }

    /// How many operations each file opened so far has seen, as `class`
    /// counts them (reads included or not), in the order opened.
    pub fn counts(&self, class: Class) -> Vec<u64> {
        let files = self.files.lock().expect("files");
        files.iter().map(|(_, c)| if class.counts_reads() { c.operations() } else { c.writes() }).collect()
    }

    /// Whether the armed fault has fired.
    pub fn fired(&self) -> bool {
        self.files.lock().expect("files").iter().any(|(_, c)| c.fired() > 0)
    }

    /// Cuts the power on every file still open: what no hard synchronization
    /// made durable is undone. A file closed before the cut cannot be undone
    /// any more; what its database left pending in it stays.
    pub fn cut(&self) {
        self.off.store(true, Ordering::SeqCst);
        for (_, control) in self.files.lock().expect("files").iter() {
            // A closed file answers an error: nothing of it can be undone.
            let _ = control.power_cut();
        }
    }

    /// Cuts the power as [`Switchboard::cut`] does, except that the files
    /// `written_back` picks keep every write (the OS wrote their pages back
    /// before the cut) while the others lose what was not synchronized.
    pub fn cut_after_writeback(&self, written_back: impl Fn(&std::path::Path) -> bool) {
        self.off.store(true, Ordering::SeqCst);
        for (path, control) in self.files.lock().expect("files").iter() {
            if written_back(path) {
                control.power_cut_after_writeback();
            } else {
                let _ = control.power_cut();
            }
        }
    }

    /// Forgets the files, closing what the database left open.
    pub fn release(&self) {
        self.files.lock().expect("files").clear();
    }
}

/// Every point a sweep of `class` over a run that opened files with
/// The operations at the start of every file that a sample always tries.
pub const FIRST_ALWAYS: u64 = 8;

/// `counts` operations each tries, keeping every `stride`-th one (1: all)
/// and, in every file, the first [`FIRST_ALWAYS`]: where a file is created,
/// which a sample must not step over.
pub fn points(counts: &[u64], class: Class, stride: u64) -> Vec<Point> {
    let mut out = Vec::new();
    let mut global = 0u64;
    for (file, &count) in counts.iter().enumerate() {
        for n in 1..=count {
            if n <= FIRST_ALWAYS || global.is_multiple_of(stride) {
                out.push(Point { file, n, class });
            }
            global += 1;
        }
    }
    out
}

/// What a database may hold after a fault, as the workload's steps ran.
#[derive(Clone, Debug, Default)]
pub struct Expect {
    /// The records as every step that returned so far made them.
    pub live: Model,
    /// The whole states a power cut may bring back: the last durable one
    /// first, then (where the database counts them) later ones.
    pub durable: Vec<Model>,
    /// For each key, every value it may hold without a power cut (`None`:
    /// absent): its durable one and every one written since.
    pub values: BTreeMap<Vec<u8>, BTreeSet<Option<Vec<u8>>>>,
}

impl Expect {
    /// The expectation of a new, empty database.
    pub fn new() -> Expect {
        Expect { durable: vec![Model::new()], ..Expect::default() }
    }

    /// A step is about to write `value` (`None`: remove) at `key`: whether or
    /// not it returns, the key may hold it from now on.
    pub fn attempt(&mut self, key: &[u8], value: Option<&[u8]>) {
        let durable = self.durable[0].get(key).cloned();
        let set = self.values.entry(key.to_vec()).or_insert_with(|| BTreeSet::from([durable]));
        set.insert(value.map(<[u8]>::to_vec));
    }

    /// The step writing `value` at `key` returned.
    pub fn done(&mut self, key: &[u8], value: Option<&[u8]>) {
        match value {
            Some(v) => self.live.insert(key.to_vec(), v.to_vec()),
            None => self.live.remove(key),
        };
    }

    /// A synchronization returned: a hard one makes the live state the only
    /// durable one; a soft one adds it where `soft_counts`.
    pub fn synchronized(&mut self, hard: bool, soft_counts: bool) {
        if hard {
            self.durable = vec![self.live.clone()];
            self.values.clear();
        } else if soft_counts {
            self.durable.push(self.live.clone());
        }
    }

    /// Whether `found` holds, for every key, one of the values it may hold
    /// without a power cut; else the first key that does not, and why.
    pub fn check_values(&self, found: &Model) -> Result<(), String> {
        let keys: BTreeSet<&Vec<u8>> =
            found.keys().chain(self.durable[0].keys()).chain(self.values.keys()).collect();
        for key in keys {
            let value = found.get(key).cloned();
            let ok = match self.values.get(key) {
                Some(allowed) => allowed.contains(&value),
                None => value == self.durable[0].get(key).cloned(),
            };
            if !ok {
                let show = |v: &Option<Vec<u8>>| v.as_deref().map_or("absent".into(), super::hash::show);
                let allowed = match self.values.get(key) {
                    Some(a) => a.iter().map(show).collect::<Vec<_>>().join(" or "),
                    None => show(&self.durable[0].get(key).cloned()),
                };
                return Err(format!(
                    "key {} holds {}; it may hold only {allowed}",
                    super::hash::show(key),
                    show(&value)
                ));
            }
        }
        Ok(())
    }

    /// Whether `found` is one of the durable states, or `extra` (a state a
    /// failed synchronization may have made durable); else how it differs
    /// from the last durable state.
    pub fn check_whole(&self, found: &Model, extra: Option<&Model>) -> Result<(), String> {
        if self.durable.iter().chain(extra).any(|m| m == found) {
            return Ok(());
        }
        let diff = super::hash::difference(found, &self.durable[0]).unwrap_or_default();
        Err(format!("none of the states it may hold after a power cut; against the last durable one: {diff}"))
    }
}

/// A scratch directory in memory where the system has one: the fault file
/// models what reaches the device, so the sweep's many hard
/// synchronizations need not wait for a real one.
pub fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().expect("create a temporary directory")
}
