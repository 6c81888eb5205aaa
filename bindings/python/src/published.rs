//! `kuradb.PublishJob`: staging and committing a version of a published
//! directory (`kuradb::dbm::published`), and `kuradb.verify_published`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kuradb::dbm::published::{self, CommitOptions, PublishJob};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{params_of, FsPath};
use crate::error::to_py;

/// One job writing a new version of a published directory: each task
/// attempt stages one shard (``stage`` answers an open, writable
/// ``kuradb.DBM``), one ``commit`` publishes the chosen attempts. The job
/// keeps no state outside the directory: every process of a job makes its
/// own with the same arguments.
#[pyclass(name = "PublishJob", module = "kuradb", frozen)]
pub struct PyPublishJob {
    job: PublishJob,
}

#[pymethods]
impl PyPublishJob {
    /// A job writing ``num_shards`` shards of the class ``dbm=`` names (and
    /// its other parameters) into the published directory ``dir``.
    #[new]
    #[pyo3(signature = (dir, job_id, num_shards, **params))]
    fn new(
        dir: FsPath,
        job_id: &str,
        num_shards: usize,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let params = params_of(params)?;
        Ok(PyPublishJob { job: PublishJob::new(&dir, job_id, num_shards, &params).map_err(to_py)? })
    }

    /// A job whose version holds the current version's records plus what
    /// its attempts add (each staged shard starts as a copy of the current
    /// one).
    #[staticmethod]
    fn appending(dir: FsPath, job_id: &str) -> PyResult<Self> {
        Ok(PyPublishJob { job: PublishJob::appending(&dir, job_id).map_err(to_py)? })
    }

    /// The number of shards of the version the job makes.
    #[getter]
    fn num_shards(&self) -> usize {
        self.job.num_shards()
    }

    /// Opens a new database for attempt ``attempt`` of shard ``shard`` in a
    /// directory of its own, writable: write the keys ``kuradb.shard_of``
    /// names this shard for, then close it.
    fn stage<'py>(&self, py: Python<'py>, shard: usize, attempt: &str) -> PyResult<Bound<'py, PyAny>> {
        let path = py.allow_threads(|| self.job.prepare(shard, attempt)).map_err(to_py)?;
        let kwargs = PyDict::new(py);
        for (name, value) in self.job.shard_params().iter() {
            kwargs.set_item(name, value)?;
        }
        py.import("kuradb")?.getattr("DBM")?.call((path, true), Some(&kwargs))
    }

    /// The file attempt ``attempt`` of shard ``shard`` writes.
    fn staged_path(&self, shard: usize, attempt: &str) -> PyResult<PathBuf> {
        self.job.staged_path(shard, attempt).map_err(to_py)
    }

    /// Publishes one attempt per shard (a mapping of shard to attempt id, or
    /// pairs) as a new version and answers its number. A shard without an
    /// attempt is an error unless ``create_missing``; versions beyond
    /// ``keep`` are removed after.
    #[pyo3(signature = (attempts, create_missing = false, keep = 2))]
    fn commit(
        &self,
        py: Python<'_>,
        attempts: &Bound<'_, PyAny>,
        create_missing: bool,
        keep: usize,
    ) -> PyResult<u64> {
        let pairs: Vec<(usize, String)> = match attempts.downcast::<PyDict>() {
            Ok(dict) => {
                dict.iter().map(|(k, v)| Ok((k.extract()?, v.str()?.to_string()))).collect::<PyResult<_>>()?
            }
            Err(_) => attempts
                .try_iter()?
                .map(|pair| {
                    let (shard, attempt): (usize, Bound<'_, PyAny>) = pair?.extract()?;
                    Ok((shard, attempt.str()?.to_string()))
                })
                .collect::<PyResult<_>>()?,
        };
        let refs: Vec<(usize, &str)> = pairs.iter().map(|(s, a)| (*s, a.as_str())).collect();
        let options = CommitOptions { create_missing, keep };
        py.allow_threads(|| self.job.commit(&refs, &options)).map_err(to_py)
    }

    /// Removes the job's staging: every attempt's files.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.job.abort()).map_err(to_py)
    }
}

/// Checks every shard file of the current version of the published
/// directory ``dir`` against its manifest (size, checksum, record count);
/// answers the manifest's version, class and shard count.
#[pyfunction]
fn verify_published(py: Python<'_>, dir: FsPath) -> PyResult<BTreeMap<&'static str, String>> {
    let manifest = py.allow_threads(|| published::verify(&dir)).map_err(to_py)?;
    let records: u64 = manifest.shards.iter().map(|s| s.records).sum();
    Ok(BTreeMap::from([
        ("version", manifest.version.to_string()),
        ("class", manifest.class.name().to_string()),
        ("num_shards", manifest.num_shards().to_string()),
        ("records", records.to_string()),
        ("job", manifest.job),
    ]))
}

/// Adds the class and function to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPublishJob>()?;
    m.add_function(wrap_pyfunction!(verify_published, m)?)?;
    Ok(())
}
