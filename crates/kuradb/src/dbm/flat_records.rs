//! The reference's flat record format, as its `ExportToFlatRecords` and
//! `tkrzw_dbm_util export` (without `--tsv`) write it, and the exports and
//! imports of any database through it: [`export_to_flat_records`],
//! [`import_from_flat_records`], and [`export_keys_as_lines`] (one key a line).
//!
//! A flat record file is a sequence of records, each a key record followed
//! by a value record. A record is a magic byte (0xFF for data; 0xFE for
//! metadata, which an import skips and an export never writes), the data's
//! length as a big-endian base-128 number ([`crate::varint::base128`]: seven
//! bits a byte, the high bit set on every byte but the last) and the data. There is no header and no
//! checksum: a clean file is one whose records read through to its end with
//! every key followed by its value.
//!
//! ```
//! use kuradb::dbm::flat_records::{export_to_flat_records, import_from_flat_records};
//! use kuradb::dbm::Dbm;
//! use kuradb::{StdHashDbm, StdTreeDbm};
//! # fn main() -> kuradb::Result<()> {
//! let db = StdTreeDbm::new(&Default::default());
//! db.set(b"k1", b"v1")?;
//! let mut file = Vec::new();
//! export_to_flat_records(&db, &mut file)?;
//! assert_eq!(file, b"\xff\x02k1\xff\x02v1");
//! let copy = StdHashDbm::new(&Default::default());
//! assert_eq!(import_from_flat_records(&copy, &mut &file[..])?, 1);
//! assert_eq!(copy.get(b"k1")?.as_deref(), Some(&b"v1"[..]));
//! # Ok(())
//! # }
//! ```

use std::io::{BufRead, Read, Write};

use super::{Action, Dbm};
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};
use crate::varint::{base128, MAX_LEN};

const MAGIC_DATA: u8 = 0xFF;
const MAGIC_METADATA: u8 = 0xFE;

/// Writes one flat record (a key or a value) to `out`.
pub fn write_flat_record(out: &mut (impl Write + ?Sized), data: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 1 + MAX_LEN];
    head[0] = MAGIC_DATA;
    let len = base128::write(&mut head[1..], data.len() as u64);
    out.write_all(&head[..1 + len])?;
    out.write_all(data)
}

/// Reads flat records, counting the bytes consumed so that a damaged file
/// is reported with the offset of the damage.
pub struct FlatRecordReader<R> {
    input: R,
    offset: u64,
}

impl<R: BufRead> FlatRecordReader<R> {
    /// A reader at the start of `input`.
    pub fn new(input: R) -> FlatRecordReader<R> {
        FlatRecordReader { input, offset: 0 }
    }

    /// The bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next data record into `buf`, skipping metadata; `false` at a
    /// clean end of the input.
    pub fn next_record(&mut self, buf: &mut Vec<u8>) -> Result<bool> {
        loop {
            let start = self.offset;
            let mut magic = [0u8; 1];
            if self.read_some(&mut magic)? == 0 {
                return Ok(false);
            }
            if magic[0] != MAGIC_DATA && magic[0] != MAGIC_METADATA {
                return Err(broken(start, &format!("a record starts with byte 0x{:02x}", magic[0])));
            }
            let mut decoder = base128::Decoder::default();
            let len = loop {
                let mut b = [0u8; 1];
                if self.read_some(&mut b)? == 0 {
                    return Err(broken(start, "a record's length is cut short"));
                }
                match decoder.push(b[0]) {
                    Ok(Some(len)) => break len,
                    Ok(None) => {}
                    Err(e) => return Err(broken(start, &format!("a record's length is broken: {e}"))),
                }
            };
            buf.clear();
            // Read through `take` so that a damaged length cannot allocate more
            // than the input holds.
            let got = Read::read_to_end(&mut Read::take(&mut self.input, len), buf).map_err(read_error)?;
            self.offset += got as u64;
            if (got as u64) < len {
                return Err(broken(start, &format!("a record of {len} bytes ends after {got}")));
            }
            if magic[0] == MAGIC_DATA {
                return Ok(true);
            }
        }
    }

    /// The next key and value; `false` at a clean end of the input, an
    /// error if the input ends after a key.
    pub fn next_pair(&mut self, key: &mut Vec<u8>, value: &mut Vec<u8>) -> Result<bool> {
        if !self.next_record(key)? {
            return Ok(false);
        }
        if !self.next_record(value)? {
            return Err(broken(self.offset, "the last key has no value (the file is cut short)"));
        }
        Ok(true)
    }

