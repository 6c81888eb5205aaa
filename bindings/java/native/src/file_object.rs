//! The file behind a `tkrzw.File`: one of kuradb's [`File`] implementations,
//! opened from the reference's parameters, with `std::io` views of it for
//! the flat-record export and import.

use std::io::{Read, Write};

use kuradb::file::{FileKind, LockWait, OpenOptions};
use kuradb::{ErrorKind, File, FileSpec, Params};
use parking_lot::RwLock;

/// An open file and what closing it must do.
pub struct FileObject {
    /// The file.
    pub file: Box<dyn File>,
    /// Pad the file's end to a multiple of its block size on close (the
    /// `padding` access option, which the file layer leaves to its user).
    padding: bool,
    /// Held shared by every access and exclusively by a truncation: the
    /// file layer leaves it to its user not to cut a region while it is
    /// read (a memory-mapped read of a cut region would crash the JVM).
    pub cutting: RwLock<()>,
}

impl FileObject {
    /// Opens `path` with the reference's parameters: a file implementation
    /// and its options (`file`, `block_size`, `access_options`, …), and
    /// `truncate`, `no_create`, `no_wait`, `no_lock`. Memory mapping without
    /// a whole-file lock is the default, as the reference's `File` has it
    /// (its `PolyFile` makes a `MemoryMapParallelFile` when `file` is not given).
    pub fn open(path: &str, writable: bool, params: &Params) -> kuradb::Result<FileObject> {
        let mut spec = FileSpec::new(FileKind::MmapParallel);
        // The reference's file waits for another process's lock unless told
        // `no_wait`; the compat layer keeps that.
        let mut options = if writable { OpenOptions::writer() } else { OpenOptions::reader() }.waiting();
        for (name, value) in params.iter() {
            if spec.set(name, value)? {
                continue;
            }
            match name {
                "truncate" => options.truncate = flag(name, value)? && writable,
                "no_create" => options.create = writable && !flag(name, value)?,
                "no_wait" => {
                    options.lock_wait = LockWait::from_choices(Some(flag(name, value)?), None, None)?
                }
                "no_lock" => options.no_lock = flag(name, value)?,
                _ => {
                    return Err(kuradb::Error::new(
                        ErrorKind::InvalidArgument,
                        format!("unknown parameter {name} for a file"),
                    ))
                }
            }
        }
        let file = spec.open(path, &options)?;
        Ok(FileObject { file, padding: spec.padding && writable, cutting: RwLock::new(()) })
    }

    /// Pads the file if asked to, then closes it.
    pub fn close(mut self) -> kuradb::Result<()> {
        if self.padding {
            let block = self.file.block_size().max(1);
            let size = self.file.size();
            let padded = size.div_ceil(block) * block;
            if padded != size {
                self.file.truncate(padded)?;
            }
        }
        self.file.close()
    }

    /// The implementation's class name, as the reference names it.
    pub fn class_name(&self) -> String {
        let inspected = self.file.inspect();
        inspected.into_iter().find(|(k, _)| k == "class").map(|(_, v)| v).unwrap_or_else(|| "File".into())
    }
}

/// A true-or-false parameter.
fn flag(name: &str, value: &str) -> kuradb::Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(kuradb::Error::new(
            ErrorKind::InvalidArgument,
            format!("parameter {name} must be true or false, not {value:?}"),
        )),
    }
}

/// Writes go to the end of the file, as the reference's export appends.
pub struct Appender<'a>(pub &'a dyn File);

impl Write for Appender<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.append(buf).map_err(std::io::Error::other)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads the file from its start to its logical end.
pub struct Reader<'a> {
    file: &'a dyn File,
    offset: u64,
}

impl<'a> Reader<'a> {
    /// A reader at the file's start.
    pub fn new(file: &'a dyn File) -> Reader<'a> {
        Reader { file, offset: 0 }
    }
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.file.size().saturating_sub(self.offset);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        self.file.read(self.offset, &mut buf[..n]).map_err(std::io::Error::other)?;
        self.offset += n as u64;
        Ok(n)
    }
}
