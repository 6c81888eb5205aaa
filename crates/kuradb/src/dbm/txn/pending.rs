//! The values of write-ahead commits shown to readers but not yet applied
//! to the database, which reads answer from until the applier has them in
//! the file.
//!
//! A commit's changes are held once, shared with the applier's queue; the
//! index here holds, for each waiting value, only the commit's sequence
//! number and the change's place in it, found by a hash of the key. So a
//! commit adds no copy of its keys or values and no allocation a key.

use std::collections::hash_map::{Entry, HashMap};
use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, OnceLock};

use super::log::Change;
use crate::caching::IdHasher;

/// A hash of `key` for the in-memory indexes of commits. Seeded once a
/// process at random, so keys chosen to collide cannot make a chain long.
pub(super) fn key_hash(key: &[u8]) -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(0u64));
    xxhash_rust::xxh3::xxh3_64_with_seed(key, seed)
}

/// A waiting value: the commit's sequence number and the change's place
/// among its changes.
type Place = (u64, usize);

/// The places under one hash, in sequence order: one, as almost every
/// hash has, without an allocation.
enum Places {
    One(Place),
    Many(Vec<Place>),
}

impl Places {
    fn as_slice(&self) -> &[Place] {
        match self {
            Places::One(place) => std::slice::from_ref(place),
            Places::Many(places) => places,
        }
    }

    fn push(&mut self, place: Place) {
        match self {
            Places::One(first) => *self = Places::Many(vec![*first, place]),
            Places::Many(places) => places.push(place),
        }
    }
}

/// The commits logged and shown but not yet applied, and where each of
/// their keys' values is.
pub(super) struct Pending {
    /// The commits, in sequence order.
    commits: VecDeque<(u64, Arc<Vec<Change>>)>,
    places: HashMap<u64, Places, IdHasher>,
    /// [`key_hash`], but for tests that make every key collide.
    hash: fn(&[u8]) -> u64,
}

impl Default for Pending {
    fn default() -> Pending {
        Pending { commits: VecDeque::new(), places: HashMap::default(), hash: key_hash }
    }
}

