//! [`ReferenceDbm`]: a file of the reference implementation, opened read-only.

use std::path::{Path, PathBuf};

use super::cursor::RecordCursor;
use super::hash::{Damage, HashHeader};
use super::{flat, hash, read_only, skip, tree, ReferenceFormat};
use crate::dbm::class::DbmClass;
use crate::dbm::comparator::KeyComparator;
use crate::dbm::{Access, Action, Cursor, Dbm, Durability, EachProcessor, MultiProcessor, Processor};
use crate::error::{Error, Result};

/// A record held in memory: its key and value.
pub(super) type Record = (Box<[u8]>, Box<[u8]>);

/// What reading a file its writer left unhealthy kept and lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Salvage {
    /// The records kept.
    pub records: u64,
    /// Stretches of the record area that held no readable record (zeros the
    /// writer reserved but never wrote are not counted).
    pub damaged_regions: u64,
    /// Their total size in bytes: the records in them are lost.
    pub damaged_bytes: u64,
}

/// A file written by the reference implementation (Tkrzw), opened read-only.
///
/// The reader takes the file's live records into memory at open (a file
/// needs about as much memory as its records' bytes), then serves lookups
/// through a hash index and cursors in the file's order: a tree's or skip
/// list's key order, a hash file's record order. Every writing method
/// answers an error saying the file is read-only and that `kura util
/// convert` makes a kuradb database of it.
///
/// ```
/// use kuradb::dbm::tkrzw::{ReferenceDbm, ReferenceFormat};
/// use kuradb::dbm::Dbm;
/// # fn main() -> kuradb::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("casket.flat");
/// // The reference's flat record format: 0xFF, length, bytes; key then value.
/// std::fs::write(&path, b"\xff\x05apple\xff\x03red").unwrap();
/// assert_eq!(ReferenceFormat::of_file(&path)?, Some(ReferenceFormat::Flat));
/// let db = ReferenceDbm::open(&path)?;
/// assert_eq!(db.get(b"apple")?.as_deref(), Some(&b"red"[..]));
/// assert!(db.set(b"apple", b"green").unwrap_err().message().contains("kura util convert"));
/// # Ok(())
/// # }
/// ```
pub struct ReferenceDbm {
    path: PathBuf,
    format: ReferenceFormat,
    reference_class: String,
    records: Vec<Record>,
    /// (hash of the key, index in `records`), sorted.
    index: Vec<(u64, usize)>,
    order: Option<KeyComparator>,
    figures: Vec<(String, String)>,
    healthy: bool,
    salvage: Option<Salvage>,
}

impl ReferenceDbm {
    /// Opens the reference's file at `path`; a file its writer left
    /// unhealthy is salvaged (see [`ReferenceDbm::salvage`]).
    pub fn open(path: impl AsRef<Path>) -> Result<ReferenceDbm> {
        ReferenceDbm::read(path.as_ref(), false)
    }

    /// Opens the file at `path` salvaging it whatever its header says: the
    /// records of every readable stretch are kept, damaged ones skipped.
    pub fn open_salvaging(path: impl AsRef<Path>) -> Result<ReferenceDbm> {
        ReferenceDbm::read(path.as_ref(), true)
    }

    fn read(path: &Path, salvage: bool) -> Result<ReferenceDbm> {
        let format = ReferenceFormat::of_file(path)?.ok_or_else(|| {
            super::bytes::broken(format!("{} is not a file of the reference implementation", path.display()))
        })?;
        let data = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
        let named = |e: Error| {
            Error::new(
                e.kind(),
                format!(
                    "{} (a {} file of the reference): {}",
                    path.display(),
                    format.reference_name(),
                    e.message()
                ),
            )
        };
        let loaded = load(format, &data, salvage).map_err(named)?;
        let mut db = ReferenceDbm {
            path: path.to_path_buf(),
            format,
            reference_class: loaded.class,
            records: loaded.records,
            index: Vec::new(),
            order: loaded.order,
            figures: loaded.figures,
            healthy: loaded.healthy,
            salvage: None,
        };
        db.salvage = loaded.damage.map(|d| Salvage {
            records: db.records.len() as u64,
            damaged_regions: d.regions,
            damaged_bytes: d.bytes,
        });
        db.index = db.records.iter().enumerate().map(|(i, (k, _))| (key_hash(k), i)).collect();
        db.index.sort_unstable();
        Ok(db)
    }

