//! The comparison table: every store on the same workloads, each in a
//! child process of its own (this binary run again with `--child NAME`),
//! so the peak resident memory the child reports is that store's alone.
//! The parent gathers the children's figures, takes the median of
//! `--repeat` runs and writes one markdown table and one JSON file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::engine::BoxError;
use crate::reference;
use crate::store::{Pair, StoreName};

const USAGE: &str = "\
usage: kura-peers [options]            the comparison table (this)
       kura-peers txn [options]        committed transactions a second (kura-peers txn --help)
  --records N          records of the bulk load and the read rows (default 1000000)
  --durable-writes K   individual durable writes, one key each (default 1000)
  --batches B          durable commits of --batch-size keys (default 100)
  --batch-size N       keys of each batch commit (default 1000)
  --nosync-writes M    individual writes without sync (default 10000)
  --seed-records S     records of the seeds' workload (default 1000000)
  --value-size N       bytes of each value (default 100)
  --engines LIST       comma-separated, of: ENGINES (default all)
  --repeat R           runs of each engine, alternating; the table shows medians (default 1)
  --dir PATH           where the databases are made (default bench/peers/target/data,
                       on the repository's disk: not a memory file system)
  --out PATH           also write the markdown table to PATH
  --json PATH          also write every figure as JSON to PATH";

/// A column of the table: a store run through [`crate::store::Store`], or,
/// in a build without the reference's C library, the reference run through
/// its own benchmark program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// A store of this build.
    Store(StoreName),
    /// The reference through `tkrzw_dbm_perf`, hash (`true`) or tree.
    Reference(bool),
}

impl Engine {
    /// Every engine of this build; without the reference's C library, its
    /// two program columns when the program is on the `PATH`.
    fn all() -> Vec<Engine> {
        let mut all: Vec<Engine> = StoreName::all().into_iter().map(Engine::Store).collect();
        // With its C library, the reference is a store of this build.
        if !cfg!(tkrzw_lib) && reference::available() {
            all.extend([Engine::Reference(true), Engine::Reference(false)]);
        }
        all
    }

    /// The name the command line takes and the table shows.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Store(store) => store.name(),
            Engine::Reference(true) => "tkrzw-hash",
            Engine::Reference(false) => "tkrzw-tree",
        }
    }

    fn parse(text: &str) -> Result<Engine, String> {
        match text {
            "tkrzw-hash" | "tkrzw-tree" if !cfg!(tkrzw_lib) => {
                if !reference::available() {
                    return Err(format!("engine {text:?} needs {} on the PATH", reference::PROGRAM));
                }
                Ok(Engine::Reference(text == "tkrzw-hash"))
            }
            _ => StoreName::parse(text).map(Engine::Store).map_err(|e| {
                if e.starts_with("unknown engine") {
                    format!("{e}, tkrzw-hash, tkrzw-tree")
                } else {
                    e
                }
            }),
        }
    }

    fn settings(self) -> String {
        match self {
            Engine::Store(store) => store.settings(),
            Engine::Reference(hash) => format!(
                "Tkrzw through its `{} sequence --random_key --dbm {}` (the packaged build, default tuning); it runs the seeds' workload only, each key set, got and removed on its own; seeds memory: the largest `mem` it reports (its resident memory's growth since it began), seeds size: its `file_size` (a logical length)",
                reference::PROGRAM,
                if hash { "hash" } else { "tree" }
            ),
        }
    }
}

/// What the command line asked for.
#[derive(Debug)]
pub struct Config {
    /// Records of the bulk load and the read rows.
    pub records: u64,
    /// Individual durable writes.
    pub durable_writes: u64,
    /// Durable batch commits.
    pub batches: u64,
    /// Keys a batch commit sets.
    pub batch_size: u64,
    /// Individual writes without sync.
    pub nosync_writes: u64,
    /// Records of the seeds' workload.
    pub seed_records: u64,
    /// Bytes of each value.
    pub value_size: usize,
    /// The columns.
    pub engines: Vec<Engine>,
    /// Runs of each engine.
    pub repeat: usize,
    /// Where the databases are made.
    pub dir: PathBuf,
    /// Where the markdown goes besides stdout.
    pub out: Option<PathBuf>,
    /// Where the JSON goes.
    pub json: Option<PathBuf>,
    /// In a child: the store to run.
    pub child: Option<StoreName>,
}

fn count(flag: &str, text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{flag}: {text:?} is not a positive integer")),
    }
}

