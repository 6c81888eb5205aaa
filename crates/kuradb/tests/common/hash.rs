//! What the hash database tests share: the file specs a database is checked
//! on, reading a whole database into a map, comparing it with a model, and
//! leaving behind the file a crash would.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use kuradb::dbm::hash::{HashDbm, HashOptions};
use kuradb::dbm::{Access, Action, Dbm, Durability};
use kuradb::file::{FileKind, FileSpec};

use super::{direct_io_supported, spec, TINY_PAGE_CACHE};

/// What a database should hold.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A byte string as a failure message shows it: text if printable, else hex,
/// cut short, with its length.
pub fn show(bytes: &[u8]) -> String {
    const MAX: usize = 24;
    let cut = &bytes[..bytes.len().min(MAX)];
    let more = if bytes.len() > MAX { "…" } else { "" };
    let body = if cut.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        String::from_utf8_lossy(cut).into_owned()
    } else {
        cut.iter().fold(String::from("0x"), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    };
    format!("{body:?}{more}({} bytes)", bytes.len())
}

/// An optional value as a failure message shows it.
pub fn show_opt(value: Option<&[u8]>) -> String {
    value.map_or_else(|| "absent".to_string(), show)
}

/// Every record of `db`, read by a read-only `process_each`; an error if a key
/// is visited twice.
pub fn records(db: &dyn Dbm) -> Result<Model, String> {
    let mut map = Model::new();
    let mut twice = None;
    db.process_each(Access::ReadOnly, &mut |key, value| {
        if map.insert(key.to_vec(), value.to_vec()).is_some() && twice.is_none() {
            twice = Some(key.to_vec());
        }
        Action::Keep
    })
    .map_err(|e| format!("process_each: {e}"))?;
    match twice {
        Some(key) => Err(format!("process_each visited {} twice", show(&key))),
        None => Ok(map),
    }
}

/// Checks that `db` holds exactly `model`: its count, every key's `get`, and a
/// full walk; describes the first difference.
pub fn compare(db: &dyn Dbm, model: &Model) -> Result<(), String> {
    let count = db.count().map_err(|e| format!("count: {e}"))?;
    for (key, value) in model {
        let got = db.get(key).map_err(|e| format!("get {}: {e}", show(key)))?;
        if got.as_deref() != Some(value.as_slice()) {
            return Err(format!(
                "get {} is {}, expected {}",
                show(key),
                show_opt(got.as_deref()),
                show(value)
            ));
        }
    }
    let walked = records(db)?;
    if let Some((key, value)) = walked.iter().find(|(k, _)| !model.contains_key(*k)) {
        return Err(format!("the walk found {} = {} that should not be there", show(key), show(value)));
    }
    if let Some((key, _)) = model.iter().find(|(k, v)| walked.get(*k) != Some(*v)) {
        return Err(format!(
            "the walk gave {} for {}, expected {}",
            show_opt(walked.get(key).map(Vec::as_slice)),
            show(key),
            show(&model[key])
        ));
    }
    if count != model.len() as u64 {
        return Err(format!("count is {count}, expected {}", model.len()));
    }
    Ok(())
}

