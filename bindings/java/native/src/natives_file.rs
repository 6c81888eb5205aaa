//! The natives of the reference's `File` (over kuradb's file layer), and the
//! flat-record export and import of a database through such a file.

use std::io::{BufReader, BufWriter, Write};

use jni::objects::{JByteArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use kuradb::dbm::flat_records::{export_keys_as_lines, export_to_flat_records, import_from_flat_records};
use kuradb::dbm::{Dbm, SearchMode};
use kuradb::{ErrorKind, StdTreeDbm};
use kuradb_binding::file::check_writable;

use crate::convert::{bytes, new_byte_arrays, params, string};
use crate::file_object::{Appender, FileObject, Reader};
use crate::handle::{free, object, Database};
use crate::shared::{unshared, Shared};
use crate::throw::{check, fail, native};

/// The handle type of a `tkrzw.File`.
pub type FileHandle = Shared<FileObject>;

native! {
    /// Opens a file; `pairs` are the reference's parameters, names and values in turn.
    fn Java_io_kuradb_Native_fileOpen(env, path: JString<'l>, writable: jboolean, pairs: JObjectArray<'l, JString<'l>>) -> jlong {
        let path = string(env, &path, "the path")?;
        let params = params(env, &pairs)?;
        let file = check(env, FileObject::open(&path, writable, &params))?;
        Ok(Shared::into_handle(file, "file"))
    }
}

native! {
    /// Closes the file (padding it if asked); a closed one is left as it is.
    fn Java_io_kuradb_Native_fileClose(env, handle: jlong) -> () {
        let shared: &FileHandle = object(env, handle)?;
        let Some(file) = shared.take() else { return Ok(()) };
        let closed = unshared(file, shared.what()).and_then(FileObject::close);
        check(env, closed)
    }
}

native! {
    /// Frees the handle's memory; the Java object's Cleaner calls it once.
    fn Java_io_kuradb_Native_fileFree(_env, handle: jlong) -> () {
        free::<FileHandle>(handle);
        Ok(())
    }
}

native! {
    /// The `size` bytes at `offset`; past the end is an INFEASIBLE error.
    fn Java_io_kuradb_Native_fileRead(env, handle: jlong, offset: jlong, size: jlong) -> JByteArray<'l> {
        let (Ok(offset), Ok(size)) = (u64::try_from(offset), usize::try_from(size)) else {
            return fail(env, ErrorKind::InvalidArgument, "the offset and the size must not be negative");
        };
        let data = object::<FileHandle>(env, handle)?.with(env, |env, f| {
            // Checked first, so that a huge size past the end allocates nothing.
            if offset.saturating_add(size as u64) > f.file.size() {
                return fail(env, ErrorKind::Infeasible, &format!("reading {size} bytes at {offset} goes past the end of the file ({} bytes)", f.file.size()));
            }
            let mut buf = vec![0u8; size];
            let _access = f.cutting.read();
            check(env, f.file.read(offset, &mut buf))?;
            Ok(buf)
        })?;
        env.byte_array_from_slice(&data)
    }
}

native! {
    /// Writes `data` at `offset`, extending the file if it ends past it.
    fn Java_io_kuradb_Native_fileWrite(env, handle: jlong, offset: jlong, data: JByteArray<'l>) -> () {
        let data = bytes(env, &data, "the data")?;
        let Ok(offset) = u64::try_from(offset) else {
            return fail(env, ErrorKind::InvalidArgument, "the offset must not be negative");
        };
        object::<FileHandle>(env, handle)?.with(env, |env, f| {
            let _access = f.cutting.read();
            check(env, check_writable(f.file.as_ref()).and_then(|()| f.file.write(offset, &data)))
        })
    }
}

native! {
    /// Writes `data` at the end; answers the offset it went to.
    fn Java_io_kuradb_Native_fileAppend(env, handle: jlong, data: JByteArray<'l>) -> jlong {
        let data = bytes(env, &data, "the data")?;
        let off = object::<FileHandle>(env, handle)?.with(env, |env, f| {
            let _access = f.cutting.read();
            check(env, check_writable(f.file.as_ref()).and_then(|()| f.file.append(&data)))
        })?;
        Ok(i64::try_from(off).unwrap_or(i64::MAX))
    }
}

native! {
    /// Sets the file's size, cutting it or extending it with zeros.
    fn Java_io_kuradb_Native_fileTruncate(env, handle: jlong, size: jlong) -> () {
        let Ok(size) = u64::try_from(size) else {
            return fail(env, ErrorKind::InvalidArgument, "the size must not be negative");
        };
        object::<FileHandle>(env, handle)?.with(env, |env, f| {
            let _cut = f.cutting.write();
            check(env, check_writable(f.file.as_ref()).and_then(|()| f.file.truncate(size)))
        })
    }
}

