//! Keys and values of the database workloads: keys are numbers written as the
//! reference writes them (`%08d`), values are slices of one pattern chosen by the
//! key, so a reader can check any value knowing only its key and length.

use rand::rngs::SmallRng;
use rand::Rng;

/// The fewest digits of a key: shorter numbers are padded with zeros.
pub const KEY_DIGITS: usize = 8;

/// The most digits a `u64` takes.
const MAX_DIGITS: usize = 20;

/// Writes key numbers as text into a reused buffer, without allocating.
#[derive(Debug)]
pub struct KeyFormatter {
    buf: [u8; MAX_DIGITS],
}

impl Default for KeyFormatter {
    fn default() -> KeyFormatter {
        KeyFormatter { buf: [b'0'; MAX_DIGITS] }
    }
}

impl KeyFormatter {
    /// The key of number `n`: its decimal digits, at least [`KEY_DIGITS`] of them.
    ///
    /// Always inlined into the workloads' loops: left out of line, it sat in
    /// a page of code of its own, which every run then mapped.
    #[inline(always)]
    pub fn format(&mut self, mut n: u64) -> &[u8] {
        let mut start = MAX_DIGITS;
        loop {
            start -= 1;
            self.buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // The padding zeros: the buffer's earlier bytes may hold digits of a longer key.
        let min_start = MAX_DIGITS - KEY_DIGITS;
        if start > min_start {
            self.buf[min_start..start].fill(b'0');
            start = min_start;
        }
        &self.buf[start..]
    }
}

/// The number a key stands for, if it is a key [`KeyFormatter`] writes.
pub fn parse_key(key: &[u8]) -> Option<u64> {
    if key.len() < KEY_DIGITS || key.len() > MAX_DIGITS || !key.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // A key longer than the minimum has no leading zero: there is one text per number.
    if key.len() > KEY_DIGITS && key[0] == b'0' {
        return None;
    }
    std::str::from_utf8(key).ok()?.parse().ok()
}

/// Extra pattern bytes past the longest value, so values of different keys start
/// at different places in it. A prime, as the reference's, so the start offsets
/// of consecutive keys do not repeat with a short period.
const PATTERN_EXTRA: usize = 2039;

/// The bytes every value is cut from: the value of key `k` with length `len` is
/// `len` bytes starting at `k % PATTERN_EXTRA`. Handing out slices keeps the
/// workloads' loops free of copies and allocations.
#[derive(Debug)]
pub struct ValuePattern {
    bytes: Vec<u8>,
    size: usize,
}

impl ValuePattern {
    /// A pattern for values of at most `size` bytes.
    pub fn new(size: usize) -> ValuePattern {
        // Lowercase letters in a sequence that does not repeat within 26 * 9 bytes.
        let bytes = (0..size + PATTERN_EXTRA).map(|i| b'a' + ((i + i / 26) % 26) as u8).collect();
        ValuePattern { bytes, size }
    }

    /// The longest value.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The value of key `key` that is `len` bytes long (at most [`ValuePattern::size`]).
    #[inline]
    pub fn value(&self, key: u64, len: usize) -> &[u8] {
        let start = (key % PATTERN_EXTRA as u64) as usize;
        &self.bytes[start..start + len]
    }

    /// Whether `value` is a value of `key` of some length up to the longest.
    #[inline]
    pub fn holds(&self, key: u64, value: &[u8]) -> bool {
        value.len() <= self.size && value == self.value(key, value.len())
    }
}

/// Chooses the key of each operation of one thread, as the reference does:
/// operation `i` of thread `id` takes key `i * threads + id`, or with random
/// keys a uniform draw from `[0, range)`.
#[derive(Debug)]
pub struct KeyPicker {
    rng: Option<SmallRng>,
    id: u64,
    threads: u64,
    range: u64,
}

impl KeyPicker {
    /// Sequential keys of thread `id` among `threads`.
    pub fn sequential(id: usize, threads: usize) -> KeyPicker {
        KeyPicker { rng: None, id: id as u64, threads: threads as u64, range: 0 }
    }

    /// Random keys below `range`, drawn from `rng`.
    pub fn random(rng: SmallRng, range: u64) -> KeyPicker {
        KeyPicker { rng: Some(rng), id: 0, threads: 1, range }
    }

    /// The key of operation `i`.
    #[inline]
    pub fn next(&mut self, i: u64) -> u64 {
        match &mut self.rng {
            Some(rng) => rng.gen_range(0..self.range),
            None => i * self.threads + self.id,
        }
    }
}

/// Chooses the length of each value: always the size, or with random values a
/// uniform draw from `[0, size]` as in the reference.
#[derive(Debug)]
pub struct LengthPicker {
    rng: Option<SmallRng>,
    size: usize,
}

impl LengthPicker {
    /// Lengths of `size`, or random ones drawn from `rng` if it is given.
    pub fn new(rng: Option<SmallRng>, size: usize) -> LengthPicker {
        LengthPicker { rng, size }
    }

    /// The length of the next value.
    #[inline]
    pub fn next(&mut self) -> usize {
        match &mut self.rng {
            Some(rng) => rng.gen_range(0..=self.size),
            None => self.size,
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn keys_are_printed_like_percent_08d_and_parse_back() {
        let mut keys = KeyFormatter::default();
        assert_eq!(keys.format(0), b"00000000");
        assert_eq!(keys.format(1234), b"00001234");
        assert_eq!(keys.format(123_456_789_012), b"123456789012");
        // A short key after a long one is padded, not left with the long one's digits.
        assert_eq!(keys.format(42), b"00000042");
        assert_eq!(keys.format(u64::MAX), u64::MAX.to_string().as_bytes());
        for n in [0, 7, 99_999_999, 100_000_000, u64::MAX] {
            assert_eq!(parse_key(keys.format(n)), Some(n));
        }
        assert_eq!(parse_key(b"1234"), None);
        assert_eq!(parse_key(b"0123456789"), None);
        assert_eq!(parse_key(b"0000x123"), None);
    }

    #[test]
    fn values_depend_on_the_key_and_are_recognized() {
        let pattern = ValuePattern::new(100);
        let a = pattern.value(1, 100);
        let b = pattern.value(2, 100);
        assert_ne!(a, b);
        assert!(pattern.holds(1, a));
        assert!(pattern.holds(1, &a[..10]));
        assert!(pattern.holds(1, b""));
        assert!(!pattern.holds(2, a));
        assert!(!pattern.holds(1, &[a, b"x"].concat()));
    }

    #[test]
    fn pickers_follow_the_reference_scheme() {
        let mut sequential = KeyPicker::sequential(2, 4);
        assert_eq!((0..3).map(|i| sequential.next(i)).collect::<Vec<_>>(), [2, 6, 10]);
        let mut random = KeyPicker::random(SmallRng::seed_from_u64(1), 10);
        assert!((0..100).all(|i| random.next(i) < 10));
        let mut lengths = LengthPicker::new(Some(SmallRng::seed_from_u64(1)), 5);
        assert!((0..100).all(|_| lengths.next() <= 5));
        assert_eq!(LengthPicker::new(None, 5).next(), 5);
    }
}
