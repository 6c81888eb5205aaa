//! The record checksum mode (the reference's `record_crc_mode`): how much of
//! a record's checksum every read verifies.
//!
//! Every record of the hash format carries a CRC-32 of its sizes, key and
//! value whatever the mode: it is what lets a restore tell a torn or damaged
//! record from a whole one, and a restore always checks all 32 bits. The mode,
//! chosen when the file is created and kept in its header, adds the check to
//! every ordinary read: of the low 8, 16 or all 32 bits of that CRC-32. The
//! narrower modes exist because the reference names them; they save no space
//! here and miss more damage (one in 256 or 65,536 changes goes unseen, against
//! one in 4 billion), so 32 is the one to choose.

/// Which bits of each record's CRC-32 every read verifies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecordCrcMode {
    /// Reads trust the records; only a restore checks them.
    #[default]
    None,
    /// Every read compares the low 8 bits of the record's CRC-32.
    Crc8,
    /// Every read compares the low 16 bits of the record's CRC-32.
    Crc16,
    /// Every read compares the record's whole CRC-32.
    Crc32,
}

impl RecordCrcMode {
    /// Every mode, the widest last.
    pub const ALL: [RecordCrcMode; 4] =
        [RecordCrcMode::None, RecordCrcMode::Crc8, RecordCrcMode::Crc16, RecordCrcMode::Crc32];

    /// The bits a read compares: 0, 8, 16 or 32, as the file's header stores it.
    pub fn bits(self) -> u8 {
        match self {
            RecordCrcMode::None => 0,
            RecordCrcMode::Crc8 => 8,
            RecordCrcMode::Crc16 => 16,
            RecordCrcMode::Crc32 => 32,
        }
    }

    /// The mode that compares `bits` bits, if there is one.
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

    /// The bits of a CRC-32 this mode compares, as a mask.
    #[inline]
    pub(crate) fn mask(self) -> u32 {
        match self {
            RecordCrcMode::None => 0,
            RecordCrcMode::Crc8 => 0xff,
            RecordCrcMode::Crc16 => 0xffff,
            RecordCrcMode::Crc32 => u32::MAX,
        }
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
            assert_eq!(mode.mask().count_ones(), u32::from(mode.bits()));
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
