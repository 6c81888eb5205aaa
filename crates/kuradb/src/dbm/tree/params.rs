//! The tree database's parameters: its node store's (a hash database's)
//! and its own tuning.

use super::{KeyComparator, TreeOptions};
use crate::dbm::params::Taker;
use crate::error::Result;
use crate::file::parse_percent;

impl TreeOptions {
    /// `self` with the parameters a tree takes: every parameter of its node
    /// store, `max_page_size`, `max_branches`, `max_cached_pages`,
    /// `cached_pages_protected_percent` and `key_comparator`.
    pub(crate) fn take_params(mut self, t: &mut Taker<'_>) -> Result<TreeOptions> {
        self.hash = self.hash.take_params(t)?;
        if let Some(n) = t.number(&["max_page_size"])? {
            self.max_page_size = n;
        }
        if let Some(n) = t.number(&["max_branches"])? {
            self.max_branches = n;
        }
        if let Some(n) = t.number(&["max_cached_pages"])? {
            self.max_cached_pages = n;
        }
        if let Some((name, value)) = t.take(&["cached_pages_protected_percent"]) {
            self.cached_pages_protected_percent = parse_percent(name, value)?;
        }
        if let Some((_, value)) = t.take(&["key_comparator"]) {
            self.comparator = Some(KeyComparator::from_name(value)?);
        }
        Ok(self)
    }
}
