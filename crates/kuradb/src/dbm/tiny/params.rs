//! TinyDbm's parameters: its flat file's opening and its table's size.

use super::TinyOptions;
use crate::dbm::params::Taker;
use crate::error::Result;

impl TinyOptions {
    /// `self` with the parameters TinyDbm takes: `truncate` and
    /// `num_buckets` (or `buckets`).
    pub(crate) fn take_params(mut self, t: &mut Taker<'_>) -> Result<TinyOptions> {
        (self.truncate, self.lock) = t.memory_open()?;
        if let Some(n) = t.number(&["num_buckets", "buckets"])? {
            self.num_buckets = n;
        }
        Ok(self)
    }
}
