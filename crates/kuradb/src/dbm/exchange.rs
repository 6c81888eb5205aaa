//! The two sides of [`Dbm::compare_exchange_and_get`](super::Dbm::compare_exchange_and_get):
//! what the record must be, and what it becomes.
//!
//! They mirror the reference's conventions, where a null pointer means "no
//! record" and the sentinel `ANY_DATA` means "any value" on the expected
//! side and "leave it" on the desired side, as enums rather than sentinels.

/// What a record must be for a compare-and-exchange to go ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected<'a> {
    /// The record must not exist.
    Absent,
    /// The record must exist, with any value (the reference's `ANY_DATA`).
    Any,
    /// The record must exist with exactly this value.
    Value(&'a [u8]),
}

/// What a compare-and-exchange makes of a record whose expectation held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Desired<'a> {
    /// Remove the record (nothing happens if it is absent).
    Remove,
    /// Leave the record as it is (the reference's `ANY_DATA`): the call
    /// only checks and reads.
    Keep,
    /// Store this value.
    Value(&'a [u8]),
}

impl<'a> Expected<'a> {
    /// Whether `current` (the record's value, or `None`) meets the expectation.
    pub fn holds(self, current: Option<&[u8]>) -> bool {
        match self {
            Expected::Absent => current.is_none(),
            Expected::Any => current.is_some(),
            Expected::Value(v) => current == Some(v),
        }
    }
}

impl<'a> From<Option<&'a [u8]>> for Expected<'a> {
    /// `None` is [`Expected::Absent`], a value [`Expected::Value`].
    fn from(value: Option<&'a [u8]>) -> Expected<'a> {
        value.map_or(Expected::Absent, Expected::Value)
    }
}

impl<'a> From<Option<&'a [u8]>> for Desired<'a> {
    /// `None` is [`Desired::Remove`], a value [`Desired::Value`].
    fn from(value: Option<&'a [u8]>) -> Desired<'a> {
        value.map_or(Desired::Remove, Desired::Value)
    }
}
