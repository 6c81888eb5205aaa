//! The conformance suite: what every database class must do through the
//! [`Dbm`] trait, written once over `&dyn Dbm` and checked against a
//! [`Model`].
//!
//! A class is described by a [`Subject`]: its name, how to open it, and its
//! capabilities ([`Caps`]), which say what the model expects of it: keys
//! in a comparator's order (cursors move backward and jump by order),
//! duplicate keys (a set adds a record beside the key's others), deferred
//! updates (changes show only after a synchronization), and where its
//! records live (nowhere but memory, a flat file, or a file of its own).
//! [`check`] runs every check on a subject and panics naming each that
//! failed: scripted checks of the provided methods, processors, housekeeping,
//! cursors and reopening ([`checks`]), then random sequences of every
//! operation against the model ([`sequence`]).
//!
//! The per-class model tests reuse the random operations of [`ops`] between
//! their own class-specific steps.

pub mod checks;
pub mod cursor;
pub mod model;
pub mod ops;
pub mod read;
pub mod sequence;

use std::path::Path;

use kuradb::dbm::tree::KeyComparator;
use kuradb::dbm::Dbm;

pub use model::{Model, Record};

/// Where a class keeps its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// In memory only: nothing outlives the database.
    Memory,
    /// In memory, read from a flat file at open and written to it whole at
    /// synchronization and close.
    Flat,
    /// In a file of the class's own format, changed as records are.
    File,
}

/// What a class does beyond the trait's minimum.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// The order cursors visit keys in, for an ordered class (whose cursors
    /// also go backward and jump to the nearest key).
    pub order: Option<KeyComparator>,
    /// Whether `process_each` visits records in that order too (a set of
    /// shards walks one shard after another).
    pub each_in_order: bool,
    /// Whether a set adds a record beside the key's others (until a reducer
    /// says otherwise) instead of replacing them.
    pub duplicates: bool,
    /// Whether updates show only after the next synchronization (or rebuild,
    /// or close); a clear shows at once.
    pub deferred: bool,
    /// Where the records live.
    pub storage: Storage,
    /// Where the class departs from the trait's contract today, so that the
    /// model follows it; each is a bug to fix, after which its entry goes.
    pub known_bugs: &'static [Bug],
}

/// A known departure from the trait's contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// A cursor may miss records written beside it: one whose record is
    /// removed shows the next record of its own shard, not the next of all
    /// (a set of shards' merging cursor). The suite writes nothing beside
    /// such a cursor.
    CursorMissesWritesBeside,
}

impl Caps {
    /// An unordered class whose updates show at once.
    pub fn unordered(storage: Storage) -> Caps {
        Caps {
            order: None,
            each_in_order: false,
            duplicates: false,
            deferred: false,
            storage,
            known_bugs: &[],
        }
    }

    /// A class ordered by `cmp` whose updates show at once.
    pub fn ordered(cmp: KeyComparator, storage: Storage) -> Caps {
        Caps { order: Some(cmp), each_in_order: true, ..Caps::unordered(storage) }
    }

    /// Whether the class has `bug`.
    pub fn has(&self, bug: Bug) -> bool {
        self.known_bugs.contains(&bug)
    }

    /// Whether the class has a file that outlives the database.
    pub fn has_file(&self) -> bool {
        self.storage != Storage::Memory
    }
}

/// Opens a database of the class at a path, for writing or reading.
pub type Opener = dyn Fn(&Path, bool) -> kuradb::Result<Box<dyn Dbm>> + Send + Sync;

/// A database class as the suite sees it.
pub struct Subject {
    /// The class and tuning, as failures name it.
    pub name: String,
    /// What the model expects of it.
    pub caps: Caps,
    /// Opens (or creates) the database at the path; a class without a file
    /// ignores the path and starts empty.
    pub open: Box<Opener>,
    /// Random sequences to run (`PROPTEST_CASES` overrides it).
    pub cases: u32,
    /// The most steps a random sequence takes.
    pub steps: usize,
}

impl Subject {
    /// A subject that opens with `open`.
    pub fn new(
        name: impl Into<String>,
        caps: Caps,
        open: impl Fn(&Path, bool) -> kuradb::Result<Box<dyn Dbm>> + Send + Sync + 'static,
    ) -> Subject {
        Subject { name: name.into(), caps, open: Box::new(open), cases: 16, steps: 60 }
    }

    /// The subject with `cases` random sequences.
    pub fn cases(self, cases: u32) -> Subject {
        Subject { cases, ..self }
    }

    /// The subject with random sequences of up to `steps` steps.
    pub fn steps(self, steps: usize) -> Subject {
        Subject { steps, ..self }
    }

    /// Opens the database at `path`, the error naming the subject.
    pub fn open(&self, path: &Path, writable: bool) -> Result<Box<dyn Dbm>, String> {
        (self.open)(path, writable).map_err(|e| {
            let how = if writable { "for writing" } else { "for reading" };
            format!("open {} {how}: {e}", path.display())
        })
    }

    /// A fresh database in `dir`, and its path.
    pub fn create(&self, dir: &Path) -> Result<(std::path::PathBuf, Box<dyn Dbm>), String> {
        let path = dir.join("casket");
        let db = self.open(&path, true)?;
        Ok((path, db))
    }
}

/// Runs every check on `subject`; panics listing each one that failed.
pub fn check(subject: &Subject) {
    let mut failures = Vec::new();
    for (name, check) in checks::ALL {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        if let Err(e) = check(subject, dir.path()) {
            failures.push(format!("{name}: {e}"));
        }
    }
    if let Err(e) = sequence::run(subject) {
        failures.push(format!("random sequences: {e}"));
    }
    assert!(
        failures.is_empty(),
        "[{}] {} checks failed:\n{}",
        subject.name,
        failures.len(),
        failures.join("\n")
    );
}
