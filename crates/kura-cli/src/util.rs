//! `kura util`: the administrator's everyday operations on a database file,
//! in the spirit of the reference's `tkrzw_dbm_util` and with its argument
//! order (`kura util SUBCOMMAND [options] FILE [KEY [VALUE]]`).
//!
//! Every database is opened through [`PolyDbm`](kuradb::dbm::poly::PolyDbm), from the file's path and a
//! parameter string built from `--dbm`, `--file` and `--params`, so each class
//! PolyDbm learns is served here without a change. One function per
//! subcommand, in `records` (get, set, remove, rekey), `list`, `transfer` (export,
//! import), `convert` (a file of the reference into kuradb's), `check` (a
//! published directory against its manifest) and `admin` (the rest). A
//! published directory opens as its current version, read-only.
//!
//! A command fails at once on a database another process holds locked, as
//! every open does unless asked to wait, naming the holder: an administrator
//! running a command by hand expects an answer. `--wait` waits instead.

mod admin;
mod check;
mod codec;
mod convert;
pub(crate) mod escape;
mod import;
mod list;
mod multi;
mod progress;
mod records;
mod search;
mod transfer;
mod tuning;
pub(crate) mod ulog_transfer;

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use kuradb::dbm::poly::Params;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Dbm, Durability};
use kuradb::{Error, ErrorKind, Result};

pub use codec::Codec;

/// Arguments of `kura util`.
#[derive(Args, Debug)]
pub struct UtilArgs {
    #[command(subcommand)]
    command: UtilCommand,
}

#[derive(Subcommand, Debug)]
enum UtilCommand {
    /// Creates a database file.
    Create(admin::CreateArgs),
    /// Prints the class, parameters, record count, health and size of a database.
    Inspect(admin::InspectArgs),
    /// Prints the value of a key.
    Get(records::GetArgs),
    /// Sets, appends to or increments the value of a key.
    Set(records::SetArgs),
    /// Prints the seconds a record of a database with expiry has left, or "none".
    Ttl(records::TtlArgs),
    /// Removes a key.
    Remove(records::RemoveArgs),
    /// Changes the key of a record.
    Rekey(records::RekeyArgs),
    /// Prints records, 10 or --items of them from where --move puts the cursor, one a line: key TAB value.
    List(list::ListArgs),
    /// Writes every record to a flat record file (the reference's format), or a TSV file with --tsv.
    Export(transfer::ExportArgs),
    /// Adds every record of a flat record file, or a TSV file with --tsv; all or nothing.
    Import(import::ImportArgs),
    /// Prints the keys that match a pattern (contain, begin, end, regex, edit, …), one a line.
    Search(search::SearchArgs),
    /// Rewrites a database compactly, optionally with new tuning parameters.
    Rebuild(admin::RebuildArgs),
    /// Recovers what a crashed or damaged database holds into a new file.
    Restore(admin::RestoreArgs),
    /// Copies the records of several databases into one.
    Merge(admin::MergeArgs),
    /// Removes every record.
    Clear(admin::ClearArgs),
    /// Writes a consistent copy of a database to a new file.
    Backup(admin::BackupArgs),
    /// Makes a kuradb database of a file the reference implementation (Tkrzw) wrote.
    Convert(convert::ConvertArgs),
    /// Checks a published directory's current version against its manifest: sizes, checksums, record counts.
    Check(check::CheckArgs),
}

/// Runs `kura util`.
pub fn run(args: &UtilArgs) -> Result<()> {
    match &args.command {
        UtilCommand::Create(a) => admin::create(a),
        UtilCommand::Inspect(a) => admin::inspect(a),
        UtilCommand::Get(a) => records::get(a),
        UtilCommand::Set(a) => records::set(a),
        UtilCommand::Ttl(a) => records::ttl(a),
        UtilCommand::Remove(a) => records::remove(a),
        UtilCommand::Rekey(a) => records::rekey(a),
        UtilCommand::List(a) => list::list(a),
        UtilCommand::Export(a) => transfer::export(a),
        UtilCommand::Import(a) => import::import(a),
        UtilCommand::Search(a) => search::search(a),
        UtilCommand::Rebuild(a) => admin::rebuild(a),
        UtilCommand::Restore(a) => admin::restore(a),
        UtilCommand::Merge(a) => admin::merge(a),
        UtilCommand::Clear(a) => admin::clear(a),
        UtilCommand::Backup(a) => admin::backup(a),
        UtilCommand::Convert(a) => convert::convert(a),
        UtilCommand::Check(a) => check::check(a),
    }
}

