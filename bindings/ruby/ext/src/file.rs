//! `Kuradb::File`: a file of kuradb's file layer (`kuradb::file`: memory
//! mapped or positional, with block I/O, direct I/O and the page cache as
//! options), read and written at offsets; `Tkrzw::File` is written in Ruby
//! over it. A DBM exports flat records and key lines into one and imports
//! flat records from one ([`Appender`], [`Reader`]), as the reference does.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use magnus::encoding::Index as Encoding;
use magnus::prelude::*;
use magnus::{function, method, Error, RArray, RModule, RString, Ruby};
use parking_lot::{Mutex, RwLock};

use kuradb::dbm::search::search_lines;
use kuradb::dbm::{Durability, SearchMode};
use kuradb::file::{File, FileSpec, LockWait, OpenOptions};
use kuradb::ErrorKind;

use kuradb_binding::file::check_writable;

use crate::convert::{bytes, string};
use crate::error::to_rb;
use crate::handle;
use crate::nogvl::released_if;

/// An open file, shared with the tasks of an AsyncDBM that write into it.
pub type SharedFile = Arc<Box<dyn File>>;

fn closed() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the file is not open")
}

/// Writes at the end of a file: each `write` is one [`File::append`].
pub struct Appender<'a>(pub &'a dyn File);

impl Write for Appender<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.append(data).map_err(io::Error::other)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads a file from its start to its logical size.
pub struct Reader<'a> {
    file: &'a dyn File,
    offset: u64,
}

impl<'a> Reader<'a> {
    pub fn new(file: &'a dyn File) -> Reader<'a> {
        Reader { file, offset: 0 }
    }
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.file.size().saturating_sub(self.offset);
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(0);
        }
        self.file.read(self.offset, &mut buf[..n]).map_err(io::Error::other)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// The flags of opening, with the rest of the parameters in a [`FileSpec`].
struct Opening {
    spec: FileSpec,
    options: OpenOptions,
    sync_hard: bool,
}

/// A number of seconds from a parameter.
fn seconds(name: &str, value: &str) -> kuradb::Result<f64> {
    value.trim().parse().map_err(|_| {
        kuradb::Error::new(
            ErrorKind::InvalidArgument,
            format!("{name} must be a number of seconds, not {value:?}"),
        )
    })
}

fn flag(name: &str, value: &str) -> kuradb::Result<bool> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(kuradb::Error::new(
            ErrorKind::InvalidArgument,
            format!("{name} must be true or false, not {value:?}"),
        )),
    }
}

/// Reads the parameters: `truncate`, `no_create`, `no_wait`, `wait`,
/// `lock_timeout` (seconds), `no_lock` and `sync_hard` (a hard
/// synchronization at close) are flags of opening;
/// every other one must be a file parameter (`file`, `block_size`,
/// `access_options`, …, see [`FileSpec::set`]).
fn opening(writable: bool, params: &[(String, String)]) -> kuradb::Result<Opening> {
    let mut spec = FileSpec::default();
    let mut options = if writable { OpenOptions::writer() } else { OpenOptions::reader() };
    let mut sync_hard = false;
    let (mut no_wait, mut wait, mut lock_timeout) = (None, None, None);
    for (name, value) in params {
        match name.as_str() {
            "truncate" => options.truncate = writable && flag(name, value)?,
            "no_create" => options.create = writable && !flag(name, value)?,
            "no_wait" => no_wait = Some(flag(name, value)?),
            "wait" => wait = Some(flag(name, value)?),
            "lock_timeout" => lock_timeout = Some(seconds(name, value)?),
            "no_lock" => options.no_lock = flag(name, value)?,
            "sync_hard" => sync_hard = flag(name, value)?,
            _ => {
                if !spec.set(name, value)? {
                    return Err(kuradb::Error::new(
                        ErrorKind::InvalidArgument,
                        format!("unknown file parameter {name:?}"),
                    ));
                }
            }
        }
    }
    spec.validate()?;
    options.lock_wait = LockWait::from_choices(no_wait, wait, lock_timeout)?;
    Ok(Opening { spec, options, sync_hard })
}

