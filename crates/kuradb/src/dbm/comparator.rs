//! The orders an ordered database (the tree, BabyDbm, a shard set) may keep
//! its keys in, and the byte comparison every lexical order shares.

use std::cmp::Ordering;

use super::pair::decode_pair;
use crate::error::{Error, ErrorKind, Result};

/// How a tree database orders its keys. Chosen at creation and stored in
/// the file. The numeric orders read a key as text; keys that are equal as
/// numbers ("1" and "01", say) are ordered by their bytes, so that distinct
/// keys stay distinct records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyComparator {
    /// Byte by byte, a shorter key before its extensions.
    #[default]
    Lexical,
    /// As signed decimal integers of any length ("-12" < "3" < "20");
    /// anything after the digits is ignored.
    Decimal,
    /// As hexadecimal integers of any length, either case.
    Hex,
    /// As real numbers ("1.5e3", "-0.25", "inf"); text that is not a number
    /// orders as zero.
    Real,
    /// The reverse of [`KeyComparator::Lexical`].
    LexicalReverse,
    /// The reverse of [`KeyComparator::Decimal`].
    DecimalReverse,
    /// The reverse of [`KeyComparator::Hex`].
    HexReverse,
    /// The reverse of [`KeyComparator::Real`].
    RealReverse,
    /// Keys that are pairs encoded by [`encode_pair`](super::pair::encode_pair)
    /// (the layout of a secondary index's records): by their first parts
    /// byte by byte, then by their second parts byte by byte.
    PairLexical,
    /// Pairs by their first parts as [`KeyComparator::Decimal`], then by
    /// their second parts byte by byte.
    PairDecimal,
    /// Pairs by their first parts as [`KeyComparator::Hex`], then by their
    /// second parts byte by byte.
    PairHex,
    /// Pairs by their first parts as [`KeyComparator::Real`], then by their
    /// second parts byte by byte.
    PairReal,
}

// The position in this list is the code stored in files: append only.
const ALL: [KeyComparator; 12] = [
    KeyComparator::Lexical,
    KeyComparator::Decimal,
    KeyComparator::Hex,
    KeyComparator::Real,
    KeyComparator::LexicalReverse,
    KeyComparator::DecimalReverse,
    KeyComparator::HexReverse,
    KeyComparator::RealReverse,
    KeyComparator::PairLexical,
    KeyComparator::PairDecimal,
    KeyComparator::PairHex,
    KeyComparator::PairReal,
];

