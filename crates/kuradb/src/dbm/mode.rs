//! The small enums that say at the call site what a bare `bool` would hide:
//! whether a call may change records, whether a cursor's bound includes its
//! key, what a rekey does. How far a write must travel, [`Durability`], is the
//! file layer's, used here too.
//!
//! Each is a plain `Copy` enum tested where the flag was, so it costs nothing
//! over the `bool` it replaces.

pub use crate::file::Durability;

/// Whether an open or a record processor may change records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reading only: a database opened so refuses changes, and a processor
    /// called so must answer [`super::Action::Keep`] (readers of one record
    /// run together).
    ReadOnly,
    /// Reading and writing.
    ReadWrite,
}

impl Access {
    /// The access a reference-shaped flag names: `true` is read-write.
    #[inline(always)]
    pub(crate) const fn from_writable(writable: bool) -> Access {
        if writable {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        }
    }

    /// Whether changes are allowed.
    #[inline(always)]
    pub const fn is_writable(self) -> bool {
        matches!(self, Access::ReadWrite)
    }
}

/// Whether a cursor's jump to a bound may land on the bound's key itself
/// ([`super::Cursor::jump_lower`], [`super::Cursor::jump_upper`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edge {
    /// A record whose key equals the bound qualifies.
    Inclusive,
    /// Only keys strictly beyond the bound qualify.
    Exclusive,
}

impl Edge {
    /// Whether the bound's key itself qualifies.
    #[inline(always)]
    pub const fn is_inclusive(self) -> bool {
        matches!(self, Edge::Inclusive)
    }
}

/// Whether [`super::Dbm::rekey`] keeps the record under its old key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rekey {
    /// The record leaves its old key.
    Move,
    /// The record stays under its old key too.
    Copy,
}

/// What a store does when the key it stores under already has a record and
/// the call cannot simply replace it ([`super::Dbm::rekey`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OnDuplicate {
    /// The existing record is replaced.
    Replace,
    /// Nothing changes and the call fails with
    /// [`crate::ErrorKind::Duplication`].
    Fail,
}
