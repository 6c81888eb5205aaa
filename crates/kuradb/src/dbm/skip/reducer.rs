//! Reducers: how a synchronization turns the records of one key, oldest
//! first, into the records the new file keeps.

use super::build::Builder;
use super::value::{decode_value, encode_value};
use crate::error::{Error, ErrorKind, Result};

/// How a synchronization reduces the records of each key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reducer {
    /// Keeps every record, in the order they were added.
    #[default]
    All,
    /// Keeps the oldest record.
    First,
    /// Keeps the second oldest record, or the only one (the reference's
    /// `ReduceToSecond`: a key synchronized before keeps the first value
    /// set after that synchronization).
    Second,
    /// Keeps the newest record.
    Last,
    /// Keeps one record holding every value, oldest first, with the
    /// delimiter between them.
    Concat(Vec<u8>),
    /// Keeps one record holding the sum of the values read as decimal
    /// numbers (integers, or real numbers if any value has a fraction or an
    /// exponent); a value that is not a number counts as zero.
    Total,
}

impl Reducer {
    /// The reducer of a name: `none` (or `all`), `first`, `second`, `last`, `concat`,
    /// `concat_null`, `concat_tab`, `concat_line`, `total` (or `sum`); the
    /// reference's `ReduceToFirst`-style names are accepted too.
    pub fn from_name(name: &str) -> Result<Reducer> {
        let lower = name.trim().to_ascii_lowercase();
        let short = lower.strip_prefix("reduce").map(|s| s.trim_start_matches("to")).unwrap_or(&lower);
        Ok(match short {
            "none" | "all" | "" => Reducer::All,
            "first" => Reducer::First,
            "second" => Reducer::Second,
            "last" => Reducer::Last,
            "concat" => Reducer::Concat(Vec::new()),
            // concatnull, … as tkrzw_dbm_util's --reducer spells them.
            "concatwithnull" | "concat_null" | "concatnull" => Reducer::Concat(vec![0]),
            "concatwithtab" | "concat_tab" | "concattab" => Reducer::Concat(vec![b'\t']),
            "concatwithline" | "concat_line" | "concatline" => Reducer::Concat(vec![b'\n']),
            "total" | "sum" => Reducer::Total,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown reducer {name:?}: expected none, first, second, last, concat, concat_null, \
                         concat_tab, concat_line or total"
                    ),
                ))
            }
        })
    }

    /// Writes the records that `key`'s values reduce to, each encoded.
    pub(super) fn reduce(&self, key: &[u8], group: &Group, out: &mut Builder) -> Result<()> {
        if group.len() == 0 {
            return Ok(());
        }
        let mut add = |value: &[u8]| out.add(key, encode_value(value));
        match self {
            Reducer::All => (0..group.len()).try_for_each(|i| add(group.get(i))),
            Reducer::First => add(group.get(0)),
            Reducer::Second => add(group.get(1.min(group.len() - 1))),
            Reducer::Last => add(group.get(group.len() - 1)),
            Reducer::Concat(delimiter) if delimiter.is_empty() => add(group.all()),
            Reducer::Concat(delimiter) => {
                let joined = (0..group.len()).map(|i| group.get(i)).collect::<Vec<_>>().join(&delimiter[..]);
                add(&joined)
            }
            Reducer::Total => add(total((0..group.len()).map(|i| group.get(i))).as_bytes()),
        }
    }
}

/// The sum of decimal numbers, as decimal text.
pub(super) fn total<'a>(values: impl Iterator<Item = &'a [u8]>) -> String {
    let (mut integers, mut reals, mut any_real) = (0i128, 0f64, false);
    for value in values {
        let text = std::str::from_utf8(value).unwrap_or("").trim();
        if let Ok(n) = text.parse::<i64>() {
            integers += i128::from(n);
            reals += n as f64;
        } else if let Ok(x) = text.parse::<f64>() {
            any_real = true;
            reals += x;
        }
    }
    if any_real {
        reals.to_string()
    } else {
        integers.to_string()
    }
}

/// The values of one key, decoded, oldest first.
#[derive(Default)]
pub(super) struct Group {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Group {
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Adds the value of `stored` bytes.
    pub(super) fn push(&mut self, stored: &[u8]) {
        self.bytes.extend_from_slice(decode_value(stored));
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    fn all(&self) -> &[u8] {
        &self.bytes
    }
}
