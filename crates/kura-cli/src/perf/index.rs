//! `kura perf index`: adds, checks and removes `--iter` pairs per thread in
//! a secondary index, one phase after another, as `tkrzw_dbm_perf index`
//! does, with its flags and its lines.
//!
//! Thread `id`'s `i`-th pair is (`i * threads + id`, the same) as decimal
//! text, or with `--random_key` / `--random_value` numbers drawn uniformly
//! below `iter * threads` from generators seeded by the thread id, and
//! every phase replays the same pairs. `--type` names the index: file
//! ([`FileIndex`], which needs `--path` and takes the tree's tuning flags),
//! mem ([`MemIndex`]), or a [`StdIndex`] of numbers (n) and strings (s):
//! n2n, n2s, s2n, s2s.

use std::fmt::Write as _;
use std::time::Instant;

use clap::builder::RangedU64ValueParser;
use clap::Args;
use kuradb::dbm::Access;
use kuradb::index::{FileIndex, Index, MemIndex, StdIndex};
use kuradb::{Error, ErrorKind, Params, Result};
use rand::Rng;

use crate::dbm_options::{HashFlags, TreeFlags};
use crate::file_options::FileOptions;
use crate::report::{run_workers, say, thread_rng, MemoryBaseline, PhaseReport, Progress};

/// Arguments of `kura perf index`.
#[derive(Args, Debug)]
pub struct IndexArgs {
    /// The index: file, mem, or a typed in-memory index of numbers (n) and
    /// strings (s) as key and value: n2n, n2s, s2n, s2s.
    #[arg(long = "type", value_name = "TYPE", default_value = "file")]
    kind: String,

    /// The number of pairs of each thread.
    #[arg(long = "iter", value_name = "NUM", default_value_t = 10000,
          value_parser = RangedU64ValueParser::<u64>::new().range(1..=1 << 40))]
    iter: u64,

    /// The number of threads.
    #[arg(long = "threads", value_name = "NUM", default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=65536))]
    threads: usize,

    /// Uses random keys rather than sequential ones.
    #[arg(long = "random_key")]
    random_key: bool,

    /// Uses random values rather than sequential ones.
    #[arg(long = "random_value")]
    random_value: bool,

    /// The file of the file index (required by --type file).
    #[arg(long = "path", value_name = "PATH")]
    path: Option<std::path::PathBuf>,

    /// Prints each phase's result as one JSON object a line on stdout, and
    /// the reference's text and the progress dots on stderr.
    #[arg(long = "json")]
    pub(super) json: bool,

    #[command(flatten)]
    file: FileOptions,

    #[command(flatten)]
    hash: HashFlags,

    #[command(flatten)]
    tree: TreeFlags,
}

/// The index under test.
enum Subject {
    // Boxed: a file index is several times the size of the others.
    File(Box<FileIndex>),
    Mem(MemIndex),
    N2n(StdIndex<i64, i64>),
    N2s(StdIndex<i64, String>),
    S2n(StdIndex<String, i64>),
    S2s(StdIndex<String, String>),
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Check,
    Remove,
}

/// A thread's scratch text for the numbers of one pair.
#[derive(Default)]
struct Text {
    key: String,
    value: String,
}

impl Text {
    fn set(&mut self, key: i64, value: i64) {
        self.key.clear();
        self.value.clear();
        let _ = write!(self.key, "{key}");
        let _ = write!(self.value, "{value}");
    }
}

impl Subject {
    fn open(args: &IndexArgs) -> Result<Subject> {
        let tuned =
            !args.file.given().is_empty() || !args.hash.given()?.is_empty() || !args.tree.given()?.is_empty();
        if args.kind != "file" && tuned {
            return Err(invalid(format!(
                "the file and tree flags apply to --type file, not --type {}",
                args.kind
            )));
        }
        Ok(match args.kind.as_str() {
            "file" => {
                let path = args
                    .path
                    .as_ref()
                    .ok_or_else(|| invalid("--type file needs the index's --path".into()))?;
                let mut params = Params::new();
                params.insert("file", args.file.file.name())?;
                params.insert("truncate", "true")?;
                let mut access = Vec::new();
                for given in args.file.given().into_iter().chain(args.hash.given()?).chain(args.tree.given()?)
                {
                    if given.param == "access" {
                        access.push(given.value);
                    } else {
                        params.insert(given.param, &given.value)?;
                    }
                }
                if !access.is_empty() {
                    params.insert("access", &access.join("+"))?;
                }
                Subject::File(Box::new(FileIndex::open(path, Access::ReadWrite, &params)?))
            }
            "mem" => Subject::Mem(MemIndex::new()?),
            "n2n" => Subject::N2n(StdIndex::new()),
            "n2s" => Subject::N2s(StdIndex::new()),
            "s2n" => Subject::S2n(StdIndex::new()),
            "s2s" => Subject::S2s(StdIndex::new()),
            "str" => {
                return Err(invalid(
                    "--type str (the reference's set of encoded pairs, StdIndexStr) is not in kuradb: \
                     use s2s for strings in memory"
                        .into(),
                ))
            }
            other => {
                return Err(invalid(format!("unknown --type {other:?}: use file, mem, n2n, n2s, s2n or s2s")))
            }
        })
    }