/// Parses the table's flags.
pub fn parse_args(args: &[String]) -> Result<Config, String> {
    let mut config = Config {
        records: 1_000_000,
        durable_writes: 1_000,
        batches: 100,
        batch_size: 1_000,
        nosync_writes: 10_000,
        seed_records: 1_000_000,
        value_size: 100,
        engines: Engine::all(),
        repeat: 1,
        dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join("data"),
        out: None,
        json: None,
        child: None,
    };
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--records" => config.records = count(flag, value)?,
            "--durable-writes" => config.durable_writes = count(flag, value)?,
            "--batches" => config.batches = count(flag, value)?,
            "--batch-size" => config.batch_size = count(flag, value)?,
            "--nosync-writes" => config.nosync_writes = count(flag, value)?,
            "--seed-records" => config.seed_records = count(flag, value)?,
            "--value-size" => config.value_size = count(flag, value)? as usize,
            "--repeat" => config.repeat = count(flag, value)? as usize,
            "--engines" => {
                let engines = value
                    .split(',')
                    .map(|name| Engine::parse(name.trim()))
                    .collect::<Result<Vec<Engine>, String>>()?;
                let mut unique = Vec::new();
                for engine in engines {
                    if unique.contains(&engine) {
                        return Err(format!("--engines: {} is named twice", engine.name()));
                    }
                    unique.push(engine);
                }
                config.engines = unique;
            }
            "--dir" => config.dir = PathBuf::from(value),
            "--out" => config.out = Some(PathBuf::from(value)),
            "--json" => config.json = Some(PathBuf::from(value)),
            "--child" => config.child = Some(StoreName::parse(value)?),
            "--seconds" | "--threads" | "--keys_per_txn" | "--durability" | "--key_range" | "--value_size" => {
                return Err(format!(
                    "unknown flag {flag:?}: it is a flag of the transaction workload, `kura-peers txn {flag} ...`"
                ))
            }
            _ => return Err(format!("unknown flag {flag:?}")),
        }
    }
    if config.records < 2 {
        return Err("--records: at least 2 (the removals take half)".to_string());
    }
    Ok(config)
}

/// The usage text, naming this build's engines.
pub fn usage() -> String {
    let names: Vec<&str> = Engine::all().iter().map(|e| e.name()).collect();
    USAGE.replace("ENGINES", &names.join(", "))
}

/// How a row's figure is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Millis,
    Mebibytes,
}

/// One row of the table.
struct Row {
    id: &'static str,
    unit: Unit,
}

/// The rows, in order, with the labels [`label`] gives them.
const ROWS: [Row; 25] = [
    Row { id: "bulk_load", unit: Unit::Millis },
    Row { id: "individual_writes", unit: Unit::Millis },
    Row { id: "individual_writes_txn", unit: Unit::Millis },
    Row { id: "batch_writes", unit: Unit::Millis },
    Row { id: "batch_writes_txn", unit: Unit::Millis },
    Row { id: "nosync_writes", unit: Unit::Millis },
    Row { id: "len", unit: Unit::Millis },
    Row { id: "random_reads", unit: Unit::Millis },
    Row { id: "random_range_reads", unit: Unit::Millis },
    Row { id: "random_reads_4_threads", unit: Unit::Millis },
    Row { id: "random_reads_8_threads", unit: Unit::Millis },
    Row { id: "random_reads_16_threads", unit: Unit::Millis },
    Row { id: "random_reads_32_threads", unit: Unit::Millis },
    Row { id: "removals", unit: Unit::Millis },
    Row { id: "size_before_compaction", unit: Unit::Mebibytes },
    Row { id: "compaction", unit: Unit::Millis },
    Row { id: "size_after_compaction", unit: Unit::Mebibytes },
    Row { id: "seeds_set", unit: Unit::Millis },
    Row { id: "seeds_get", unit: Unit::Millis },
    Row { id: "seeds_iterate", unit: Unit::Millis },
    Row { id: "seeds_size", unit: Unit::Mebibytes },
    Row { id: "seeds_remove", unit: Unit::Millis },
    Row { id: "seeds_memory", unit: Unit::Mebibytes },
    Row { id: "peak_memory", unit: Unit::Mebibytes },
    Row { id: "wall_time", unit: Unit::Millis },
];

const READ_THREADS: [usize; 4] = [4, 8, 16, 32];

fn label(id: &str, config: &Config) -> String {
    let n = thousands(config.records as f64);
    let b = thousands(config.batch_size as f64);
    let s = thousands(config.seed_records as f64);
    match id {
        "bulk_load" => format!("bulk load ({n} keys, one durable commit)"),
        "individual_writes" => {
            format!("individual durable writes ({} × 1 key; kuradb: set + synchronize(Hard))", thousands(config.durable_writes as f64))
        }
        "individual_writes_txn" => format!(
            "individual durable writes, kuradb transactional ({} × 1 key, the keys of the row above again, commit with CommitDurability::Sync)",
            thousands(config.durable_writes as f64)
        ),
        "batch_writes" => {
            format!("batch durable writes ({} × {b} keys; kuradb: sets + synchronize(Hard))", thousands(config.batches as f64))
        }
        "batch_writes_txn" => format!(
            "batch durable writes, kuradb transactional ({} × {b} keys, the keys of the row above again, commit with CommitDurability::Sync)",
            thousands(config.batches as f64)
        ),
        "nosync_writes" => format!("writes without sync ({} × 1 key)", thousands(config.nosync_writes as f64)),
        "len" => "count (len)".to_string(),
        "random_reads" => format!("random reads ({n} gets, 1 thread)"),
        "random_range_reads" => {
            format!("random range reads ({} ranges of 10 records)", thousands((config.records / 10).max(1) as f64))
        }
        "random_reads_4_threads" => format!("random reads, 4 threads ({n} gets in all)"),
        "random_reads_8_threads" => format!("random reads, 8 threads ({n} gets in all)"),
        "random_reads_16_threads" => format!("random reads, 16 threads ({n} gets in all)"),
        "random_reads_32_threads" => format!("random reads, 32 threads ({n} gets in all)"),
        "removals" => format!("removals ({} keys, one durable commit)", thousands((config.records / 2) as f64)),
        "size_before_compaction" => "file size before compaction (MiB)".to_string(),
        "compaction" => "compaction".to_string(),
        "size_after_compaction" => "file size after compaction (MiB)".to_string(),
        "seeds_set" => format!("seeds: set {s} random 8-digit keys (commits of 1,000, not synced)"),
        "seeds_get" => format!("seeds: get {s} random keys"),
        "seeds_iterate" => "seeds: iterate every record".to_string(),
        "seeds_remove" => format!("seeds: remove {s} random keys (commits of 1,000, not synced)"),
        "seeds_size" => "seeds: file size after the sets (MiB)".to_string(),
        "seeds_memory" => {
            "seeds: resident memory grown since the seeds began, largest at a phase's end (MiB; the reference's `mem`)".to_string()
        }
        "peak_memory" => "peak memory, max RSS (MiB)".to_string(),
        "wall_time" => "the whole run, wall time".to_string(),
        _ => id.to_string(),
    }
}

