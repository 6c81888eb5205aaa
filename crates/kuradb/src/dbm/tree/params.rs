//! The tree database's parameters: its node store's (a hash database's)
//! and its own tuning.

use super::{KeyComparator, TreeOptions};
use crate::dbm::params::{bad_value, Taker};
use crate::error::{Error, ErrorKind, Result};
use crate::file::parse_percent;

impl TreeOptions {
    /// `self` with the parameters a tree takes: every parameter of its node
    /// store, `max_page_size`, `max_branches`, `max_cached_pages`,
    /// `cached_pages_protected_percent`, `key_comparator` and the
    /// reference's `page_update_mode`, whose `PAGE_UPDATE_NONE` is what a
    /// tree does.
    pub(crate) fn take_params(mut self, t: &mut Taker<'_>) -> Result<TreeOptions> {
        if let Some((name, _)) = t.take(&["auto_grow"]) {
            // Taken here, or the node store's parameters would take it and
            // do nothing with it.
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{name} is a hash database's parameter: a tree's node store holds a few records a \
                     page and keeps the bucket count it was created with"
                ),
            ));
        }
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
        if let Some((name, value)) = t.take(&["page_update_mode"]) {
            page_update_mode(name, value)?;
        }
        Ok(self)
    }
}

/// The reference's `page_update_mode`: `PAGE_UPDATE_NONE` (`none`), a
/// changed node written when it leaves the cache and at synchronization, is
/// what kuradb's tree does. `PAGE_UPDATE_WRITE`, every changed node written
/// at each update, is refused: a crashed tree is restored as of its last
/// hard synchronization, whole (a mix of node versions is not a tree), so
/// nodes written in between would never be read back, and no other process
/// reads the file while its writer holds it.
fn page_update_mode(name: &str, value: &str) -> Result<()> {
    match value.trim().to_ascii_lowercase().trim_start_matches("page_update_") {
        "none" | "default" => Ok(()),
        "write" => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{name}={value} is refused: a tree not closed cleanly is restored as of its last hard \
                 synchronization, so nodes written at each update would never be read back; call \
                 synchronize (hard) after the updates that must survive a crash"
            ),
        )),
        _ => Err(bad_value(name, value, "PAGE_UPDATE_NONE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_update_none_is_the_trees_way_and_write_is_refused() {
        assert!(page_update_mode("page_update_mode", "PAGE_UPDATE_NONE").is_ok());
        assert!(page_update_mode("page_update_mode", "none").is_ok());
        let write = page_update_mode("page_update_mode", "PAGE_UPDATE_WRITE").unwrap_err();
        assert_eq!(write.kind(), ErrorKind::InvalidArgument);
        assert!(write.message().contains("last hard synchronization"), "{write}");
        assert!(page_update_mode("page_update_mode", "sometimes").is_err());
    }
}
