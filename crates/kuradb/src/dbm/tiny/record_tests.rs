//! `Records` against a model, through every path of its unsafe code:
//! blocks made, read, rewritten in place, relinked across rehashes and
//! freed, with keys and values whose lengths cross the varint boundaries.
//! Under AddressSanitizer and valgrind (`scripts/sanitize`) a stray read,
//! write or free, or a block never freed, fails these tests.

use std::collections::{HashMap, VecDeque};

use proptest::prelude::*;

use super::*;

/// A check's outcome (`Result` here is kuradb's).
type Checked = std::result::Result<(), TestCaseError>;

/// Value lengths: empty, short, and each side of the one- and two-byte varints.
const VALUE_LENS: [usize; 8] = [0, 1, 7, 127, 128, 300, 16_383, 16_384];

/// Key lengths, likewise; key 0 is the empty key.
const KEY_LENS: [usize; 5] = [1, 5, 127, 128, 200];

fn key(k: u8) -> Vec<u8> {
    if k == 0 {
        return Vec::new();
    }
    let len = KEY_LENS[usize::from(k) % KEY_LENS.len()];
    std::iter::once(k).chain((1..len).map(|i| (i as u8).wrapping_mul(31))).collect()
}

fn value(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed.wrapping_mul(7).wrapping_add(i)) as u8).collect()
}

fn bucket_of(key: &[u8], num_buckets: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(key) % num_buckets as u64) as usize
}

#[derive(Clone, Debug)]
enum Op {
    Set(u8, usize),
    Remove(u8),
    Touch(u8),
    /// Evicts the least recently used record; with a wrong bucket hint if set.
    Evict(bool),
    Rehash(u32),
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..24;
    prop_oneof![
        6 => (k.clone(), 0..VALUE_LENS.len()).prop_map(|(k, l)| Op::Set(k, VALUE_LENS[l])),
        2 => k.clone().prop_map(Op::Remove),
        2 => k.prop_map(Op::Touch),
        2 => any::<bool>().prop_map(Op::Evict),
        1 => (0u32..5).prop_map(Op::Rehash),
        1 => Just(Op::Clear),
    ]
}

/// What the records should hold: the values, and the keys from most to least recently used.
#[derive(Default)]
struct Model {
    values: HashMap<Vec<u8>, Vec<u8>>,
    lru: VecDeque<Vec<u8>>,
}

impl Model {
    fn make_newest(&mut self, key: &[u8]) {
        self.lru.retain(|k| k != key);
        self.lru.push_front(key.to_vec());
    }
}

impl<const L: usize> Records<L> {
    /// The keys along the LRU list, from the head by the older links, and
    /// from the tail by the newer links (reversed back).
    fn lru_keys(&self) -> (Vec<&[u8]>, Vec<&[u8]>) {
        let forward = std::iter::successors(self.head, |b| b.link(2)).map(|b| b.key::<L>()).collect();
        let mut backward: Vec<&[u8]> =
            std::iter::successors(self.tail, |b| b.link(1)).map(|b| b.key::<L>()).collect();
        backward.reverse();
        (forward, backward)
    }
}

fn check<const L: usize>(records: &Records<L>, model: &Model) -> Checked {
    prop_assert_eq!(records.count(), model.values.len());
    let bytes: usize = model
        .values
        .iter()
        .map(|(k, v)| {
            heap_size(
                L * LINK + leb128::len(k.len() as u64) + leb128::len(v.len() as u64) + k.len() + v.len(),
            )
        })
        .sum();
    prop_assert_eq!(records.bytes(), bytes);
    let mut seen = 0;
    for b in 0..records.num_buckets() {
        for (k, v) in records.chain(b) {
            prop_assert_eq!(bucket_of(k, records.num_buckets()), b, "key {:?} in the wrong bucket", k);
            prop_assert_eq!(model.values.get(k).map(Vec::as_slice), Some(v), "key {:?}", k);
            seen += 1;
        }
    }
    prop_assert_eq!(seen, model.values.len());
    if L == 3 {
        let (forward, backward) = records.lru_keys();
        let expected: Vec<&[u8]> = model.lru.iter().map(Vec::as_slice).collect();
        prop_assert_eq!(&forward, &expected);
        prop_assert_eq!(&backward, &expected);
    }
    Ok(())
}

fn run<const L: usize>(num_buckets: usize, ops: &[Op]) -> Checked {
    let mut records = Records::<L>::new(num_buckets);
    let mut model = Model::default();
    for (step, op) in ops.iter().enumerate() {
        let n = records.num_buckets();
        match *op {
            Op::Set(k, len) => {
                let (key, value) = (key(k), value(step, len));
                let replaced = records.entry(bucket_of(&key, n), &key).set(&value).expect("set");
                prop_assert_eq!(replaced, model.values.insert(key.clone(), value).is_some());
                model.make_newest(&key);
            }
            Op::Remove(k) => {
                let key = key(k);
                let removed = records.entry(bucket_of(&key, n), &key).remove();
                prop_assert_eq!(removed, model.values.remove(&key).is_some());
                model.lru.retain(|k| *k != key);
            }
            Op::Touch(k) => {
                let key = key(k);
                records.entry(bucket_of(&key, n), &key).touch();
                if model.values.contains_key(&key) {
                    model.make_newest(&key);
                }
            }
            Op::Evict(wrong_hint) => {
                let hint =
                    |k: &[u8]| if wrong_hint { (bucket_of(k, n) + 1) % (n + 1) } else { bucket_of(k, n) };
                let oldest = records.oldest(hint);
                if L != 3 {
                    prop_assert!(oldest.is_none(), "no LRU list without its links");
                } else {
                    match (oldest, model.lru.pop_back()) {
                        (Some(entry), Some(key)) => {
                            prop_assert_eq!(entry.value(), model.values.get(&key).map(Vec::as_slice));
                            prop_assert!(entry.remove());
                            model.values.remove(&key);
                        }
                        (None, None) => {}
                        (found, expected) => prop_assert!(
                            false,
                            "oldest found a record: {}, the model has one: {}",
                            found.is_some(),
                            expected.is_some()
                        ),
                    }
                }
            }
            Op::Rehash(bits) => records.rehash(1 << bits, |k| bucket_of(k, 1 << bits)),
            Op::Clear => {
                records.clear();
                model = Model::default();
            }
        }
        check(&records, &model)?;
    }
    // The records left are freed by drop: a leak sanitizer sees any that is not.
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn table_records_match_a_model(num_buckets in 1usize..9, ops in prop::collection::vec(op(), 1..120)) {
        run::<1>(num_buckets, &ops)?;
    }

    #[test]
    fn cache_records_match_a_model_with_their_lru_list(
        num_buckets in 1usize..9,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        run::<3>(num_buckets, &ops)?;
    }
}