impl KeyComparator {
    /// Every comparator.
    pub fn all() -> &'static [KeyComparator] {
        &ALL
    }

    /// The name it is given by in parameters and stored in files.
    pub fn name(self) -> &'static str {
        match self {
            KeyComparator::Lexical => "lexical",
            KeyComparator::Decimal => "decimal",
            KeyComparator::Hex => "hex",
            KeyComparator::Real => "real",
            KeyComparator::LexicalReverse => "lexical_reverse",
            KeyComparator::DecimalReverse => "decimal_reverse",
            KeyComparator::HexReverse => "hex_reverse",
            KeyComparator::RealReverse => "real_reverse",
            KeyComparator::PairLexical => "pair_lexical",
            KeyComparator::PairDecimal => "pair_decimal",
            KeyComparator::PairHex => "pair_hex",
            KeyComparator::PairReal => "pair_real",
        }
    }

    /// The comparator of `name`: its own name, or the reference's
    /// ("LexicalKeyComparator", "SignedDecimalKeyComparator",
    /// "PairLexicalKeyComparator", …).
    pub fn from_name(name: &str) -> Result<KeyComparator> {
        let lower = name.to_ascii_lowercase();
        let lower = lower.strip_suffix("keycomparator").unwrap_or(&lower).trim_end_matches('_');
        let found = match lower {
            "lexical" => Some(KeyComparator::Lexical),
            "decimal" | "signeddecimal" => Some(KeyComparator::Decimal),
            "hex" | "hexadecimal" => Some(KeyComparator::Hex),
            "real" | "realnumber" => Some(KeyComparator::Real),
            "lexical_reverse" | "lexicalreverse" | "reverselexical" => Some(KeyComparator::LexicalReverse),
            "decimal_reverse" | "decimalreverse" | "signeddecimalreverse" => {
                Some(KeyComparator::DecimalReverse)
            }
            "hex_reverse" | "hexreverse" | "hexadecimalreverse" => Some(KeyComparator::HexReverse),
            "real_reverse" | "realreverse" | "realnumberreverse" => Some(KeyComparator::RealReverse),
            "pair_lexical" | "pairlexical" => Some(KeyComparator::PairLexical),
            "pair_decimal" | "pairdecimal" | "pairsigneddecimal" => Some(KeyComparator::PairDecimal),
            "pair_hex" | "pairhex" | "pairhexadecimal" => Some(KeyComparator::PairHex),
            "pair_real" | "pairreal" | "pairrealnumber" => Some(KeyComparator::PairReal),
            _ => None,
        };
        found.ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|c| c.name()).collect();
            Error::new(
                ErrorKind::InvalidArgument,
                format!("unknown key comparator {name:?}: use one of {}", names.join(", ")),
            )
        })
    }

    /// Whether keys in this order are encoded pairs (the orders of a
    /// secondary index).
    pub fn is_pair(self) -> bool {
        self.pair_part().is_some()
    }

    /// The order of the first parts of a pair order.
    fn pair_part(self) -> Option<KeyComparator> {
        match self {
            KeyComparator::PairLexical => Some(KeyComparator::Lexical),
            KeyComparator::PairDecimal => Some(KeyComparator::Decimal),
            KeyComparator::PairHex => Some(KeyComparator::Hex),
            KeyComparator::PairReal => Some(KeyComparator::Real),
            _ => None,
        }
    }

    pub(crate) fn code(self) -> u8 {
        ALL.iter().position(|&c| c == self).unwrap_or(0) as u8
    }

    pub(crate) fn from_code(code: u8) -> Option<KeyComparator> {
        ALL.get(usize::from(code)).copied()
    }

    /// Compares two keys in this order.
    pub fn compare(self, a: &[u8], b: &[u8]) -> Ordering {
        if let Some(first) = self.pair_part() {
            return compare_pairs(first, a, b);
        }
        let ordered = match self {
            KeyComparator::Lexical | KeyComparator::LexicalReverse => {
                return self.orient(compare_bytes(a, b))
            }
            KeyComparator::Decimal | KeyComparator::DecimalReverse => compare_integers(a, b, 10),
            KeyComparator::Hex | KeyComparator::HexReverse => compare_integers(a, b, 16),
            KeyComparator::Real | KeyComparator::RealReverse => real(a).total_cmp(&real(b)),
            _ => Ordering::Equal,
        };
        self.orient(ordered.then_with(|| compare_bytes(a, b)))
    }

    fn orient(self, ordering: Ordering) -> Ordering {
        match self {
            KeyComparator::LexicalReverse
            | KeyComparator::DecimalReverse
            | KeyComparator::HexReverse
            | KeyComparator::RealReverse => ordering.reverse(),
            _ => ordering,
        }
    }
}

/// The byte order of `[u8]`, decided by the first eight bytes as one
/// integer when they differ: most comparisons of a search end there without
/// a call to `memcmp`.
#[inline]
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
    }
    a.cmp(b)
}

/// Two encoded pairs: first parts in `first`'s order, then second parts
/// byte by byte. A key that is not a pair (written into a pair-ordered
/// database by other means) counts as a first part with an empty second;
/// the whole bytes break any tie that leaves, so that the order stays total
/// and distinct keys stay distinct.
fn compare_pairs(first: KeyComparator, a: &[u8], b: &[u8]) -> Ordering {
    let (a_first, a_second) = decode_pair(a).unwrap_or((a, &[]));
    let (b_first, b_second) = decode_pair(b).unwrap_or((b, &[]));
    first
        .compare(a_first, b_first)
        .then_with(|| compare_bytes(a_second, b_second))
        .then_with(|| compare_bytes(a, b))
}

/// A key read as an integer: its sign and its significant digits.
fn integer(key: &[u8], radix: u32) -> (bool, &[u8]) {
    let trimmed = key.trim_ascii_start();
    let (negative, rest) = match trimmed.first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let rest = if radix == 16 {
        rest.strip_prefix(b"0x").or_else(|| rest.strip_prefix(b"0X")).unwrap_or(rest)
    } else {
        rest
    };
    let digits = rest.iter().take_while(|c| char::from(**c).is_digit(radix)).count();
    let digits = &rest[..digits];
    let first = digits.iter().position(|&c| c != b'0').unwrap_or(digits.len());
    let significant = &digits[first..];
    (negative && !significant.is_empty(), significant)
}

