//! `kura util create|inspect|rebuild|restore|merge|clear|backup`: the
//! commands that act on a database as a whole.

use std::path::{Path, PathBuf};

use clap::Args;
use kuradb::dbm::poly::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::shard::{ShardDbm, MAX_SHARDS};
use kuradb::dbm::{Dbm, Durability};
use kuradb::file::FileSpec;
use kuradb::{Error, ErrorKind, Result};

use crate::out::print_line;

use super::{
    finish, must_exist, must_not_exist, open_with, progress, Access, CreateFlags, DbFlags, ReadFlags,
    WriteFlags,
};

/// Arguments of `kura util create`.
#[derive(Args, Debug)]
pub struct CreateArgs {
    /// Empties the file if it exists, instead of refusing.
    #[arg(long = "truncate")]
    truncate: bool,

    #[command(flatten)]
    update: UpdateModeFlag,

    /// The database file to create; its tuning comes from --params.
    file: PathBuf,

    #[command(flatten)]
    db: CreateFlags,
}

/// Creates an empty database.
pub fn create(args: &CreateArgs) -> Result<()> {
    let mut params = args.db.params()?;
    args.update.insert_into(&mut params)?;
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
    let made = files_of_new_database(&args.file, &params);
    let existed: Vec<bool> = made.iter().map(|file| file.exists()).collect();
    let created = open_with(&args.file, Access::Create, &params).and_then(|db| args.db.finish(db, Ok(())));
    if created.is_err() {
        // A create that fails (a reservation larger than the file system
        // allows, a full disk) leaves no half-made database behind: only the
        // files this command made, never one that was there before.
        for (file, existed) in made.iter().zip(existed) {
            if !existed {
                let _ = std::fs::remove_file(file);
            }
        }
    }
    created
}

/// The files a database created at `path` with `params` consists of: the
/// file itself, or a shard set's `num_shards` files, named as the shard set
/// names them (an out-of-range count is refused by the open, making none).
fn files_of_new_database(path: &Path, params: &Params) -> Vec<PathBuf> {
    match params.get("num_shards").and_then(|n| n.trim().parse::<usize>().ok()) {
        Some(count) if count <= MAX_SHARDS => {
            (0..count).map(|i| ShardDbm::shard_path(path, i, count)).collect()
        }
        Some(_) => Vec::new(),
        None => vec![path.to_path_buf()],
    }
}

/// The reference's `--append` tuning flag of create and rebuild (elsewhere
/// `--append DELIM` appends to a record).
#[derive(Args, Debug)]
struct UpdateModeFlag {
    /// (hash, tree) Appends every update to the file rather than updating
    /// in place (update_mode=appending): the crash-safest mode, which keeps
    /// every old version for `restore --end_offset`.
    #[arg(long = "append", conflicts_with = "in_place")]
    append: bool,
}

impl UpdateModeFlag {
    fn insert_into(&self, params: &mut Params) -> Result<()> {
        if self.append {
            params.insert("update_mode", "appending").map_err(|e| super::in_flag("--append", e))?;
        }
        Ok(())
    }
}

/// Arguments of `kura util inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// Prints one JSON object instead of name: value lines, numbers as
    /// numbers and true/false as booleans (with an attribute, its value as JSON).
    #[arg(long = "json")]
    json: bool,

    /// Reads every record, which checks each one's checksum (and its
    /// decompression and decryption), and checks that their number is the
    /// count the database keeps; a damaged record fails the command naming
    /// it. The number read is the figure `validated_records`.
    #[arg(long = "validate")]
    validate: bool,

    /// The database file.
    file: PathBuf,

    /// Prints only the value of this attribute.
    attribute: Option<String>,

    #[command(flatten)]
    db: ReadFlags,
}

