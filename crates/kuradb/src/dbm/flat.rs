//! The flat file of the on-memory databases: every record, one after another.
//!
//! An on-memory database opened with a path reads its flat file at open and
//! writes it whole at synchronize and at close. The layout:
//!
//! ```text
//! header (24 bytes): magic "KuraFlat", version u32 LE (1), record count u64 LE,
//!                    CRC-32 of the 20 bytes before it (u32 LE)
//! records:           key length, value length (LEB128 varints), key, value
//! trailer (4 bytes): CRC-32 of every record byte (u32 LE)
//! ```
//!
//! The file is written under a temporary name beside the real one, made
//! durable if asked, and renamed over it: a crash leaves the old file or the
//! new one, never half of either. A reader checks every length against the
//! bytes that remain, so a truncated or damaged file is an error naming the
//! problem and never a huge allocation or a panic.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::file::temp_beside;
use crate::varint::leb128;

const MAGIC: &[u8; 8] = b"KuraFlat";
const VERSION: u32 = 1;
const HEADER_SIZE: usize = 24;
const BUFFER_SIZE: usize = 1 << 20;

/// Whether `head`, a file's first bytes, begins a flat file.
pub(crate) fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Reads the flat file at `path`, calling `f` with each record in file order.
/// Answers the number of records.
pub(crate) fn read(path: &Path, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<u64> {
    let file = File::open(path).map_err(|e| Error::io("open of the flat file", path, e))?;
    let size = file.metadata().map_err(|e| Error::io("stat of the flat file", path, e))?.len();
    let mut reader = FlatReader { input: BufReader::with_capacity(BUFFER_SIZE, file), left: size, path };
    let header = reader.take_array::<HEADER_SIZE>("the header")?;
    if &header[..8] != MAGIC {
        return Err(reader.broken("it is not a kuradb flat file (bad magic)".to_string()));
    }
    if crc32fast::hash(&header[..20]) != u32::from_le_bytes(header[20..24].try_into().unwrap_or_default()) {
        return Err(reader.broken("its header's checksum does not match".to_string()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().unwrap_or_default());
    if version != VERSION {
        return Err(reader.broken(format!("its format version {version} is not the known {VERSION}")));
    }
    let count = u64::from_le_bytes(header[12..20].try_into().unwrap_or_default());
    let mut crc = crc32fast::Hasher::new();
    let mut buf = Vec::new();
    for i in 0..count {
        let what = || format!("record {} of {count}", i + 1);
        buf.clear();
        let klen = reader.varint(&mut buf, &what)?;
        let vlen = reader.varint(&mut buf, &what)?;
        let heads = buf.len();
        let body = klen.checked_add(vlen).filter(|&n| n <= reader.left).ok_or_else(|| {
            reader.broken(format!("it ends inside {} (its lengths go past the end)", what()))
        })?;
        buf.resize(heads + body as usize, 0);
        reader.fill(&mut buf[heads..], &what)?;
        crc.update(&buf);
        let key_end = heads + klen as usize;
        f(&buf[heads..key_end], &buf[key_end..])?;
    }
    let trailer = reader.take_array::<4>("the trailer")?;
    if crc.finalize() != u32::from_le_bytes(trailer) {
        return Err(reader.broken("its records' checksum does not match: the data is damaged".to_string()));
    }
    if reader.left > 0 {
        return Err(reader.broken(format!("{} bytes follow its end", reader.left)));
    }
    Ok(count)
}

struct FlatReader<'p> {
    input: BufReader<File>,
    /// Bytes of the file not read yet.
    left: u64,
    path: &'p Path,
}

impl FlatReader<'_> {
    fn broken(&self, why: String) -> Error {
        Error::new(ErrorKind::BrokenData, format!("the flat file {} is broken: {why}", self.path.display()))
    }

    fn fill(&mut self, out: &mut [u8], what: &dyn Fn() -> String) -> Result<()> {
        if (out.len() as u64) > self.left {
            return Err(self.broken(format!("it ends inside {}", what())));
        }
        self.input.read_exact(out).map_err(|e| Error::io("read of the flat file", self.path, e))?;
        self.left -= out.len() as u64;
        Ok(())
    }

    fn take_array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        self.fill(&mut out, &|| what.to_string())?;
        Ok(out)
    }

    /// Reads a varint, keeping its bytes in `raw` for the checksum.
    fn varint(&mut self, raw: &mut Vec<u8>, what: &dyn Fn() -> String) -> Result<u64> {
        let mut decoder = leb128::Decoder::default();
        loop {
            let [b] =
                self.take_array::<1>("").map_err(|_| self.broken(format!("it ends inside {}", what())))?;
            raw.push(b);
            match decoder.push(b) {
                Ok(Some(n)) => return Ok(n),
                Ok(None) => {}
                Err(_) => return Err(self.broken(format!("a length of {} is too long", what()))),
            }
        }
    }
}

