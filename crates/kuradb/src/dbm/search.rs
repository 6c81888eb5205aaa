//! Finding keys by pattern: [`Dbm::search`] and the
//! modes of the reference's `Search`.
//!
//! Every mode but the ordered ones looks at every key, in the database's
//! order, and answers the matching keys in that order, at most `capacity`
//! of them (0: all). The edit-distance modes answer the `capacity` keys
//! nearest the pattern, nearest first, ties in byte order of the keys.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;

use super::{Action, Dbm};
use crate::dbm::{Access, Edge};
use crate::error::{Error, ErrorKind, Result};

/// How [`Dbm::search`] matches keys against its pattern.
///
/// The names ([`FromStr`], [`fmt::Display`]) are the reference's: `contain`,
/// `begin`, `end`, `regex`, `edit`, `editbin`, `containcase`, `containword`,
/// `containcaseword`, each `contain…` with a `*` for any of several
/// patterns, and `upper`, `upperinc`, `lower`, `lowerinc`.
///
/// ```
/// use kuradb::dbm::search::SearchMode;
/// use kuradb::dbm::Dbm;
/// use kuradb::StdTreeDbm;
/// # fn main() -> kuradb::Result<()> {
/// let db = StdTreeDbm::new(&Default::default());
/// for key in ["apple", "apricot", "grape", "Pineapple"] {
///     db.set(key.as_bytes(), b"")?;
/// }
/// let found = db.search("containcase".parse()?, b"apple", 0)?;
/// assert_eq!(found, [b"Pineapple".to_vec(), b"apple".to_vec()]);
/// // The two keys fewest edits away, nearest first ("apple" is two away).
/// let nearest = db.search(SearchMode::Edit, b"appel", 2)?;
/// assert_eq!(nearest, [b"apple".to_vec(), b"grape".to_vec()]);
/// let after = db.search(SearchMode::Upper { inclusive: false }, b"apricot", 0)?;
/// assert_eq!(after, [b"grape".to_vec()]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// Keys containing the pattern; `ignore_case` compares ASCII letters
    /// without case, `whole_word` wants the match between two non-alphanumeric
    /// bytes (or the key's ends), `any_line` takes the pattern as lines
    /// (empty ones ignored) and matches a key containing any of them.
    Contain {
        /// Compare ASCII letters without case.
        ignore_case: bool,
        /// Match only between ASCII non-alphanumerics or the key's ends.
        whole_word: bool,
        /// The pattern is several, one a line; any of them matches.
        any_line: bool,
    },
    /// Keys beginning with the pattern.
    Begin,
    /// Keys ending with the pattern.
    End,
    /// Keys with a match of the regular expression (the `regex` crate's
    /// syntax, searched anywhere in the key's bytes).
    Regex,
    /// The keys of least Levenshtein distance to the pattern, counted in
    /// Unicode characters (invalid UTF-8 counts as U+FFFD).
    Edit,
    /// The keys of least Levenshtein distance to the pattern, counted in bytes.
    EditBinary,
    /// Keys after the pattern in the database's order, ascending (ordered
    /// databases only); `inclusive` takes the pattern itself too.
    Upper {
        /// Take a key equal to the pattern too.
        inclusive: bool,
    },
    /// Keys before the pattern in the database's order, descending (ordered
    /// databases only); `inclusive` takes the pattern itself too.
    Lower {
        /// Take a key equal to the pattern too.
        inclusive: bool,
    },
}

impl SearchMode {
    /// Plain `contain`.
    pub const CONTAIN: SearchMode =
        SearchMode::Contain { ignore_case: false, whole_word: false, any_line: false };
}

const NAMES: [&str; 17] = [
    "contain",
    "containcase",
    "containword",
    "containcaseword",
    "contain*",
    "containcase*",
    "containword*",
    "containcaseword*",
    "begin",
    "end",
    "regex",
    "edit",
    "editbin",
    "upper",
    "upperinc",
    "lower",
    "lowerinc",
];

impl FromStr for SearchMode {
    type Err = Error;

    fn from_str(name: &str) -> Result<SearchMode> {
        if let Some(index) = NAMES[..8].iter().position(|n| *n == name) {
            return Ok(SearchMode::Contain {
                ignore_case: index & 1 != 0,
                whole_word: index & 2 != 0,
                any_line: index & 4 != 0,
            });
        }
        Ok(match name {
            "begin" => SearchMode::Begin,
            "end" => SearchMode::End,
            "regex" if !cfg!(feature = "regex") => {
                return Err(Error::needs_feature("the regex search mode", "regex"));
            }
            "regex" => SearchMode::Regex,
            "edit" => SearchMode::Edit,
            "editbin" => SearchMode::EditBinary,
            "upper" => SearchMode::Upper { inclusive: false },
            "upperinc" => SearchMode::Upper { inclusive: true },
            "lower" => SearchMode::Lower { inclusive: false },
            "lowerinc" => SearchMode::Lower { inclusive: true },
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("unknown search mode {name:?}: the modes are {}", NAMES.join(", ")),
                ))
            }
        })
    }
}

