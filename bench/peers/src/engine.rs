//! The engines of `kura-peers txn`, each behind one small trait: open a
//! fresh database, commit a set of key/value pairs as one transaction,
//! close. A new peer joins that workload by implementing [`Engine`] and
//! taking a name in [`EngineName`].

use std::error::Error as StdError;
use std::fmt;
use std::path::Path;

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
use kuradb::dbm::Access;
use kuradb::Params;
#[cfg(feature = "redb")]
use redb::TableDefinition;

/// Any engine's error, boxed.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// What a commit promises when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// On the device: survives a power cut.
    Sync,
    /// Handed to the operating system: survives the process's crash. An
    /// engine without such a level runs its weakest one.
    Os,
    /// Nothing: a crash may lose it.
    Memory,
}

impl Durability {
    /// The name the command line takes.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Os => "os",
            Durability::Memory => "memory",
        }
    }

    /// Parses a name of [`Durability::name`].
    pub fn parse(text: &str) -> Result<Durability, String> {
        match text {
            "sync" => Ok(Durability::Sync),
            "os" => Ok(Durability::Os),
            "memory" => Ok(Durability::Memory),
            _ => Err(format!("unknown durability {text:?}: sync, os or memory")),
        }
    }
}

/// One database engine under test.
pub trait Engine: Sized + Sync {
    /// Makes a fresh database in the empty folder `dir`, whose commits
    /// will have `durability`.
    fn open(dir: &Path, durability: Durability) -> Result<Self, BoxError>;

    /// Sets every pair as one transaction and returns once it is as
    /// durable as the database was opened for. Any thread may call it.
    fn commit(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), BoxError>;

    /// Closes the database, making everything durable.
    fn close(self) -> Result<(), BoxError>;
}

/// The engines by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineName {
    /// kuradb's hash database under `TransactionalDbm`.
    KuraHash,
    /// kuradb's tree database under `TransactionalDbm`.
    KuraTree,
    /// redb.
    #[cfg(feature = "redb")]
    Redb,
}

impl EngineName {
    /// Every engine of this build, in the order of the table's columns.
    pub fn all() -> Vec<EngineName> {
        vec![
            EngineName::KuraHash,
            EngineName::KuraTree,
            #[cfg(feature = "redb")]
            EngineName::Redb,
        ]
    }

    /// The name the command line takes and the table shows.
    pub fn name(self) -> &'static str {
        match self {
            EngineName::KuraHash => "kura-hash",
            EngineName::KuraTree => "kura-tree",
            #[cfg(feature = "redb")]
            EngineName::Redb => "redb",
        }
    }

    /// Parses a name of [`EngineName::name`].
    pub fn parse(text: &str) -> Result<EngineName, String> {
        EngineName::all().into_iter().find(|e| e.name() == text).ok_or_else(|| {
            let names: Vec<_> = EngineName::all().iter().map(|e| e.name()).collect();
            format!("unknown engine {text:?}: one of {}", names.join(", "))
        })
    }
}

impl fmt::Display for EngineName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// kuradb: a `PolyDbm` of one class wrapped for transactions, committing
/// each set of pairs as a batch.
pub struct Kura {
    db: TransactionalDbm<PolyDbm>,
    durability: CommitDurability,
}

impl Kura {
    fn open_file(path: &Path, durability: Durability) -> Result<Kura, BoxError> {
        let poly = PolyDbm::open(path, Access::ReadWrite, &Params::default())?;
        let options = TransactionOptions::for_poly(&poly)?;
        let db = TransactionalDbm::open(poly, options)?;
        let durability = match durability {
            Durability::Sync => CommitDurability::Sync,
            Durability::Os => CommitDurability::Os,
            Durability::Memory => CommitDurability::Memory,
        };
        Ok(Kura { db, durability })
    }

    fn commit(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), BoxError> {
        let mut batch = self.db.batch(self.durability);
        for (key, value) in pairs {
            batch.set(key, value);
        }
        batch.commit()?;
        Ok(())
    }
}

/// kuradb's hash database (`.kh`), the class's default parameters.
pub struct KuraHash(Kura);

impl Engine for KuraHash {
    fn open(dir: &Path, durability: Durability) -> Result<Self, BoxError> {
        Ok(KuraHash(Kura::open_file(&dir.join("bench.kh"), durability)?))
    }

    fn commit(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), BoxError> {
        self.0.commit(pairs)
    }

    fn close(self) -> Result<(), BoxError> {
        Ok(self.0.db.close()?)
    }
}

/// kuradb's tree database (`.kt`), the class's default parameters.
pub struct KuraTree(Kura);

impl Engine for KuraTree {
    fn open(dir: &Path, durability: Durability) -> Result<Self, BoxError> {
        Ok(KuraTree(Kura::open_file(&dir.join("bench.kt"), durability)?))
    }

    fn commit(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), BoxError> {
        self.0.commit(pairs)
    }

    fn close(self) -> Result<(), BoxError> {
        Ok(self.0.db.close()?)
    }
}

/// The one table the redb runs write.
#[cfg(feature = "redb")]
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");

/// redb with its default settings. It runs one write transaction at a
/// time: a committer waits in `begin_write` while another's is open.
#[cfg(feature = "redb")]
pub struct Redb {
    db: redb::Database,
    durability: redb::Durability,
}

#[cfg(feature = "redb")]
impl Engine for Redb {
    fn open(dir: &Path, durability: Durability) -> Result<Self, BoxError> {
        let db = redb::Database::create(dir.join("bench.redb"))?;
        let tx = db.begin_write()?;
        tx.open_table(TABLE)?;
        tx.commit()?;
        let durability = match durability {
            Durability::Sync => redb::Durability::Immediate,
            // redb has no level between the device and nothing.
            Durability::Os | Durability::Memory => redb::Durability::None,
        };
        Ok(Redb { db, durability })
    }

    fn commit(&self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), BoxError> {
        let mut tx = self.db.begin_write()?;
        tx.set_durability(self.durability)?;
        {
            let mut table = tx.open_table(TABLE)?;
            for (key, value) in pairs {
                table.insert(key.as_slice(), value.as_slice())?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn close(self) -> Result<(), BoxError> {
        if !matches!(self.durability, redb::Durability::Immediate) {
            // Commits of `Durability::None` reach the file only with a
            // durable one after them.
            let mut tx = self.db.begin_write()?;
            tx.set_durability(redb::Durability::Immediate)?;
            tx.commit()?;
        }
        drop(self.db);
        Ok(())
    }
}
