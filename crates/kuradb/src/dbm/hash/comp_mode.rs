//! The record compression mode (the reference's `record_comp_mode`): the
//! codec every stored value of a hash database, and every page of a tree
//! database, passes through. Chosen when the file is created (or rebuilt)
//! and kept in byte 14 of its header, so a reopen needs no option.

#[cfg(any(feature = "zstd", feature = "lz4", feature = "zlib", feature = "lzma"))]
use super::codec;
use super::codec::Codec;
use crate::error::{Error, ErrorKind, Result};

/// How stored values are compressed. More modes may come: a match on it
/// needs a wildcard arm. What kuradb knows of each mode is its row in
/// the registry of modes (`MODES`).
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

/// What a mode's dictionary is, if the mode takes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DictionaryKind {
    /// No dictionary (mode none).
    None,
    /// A dictionary in the codec's own format, trained whole (zstd's).
    Own,
    /// Raw content the codec takes as a preset dictionary: the last `size`
    /// bytes of a trained one (see `dictionary.rs`).
    Preset { size: usize },
}

/// One mode's row in [`MODES`]: what the file format says of it, and its
/// codec.
pub(super) struct ModeSpec {
    pub(super) mode: RecordCompMode,
    /// Its number in the file's header (byte 14), never reused.
    pub(super) byte: u8,
    /// Its name, as `inspect` shows it; also the Cargo feature of its codec.
    pub(super) name: &'static str,
    /// The other names a parameter may give it (after `record_`/`comp_`
    /// prefixes are taken off, ignoring case).
    pub(super) aliases: &'static [&'static str],
    pub(super) dictionary: DictionaryKind,
    /// Whether the mode came with format version 3 (preset dictionaries):
    /// an unencrypted file of it is never of an older version.
    pub(super) since_presets: bool,
    /// Its codec, in a build with the mode's feature.
    pub(super) codec: Option<&'static dyn Codec>,
}

/// A codec where the Cargo feature `$feature` is on, `None` otherwise.
macro_rules! built {
    ($feature:literal, $codec:expr) => {{
        #[cfg(feature = $feature)]
        let codec: Option<&'static dyn Codec> = Some(&$codec);
        #[cfg(not(feature = $feature))]
        let codec: Option<&'static dyn Codec> = None;
        codec
    }};
}

/// The registry of compression modes, in the order of [`RecordCompMode`]'s
/// variants: every per-mode fact is read from here (see `codec/mod.rs`,
/// "Adding a mode").
pub(super) static MODES: [ModeSpec; 5] = [
    ModeSpec {
        mode: RecordCompMode::None,
        byte: 0,
        name: "none",
        aliases: &["default", "no", "false", ""],
        dictionary: DictionaryKind::None,
        since_presets: false,
        codec: None,
    },
    ModeSpec {
        mode: RecordCompMode::Zstd,
        byte: 1,
        name: "zstd",
        aliases: &["zstandard"],
        dictionary: DictionaryKind::Own,
        since_presets: false,
        codec: built!("zstd", codec::zstd::Zstd),
    },
    ModeSpec {
        mode: RecordCompMode::Lz4,
        byte: 2,
        name: "lz4",
        aliases: &[],
        dictionary: DictionaryKind::Preset { size: 4 << 10 },
        since_presets: false,
        codec: built!("lz4", codec::lz4::Lz4),
    },
    ModeSpec {
        mode: RecordCompMode::Zlib,
        byte: 3,
        name: "zlib",
        aliases: &["deflate"],
        // Half of lz4's: DEFLATE hashes its preset dictionary again at
        // every compression (see `dictionary.rs`).
        dictionary: DictionaryKind::Preset { size: 2 << 10 },
        since_presets: false,
        codec: built!("zlib", codec::zlib::Zlib),
    },
    ModeSpec {
        mode: RecordCompMode::Lzma,
        byte: 4,
        name: "lzma",
        aliases: &["lzma2", "xz"],
        // LZMA's match finder inserts every byte of the preset dictionary
        // at every compression (see `dictionary.rs`).
        dictionary: DictionaryKind::Preset { size: 2 << 10 },
        since_presets: true,
        codec: built!("lzma", codec::lzma::Lzma),
    },
];

impl RecordCompMode {
    /// Every mode, in the order of their header numbers.
    pub fn all() -> impl Iterator<Item = RecordCompMode> {
        MODES.iter().map(|spec| spec.mode)
    }

    /// Every mode that compresses.
    pub fn compressing() -> impl Iterator<Item = RecordCompMode> {
        RecordCompMode::all().filter(|mode| mode.is_on())
    }

    /// The mode's row in [`MODES`].
    pub(super) fn spec(self) -> &'static ModeSpec {
        &MODES[self as usize]
    }

    /// The mode's number in the file's header (byte 14).
    pub fn byte(self) -> u8 {
        self.spec().byte
    }

    /// The mode whose header number is `byte`, if there is one.
    pub fn from_byte(byte: u8) -> Option<RecordCompMode> {
        MODES.iter().find(|spec| spec.byte == byte).map(|spec| spec.mode)
    }

    /// The mode's name as `inspect` shows it: `none`, `zstd`, `lz4`, `zlib`
    /// or `lzma`.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The mode a parameter names, in kuradb's words or the reference's
    /// (`zstd`, `RECORD_COMP_LZ4`, `comp_zlib`, `default`, …), ignoring
    /// case. Unknown names are errors that say which modes exist.
    pub fn from_name(name: &str) -> Result<RecordCompMode> {
        let lower = name.trim().to_ascii_lowercase();
        let bare = lower.trim_start_matches("record_").trim_start_matches("comp_");
        let spec = MODES.iter().find(|spec| spec.name == bare || spec.aliases.contains(&bare));
        let Some(spec) = spec else {
            let names: Vec<&str> = MODES.iter().map(|spec| spec.name).collect();
            let (last, others) = names.split_last().unwrap_or((&"none", &[]));
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("record_comp_mode {name:?} is not a mode: use {} or {last}", others.join(", ")),
            ));
        };
        spec.mode.check_built().map(|()| spec.mode)
    }

    /// Whether this build has the mode's codec: each is a Cargo feature of
    /// kuradb named as the mode (`zstd`, `lz4`, `zlib`, `lzma`), on by default.
    pub fn is_built(self) -> bool {
        !self.is_on() || self.spec().codec.is_some()
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

    /// The registry's rows are in the variants' order (`spec` indexes it
    /// by variant), with distinct numbers and names, and a codec for every
    /// mode that compresses in a build with its feature.
    #[test]
    fn the_registry_has_one_row_per_mode_in_order() {
        for (i, spec) in MODES.iter().enumerate() {
            assert_eq!(spec.mode as usize, i, "{}", spec.name);
            assert_eq!(MODES.iter().filter(|s| s.byte == spec.byte).count(), 1, "{}", spec.name);
            assert_eq!(MODES.iter().filter(|s| s.name == spec.name).count(), 1, "{}", spec.name);
            assert_eq!(spec.dictionary == DictionaryKind::None, !spec.mode.is_on(), "{}", spec.name);
        }
        assert_eq!(RecordCompMode::compressing().count(), MODES.len() - 1);
    }

    #[test]
    fn every_mode_round_trips_through_its_byte_and_its_name() {
        for mode in RecordCompMode::all() {
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
        for mode in RecordCompMode::compressing().filter(|m| !m.is_built()) {
            let err = RecordCompMode::from_name(mode.name()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NotImplemented, "{mode}");
            assert!(err.to_string().contains(&format!("feature `{}`", mode.name())), "{err}");
        }
    }
}
