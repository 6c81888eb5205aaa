//! One logical database over several shard files: [`ShardDbm`].
//!
//! Shard `i` of `n` lives at `PATH-0000i-of-0000n`; a key belongs to the
//! shard its stable hash names (the XXH3 hash, which does not change between
//! runs or versions, modulo `n`), so operations on keys of different shards
//! run in parallel, each under its own shard's locks. Every shard is a
//! [`SingleDbm`] of the same class and parameters. Ordered classes iterate in
//! the global key order, merging the shards' cursors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

mod cursor;

use cursor::{ChainCursor, MergeCursor};

use super::class::DbmClass;
use super::comparator::KeyComparator;
use super::params::Params;
use super::poly::SingleDbm;
use super::{Action, Cursor, Dbm, EachProcessor, FinalChange, MultiProcessor, Processor, UnitPart};
use crate::dbm::{Access, Durability};
use crate::error::{Error, ErrorKind, Result};
use crate::ulog::params::UlogParams;
use crate::ulog::UpdateLogger;

/// The most shards a set may have.
pub const MAX_SHARDS: usize = 99_999;

/// A database spread over shard files by the hash of the key.
pub struct ShardDbm {
    path: PathBuf,
    shards: Vec<SingleDbm>,
    /// The order of keys for merging cursors; `None` for unordered classes.
    order: Option<KeyComparator>,
    /// Shared by single-key operations, taken alone by those spanning shards,
    /// so that those are atomic across shards too.
    gate: RwLock<()>,
}

crate::dbm::builder::params_builder!(ShardDbm);

impl ShardDbm {
    /// The file of shard `index` of `count` for the set at `path`.
    pub fn shard_path(path: &Path, index: usize, count: usize) -> PathBuf {
        let mut name = path.as_os_str().to_os_string();
        name.push(format!("-{index:05}-of-{count:05}"));
        PathBuf::from(name)
    }

