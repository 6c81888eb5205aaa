//! What `kura perf sequence --validate` expects of every key: replaying each
//! thread's keys and value lengths tells which keys the set phase stores and the
//! length of the value each ends with.
//!
//! A key set by one thread holds that thread's last value. A key set by several
//! threads (random keys) holds the last value of whichever thread came last, which
//! only the timing decides: if their last lengths differ, any length is accepted
//! for it, the content still being checked. Without `--random_value` every length
//! is the same, so every expectation is exact.

use super::keys::{KeyPicker, LengthPicker, ValuePattern};

/// The length of every key's last value, or one of the markers below.
#[derive(Debug)]
pub struct Expectations {
    lengths: Vec<u32>,
    present: u64,
}

/// The key is never set.
const ABSENT: u32 = u32::MAX;
/// Threads racing on the key leave one of several lengths.
const ANY_LENGTH: u32 = u32::MAX - 1;

impl Expectations {
    /// Replays the pickers every thread of the set phase uses: `pickers(id)` gives
    /// thread `id`'s, which does `iter` operations over `records` keys.
    pub fn replay(
        records: u64,
        threads: usize,
        iter: u64,
        pickers: impl Fn(usize) -> (KeyPicker, LengthPicker),
    ) -> Expectations {
        let mut lengths = vec![ABSENT; records as usize];
        // The current thread's last length of each key, and the keys it touched:
        // merged into `lengths` once the thread's replay is over, because only
        // then is its last length known.
        let mut last = vec![ABSENT; records as usize];
        let mut touched = Vec::new();
        for id in 0..threads {
            let (mut keys, mut lens) = pickers(id);
            for i in 0..iter {
                let key = keys.next(i) as usize;
                if last[key] == ABSENT {
                    touched.push(key);
                }
                last[key] = lens.next() as u32;
            }
            for key in touched.drain(..) {
                lengths[key] = match (lengths[key], last[key]) {
                    (ABSENT, len) => len,
                    (same, len) if same == len => same,
                    _ => ANY_LENGTH,
                };
                last[key] = ABSENT;
            }
        }
        let present = lengths.iter().filter(|&&len| len != ABSENT).count() as u64;
        Expectations { lengths, present }
    }

    /// How many keys the set phase stores.
    pub fn present(&self) -> u64 {
        self.present
    }

    /// Whether `value` is what key `key` should hold (`None`: absent).
    pub fn holds(&self, pattern: &ValuePattern, key: u64, value: Option<&[u8]>) -> bool {
        let expected = self.lengths.get(key as usize).copied().unwrap_or(ABSENT);
        match (expected, value) {
            (ABSENT, None) => true,
            (ABSENT, Some(_)) | (_, None) => false,
            (ANY_LENGTH, Some(value)) => pattern.holds(key, value),
            (len, Some(value)) => value.len() == len as usize && pattern.holds(key, value),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn sequential_keys_are_exact() {
        let pattern = ValuePattern::new(10);
        let expect = Expectations::replay(8, 2, 4, |id| {
            let lens = LengthPicker::new(Some(SmallRng::seed_from_u64(id as u64)), 10);
            (KeyPicker::sequential(id, 2), lens)
        });
        assert_eq!(expect.present(), 8);
        // Replaying thread 0's lengths gives key 0's length.
        let len0 = LengthPicker::new(Some(SmallRng::seed_from_u64(0)), 10).next();
        assert!(expect.holds(&pattern, 0, Some(pattern.value(0, len0))));
        assert!(!expect.holds(&pattern, 0, Some(pattern.value(1, len0))));
        assert!(!expect.holds(&pattern, 0, None));
        assert!(expect.holds(&pattern, 8, None));
    }

    #[test]
    fn a_thread_overwriting_its_own_key_keeps_the_last_length() {
        let pattern = ValuePattern::new(10);
        // One thread, keys drawn from 2: each key is set several times.
        let expect = Expectations::replay(2, 1, 50, |_| {
            let keys = KeyPicker::random(SmallRng::seed_from_u64(7), 2);
            (keys, LengthPicker::new(Some(SmallRng::seed_from_u64(8)), 10))
        });
        let mut keys = KeyPicker::random(SmallRng::seed_from_u64(7), 2);
        let mut lens = LengthPicker::new(Some(SmallRng::seed_from_u64(8)), 10);
        let mut last = [usize::MAX; 2];
        for i in 0..50 {
            let key = keys.next(i) as usize;
            last[key] = lens.next();
        }
        for key in 0..2u64 {
            let len = last[key as usize];
            assert!(expect.holds(&pattern, key, Some(pattern.value(key, len))));
            let other = if len == 0 { 1 } else { len - 1 };
            assert!(!expect.holds(&pattern, key, Some(pattern.value(key, other))));
        }
    }

    #[test]
    fn racing_threads_with_different_lengths_accept_any_length() {
        let pattern = ValuePattern::new(10);
        // Two threads each set the one key once, with lengths 10 and 3.
        let expect = Expectations::replay(1, 2, 1, |id| {
            (KeyPicker::random(SmallRng::seed_from_u64(0), 1), LengthPicker::new(None, [10, 3][id]))
        });
        assert!(expect.holds(&pattern, 0, Some(pattern.value(0, 10))));
        assert!(expect.holds(&pattern, 0, Some(pattern.value(0, 3))));
        assert!(!expect.holds(&pattern, 0, Some(b"zz")));
    }
}
