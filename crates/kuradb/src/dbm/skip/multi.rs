//! [`Dbm::process_multi`](crate::dbm::Dbm::process_multi) on a skip
//! database: the keys are looked up in lockstep (see `lockstep.rs`), up to
//! [`IN_FLIGHT`] at a time, and shown to the processor in the caller's
//! order, each as a single [`Dbm::process`](crate::dbm::Dbm::process) would
//! show it.

use std::cell::RefCell;
use std::collections::HashMap;

use super::format::Window;
use super::lockstep::Lookup;
use super::value::decode_value;
use super::SkipDbm;
use crate::dbm::{Action, MultiProcessor};
use crate::error::Result;

/// Lookups in flight at most: the keys of a longer batch go in groups of
/// this many, each group's reads together (a batch of io_uring reads holds
/// as many), and a window apiece stays bounded in memory.
pub(super) const IN_FLIGHT: usize = 64;

/// Bytes a window of the thread's pool keeps between batches; one that a
/// large value grew gives the rest back.
const KEPT_WINDOW: usize = 1 << 16;

thread_local! {
    /// The windows of a thread's batches, kept for its next (each is reset
    /// first: it may hold bytes of another file).
    static WINDOWS: RefCell<Vec<Window>> = const { RefCell::new(Vec::new()) };
}

impl SkipDbm {
    /// Shows `f` every key of `keys` in order with the value of its first
    /// record as of the last synchronization, or the value an earlier
    /// answer of the same call gave it, and carries out the answers; under
    /// the lock of the pending changes if `writable`. The keys' lookups see
    /// one snapshot. A lookup that fails stops the call there, with its
    /// error, as a loop of single lookups would: the keys before it have
    /// been shown and answered.
    pub(super) fn process_batch<'a>(
        &self,
        keys: &[&[u8]],
        writable: bool,
        f: &mut MultiProcessor<'a>,
    ) -> Result<()> {
        if writable && !self.writable {
            return Err(self.read_only());
        }
        if keys.is_empty() {
            // Nothing to look up: not even a closed database refuses.
            return Ok(());
        }
        // Later occurrences of a key see the earlier answers, though the
        // file shows none of them until the next synchronization.
        let mut answered: HashMap<&[u8], Option<Vec<u8>>> = HashMap::new();
        let mut pending = writable.then(|| self.pending.lock());
        let snapshot = self.snapshot()?;
        with_windows(|windows| {
            let mut lookups: Vec<Lookup<'_>> = Vec::with_capacity(keys.len().min(IN_FLIGHT));
            let mut first: HashMap<&[u8], usize> = HashMap::new();
            let mut slots: Vec<Option<usize>> = Vec::with_capacity(keys.len().min(IN_FLIGHT));
            for (group, chunk) in keys.chunks(IN_FLIGHT).enumerate() {
                lookups.clear();
                first.clear();
                slots.clear();
                for &key in chunk {
                    // A key answered already needs no lookup; one repeated
                    // within the group needs one.
                    let slot = (!answered.contains_key(key)).then(|| {
                        *first.entry(key).or_insert_with(|| {
                            lookups.push(Lookup::new(&snapshot, key));
                            lookups.len() - 1
                        })
                    });
                    slots.push(slot);
                }
                if windows.len() < lookups.len() {
                    windows.resize_with(lookups.len(), || Window::new(256));
                }
                let windows = &mut windows[..lookups.len()];
                snapshot.run(&mut lookups, windows);
                for (j, (&key, slot)) in chunk.iter().zip(&slots).enumerate() {
                    let i = group * IN_FLIGHT + j;
                    let action = match (answered.get(key), slot) {
                        (Some(value), _) => f(i, key, value.as_deref()),
                        (None, Some(slot)) => match lookups[*slot].found()? {
                            Some(record) => f(i, key, Some(decode_value(windows[*slot].value(&record)))),
                            None => f(i, key, None),
                        },
                        (None, None) => unreachable!("a key without a lookup was answered before its group"),
                    };
                    if action != Action::Keep {
                        let value = match &action {
                            Action::Set(v) => Some(v.to_vec()),
                            _ => None,
                        };
                        self.answer(pending.as_deref_mut(), key, action)?;
                        answered.insert(key, value);
                    }
                }
            }
            Ok(())
        })
    }
}

/// Runs `f` with the thread's pool of windows, or with a pool of its own if
/// the thread's is in use (a processor that runs a batch of another skip
/// database from inside one).
fn with_windows<R>(f: impl FnOnce(&mut Vec<Window>) -> R) -> R {
    WINDOWS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut windows) => {
            let result = f(&mut windows);
            for window in windows.iter_mut() {
                window.shrink(KEPT_WINDOW);
            }
            result
        }
        Err(_) => f(&mut Vec::new()),
    })
}
