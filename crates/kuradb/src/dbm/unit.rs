//! Units of changes: a commit's final changes handed down whole to
//! [`Dbm::apply_changes`], so that a wrapper that sees every change (the
//! update log) can keep them together.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::{Access, Action, Dbm};
use crate::error::Result;

/// One final change of a unit: the value a key ends with, or its removal.
/// Appends and increments are already worked out, so making a change twice
/// is the same as once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalChange<'a> {
    /// The key is set to the value.
    Set(&'a [u8], &'a [u8]),
    /// The key is removed (nothing happens if it is absent).
    Remove(&'a [u8]),
}

impl<'a> FinalChange<'a> {
    /// The key changed.
    pub fn key(&self) -> &'a [u8] {
        match self {
            FinalChange::Set(key, _) | FinalChange::Remove(key) => key,
        }
    }

    /// The value the key ends with; `None` for a removal.
    pub fn value(&self) -> Option<&'a [u8]> {
        match self {
            FinalChange::Set(_, value) => Some(value),
            FinalChange::Remove(_) => None,
        }
    }
}

/// Which part of which unit a call of [`Dbm::apply_changes`] makes. A unit
/// is one part unless a shard set splits it among its shards, which log
/// each their own part: the parts then share an id, and a reader of the
/// log applies them together once it has all `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnitPart {
    /// The id the parts share; 0 for a unit of one part.
    pub id: u64,
    /// This part's place among them, from 0.
    pub index: u32,
    /// How many parts the unit has.
    pub count: u32,
}

impl UnitPart {
    /// A unit of one part: the whole.
    pub const WHOLE: UnitPart = UnitPart { id: 0, index: 0, count: 1 };

    /// Whether the part is the whole unit.
    pub fn is_whole(&self) -> bool {
        self.count <= 1
    }

    /// A new id for the parts of one unit. Ids of one process count up from
    /// the clock's nanoseconds at its first call, so a writer that restarts
    /// does not reuse the ids of its last run.
    pub fn new_id() -> u64 {
        static NEXT: OnceLock<AtomicU64> = OnceLock::new();
        let next = NEXT.get_or_init(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            AtomicU64::new(now.max(1))
        });
        next.fetch_add(1, Ordering::Relaxed)
    }
}

/// What [`Dbm::apply_changes`] does unless a database does it its own way:
/// one [`Dbm::process_multi`] over the keys, so no other operation sees a
/// part of the unit; `seen` is shown each change's index and the value the
/// key held before it.
pub(crate) fn apply_changes_by_process<D: Dbm + ?Sized>(
    db: &D,
    changes: &[FinalChange<'_>],
    seen: &mut dyn FnMut(usize, Option<&[u8]>),
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let keys: Vec<&[u8]> = changes.iter().map(FinalChange::key).collect();
    db.process_multi(&keys, Access::ReadWrite, &mut |i, _, old| {
        seen(i, old);
        match changes[i] {
            FinalChange::Set(_, value) => Action::set(value),
            FinalChange::Remove(_) => Action::Remove,
        }
    })
}
