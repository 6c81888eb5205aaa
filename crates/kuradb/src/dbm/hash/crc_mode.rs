//! The record checksum mode (the reference's `record_crc_mode`): whether
//! every read of a record verifies its checksum.
//!
//! Every record of the hash format carries a CRC-32 of its sizes, key and
//! value whatever the mode: it is what lets a restore tell a torn or damaged
//! record from a whole one, and a restore always checks it. The mode, chosen
//! when the file is created and kept in its header, adds the check to every
//! ordinary read. The reference stores a checksum of 8, 16 or 32 bits, the
//! narrower ones to save space; here the 32 bits are stored anyway, so each
//! of its three widths verifies all of them: a check of fewer bits would cost
//! the same and let more damage through (one change in 256 or 65,536, and
//! not even every single flipped bit). The width is kept as given, so the
//! file names the mode the reference would.

/// Whether every read verifies each record's CRC-32, and the width the
/// reference would give that checksum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecordCrcMode {
    /// Reads trust the records; only a restore checks them.
    #[default]
    None,
    /// The reference's 8-bit checksum: every read verifies the record's CRC-32.
    Crc8,
    /// The reference's 16-bit checksum: every read verifies the record's CRC-32.
    Crc16,
    /// Every read verifies the record's CRC-32.
    Crc32,
}

impl RecordCrcMode {
    /// Every mode, the widest last.
    pub const ALL: [RecordCrcMode; 4] =
        [RecordCrcMode::None, RecordCrcMode::Crc8, RecordCrcMode::Crc16, RecordCrcMode::Crc32];

    /// The checksum's width in the reference's terms: 0, 8, 16 or 32, as the
    /// file's header stores it.
    pub fn bits(self) -> u8 {
        match self {
            RecordCrcMode::None => 0,
            RecordCrcMode::Crc8 => 8,
            RecordCrcMode::Crc16 => 16,
            RecordCrcMode::Crc32 => 32,
        }
    }

    /// The mode of width `bits`, if there is one.
    pub fn from_bits(bits: u8) -> Option<RecordCrcMode> {
        RecordCrcMode::ALL.into_iter().find(|m| m.bits() == bits)
    }

    /// The mode's name as `inspect` shows it, in the reference's words:
    /// `none`, `crc-8`, `crc-16` or `crc-32`.
    pub fn name(self) -> &'static str {
        match self {
            RecordCrcMode::None => "none",
            RecordCrcMode::Crc8 => "crc-8",
            RecordCrcMode::Crc16 => "crc-16",
            RecordCrcMode::Crc32 => "crc-32",
        }
    }

    /// The mode a parameter names, in kuradb's words or the reference's
    /// (`none`, `8`, `crc-16`, `RECORD_CRC_32`, …; `default` and `false` are
    /// none, `true` is 32), ignoring case.
    pub fn from_name(name: &str) -> Option<RecordCrcMode> {
        let lower = name.trim().to_ascii_lowercase();
        let bare =
            lower.trim_start_matches("record_").trim_start_matches("crc").trim_start_matches(['-', '_']);
        match bare {
            "none" | "0" | "false" | "default" => Some(RecordCrcMode::None),
            "8" => Some(RecordCrcMode::Crc8),
            "16" => Some(RecordCrcMode::Crc16),
            "32" | "true" => Some(RecordCrcMode::Crc32),
            _ => None,
        }
    }

    /// Whether reads verify anything.
    #[inline]
    pub fn is_on(self) -> bool {
        self != RecordCrcMode::None
    }
}

impl std::fmt::Display for RecordCrcMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_bits_and_its_name() {
        for mode in RecordCrcMode::ALL {
            assert_eq!(RecordCrcMode::from_bits(mode.bits()), Some(mode));
            assert_eq!(RecordCrcMode::from_name(mode.name()), Some(mode));
        }
        for bits in [1, 7, 9, 24, 64, 255] {
            assert_eq!(RecordCrcMode::from_bits(bits), None, "{bits} bits");
        }
    }

    /// The names a parameter may give: kuradb's, the reference's enum names
    /// and its utilities' spellings.
    #[test]
    fn the_reference_names_are_accepted_and_others_refused() {
        let cases = [
            ("none", RecordCrcMode::None),
            ("0", RecordCrcMode::None),
            ("RECORD_CRC_NONE", RecordCrcMode::None),
            ("crc_none", RecordCrcMode::None),
            ("default", RecordCrcMode::None),
            ("8", RecordCrcMode::Crc8),
            ("crc8", RecordCrcMode::Crc8),
            ("crc_8", RecordCrcMode::Crc8),
            ("RECORD_CRC_8", RecordCrcMode::Crc8),
            (" Crc-16 ", RecordCrcMode::Crc16),
            ("record_crc_16", RecordCrcMode::Crc16),
            ("32", RecordCrcMode::Crc32),
            ("crc32", RecordCrcMode::Crc32),
            ("true", RecordCrcMode::Crc32),
        ];
        for (name, mode) in cases {
            assert_eq!(RecordCrcMode::from_name(name), Some(mode), "{name:?}");
        }
        for name in ["", "7", "64", "crc", "sha256", "-1", "on"] {
            assert_eq!(RecordCrcMode::from_name(name), None, "{name:?}");
        }
    }
}