/// Prints what a database says about itself, each figure once.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let db = args.db.open(&args.file, Access::Read)?;
    let figures = figures(&db).and_then(|mut figures| {
        if args.validate {
            figures.push(("validated_records".into(), validate(&db)?.to_string()));
        }
        Ok(figures)
    });
    let figures = finish(db, figures)?;
    if let Some(name) = &args.attribute {
        // The reference's name of the record count.
        let wanted = if name == "num_records" { "count" } else { name.as_str() };
        let (_, value) = figures.iter().find(|(n, _)| n == wanted).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("{} has no attribute {name:?}", args.file.display()))
        })?;
        if args.json {
            return print_line(format_args!("{}", typed(wanted, value)));
        }
        return print_line(format_args!("{value}"));
    }
    if args.json {
        let object: serde_json::Map<String, serde_json::Value> =
            figures.iter().map(|(n, v)| (n.clone(), typed(n, v))).collect();
        return print_line(format_args!("{}", serde_json::Value::Object(object)));
    }
    let mut text = String::new();
    for (name, value) in figures {
        text.push_str(&format!("{name}: {value}\n"));
    }
    crate::out::print_bytes(text.as_bytes())
}

/// A figure as JSON: `true`/`false` as booleans, a decimal number as a
/// number, anything else (and the path, whatever it looks like) as a string.
pub fn typed(name: &str, value: &str) -> serde_json::Value {
    if name == "path" {
        return value.into();
    }
    match value {
        "true" => return true.into(),
        "false" => return false.into(),
        _ => {}
    }
    if let Ok(n) = value.parse::<u64>() {
        return n.into();
    }
    if let Ok(n) = value.parse::<i64>() {
        return n.into();
    }
    // Only plain decimals: "inf", "NaN" or "1e5" in a figure stay text.
    let decimal = value.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-');
    match value.parse::<f64>() {
        Ok(n) if decimal && n.is_finite() => n.into(),
        _ => value.into(),
    }
}

/// The figures of `inspect`: the common ones first, then the database's own,
/// less those it repeats (its size, health, `file_path`, which is `path`, and
/// `num_records`, which is `count`).
fn figures(db: &PolyDbm) -> Result<Vec<(String, String)>> {
    let mut out = vec![
        ("path".to_string(), db.path().unwrap_or(Path::new("")).display().to_string()),
        ("dbm".into(), db.class().name().to_string()),
        ("count".into(), db.count()?.to_string()),
        ("file_size".into(), db.file_size()?.to_string()),
        ("healthy".into(), db.is_healthy().to_string()),
        ("ordered".into(), db.is_ordered().to_string()),
        ("should_be_rebuilt".into(), db.should_be_rebuilt()?.to_string()),
    ];
    for (name, value) in db.inspect()? {
        let repeated = matches!(name.as_str(), "num_records" | "file_path");
        if !repeated && !out.iter().any(|(n, _)| *n == name) {
            out.push((name, value));
        }
    }
    Ok(out)
}

/// Reads every record; answers how many, which must be the database's count.
fn validate(db: &PolyDbm) -> Result<u64> {
    let expected = db.count()?;
    let spinner = progress::spinner("validating");
    let mut read = 0u64;
    let result = db.iter().and_then(|mut cursor| {
        cursor.first()?;
        while cursor.get()?.is_some() {
            read += 1;
            cursor.next()?;
        }
        Ok(())
    });
    spinner.finish_and_clear();
    result.map_err(|e| {
        Error::new(e.kind(), format!("validation failed after {read} good records: {}", e.message()))
    })?;
    if read != expected {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "validation: {read} records read where the database counts {expected}: rebuild or restore it"
            ),
        ));
    }
    Ok(read)
}

/// Arguments of `kura util rebuild`.
#[derive(Args, Debug)]
pub struct RebuildArgs {
    /// Encrypts the rebuilt file with this key instead of the one it was
    /// opened with (hash and tree); an empty one writes it unencrypted.
    #[arg(long = "new_cipher_key", value_name = "KEY")]
    new_cipher_key: Option<String>,

    /// Rebuilds a broken database by restoring what it holds (as `restore`,
    /// skipping damaged records) into a new file that then replaces it. Run
    /// it when no other process has the file open.
    #[arg(long = "restore", conflicts_with = "new_cipher_key")]
    restore: bool,

    #[command(flatten)]
    update: UpdateModeFlag,

    /// The database file.
    file: PathBuf,

    #[command(flatten)]
    db: CreateFlags,
}

