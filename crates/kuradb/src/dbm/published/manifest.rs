//! `MANIFEST.json`: what a version holds, written once when the version is
//! made and read at every open (see `docs/format.md`, "Published directory").

use std::io::Read;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::dbm::class::DbmClass;
use crate::dbm::params::Params;
use crate::error::{Error, ErrorKind, Result};

/// The version of the manifest's layout this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// The name of the checksum every shard entry holds.
pub const CHECKSUM: &str = "xxh3_64";

/// The description of one version of a published directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The version's number (its directory is `v-<version>`).
    pub version: u64,
    /// The kuradb version that wrote it.
    pub kuradb_version: String,
    /// The id of the job whose commit made it.
    pub job: String,
    /// The class of every shard.
    pub class: DbmClass,
    /// The shards' parameters, as `PolyDbm` takes them (without `dbm` and
    /// `num_shards`, which have their own fields).
    pub params: Params,
    /// When the version was made, in milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// One entry per shard, in shard order.
    pub shards: Vec<ShardEntry>,
}

/// One shard file of a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardEntry {
    /// The file's name inside the version directory.
    pub file: String,
    /// The number of records the shard holds.
    pub records: u64,
    /// The file's size in bytes.
    pub bytes: u64,
    /// The XXH3 (64-bit, seed 0) hash of the file's bytes.
    pub checksum: u64,
}

impl Manifest {
    /// The number of shards.
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The manifest as the JSON text `MANIFEST.json` holds.
    pub fn to_json(&self) -> String {
        let params: Map<String, Value> =
            self.params.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
        let shards: Vec<Value> = self
            .shards
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "index": i,
                    "file": s.file,
                    "records": s.records,
                    "bytes": s.bytes,
                    "checksum": format!("{:016x}", s.checksum),
                })
            })
            .collect();
        let value = json!({
            "format": "kuradb-published",
            "format_version": FORMAT_VERSION,
            "kuradb_version": self.kuradb_version,
            "version": self.version,
            "job": self.job,
            "created_unix_ms": self.created_unix_ms,
            "class": self.class.name(),
            "params": params,
            "num_shards": self.shards.len(),
            "checksum": CHECKSUM,
            "shards": shards,
        });
        let mut text = serde_json::to_string_pretty(&value).expect("a JSON value always serializes");
        text.push('\n');
        text
    }

    /// Reads the manifest in `text`; `path` names the file in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Manifest> {
        let broken = |what: String| {
            Error::new(ErrorKind::BrokenData, format!("the manifest {} is broken: {what}", path.display()))
        };
        let value: Value = serde_json::from_str(text).map_err(|e| broken(format!("not JSON ({e})")))?;
        let field = |name: &str| value.get(name).ok_or_else(|| broken(format!("it has no field {name}")));
        let number = |v: &Value, name: &str| {
            v.as_u64().ok_or_else(|| broken(format!("{name} is not a non-negative integer")))
        };
        let string = |v: &Value, name: &str| {
            v.as_str().map(str::to_string).ok_or_else(|| broken(format!("{name} is not a string")))
        };
        if field("format")?.as_str() != Some("kuradb-published") {
            return Err(broken("its format is not kuradb-published".into()));
        }
        let format_version = number(field("format_version")?, "format_version")?;
        if format_version != FORMAT_VERSION {
            return Err(Error::new(
                ErrorKind::NotImplemented,
                format!(
                    "the manifest {} has format version {format_version}; this build reads version \
                     {FORMAT_VERSION}",
                    path.display()
                ),
            ));
        }
        let checksum = string(field("checksum")?, "checksum")?;
        if checksum != CHECKSUM {
            return Err(broken(format!("its checksum is {checksum:?}, not {CHECKSUM}")));
        }
        let class = DbmClass::from_name(&string(field("class")?, "class")?)
            .map_err(|e| broken(e.message().to_string()))?;
        let mut params = Params::new();
        let Some(entries) = field("params")?.as_object() else {
            return Err(broken("params is not an object".into()));
        };
        for (name, v) in entries {
            params.insert(name, &string(v, &format!("params.{name}"))?)?;
        }
        let Some(list) = field("shards")?.as_array() else {
            return Err(broken("shards is not a list".into()));
        };
        let mut shards = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let get = |name: &str| entry.get(name).ok_or_else(|| broken(format!("shard {i} has no {name}")));
            if number(get("index")?, "index")? != i as u64 {
                return Err(broken(format!("shard entry {i} is out of order")));
            }
            let sum = string(get("checksum")?, "checksum")?;
            let checksum = u64::from_str_radix(&sum, 16)
                .ok()
                .filter(|_| sum.len() == 16)
                .ok_or_else(|| broken(format!("shard {i}'s checksum {sum:?} is not 16 hex digits")))?;
            shards.push(ShardEntry {
                file: string(get("file")?, "file")?,
                records: number(get("records")?, "records")?,
                bytes: number(get("bytes")?, "bytes")?,
                checksum,
            });
        }
        if number(field("num_shards")?, "num_shards")? != shards.len() as u64 || shards.is_empty() {
            return Err(broken(format!("num_shards does not match its {} shard entries", shards.len())));
        }
        Ok(Manifest {
            version: number(field("version")?, "version")?,
            kuradb_version: string(field("kuradb_version")?, "kuradb_version")?,
            job: string(field("job")?, "job")?,
            class,
            params,
            created_unix_ms: number(field("created_unix_ms")?, "created_unix_ms")?,
            shards,
        })
    }

    /// Reads the manifest file at `path`.
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("read of the manifest", path, e))?;
        Manifest::from_json(&text, path)
    }
}

/// The XXH3 (64-bit) hash of the bytes of the file at `path`.
pub fn file_checksum(path: &Path) -> Result<u64> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("open for the checksum", path, e))?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io("read for the checksum", path, e))?;
        if n == 0 {
            return Ok(hasher.digest());
        }
        hasher.update(&buf[..n]);
    }
}
