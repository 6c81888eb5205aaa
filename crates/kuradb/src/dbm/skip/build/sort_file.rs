//! The items of a sort file, where sorted updates wait on disk: 1 for a
//! record or 0 for a removal, the key's and value's sizes (LEB128), the
//! key, the value.

use std::io::{Read, Write};
use std::path::Path;

use super::MAX_ITEM;
use crate::error::{Error, ErrorKind, Result};
use crate::varint::leb128;

/// Writes one update to a sort file: 1 for a record or 0 for a removal, the
/// key's and value's sizes as varints, the key, the value.
pub(super) fn write_item(
    out: &mut impl Write,
    head: &mut Vec<u8>,
    key: &[u8],
    value: Option<&[u8]>,
    path: &Path,
) -> Result<()> {
    head.clear();
    head.push(u8::from(value.is_some()));
    leb128::put(head, key.len() as u64);
    leb128::put(head, value.map_or(0, |v| v.len() as u64));
    let written = out
        .write_all(head)
        .and_then(|_| out.write_all(key))
        .and_then(|_| out.write_all(value.unwrap_or_default()));
    written.map_err(|e| Error::io("writing a sort file", path, e))
}

pub(super) fn read_varint(reader: &mut impl Read, path: &Path) -> Result<u64> {
    let mut decoder = leb128::Decoder::default();
    loop {
        let mut b = [0u8; 1];
        reader.read_exact(&mut b).map_err(|e| Error::io("reading a sort file", path, e))?;
        match decoder.push(b[0]) {
            Ok(Some(n)) => return Ok(n),
            Ok(None) => {}
            Err(e) => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("the sort file {} is damaged: {e}", path.display()),
                ))
            }
        }
    }
}

pub(super) fn read_exact(reader: &mut impl Read, path: &Path, out: &mut Vec<u8>, len: u64) -> Result<()> {
    if len > MAX_ITEM as u64 {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!("the sort file {} is damaged", path.display()),
        ));
    }
    out.resize(len as usize, 0);
    reader.read_exact(out).map_err(|e| Error::io("reading a sort file", path, e))
}
