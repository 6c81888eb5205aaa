//! Live version swap of the published directories a read-only server
//! serves (docs/serve.md, "Serving a published directory").
//!
//! A watcher thread reads each directory's `CURRENT` every
//! `--published_poll_ms`, and at once on SIGHUP or `KURA.SWAP`. When it
//! names another version, that version is opened and checked against its
//! manifest (as opening the directory checks the current one) while the old
//! one goes on serving; only an opened version is put in place
//! ([`Served::swap`]). A version that fails is logged and shown by INFO,
//! and is tried again only when `CURRENT` changes, on SIGHUP or on
//! `KURA.SWAP`, never on every poll.
//!
//! Requests take the database once each, so a command (and an EXEC's whole
//! block) reads one version. The replaced version is closed here once the
//! requests that took it are done; one still held after [`RELEASE_WAIT`]
//! (a client's WATCH, a long command) is closed by whichever holder lets
//! it go last.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::{published, Access, Dbm};
use kuradb::{Error, ErrorKind, Result};
use parking_lot::{Condvar, Mutex};

use super::databases::{self, Database, Db};
use super::state::Server;

/// How long a replaced version is waited for, to be closed here, before it
/// is left to its last holder.
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// A published directory served read-only, and which of its versions.
pub struct Published {
    dir: PathBuf,
    /// The spec's parameters (tuning), given to each version opened.
    params: Params,
    /// The version served now.
    version: AtomicU64,
    /// Versions put in place since the start.
    swaps: AtomicU64,
    /// The last version a check tried, held through each check so that
    /// checks take turns.
    tried: Mutex<Option<u64>>,
    /// Why the version `CURRENT` names is not served, while it is not.
    error: Mutex<Option<String>>,
}

impl Published {
    /// The published directory `path` names, with `db` opened from it, if
    /// it is one; `None` for any other database.
    pub fn of(path: &str, params: Params, db: &PolyDbm) -> Result<Option<Published>> {
        let dir = Path::new(path);
        if !db.is_sharded() || !published::is_published(dir) {
            return Ok(None);
        }
        // The version the database was opened at: the manifest it was
        // checked against names it (CURRENT may have moved since).
        let version = opened_version(dir, db)?;
        Ok(Some(Published {
            dir: dir.to_path_buf(),
            params,
            version: AtomicU64::new(version),
            swaps: AtomicU64::new(0),
            tried: Mutex::new(Some(version)),
            error: Mutex::new(None),
        }))
    }

    /// The version served now.
    pub fn version(&self) -> u64 {
        self.version.load(Relaxed)
    }

    /// The versions put in place since the start.
    pub fn swaps(&self) -> u64 {
        self.swaps.load(Relaxed)
    }

    /// Why the version `CURRENT` names is not served, if it is not.
    pub fn error(&self) -> Option<String> {
        self.error.lock().clone()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Notes why `CURRENT`'s version is not served; logged when new, or
    /// when the check was asked for (SIGHUP, KURA.SWAP), not at every poll.
    fn fail(&self, message: String, forced: bool) {
        let mut error = self.error.lock();
        if forced || error.as_deref() != Some(&message) {
            log::error!("{message}");
        }
        *error = Some(message);
    }
}

/// The version of `dir` whose shard files `db` has open.
fn opened_version(dir: &Path, db: &PolyDbm) -> Result<u64> {
    let opened = db.path().map(Path::to_path_buf);
    let version_of = |p: &Path| p.parent()?.file_name()?.to_str()?.strip_prefix("v-")?.parse::<u64>().ok();
    opened.as_deref().and_then(version_of).ok_or_else(|| {
        Error::new(ErrorKind::System, format!("cannot tell which version of {} was opened", dir.display()))
    })
}

/// What wakes the watcher.
#[derive(Default)]
struct Wake {
    /// A check was asked for (SIGHUP): versions that failed are tried again.
    forced: bool,
    /// The server is stopping.
    stop: bool,
}

/// Wakes the watcher thread; one per server.
#[derive(Default)]
pub struct Watcher {
    wake: Mutex<Wake>,
    signal: Condvar,
}

impl Watcher {
    /// Asks for a check of every published directory now, failed versions
    /// included (SIGHUP).
    pub fn request(&self) {
        self.wake.lock().forced = true;
        self.signal.notify_all();
    }