    /// The number of shards of the set existing at `path`, if any file of
    /// one exists; an error if the set is not whole.
    pub fn existing_count(path: &Path) -> Result<Option<usize>> {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(None) };
        let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
        let mut counts = Vec::new();
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(name)) else { continue };
            let parsed = rest.strip_prefix('-').and_then(|r| r.split_once("-of-")).and_then(|(i, n)| {
                let ok = i.len() == 5 && n.len() == 5;
                ok.then(|| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?))).flatten()
            });
            if let Some((_, count)) = parsed {
                counts.push(count);
            }
        }
        counts.sort_unstable();
        counts.dedup();
        match counts.as_slice() {
            [] => Ok(None),
            [count] => {
                let missing: Vec<String> = (0..*count)
                    .map(|i| ShardDbm::shard_path(path, i, *count))
                    .filter(|p| !p.exists())
                    .map(|p| p.display().to_string())
                    .collect();
                if missing.is_empty() {
                    Ok(Some(*count))
                } else {
                    Err(Error::new(
                        ErrorKind::BrokenData,
                        format!(
                            "the shard set {} is incomplete: {} missing",
                            path.display(),
                            missing.join(", ")
                        ),
                    ))
                }
            }
            _ => Err(Error::new(
                ErrorKind::BrokenData,
                format!(
                    "{} has shard files of several sets ({}): remove the ones that do not belong",
                    path.display(),
                    counts.iter().map(|c| format!("-of-{c:05}")).collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }

    /// Opens the shard set at `path`, or creates one of `num_shards` shards
    /// (a parameter, which must match an existing set's count if given); the
    /// other parameters open each shard. An empty path makes a set of
    /// `num_shards` on-memory databases, with no files. With `ulog_prefix`, a writer logs
    /// into one update log, shard `i`'s entries with index `ulog_dbm_index + i`.
    pub fn open(path: impl AsRef<Path>, access: Access, params: &Params) -> Result<ShardDbm> {
        let path = path.as_ref().to_path_buf();
        let asked = match params.get("num_shards") {
            None => None,
            Some(text) => match text.trim().parse::<usize>() {
                Ok(n) if (1..=MAX_SHARDS).contains(&n) => Some(n),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("parameter num_shards must be a number from 1 to {MAX_SHARDS}, not {text:?}"),
                    ))
                }
            },
        };
        let truncating = params.flag("truncate")?.unwrap_or(false);
        let count = match (ShardDbm::existing_count(&path)?, asked) {
            (Some(found), Some(asked)) if found != asked && !(access.is_writable() && truncating) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("the shard set {} has {found} shards, not {asked}", path.display()),
                ))
            }
            (Some(found), None) => found,
            (_, Some(asked)) => asked,
            (None, None) => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("no shard set {} exists: give num_shards to create one", path.display()),
                ))
            }
        };
        // One log for the set, each shard's entries marked with its index.
        let (shard_params, ulog) = UlogParams::take(&params.without("num_shards"))?;
        let queue = match &ulog {
            Some(ulog) if access.is_writable() => Some(ulog.open_queue()?),
            _ => None,
        };
        let mut shards = Vec::with_capacity(count);
        // An empty path names no files: every shard is an on-memory database
        // (see SingleDbm::open).
        let on_memory = path.as_os_str().is_empty();
        for i in 0..count {
            let shard = if on_memory { PathBuf::new() } else { ShardDbm::shard_path(&path, i, count) };
            if !on_memory && !access.is_writable() && !shard.exists() {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "the shard set {} does not exist: {} is missing",
                        path.display(),
                        shard.display()
                    ),
                ));
            }
            let mut db = SingleDbm::open(&shard, access, &with_set_class(&shard_params, &path)?)?;
            if let (Some(ulog), Some(queue)) = (&ulog, &queue) {
                db = db.with_update_logger(ulog.logger(queue, i as u32));
            }
            shards.push(db);
        }
        let classes: Vec<_> = shards.iter().map(SingleDbm::class).collect();
        if classes.windows(2).any(|w| w[0] != w[1]) {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!("the shards of {} are of different classes", path.display()),
            ));
        }
        let order = shards[0].key_order()?;
        Ok(ShardDbm { path, shards, order, gate: RwLock::new(()) })
    }

    /// The number of shards.
    pub fn num_shards(&self) -> usize {
        self.shards.len()
    }

    /// The shard databases, in order.
    pub fn shards(&self) -> &[SingleDbm] {
        &self.shards
    }

    /// The index of the shard `key` lives in (see [`shard_of`]).
    fn shard_index(&self, key: &[u8]) -> usize {
        route(key, self.shards.len())
    }

    fn shard_for(&self, key: &[u8]) -> &SingleDbm {
        &self.shards[self.shard_index(key)]
    }

    /// An error unless `key`, met in shard `index`, belongs there. A record
    /// in the wrong shard (files renamed or mixed up between sets) is one no
    /// lookup finds, and a walk would show its key twice.
    fn check_placed(&self, index: usize, key: &[u8]) -> Result<()> {
        let home = self.shard_index(key);
        if home == index {
            return Ok(());
        }
        let file = |i: usize| self.shards[i].file_path().map(|p| p.display().to_string()).unwrap_or_default();
        Err(Error::new(
            ErrorKind::BrokenData,
            format!(
                "the shard set {} is broken: {} holds the record of {}, which belongs in {}: its shard \
                 files are mixed up",
                self.path.display(),
                file(index),
                super::show_key(key),
                file(home)
            ),
        ))
    }

    /// Closes every shard, reporting the first error after closing them all.
    pub fn close(self) -> Result<()> {
        let mut result = Ok(());
        for shard in self.shards {
            let closed = shard.close();
            if result.is_ok() {
                result = closed;
            }
        }
        result
    }

    /// Applies `f` to every shard in turn, reporting the first error after
    /// trying them all.
    fn each(&self, f: impl Fn(&SingleDbm) -> Result<()>) -> Result<()> {
        let mut result = Ok(());
        for shard in &self.shards {
            let done = f(shard);
            if result.is_ok() {
                result = done;
            }
        }
        result
    }

    /// Restores each shard of the damaged or crashed set at `src` into the
    /// set at `dest` (see [`SingleDbm::restore`]); answers the number of
    /// records kept in all.
    pub fn restore(src: &Path, dest: &Path, params: &Params) -> Result<u64> {
        let n = ShardDbm::existing_count(src)?.ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("no shard set {} exists", src.display()))
        })?;
        let params = with_set_class(&params.without("num_shards"), src)?;
        let mut kept = 0;
        for i in 0..n {
            let (from, to) = (ShardDbm::shard_path(src, i, n), ShardDbm::shard_path(dest, i, n));
            kept += SingleDbm::restore(from, to, &params)?;
        }
        Ok(kept)
    }

    /// The class of the shards.
    pub fn class(&self) -> DbmClass {
        self.shards[0].class()
    }

    /// The set with every change made through any shard told to `logger`
    /// first (see [`LoggedDbm`](crate::ulog::LoggedDbm)).
    pub fn with_update_logger(self, logger: Arc<dyn UpdateLogger>) -> ShardDbm {
        let shards = self.shards.into_iter().map(|s| s.with_update_logger(Arc::clone(&logger))).collect();
        ShardDbm { shards, ..self }
    }

    /// The key order of the set: the shards', or `None` for unordered ones.
    pub fn key_order(&self) -> Option<KeyComparator> {
        self.order
    }
}

