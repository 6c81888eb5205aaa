//! Ruby strings to bytes and back. A key or value is any Ruby String (or
//! object with `to_str`), taken byte for byte whatever its encoding; what
//! comes back is a new String tagged ASCII-8BIT (binary), or the encoding
//! the database was opened with (`encoding:`), never transcoded.

use magnus::encoding::{EncodingCapable, Index};
use magnus::{Error, RArray, RString, Ruby};

/// The bytes of a key or value (a copy: the string may change or move
/// while the database runs a block).
pub fn bytes(s: RString) -> Vec<u8> {
    s.to_bytes().into()
}

/// Optional bytes: `nil` is absence.
pub fn opt_bytes(s: Option<RString>) -> Option<Vec<u8>> {
    s.map(bytes)
}

/// A new String of `data`, binary or tagged `encoding`.
pub fn string(ruby: &Ruby, encoding: Option<Index>, data: &[u8]) -> Result<RString, Error> {
    let s = ruby.str_from_slice(data);
    if let Some(encoding) = encoding {
        s.enc_associate(encoding)?;
    }
    Ok(s)
}

/// The bytes of every String of `list` (a TypeError names what was not one).
pub fn byte_list(list: RArray) -> Result<Vec<Vec<u8>>, Error> {
    (0..list.len()).map(|i| list.entry::<RString>(i as isize).map(bytes)).collect()
}

/// Keys with optional values, owned.
pub type BytePairs = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// The pairs of `list`, an Array of `[key, value]` Arrays; a nil value
/// (allowed only with `nil_value`) is `None`.
pub fn byte_pairs(ruby: &Ruby, list: RArray, nil_value: bool) -> Result<BytePairs, Error> {
    let mut pairs = Vec::with_capacity(list.len());
    for i in 0..list.len() {
        let pair = list.entry::<RArray>(i as isize)?;
        if pair.len() != 2 {
            return Err(Error::new(
                ruby.exception_arg_error(),
                format!("a record must be a [key, value] pair, not {} elements", pair.len()),
            ));
        }
        let key = bytes(pair.entry::<RString>(0)?);
        let value = if nil_value {
            opt_bytes(pair.entry::<Option<RString>>(1)?)
        } else {
            Some(bytes(pair.entry::<RString>(1)?))
        };
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// Borrowed views of [`byte_pairs`]' pairs.
pub fn pair_refs(pairs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<(&[u8], Option<&[u8]>)> {
    pairs.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect()
}
