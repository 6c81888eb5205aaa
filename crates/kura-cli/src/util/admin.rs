//! `kura util create|inspect|rebuild|restore|merge|clear|backup`: the
//! commands that act on a database as a whole.

use std::path::{Path, PathBuf};

use clap::Args;
use kuradb::dbm::any::AnyDbm;
use kuradb::dbm::poly::Params;
use kuradb::dbm::Dbm;
use kuradb::file::FileSpec;
use kuradb::{Error, ErrorKind, Result};

use super::{finish, must_exist, must_not_exist, open_with, progress, Access, DbFlags};

/// Arguments of `kura util create`.
#[derive(Args, Debug)]
pub struct CreateArgs {
    #[command(flatten)]
    db: DbFlags,

    /// Empties the file if it exists, instead of refusing.
    #[arg(long = "truncate")]
    truncate: bool,

    /// The database file to create; its tuning comes from --params.
    file: PathBuf,
}

/// Creates an empty database.
pub fn create(args: &CreateArgs) -> Result<()> {
    let mut params = args.db.params()?;
    if args.truncate {
        if params.get("truncate").is_none() {
            params.insert("truncate", "true")?;
        }
    } else if args.file.exists() {
        return Err(Error::new(
            ErrorKind::Duplication,
            format!("{} exists; give --truncate to empty it", args.file.display()),
        ));
    }
    open_with(&args.file, Access::Create, &params)?.close()
}

/// Arguments of `kura util inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    db: DbFlags,

    /// Prints one JSON object instead of name: value lines.
    #[arg(long = "json")]
    json: bool,

    /// The database file.
    file: PathBuf,

    /// Prints only the value of this attribute.
    attribute: Option<String>,
}

/// Prints what a database says about itself.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let db = args.db.open(&args.file, Access::Read)?;
    let figures = figures(&db);
    let figures = finish(db, figures)?;
    if let Some(name) = &args.attribute {
        let (_, value) = figures.iter().find(|(n, _)| n == name).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("{} has no attribute {name:?}", args.file.display()))
        })?;
        println!("{value}");
    } else if args.json {
        let object: serde_json::Map<String, serde_json::Value> =
            figures.into_iter().map(|(n, v)| (n, v.into())).collect();
        println!("{}", serde_json::Value::Object(object));
    } else {
        for (name, value) in figures {
            println!("{name}: {value}");
        }
    }
    Ok(())
}

/// The figures of `inspect`: the common ones first, then the database's own.
fn figures(db: &AnyDbm) -> Result<Vec<(String, String)>> {
    let mut out = vec![
        ("path".to_string(), db.path().unwrap_or(Path::new("")).display().to_string()),
        ("dbm".into(), db.class().name().to_string()),
        ("count".into(), db.count()?.to_string()),
        ("file_size".into(), db.file_size()?.to_string()),
        ("healthy".into(), db.is_healthy().to_string()),
        ("ordered".into(), db.is_ordered().to_string()),
        ("should_be_rebuilt".into(), db.should_be_rebuilt()?.to_string()),
    ];
    out.extend(db.inspect()?);
    Ok(out)
}

/// Arguments of `kura util rebuild`.
#[derive(Args, Debug)]
pub struct RebuildArgs {
    #[command(flatten)]
    db: DbFlags,

    /// Encrypts the rebuilt file with this key instead of the one it was
    /// opened with (hash and tree); an empty one writes it unencrypted.
    #[arg(long = "new_cipher_key", value_name = "KEY")]
    new_cipher_key: Option<String>,

    /// The database file.
    file: PathBuf,
}

/// Rebuilds the database. Of --params, the file's (file=, block_size=, …) and
/// the opening's (no_wait, no_lock) open it; the rest are the new tuning, which
/// the database refuses by name if it cannot change them.
pub fn rebuild(args: &RebuildArgs) -> Result<()> {
    let params = args.db.params()?;
    let (open, mut tuning) = split_tuning(&params)?;
    if let Some(key) = &args.new_cipher_key {
        tuning.insert("cipher_key", key)?;
    }
    let db = open_with(&args.file, Access::Write, &open)?;
    let spinner = progress::spinner("rebuilding");
    let result = db.rebuild_with(&tuning).map_err(|e| match e.kind() {
        ErrorKind::InvalidArgument => Error::new(
            e.kind(),
            format!("{} (a rebuild changes only the tuning the database allows it to)", e.message()),
        ),
        _ => e,
    });
    spinner.finish_and_clear();
    finish(db, result)
}