    /// The format of the file.
    pub fn format(&self) -> ReferenceFormat {
        self.format
    }

    /// The reference's class name of the database that wrote the file
    /// (`HashDBM`, `TreeDBM`, `SkipDBM`, or for a flat file the on-memory
    /// class its metadata names, else `FlatRecord`).
    pub fn reference_class(&self) -> &str {
        &self.reference_class
    }

    /// The kuradb class that holds the same kind of database.
    pub fn class(&self) -> DbmClass {
        match self.format {
            ReferenceFormat::Hash => DbmClass::Hash,
            ReferenceFormat::Tree => DbmClass::Tree,
            ReferenceFormat::Skip => DbmClass::Skip,
            ReferenceFormat::Flat => DbmClass::from_name(&self.reference_class).unwrap_or(DbmClass::Tiny),
        }
    }

    /// The order of the keys, for a tree or skip file.
    pub fn key_order(&self) -> Option<KeyComparator> {
        self.order
    }

    /// What salvaging kept and lost, if the file was salvaged.
    pub fn salvage(&self) -> Option<Salvage> {
        self.salvage
    }

    pub(super) fn records(&self) -> &[Record] {
        &self.records
    }

    fn find(&self, key: &[u8]) -> Option<&[u8]> {
        let h = key_hash(key);
        let from = self.index.partition_point(|&(x, _)| x < h);
        self.index[from..]
            .iter()
            .take_while(|&&(x, _)| x == h)
            .map(|&(_, i)| &self.records[i])
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }

    fn keep_only(&self, action: &Action<'_>) -> Result<()> {
        match action {
            Action::Keep => Ok(()),
            _ => Err(read_only(&self.path)),
        }
    }
}

fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// What [`load`] read of a file.
struct Loaded {
    class: String,
    records: Vec<Record>,
    order: Option<KeyComparator>,
    figures: Vec<(String, String)>,
    healthy: bool,
    damage: Option<Damage>,
}

/// Copies borrowed records out of the file's bytes.
fn owned(records: Vec<(&[u8], &[u8])>) -> Vec<Record> {
    records.into_iter().map(|(k, v)| (k.into(), v.into())).collect()
}