/// Rebuilds the database. Of --params, the file's (file=, block_size=, …) and
/// the opening's (no_wait, no_lock) open it; the rest are the new tuning, which
/// the database refuses by name if it cannot change them.
pub fn rebuild(args: &RebuildArgs) -> Result<()> {
    let mut params = args.db.params()?;
    args.update.insert_into(&mut params)?;
    if args.restore {
        rebuild_by_restoring(&args.file, &params)?;
        return args.db.sync_written(&args.file, &split_tuning(&params)?.0);
    }
    let (open, mut tuning) = split_tuning(&params)?;
    if let Some(key) = &args.new_cipher_key {
        tuning.insert("cipher_key", key)?;
    }
    let on_disk = || std::fs::metadata(&args.file).ok().filter(|m| m.is_file()).map(|m| m.len());
    let before_on_disk = on_disk();
    let db = open_with(&args.file, Access::Write, &open)?;
    let before = db.file_size();
    let spinner = progress::spinner("rebuilding");
    let result = db
        .rebuild_with(&tuning)
        .map_err(|e| match e.kind() {
            ErrorKind::InvalidArgument => Error::new(
                e.kind(),
                format!("{} (a rebuild changes only the tuning the database allows it to)", e.message()),
            ),
            _ => e,
        })
        .and_then(|()| Ok((db.count()?, before?, db.file_size()?)));
    spinner.finish_and_clear();
    let (records, mut before, mut after) = args.db.finish(db, result)?;
    // The file's own size where the path is one file (an on-memory
    // database's file_size is its memory; its file is written at close).
    if let (Some(was), Some(is)) = (before_on_disk, on_disk()) {
        (before, after) = (was, is);
    }
    // A rebuild that says nothing leaves its user guessing whether it ran.
    let noun = if records == 1 { "record" } else { "records" };
    eprintln!(
        "kura: rebuilt {}: {records} {noun}, {before} bytes before, {after} after",
        args.file.display()
    );
    Ok(())
}

/// `rebuild --restore`: the restored copy is written beside the file, then
/// renamed over it, so the file is either the old one or the whole new one.
fn rebuild_by_restoring(path: &Path, params: &Params) -> Result<()> {
    must_exist(path)?;
    if !path.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "rebuild --restore replaces one file, and {} is a set of shards: restore it with `kura util \
                 restore OLD NEW`",
                path.display()
            ),
        ));
    }
    // The class of the file itself, so the new file's extension does not matter.
    let mut params = params.clone();
    if params.get("dbm").is_none() {
        if let Some(class) = kuradb::dbm::poly::DbmClass::of_file(path)? {
            params.insert("dbm", class.name())?;
        }
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".kura-restoring");
    let temp = path.with_file_name(name);
    must_not_exist(&temp, "rebuild --restore")?;
    let spinner = progress::spinner("restoring");
    let kept = PolyDbm::restore(path, &temp, &params);
    spinner.finish_and_clear();
    if let Err(e) = kept {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    std::fs::rename(&temp, path).map_err(|e| Error::io("replacing", path, e))
}

/// Splits parameters into those that say how to open a file and the rest.
pub(super) fn split_tuning(params: &Params) -> Result<(Params, Params)> {
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
    /// The crashed or damaged database file; it is only read (with --auto,
    /// restored in place).
    old_file: PathBuf,
    /// The new database file to write what it holds into; must not exist.
    /// Not given with --auto.
    new_file: Option<PathBuf>,

    /// Restores the state the file held when it ended at this byte offset
    /// (a hash database in appending mode, which keeps every version).
    #[arg(long = "end_offset", value_name = "OFFSET")]
    end_offset: Option<u64>,

    /// As the reference's --auto: `none` (the default) restores into
    /// NEW_FILE; `default` or `default-ns` opens OLD_FILE for writing, which
    /// restores a file left by a crash in place, the one way its class
    /// does (kuradb takes no shortcut, so the two are the same). `sync` and
    /// `sync-ns`, a rollback to the last synchronized state, are refused:
    /// kuradb's hash restore keeps every record that reads.
    #[arg(long = "auto", value_name = "MODE",
          value_parser = ["none", "default", "default-ns", "sync", "sync-ns"])]
    auto: Option<String>,

    /// The class of the old database (the reference's --class, which names
    /// it for PolyDBM and ShardDBM): the same as --dbm, and the reference's
    /// names (HashDBM, TreeDBM, …) are taken.
    #[arg(long = "class", value_name = "CLASS")]
    class: Option<String>,

    #[command(flatten)]
    db: CreateFlags,
}