/// Where records go while a flat file is written.
pub(crate) struct FlatWriter {
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
    count: u64,
    scratch: Vec<u8>,
}

impl FlatWriter {
    /// Adds one record.
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        self.scratch.clear();
        leb128::put(&mut self.scratch, key.len() as u64);
        leb128::put(&mut self.scratch, value.len() as u64);
        self.crc.update(&self.scratch);
        self.crc.update(key);
        self.crc.update(value);
        self.out.write_all(&self.scratch)?;
        self.out.write_all(key)?;
        self.out.write_all(value)?;
        self.count += 1;
        Ok(())
    }
}

fn header(count: u64) -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..20].copy_from_slice(&count.to_le_bytes());
    let crc = crc32fast::hash(&h[..20]);
    h[20..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Writes a flat file at `path` with the records `fill` puts, atomically:
/// under a temporary name, then renamed over `path`. With `hard` the file
/// and the rename reach the device before this returns.
pub(crate) fn write(
    path: &Path,
    hard: bool,
    fill: impl FnOnce(&mut FlatWriter) -> std::io::Result<()>,
) -> Result<()> {
    let (temp, _) = write_beside(path, hard, fill)?;
    install(&temp, path, hard)
}

/// Writes a flat file with the records `fill` puts under a temporary name
/// beside `path`, for [`install`] to put in its place; answers the name and
/// the file, still open. With `hard` the file reaches the device first.
pub(crate) fn write_beside(
    path: &Path,
    hard: bool,
    fill: impl FnOnce(&mut FlatWriter) -> std::io::Result<()>,
) -> Result<(PathBuf, File)> {
    let temp = temp_beside(path, "flat");
    write_at(&temp, hard, fill).map(|file| (temp, file))
}

/// Makes an empty flat file at `path` unless a file is there already,
/// without ever replacing one: written under a name of this process's own
/// and linked into place, which fails if the path has been taken meanwhile.
pub(crate) fn create_empty(path: &Path) -> Result<()> {
    let temp = temp_beside(path, &format!("flat-new-{}", std::process::id()));
    drop(write_at(&temp, false, |_| Ok(()))?);
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(Error::io("creation of the flat file", path, e))
        }
        _ => Ok(()),
    }
}

/// Writes a flat file with the records `fill` puts at `temp`, answering it
/// still open (and removing it on a failure).
fn write_at(
    temp: &Path,
    hard: bool,
    fill: impl FnOnce(&mut FlatWriter) -> std::io::Result<()>,
) -> Result<File> {
    let written = (|| -> std::io::Result<File> {
        let file = File::create(temp)?;
        let mut w = FlatWriter {
            out: BufWriter::with_capacity(BUFFER_SIZE, file),
            crc: crc32fast::Hasher::new(),
            count: 0,
            scratch: Vec::new(),
        };
        // The count is known only at the end: a placeholder now, the real header after.
        w.out.write_all(&header(0))?;
        fill(&mut w)?;
        let crc = w.crc.finalize();
        w.out.write_all(&crc.to_le_bytes())?;
        let mut file = w.out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header(w.count))?;
        if hard {
            file.sync_all()?;
        }
        Ok(file)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(temp);
        Error::io("write of the flat file", temp, e)
    })
}