    /// Stops the watcher thread.
    pub fn stop(&self) {
        self.wake.lock().stop = true;
        self.signal.notify_all();
    }
}

/// Starts the watcher thread of `server`, if it serves a published
/// directory; `poll` is the time between two reads of `CURRENT` (`None`:
/// only when asked). Stop it with [`Watcher::stop`] and join it before the
/// server is dropped: it holds the server.
pub fn spawn(server: &Arc<Server>, poll: Option<Duration>) -> Result<Option<JoinHandle<()>>> {
    if server.databases.iter().all(|d| d.published.is_none()) {
        return Ok(None);
    }
    let server = Arc::clone(server);
    std::thread::Builder::new()
        .name("kura-published".to_string())
        .spawn(move || watch(&server, poll))
        .map(Some)
        .map_err(|e| {
            Error::new(ErrorKind::System, format!("starting the published directories' watcher: {e}"))
        })
}

fn watch(server: &Server, poll: Option<Duration>) {
    let watcher = &server.published;
    loop {
        let forced = {
            let mut wake = watcher.wake.lock();
            if !wake.forced && !wake.stop {
                match poll {
                    Some(poll) => {
                        watcher.signal.wait_for(&mut wake, poll);
                    }
                    None => watcher.signal.wait(&mut wake),
                }
            }
            if wake.stop {
                return;
            }
            std::mem::take(&mut wake.forced)
        };
        let _ = check_all(server, forced);
    }
}

/// Checks every published directory's `CURRENT` and puts a new version in
/// place (`forced`: a version that failed before is tried again); the
/// errors of the directories whose current version is not served.
pub fn check_all(server: &Server, forced: bool) -> Vec<String> {
    let mut errors = Vec::new();
    for (index, database) in server.databases.iter().enumerate() {
        let Some(published) = &database.published else { continue };
        check(server, index, database, published, forced);
        if let Some(error) = published.error() {
            errors.push(format!("database {index}: {error}"));
        }
    }
    errors
}

fn check(server: &Server, index: usize, database: &Database, published: &Published, forced: bool) {
    let mut tried = published.tried.lock();
    let dir = published.dir.display();
    let version = match published::current_version(&published.dir) {
        Ok(Some(version)) => version,
        Ok(None) => {
            return published.fail(
                format!(
                    "published directory {dir}: {} is gone; v-{} is still served",
                    published::CURRENT,
                    published.version()
                ),
                forced,
            )
        }
        Err(e) => {
            return published.fail(
                format!("published directory {dir}: {e}; v-{} is still served", published.version()),
                forced,
            )
        }
    };
    let served = published.version();
    if version == served {
        *tried = Some(version);
        *published.error.lock() = None;
        return;
    }
    if *tried == Some(version) && !forced {
        return;
    }
    *tried = Some(version);
    let opened = Instant::now();
    match open_version(published, database, version) {
        Ok(db) => {
            let old = database.db.swap(Arc::new(db));
            published.version.store(version, Relaxed);
            published.swaps.fetch_add(1, Relaxed);
            *published.error.lock() = None;
            // A SCAN in progress goes on over the new version.
            server.cursors.restart_live(index);
            log::info!(
                "published directory {dir}: serving v-{version} (was v-{served}; opened and checked in {:?})",
                opened.elapsed()
            );
            drop(tried);
            release(old, &format!("v-{served} of {dir}"));
        }
        Err(e) => published.fail(
            format!("published directory {dir}: v-{version} not served, v-{served} still is: {e}"),
            forced,
        ),
    }
}

/// Opens and checks `version`, and wraps it as the server serves databases.
fn open_version(published: &Published, database: &Database, version: u64) -> Result<Db> {
    let shards = published::open_version(&published.dir, version, Access::ReadOnly, &published.params)?;
    let poly = PolyDbm::Shards(shards);
    let ordered = poly.is_ordered();
    let order = match poly.key_order() {
        Ok(order) => order.unwrap_or_default(),
        Err(e) => {
            let _ = poly.close();
            return Err(e);
        }
    };
    if ordered != database.ordered || (ordered && order != database.order) {
        let _ = poly.close();
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "its class keeps {} key order than the version served at start (SCAN and RANGE rely on it): \
                 restart the server to serve it",
                if ordered { "another" } else { "no" }
            ),
        ));
    }
    databases::wrap(poly, true)
}

/// Closes `old` once the requests that took it are done, or leaves it to
/// its last holder after [`RELEASE_WAIT`].
fn release(old: Arc<Db>, what: &str) {
    let until = Instant::now() + RELEASE_WAIT;
    while Arc::strong_count(&old) > 1 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    match Arc::try_unwrap(old) {
        Ok(db) => match Box::new(db).close() {
            Ok(()) => log::info!("{what} closed"),
            Err(e) => log::warn!("closing {what}: {e}"),
        },
        Err(old) => log::info!(
            "{what} is still held by {} (a WATCH or a long command): closed when they are done",
            Arc::strong_count(&old) - 1
        ),
    }
}

/// INFO's `published` section: for each published directory served, its
/// path, the version served, the versions swapped in since the start and
/// why the version `CURRENT` names is not served (empty when it is). The
/// fields of database 0 are bare (`published_version`), those of database
/// N are `dbN_published_version` and so on.
pub fn info_section(server: &Server, out: &mut String) {
    use std::fmt::Write;
    for (index, database) in server.databases.iter().enumerate() {
        let Some(published) = &database.published else { continue };
        let prefix = if index == 0 { String::new() } else { format!("db{index}_") };
        // One line per field: an error's text loses its line breaks.
        let error = published.error().unwrap_or_default().replace(['\r', '\n'], " ");
        let _ = write!(
            out,
            "{prefix}published_dir:{}\r\n{prefix}published_version:{}\r\n{prefix}published_swaps:{}\r\n\
             {prefix}published_swap_error:{error}\r\n",
            published.dir().display(),
            published.version(),
            published.swaps(),
        );
    }
}
