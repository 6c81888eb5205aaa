//! The flat record format of `export --flat` and `import --flat`: exact bytes,
//! no escaping, the same layout as the reference's `tkrzw_dbm_util export`
//! without `--tsv`, so its exports import directly.
//!
//! The file is a sequence of records, each a key record followed by a value
//! record. A record is a magic byte (0xFF for data; 0xFE for metadata, which
//! is skipped on import and never written), the data's length as a
//! big-endian base-128 number (seven bits a byte, the high bit set on every
//! byte but the last) and the data.

use std::io::{BufRead, Write};

use kuradb::{Error, ErrorKind, Result};

const MAGIC_DATA: u8 = 0xFF;
const MAGIC_METADATA: u8 = 0xFE;
/// No length a varint of more bytes than this can hold fits in a `u64`.
const MAX_VARINT: usize = 10;

/// Writes one record (a key or a value).
pub fn write_record(out: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 1 + MAX_VARINT];
    head[0] = MAGIC_DATA;
    let mut digits = [0u8; MAX_VARINT];
    let mut n = data.len() as u64;
    let mut len = 0;
    loop {
        digits[len] = (n & 0x7f) as u8;
        len += 1;
        n >>= 7;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        head[1 + i] = if i + 1 < len { d | 0x80 } else { *d };
    }
    out.write_all(&head[..1 + len])?;
    out.write_all(data)
}

/// Reads flat records from `input`, counting the bytes consumed so that a
/// damaged file is reported with the offset of the damage.
pub struct FlatReader<R> {
    input: R,
    /// Bytes consumed so far.
    pub offset: u64,
}

impl<R: BufRead> FlatReader<R> {
    /// A reader at the start of `input`.
    pub fn new(input: R) -> FlatReader<R> {
        FlatReader { input, offset: 0 }
    }

    /// The next data record into `buf`; `false` at a clean end of the input.
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
            let mut len: u64 = 0;
            for i in 0.. {
                let mut b = [0u8; 1];
                if i == MAX_VARINT || self.read_some(&mut b)? == 0 {
                    return Err(broken(start, "a record's length is cut short or too long"));
                }
                len = len << 7 | u64::from(b[0] & 0x7f);
                if b[0] & 0x80 == 0 {
                    break;
                }
            }
            buf.clear();
            // Read through `take` so that a damaged length cannot allocate more
            // than the input holds.
            let got = std::io::Read::read_to_end(&mut std::io::Read::take(&mut self.input, len), buf)
                .map_err(|e| Error::new(ErrorKind::System, format!("reading the flat records: {e}")))?;
            self.offset += got as u64;
            if (got as u64) < len {
                return Err(broken(start, &format!("a record of {len} bytes ends after {got}")));
            }
            if magic[0] == MAGIC_DATA {
                return Ok(true);
            }
        }
    }

    fn read_some(&mut self, byte: &mut [u8; 1]) -> Result<usize> {
        let n = std::io::Read::read(&mut self.input, byte)
            .map_err(|e| Error::new(ErrorKind::System, format!("reading the flat records: {e}")))?;
        self.offset += n as u64;
        Ok(n)
    }
}

fn broken(offset: u64, what: &str) -> Error {
    Error::new(
        ErrorKind::BrokenData,
        format!("the flat record file is damaged at byte {offset}: {what} (a TSV file needs no --flat)"),
    )
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
            write_record(&mut file, r).unwrap();
        }
        let mut reader = FlatReader::new(&file[..]);
        let mut buf = Vec::new();
        for r in &records {
            assert!(reader.next_record(&mut buf).unwrap());
            assert_eq!(&buf, r);
        }
        assert!(!reader.next_record(&mut buf).unwrap());
        assert_eq!(reader.offset, file.len() as u64);
    }

    #[test]
    fn the_reference_layout_is_read_and_damage_is_reported() {
        // As `tkrzw_dbm_util export` writes k1=v1 and a 200-byte value.
        let mut file = b"\xfe\x01m\xff\x02k1\xff\x02v1\xff\x01k\xff\x81\x48".to_vec();
        file.extend([b'x'; 200]);
        let mut reader = FlatReader::new(&file[..]);
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        while reader.next_record(&mut buf).unwrap() {
            seen.push(buf.clone());
        }
        assert_eq!(seen, [b"k1".to_vec(), b"v1".to_vec(), b"k".to_vec(), vec![b'x'; 200]]);
        let err = FlatReader::new(&b"k1\tv1\n"[..]).next_record(&mut buf).unwrap_err();
        assert!(err.message().contains("at byte 0: a record starts with byte 0x6b"), "{err}");
        let err = FlatReader::new(&b"\xff\x05abc"[..]).next_record(&mut buf).unwrap_err();
        assert!(err.message().contains("a record of 5 bytes ends after 3"), "{err}");
    }
}