/// The flags every command takes: which database a file holds and how to
/// open it.
#[derive(Args, Debug, Clone)]
pub struct OpenFlags {
    /// The database class (hash, tree, skip, …); by default the file's header,
    /// or for a new file its extension, decides.
    #[arg(long = "dbm", value_name = "CLASS")]
    dbm: Option<String>,

    /// The file implementation: mmap-para, mmap-atom, pos-para or pos-atom.
    #[arg(long = "file", id = "file_impl", value_name = "IMPL")]
    file: Option<String>,

    /// More parameters, as PolyDbm takes them: "name=value,name=value".
    #[arg(long = "params", value_name = "PARAMS", default_value = "")]
    params: String,

    /// Waits for a lock another process holds instead of failing at once.
    #[arg(long = "wait")]
    wait: bool,

    /// The key an encrypted database's values are encrypted with (hash and
    /// tree); by default the environment variable KURA_CIPHER_KEY, which keeps
    /// it out of the process list. A new file is encrypted with it.
    #[arg(long = "cipher_key", value_name = "KEY")]
    cipher_key: Option<String>,

    #[command(flatten)]
    lock: tuning::LockFlags,
}

/// The flags of a command that only reads.
#[derive(Args, Debug, Clone)]
pub struct ReadFlags {
    #[command(flatten)]
    open: OpenFlags,

    /// Not offered (a reader has nothing to synchronize), but taken so that a
    /// script written for the reference, which accepts it everywhere, is told
    /// why it does nothing here rather than that it is unknown.
    #[arg(long = "sync_hard", hide = true)]
    sync_hard: bool,
}

/// The flags of a command that writes to an existing database.
#[derive(Args, Debug, Clone)]
pub struct WriteFlags {
    #[command(flatten)]
    open: OpenFlags,

    /// Synchronizes the database with the device (hard: the data reaches
    /// the disk) before closing it, as the reference's --sync_hard.
    #[arg(long = "sync_hard")]
    sync_hard: bool,

    #[command(flatten)]
    file: tuning::FileFlags,
}

/// The flags of a command that creates or rebuilds a database: a writer's,
/// and the tuning of the new file.
#[derive(Args, Debug, Clone)]
pub struct CreateFlags {
    #[command(flatten)]
    write: WriteFlags,

    #[command(flatten)]
    tuning: tuning::TuningFlags,
}

/// The environment variable that gives the cipher key when neither
/// `--cipher_key` nor `--params` does.
pub const CIPHER_KEY_VAR: &str = "KURA_CIPHER_KEY";

/// How a command opens its database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    Write,
    /// Read and write, creating the file if it is missing.
    Create,
}

/// What a command's flags hold, whichever of [`ReadFlags`], [`WriteFlags`]
/// and [`CreateFlags`] it takes.
struct Chosen<'a> {
    open: &'a OpenFlags,
    sync_hard: bool,
    file: Option<&'a tuning::FileFlags>,
    tuning: Option<&'a tuning::TuningFlags>,
}

/// Opening and closing a database as a command's flags say.
trait DbFlags {
    /// The flags given.
    fn given(&self) -> Chosen<'_>;

    /// Whether --wait was given.
    fn wait(&self) -> bool {
        self.given().open.wait
    }

    /// The PolyDbm parameters these flags stand for. A name given both as a
    /// flag and in --params is refused by [`Params::insert`].
    fn params(&self) -> Result<Params> {
        let given = self.given();
        let open = given.open;
        let mut params = Params::parse(&open.params).map_err(|e| in_flag("--params", e))?;
        if let Some(dbm) = open.dbm.as_deref().filter(|d| !d.eq_ignore_ascii_case("auto")) {
            params.insert("dbm", dbm).map_err(|e| in_flag("--dbm", e))?;
        }
        if let Some(file) = &open.file {
            params.insert("file", file).map_err(|e| in_flag("--file", e))?;
        }
        if let Some(tuning) = given.tuning {
            tuning.insert_into(&mut params)?;
        }
        open.lock.insert_into(&mut params)?;
        if let Some(file) = given.file {
            file.insert_into(&mut params)?;
        }
        if let Some(key) = &open.cipher_key {
            params.insert("cipher_key", key).map_err(|e| in_flag("--cipher_key", e))?;
        } else if let Some(key) =
            std::env::var_os(CIPHER_KEY_VAR).filter(|_| params.get("cipher_key").is_none())
        {
            let key = key.into_string().map_err(|_| {
                Error::new(ErrorKind::InvalidArgument, format!("{CIPHER_KEY_VAR} is not valid UTF-8"))
            })?;
            params.insert("cipher_key", &key)?;
        }
        if open.wait {
            params.insert("wait", "true").map_err(|e| in_flag("--wait", e))?;
        }
        Ok(params)
    }