/// Sets byte `at` of the closed hash file at `path`, in its header's first
/// half, to `byte`, and makes that half's checksum (bytes 60 to 63) good.
pub fn patch_header(path: &Path, at: usize, byte: u8) {
    let mut b = std::fs::read(path).unwrap();
    b[at] = byte;
    let crc = crc32fast::hash(&b[..60]);
    b[60..64].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

/// Leaves at `dest` what a crash of `db` right now would leave behind: the
/// database is synchronized hard, then its file copied while still open (its
/// header saying it was not closed cleanly).
pub fn crash_copy(db: &HashDbm, path: &Path, dest: &Path) -> Result<(), String> {
    db.synchronize(Durability::Hard).map_err(|e| format!("hard synchronize before the copy: {e}"))?;
    std::fs::copy(path, dest).map_err(|e| format!("copy {} to {}: {e}", path.display(), dest.display()))?;
    Ok(())
}

/// The file specs a database is checked on, by name: memory mapping, plain
/// positional calls, atomic block I/O through a tiny page cache, parallel
/// 4 KiB block I/O with padding, and (where the filesystem allows) direct I/O.
pub fn specs() -> Vec<(&'static str, FileSpec)> {
    let mut specs = vec![
        ("mmap-para", FileSpec::new(FileKind::MmapParallel)),
        ("mmap-atom", FileSpec::new(FileKind::MmapAtomic)),
        ("pos-para", FileSpec::new(FileKind::PositionalParallel)),
        (
            "pos-atom-block512-pagecache",
            spec(FileKind::PositionalAtomic, |s| {
                s.block_size = 512;
                s.pagecache = true;
                s.page_cache_capacity = Some(TINY_PAGE_CACHE);
            }),
        ),
        (
            "pos-para-block4096-padding",
            spec(FileKind::PositionalParallel, |s| {
                s.block_size = 4096;
                s.padding = true;
            }),
        ),
    ];
    specs.extend(direct_specs());
    specs
}

/// The direct I/O specs, or none where the filesystem refuses O_DIRECT. Their
/// reserved space grows only as needed (see `direct_io_model` in hash_model.rs
/// for why).
pub fn direct_specs() -> Vec<(&'static str, FileSpec)> {
    if !direct_io_supported() {
        return Vec::new();
    }
    vec![
        (
            "pos-para-direct512-pagecache",
            spec(FileKind::PositionalParallel, |s| {
                s.block_size = 512;
                s.direct = true;
                s.pagecache = true;
                s.page_cache_capacity = Some(TINY_PAGE_CACHE);
                s.alloc_init = 1;
                s.alloc_inc = 1.0;
            }),
        ),
        (
            "pos-atom-direct4096-padding",
            spec(FileKind::PositionalAtomic, |s| {
                s.block_size = 4096;
                s.direct = true;
                s.padding = true;
                s.alloc_init = 1;
                s.alloc_inc = 1.0;
            }),
        ),
    ]
}

/// Options for a small test database on `file`.
pub fn options(file: &FileSpec) -> HashOptions {
    HashOptions::default().file(file.clone()).num_buckets(101)
}

/// The first key in which `a` and `b` differ, described; `None` if they are equal.
pub fn difference(a: &Model, b: &Model) -> Option<String> {
    let keys: std::collections::BTreeSet<&Vec<u8>> = a.keys().chain(b.keys()).collect();
    let differing: Vec<&Vec<u8>> = keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).collect();
    let key = differing.first()?;
    Some(format!(
        "{} keys differ, the first {}: {} against {}",
        differing.len(),
        show(key),
        show_opt(a.get(*key).map(Vec::as_slice)),
        show_opt(b.get(*key).map(Vec::as_slice))
    ))
}

/// The values a batch left a key with after each of its changes: `None` for
/// removed. What [`judge_batch`] allows beside the synchronized state.
pub type Allowed = BTreeMap<Vec<u8>, std::collections::BTreeSet<Option<Vec<u8>>>>;

/// Whether `found`, read after a kill, holds each key's value as of `last`
/// (the state the writer reported synchronized) or one that batch
/// `open_batch`, which the writer was in, gave it (`allowed`); answers which
/// of the two states it is, or the first key that is neither.
pub fn judge_batch(
    found: &Model,
    last: &Model,
    allowed: &Allowed,
    open_batch: u64,
) -> Result<String, String> {
    let keys: std::collections::BTreeSet<&Vec<u8>> = found.keys().chain(last.keys()).collect();
    for k in keys {
        let got = found.get(k);
        let synced_value = last.get(k);
        let later = allowed.get(k).is_some_and(|a| a.contains(&got.cloned()));
        if got != synced_value && !later {
            return Err(format!(
                "{} holds {}; it was synchronized as {} and batch {open_batch} wrote {:?}",
                show(k),
                show_opt(got.map(Vec::as_slice)),
                show_opt(synced_value.map(Vec::as_slice)),
                allowed.get(k).map(|a| a.iter().map(|v| show_opt(v.as_deref())).collect::<Vec<_>>()),
            ));
        }
    }
    Ok(if found == last { "the reported state" } else { "a state inside the next batch" }.to_string())
}

/// Writes a marker record to `db`, restored after kill number `kill` and
/// holding `state`, and checks that it then holds both: what a crash test
/// writes after each restore. Answers the state it holds.
pub fn write_after_kill(db: &HashDbm, mut state: Model, kill: usize) -> Result<Model, String> {
    let marker = format!("after kill {kill}").into_bytes();
    db.set(&marker, b"still working").map_err(|e| format!("set after the restore: {e}"))?;
    state.insert(marker, b"still working".to_vec());
    compare(db, &state)?;
    Ok(state)
}