/// Restores what a damaged database holds into a new one of the same class,
/// or with --auto, in place.
pub fn restore(args: &RestoreArgs) -> Result<()> {
    must_exist(&args.old_file)?;
    let mut params = args.db.params()?;
    if let Some(class) = &args.class {
        params.insert("dbm", class).map_err(|e| super::in_flag("--class", e))?;
    }
    if let Some(mode) = args.auto.as_deref().filter(|m| *m != "none") {
        return restore_in_place(args, mode, &params);
    }
    let new_file = args.new_file.as_ref().ok_or_else(|| {
        Error::new(ErrorKind::InvalidArgument, "restore needs NEW_FILE, the file to restore into (or --auto)")
    })?;
    must_not_exist(new_file, "restore")?;
    let open_params = params.clone();
    if let Some(end) = args.end_offset {
        params.insert("end_offset", &end.to_string())?;
    }
    let spinner = progress::spinner("restoring");
    let kept = PolyDbm::restore(&args.old_file, new_file, &params);
    spinner.finish_and_clear();
    let kept = kept?;
    args.db.sync_written(new_file, &open_params)?;
    crate::out::print_line(format_args!("{kept} records restored into {}", new_file.display()))
}

/// `restore --auto MODE OLD`: the open-time restore of the file's class.
fn restore_in_place(args: &RestoreArgs, mode: &str, params: &Params) -> Result<()> {
    if mode.starts_with("sync") {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "--auto {mode}: kuradb has no restore to the last synchronized state (a hash restore keeps \
                 every record that reads): give --auto default"
            ),
        ));
    }
    if let Some(new_file) = &args.new_file {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "--auto restores {} in place and writes no {}: leave NEW_FILE out",
                args.old_file.display(),
                new_file.display()
            ),
        ));
    }
    if args.end_offset.is_some() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "--end_offset restores into a new file: give NEW_FILE and no --auto",
        ));
    }
    let spinner = progress::spinner("restoring");
    let db = open_with(&args.old_file, Access::Write, params);
    spinner.finish_and_clear();
    let db = db?;
    let count = db.count();
    let count = args.db.finish(db, count)?;
    crate::out::print_line(format_args!(
        "{count} records in {} after opening it with restoring",
        args.old_file.display()
    ))
}

/// Arguments of `kura util merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Keeps the record already in DEST_FILE (or from an earlier source) when a
    /// key repeats, instead of the later one.
    #[arg(long = "no_overwrite")]
    no_overwrite: bool,

    /// The key the sources are encrypted with (hash and tree), if not the
    /// destination's; by default the environment variable
    /// KURA_SRC_CIPHER_KEY, else the destination's key (--cipher_key or
    /// KURA_CIPHER_KEY). Empty: the sources are not encrypted.
    #[arg(long = "src_cipher_key", value_name = "KEY")]
    src_cipher_key: Option<String>,

    /// The database to merge into; created if it does not exist. --dbm, --file,
    /// --params and --cipher_key are its.
    dest_file: PathBuf,

    /// The databases to read, in order; each is opened as its header says.
    #[arg(required = true)]
    src_files: Vec<PathBuf>,

    #[command(flatten)]
    db: CreateFlags,
}

/// The environment variable that gives the sources' cipher key of `kura
/// util merge` when `--src_cipher_key` does not.
pub const SRC_CIPHER_KEY_VAR: &str = "KURA_SRC_CIPHER_KEY";