    fn apply(&self, op: Op, key: i64, value: i64, text: &mut Text) -> Result<()> {
        match self {
            Subject::File(index) => bytes(&**index, op, key, value, text),
            Subject::Mem(index) => bytes(index, op, key, value, text),
            Subject::N2n(index) => typed(index, op, &key, &value),
            Subject::N2s(index) => typed(index, op, &key, &value.to_string()),
            Subject::S2n(index) => typed(index, op, &key.to_string(), &value),
            Subject::S2s(index) => typed(index, op, &key.to_string(), &value.to_string()),
        }
    }

    fn count(&self) -> Result<u64> {
        match self {
            Subject::File(index) => index.count(),
            Subject::Mem(index) => index.count(),
            Subject::N2n(index) => index.count(),
            Subject::N2s(index) => index.count(),
            Subject::S2n(index) => index.count(),
            Subject::S2s(index) => index.count(),
        }
    }
}

fn bytes<I: Index<Key = [u8], Value = [u8]>>(
    index: &I,
    op: Op,
    key: i64,
    value: i64,
    text: &mut Text,
) -> Result<()> {
    text.set(key, value);
    typed(index, op, text.key.as_bytes(), text.value.as_bytes())
}

fn typed<I: Index + ?Sized>(index: &I, op: Op, key: &I::Key, value: &I::Value) -> Result<()> {
    match op {
        Op::Add => index.add(key, value),
        // The answers are not checked, as the reference's are not: a phase
        // measures the operation. black_box keeps a lookup whose answer is
        // unused from being optimized away (docs/indexes.md, Benchmark).
        Op::Check => index.check(key, value).map(|found| {
            std::hint::black_box(found);
        }),
        Op::Remove => index.remove(key, value).map(drop),
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// Runs `kura perf index`.
pub fn run(args: &IndexArgs) -> Result<()> {
    let total = args.iter.checked_mul(args.threads as u64).filter(|&n| n <= i64::MAX as u64);
    let total = total
        .ok_or_else(|| invalid(format!("--iter {} × --threads {} is too many", args.iter, args.threads)))?;
    let subject = Subject::open(args)?;
    let memory = MemoryBaseline::now();
    for (op, name, title) in
        [(Op::Add, "add", "Adding"), (Op::Check, "check", "Checking"), (Op::Remove, "remove", "Removing")]
    {
        say(format_args!(
            "{title}: type={} num_iterations={} num_threads={}",
            args.kind, args.iter, args.threads
        ));
        let start = Instant::now();
        run_workers(args.threads, |id, stop| {
            // The same seeds in every phase: each replays the pairs added.
            let mut keys = thread_rng(id as u64, 0);
            let mut values = thread_rng(id as u64 * 2 + 1, 0);
            let mut progress = Progress::new(args.iter, id == 0);
            let mut text = Text::default();
            for i in 0..args.iter {
                if stop.is_set() {
                    break;
                }
                let sequential = (i * args.threads as u64 + id as u64) as i64;
                let key = if args.random_key { keys.gen_range(0..total) as i64 } else { sequential };
                let value = if args.random_value { values.gen_range(0..total) as i64 } else { sequential };
                subject.apply(op, key, value, &mut text)?;
                progress.tick(i + 1);
            }
            progress.finish();
            Ok(())
        })?;
        let elapsed = start.elapsed();
        PhaseReport::new(name, title, elapsed, total)
            .field("num_records", subject.count()?)
            .field_after_qps("mem", memory.grown())
            .json_field("type", args.kind.clone())
            .json_field("iterations", args.iter)
            .json_field("threads", args.threads)
            .print(args.json);
    }
    if let Subject::File(index) = subject {
        index.close()?;
    }
    Ok(())
}
