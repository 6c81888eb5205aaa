//! Watches: keys whose changes a later commit may refuse to follow, for
//! optimistic check-and-set across calls (a server's `WATCH` … `EXEC`).

use std::sync::Arc;

use super::TransactionalDbm;
use crate::dbm::Dbm;
use crate::error::Result;

/// Keys watched from one commit on, from [`TransactionalDbm::watch`].
///
/// It holds a read view at the newest commit (through an `Arc` of the
/// database rather than a borrow, so it may be kept across calls), which
/// keeps the previous values of the keys changed since: [`Watch::changed`]
/// tells whether any commit or plain write since changed a watched key,
/// and [`super::Transaction::commit_unless_changed`] makes that check and
/// the commit one step. A write that leaves a record's value as it was is
/// no change. While it lives, plain writes take the tracked path, as with
/// any open view; dropping it releases what it kept. A watch whose view
/// was expired by `max_version_bytes` counts as changed.
pub struct Watch<D: Dbm + 'static> {
    db: Arc<TransactionalDbm<D>>,
    at: u64,
    keys: Vec<Vec<u8>>,
}

impl<D: Dbm + 'static> TransactionalDbm<D> {
    /// Watches `keys` from the newest commit on: see [`Watch`].
    pub fn watch(self: &Arc<Self>, keys: &[&[u8]]) -> Watch<D> {
        let at = self.open_view();
        Watch { db: Arc::clone(self), at, keys: keys.iter().map(|k| k.to_vec()).collect() }
    }
}

impl<D: Dbm + 'static> Watch<D> {
    /// The keys watched.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// The database watched.
    pub fn database(&self) -> &Arc<TransactionalDbm<D>> {
        &self.db
    }

    /// Whether a commit or a plain write since the watch began changed a
    /// watched key (or the view expired, so that it cannot tell). Without
    /// the commit lock: a change may come right after the answer.
    pub fn changed(&self) -> Result<bool> {
        Ok(self.changed_in(&self.db.versions.lock()))
    }

    /// The check, on the versions (under the commit lock when committing).
    pub(super) fn changed_in(&self, versions: &super::versions::Versions) -> bool {
        versions.is_expired(self.at) || self.keys.iter().any(|key| versions.changed_since(key, self.at))
    }
}

impl<D: Dbm + 'static> Drop for Watch<D> {
    fn drop(&mut self) {
        self.db.close_view(self.at);
    }
}