    /// Opens the database at `path`.
    fn open(&self, path: &Path, access: Access) -> Result<PolyDbm> {
        if self.given().sync_hard && access == Access::Read {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "--sync_hard: this command only reads {}, so nothing of it is to be synchronized",
                    path.display()
                ),
            ));
        }
        open_with(path, access, &self.params()?)
    }

    /// Closes `db` as [`finish`] does, synchronizing it with the device
    /// first if --sync_hard was given and `result` is a success.
    fn finish<T>(&self, db: PolyDbm, result: Result<T>) -> Result<T> {
        let result = match result {
            Ok(value) if self.given().sync_hard => db.synchronize(Durability::Hard).map(|()| value),
            other => other,
        };
        finish(db, result)
    }

    /// With --sync_hard, makes the database a command wrote by other means
    /// than an open handle (a restore) durable: it is opened, synchronized
    /// with the device and closed.
    fn sync_written(&self, path: &Path, params: &Params) -> Result<()> {
        if !self.given().sync_hard {
            return Ok(());
        }
        let db = open_with(path, Access::Write, params)?;
        self.finish(db, Ok(()))
    }
}

impl DbFlags for ReadFlags {
    fn given(&self) -> Chosen<'_> {
        Chosen { open: &self.open, sync_hard: self.sync_hard, file: None, tuning: None }
    }
}

impl DbFlags for WriteFlags {
    fn given(&self) -> Chosen<'_> {
        Chosen { open: &self.open, sync_hard: self.sync_hard, file: Some(&self.file), tuning: None }
    }
}

impl DbFlags for CreateFlags {
    fn given(&self) -> Chosen<'_> {
        Chosen { tuning: Some(&self.tuning), ..self.write.given() }
    }
}

pub(crate) fn in_flag(flag: &str, e: Error) -> Error {
    Error::new(e.kind(), format!("{flag}: {}", e.message()))
}

/// Opens the database at `path` with `params`, with messages that say what a
/// user can do about a missing or locked file.
fn open_with(path: &Path, access: Access, params: &Params) -> Result<PolyDbm> {
    if access != Access::Create {
        must_exist(path)?;
    }
    let db_access =
        if access == Access::Read { kuradb::dbm::Access::ReadOnly } else { kuradb::dbm::Access::ReadWrite };
    PolyDbm::open(path, db_access, params).map_err(explain_open_error)
}

fn must_exist(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(_) if kuradb::dbm::published::is_published(path) => Ok(()),
        Ok(_) => Err(is_a_directory(path)),
        Err(_) if is_shard_set(path) => Ok(()),
        Err(_) => Err(Error::new(ErrorKind::NotFound, format!("no database file {}", path.display()))),
    }
}

/// The error for a directory given where a file is wanted, the same from
/// every command.
fn is_a_directory(path: &Path) -> Error {
    Error::new(ErrorKind::InvalidArgument, format!("{} is a directory, not a file", path.display()))
}

/// Whether `path` names a set of shard files (`NAME-00000-of-00004` …),
/// which PolyDbm opens by the set's name; whether the set is whole is its check.
fn is_shard_set(path: &Path) -> bool {
    let (Some(name), Some(dir)) = (path.file_name().and_then(|n| n.to_str()), path.parent()) else {
        return false;
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let prefix = format!("{name}-");
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix) && n[prefix.len()..].contains("-of-"))
        })
    })
}

/// The core's open errors with their advice in this tool's flags: how to
/// wait for a lock, how to name a class.
fn explain_open_error(e: Error) -> Error {
    match e.kind() {
        ErrorKind::WouldBlock => Error::new(ErrorKind::WouldBlock, with_cli_wait_hint(e.message())),
        ErrorKind::InvalidArgument if e.message().contains("give dbm=CLASS") => {
            Error::new(e.kind(), e.message().replace("give dbm=CLASS", "give --dbm CLASS"))
        }
        ErrorKind::InvalidArgument if e.message().contains("leave key_comparator out") => Error::new(
            e.kind(),
            e.message().replace("leave key_comparator out", "leave --key_comparator (or --comparator) out"),
        ),
        _ => e,
    }
}

/// `message` with the core's advice on waiting for a lock spelled as this
/// tool's flags.
pub(crate) fn with_cli_wait_hint(message: &str) -> String {
    message.replace(
        kuradb::file::LOCK_WAIT_HINT,
        "give --wait to wait for it, or --params lock_timeout=SECONDS to wait at most that long",
    )
}