/// Renames the flat file written at `temp` over `path` (removing `temp` if
/// that fails); with `hard` the rename reaches the device before this returns.
pub(crate) fn install(temp: &Path, path: &Path, hard: bool) -> Result<()> {
    std::fs::rename(temp, path).map_err(|e| {
        let _ = std::fs::remove_file(temp);
        Error::io("rename of the new flat file", path, e)
    })?;
    if hard {
        sync_directory(path)?;
    }
    Ok(())
}

/// Makes a rename in the directory of `path` durable.
fn sync_directory(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let handle = File::open(dir).map_err(|e| Error::io("open of the directory", dir, e))?;
    handle.sync_all().map_err(|e| Error::io("synchronization of the directory", dir, e))
}

/// The error of a read-only processor that asked for a change.
pub(crate) fn refused_change() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a read-only process asked to change a record")
}

#[cfg(test)]
mod tests {
    use super::*;

    type Records = Vec<(Vec<u8>, Vec<u8>)>;

    fn write_all(path: &Path, records: &Records) {
        write(path, true, |w| records.iter().try_for_each(|(k, v)| w.put(k, v))).unwrap();
    }

    fn read_all(path: &Path) -> Result<Records> {
        let mut out = Vec::new();
        let n = read(path, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(())
        })?;
        assert_eq!(n as usize, out.len());
        Ok(out)
    }

    #[test]
    fn records_round_trip_with_empty_binary_and_large_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.flat");
        let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 + i / 255) as u8).collect();
        let records: Records = vec![
            (vec![], vec![]),
            (b"k".to_vec(), vec![]),
            (vec![], b"v".to_vec()),
            (vec![0, 255, 0x80, 10], vec![0; 200]),
            (b"large".to_vec(), big),
        ];
        write_all(&path, &records);
        assert_eq!(read_all(&path).unwrap(), records);
        assert!(!temp_beside(&path, "flat").exists(), "the temporary file is renamed away");
        write_all(&path, &Vec::new());
        assert_eq!(read_all(&path).unwrap(), Vec::new());
    }

    #[test]
    fn every_truncation_and_flipped_byte_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("casket.flat");
        let records: Records =
            (0..20u8).map(|i| (vec![i; i as usize], vec![i ^ 0x5a; 3 * i as usize])).collect();
        write_all(&path, &records);
        let good = std::fs::read(&path).unwrap();
        let broken = dir.path().join("broken.flat");
        for cut in 0..good.len() {
            std::fs::write(&broken, &good[..cut]).unwrap();
            let err = read_all(&broken).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenData, "cut at {cut}: {err}");
            assert!(err.to_string().contains("broken.flat"), "{err}");
        }
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x41;
            std::fs::write(&broken, &bad).unwrap();
            let err = read_all(&broken).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::BrokenData, "byte {at}: {err}");
        }
        let mut longer = good.clone();
        longer.push(0);
        std::fs::write(&broken, &longer).unwrap();
        assert!(read_all(&broken).unwrap_err().to_string().contains("1 bytes follow its end"));
        std::fs::write(&broken, b"not a flat file at all, just text").unwrap();
        assert!(read_all(&broken).unwrap_err().to_string().contains("bad magic"));
    }

    #[test]
    fn a_huge_length_is_refused_without_allocating_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.flat");
        let mut bytes = header(1).to_vec();
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0]);
        std::fs::write(&path, &bytes).unwrap();
        let err = read_all(&path).unwrap_err();
        assert!(err.to_string().contains("it ends inside record 1 of 1"), "{err}");
    }
}