/// A figure of one row, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum Figure {
    /// Milliseconds or bytes, by the row's unit.
    Value(f64),
    /// The engine has no such call, or the row does not fit it.
    NotApplicable(String),
}

/// splitmix64: a bijection, so the record keys made from indexes never
/// collide, and consecutive indexes land far apart in key order.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The key of record `i`: 16 hexadecimal digits.
fn key(i: u64) -> Vec<u8> {
    format!("{:016x}", mix(i)).into_bytes()
}

/// The value of record `i`: `size` bytes that do not compress.
fn value(i: u64, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut state = mix(i ^ 0x5555_5555);
    while out.len() < size {
        state = mix(state);
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(size);
    out
}

/// A permutation of 0..n, so the read rows visit records neither in key
/// order nor in the order they were written.
fn permuted(i: u64, n: u64) -> u64 {
    const STRIDE: u64 = 1_000_003;
    if n.is_multiple_of(STRIDE) {
        return i;
    }
    ((i as u128 * STRIDE as u128) % n as u128) as u64
}

fn millis(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// Bytes the files under `dir` take on the device, as `du` counts them.
fn disk_usage(dir: &Path) -> Result<u64, BoxError> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            total += disk_usage(&entry.path())?;
        } else {
            total += meta.blocks() * 512;
        }
    }
    Ok(total)
}

/// A memory field of this process's `/proc/self/status` (`VmHWM`,
/// `VmRSS`), in bytes.
fn status_bytes(field: &str) -> Result<u64, BoxError> {
    field_bytes(&std::fs::read_to_string("/proc/self/status")?, field)
}

/// A memory field of one `/proc/self/status` text, in bytes.
fn field_bytes(status: &str, field: &str) -> Result<u64, BoxError> {
    let prefix = format!("{field}:");
    let line =
        status.lines().find(|l| l.starts_with(&prefix)).ok_or(format!("no {field} in /proc/self/status"))?;
    let kib: u64 = line.split_whitespace().nth(1).ok_or(format!("an empty {field} line"))?.parse()?;
    Ok(kib * 1024)
}

/// This process's peak resident memory, in bytes.
fn peak_rss() -> Result<u64, BoxError> {
    status_bytes("VmHWM")
}

/// This process's resident memory now, in bytes.
fn rss() -> Result<u64, BoxError> {
    status_bytes("VmRSS")
}

/// Hands the heap's free pages back to the kernel, so that memory the main
/// rows freed but the allocator kept is neither counted in the seeds'
/// starting point nor reused unseen by the seeds' database.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_heap() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::os::raw::c_int;
    }
    // SAFETY: glibc's malloc_trim takes no pointer and touches only the
    // allocator's own free lists; any thread may call it at any time.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_heap() {}

fn fresh_dir(dir: &Path) -> Result<(), BoxError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(())
}

