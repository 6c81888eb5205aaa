//! BabyDbm's parameters: its flat file's opening and its tree's tuning.

use super::BabyOptions;
use crate::dbm::comparator::KeyComparator;
use crate::dbm::params::Taker;
use crate::error::Result;

impl BabyOptions {
    /// `self` with the parameters BabyDbm takes: `truncate`, `max_page_size`,
    /// `max_branches` and `key_comparator`.
    pub(crate) fn take_params(mut self, t: &mut Taker<'_>) -> Result<BabyOptions> {
        (self.truncate, self.lock) = t.memory_open()?;
        if let Some(n) = t.number(&["max_page_size"])? {
            self.max_page_size = n;
        }
        if let Some(n) = t.number(&["max_branches"])? {
            self.max_branches = n;
        }
        if let Some((_, value)) = t.take(&["key_comparator"]) {
            self.comparator = KeyComparator::from_name(value)?;
        }
        Ok(self)
    }
}
