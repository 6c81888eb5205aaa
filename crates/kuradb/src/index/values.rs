//! The values of one key of a [`StdIndex`](super::StdIndex): one value held
//! in place, which is what most keys of a secondary index have, or an
//! ordered set once a second value comes.

use std::collections::BTreeSet;
use std::ops::Bound::{Excluded, Included, Unbounded};

/// The values of one key, never empty while it is in the index.
#[derive(Debug)]
pub(super) enum Values<V> {
    One(V),
    // Boxed so that a key with one value costs one word more than the
    // value, not a set's three: most keys never have a second value.
    #[expect(clippy::box_collection, reason = "keeps Values two words for a one-word V")]
    Many(Box<BTreeSet<V>>),
}

impl<V: Ord + Clone> Values<V> {
    /// Adds `value`; answers whether it was new.
    pub(super) fn insert(&mut self, value: &V) -> bool {
        match self {
            Values::One(only) if only == value => false,
            Values::One(only) => {
                let set = BTreeSet::from([only.clone(), value.clone()]);
                *self = Values::Many(Box::new(set));
                true
            }
            Values::Many(set) => {
                if set.contains(value) {
                    false
                } else {
                    set.insert(value.clone())
                }
            }
        }
    }

    /// Removes `value`; answers whether it was there. The caller drops the
    /// key when [`Values::is_empty`] says so.
    pub(super) fn remove(&mut self, value: &V) -> bool {
        match self {
            Values::One(_) => false,
            Values::Many(set) => {
                let removed = set.remove(value);
                if set.len() == 1 {
                    let last = set.pop_first().expect("one value left");
                    *self = Values::One(last);
                }
                removed
            }
        }
    }

    /// Whether removing `value` would leave the key without values: the
    /// caller then removes the key instead.
    pub(super) fn is_only(&self, value: &V) -> bool {
        matches!(self, Values::One(only) if only == value)
    }

    pub(super) fn contains(&self, value: &V) -> bool {
        match self {
            Values::One(only) => only == value,
            Values::Many(set) => set.contains(value),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Values::One(_) => 1,
            Values::Many(set) => set.len(),
        }
    }

    pub(super) fn first(&self) -> &V {
        match self {
            Values::One(only) => only,
            Values::Many(set) => set.first().expect("a key's values are never empty"),
        }
    }

    pub(super) fn last(&self) -> &V {
        match self {
            Values::One(only) => only,
            Values::Many(set) => set.last().expect("a key's values are never empty"),
        }
    }

    /// The least value at or after `value` (`inclusive`) or strictly after it.
    pub(super) fn after(&self, value: &V, inclusive: bool) -> Option<&V> {
        match self {
            Values::One(only) if only > value || (inclusive && only == value) => Some(only),
            Values::One(_) => None,
            Values::Many(set) => {
                let from = if inclusive { Included(value) } else { Excluded(value) };
                set.range((from, Unbounded)).next()
            }
        }
    }

    /// The greatest value strictly before `value`.
    pub(super) fn before(&self, value: &V) -> Option<&V> {
        match self {
            Values::One(only) if only < value => Some(only),
            Values::One(_) => None,
            Values::Many(set) => set.range((Unbounded, Excluded(value))).next_back(),
        }
    }

    /// The values in order.
    pub(super) fn iter(&self) -> Box<dyn Iterator<Item = &V> + '_> {
        match self {
            Values::One(only) => Box::new(std::iter::once(only)),
            Values::Many(set) => Box::new(set.iter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_grows_into_a_set_and_shrinks_back() {
        let mut values = Values::One(5);
        assert!(!values.insert(&5) && values.insert(&3) && values.insert(&9));
        assert!(matches!(values, Values::Many(_)) && values.len() == 3);
        assert_eq!((values.first(), values.last()), (&3, &9));
        assert_eq!(
            (values.after(&3, false), values.after(&3, true), values.after(&9, false)),
            (Some(&5), Some(&3), None)
        );
        assert_eq!((values.before(&3), values.before(&6)), (None, Some(&5)));
        assert!(values.remove(&3) && !values.remove(&4) && values.remove(&9));
        assert!(matches!(values, Values::One(5)) && values.is_only(&5) && !values.is_only(&6));
        assert_eq!(values.iter().collect::<Vec<_>>(), [&5]);
    }

    #[test]
    fn a_key_with_one_number_costs_two_words() {
        assert_eq!(std::mem::size_of::<Values<i64>>(), 16);
    }
}