/// Runs every row on `store` in `dir`, returning each row's figure.
pub fn run_store(
    config: &Config,
    store: StoreName,
    dir: &Path,
) -> Result<Vec<(&'static str, Figure)>, BoxError> {
    let wall = Instant::now();
    let mut out: Vec<(&'static str, Figure)> = Vec::new();
    let na = |why: &str| Figure::NotApplicable(why.to_string());
    let n = config.records;
    let size = config.value_size;
    let pair = |i: u64| -> Pair { (key(i), value(i, size)) };
    let main_dir = dir.join("main");
    fresh_dir(&main_dir)?;
    let mut db = store.open(&main_dir)?;

    let start = Instant::now();
    db.write(&mut (0..n).map(pair), true)?;
    out.push(("bulk_load", Figure::Value(millis(start))));
    let mut next = n;

    // The transactional rows write the keys of the plain rows before them
    // again, with the same values, so that every engine ends with the same
    // records: the rows after (count, reads, removals, sizes, compaction)
    // then measure the same database on every column.
    let individual_keys = next;
    let start = Instant::now();
    for _ in 0..config.durable_writes {
        db.write(&mut std::iter::once(pair(next)), true)?;
        next += 1;
    }
    out.push(("individual_writes", Figure::Value(millis(start))));

    // An empty commit first: it opens the transactional way, if the store
    // has one, outside the timed commits.
    let transactional = match db.write_transactional(&mut std::iter::empty()) {
        Some(result) => {
            result?;
            true
        }
        None => false,
    };
    if transactional {
        let start = Instant::now();
        for i in individual_keys..individual_keys + config.durable_writes {
            let result = db.write_transactional(&mut std::iter::once(pair(i)));
            result.ok_or("the transactional way went away")??;
        }
        out.push(("individual_writes_txn", Figure::Value(millis(start))));
    } else {
        out.push(("individual_writes_txn", na("no second way")));
    }
    db.end_transactional()?;

    let batch_keys = next;
    let start = Instant::now();
    for _ in 0..config.batches {
        db.write(&mut (next..next + config.batch_size).map(pair), true)?;
        next += config.batch_size;
    }
    out.push(("batch_writes", Figure::Value(millis(start))));

    if transactional {
        if let Some(result) = db.write_transactional(&mut std::iter::empty()) {
            result?;
        }
        let start = Instant::now();
        for b in 0..config.batches {
            let first = batch_keys + b * config.batch_size;
            let result = db.write_transactional(&mut (first..first + config.batch_size).map(pair));
            result.ok_or("the transactional way went away")??;
        }
        out.push(("batch_writes_txn", Figure::Value(millis(start))));
    } else {
        out.push(("batch_writes_txn", na("no second way")));
    }
    db.end_transactional()?;

    let start = Instant::now();
    for _ in 0..config.nosync_writes {
        db.write(&mut std::iter::once(pair(next)), false)?;
        next += 1;
    }
    out.push(("nosync_writes", Figure::Value(millis(start))));

    let start = Instant::now();
    let len = db.len()?;
    out.push(("len", Figure::Value(millis(start))));
    if len != next {
        return Err(format!("{store}: len is {len} after {next} distinct keys were written").into());
    }

    let start = Instant::now();
    {
        let mut reader = db.reader()?;
        for i in 0..n {
            let k = key(permuted(i, n));
            if reader.get(&k)? != Some(size) {
                return Err(format!("{store}: record {} read back wrong", permuted(i, n)).into());
            }
        }
    }
    out.push(("random_reads", Figure::Value(millis(start))));

    let ranges = (n / 10).max(1);
    let start = Instant::now();
    let mut ordered = true;
    {
        let mut reader = db.reader()?;
        for i in 0..ranges {
            match reader.range(&key(permuted(i, n)), 10)? {
                Some(bytes) if bytes > 0 => {}
                Some(_) => return Err(format!("{store}: a range from an existing key read nothing").into()),
                None => {
                    ordered = false;
                    break;
                }
            }
        }
    }
    out.push(("random_range_reads", if ordered { Figure::Value(millis(start)) } else { na("unordered") }));

    for (threads, id) in READ_THREADS.into_iter().zip([
        "random_reads_4_threads",
        "random_reads_8_threads",
        "random_reads_16_threads",
        "random_reads_32_threads",
    ]) {
        let start = Instant::now();
        let db = &*db;
        std::thread::scope(|scope| -> Result<(), BoxError> {
            let workers: Vec<_> = (0..threads as u64)
                .map(|t| {
                    scope.spawn(move || -> Result<(), String> {
                        let mut reader = db.reader().map_err(|e| e.to_string())?;
                        let mut i = t;
                        while i < n {
                            let found = reader.get(&key(permuted(i, n))).map_err(|e| e.to_string())?;
                            if found != Some(size) {
                                return Err(format!("record {} read back wrong", permuted(i, n)));
                            }
                            i += threads as u64;
                        }
                        Ok(())
                    })
                })
                .collect();
            for worker in workers {
                worker
                    .join()
                    .map_err(|_| "a reader thread panicked")?
                    .map_err(|e| format!("{store}: {e}"))?;
            }
            Ok(())
        })?;
        out.push((id, Figure::Value(millis(start))));
    }

    let start = Instant::now();
    db.remove(&mut (0..n / 2).map(key), true)?;
    out.push(("removals", Figure::Value(millis(start))));
    out.push(("size_before_compaction", Figure::Value(disk_usage(&main_dir)? as f64)));

    let start = Instant::now();
    if db.compact()? {
        out.push(("compaction", Figure::Value(millis(start))));
        out.push(("size_after_compaction", Figure::Value(disk_usage(&main_dir)? as f64)));
    } else {
        out.push(("compaction", na("no compaction call")));
        out.push(("size_after_compaction", na("no compaction call")));
    }
    let len = db.len()?;
    if len != next - n / 2 {
        return Err(format!("{store}: len is {len} after the removals, not {}", next - n / 2).into());
    }
    db.close()?;
    std::fs::remove_dir_all(&main_dir)?;

    out.extend(run_seeds(config, store, &dir.join("seeds"))?);
    out.push(("peak_memory", Figure::Value(peak_rss()? as f64)));
    out.push(("wall_time", Figure::Value(millis(wall))));
    Ok(out)
}

/// The seeds' workload: `--seed-records` keys of 8 digits drawn at random
/// (some drawn twice), set, got, iterated and removed.
fn run_seeds(config: &Config, store: StoreName, dir: &Path) -> Result<Vec<(&'static str, Figure)>, BoxError> {
    const CHUNK: u64 = 1_000;
    let s = config.seed_records;
    let size = config.value_size;
    let seed_key = |i: u64| format!("{:08}", mix(i ^ 0xA5A5) % s).into_bytes();
    fresh_dir(dir)?;
    // As `tkrzw_dbm_perf` reports `mem`: resident memory at the end of each
    // phase less what it was before the database was opened.
    release_free_heap();
    let base = rss()?;
    let mut grown: u64 = 0;
    let mut sample = || -> Result<(), BoxError> {
        grown = grown.max(rss()?.saturating_sub(base));
        Ok(())
    };
    let mut db = store.open(dir)?;
    let mut out = Vec::new();

    let start = Instant::now();
    let mut i = 0;
    while i < s {
        let end = (i + CHUNK).min(s);
        db.write(&mut (i..end).map(|j| (seed_key(j), value(j, size))), false)?;
        i = end;
    }
    out.push(("seeds_set", Figure::Value(millis(start))));
    sample()?;

    let start = Instant::now();
    {
        let mut reader = db.reader()?;
        for j in 0..s {
            if reader.get(&seed_key(j))?.is_none() {
                return Err(format!("{store}: seeds: a set key is missing").into());
            }
        }
    }
    out.push(("seeds_get", Figure::Value(millis(start))));
    sample()?;

    let start = Instant::now();
    let visited = db.iterate()?;
    out.push(("seeds_iterate", Figure::Value(millis(start))));
    sample()?;
    let len = db.len()?;
    if visited != len {
        return Err(format!("{store}: seeds: iterating visited {visited} of {len} records").into());
    }
    db.write_out()?;
    out.push(("seeds_size", Figure::Value(disk_usage(dir)? as f64)));

    let start = Instant::now();
    let mut i = 0;
    while i < s {
        let end = (i + CHUNK).min(s);
        db.remove(&mut (i..end).map(seed_key), false)?;
        i = end;
    }
    out.push(("seeds_remove", Figure::Value(millis(start))));
    sample()?;
    out.push(("seeds_memory", Figure::Value(grown as f64)));
    if db.len()? != 0 {
        return Err(format!("{store}: seeds: records are left after removing every key").into());
    }
    db.close()?;
    std::fs::remove_dir_all(dir)?;
    Ok(out)
}

/// The child's side: runs one store, printing `row<TAB>figure` lines.
pub fn child(config: &Config, store: StoreName) -> Result<(), BoxError> {
    let dir = config.dir.join(format!("kura-peers-{}-{}", store, std::process::id()));
    fresh_dir(&dir)?;
    let result = run_store(config, store, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    for (id, figure) in result? {
        match figure {
            Figure::Value(v) => println!("{id}\t{v}"),
            Figure::NotApplicable(why) => println!("{id}\tn/a\t{why}"),
        }
    }
    Ok(())
}

/// Parses a child's output.
fn parse_child_output(text: &str) -> Result<BTreeMap<String, Figure>, String> {
    let mut figures = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split('\t');
        let (Some(id), Some(value)) = (fields.next(), fields.next()) else {
            return Err(format!("a malformed line from a child: {line:?}"));
        };
        let figure = if value == "n/a" {
            Figure::NotApplicable(fields.next().unwrap_or("").to_string())
        } else {
            Figure::Value(value.parse().map_err(|_| format!("a malformed figure from a child: {line:?}"))?)
        };
        figures.insert(id.to_string(), figure);
    }
    for row in &ROWS {
        if !figures.contains_key(row.id) {
            return Err(format!("a child gave no figure for {}", row.id));
        }
    }
    Ok(figures)
}

/// Runs `store` in a child process.
fn spawn_child(args: &[String], store: StoreName) -> Result<BTreeMap<String, Figure>, BoxError> {
    let exe = std::env::current_exe()?;
    let output = Command::new(exe)
        .args(args)
        .args(["--child", store.name()])
        .stderr(std::process::Stdio::inherit())
        .output()?;
    if !output.status.success() {
        return Err(format!("{store} failed ({})", output.status).into());
    }
    Ok(parse_child_output(&String::from_utf8_lossy(&output.stdout))?)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The medians of several runs' figures, row by row.
fn medians(runs: &[BTreeMap<String, Figure>]) -> BTreeMap<String, Figure> {
    let mut out = BTreeMap::new();
    for row in &ROWS {
        let mut values = Vec::new();
        let mut reason = None;
        for run in runs {
            match run.get(row.id) {
                Some(Figure::Value(v)) => values.push(*v),
                Some(Figure::NotApplicable(why)) => reason = Some(why.clone()),
                None => reason = Some("not run".to_string()),
            }
        }
        let figure = match reason {
            Some(why) if values.is_empty() => Figure::NotApplicable(why),
            _ if values.is_empty() => Figure::NotApplicable("not run".to_string()),
            _ => Figure::Value(median(&mut values)),
        };
        out.insert(row.id.to_string(), figure);
    }
    out
}

/// Formats a number with thousands separators.
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let (sign, digits) = digits.strip_prefix('-').map_or(("", digits.as_str()), |d| ("-", d));
    let mut out = sign.to_string();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn show(unit: Unit, value: f64) -> String {
    match unit {
        Unit::Millis if value < 10.0 => format!("{value:.2}ms"),
        Unit::Millis => format!("{}ms", thousands(value)),
        Unit::Mebibytes => format!("{:.1}", value / (1 << 20) as f64),
    }
}

/// The machine, the date and the commit the table was taken on.
struct Context {
    cpu: String,
    cores: usize,
    memory: String,
    filesystem: String,
    date: String,
    commit: String,
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn context(dir: &Path) -> Context {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown".to_string(), |s| s.trim().to_string());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<f64>().ok())
        .map_or("unknown".to_string(), |kib| format!("{:.1} GiB", kib / (1 << 20) as f64));
    let dir_text = dir.to_string_lossy();
    let filesystem =
        command_output("stat", &["-f", "-c", "%T", &dir_text]).unwrap_or_else(|| "unknown".to_string());
    let date =
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "unknown".to_string());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo_text = repo.to_string_lossy();
    let commit = command_output("git", &["-C", &repo_text, "rev-parse", "--short=12", "HEAD"])
        .map(|commit| {
            let dirty =
                command_output("git", &["-C", &repo_text, "status", "--porcelain", "--untracked-files=no"])
                    .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{commit} (with uncommitted changes)")
            } else {
                commit
            }
        })
        .unwrap_or_else(|| "unknown".to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    Context { cpu, cores, memory, filesystem, date, commit }
}

/// The markdown: a header of context, the table, the settings.
fn markdown(config: &Config, ctx: &Context, columns: &[(Engine, BTreeMap<String, Figure>)]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "kura-peers on {} ({} cores), {} memory, data in {} ({}); {}; kuradb {}.\n",
        ctx.cpu,
        ctx.cores,
        ctx.memory,
        config.dir.display(),
        ctx.filesystem,
        ctx.date,
        ctx.commit
    ));
    let has_reference = columns.iter().any(|(engine, _)| matches!(engine, Engine::Reference(_)));
    out.push_str(&format!(
        "Keys of 16 hex digits in random order, {}-byte values that do not compress. Times in milliseconds (lower is better), {}; sizes as allocated on the device{}; fastest or smallest of a row in bold.\n\n",
        config.value_size,
        if config.repeat == 1 { "one run".to_string() } else { format!("median of {} runs", config.repeat) },
        if has_reference { " (but the reference's seeds size: see below the table)" } else { "" }
    ));
    let mut header = vec!["".to_string()];
    let mut align = vec!["---".to_string()];
    for (engine, _) in columns {
        header.push(engine.name().to_string());
        align.push("---:".to_string());
    }
    out.push_str(&format!("| {} |\n| {} |\n", header.join(" | "), align.join(" | ")));
    for row in &ROWS {
        let values: Vec<Option<f64>> = columns
            .iter()
            .map(|(_, figures)| match figures.get(row.id) {
                Some(Figure::Value(v)) => Some(*v),
                _ => None,
            })
            .collect();
        let best = values.iter().flatten().copied().fold(f64::INFINITY, f64::min);
        let count = values.iter().flatten().count();
        let mut cells = vec![label(row.id, config)];
        for ((_, figures), value) in columns.iter().zip(&values) {
            cells.push(match (value, figures.get(row.id)) {
                (Some(v), _) if count > 1 && *v == best => format!("**{}**", show(row.unit, *v)),
                (Some(v), _) => show(row.unit, *v),
                _ => "—".to_string(),
            });
        }
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if has_reference {
        out.push_str(&format!(
            "\nThe reference's figures are those {} prints: its seeds size is the `file_size` it reports, the logical length of its open file, not the blocks allocated on the device that the other columns show; its seeds memory is its largest `mem`, the growth of its resident memory (`VmRSS`) since the program began, which the other columns match by measuring from just before the seeds open their database.\n",
            reference::PROGRAM
        ));
    }
    out.push_str("\nCells marked —:\n\n");
    for (engine, figures) in columns {
        let mut reasons: Vec<(String, Vec<&str>)> = Vec::new();
        for row in &ROWS {
            let why = match figures.get(row.id) {
                Some(Figure::Value(_)) => continue,
                Some(Figure::NotApplicable(why)) if !why.is_empty() => why.clone(),
                _ => "not run".to_string(),
            };
            match reasons.iter_mut().find(|(known, _)| *known == why) {
                Some((_, rows)) => rows.push(row.id),
                None => reasons.push((why, vec![row.id])),
            }
        }
        for (why, rows) in reasons {
            out.push_str(&format!("- {}, {}: {why}\n", engine.name(), rows.join(", ")));
        }
    }
    out.push_str("\nEngines and settings:\n\n");
    for (engine, _) in columns {
        out.push_str(&format!("- {}: {}\n", engine.name(), engine.settings()));
    }
    out
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Every figure, every run's and the medians, as JSON.
fn json(
    config: &Config,
    ctx: &Context,
    columns: &[(Engine, BTreeMap<String, Figure>)],
    runs: &[Vec<BTreeMap<String, Figure>>],
) -> String {
    let figure = |f: &Figure| match f {
        Figure::Value(v) => format!("{v}"),
        Figure::NotApplicable(why) => format!("{{\"na\": {}}}", json_string(why)),
    };
    let figures = |map: &BTreeMap<String, Figure>| {
        let items: Vec<String> = ROWS
            .iter()
            .filter_map(|row| map.get(row.id).map(|f| format!("{}: {}", json_string(row.id), figure(f))))
            .collect();
        format!("{{{}}}", items.join(", "))
    };
    let mut engines = Vec::new();
    for ((engine, medians), runs) in columns.iter().zip(runs) {
        let runs: Vec<String> = runs.iter().map(&figures).collect();
        engines.push(format!(
            "    {}: {{\"settings\": {}, \"median\": {}, \"runs\": [{}]}}",
            json_string(engine.name()),
            json_string(&engine.settings()),
            figures(medians),
            runs.join(", ")
        ));
    }
    let rows: Vec<String> = ROWS
        .iter()
        .map(|row| {
            format!(
                "    {}: {{\"label\": {}, \"unit\": {}}}",
                json_string(row.id),
                json_string(&label(row.id, config)),
                json_string(if row.unit == Unit::Millis { "ms" } else { "bytes" })
            )
        })
        .collect();
    format!(
        "{{\n  \"machine\": {{\"cpu\": {}, \"cores\": {}, \"memory\": {}, \"filesystem\": {}, \"dir\": {}}},\n  \"date\": {},\n  \"kuradb_commit\": {},\n  \"config\": {{\"records\": {}, \"durable_writes\": {}, \"batches\": {}, \"batch_size\": {}, \"nosync_writes\": {}, \"seed_records\": {}, \"value_size\": {}, \"repeat\": {}, \"statistic\": \"median\"}},\n  \"rows\": {{\n{}\n  }},\n  \"engines\": {{\n{}\n  }}\n}}\n",
        json_string(&ctx.cpu),
        ctx.cores,
        json_string(&ctx.memory),
        json_string(&ctx.filesystem),
        json_string(&config.dir.to_string_lossy()),
        json_string(&ctx.date),
        json_string(&ctx.commit),
        config.records,
        config.durable_writes,
        config.batches,
        config.batch_size,
        config.nosync_writes,
        config.seed_records,
        config.value_size,
        config.repeat,
        rows.join(",\n"),
        engines.join(",\n")
    )
}

/// The parent's side: every engine `--repeat` times, then the outputs.
pub fn run(args: &[String], config: &Config) -> Result<(), BoxError> {
    std::fs::create_dir_all(&config.dir)?;
    let mut runs: Vec<Vec<BTreeMap<String, Figure>>> = vec![Vec::new(); config.engines.len()];
    let mut failures = Vec::new();
    for round in 0..config.repeat {
        for (slot, &engine) in config.engines.iter().enumerate() {
            eprintln!("kura-peers: run {} of {}: {}", round + 1, config.repeat, engine.name());
            let result = match engine {
                Engine::Store(store) => spawn_child(args, store),
                Engine::Reference(hash) => reference::run(config, hash),
            };
            match result {
                Ok(figures) => runs[slot].push(figures),
                Err(error) => {
                    eprintln!("kura-peers: {}: {error}", engine.name());
                    failures.push(format!("{}: {error}", engine.name()));
                }
            }
        }
    }
    let columns: Vec<(Engine, BTreeMap<String, Figure>)> =
        config.engines.iter().zip(&runs).map(|(engine, runs)| (*engine, medians(runs))).collect();
    let ctx = context(&config.dir);
    let table = markdown(config, &ctx, &columns);
    print!("{table}");
    if let Some(path) = &config.out {
        std::fs::write(path, &table)?;
    }
    if let Some(path) = &config.json {
        std::fs::write(path, json(config, &ctx, &columns, &runs))?;
    }
    if !failures.is_empty() {
        return Err(format!("{} run(s) failed: {}", failures.len(), failures.join("; ")).into());
    }
    Ok(())
}

/// The rows' identifiers, for the reference's figures and the tests.
pub fn row_ids() -> impl Iterator<Item = &'static str> {
    ROWS.iter().map(|row| row.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn flags_are_parsed_and_bad_ones_named() {
        let config = parse_args(&args(
            "--records 500 --durable-writes 3 --engines kura-tree,kura-hash --repeat 3 --json x.json",
        ))
        .unwrap();
        assert_eq!(config.records, 500);
        assert_eq!(config.durable_writes, 3);
        assert_eq!(config.engines, [Engine::Store(StoreName::KuraTree), Engine::Store(StoreName::KuraHash)]);
        assert_eq!(config.repeat, 3);
        assert_eq!(config.json, Some(PathBuf::from("x.json")));
        for (bad, named) in [
            ("--records 0", "--records"),
            ("--records 1", "at least 2"),
            ("--batches -3", "--batches"),
            ("--engines nosuch", "unknown engine"),
            ("--engines kura-hash,kura-hash", "named twice"),
            ("--repeat", "needs a value"),
            ("--color red", "unknown flag"),
            ("--seconds 3", "kura-peers txn --seconds"),
        ] {
            let message = parse_args(&args(bad)).err().unwrap();
            assert!(message.contains(named), "{bad}: {message}");
        }
    }

    #[test]
    fn keys_are_distinct_and_permutations_cover_every_index() {
        let mut keys: Vec<Vec<u8>> = (0..10_000).map(key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 10_000);
        for n in [2, 7, 1000, 1_000_003] {
            let mut seen: Vec<u64> = (0..n.min(5000)).map(|i| permuted(i, n)).collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len() as u64, n.min(5000), "n = {n}");
        }
        assert_eq!(value(3, 100).len(), 100);
        assert_ne!(value(3, 100), value(4, 100));
    }

    #[test]
    fn resident_memory_is_read_in_bytes() {
        let now = rss().unwrap();
        assert!(now >= 1 << 20 && now.is_multiple_of(1024), "{now}");
        assert!(peak_rss().unwrap() >= 1 << 20);
        // The kernel keeps resident counts per CPU and folds them in lazily,
        // so only one reading of the file promises the peak is not below the
        // current figure while the other tests' threads allocate and free.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let (peak, now) = (field_bytes(&status, "VmHWM").unwrap(), field_bytes(&status, "VmRSS").unwrap());
        assert!(peak >= now, "VmHWM {peak} below VmRSS {now}");
        assert!(status_bytes("NoSuchField").unwrap_err().to_string().contains("no NoSuchField"));
    }

    #[test]
    fn child_output_is_parsed_and_malformed_output_refused() {
        let mut text = String::new();
        for id in row_ids() {
            text.push_str(&format!("{id}\t1.5\n"));
        }
        text = text.replace("compaction\t1.5", "compaction\tn/a\tno compaction call");
        let figures = parse_child_output(&text).unwrap();
        assert_eq!(figures["bulk_load"], Figure::Value(1.5));
        assert_eq!(figures["compaction"], Figure::NotApplicable("no compaction call".to_string()));
        assert!(parse_child_output("bulk_load\tfast\n").is_err());
        assert!(parse_child_output("bulk_load\t1\n").unwrap_err().contains("no figure"));
    }

    #[test]
    fn the_table_marks_the_best_and_says_why_a_figure_is_missing() {
        let config = parse_args(&args("--records 100")).unwrap();
        let ctx = Context {
            cpu: "cpu".into(),
            cores: 2,
            memory: "1 GiB".into(),
            filesystem: "ext2/ext3".into(),
            date: "today".into(),
            commit: "abc".into(),
        };
        let mut a = BTreeMap::new();
        let mut b = BTreeMap::new();
        for id in row_ids() {
            a.insert(id.to_string(), Figure::Value(20.0));
            b.insert(id.to_string(), Figure::Value(30.0));
        }
        b.insert("compaction".to_string(), Figure::NotApplicable("no compaction call".to_string()));
        let columns = vec![(Engine::Store(StoreName::KuraHash), a), (Engine::Store(StoreName::KuraTree), b)];
        let table = markdown(&config, &ctx, &columns);
        let lines: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(lines.len(), 2 + ROWS.len());
        assert!(lines[2].contains("| **20ms** | 30ms |"), "{}", lines[2]);
        assert!(table.contains("| 20ms | — |"), "{table}");
        assert!(table.contains("- kura-tree, compaction: no compaction call"), "{table}");
        assert!(!table.contains("logical length"), "{table}");
        let mut with_reference = columns.clone();
        with_reference.push((Engine::Reference(true), BTreeMap::new()));
        let table = markdown(&config, &ctx, &with_reference);
        assert!(
            table.contains("its seeds size is the `file_size` it reports, the logical length"),
            "{table}"
        );
        assert!(table.contains("- tkrzw-hash, bulk_load,"), "{table}");
        let runs = vec![vec![columns[0].1.clone()], vec![columns[1].1.clone()]];
        let text = json(&config, &ctx, &columns, &runs);
        assert!(text.contains("\"compaction\": {\"na\": \"no compaction call\"}"));
        assert_eq!(thousands(1234567.0), "1,234,567");
    }

    /// Every store of this build opens, sets, gets, ranges, removes,
    /// compacts and closes on a tiny workload, with its figures checked
    /// as the child checks them.
    #[test]
    fn every_store_runs_every_row() {
        let dir = std::env::temp_dir().join(format!("kura-peers-table-test-{}", std::process::id()));
        let config = parse_args(&args(
            "--records 300 --durable-writes 3 --batches 2 --batch-size 20 --nosync-writes 5 --seed-records 500",
        ))
        .unwrap();
        for store in StoreName::all() {
            let figures = run_store(&config, store, &dir.join(store.name())).unwrap();
            let ids: Vec<&str> = figures.iter().map(|(id, _)| *id).collect();
            let expected: Vec<&str> = row_ids().collect();
            assert_eq!(ids, expected, "{store}");
            let ordered = !matches!(
                figures.iter().find(|(id, _)| *id == "random_range_reads"),
                Some((_, Figure::NotApplicable(_)))
            );
            assert_eq!(ordered, store.is_ordered(), "{store}");
            let memory = figures.iter().find(|(id, _)| *id == "seeds_memory").map(|(_, figure)| figure);
            assert!(matches!(memory, Some(Figure::Value(_))), "{store}: {memory:?}");
            // The seeds' values alone: a store whose size left out what it
            // holds only in memory (a tree's cached nodes) would be below.
            let size = figures.iter().find(|(id, _)| *id == "seeds_size").map(|(_, figure)| figure);
            let least = (config.seed_records * config.value_size as u64) as f64;
            assert!(matches!(size, Some(Figure::Value(bytes)) if *bytes >= least), "{store}: {size:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