fn load(format: ReferenceFormat, data: &[u8], salvage: bool) -> Result<Loaded> {
    Ok(match format {
        ReferenceFormat::Hash => {
            let header = HashHeader::parse(data)?;
            let salvage = salvage || !header.healthy;
            let (live, damage) = hash::replay(data, &header, salvage)?;
            let records: Vec<Record> = live.into_iter().map(|(_, k, v)| (k.into(), v.into())).collect();
            if !salvage && records.len() as u64 != header.num_records {
                return Err(super::bytes::broken(format!(
                    "its records number {} but its header says {}",
                    records.len(),
                    header.num_records
                )));
            }
            Loaded {
                class: "HashDBM".to_string(),
                records,
                order: None,
                figures: header.figures(""),
                healthy: header.healthy,
                damage: salvage.then_some(damage),
            }
        }
        ReferenceFormat::Tree => {
            let t = tree::read(data, salvage)?;
            let m = &t.meta;
            let mut figures: Vec<(String, String)> = [
                ("num_records", m.num_records.to_string()),
                ("eff_data_size", m.eff_data_size.to_string()),
                ("root_id", m.root_id.to_string()),
                ("first_id", m.first_id.to_string()),
                ("last_id", m.last_id.to_string()),
                ("num_leaf_nodes", m.num_leaves.to_string()),
                ("num_inner_nodes", m.num_inners.to_string()),
                ("tree_level", m.level.to_string()),
                ("max_page_size", m.max_page_size.to_string()),
                ("max_branches", m.max_branches.to_string()),
                ("key_comparator", m.comparator_name()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            figures.extend(t.header.figures("hash_"));
            Loaded {
                class: "TreeDBM".to_string(),
                order: Some(m.comparator()?),
                records: t.records,
                figures,
                healthy: t.header.healthy,
                damage: t.damage,
            }
        }
        ReferenceFormat::Skip => {
            let s = skip::read(data, salvage)?;
            Loaded {
                class: "SkipDBM".to_string(),
                records: owned(s.records),
                order: Some(KeyComparator::Lexical),
                figures: s.header.figures(),
                healthy: s.header.healthy,
                damage: s.damage,
            }
        }
        ReferenceFormat::Flat => {
            let f = flat::read(data)?;
            let class = f.metadata.iter().find(|(k, _)| k == "class").map(|(_, v)| v.clone());
            let mut figures = f.metadata;
            figures.retain(|(k, _)| k != "class");
            Loaded {
                class: class.unwrap_or_else(|| "FlatRecord".to_string()),
                records: owned(f.records),
                order: None,
                figures,
                healthy: true,
                damage: salvage.then_some(Damage::default()),
            }
        }
    })
}

impl Dbm for ReferenceDbm {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        if access.is_writable() {
            return Err(read_only(&self.path));
        }
        let action = f(self.find(key));
        self.keep_only(&action)
    }

    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        if access.is_writable() {
            return Err(read_only(&self.path));
        }
        for (i, key) in keys.iter().enumerate() {
            let action = f(i, key, self.find(key));
            self.keep_only(&action)?;
        }
        Ok(())
    }

    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        if access.is_writable() {
            return Err(read_only(&self.path));
        }
        for (k, v) in &self.records {
            let action = f(k, v);
            self.keep_only(&action)?;
        }
        Ok(())
    }

    fn count(&self) -> Result<u64> {
        Ok(self.records.len() as u64)
    }

    fn file_size(&self) -> Result<u64> {
        let meta = std::fs::metadata(&self.path).map_err(|e| Error::io("reading the size", &self.path, e))?;
        Ok(meta.len())
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn clear(&self) -> Result<()> {
        Err(read_only(&self.path))
    }

    fn rebuild(&self) -> Result<()> {
        Err(read_only(&self.path))
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        Ok(false)
    }

    fn synchronize(&self, _durability: Durability) -> Result<()> {
        // Nothing was written, so there is nothing to make durable.
        Ok(())
    }

    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        std::fs::copy(&self.path, dest).map_err(|e| Error::io("copying the file to", dest, e))?;
        if durability.is_hard() {
            let out = std::fs::File::open(dest).map_err(|e| Error::io("opening the copy", dest, e))?;
            out.sync_all().map_err(|e| Error::io("synchronizing the copy", dest, e))?;
        }
        Ok(())
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let mut out = vec![
            ("class".to_string(), self.reference_class.clone()),
            ("healthy".to_string(), self.healthy.to_string()),
            ("path".to_string(), self.path.display().to_string()),
            ("read_only_reference_file".to_string(), "true".to_string()),
        ];
        out.extend(self.figures.iter().cloned());
        if let Some(s) = self.salvage {
            out.push(("salvaged_records".to_string(), s.records.to_string()));
            out.push(("damaged_regions".to_string(), s.damaged_regions.to_string()));
            out.push(("damaged_bytes".to_string(), s.damaged_bytes.to_string()));
        }
        Ok(out)
    }

    fn is_healthy(&self) -> bool {
        self.healthy
    }

    fn is_ordered(&self) -> bool {
        self.order.is_some()
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(RecordCursor::new(self, &self.path, self.order)))
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