impl fmt::Display for SearchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            SearchMode::Contain { ignore_case, whole_word, any_line } => {
                NAMES[usize::from(ignore_case) | usize::from(whole_word) << 1 | usize::from(any_line) << 2]
            }
            SearchMode::Begin => "begin",
            SearchMode::End => "end",
            SearchMode::Regex => "regex",
            SearchMode::Edit => "edit",
            SearchMode::EditBinary => "editbin",
            SearchMode::Upper { inclusive } => ["upper", "upperinc"][usize::from(inclusive)],
            SearchMode::Lower { inclusive } => ["lower", "lowerinc"][usize::from(inclusive)],
        };
        f.write_str(name)
    }
}

/// Walks a sequence of keys (or lines): calls the visitor with each, in order.
type Walk<'a> = dyn FnMut(&mut dyn FnMut(&[u8])) -> Result<()> + 'a;

/// The keys of `db` that `mode` matches with `pattern`, at most `capacity` (0: all).
pub(crate) fn search<D: Dbm + ?Sized>(
    db: &D,
    mode: SearchMode,
    pattern: &[u8],
    capacity: usize,
) -> Result<Vec<Vec<u8>>> {
    if let SearchMode::Upper { inclusive } | SearchMode::Lower { inclusive } = mode {
        let capacity = if capacity == 0 { usize::MAX } else { capacity };
        return ordered(db, matches!(mode, SearchMode::Upper { .. }), inclusive, pattern, capacity);
    }
    let mut walk = |visit: &mut dyn FnMut(&[u8])| {
        db.process_each(Access::ReadOnly, &mut |key, _| {
            visit(key);
            Action::Keep
        })
    };
    matching(&mut walk, mode, pattern, capacity)
}

/// The lines of `text` (separated by line feeds, a carriage return before
/// one dropped; a final line feed ends the last line) that `mode` matches
/// with `pattern`, at most `capacity` (0: all), as the reference's search
/// of a text file does. The ordered modes (upper, lower) need an ordered
/// database and are refused.
///
/// ```
/// use kuradb::dbm::search::search_lines;
/// use kuradb::dbm::SearchMode;
/// let text = b"tokyo\nosaka\r\nkyoto\n";
/// assert_eq!(search_lines(text, SearchMode::End, b"yo", 0).unwrap(), [b"tokyo".to_vec()]);
/// assert_eq!(search_lines(text, SearchMode::End, b"ka", 0).unwrap(), [b"osaka".to_vec()]);
/// assert_eq!(search_lines(text, SearchMode::CONTAIN, b"o", 2).unwrap().len(), 2);
/// ```
pub fn search_lines(text: &[u8], mode: SearchMode, pattern: &[u8], capacity: usize) -> Result<Vec<Vec<u8>>> {
    if let SearchMode::Upper { .. } | SearchMode::Lower { .. } = mode {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("search mode {mode} needs an ordered database, not lines of text"),
        ));
    }
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let mut walk = |visit: &mut dyn FnMut(&[u8])| {
        if !text.is_empty() {
            for line in body.split(|&b| b == b'\n') {
                visit(line.strip_suffix(b"\r").unwrap_or(line));
            }
        }
        Ok(())
    };
    matching(&mut walk, mode, pattern, capacity)
}

/// The keys `walk` visits that `mode` (not an ordered one) matches.
fn matching(walk: &mut Walk<'_>, mode: SearchMode, pattern: &[u8], capacity: usize) -> Result<Vec<Vec<u8>>> {
    let capacity = if capacity == 0 { usize::MAX } else { capacity };
    match mode {
        SearchMode::Contain { ignore_case, whole_word, any_line } => {
            let patterns: Vec<Vec<u8>> = if any_line {
                pattern.split(|&b| b == b'\n').filter(|p| !p.is_empty()).map(<[u8]>::to_vec).collect()
            } else {
                vec![pattern.to_vec()]
            };
            let patterns: Vec<Vec<u8>> = if ignore_case {
                patterns.iter().map(|p| p.to_ascii_lowercase()).collect()
            } else {
                patterns
            };
            scan(walk, capacity, |key| {
                let lowered;
                let text = if ignore_case {
                    lowered = key.to_ascii_lowercase();
                    &lowered[..]
                } else {
                    key
                };
                patterns.iter().any(|p| contains(text, p, whole_word))
            })
        }
        SearchMode::Begin => scan(walk, capacity, |key| key.starts_with(pattern)),
        SearchMode::End => scan(walk, capacity, |key| key.ends_with(pattern)),
        #[cfg(not(feature = "regex"))]
        SearchMode::Regex => Err(Error::needs_feature("the regex search mode", "regex")),
        #[cfg(feature = "regex")]
        SearchMode::Regex => {
            let text = std::str::from_utf8(pattern).map_err(|_| {
                Error::new(ErrorKind::InvalidArgument, "a regular expression must be UTF-8 text")
            })?;
            let regex = regex::bytes::Regex::new(text).map_err(|e| {
                Error::new(ErrorKind::InvalidArgument, format!("invalid regular expression {text:?}: {e}"))
            })?;
            scan(walk, capacity, |key| regex.is_match(key))
        }
        SearchMode::Edit => {
            let chars: Vec<char> = String::from_utf8_lossy(pattern).chars().collect();
            nearest(walk, capacity, |key| {
                let key: Vec<char> = String::from_utf8_lossy(key).chars().collect();
                edit_distance(&chars, &key)
            })
        }
        SearchMode::EditBinary => nearest(walk, capacity, |key| edit_distance(pattern, key)),
        SearchMode::Upper { .. } | SearchMode::Lower { .. } => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("search mode {mode} needs an ordered database"),
        )),
    }
}