/// The index of the shard of a set of `num_shards` that `key` lives in: the
/// XXH3 (64-bit) hash of the key modulo the count. The hash is stable
/// between runs and versions, so a program that writes the shards of a set
/// itself (one task per shard) routes each key where [`ShardDbm`] looks for
/// it. An error unless `num_shards` is from 1 to [`MAX_SHARDS`].
///
/// ```
/// use kuradb::dbm::shard::shard_of;
/// assert!(shard_of(b"japan", 4)? < 4);
/// assert!(shard_of(b"japan", 0).is_err());
/// # Ok::<(), kuradb::Error>(())
/// ```
pub fn shard_of(key: &[u8], num_shards: usize) -> Result<usize> {
    if !(1..=MAX_SHARDS).contains(&num_shards) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("the number of shards must be from 1 to {MAX_SHARDS}, not {num_shards}"),
        ));
    }
    Ok(route(key, num_shards))
}

/// [`shard_of`] for a count already checked (a set's own, never 0).
fn route(key: &[u8], num_shards: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(key) % num_shards as u64) as usize
}

/// `params` for one shard of the set at `path`: the shards' own names end
/// in `-0000i-of-0000n`, so the class an extension names is the set's.
/// Without it a set of flat files of another on-memory class would open,
/// or restore, as tiny shards.
fn with_set_class(params: &Params, path: &Path) -> Result<Params> {
    let mut params = params.clone();
    if params.get("dbm").is_none() {
        if let Some(class) = DbmClass::from_extension(path) {
            params.insert("dbm", class.name())?;
        }
    }
    Ok(params)
}