/// Splits parameters into those that say how to open a file and the rest.
fn split_tuning(params: &Params) -> Result<(Params, Params)> {
    let (mut open, mut tuning) = (Params::new(), Params::new());
    for (name, value) in params.iter() {
        let opening = matches!(name, "dbm" | "no_wait" | "no_lock" | "cipher_key")
            || FileSpec::default().set(name, value)?;
        if opening { &mut open } else { &mut tuning }.insert(name, value)?;
    }
    Ok((open, tuning))
}

/// Arguments of `kura util restore`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    #[command(flatten)]
    db: DbFlags,

    /// The crashed or damaged database file; it is only read.
    old_file: PathBuf,
    /// The new database file to write what it holds into; must not exist.
    new_file: PathBuf,

    /// Restores the state the file held when it ended at this byte offset
    /// (a hash database in appending mode, which keeps every version).
    #[arg(long = "end_offset", value_name = "OFFSET")]
    end_offset: Option<u64>,
}

/// Restores what a damaged database holds into a new one of the same class.
pub fn restore(args: &RestoreArgs) -> Result<()> {
    must_exist(&args.old_file)?;
    must_not_exist(&args.new_file, "restore")?;
    let mut params = args.db.params()?;
    if let Some(end) = args.end_offset {
        params.insert("end_offset", &end.to_string())?;
    }
    let spinner = progress::spinner("restoring");
    let kept = AnyDbm::restore(&args.old_file, &args.new_file, &params);
    spinner.finish_and_clear();
    println!("{} records restored into {}", kept?, args.new_file.display());
    Ok(())
}

/// Arguments of `kura util merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    #[command(flatten)]
    db: DbFlags,

    /// Keeps the record already in DEST_FILE (or from an earlier source) when a
    /// key repeats, instead of the later one.
    #[arg(long = "no_overwrite")]
    no_overwrite: bool,

    /// The database to merge into; created if it does not exist. --dbm, --file
    /// and --params are its.
    dest_file: PathBuf,

    /// The databases to read, in order; each is opened as its header says.
    #[arg(required = true)]
    src_files: Vec<PathBuf>,
}

/// Copies every record of the sources into the destination.
pub fn merge(args: &MergeArgs) -> Result<()> {
    let mut src_params = Params::new();
    src_params.insert("no_wait", if args.db.wait { "false" } else { "true" })?;
    let mut sources = Vec::new();
    for path in &args.src_files {
        if path == &args.dest_file {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} is both the destination and a source", path.display()),
            ));
        }
        sources.push(open_with(path, Access::Read, &src_params)?);
    }
    let dest = args.db.open(&args.dest_file, Access::Create)?;
    let result = merge_into(&dest, &sources, !args.no_overwrite);
    let closed: Vec<Result<()>> = sources.into_iter().map(AnyDbm::close).collect();
    finish(dest, result)?;
    closed.into_iter().collect()
}

fn merge_into(dest: &dyn Dbm, sources: &[AnyDbm], overwrite: bool) -> Result<()> {
    let total = sources.iter().map(|s| s.count()).sum::<Result<u64>>()?;
    let bar = progress::bar("merging", total, false);
    for src in sources {
        let mut cursor = src.iter()?;
        cursor.first()?;
        while let Some((key, value)) = cursor.get()? {
            match dest.set(&key, &value, overwrite) {
                Err(e) if !overwrite && e.kind() == ErrorKind::Duplication => {}
                other => other?,
            }
            bar.inc(1);
            cursor.next()?;
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Arguments of `kura util clear`.
#[derive(Args, Debug)]
pub struct ClearArgs {
    #[command(flatten)]
    db: DbFlags,

    /// The database file.
    file: PathBuf,
}

/// Removes every record.
pub fn clear(args: &ClearArgs) -> Result<()> {
    let db = args.db.open(&args.file, Access::Write)?;
    let result = db.clear();
    finish(db, result)
}

/// Arguments of `kura util backup`.
#[derive(Args, Debug)]
pub struct BackupArgs {
    #[command(flatten)]
    db: DbFlags,

    /// The database file.
    file: PathBuf,
    /// The copy to write; must not exist.
    dest: PathBuf,
}

/// Writes a consistent copy of the database, durable when this returns. The
/// database is opened as a reader: other readers may hold it meanwhile, a
/// writer may not (see the README for backing up a database a writer holds).
pub fn backup(args: &BackupArgs) -> Result<()> {
    must_not_exist(&args.dest, "backup")?;
    let db = args.db.open(&args.file, Access::Read)?;
    let result = db.copy_file_data(&args.dest, true);
    finish(db, result)
}