impl Pending {
    /// Whether no value waits.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.commits.is_empty() && self.places.is_empty()
    }

    /// Whether a value of `key` waits.
    #[cfg(test)]
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.newest(key).is_some()
    }

    fn change(&self, (seq, index): Place) -> &Change {
        let at = self.commits.binary_search_by_key(&seq, |(s, _)| *s).expect("a place's commit waits");
        &self.commits[at].1[index]
    }

    /// The places of `key`'s waiting values, newest first.
    fn places_of<'a>(&'a self, key: &'a [u8]) -> impl Iterator<Item = (u64, &'a Change)> + 'a {
        let places = self.places.get(&(self.hash)(key)).map_or(&[][..], Places::as_slice);
        places.iter().rev().map(|&place| (place.0, self.change(place))).filter(move |(_, c)| c.key() == key)
    }

    /// Adds commit `seq`'s changes, commits coming in sequence order (a
    /// commit that changes a key twice keeps its last value).
    pub fn insert(&mut self, seq: u64, changes: &Arc<Vec<Change>>) {
        debug_assert!(self.commits.back().is_none_or(|(last, _)| *last < seq));
        self.commits.push_back((seq, Arc::clone(changes)));
        self.places.reserve(changes.len());
        for (index, change) in changes.iter().enumerate() {
            let place = (seq, index);
            match self.places.entry((self.hash)(change.key())) {
                Entry::Vacant(vacant) => {
                    vacant.insert(Places::One(place));
                }
                Entry::Occupied(mut occupied) => {
                    let places = occupied.get_mut();
                    let earlier = match places {
                        Places::One(one) => std::slice::from_mut(one),
                        Places::Many(many) => many.as_mut_slice(),
                    };
                    let twice = earlier
                        .iter_mut()
                        .rev()
                        .take_while(|(s, _)| *s == seq)
                        .find(|(_, i)| changes[*i].key() == change.key());
                    match twice {
                        Some(same) => same.1 = index,
                        None => places.push(place),
                    }
                }
            }
        }
    }

    /// The newest logged value of `key` not yet applied, if any: what the
    /// next commit's changes are worked out from.
    pub fn newest(&self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.places_of(key).next().map(|(_, change)| change.value().map(<[u8]>::to_vec))
    }

    /// The value of `key` a reader at commit `at` sees among the commits
    /// not yet applied, if any of those up to `at` changed it.
    pub fn at(&self, key: &[u8], at: u64) -> Option<Option<Vec<u8>>> {
        self.places_of(key).find(|(seq, _)| *seq <= at).map(|(_, change)| change.value().map(<[u8]>::to_vec))
    }

    /// Drops commit `seq`'s values (applied, or not committed after all).
    pub fn remove(&mut self, seq: u64) {
        let Ok(at) = self.commits.binary_search_by_key(&seq, |(s, _)| *s) else {
            return;
        };
        let Some((_, changes)) = self.commits.remove(at) else { return };
        for change in changes.iter() {
            let Entry::Occupied(mut occupied) = self.places.entry((self.hash)(change.key())) else {
                continue;
            };
            let left = match occupied.get_mut() {
                Places::One(place) => usize::from(place.0 != seq),
                Places::Many(places) => {
                    places.retain(|place| place.0 != seq);
                    places.len()
                }
            };
            match left {
                0 => drop(occupied.remove()),
                1 => {
                    let one = occupied.get().as_slice()[0];
                    *occupied.get_mut() = Places::One(one);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(changes: &[(&[u8], Option<&[u8]>)]) -> Arc<Vec<Change>> {
        Arc::new(
            changes
                .iter()
                .map(|(k, v)| match v {
                    Some(v) => Change::Set(k.to_vec(), v.to_vec()),
                    None => Change::Remove(k.to_vec()),
                })
                .collect(),
        )
    }

    /// The values of commits not yet applied: a key changed by several
    /// keeps each, a reader sees the newest up to its commit, and they
    /// leave in any order (apply order, or a failed commit's values after
    /// later ones); keys whose hashes collide keep apart.
    #[test]
    fn pending_values_keep_every_unapplied_commit_of_a_key() {
        for colliding in [false, true] {
            let mut pending = Pending::default();
            if colliding {
                pending.hash = |_| 7;
            }
            pending.insert(3, &commit(&[(b"k", Some(b"three"))]));
            pending.insert(5, &commit(&[(b"k", None), (b"j", Some(b"first")), (b"j", Some(b"j5"))]));
            pending.insert(7, &commit(&[(b"k", Some(b"seven"))]));
            assert_eq!(pending.newest(b"k"), Some(Some(b"seven".to_vec())));
            assert_eq!(pending.newest(b"x"), None);
            assert_eq!(pending.at(b"k", 2), None);
            assert_eq!(pending.at(b"k", 4), Some(Some(b"three".to_vec())));
            assert_eq!(pending.at(b"k", 6), Some(None));
            assert_eq!(pending.at(b"k", 9), Some(Some(b"seven".to_vec())));
            assert_eq!(pending.at(b"j", 4), None);
            assert_eq!(pending.at(b"j", 5), Some(Some(b"j5".to_vec())));
            pending.remove(3);
            assert_eq!(pending.at(b"k", 4), None);
            assert_eq!(pending.at(b"k", 6), Some(None));
            // The newest leaves first (a failed commit): the one before it
            // is the newest again.
            pending.remove(7);
            assert_eq!(pending.newest(b"k"), Some(None));
            assert_eq!(pending.at(b"k", 9), Some(None));
            pending.remove(4);
            assert_eq!(pending.newest(b"j"), Some(Some(b"j5".to_vec())));
            pending.remove(5);
            assert!(!pending.contains_key(b"k"));
            assert!(pending.is_empty(), "colliding: {colliding}");
        }
    }
}
