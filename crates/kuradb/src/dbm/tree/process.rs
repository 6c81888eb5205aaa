//! Carrying out processors' answers on the records.

use std::sync::atomic::Ordering;

use super::meta::Meta;
use super::state::Tree;
use super::MAX_RECORD;
use crate::dbm::tree_node::{record_size, Leaf, Node};
use crate::dbm::{Action, Dbm, EachProcessor, Processor};
use crate::error::{Error, ErrorKind, Result};

fn asked_to_change() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a read-only process asked to change a record")
}

impl Tree {
    /// Carries out `f`'s answer for `key` in its leaf; answers whether the leaf
    /// needs rebalancing.
    pub(super) fn apply(&self, key: &[u8], writable: bool, f: &mut Processor<'_>) -> Result<bool> {
        let (_, cell) = self.descend(key, None)?;
        if !writable {
            let slot = cell.slot.read();
            let Node::Leaf(leaf) = &slot.node else {
                return Err(self.broken("a leaf is an inner node".into()));
            };
            let found = leaf.find_in(key, self.cmp);
            return match f(found.ok().map(|i| leaf.record(i).1)) {
                Action::Keep => Ok(false),
                _ => Err(asked_to_change()),
            };
        }
        let mut guard = cell.slot.write();
        let slot = &mut *guard;
        let Node::Leaf(leaf) = &mut slot.node else {
            return Err(self.broken("a leaf is an inner node".into()));
        };
        let found = leaf.find_in(key, self.cmp);
        let action = f(found.ok().map(|i| leaf.record(i).1));
        if let Action::Set(value) = &action {
            if record_size(key, value) > MAX_RECORD {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "a record of {} bytes is too large for a tree database (at most {MAX_RECORD})",
                        record_size(key, value)
                    ),
                ));
            }
        }
        let changed = match (action, found) {
            (Action::Keep, _) | (Action::Remove, Err(_)) => false,
            (Action::Remove, Ok(i)) => {
                leaf.remove(i);
                self.count.fetch_sub(1, Ordering::AcqRel);
                true
            }
            (Action::Set(value), Ok(i)) => {
                leaf.set_value(i, &value);
                true
            }
            (Action::Set(value), Err(i)) => {
                leaf.insert(i, key, &value);
                self.count.fetch_add(1, Ordering::AcqRel);
                true
            }
        };
        let unbalanced = changed && self.unbalanced(leaf);
        if changed {
            slot.changed();
        }
        Ok(unbalanced)
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
            let changed = leaf.rewrite(|key, value| {
                let action = f(key, value);
                if matches!(action, Action::Remove) {
                    self.count.fetch_sub(1, Ordering::AcqRel);
                }
                action
            });
            if changed {
                slot.changed();
            }
            Ok(())
        })
    }

    /// Removes every record: the store is cleared and the tree starts again
    /// as one empty leaf, made the synchronized state at once (the old nodes
    /// are gone from the file, so a crash must not find neither).
    pub(super) fn clear(&self) -> Result<()> {
        self.store.clear()?;
        self.cache.forget_all();
        *self.meta.lock() = Meta::empty();
        self.count.store(0, Ordering::Release);
        self.insert(1, Node::Leaf(Leaf::default()), true)?;
        self.flush()?;
        self.store.synchronize(true)
    }
}
