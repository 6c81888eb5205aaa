//! The reference's export and import of a database as a file
//! (`kuradb::dbm::flat_records`), as methods of `Kuradb::DBM`:
//! `export_to_flat_records(path)`, `import_from_flat_records(path)` and
//! `export_keys_as_lines(path)`, each taking a path or a `Kuradb::File`
//! (which `Tkrzw::DBM` and `Tkrzw::AsyncDBM` pass for a `Tkrzw::File`).

use std::fs;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use magnus::prelude::*;
use magnus::{method, Error, RClass, Ruby, TryConvert, Value};

use kuradb::dbm::flat_records::{export_keys_as_lines, export_to_flat_records, import_from_flat_records};
use kuradb::dbm::Dbm;

use crate::database::Database;
use crate::file::{io_error, Appender, RbFile, Reader, SharedFile};

/// Where records go or come from: a path (a new file replaces what is
/// there) or an open `Kuradb::File` (written at its end, read from its start).
pub enum Target {
    Path(PathBuf),
    File(SharedFile),
}

impl Target {
    /// A `Kuradb::File` or a path (a String).
    pub fn of(ruby: &Ruby, value: Value) -> Result<Target, Error> {
        if let Ok(file) = <&RbFile>::try_convert(value) {
            return Ok(Target::File(file.share(ruby)?));
        }
        Ok(Target::Path(PathBuf::try_convert(value)?))
    }

    /// Writes with `write`: a new file at the path, or at the file's end.
    fn write(&self, write: impl FnOnce(&mut dyn Write) -> kuradb::Result<()>) -> kuradb::Result<()> {
        match self {
            Target::Path(path) => {
                let file = fs::File::create(path).map_err(|e| kuradb::Error::io("creating", path, e))?;
                let mut out = BufWriter::new(file);
                write(&mut out)?;
                out.flush().map_err(|e| kuradb::Error::io("writing", path, e))
            }
            Target::File(file) => {
                let mut out = BufWriter::new(Appender(file.as_ref().as_ref()));
                write(&mut out)?;
                out.flush().map_err(|e| io_error(file.path(), e))
            }
        }
    }
}

/// Writes every record of `db` in the flat record format.
pub fn export_records(db: &(impl Dbm + ?Sized), target: &Target) -> kuradb::Result<()> {
    target.write(|out| export_to_flat_records(db, out))
}

/// Sets every record of the flat records of `target`; answers how many.
pub fn import_records(db: &(impl Dbm + ?Sized), target: &Target) -> kuradb::Result<u64> {
    match target {
        Target::Path(path) => {
            let file = fs::File::open(path).map_err(|e| kuradb::Error::io("opening", path, e))?;
            import_from_flat_records(db, &mut BufReader::new(file))
        }
        Target::File(file) => {
            import_from_flat_records(db, &mut BufReader::new(Reader::new(file.as_ref().as_ref())))
        }
    }
}

/// Writes every key, each followed by a line feed.
pub fn export_keys(db: &(impl Dbm + ?Sized), target: &Target) -> kuradb::Result<()> {
    target.write(|out| export_keys_as_lines(db, out))
}

fn export(ruby: &Ruby, rb_self: &Database, target: Value) -> Result<(), Error> {
    let target = Target::of(ruby, target)?;
    rb_self.with(ruby, |db| export_records(db, &target))
}

fn import(ruby: &Ruby, rb_self: &Database, source: Value) -> Result<u64, Error> {
    let source = Target::of(ruby, source)?;
    rb_self.with(ruby, |db| import_records(db, &source))
}

fn keys(ruby: &Ruby, rb_self: &Database, target: Value) -> Result<(), Error> {
    let target = Target::of(ruby, target)?;
    rb_self.with(ruby, |db| export_keys(db, &target))
}

/// Defines the three methods on `Kuradb::DBM` (`kuradb.rb` wraps them).
pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("_export_to_flat_records", method!(export, 1))?;
    class.define_method("_import_from_flat_records", method!(import, 1))?;
    class.define_method("_export_keys_as_lines", method!(keys, 1))?;
    Ok(())
}