impl Dbm for ShardDbm {
    fn close(self: Box<Self>) -> Result<()> {
        ShardDbm::close(*self)
    }

    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        let _gate = self.gate.read();
        self.shard_for(key).process(key, access, f)
    }

    /// Atomic across shards: no other operation runs meanwhile. Keys are
    /// shown in the caller's order, each in its shard's own `process`; an
    /// occurrence of a key answered earlier in the call is shown what that
    /// answer left, not what its shard shows (a skip database shows its
    /// file until the next synchronization).
    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        let _gate = self.gate.write();
        let mut answered: HashMap<&[u8], Option<Vec<u8>>> = HashMap::new();
        for (i, &key) in keys.iter().enumerate() {
            let earlier = answered.get(key).cloned();
            let mut left = None;
            self.shard_for(key).process(key, access, &mut |value| {
                let shown = match &earlier {
                    Some(answer) => answer.as_deref(),
                    None => value,
                };
                let action = f(i, key, shown);
                left = Some(match &action {
                    Action::Keep => shown.map(<[u8]>::to_vec),
                    Action::Remove => None,
                    Action::Set(v) => Some(v.to_vec()),
                });
                action
            })?;
            if let Some(left) = left {
                answered.insert(key, left);
            }
        }
        Ok(())
    }

    /// A unit whose keys live in one shard goes to that shard whole. One
    /// spanning shards is made under the set's exclusive gate, as
    /// [`Dbm::process_multi`] is, so no other operation sees a part of it:
    /// each shard in turn gets its own changes as one part of the unit,
    /// with a new id the parts share, and (through its update log, if it
    /// has one) logs them as one entry marked with its own index. Under the
    /// gate nothing else is logged between the parts, so a reader of the
    /// log finds them one after the other and applies them together once
    /// it has the last. If a shard fails, the parts before it stay made
    /// (and logged), the later ones are not.
    fn apply_changes(
        &self,
        changes: &[FinalChange<'_>],
        part: UnitPart,
        seen: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        if !part.is_whole() {
            return Err(Error::new(
                ErrorKind::Infeasible,
                "a shard set splits a unit among its shards itself: it takes whole units, not a part of one",
            ));
        }
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); self.shards.len()];
        for (i, change) in changes.iter().enumerate() {
            by_shard[self.shard_index(change.key())].push(i);
        }
        let used: Vec<usize> = (0..by_shard.len()).filter(|&s| !by_shard[s].is_empty()).collect();
        let run = |shard: usize, part: UnitPart, seen: &mut dyn FnMut(usize, Option<&[u8]>)| {
            let indexes = &by_shard[shard];
            let mine: Vec<FinalChange<'_>> = indexes.iter().map(|&i| changes[i]).collect();
            self.shards[shard].apply_changes(&mine, part, &mut |j, old| seen(indexes[j], old))
        };
        match used.as_slice() {
            [] => Ok(()),
            [shard] => {
                let _gate = self.gate.read();
                run(*shard, UnitPart::WHOLE, seen)
            }
            _ => {
                let _gate = self.gate.write();
                let id = UnitPart::new_id();
                let count = used.len() as u32;
                for (index, &shard) in used.iter().enumerate() {
                    run(shard, UnitPart { id, index: index as u32, count }, seen)?;
                }
                Ok(())
            }
        }
    }

    fn prefetch(&self, keys: &[&[u8]]) {
        let mut by_shard: Vec<Vec<&[u8]>> = vec![Vec::new(); self.shards.len()];
        for &key in keys {
            by_shard[self.shard_index(key)].push(key);
        }
        for (shard, keys) in self.shards.iter().zip(&by_shard) {
            shard.prefetch(keys);
        }
    }

    // A key's own operations go to its shard whole, as the shard's class does
    // them (a skip database adds a record on set rather than replacing them).
    fn contains(&self, key: &[u8]) -> Result<bool> {
        let _gate = self.gate.read();
        self.shard_for(key).contains(key)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let _gate = self.gate.read();
        self.shard_for(key).get(key)
    }

    fn process_presence<'a>(&self, key: &[u8], f: &mut dyn FnMut(bool) -> Action<'a>) -> Result<()> {
        let _gate = self.gate.read();
        self.shard_for(key).process_presence(key, f)
    }

    fn set(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _gate = self.gate.read();
        self.shard_for(key).set(key, value)
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _gate = self.gate.read();
        self.shard_for(key).insert(key, value)
    }

    fn remove(&self, key: &[u8]) -> Result<bool> {
        let _gate = self.gate.read();
        self.shard_for(key).remove(key)
    }

    fn append(&self, key: &[u8], value: &[u8], delimiter: &[u8]) -> Result<()> {
        let _gate = self.gate.read();
        self.shard_for(key).append(key, value, delimiter)
    }

    fn compare_exchange(&self, key: &[u8], expected: Option<&[u8]>, desired: Option<&[u8]>) -> Result<bool> {
        let _gate = self.gate.read();
        self.shard_for(key).compare_exchange(key, expected, desired)
    }

    fn increment(&self, key: &[u8], delta: i64, initial: i64) -> Result<i64> {
        let _gate = self.gate.read();
        self.shard_for(key).increment(key, delta, initial)
    }

    /// Shard by shard (not in the global key order).
    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let _gate = self.gate.write();
        for (i, shard) in self.shards.iter().enumerate() {
            let mut misplaced = Ok(());
            shard.process_each(access, &mut |key, value| {
                if misplaced.is_err() {
                    return Action::Keep;
                }
                misplaced = self.check_placed(i, key);
                if misplaced.is_err() {
                    return Action::Keep;
                }
                f(key, value)
            })?;
            misplaced?;
        }
        Ok(())
    }

    /// Saturating: a damaged shard's count can be anything.
    fn count(&self) -> Result<u64> {
        self.shards.iter().try_fold(0u64, |total, s| Ok(total.saturating_add(s.count()?)))
    }

    fn file_size(&self) -> Result<u64> {
        self.shards.iter().map(|s| s.file_size()).sum()
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn clear(&self) -> Result<()> {
        let _gate = self.gate.write();
        self.each(|s| s.clear())
    }

    fn rebuild(&self) -> Result<()> {
        self.each(|s| s.rebuild())
    }

    /// Shard by shard, each checking the parameters as it does alone.
    fn rebuild_with_params(&self, params: &Params) -> Result<()> {
        for shard in &self.shards {
            shard.rebuild_with(params)?;
        }
        Ok(())
    }

    fn should_be_rebuilt(&self) -> Result<bool> {
        for shard in &self.shards {
            if shard.should_be_rebuilt()? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn synchronize(&self, durability: Durability) -> Result<()> {
        self.each(|s| s.synchronize(durability))
    }

    /// Copies every shard to the shard files of a set at `dest`; the copy
    /// is consistent across shards (updates wait until it is taken).
    fn copy_file_data(&self, dest: &Path, durability: Durability) -> Result<()> {
        let _gate = self.gate.write();
        let n = self.shards.len();
        for (i, shard) in self.shards.iter().enumerate() {
            shard.copy_file_data(&ShardDbm::shard_path(dest, i, n), durability)?;
        }
        Ok(())
    }

    fn inspect(&self) -> Result<Vec<(String, String)>> {
        let mut out = vec![
            ("class".to_string(), "ShardDbm".to_string()),
            ("path".to_string(), self.path.display().to_string()),
            ("num_shards".to_string(), self.shards.len().to_string()),
            ("num_records".to_string(), self.count()?.to_string()),
            ("file_size".to_string(), self.file_size()?.to_string()),
        ];
        for (i, shard) in self.shards.iter().enumerate() {
            out.extend(shard.inspect()?.into_iter().map(|(k, v)| (format!("shard{i}_{k}"), v)));
        }
        Ok(out)
    }

    fn is_healthy(&self) -> bool {
        self.shards.iter().all(SingleDbm::is_healthy)
    }

    fn is_ordered(&self) -> bool {
        self.order.is_some()
    }

    fn restores_to_last_sync(&self) -> bool {
        self.shards.iter().all(|shard| shard.restores_to_last_sync())
    }

    fn updates_show_at_sync(&self) -> bool {
        self.shards.iter().any(|shard| shard.updates_show_at_sync())
    }

    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        let cursors = self.shards.iter().map(|s| s.iter()).collect::<Result<Vec<_>>>()?;
        Ok(match self.order {
            Some(order) => Box::new(MergeCursor::new(self, cursors, order)),
            None => Box::new(ChainCursor::new(self, cursors)),
        })
    }
}

#[cfg(test)]
mod tests;