/// A file read and written at offsets, by any number of threads.
#[magnus::wrap(class = "Kuradb::File", free_immediately, size)]
pub struct RbFile {
    open: RwLock<Option<SharedFile>>,
    sync_hard: AtomicBool,
    concurrent: AtomicBool,
    encoding: Mutex<Option<Encoding>>,
}

impl RbFile {
    fn new() -> RbFile {
        RbFile {
            open: RwLock::new(None),
            sync_hard: AtomicBool::new(false),
            concurrent: AtomicBool::new(false),
            encoding: Mutex::new(None),
        }
    }

    /// The open file, for a DBM or an AsyncDBM task to write into or read.
    pub fn share(&self, ruby: &Ruby) -> Result<SharedFile, Error> {
        self.open.read().as_ref().map(Arc::clone).ok_or_else(|| to_rb(ruby, closed()))
    }

    /// Runs `f` on the open file, without the VM lock if `concurrent`.
    fn with<R: Send>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&dyn File) -> kuradb::Result<R> + Send,
    ) -> Result<R, Error> {
        let concurrent = self.concurrent.load(Ordering::Relaxed);
        handle::call(ruby, &self.open, concurrent, closed, |file| f(file.as_ref()))
    }

    fn open(
        ruby: &Ruby,
        rb_self: &Self,
        path: PathBuf,
        writable: bool,
        params: Vec<(String, String)>,
        encoding: Option<String>,
        concurrent: bool,
    ) -> Result<(), Error> {
        let encoding = encoding.map(|name| ruby.find_encindex(&name)).transpose()?;
        let opening = opening(writable, &params).map_err(|e| to_rb(ruby, e))?;
        let already = || kuradb::Error::new(ErrorKind::Infeasible, "the file is already open");
        if rb_self.is_open() {
            return Err(to_rb(ruby, already()));
        }
        // Opened before the lock is taken (see `Kuradb::Index#open`).
        let open = || opening.spec.open(&path, &opening.options);
        let mut file = released_if(concurrent, open).map_err(|e| to_rb(ruby, e))?;
        let mut slot = rb_self.open.write();
        if slot.is_some() {
            drop(slot);
            let _ = file.close();
            return Err(to_rb(ruby, already()));
        }
        *slot = Some(Arc::new(file));
        rb_self.sync_hard.store(opening.sync_hard, Ordering::Relaxed);
        rb_self.concurrent.store(concurrent, Ordering::Relaxed);
        *rb_self.encoding.lock() = encoding;
        Ok(())
    }

    fn close(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let Some(file) = rb_self.open.write().take() else { return Ok(()) };
        match Arc::try_unwrap(file) {
            Ok(mut file) => {
                let hard = rb_self.sync_hard.load(Ordering::Relaxed);
                let close = move || {
                    if hard {
                        file.synchronize(Durability::Hard)?;
                    }
                    file.close()
                };
                released_if(rb_self.concurrent.load(Ordering::Relaxed), close).map_err(|e| to_rb(ruby, e))
            }
            Err(file) => {
                *rb_self.open.write() = Some(file);
                Err(to_rb(
                    ruby,
                    kuradb::Error::new(
                        ErrorKind::Infeasible,
                        "the file is in use by an AsyncDBM task: wait for its future first",
                    ),
                ))
            }
        }
    }

    fn is_open(&self) -> bool {
        self.open.read().is_some()
    }

    fn is_writable(&self) -> bool {
        self.open.read().as_ref().is_some_and(|f| f.is_writable())
    }

    /// The `size` bytes at `offset`; reading past the end is an error.
    fn read(ruby: &Ruby, rb_self: &Self, offset: u64, size: usize) -> Result<RString, Error> {
        let data = rb_self.with(ruby, |f| {
            let mut buf = vec![0; size];
            f.read(offset, &mut buf)?;
            Ok(buf)
        })?;
        string(ruby, *rb_self.encoding.lock(), &data)
    }

    fn write(ruby: &Ruby, rb_self: &Self, offset: u64, data: RString) -> Result<(), Error> {
        let data = bytes(data);
        rb_self.with(ruby, |f| check_writable(f).and_then(|()| f.write(offset, &data)))
    }

    fn append(ruby: &Ruby, rb_self: &Self, data: RString) -> Result<u64, Error> {
        let data = bytes(data);
        rb_self.with(ruby, |f| check_writable(f).and_then(|()| f.append(&data)))
    }

    fn truncate(ruby: &Ruby, rb_self: &Self, size: u64) -> Result<(), Error> {
        rb_self.with(ruby, |f| check_writable(f).and_then(|()| f.truncate(size)))
    }

    fn synchronize(ruby: &Ruby, rb_self: &Self, hard: bool) -> Result<(), Error> {
        rb_self.with(ruby, |f| {
            f.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
        })
    }

    fn size(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        rb_self.with(ruby, |f| Ok(f.size()))
    }

    fn path(ruby: &Ruby, rb_self: &Self) -> Result<PathBuf, Error> {
        rb_self.with(ruby, |f| Ok(f.path().to_path_buf()))
    }

    /// The reference's class name of the implementation, for `to_s`.
    fn class_name(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        rb_self.with(ruby, |f| {
            let details = f.inspect();
            Ok(details.into_iter().find(|(k, _)| k == "class").map(|(_, v)| v).unwrap_or_default())
        })
    }

    /// The lines (without their line feeds) that `mode` matches.
    fn search(
        ruby: &Ruby,
        rb_self: &Self,
        mode: String,
        pattern: RString,
        capacity: usize,
    ) -> Result<RArray, Error> {
        let mode: SearchMode = mode.parse().map_err(|e| to_rb(ruby, e))?;
        let pattern = bytes(pattern);
        let lines = rb_self.with(ruby, |f| {
            let mut text = Vec::new();
            Reader::new(f).read_to_end(&mut text).map_err(|e| io_error(f.path(), e))?;
            search_lines(&text, mode, &pattern, capacity)
        })?;
        let encoding = *rb_self.encoding.lock();
        let found = ruby.ary_new_capa(lines.len());
        for line in lines {
            found.push(string(ruby, encoding, &line)?)?;
        }
        Ok(found)
    }
}

