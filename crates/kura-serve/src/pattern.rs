//! Key patterns of KEYS and SCAN's MATCH, as Redis writes them (`*`, `?`,
//! `[abc]`, `[^a-z]`, `\` escaping), matched by `globset` on the key's bytes.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

/// A compiled key pattern.
pub struct KeyPattern(Option<GlobMatcher>);

impl KeyPattern {
    /// Compiles `pattern`; `*` matches every key without a look. A pattern
    /// must be UTF-8 text (keys need not be).
    pub fn new(pattern: &[u8]) -> Result<KeyPattern, String> {
        if pattern == b"*" {
            return Ok(KeyPattern(None));
        }
        let text =
            std::str::from_utf8(pattern).map_err(|_| "ERR a key pattern must be UTF-8 text".to_string())?;
        let glob = GlobBuilder::new(text)
            .literal_separator(false)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| format!("ERR invalid key pattern: {e}"))?;
        Ok(KeyPattern(Some(glob.compile_matcher())))
    }

    /// Whether `key` matches.
    pub fn matches(&self, key: &[u8]) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_match(Path::new(OsStr::from_bytes(key))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_as_redis_does() {
        let p = KeyPattern::new(b"user:*").unwrap();
        assert!(p.matches(b"user:1") && p.matches(b"user:a/b") && !p.matches(b"users"));
        let p = KeyPattern::new(b"h?llo").unwrap();
        assert!(p.matches(b"hello") && !p.matches(b"heello"));
        let p = KeyPattern::new(b"h[^e]llo").unwrap();
        assert!(p.matches(b"hallo") && !p.matches(b"hello"));
        let p = KeyPattern::new(b"a\\*").unwrap();
        assert!(p.matches(b"a*") && !p.matches(b"ab"));
        assert!(KeyPattern::new(b"*").unwrap().matches(&[0xff, 0]));
    }
}
