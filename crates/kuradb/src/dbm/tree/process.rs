//! Carrying out processors' answers on the records, and [`Tree::commit`],
//! which every change to the records passes on its way in.

use std::sync::atomic::Ordering;

use super::cache::Cell;
use super::meta::Meta;
use super::state::Tree;
use super::MAX_RECORD;
use crate::dbm::tree_node::{record_size, Leaf, Node};
use crate::dbm::{Action, Dbm, Durability, EachProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

/// A change to the records as [`Tree::commit`] sees it, before it takes effect.
pub(super) enum Change<'c, 'a> {
    /// Record `key`, whose value is `old` (`None`: there is no such record),
    /// is to be as `action` says. A [`Action::Keep`], or a removal of a
    /// record that is not there, changes nothing.
    Record { key: &'c [u8], old: Option<&'c [u8]>, action: &'c Action<'a> },
    /// Every record goes.
    Clear,
}

fn asked_to_change() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a read-only process asked to change a record")
}

impl Tree {
    /// Every change to the records passes here, under the locks that make it
    /// atomic, before it takes effect: an update log, an index or a
    /// statistics counter attaches here. It keeps the record count. An error
    /// refuses the change, which the caller then leaves undone; otherwise
    /// the caller carries out exactly the change it passed.
    #[inline]
    pub(super) fn commit(&self, change: Change<'_, '_>) -> Result<()> {
        match change {
            Change::Record { key, old, action } => match (action, old) {
                (Action::Keep, _) | (Action::Remove, None) => {}
                (Action::Remove, Some(_)) => {
                    self.count.fetch_sub(1, Ordering::AcqRel);
                }
                (Action::Set(value), old) => {
                    let size = record_size(key, value);
                    if size > MAX_RECORD {
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!(
                                "a record of {size} bytes is too large for a tree database (at most {MAX_RECORD})"
                            ),
                        ));
                    }
                    if old.is_none() {
                        self.count.fetch_add(1, Ordering::AcqRel);
                    }
                }
            },
            Change::Clear => self.count.store(0, Ordering::Release),
        }
        Ok(())
    }

    /// Carries out `f`'s answer for `key` in its leaf; answers whether the leaf
    /// needs rebalancing.
    pub(super) fn apply(&self, key: &[u8], writable: bool, f: &mut Processor<'_>) -> Result<bool> {
        let (_, cell) = self.descend(key, None)?;
        self.apply_in(&cell, key, writable, f)
    }

    /// [`Tree::apply`] in `cell`, the leaf where `key` belongs.
    pub(super) fn apply_in(
        &self,
        cell: &Cell,
        key: &[u8],
        writable: bool,
        f: &mut Processor<'_>,
    ) -> Result<bool> {
        if !writable {
            return self.answer_read(&cell.read().node, key, f).map(|()| false);
        }
        let mut guard = cell.write();
        let slot = &mut *guard;
        let Node::Leaf(leaf) = &mut slot.node else {
            return Err(self.broken("a leaf is an inner node".into()));
        };
        let found = leaf.find_in(key, self.cmp);
        let old = found.ok().map(|i| leaf.record(i).1);
        let action = f(old);
        self.commit(Change::Record { key, old, action: &action })?;
        match (action, found) {
            (Action::Keep, _) | (Action::Remove, Err(_)) => return Ok(false),
            (Action::Remove, Ok(i)) => leaf.remove(i),
            // A cached leaf's slack is memory the cache holds for as long as
            // the leaf stays: grow gently rather than doubling.
            (Action::Set(value), Ok(i)) => {
                leaf.reserve_gently(value.len().saturating_sub(leaf.record(i).1.len()) + 8);
                leaf.set_value(i, &value)
            }
            (Action::Set(value), Err(i)) => {
                leaf.reserve_gently(record_size(key, &value));
                leaf.insert(i, key, &value)
            }
        }
        let unbalanced = self.unbalanced(leaf);
        guard.changed();
        Ok(unbalanced)
    }

    /// `f`'s answer for `key` in `node`, the leaf where it belongs, where
    /// the answer may not change it.
    pub(super) fn answer_read(&self, node: &Node, key: &[u8], f: &mut Processor<'_>) -> Result<()> {
        let Node::Leaf(leaf) = node else {
            return Err(self.broken("a leaf is an inner node".into()));
        };
        let found = leaf.find_in(key, self.cmp);
        match f(found.ok().map(|i| leaf.record(i).1)) {
            Action::Keep => Ok(()),
            _ => Err(asked_to_change()),
        }
    }

    /// Carries out `f`'s answer for every record, first to last. The caller
    /// holds the tree exclusively; the leaves are left as large or small as
    /// the answers make them.
    pub(super) fn apply_each(&self, writable: bool, f: &mut EachProcessor<'_>) -> Result<()> {
        self.each_leaf(|slot| {
            let Node::Leaf(leaf) = &mut slot.node else { return Ok(()) };
            if !writable {
                for (key, value) in leaf.records() {
                    if f(key, value) != Action::Keep {
                        return Err(asked_to_change());
                    }
                }
                return Ok(());
            }
            let mut refused = None;
            let changed = leaf.rewrite(|key, value| {
                if refused.is_some() {
                    return Action::Keep;
                }
                let action = f(key, value);
                match self.commit(Change::Record { key, old: Some(value), action: &action }) {
                    Ok(()) => action,
                    Err(e) => {
                        refused = Some(e);
                        Action::Keep
                    }
                }
            });
            if changed {
                slot.changed();
            }
            refused.map_or(Ok(()), Err)
        })
    }

    /// Removes every record: the store is cleared and the tree starts again
    /// as one empty leaf, made the synchronized state at once (the old nodes
    /// are gone from the file, so a crash must not find neither).
    pub(super) fn clear(&self) -> Result<()> {
        self.commit(Change::Clear)?;
        self.store.clear()?;
        self.cache.forget_all();
        *self.meta.lock() = Meta::empty();
        self.insert(1, Node::Leaf(Leaf::default()), true);
        self.flush()?;
        self.store.synchronize(Durability::Hard)
    }
}
