//! The reference's flat record file: what `tkrzw_dbm_util export` writes by
//! default and what its on-memory databases (TinyDBM, BabyDBM, CacheDBM,
//! StdHashDBM, StdTreeDBM) write at synchronization.
//!
//! ```text
//! record: magic (0xFF data, 0xFE metadata), length (varint), bytes
//! data records alternate: key, value, key, value, …
//! metadata (the on-memory databases write one first): length-prefixed
//!   names and values, "class" naming the database class that wrote it
//! ```
//!
//! The format has no header, count or checksum: a clean file is one whose
//! records read through to its end with every key followed by its value.

use super::bytes::{broken, Bytes};
use crate::error::Result;

const MAGIC_DATA: u8 = 0xFF;
const MAGIC_METADATA: u8 = 0xFE;

/// Whether `head`, a file's first bytes, can begin a flat record file: a
/// magic byte and a length, each record's data fitting in `file_size`.
pub(super) fn sniff(head: &[u8], file_size: u64) -> bool {
    let Some((&magic, rest)) = head.split_first() else { return false };
    if magic != MAGIC_DATA && magic != MAGIC_METADATA {
        return false;
    }
    let mut b = Bytes::new(rest);
    matches!(b.varint("a length"), Ok(n) if n < file_size)
}

/// The records of a flat file.
pub(super) struct FlatRecords<'a> {
    /// The metadata the writer left (`class`, `num_records`, …).
    pub metadata: Vec<(String, String)>,
    pub records: Vec<(&'a [u8], &'a [u8])>,
}

/// Reads the flat file `data`: every record, or an error naming the offset
/// of the first one that does not read.
pub(super) fn read(data: &[u8]) -> Result<FlatRecords<'_>> {
    let mut b = Bytes::new(data);
    let mut metadata = Vec::new();
    let mut records = Vec::new();
    let mut key: Option<&[u8]> = None;
    while b.remaining() > 0 {
        let at = b.position();
        let wrap = |e: crate::error::Error| broken(format!("the record at offset {at}: {}", e.message()));
        let magic = b.take(1, "its magic byte").map_err(wrap)?[0];
        let bytes = b.sized("its data").map_err(wrap)?;
        match magic {
            MAGIC_DATA => match key.take() {
                None => key = Some(bytes),
                Some(k) => records.push((k, bytes)),
            },
            MAGIC_METADATA => {
                let mut m = Bytes::new(bytes);
                while m.remaining() > 0 {
                    let name = m.sized("a metadata name").map_err(wrap)?;
                    let value = m.sized("a metadata value").map_err(wrap)?;
                    metadata.push((
                        String::from_utf8_lossy(name).into_owned(),
                        String::from_utf8_lossy(value).into_owned(),
                    ));
                }
            }
            other => return Err(wrap(broken(format!("its magic byte 0x{other:02x} is not a record's")))),
        }
    }
    if key.is_some() {
        return Err(broken("it ends with a key that has no value: the file is truncated".to_string()));
    }
    Ok(FlatRecords { metadata, records })
}