/// The keys after (`upper`) or before `pattern` in the database's order.
fn ordered<D: Dbm + ?Sized>(
    db: &D,
    upper: bool,
    inclusive: bool,
    pattern: &[u8],
    capacity: usize,
) -> Result<Vec<Vec<u8>>> {
    let mut cursor = db.iter()?;
    let edge = if inclusive { Edge::Inclusive } else { Edge::Exclusive };
    if upper {
        cursor.jump_upper(pattern, edge)?;
    } else {
        cursor.jump_lower(pattern, edge)?;
    }
    let mut found = Vec::new();
    while found.len() < capacity {
        let Some((key, _)) = cursor.get()? else { break };
        found.push(key);
        if upper {
            cursor.next()?;
        } else {
            cursor.previous()?;
        }
    }
    Ok(found)
}

/// Every key `matches` takes, in the walk's order, up to `capacity`.
fn scan(walk: &mut Walk<'_>, capacity: usize, matches: impl Fn(&[u8]) -> bool) -> Result<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    walk(&mut |key| {
        if found.len() < capacity && matches(key) {
            found.push(key.to_vec());
        }
    })?;
    Ok(found)
}

/// The `capacity` keys of least `distance`, ties in byte order.
fn nearest(walk: &mut Walk<'_>, capacity: usize, distance: impl Fn(&[u8]) -> usize) -> Result<Vec<Vec<u8>>> {
    // A max-heap of the best so far: its top is the first to give way.
    let mut best: BinaryHeap<(usize, Vec<u8>)> = BinaryHeap::new();
    walk(&mut |key| {
        let d = distance(key);
        if best.len() < capacity {
            best.push((d, key.to_vec()));
        } else if best.peek().is_some_and(|top| (d, key) < (top.0, &top.1[..])) {
            best.pop();
            best.push((d, key.to_vec()));
        }
    })?;
    let mut sorted: Vec<Reverse<(usize, Vec<u8>)>> = best.into_iter().map(Reverse).collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    Ok(sorted.into_iter().map(|Reverse((_, key))| key).collect())
}

/// Whether `text` contains `pattern`; with `whole_word`, only between two
/// ASCII non-alphanumerics (or the text's ends).
fn contains(text: &[u8], pattern: &[u8], whole_word: bool) -> bool {
    if pattern.len() > text.len() {
        return false;
    }
    (0..=text.len() - pattern.len()).any(|at| {
        text[at..].starts_with(pattern)
            && (!whole_word || {
                let end = at + pattern.len();
                (at == 0 || !text[at - 1].is_ascii_alphanumeric())
                    && (end == text.len() || !text[end].is_ascii_alphanumeric())
            })
    })
}

/// The Levenshtein distance of `a` and `b`: the fewest insertions,
/// deletions and substitutions of one element that turn one into the other.
pub fn edit_distance<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    // One row of the table at a time: row[j] is the distance of a[..i] and b[..j].
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let next = (diagonal + usize::from(x != y)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_itself() {
        for name in NAMES.into_iter().filter(|&n| n != "regex" || cfg!(feature = "regex")) {
            assert_eq!(name.parse::<SearchMode>().unwrap().to_string(), name);
        }
        if !cfg!(feature = "regex") {
            let err = "regex".parse::<SearchMode>().unwrap_err();
            assert!(err.message().contains("Cargo feature `regex`"), "{err}");
        }
        let err = "bogus".parse::<SearchMode>().unwrap_err();
        assert!(err.message().contains("unknown search mode \"bogus\""), "{err}");
    }

    #[test]
    fn edit_distance_counts_each_kind_of_edit() {
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
        assert_eq!(edit_distance(b"", b"abc"), 3);
        assert_eq!(edit_distance(b"abc", b""), 3);
        assert_eq!(edit_distance(b"flaw", b"lawn"), 2);
        let a: Vec<char> = "日本".chars().collect();
        let b: Vec<char> = "日本語".chars().collect();
        assert_eq!(edit_distance(&a, &b), 1);
        assert_eq!(edit_distance("日本".as_bytes(), "日本語".as_bytes()), 3);
    }

    #[test]
    fn whole_words_need_boundaries_on_both_sides() {
        assert!(contains(b"an apple", b"apple", true));
        assert!(contains(b"apple.pie", b"apple", true));
        assert!(!contains(b"pineapple", b"apple", true));
        assert!(!contains(b"apples", b"apple", true));
        assert!(contains(b"apples apple", b"apple", true));
        assert!(contains(b"x", b"", false));
    }
}
