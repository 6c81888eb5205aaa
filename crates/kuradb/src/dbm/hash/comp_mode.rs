//! The record compression mode (the reference's `record_comp_mode`): the
//! codec every stored value of a hash database, and every page of a tree
//! database, passes through. Chosen when the file is created (or rebuilt)
//! and kept in byte 14 of its header, so a reopen needs no option.

use crate::error::{Error, ErrorKind, Result};

/// How stored values are compressed. More modes may come: a match on it
/// needs a wildcard arm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordCompMode {
    /// Values are stored as given, with no flag byte: the file is what it
    /// was before compression existed.
    #[default]
    None,
    /// Zstandard at level 3, with a dictionary trained from the file's own
    /// values once enough have been seen (see `docs/compression.md`).
    Zstd,
    /// LZ4 block format: the fastest, the least compression.
    Lz4,
    /// DEFLATE (the zlib mode of the reference) at level 6.
    Zlib,
    /// LZMA2 at level 6 (xz's, as the reference's lzma mode): the most
    /// compression, the slowest writes.
    Lzma,
}

impl RecordCompMode {
    /// Every mode.
    pub const ALL: [RecordCompMode; 5] = [
        RecordCompMode::None,
        RecordCompMode::Zstd,
        RecordCompMode::Lz4,
        RecordCompMode::Zlib,
        RecordCompMode::Lzma,
    ];
    /// Every mode that compresses.
    pub const COMPRESSING: [RecordCompMode; 4] =
        [RecordCompMode::Zstd, RecordCompMode::Lz4, RecordCompMode::Zlib, RecordCompMode::Lzma];

    /// The mode's number in the file's header (byte 14).
    pub fn byte(self) -> u8 {
        match self {
            RecordCompMode::None => 0,
            RecordCompMode::Zstd => 1,
            RecordCompMode::Lz4 => 2,
            RecordCompMode::Zlib => 3,
            RecordCompMode::Lzma => 4,
        }
    }

    /// The mode whose header number is `byte`, if there is one.
    pub fn from_byte(byte: u8) -> Option<RecordCompMode> {
        RecordCompMode::ALL.into_iter().find(|m| m.byte() == byte)
    }

    /// The mode's name as `inspect` shows it: `none`, `zstd`, `lz4`, `zlib`
    /// or `lzma`.
    pub fn name(self) -> &'static str {
        match self {
            RecordCompMode::None => "none",
            RecordCompMode::Zstd => "zstd",
            RecordCompMode::Lz4 => "lz4",
            RecordCompMode::Zlib => "zlib",
            RecordCompMode::Lzma => "lzma",
        }
    }

    /// The mode a parameter names, in kuradb's words or the reference's
    /// (`zstd`, `RECORD_COMP_LZ4`, `comp_zlib`, `default`, …), ignoring
    /// case. Unknown names are errors that say which modes exist.
    pub fn from_name(name: &str) -> Result<RecordCompMode> {
        let lower = name.trim().to_ascii_lowercase();
        let bare = lower.trim_start_matches("record_").trim_start_matches("comp_");
        match bare {
            "none" | "default" | "no" | "false" | "" => Ok(RecordCompMode::None),
            "zstd" | "zstandard" => Ok(RecordCompMode::Zstd),
            "lz4" => Ok(RecordCompMode::Lz4),
            "zlib" | "deflate" => Ok(RecordCompMode::Zlib),
            "lzma" | "lzma2" | "xz" => Ok(RecordCompMode::Lzma),
            _ => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("record_comp_mode {name:?} is not a mode: use none, zstd, lz4, zlib or lzma"),
            )),
        }
        .and_then(|mode| mode.check_built().map(|()| mode))
    }

    /// Whether this build has the mode's codec: each is a Cargo feature of
    /// kuradb named as the mode (`zstd`, `lz4`, `zlib`, `lzma`), on by default.
    pub fn is_built(self) -> bool {
        match self {
            RecordCompMode::None => true,
            RecordCompMode::Zstd => cfg!(feature = "zstd"),
            RecordCompMode::Lz4 => cfg!(feature = "lz4"),
            RecordCompMode::Zlib => cfg!(feature = "zlib"),
            RecordCompMode::Lzma => cfg!(feature = "lzma"),
        }
    }

    /// An error naming the Cargo feature if this build lacks the mode's codec.
    pub(crate) fn check_built(self) -> Result<()> {
        if self.is_built() {
            return Ok(());
        }
        Err(Error::needs_feature(format!("the record compression mode {self}"), self.name()))
    }

    /// Whether values are compressed (and so carry a flag byte).
    #[inline]
    pub fn is_on(self) -> bool {
        self != RecordCompMode::None
    }
}

impl std::fmt::Display for RecordCompMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_byte_and_its_name() {
        for mode in RecordCompMode::ALL {
            assert_eq!(RecordCompMode::from_byte(mode.byte()), Some(mode));
            if mode.is_built() {
                assert_eq!(RecordCompMode::from_name(mode.name()).unwrap(), mode);
            }
        }
        assert_eq!(RecordCompMode::from_byte(5), None);
        assert_eq!(RecordCompMode::from_byte(255), None);
    }

    /// The reference's enum names and its utilities' spellings are accepted.
    #[test]
    fn the_reference_names_are_accepted_and_others_refused() {
        let cases = [
            ("RECORD_COMP_ZSTD", RecordCompMode::Zstd),
            ("record_comp_lz4", RecordCompMode::Lz4),
            (" Zlib ", RecordCompMode::Zlib),
            ("RECORD_COMP_NONE", RecordCompMode::None),
            ("default", RecordCompMode::None),
            ("comp_zstd", RecordCompMode::Zstd),
            ("RECORD_COMP_LZMA", RecordCompMode::Lzma),
            ("xz", RecordCompMode::Lzma),
        ];
        for (name, mode) in cases.into_iter().filter(|(_, mode)| mode.is_built()) {
            assert_eq!(RecordCompMode::from_name(name).unwrap(), mode, "{name:?}");
        }
        for name in ["gzip", "brotli", "zstd9", "1"] {
            let err = RecordCompMode::from_name(name).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{name:?}");
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    /// A build without a mode's codec refuses the mode's name with an error
    /// naming the Cargo feature to build with.
    #[test]
    fn a_mode_this_build_lacks_is_refused_naming_its_feature() {
        for mode in RecordCompMode::COMPRESSING.into_iter().filter(|m| !m.is_built()) {
            let err = RecordCompMode::from_name(mode.name()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotImplemented, "{mode}");
            assert!(err.to_string().contains(&format!("feature `{}`", mode.name())), "{err}");
        }
    }
}