/// The key `merge` opens its sources with, and whether it is the
/// destination's: `--src_cipher_key`, else [`SRC_CIPHER_KEY_VAR`], else the
/// destination's key. Empty or none: the sources are not encrypted.
fn source_key(args: &MergeArgs) -> Result<(Option<String>, bool)> {
    if let Some(key) = &args.src_cipher_key {
        return Ok((Some(key.clone()), false));
    }
    if let Some(key) = std::env::var_os(SRC_CIPHER_KEY_VAR) {
        let key = key.into_string().map_err(|_| {
            Error::new(ErrorKind::InvalidArgument, format!("{SRC_CIPHER_KEY_VAR} is not valid UTF-8"))
        })?;
        return Ok((Some(key), false));
    }
    Ok((args.db.params()?.get("cipher_key").map(str::to_string), true))
}

/// Copies every record of the sources into the destination.
pub fn merge(args: &MergeArgs) -> Result<()> {
    let mut src_params = Params::new();
    if args.db.wait() {
        src_params.insert("wait", "true")?;
    }
    let (key, shared) = source_key(args)?;
    if let Some(key) = key.filter(|k| !k.is_empty()) {
        src_params.insert("cipher_key", &key)?;
    }
    // A source refused for the key it was given (none, the wrong one, one
    // its class takes none of) may simply need its own.
    let hint = |e: Error| {
        match (e.kind(), shared) {
        (ErrorKind::InvalidArgument, true) => Error::new(
            e.kind(),
            format!(
                "{} (the sources are opened with the destination's cipher_key unless --src_cipher_key                  or {SRC_CIPHER_KEY_VAR} gives theirs; empty: not encrypted)",
                e.message()
            ),
        ),
        _ => e,
    }
    };
    let mut sources = Vec::new();
    for path in &args.src_files {
        if path == &args.dest_file {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} is both the destination and a source", path.display()),
            ));
        }
        sources.push(open_with(path, Access::Read, &src_params).map_err(hint)?);
    }
    let dest = args.db.open(&args.dest_file, Access::Create)?;
    let result = merge_into(&dest, &sources, !args.no_overwrite);
    let closed: Vec<Result<()>> = sources.into_iter().map(PolyDbm::close).collect();
    args.db.finish(dest, result)?;
    closed.into_iter().collect()
}

fn merge_into(dest: &dyn Dbm, sources: &[PolyDbm], overwrite: bool) -> Result<()> {
    let total = sources.iter().map(|s| s.count()).sum::<Result<u64>>()?;
    let bar = progress::bar("merging", Some(total), false);
    for src in sources {
        let mut cursor = src.iter()?;
        cursor.first()?;
        while let Some((key, value)) = cursor.get()? {
            let stored = if overwrite { dest.set(&key, &value) } else { dest.insert(&key, &value) };
            match stored {
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
    /// The database file.
    file: PathBuf,

    #[command(flatten)]
    db: WriteFlags,
}

/// Removes every record.
pub fn clear(args: &ClearArgs) -> Result<()> {
    let db = args.db.open(&args.file, Access::Write)?;
    let result = db.clear();
    args.db.finish(db, result)
}

/// Arguments of `kura util backup`.
#[derive(Args, Debug)]
pub struct BackupArgs {
    /// The database file.
    file: PathBuf,
    /// The copy to write; must not exist.
    dest: PathBuf,

    #[command(flatten)]
    db: ReadFlags,
}

/// Writes a consistent copy of the database, durable when this returns. The
/// database is opened as a reader: other readers may hold it meanwhile, a
/// writer may not (see docs/cli.md for backing up a database a writer holds).
pub fn backup(args: &BackupArgs) -> Result<()> {
    must_not_exist(&args.dest, "backup")?;
    let db = args.db.open(&args.file, Access::Read).map_err(|e| match e.kind() {
        // No consistent copy can be read past a writer's exclusive lock.
        ErrorKind::WouldBlock => Error::new(
            ErrorKind::WouldBlock,
            format!(
                "{} is held open by a writer in another process, whose lock lets no other process read \
                 a consistent state: have that process take the copy (`Dbm::copy_file_data(dest, Durability::Hard)`; \
                 Python `db.copy_file_data(dest, True)`), or give --wait to copy it once the writer \
                 closes it",
                args.file.display()
            ),
        ),
        _ => e,
    })?;
    let result = db.copy_file_data(&args.dest, Durability::Hard);
    finish(db, result)
}