/// Fails unless `path` is free for a new file.
fn must_not_exist(path: &Path, what: &str) -> Result<()> {
    if path.exists() {
        return Err(Error::new(
            ErrorKind::Duplication,
            format!("{} exists; {what} writes a new file: remove it or name another", path.display()),
        ));
    }
    Ok(())
}

/// The flags that choose how keys and values are written as text.
#[derive(Args, Debug, Clone, Copy)]
pub struct CodecFlags {
    /// Keys and values are hexadecimal, in arguments and in output.
    #[arg(long = "hex", conflicts_with = "base64")]
    hex: bool,

    /// Keys and values are base64, in arguments and in output.
    #[arg(long = "base64")]
    base64: bool,
}

impl CodecFlags {
    fn codec(self) -> Codec {
        match (self.hex, self.base64) {
            (true, _) => Codec::Hex,
            (_, true) => Codec::Base64,
            _ => Codec::Text,
        }
    }
}

/// Closes `db`, keeping the first of `result`'s error and closing's.
fn finish<T>(db: PolyDbm, result: Result<T>) -> Result<T> {
    let closed = db.close();
    let value = result?;
    closed?;
    Ok(value)
}

/// Where an export writes: standard output; a device, pipe or socket named
/// by the path, written as it is; or, for a regular file, a temporary file
/// beside it (beside the file a symbolic link names) that takes its place
/// only once everything is written and synchronized. A failed export so
/// leaves nothing at the destination (and a file already there as it was),
/// never a truncated copy that a script missing the exit status would keep
/// as a backup.
enum Output {
    Stdout(std::io::BufWriter<std::io::StdoutLock<'static>>),
    /// Not a regular file (`/dev/full`, a named pipe): nothing to replace.
    Special(std::io::BufWriter<std::fs::File>, PathBuf),
    File {
        writer: std::io::BufWriter<tempfile::NamedTempFile>,
        dest: PathBuf,
    },
}

impl Output {
    fn new(path: &Path) -> Result<Output> {
        if path == Path::new("-") {
            return Ok(Output::Stdout(crate::out::stdout()));
        }
        let existing = match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return Err(is_a_directory(path)),
            Ok(meta) if !meta.is_file() => {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| Error::io("opening", path, e))?;
                return Ok(Output::Special(std::io::BufWriter::with_capacity(1 << 16, file), path.into()));
            }
            Ok(meta) => Some(meta.permissions()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("reading the metadata of", path, e)),
        };
        // A link is followed: the file it names is replaced, the link kept.
        let dest = match existing {
            Some(_) => std::fs::canonicalize(path).map_err(|e| Error::io("resolving", path, e))?,
            None => path.to_path_buf(),
        };
        let dir = match dest.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // A new file gets the mode a plain create would give (the umask
        // applies), not a temporary file's owner-only one; a replaced file
        // keeps its own.
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .permissions(existing.clone().unwrap_or_else(|| std::fs::Permissions::from_mode(0o666)))
            .tempfile_in(dir)
            .map_err(|e| Error::io("creating a temporary file beside", &dest, e))?;
        if let Some(mode) = existing {
            // The umask applied at creation: the replaced file's mode, exactly.
            temp.as_file().set_permissions(mode).map_err(|e| Error::io("setting the mode of", &dest, e))?;
        }
        Ok(Output::File { writer: std::io::BufWriter::with_capacity(1 << 16, temp), dest })
    }

    /// Flushes what is written; a file is synchronized and renamed into place.
    fn commit(self) -> Result<()> {
        match self {
            Output::Stdout(mut out) => out.flush().map_err(crate::out::write_failed),
            Output::Special(mut out, path) => out.flush().map_err(|e| Error::io("writing", &path, e)),
            Output::File { writer, dest } => {
                let temp = writer.into_inner().map_err(|e| Error::io("writing", &dest, e.into_error()))?;
                temp.as_file().sync_all().map_err(|e| Error::io("synchronizing", &dest, e))?;
                temp.persist(&dest)
                    .map_err(|e| Error::io("renaming the finished export to", &dest, e.error))?;
                Ok(())
            }
        }
    }
}

impl Output {
    /// The writer under whichever destination this is.
    fn writer(&mut self) -> &mut dyn std::io::Write {
        match self {
            Output::Stdout(out) => out,
            Output::Special(out, _) => out,
            Output::File { writer, .. } => writer,
        }
    }
}

impl std::io::Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

/// A write error of stdout or an output file as a kuradb error.
fn write_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| {
        if path == Path::new("-") {
            crate::out::write_failed(e)
        } else {
            Error::io("writing", path, e)
        }
    }
}
