//! The hash database's parameters, as [`Params`](crate::dbm::params::Params)
//! name them: its file, opening and tuning, and what a rebuild may change.

use super::{CipherKey, HashOptions, RebuildParams, RecordCompMode, RecordCrcMode, RestoreMode, UpdateMode};
use crate::dbm::params::{bad_value, Taker};
use crate::error::Result;

impl HashOptions {
    /// `base` with the parameters a hash database takes (also the node store
    /// of a tree): the file and its opening, `num_buckets` (or `buckets`),
    /// `align_pow`, `offset_width`, `fbp_capacity`, `min_read_size`,
    /// `auto_grow`, `cache_buckets`, `update_mode`, `record_crc_mode`, `record_comp_mode`,
    /// `restore_mode` and `cipher_key`.
    pub(crate) fn take_params(mut self, t: &mut Taker<'_>) -> Result<HashOptions> {
        (self.file, self.open) = t.file_and_open()?;
        if let Some(n) = t.number(&["num_buckets", "buckets"])? {
            self.num_buckets = n;
        }
        if let Some(n) = t.number(&["align_pow"])? {
            self.align_pow = n;
        }
        if let Some(n) = t.number(&["offset_width"])? {
            self.offset_width = n;
        }
        if let Some(n) = t.number(&["fbp_capacity", "fbp_cap"])? {
            self.fbp_cap = n;
        }
        if let Some(n) = t.number(&["min_read_size"])? {
            self.min_read_size = n;
        }
        if let Some(b) = t.flag(&["auto_grow"])? {
            self.auto_grow = b;
        }
        if let Some(b) = t.flag(&["cache_buckets"])? {
            self.cache_buckets = b;
        }
        if let Some(mode) = update_mode(t)? {
            self.update_mode = mode;
        }
        if let Some(mode) = record_crc_mode(t)? {
            self.record_crc_mode = mode;
        }
        if let Some(mode) = record_comp_mode(t)? {
            self.record_comp_mode = mode;
        }
        if let Some(key) = cipher_key(t) {
            self.cipher_key = Some(key);
        }
        if let Some((name, value)) = t.take(&["restore_mode"]) {
            self.restore = restore_mode(name, value)?;
        }
        Ok(self)
    }
}

impl RebuildParams {
    /// What a rebuild's parameters change: `num_buckets`, `align_pow`,
    /// `offset_width`, `update_mode`, `record_crc_mode`, `record_comp_mode`
    /// and `cipher_key` (empty: written unencrypted).
    pub(crate) fn take_params(t: &mut Taker<'_>) -> Result<RebuildParams> {
        Ok(RebuildParams {
            num_buckets: t.number(&["num_buckets", "buckets"])?,
            align_pow: t.number(&["align_pow"])?,
            offset_width: t.number(&["offset_width"])?,
            update_mode: update_mode(t)?,
            record_crc_mode: record_crc_mode(t)?,
            record_comp_mode: record_comp_mode(t)?,
            cipher_key: cipher_key(t),
        })
    }
}

/// The `update_mode` parameter, in kuradb's words or the reference's
/// (`UPDATE_IN_PLACE`, `UPDATE_APPENDING`).
fn update_mode(t: &mut Taker<'_>) -> Result<Option<UpdateMode>> {
    let Some((name, value)) = t.take(&["update_mode"]) else { return Ok(None) };
    match value.trim().to_ascii_lowercase().trim_start_matches("update_") {
        "in_place" | "inplace" => Ok(Some(UpdateMode::InPlace)),
        "appending" | "append" => Ok(Some(UpdateMode::Appending)),
        _ => Err(bad_value(name, value, "in_place or appending")),
    }
}

/// The `record_crc_mode` parameter (or `record_crc`), in kuradb's words or
/// the reference's (`none`, `8`, `crc-16`, `RECORD_CRC_32`, …).
pub(crate) fn record_crc_mode(t: &mut Taker<'_>) -> Result<Option<RecordCrcMode>> {
    let Some((name, value)) = t.take(&["record_crc_mode", "record_crc"]) else { return Ok(None) };
    match RecordCrcMode::from_name(value) {
        Some(mode) => Ok(Some(mode)),
        None => Err(bad_value(name, value, "none, 8, 16 or 32")),
    }
}

/// The `record_comp_mode` parameter (or `record_comp`), in kuradb's words or
/// the reference's (`zstd`, `RECORD_COMP_LZ4`, …).
pub(crate) fn record_comp_mode(t: &mut Taker<'_>) -> Result<Option<RecordCompMode>> {
    let Some((_, value)) = t.take(&["record_comp_mode", "record_comp"]) else { return Ok(None) };
    RecordCompMode::from_name(value).map(Some)
}

/// The `cipher_key` parameter: the key the values are encrypted with (its
/// text's bytes; an empty one is none).
pub(crate) fn cipher_key(t: &mut Taker<'_>) -> Option<CipherKey> {
    t.take(&["cipher_key"]).map(|(_, value)| CipherKey::from(value))
}

/// The `restore_mode` parameter: a mode in kuradb's words or the
/// reference's (`RESTORE_DEFAULT`, `RESTORE_SYNC`, `RESTORE_READ_ONLY`,
/// `RESTORE_NOOP`), with the reference's flags after `:` or `|`.
/// `RESTORE_NO_SHORTCUTS` and `RESTORE_WITH_HARDSYNC` ask for what every
/// kuradb restore does: it scans the whole file, and the restored file is
/// durable before it takes the database's name.
fn restore_mode(name: &str, value: &str) -> Result<RestoreMode> {
    let mut mode = RestoreMode::Automatic;
    for word in value.split([':', '|', '+']).map(|w| w.trim().to_ascii_lowercase()) {
        mode = match word.trim_start_matches("restore_") {
            "" | "no_shortcuts" | "with_hardsync" => continue,
            "default" | "auto" | "automatic" => RestoreMode::Automatic,
            "sync" | "synchronized" => RestoreMode::Synchronized,
            "read_only" | "readonly" => RestoreMode::ReadOnly,
            "noop" | "refuse" | "none" => RestoreMode::Refuse,
            _ => return Err(bad_value(name, value, "auto, sync, read_only or refuse")),
        };
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_modes_take_the_references_names_and_flags() {
        let mode = |v: &str| restore_mode("restore_mode", v);
        assert_eq!(mode("RESTORE_DEFAULT").unwrap(), RestoreMode::Automatic);
        assert_eq!(mode("RESTORE_SYNC").unwrap(), RestoreMode::Synchronized);
        assert_eq!(mode("RESTORE_READ_ONLY").unwrap(), RestoreMode::ReadOnly);
        assert_eq!(mode("RESTORE_NOOP").unwrap(), RestoreMode::Refuse);
        assert_eq!(
            mode("RESTORE_SYNC|RESTORE_NO_SHORTCUTS|RESTORE_WITH_HARDSYNC").unwrap(),
            RestoreMode::Synchronized
        );
        assert_eq!(mode("RESTORE_READ_ONLY:RESTORE_NO_SHORTCUTS").unwrap(), RestoreMode::ReadOnly);
        assert_eq!(mode("RESTORE_WITH_HARDSYNC").unwrap(), RestoreMode::Automatic);
        assert!(mode("RESTORE_SOMETIMES").is_err());
    }
}
