//! Reading one record of a queue file at an offset, for the reader and for
//! the writer's check of the last file at open.

use std::fs::File;
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

/// Reads the record of `file` (of `len` bytes, at `path`) at `offset`, with
/// positional reads: the fixed part, then the message and its checksum.
pub(crate) fn read_next(file: &File, path: &Path, offset: u64, len: u64) -> Result<Next> {
    if offset >= len {
        return Ok(Next::End);
    }
    let mut head = [0u8; RECORD_HEADER];
    let avail = (len - offset).min(RECORD_HEADER as u64) as usize;
    read_exact_at(file, path, &mut head[..avail], offset)?;
    if avail < RECORD_HEADER {
        return Ok(if head[..avail].iter().all(|&b| b == 0) { Next::End } else { Next::Partial });
    }
    let (timestamp, size) = match decode_head(&head) {
        Head::Record { timestamp, size } => (timestamp, size),
        Head::Zero => return zero_tail(file, path, offset, len),
        Head::Broken => return Ok(Next::Broken(format!("no record at offset {offset}"))),
    };
    let body_at = offset + RECORD_HEADER as u64;
    let end = body_at + u64::from(size) + 1;
    if end > len {
        return Ok(Next::Partial);
    }
    let mut body = vec![0u8; size as usize + 1];
    read_exact_at(file, path, &mut body, body_at)?;
    let sum = body.pop().unwrap_or_default();
    if !checksum_holds(&head, &body, sum) {
        return Ok(Next::Broken(format!("the record at offset {offset} fails its checksum")));
    }
    Ok(Next::Record { timestamp, message: body, end })
}

/// Fills `buf` from `offset`; the file ending first (cut meanwhile) is an error.
fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
    let done =
        crate::sys::read_at(file, buf, offset).map_err(|e| Error::io("reading the update log", path, e))?;
    if done < buf.len() {
        let cut = std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file ended sooner than its size said",
        );
        return Err(Error::io("reading the update log", path, cut));
    }
    Ok(())
}

/// `End` if only zeros follow `from` (where zeros stand for a record), else `Broken`.
fn zero_tail(file: &File, path: &Path, from: u64, len: u64) -> Result<Next> {
    let mut buf = vec![0u8; 8192];
    let mut at = from;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        read_exact_at(file, path, &mut buf[..n], at)?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(Next::Broken(format!("no record at offset {from}")));
        }
        at += n as u64;
    }
    Ok(Next::End)
}