/// An I/O error of the adapters, which carry kuradb's own errors inside.
pub fn io_error(path: &Path, e: io::Error) -> kuradb::Error {
    match e.into_inner().map(|inner| inner.downcast::<kuradb::Error>()) {
        Some(Ok(inner)) => *inner,
        Some(Err(other)) => kuradb::Error::new(ErrorKind::System, format!("{}: {other}", path.display())),
        None => kuradb::Error::new(ErrorKind::System, format!("{}: I/O error", path.display())),
    }
}

/// Defines `Kuradb::File`.
pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("File", ruby.class_object())?;
    class.define_singleton_method("new", function!(RbFile::new, 0))?;
    class.define_method("_open", method!(RbFile::open, 5))?;
    class.define_method("close", method!(RbFile::close, 0))?;
    class.define_method("open?", method!(RbFile::is_open, 0))?;
    class.define_method("writable?", method!(RbFile::is_writable, 0))?;
    class.define_method("read", method!(RbFile::read, 2))?;
    class.define_method("write", method!(RbFile::write, 2))?;
    class.define_method("append", method!(RbFile::append, 1))?;
    class.define_method("truncate", method!(RbFile::truncate, 1))?;
    class.define_method("_synchronize", method!(RbFile::synchronize, 1))?;
    class.define_method("size", method!(RbFile::size, 0))?;
    class.define_method("path", method!(RbFile::path, 0))?;
    class.define_method("class_name", method!(RbFile::class_name, 0))?;
    class.define_method("_search", method!(RbFile::search, 3))?;
    Ok(())
}
