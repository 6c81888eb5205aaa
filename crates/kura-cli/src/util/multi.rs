//! `kura util get|set|remove --multi`: several records in one call of the
//! database's `*_multi` methods, as the reference's `--multi` calls its
//! `GetMulti`, `SetMulti` and `RemoveMulti`.

use std::ffi::OsString;

use kuradb::dbm::Dbm;
use kuradb::Result;

use super::records::json_line;
use super::Codec;
use crate::out::print_bytes;

/// Every argument decoded by `codec`.
pub fn decode_all<'a>(
    codec: Codec,
    words: impl IntoIterator<Item = &'a OsString>,
    what: &str,
) -> Result<Vec<Vec<u8>>> {
    words.into_iter().map(|w| codec.decode_arg(w, what)).collect()
}

/// Prints key TAB value (or a JSON object) for each of `keys` found, in the
/// order given; the values are read together, atomically.
pub fn get(db: &dyn Dbm, keys: &[Vec<u8>], codec: Codec, json: bool) -> Result<()> {
    let slices: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let values = db.get_multi(&slices)?;
    let mut text = Vec::new();
    for (key, value) in keys.iter().zip(values) {
        let Some(value) = value else { continue };
        if json {
            json_line(key, Some(&value), codec, &mut text);
        } else {
            codec.encode_field(key, &mut text);
            text.push(b'\t');
            codec.encode_field(&value, &mut text);
        }
        text.push(b'\n');
    }
    print_bytes(&text)
}

/// Sets the pairs of `words` (key, value, key, value, …) atomically, or
/// appends each value after `delimiter`.
pub fn set(db: &dyn Dbm, words: &[Vec<u8>], overwrite: bool, delimiter: Option<&[u8]>) -> Result<()> {
    let pairs: Vec<(&[u8], &[u8])> = words.chunks_exact(2).map(|p| (&p[0][..], &p[1][..])).collect();
    match delimiter {
        // kuradb has no append of several keys in one step: each is
        // appended in its own.
        Some(delimiter) => pairs.iter().try_for_each(|(key, value)| db.append(key, value, delimiter)),
        None if overwrite => db.set_multi(&pairs),
        None => db.insert_multi(&pairs),
    }
}