    fn read_some(&mut self, byte: &mut [u8; 1]) -> Result<usize> {
        let n = Read::read(&mut self.input, byte).map_err(read_error)?;
        self.offset += n as u64;
        Ok(n)
    }
}

fn read_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::System, format!("reading the flat records: {e}"))
}

fn broken(offset: u64, what: &str) -> Error {
    Error::new(ErrorKind::BrokenData, format!("the flat record file is damaged at byte {offset}: {what}"))
}

/// Writes every record of `db`, in its order, to `out` as flat records.
/// The caller opens (and so truncates) the file and flushes `out`.
pub fn export_to_flat_records<D: Dbm + ?Sized>(db: &D, out: &mut (impl Write + ?Sized)) -> Result<()> {
    write_each(db, |key, value| write_flat_record(out, key).and_then(|()| write_flat_record(out, value)))
}

/// Sets every record of the flat records `input` holds in `db` (a later one
/// replaces an earlier one of the same key, except in a skip database, which
/// keeps both), in their order. Answers how many there were.
pub fn import_from_flat_records<D: Dbm + ?Sized>(db: &D, input: &mut (impl BufRead + ?Sized)) -> Result<u64> {
    let mut reader = FlatRecordReader::new(input);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut count = 0;
    while reader.next_pair(&mut key, &mut value)? {
        db.set(&key, &value)?;
        count += 1;
    }
    Ok(count)
}

/// Writes every key of `db`, in its order, to `out`, each followed by a
/// line feed. Keys are written as they are: one holding a line feed spans
/// two lines, as in the reference.
pub fn export_keys_as_lines<D: Dbm + ?Sized>(db: &D, out: &mut (impl Write + ?Sized)) -> Result<()> {
    write_each(db, |key, _| out.write_all(key).and_then(|()| out.write_all(b"\n")))
}

fn write_each<D: Dbm + ?Sized>(
    db: &D,
    mut write: impl FnMut(&[u8], &[u8]) -> std::io::Result<()>,
) -> Result<()> {
    let mut failure = None;
    db.process_each(Access::ReadOnly, &mut |key, value| {
        if failure.is_none() {
            failure = write(key, value).err();
        }
        Action::Keep
    })?;
    match failure {
        None => Ok(()),
        Some(e) => Err(Error::new(ErrorKind::System, format!("writing the export: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_with_every_length_width() {
        let records: Vec<Vec<u8>> = [0usize, 1, 127, 128, 200, 16383, 16384, 70000]
            .iter()
            .map(|&n| (0..n).map(|i| i as u8).collect())
            .collect();
        let mut file = Vec::new();
        for r in &records {
            write_flat_record(&mut file, r).unwrap();
        }
        let mut reader = FlatRecordReader::new(&file[..]);
        let mut buf = Vec::new();
        for r in &records {
            assert!(reader.next_record(&mut buf).unwrap());
            assert_eq!(&buf, r);
        }
        assert!(!reader.next_record(&mut buf).unwrap());
        assert_eq!(reader.offset(), file.len() as u64);
    }

    #[test]
    fn the_reference_layout_is_read_and_damage_is_reported() {
        // As `tkrzw_dbm_util export` writes k1=v1 and a 200-byte value.
        let mut file = b"\xfe\x01m\xff\x02k1\xff\x02v1\xff\x01k\xff\x81\x48".to_vec();
        file.extend([b'x'; 200]);
        let mut reader = FlatRecordReader::new(&file[..]);
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        while reader.next_record(&mut buf).unwrap() {
            seen.push(buf.clone());
        }
        assert_eq!(seen, [b"k1".to_vec(), b"v1".to_vec(), b"k".to_vec(), vec![b'x'; 200]]);
        let err = FlatRecordReader::new(&b"k1\tv1\n"[..]).next_record(&mut buf).unwrap_err();
        assert!(err.message().contains("at byte 0: a record starts with byte 0x6b"), "{err}");
        let err = FlatRecordReader::new(&b"\xff\x05abc"[..]).next_record(&mut buf).unwrap_err();
        assert!(err.message().contains("a record of 5 bytes ends after 3"), "{err}");
        let err = FlatRecordReader::new(&b"\xff\x01k"[..]).next_pair(&mut buf, &mut Vec::new()).unwrap_err();
        assert!(err.message().contains("the last key has no value"), "{err}");
    }
}
