//! [`PublishJob`]: staging the shards of a new version and committing them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::durable::{link_or_copy, lock, sync_dir, sync_file, write_current, write_synced};
use super::manifest::{file_checksum, Manifest, ShardEntry};
use super::{current_manifest, current_version, set_name, version_dir, versions, MANIFEST, STAGING};
use crate::dbm::class::DbmClass;
use crate::dbm::params::Params;
use crate::dbm::poly::SingleDbm;
use crate::dbm::shard::{ShardDbm, MAX_SHARDS};
use crate::dbm::{Access, Dbm};
use crate::error::{Error, ErrorKind, Result};

/// The file in an attempt's directory naming the version an appending
/// attempt started from.
const BASE: &str = "BASE";

/// How a commit completes the version and what it keeps.
#[derive(Clone, Debug)]
pub struct CommitOptions {
    /// Creates the shards no attempt wrote (empty, or for an appending job
    /// the current version's shard unchanged) instead of refusing.
    pub create_missing: bool,
    /// How many versions to keep, the current one included (at least 1):
    /// older ones are removed after the commit.
    pub keep: usize,
}

impl Default for CommitOptions {
    fn default() -> CommitOptions {
        CommitOptions { create_missing: false, keep: 2 }
    }
}

/// The points between a commit's durable steps, where a test stops it as a
/// crash would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// The new version's files and manifest are in its build directory.
    Built,
    /// The build directory is renamed to `v-<N>`, not yet current.
    Installed,
    /// `CURRENT` names the new version; staging and old versions remain.
    Flipped,
}

/// One job writing a new version of the published directory `dir`: its
/// task attempts stage shard files, one commit publishes them.
///
/// A job is named by its id and holds no state outside the directory, so
/// each process of a distributed job (a driver and its executors) makes its
/// own `PublishJob` with the same arguments.
#[derive(Clone, Debug)]
pub struct PublishJob {
    dir: PathBuf,
    job: String,
    num_shards: usize,
    class: DbmClass,
    params: Params,
    /// For an appending job, the version its shards start from.
    base: Option<u64>,
}

