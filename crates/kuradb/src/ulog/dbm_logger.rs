//! The logger into another database: a live mirror.

use std::sync::Arc;

use super::UpdateLogger;
use crate::dbm::{Dbm, Durability, FinalChange, UnitPart};
use crate::error::Result;

/// Makes each change to another database too, so that it stays equal to
/// the logged one (if it started equal): a live mirror, on another file or
/// device, or in memory.
///
/// ```
/// use std::sync::Arc;
/// use kuradb::dbm::Dbm;
/// use kuradb::ulog::{DbmUpdateLogger, LoggedDbm};
/// # fn main() -> kuradb::Result<()> {
/// let mirror: Arc<dyn Dbm> = Arc::new(kuradb::StdTreeDbm::new(&Default::default()));
/// let db = LoggedDbm::new(kuradb::TinyDbm::new(&Default::default()), Arc::new(DbmUpdateLogger::new(mirror.clone())));
/// db.set(b"a", b"1")?;
/// db.append(b"a", b"2", b",")?;
/// assert_eq!(mirror.get(b"a")?.as_deref(), Some(&b"1,2"[..]));
/// # Ok(())
/// # }
/// ```
pub struct DbmUpdateLogger {
    dbm: Arc<dyn Dbm>,
}

impl DbmUpdateLogger {
    /// A logger that makes every change to `dbm` too.
    pub fn new(dbm: Arc<dyn Dbm>) -> DbmUpdateLogger {
        DbmUpdateLogger { dbm }
    }
}

impl UpdateLogger for DbmUpdateLogger {
    fn write_set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.dbm.set(key, value)
    }
    fn write_remove(&self, key: &[u8]) -> Result<()> {
        self.dbm.remove(key).map(|_| ())
    }
    fn write_clear(&self) -> Result<()> {
        self.dbm.clear()
    }
    /// Made to the mirror as one unit too. A shard's part of a unit
    /// spanning shards is a unit of its own there.
    fn write_batch(&self, changes: &[FinalChange<'_>], _part: UnitPart) -> Result<()> {
        self.dbm.apply_changes(changes, UnitPart::WHOLE, &mut |_, _| {})
    }
    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.dbm.synchronize(durability)
    }
}