fn compare_integers(a: &[u8], b: &[u8], radix: u32) -> Ordering {
    let (a_negative, a_digits) = integer(a, radix);
    let (b_negative, b_digits) = integer(b, radix);
    let magnitude = || {
        a_digits.len().cmp(&b_digits.len()).then_with(|| {
            let lower = |d: &[u8]| d.iter().map(u8::to_ascii_lowercase).collect::<Vec<u8>>();
            lower(a_digits).cmp(&lower(b_digits))
        })
    };
    match (a_negative, b_negative) {
        (false, false) => magnitude(),
        (true, true) => magnitude().reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

fn real(key: &[u8]) -> f64 {
    let text = std::str::from_utf8(key).unwrap_or("").trim();
    // The longest prefix that parses, so "1.5kg" reads as 1.5.
    (1..=text.len())
        .rev()
        .filter(|&n| text.is_char_boundary(n))
        .find_map(|n| text[..n].parse::<f64>().ok())
        .map(|v| if v.is_nan() { 0.0 } else { v })
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(c: KeyComparator, keys: &[&str]) -> Vec<String> {
        let mut v: Vec<&str> = keys.to_vec();
        v.sort_by(|a, b| c.compare(a.as_bytes(), b.as_bytes()));
        v.into_iter().map(String::from).collect()
    }

    #[test]
    fn every_comparator_orders_as_named() {
        let keys = ["10", "9", "-3", "0x1f", "2.5", "abc", "-20", "007"];
        assert_eq!(
            sorted(KeyComparator::Lexical, &keys),
            ["-20", "-3", "007", "0x1f", "10", "2.5", "9", "abc"]
        );
        assert_eq!(
            sorted(KeyComparator::Decimal, &keys),
            ["-20", "-3", "0x1f", "abc", "2.5", "007", "9", "10"]
        );
        assert_eq!(
            sorted(KeyComparator::Hex, &["ff", "0x10", "A", "9", "-1"]),
            ["-1", "9", "A", "0x10", "ff"]
        );
        assert_eq!(
            sorted(KeyComparator::Real, &["1e3", "2.5", "-0.5", "10", "x"]),
            ["-0.5", "x", "2.5", "10", "1e3"]
        );
        for c in KeyComparator::all() {
            let forward = sorted(*c, &keys);
            let reverse = match c.name().strip_suffix("_reverse") {
                Some(base) => sorted(KeyComparator::from_name(base).unwrap(), &keys),
                None => continue,
            };
            assert_eq!(forward, reverse.into_iter().rev().collect::<Vec<_>>(), "{}", c.name());
        }
    }

    #[test]
    fn keys_equal_as_numbers_stay_distinct() {
        let c = KeyComparator::Decimal;
        assert_eq!(c.compare(b"1", b"01"), "1".cmp("01"));
        assert_ne!(c.compare(b"1", b"01"), Ordering::Equal);
        assert_eq!(c.compare(b"5", b"5"), Ordering::Equal);
    }

    #[test]
    fn pair_orders_sort_by_first_part_then_second() {
        use crate::dbm::pair::encode_pair;
        let pairs: [(&[u8], &[u8]); 7] = [
            (b"10", b"b"),
            (b"9", b""),
            (b"9", b"a"),
            (b"", b"z"),
            (b"9\x00", b""),
            (b"10", b""),
            (b"a", b"\x00"),
        ];
        let sort = |c: KeyComparator| {
            let mut v: Vec<Vec<u8>> = pairs.iter().map(|(k, v)| encode_pair(k, v)).collect();
            v.sort_by(|a, b| c.compare(a, b));
            v.iter()
                .map(|r| crate::dbm::pair::decode_pair(r).unwrap())
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect::<Vec<_>>()
        };
        let mut expected: Vec<(Vec<u8>, Vec<u8>)> =
            pairs.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        expected.sort();
        assert_eq!(sort(KeyComparator::PairLexical), expected);
        let firsts: Vec<Vec<u8>> = sort(KeyComparator::PairDecimal).into_iter().map(|p| p.0).collect();
        assert_eq!(firsts, [&b""[..], b"a", b"9", b"9", b"9\x00", b"10", b"10"]);
        // A key that is no pair still has a place, distinct from the pair it resembles.
        let c = KeyComparator::PairLexical;
        assert_ne!(c.compare(b"abc", &encode_pair(b"abc", b"")), Ordering::Equal);
        assert_eq!(c.compare(b"abc", b"abc"), Ordering::Equal);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for c in KeyComparator::all() {
            assert_eq!(KeyComparator::from_name(c.name()).unwrap(), *c);
            assert_eq!(KeyComparator::from_code(c.code()), Some(*c));
        }
        assert_eq!(KeyComparator::from_name("SignedDecimalKeyComparator").unwrap(), KeyComparator::Decimal);
        assert_eq!(KeyComparator::from_name("PairLexicalKeyComparator").unwrap(), KeyComparator::PairLexical);
        assert_eq!(KeyComparator::from_name("PairRealNumberKeyComparator").unwrap(), KeyComparator::PairReal);
        assert!(KeyComparator::PairHex.is_pair() && !KeyComparator::Hex.is_pair());
        let err = KeyComparator::from_name("alphabetical").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("alphabetical") && err.to_string().contains("lexical"), "{err}");
    }
}