impl PublishJob {
    /// A job writing `num_shards` shards of the class and parameters
    /// `params` name (`dbm` is required; every other parameter must be one
    /// the class takes) into the published directory `dir` (created if
    /// missing). `job_id` names the job's staging directory: letters,
    /// digits, `-`, `_` and `.`, not starting with a dot.
    pub fn new(
        dir: impl AsRef<Path>,
        job_id: &str,
        num_shards: usize,
        params: &Params,
    ) -> Result<PublishJob> {
        check_id("job id", job_id)?;
        if !(1..=MAX_SHARDS).contains(&num_shards) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the number of shards must be from 1 to {MAX_SHARDS}, not {num_shards}"),
            ));
        }
        let class = match params.get("dbm") {
            Some(name) => DbmClass::from_name(name)?,
            None => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "a published directory needs the class of its shards: give dbm= ({})",
                        DbmClass::name_list()
                    ),
                ))
            }
        };
        let params = params.without("dbm");
        for refused in ["num_shards", "truncate"] {
            if params.get(refused).is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("parameter {refused} is not one of a published directory's shards' parameters"),
                ));
            }
        }
        if let Some((name, _)) = params.iter().find(|(name, _)| name.starts_with("ulog_")) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("parameter {name}: a published directory's versions keep no update log"),
            ));
        }
        class.check(&params)?;
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create of the directory", &dir, e))?;
        Ok(PublishJob { dir, job: job_id.to_string(), num_shards, class, params, base: None })
    }

    /// A job making a new version of `dir` that holds the current version's
    /// records plus what its attempts add: each attempt's shard starts as a
    /// copy of the current version's shard (the same class, parameters and
    /// number of shards), and the commit is refused if another commit made
    /// a newer version meanwhile.
    pub fn appending(dir: impl AsRef<Path>, job_id: &str) -> Result<PublishJob> {
        let dir = dir.as_ref();
        let manifest = current_manifest(dir)?;
        let mut params = manifest.params.clone();
        params.insert("dbm", manifest.class.name())?;
        let mut job = PublishJob::new(dir, job_id, manifest.num_shards(), &params)?;
        job.base = Some(manifest.version);
        Ok(job)
    }

    /// The number of shards of the version the job makes.
    pub fn num_shards(&self) -> usize {
        self.num_shards
    }

    /// The job's staging directory.
    pub fn staging_dir(&self) -> PathBuf {
        self.dir.join(STAGING).join(&self.job)
    }

    fn attempt_dir(&self, shard: usize, attempt: &str) -> PathBuf {
        self.staging_dir().join(format!("{shard:05}-{attempt}"))
    }

    /// The name of shard `shard`'s file, in staging and in the version.
    fn file_name(&self, shard: usize) -> String {
        let path = ShardDbm::shard_path(Path::new(&set_name(self.class)), shard, self.num_shards);
        path.to_string_lossy().into_owned()
    }

    /// The file attempt `attempt` of shard `shard` writes.
    pub fn staged_path(&self, shard: usize, attempt: &str) -> Result<PathBuf> {
        self.check_shard(shard)?;
        check_id("attempt id", attempt)?;
        Ok(self.attempt_dir(shard, attempt).join(self.file_name(shard)))
    }

    /// Opens a new, empty database for attempt `attempt` of shard `shard`,
    /// writable, in a directory of its own (what an earlier run of the same
    /// attempt id left there is discarded first). For an appending job it
    /// starts as a copy of the current version's shard. The caller writes
    /// the shard's records (keys for which
    /// [`shard_of`](crate::dbm::shard::shard_of) names this shard) and
    /// closes it before the commit.
    pub fn stage(&self, shard: usize, attempt: &str) -> Result<SingleDbm> {
        let path = self.prepare(shard, attempt)?;
        SingleDbm::open(&path, Access::ReadWrite, &self.shard_params())
    }

    /// What [`PublishJob::stage`] does before it opens the database: the
    /// attempt's directory made afresh (with the current version's shard
    /// copied in, for an appending job); answers the file's path, for a
    /// caller that opens it itself with [`PublishJob::shard_params`].
    pub fn prepare(&self, shard: usize, attempt: &str) -> Result<PathBuf> {
        let path = self.staged_path(shard, attempt)?;
        let adir = self.attempt_dir(shard, attempt);
        if adir.exists() {
            std::fs::remove_dir_all(&adir)
                .map_err(|e| Error::io("removal of an earlier attempt", &adir, e))?;
        }
        std::fs::create_dir_all(&adir)
            .map_err(|e| Error::io("create of the attempt's directory", &adir, e))?;
        if let Some(base) = self.base {
            let from = version_dir(&self.dir, base).join(self.file_name(shard));
            std::fs::copy(&from, &path)
                .map_err(|e| Error::io(format!("copy of {}", from.display()), &path, e))?;
            write_synced(&adir.join(BASE), &format!("{base}\n"))?;
        }
        Ok(path)
    }

    /// The parameters every shard is opened with: the job's, with `dbm`.
    pub fn shard_params(&self) -> Params {
        let mut params = self.params.clone();
        // `new` took `dbm` out of the others, so the name is free.
        let _ = params.insert("dbm", self.class.name());
        params
    }

    fn check_shard(&self, shard: usize) -> Result<()> {
        if shard >= self.num_shards {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("shard {shard} is out of range: the job has shards 0 to {}", self.num_shards - 1),
            ));
        }
        Ok(())
    }

    /// Publishes the attempts `attempts` chose, one `(shard, attempt id)`
    /// for each shard from 0 to `num_shards - 1`, as a new version, and
    /// answers its number. A shard chosen twice is an error; so is a shard
    /// not chosen, unless `options.create_missing`.
    ///
    /// The files are linked into a new version directory with the manifest,
    /// made durable, and `CURRENT` is replaced in one rename; then the job's
    /// staging directory (every attempt's files) is removed and the versions
    /// beyond `options.keep` are pruned. A crash at any point leaves the old
    /// or the new version current, never a part of one. A commit that
    /// failed or was cut short can be run again: before the switch it
    /// starts over; after it (while its version is still the current one)
    /// it finishes the cleanup and answers the version it made.
    pub fn commit(&self, attempts: &[(usize, &str)], options: &CommitOptions) -> Result<u64> {
        self.commit_with(attempts, options, &mut |_| Ok(()))
    }

    /// [`PublishJob::commit`], calling `after` at each [`Step`]; an error
    /// from it stops the commit there.
    pub(super) fn commit_with(
        &self,
        attempts: &[(usize, &str)],
        options: &CommitOptions,
        after: &mut dyn FnMut(Step) -> Result<()>,
    ) -> Result<u64> {
        if options.keep == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "keep must be at least 1: the current version stays",
            ));
        }
        let _lock = lock(&self.dir)?;
        let current = current_version(&self.dir)?;
        if let Some(version) = current {
            let manifest = current_manifest(&self.dir)?;
            if manifest.job == self.job {
                // This job's commit switched versions before it stopped.
                self.finish(version, options)?;
                return Ok(version);
            }
        }
        // Past the current version are only builds of commits that stopped
        // before their switch: under the lock, no commit is making them.
        for stray in versions(&self.dir)?.into_iter().filter(|&v| Some(v) > current) {
            let path = version_dir(&self.dir, stray);
            std::fs::remove_dir_all(&path)
                .map_err(|e| Error::io("removal of an unfinished version", &path, e))?;
        }
        let chosen = self.chosen(attempts, options)?;
        for (&shard, attempt) in &chosen {
            let Some(attempt) = attempt else { continue };
            let base = std::fs::read_to_string(self.attempt_dir(shard, attempt).join(BASE)).ok();
            if let Some(base) = base {
                let base = base.trim().parse::<u64>().ok();
                if base != current {
                    return Err(Error::new(
                        ErrorKind::Conflict,
                        format!(
                            "shard {shard}'s attempt {attempt} appended to v-{}, but v-{} is current now: run \
                             the appending job again",
                            base.map_or("?".to_string(), |b| b.to_string()),
                            current.map_or("?".to_string(), |c| c.to_string())
                        ),
                    ));
                }
            }
        }
        let build = self.staging_dir().join("_build");
        if build.exists() {
            std::fs::remove_dir_all(&build)
                .map_err(|e| Error::io("removal of an earlier build", &build, e))?;
        }
        std::fs::create_dir_all(&build).map_err(|e| Error::io("create", &build, e))?;
        let mut shards = Vec::with_capacity(self.num_shards);
        for (&shard, attempt) in &chosen {
            let name = self.file_name(shard);
            let to = build.join(&name);
            match attempt {
                Some(attempt) => link_or_copy(&self.staged_path(shard, attempt)?, &to)?,
                None => match self.base {
                    Some(base) => link_or_copy(&version_dir(&self.dir, base).join(&name), &to)?,
                    None => SingleDbm::open(&to, Access::ReadWrite, &self.shard_params())?.close()?,
                },
            }
            let db = SingleDbm::open(&to, Access::ReadOnly, &self.shard_params())?;
            let counted = db.count();
            db.close()?;
            let records = counted?;
            sync_file(&to)?;
            let bytes = std::fs::metadata(&to).map_err(|e| Error::io("stat", &to, e))?.len();
            shards.push(ShardEntry { file: name, records, bytes, checksum: file_checksum(&to)? });
        }
        let version = current.unwrap_or(0) + 1;
        let manifest = Manifest {
            version,
            kuradb_version: env!("CARGO_PKG_VERSION").to_string(),
            job: self.job.clone(),
            class: self.class,
            params: self.params.clone(),
            created_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            shards,
        };
        write_synced(&build.join(MANIFEST), &manifest.to_json())?;
        sync_dir(&build)?;
        after(Step::Built)?;
        let vdir = version_dir(&self.dir, version);
        std::fs::rename(&build, &vdir).map_err(|e| Error::io("rename of the new version", &vdir, e))?;
        sync_dir(&self.dir)?;
        after(Step::Installed)?;
        write_current(&self.dir, version)?;
        after(Step::Flipped)?;
        self.finish(version, options)?;
        Ok(version)
    }

    /// What follows the switch to `version`: the job's staging removed, old
    /// versions pruned.
    fn finish(&self, version: u64, options: &CommitOptions) -> Result<()> {
        self.abort()?;
        let older: Vec<u64> = versions(&self.dir)?.into_iter().filter(|&v| v < version).collect();
        let kept_from = older.len().saturating_sub(options.keep - 1);
        for &v in &older[..kept_from] {
            let path = version_dir(&self.dir, v);
            std::fs::remove_dir_all(&path).map_err(|e| Error::io("removal of an old version", &path, e))?;
        }
        sync_dir(&self.dir)
    }

    /// The attempt chosen for each shard, `None` for one to create.
    fn chosen<'a>(
        &self,
        attempts: &[(usize, &'a str)],
        options: &CommitOptions,
    ) -> Result<BTreeMap<usize, Option<&'a str>>> {
        let mut chosen = BTreeMap::new();
        for &(shard, attempt) in attempts {
            let path = self.staged_path(shard, attempt)?;
            if let Some(Some(other)) = chosen.insert(shard, Some(attempt)) {
                return Err(Error::new(
                    ErrorKind::Duplication,
                    format!(
                        "shard {shard} is committed twice, by attempts {other} and {attempt}: choose one"
                    ),
                ));
            }
            if !path.is_file() {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "attempt {attempt} of shard {shard} staged no file: {} is missing",
                        path.display()
                    ),
                ));
            }
        }
        let missing: Vec<String> =
            (0..self.num_shards).filter(|s| !chosen.contains_key(s)).map(|s| s.to_string()).collect();
        if !missing.is_empty() {
            if !options.create_missing {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "no attempt is committed for shard{} {} of {}: commit one for each, or create them empty",
                        if missing.len() > 1 { "s" } else { "" },
                        missing.join(", "),
                        self.num_shards
                    ),
                ));
            }
            for shard in 0..self.num_shards {
                chosen.entry(shard).or_insert(None);
            }
        }
        Ok(chosen)
    }

    /// Removes the job's staging directory: every attempt's files (and
    /// `_staging` itself once no job has files there). Nothing to remove is
    /// no error.
    pub fn abort(&self) -> Result<()> {
        let staging = self.staging_dir();
        match std::fs::remove_dir_all(&staging) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io("removal of the job's staging", &staging, e))
            }
            _ => {}
        }
        // Fails while another job stages, which is as it should be.
        let _ = std::fs::remove_dir(self.dir.join(STAGING));
        Ok(())
    }
}

/// An error unless `id` is a name safe as one component of a path.
fn check_id(what: &str, id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && !id.starts_with('_')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!("{what} {id:?} is not one: use letters, digits, '-', '_' and '.' (not first), at most 200"),
    ))
}
