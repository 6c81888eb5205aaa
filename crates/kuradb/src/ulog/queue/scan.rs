//! Reading one record of a queue file at an offset, for the reader and for
//! the writer's check of the last file at open.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::format::{checksum_holds, decode_head, Head, RECORD_HEADER};
use crate::error::{Error, Result};

/// What lies at an offset of a queue file.
#[derive(Debug)]
pub(crate) enum Next {
    /// A whole record with a right checksum, ending at `end`.
    Record { timestamp: u64, message: Vec<u8>, end: u64 },
    /// Nothing more: the file ends here, or only zeros follow.
    End,
    /// A record begun but not whole: being written, or cut by a crash.
    Partial,
    /// Bytes that are no record, or a record whose checksum is wrong.
    Broken(String),
}

/// Reads the record of `file` (of `len` bytes, at `path`) at `offset`.
pub(crate) fn read_next(file: &File, path: &Path, offset: u64, len: u64) -> Result<Next> {
    if offset >= len {
        return Ok(Next::End);
    }
    let io = |e| Error::io("reading the update log", path, e);
    let mut head = [0u8; RECORD_HEADER];
    let avail = (len - offset).min(RECORD_HEADER as u64) as usize;
    let mut reader = file;
    reader.seek(SeekFrom::Start(offset)).map_err(io)?;
    reader.read_exact(&mut head[..avail]).map_err(io)?;
    if avail < RECORD_HEADER {
        return Ok(if head[..avail].iter().all(|&b| b == 0) { Next::End } else { Next::Partial });
    }
    let (timestamp, size) = match decode_head(&head) {
        Head::Record { timestamp, size } => (timestamp, size),
        Head::Zero => return zero_tail(file, path, offset + RECORD_HEADER as u64, len),
        Head::Broken => return Ok(Next::Broken(format!("no record at offset {offset}"))),
    };
    let end = offset + RECORD_HEADER as u64 + u64::from(size) + 1;
    if end > len {
        return Ok(Next::Partial);
    }
    let mut body = vec![0u8; size as usize + 1];
    reader.read_exact(&mut body).map_err(io)?;
    let sum = body.pop().unwrap_or_default();
    if !checksum_holds(&head, &body, sum) {
        return Ok(Next::Broken(format!("the record at offset {offset} fails its checksum")));
    }
    Ok(Next::Record { timestamp, message: body, end })
}

/// `End` if only zeros follow `from`, else `Broken`.
fn zero_tail(file: &File, path: &Path, from: u64, len: u64) -> Result<Next> {
    let mut reader = file;
    let mut buf = vec![0u8; 8192];
    let mut at = from;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        reader.read_exact(&mut buf[..n]).map_err(|e| Error::io("reading the update log", path, e))?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(Next::Broken(format!("no record at offset {}", from - RECORD_HEADER as u64)));
        }
        at += n as u64;
    }
    Ok(Next::End)
}