native! {
    /// Hands the file's buffered data to the OS (`hard`: to the device).
    fn Java_io_kuradb_Native_fileSynchronize(env, handle: jlong, hard: jboolean) -> () {
        object::<FileHandle>(env, handle)?.with(env, |env, f| check(env, f.file.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })))
    }
}

native! {
    /// The file's logical size.
    fn Java_io_kuradb_Native_fileGetSize(env, handle: jlong) -> jlong {
        let size = object::<FileHandle>(env, handle)?.with(env, |_, f| Ok(f.file.size()))?;
        Ok(i64::try_from(size).unwrap_or(i64::MAX))
    }
}

native! {
    /// The file's path.
    fn Java_io_kuradb_Native_filePath(env, handle: jlong) -> JString<'l> {
        let path = object::<FileHandle>(env, handle)?.with(env, |_, f| Ok(f.file.path().to_string_lossy().into_owned()))?;
        env.new_string(path)
    }
}

native! {
    /// The file implementation's reference class name, or null if the file is closed.
    fn Java_io_kuradb_Native_fileClassName(env, handle: jlong) -> JString<'l> {
        let shared: &FileHandle = object(env, handle)?;
        if !shared.is_open() {
            return Ok(JString::default());
        }
        let name = shared.with(env, |_, f| Ok(f.class_name()))?;
        env.new_string(name)
    }
}

native! {
    /// The lines of the file matching `pattern` by `mode` (the database search modes).
    fn Java_io_kuradb_Native_fileSearch(env, handle: jlong, mode: JString<'l>, pattern: JByteArray<'l>, capacity: jint) -> JObjectArray<'l, JByteArray<'l>> {
        let mode = string(env, &mode, "the mode")?;
        let pattern = bytes(env, &pattern, "the pattern")?;
        let mode = check(env, mode.parse::<SearchMode>())?;
        let capacity = usize::try_from(capacity.max(0)).unwrap_or(0);
        let lines = object::<FileHandle>(env, handle)?.with(env, |env, f| check(env, search_lines(f, mode, &pattern, capacity)))?;
        new_byte_arrays(env, lines.iter().map(|l| Some(l.as_slice())))
    }
}

/// The lines matching: the file's distinct lines become the keys of a tree
/// in memory, which the database search then scans.
fn search_lines(
    f: &FileObject,
    mode: SearchMode,
    pattern: &[u8],
    capacity: usize,
) -> kuradb::Result<Vec<Vec<u8>>> {
    let size = usize::try_from(f.file.size()).map_err(|_| {
        kuradb::Error::new(ErrorKind::Infeasible, "the file is too large to search in memory")
    })?;
    let mut text = vec![0u8; size];
    let access = f.cutting.read();
    f.file.read(0, &mut text)?;
    drop(access);
    let lines = StdTreeDbm::new(&Default::default());
    let body = text.strip_suffix(b"\n").unwrap_or(&text);
    if !text.is_empty() {
        for line in body.split(|&b| b == b'\n') {
            lines.set(line, b"")?;
        }
    }
    lines.search(mode, pattern, capacity)
}

native! {
    /// Appends every record of the database to the file as flat records, or
    /// (`keys_only`) every key as a line.
    fn Java_io_kuradb_Native_exportToFileObject(env, handle: jlong, file: jlong, keys_only: jboolean) -> () {
        let file = object::<FileHandle>(env, file)?.share(env)?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, export_into(&**db, &file, keys_only)))
    }
}

native! {
    /// Sets every record of the file's flat records; answers how many.
    fn Java_io_kuradb_Native_importFromFileObject(env, handle: jlong, file: jlong) -> jlong {
        let file = object::<FileHandle>(env, file)?.share(env)?;
        let n = object::<Database>(env, handle)?.with(env, |env, db| check(env, import_from(&**db, &file)))?;
        Ok(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// Appends the records (or keys) of `db` to `file`.
pub fn export_into(db: &dyn Dbm, file: &FileObject, keys_only: bool) -> kuradb::Result<()> {
    let _access = file.cutting.read();
    let mut out = BufWriter::new(Appender(&*file.file));
    if keys_only {
        export_keys_as_lines(db, &mut out)?;
    } else {
        export_to_flat_records(db, &mut out)?;
    }
    out.flush().map_err(|e| kuradb::Error::new(ErrorKind::System, format!("writing to the file: {e}")))
}

/// Sets every record of `file`'s flat records in `db`.
pub fn import_from(db: &dyn Dbm, file: &FileObject) -> kuradb::Result<u64> {
    let _access = file.cutting.read();
    import_from_flat_records(db, &mut BufReader::new(Reader::new(&*file.file)))
}
