//! `kura util convert`: a kuradb database made of a file of the reference
//! implementation (Tkrzw), which kuradb otherwise opens read-only.

use std::path::PathBuf;

use clap::Args;
use kuradb::dbm::tkrzw::{ReferenceDbm, ReferenceFormat};
use kuradb::dbm::Dbm;
use kuradb::{Error, ErrorKind, Result};

use super::{must_exist, must_not_exist, progress, CreateFlags, DbFlags};

/// Arguments of `kura util convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The file the reference wrote (a hash, tree or skip database, or a
    /// flat record file); it is only read.
    old_file: PathBuf,
    /// The kuradb database to write; must not exist.
    new_file: PathBuf,

    /// The new database's class, file and tuning (by default the class
    /// NEW's extension names, else the one matching OLD's).
    #[command(flatten)]
    db: CreateFlags,
}

/// Writes every record of a reference file into a new kuradb database. A
/// file whose writer was killed is salvaged, and what was kept and lost is
/// said.
pub fn convert(args: &ConvertArgs) -> Result<()> {
    must_exist(&args.old_file)?;
    must_not_exist(&args.new_file, "convert")?;
    if ReferenceFormat::of_file(&args.old_file)?.is_none() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is not a file of the reference implementation (Tkrzw); a kuradb database is copied \
                 with `kura util merge` or `kura util backup`",
                args.old_file.display()
            ),
        ));
    }
    let params = args.db.params()?;
    let spinner = progress::spinner("reading");
    let opened = ReferenceDbm::open(&args.old_file);
    spinner.finish_and_clear();
    let db = opened.map_err(|e| {
        if e.kind() != ErrorKind::BrokenData {
            return e;
        }
        Error::new(
            e.kind(),
            format!(
                "{}; `kura util restore {} {}` salvages what it holds",
                e.message(),
                args.old_file.display(),
                args.new_file.display()
            ),
        )
    })?;
    let class = db.conversion_class(&args.new_file, &params)?;
    let bar = progress::bar("converting", Some(db.count()?), false);
    let written = db.convert(&args.new_file, &params, &mut |n| bar.set_position(n));
    bar.finish_and_clear();
    let written = written?;
    args.db.sync_written(&args.new_file, &super::admin::split_tuning(&params)?.0)?;
    if let Some(s) = db.salvage() {
        crate::out::print_line(format_args!(
            "{} was not closed by its writer: salvaged {} records; {} damaged stretches ({} bytes) held \
             records that are lost",
            args.old_file.display(),
            s.records,
            s.damaged_regions,
            s.damaged_bytes
        ))?;
    }
    crate::out::print_line(format_args!(
        "{written} records of {} ({}) converted into {} ({})",
        args.old_file.display(),
        db.reference_class(),
        args.new_file.display(),
        class.name()
    ))
}
