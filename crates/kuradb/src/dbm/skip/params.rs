//! The skip database's parameters: its file, opening and tuning, and the
//! reducer a rebuild uses.

use super::{Reducer, SkipOptions};
use crate::dbm::params::Taker;
use crate::error::Result;

impl SkipOptions {
    /// `self` with the parameters a skip database takes: the file and its
    /// opening, `offset_width`, `step_unit`, `max_level`,
    /// `max_cached_records`, `sort_mem_size`, `insert_in_order` and `reducer`.
    pub(crate) fn take_params(mut self, t: &mut Taker<'_>) -> Result<SkipOptions> {
        (self.file, self.open) = t.file_and_open()?;
        if let Some(n) = t.number(&["offset_width"])? {
            self.offset_width = n;
        }
        if let Some(n) = t.number(&["step_unit"])? {
            self.step_unit = n;
        }
        if let Some(n) = t.number(&["max_level"])? {
            self.max_level = n;
        }
        if let Some(n) = t.number(&["max_cached_records"])? {
            self.max_cached_records = n;
        }
        if let Some(n) = t.number(&["sort_mem_size"])? {
            self.sort_mem_size = n;
        }
        if let Some(b) = t.flag(&["insert_in_order"])? {
            self.insert_in_order = b;
        }
        if let Some(reducer) = take_reducer(t)? {
            self.reducer = reducer;
        }
        Ok(self)
    }
}

/// The `reducer` parameter, if given.
pub(crate) fn take_reducer(t: &mut Taker<'_>) -> Result<Option<Reducer>> {
    t.take(&["reducer"]).map(|(_, value)| Reducer::from_name(value)).transpose()
}
