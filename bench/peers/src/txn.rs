//! `kura-peers txn`: committed transactions per second of kuradb and its
//! peers on one workload. Every thread commits transactions of K random keys
//! (100-byte values by default) for a fixed time; each cell of threads ×
//! keys × durability runs every engine in turn, `--repeat` times, on a
//! fresh database each run, and the table shows the medians.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[cfg(feature = "redb")]
use crate::engine::Redb;
use crate::engine::{BoxError, Durability, Engine, EngineName, KuraHash, KuraTree};

const USAGE: &str = "\
usage: kura-peers txn [options]
  --seconds F          how long each run commits (default 3)
  --threads LIST       committer threads, comma-separated (default 1,4,16)
  --keys_per_txn LIST  keys each transaction sets (default 1,10,100)
  --durability LIST    sync, os, memory (default sync,memory)
  --engines LIST       kura-hash, kura-tree, redb (default all)
  --repeat N           runs of each engine per cell, alternating (default 3)
  --key_range N        keys are drawn from 0..N (default 1000000)
  --value_size N       bytes of each value (default 100)
  --dir PATH           where the databases are made (default: the temporary folder)";

/// What the command line asked for.
struct Config {
    seconds: f64,
    threads: Vec<usize>,
    keys_per_txn: Vec<usize>,
    durability: Vec<Durability>,
    engines: Vec<EngineName>,
    repeat: usize,
    key_range: u64,
    value_size: usize,
    dir: PathBuf,
}

fn parse_list<T>(text: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let items = text.split(',').map(|item| parse(item.trim())).collect::<Result<Vec<T>, String>>()?;
    if items.is_empty() {
        return Err("an empty list".to_string());
    }
    Ok(items)
}

fn parse_count<T>(flag: &str, text: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + From<u8>,
{
    match text.parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        _ => Err(format!("{flag}: {text:?} is not a positive integer")),
    }
}

fn parse_args(args: &[String]) -> Result<Config, String> {
    let mut config = Config {
        seconds: 3.0,
        threads: vec![1, 4, 16],
        keys_per_txn: vec![1, 10, 100],
        durability: vec![Durability::Sync, Durability::Memory],
        engines: EngineName::all(),
        repeat: 3,
        key_range: 1_000_000,
        value_size: 100,
        dir: std::env::temp_dir(),
    };
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--seconds" => {
                config.seconds = match value.parse::<f64>() {
                    Ok(s) if s > 0.0 && s.is_finite() => s,
                    _ => return Err(format!("--seconds: {value:?} is not a positive number")),
                }
            }
            "--threads" => config.threads = parse_list(value, |s| parse_count("--threads", s))?,
            "--keys_per_txn" => {
                config.keys_per_txn = parse_list(value, |s| parse_count("--keys_per_txn", s))?
            }
            "--durability" => config.durability = parse_list(value, Durability::parse)?,
            "--engines" => config.engines = parse_list(value, EngineName::parse)?,
            "--repeat" => config.repeat = parse_count("--repeat", value)?,
            "--key_range" => config.key_range = parse_count("--key_range", value)?,
            "--value_size" => config.value_size = parse_count("--value_size", value)?,
            "--dir" => config.dir = PathBuf::from(value),
            _ => return Err(format!("unknown flag {flag:?}")),
        }
    }
    Ok(config)
}

/// A small, fast generator of the keys each thread draws (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// One run's figures.
#[derive(Clone, Copy)]
struct RunResult {
    commits_per_sec: f64,
}

/// Opens a fresh database of `E` in `dir`, commits from `threads` threads
/// for `config.seconds`, closes it.
fn run_engine<E: Engine>(
    config: &Config,
    dir: &Path,
    durability: Durability,
    threads: usize,
    keys_per_txn: usize,
    seed: u64,
) -> Result<RunResult, BoxError> {
    let db = E::open(dir, durability)?;
    let commits = AtomicU64::new(0);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(config.seconds);
    std::thread::scope(|scope| -> Result<(), BoxError> {
        let workers: Vec<_> = (0..threads)
            .map(|id| {
                let (db, commits) = (&db, &commits);
                scope.spawn(move || -> Result<(), BoxError> {
                    let mut rng = Rng::new(seed ^ (id as u64 + 1) << 32);
                    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(keys_per_txn);
                    let mut done = 0;
                    while Instant::now() < deadline {
                        pairs.clear();
                        for _ in 0..keys_per_txn {
                            let n = rng.below(config.key_range);
                            let key = format!("{n:08}").into_bytes();
                            let fill = b'a' + (n % 26) as u8;
                            pairs.push((key, vec![fill; config.value_size]));
                        }
                        db.commit(&pairs)?;
                        done += 1;
                    }
                    commits.fetch_add(done, Ordering::Relaxed);
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker.join().map_err(|_| "a committer thread panicked")??;
        }
        Ok(())
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    db.close()?;
    Ok(RunResult { commits_per_sec: commits.load(Ordering::Relaxed) as f64 / elapsed })
}

fn run_one(
    config: &Config,
    engine: EngineName,
    durability: Durability,
    threads: usize,
    keys_per_txn: usize,
    seed: u64,
) -> Result<RunResult, BoxError> {
    let dir = config.dir.join(format!("kura-peers-{}-{}", std::process::id(), engine));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let result = match engine {
        EngineName::KuraHash => run_engine::<KuraHash>(config, &dir, durability, threads, keys_per_txn, seed),
        EngineName::KuraTree => run_engine::<KuraTree>(config, &dir, durability, threads, keys_per_txn, seed),
        #[cfg(feature = "redb")]
        EngineName::Redb => run_engine::<Redb>(config, &dir, durability, threads, keys_per_txn, seed),
    };
    std::fs::remove_dir_all(&dir)?;
    result
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

/// Formats a rate with thousands separators.
fn rate(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn run(config: &Config) -> Result<(), BoxError> {
    let redb_slot = config.engines.iter().position(|e| e.name() == "redb");
    let has_redb = redb_slot.is_some();
    let kuras: Vec<EngineName> = config.engines.iter().copied().filter(|e| e.name() != "redb").collect();
    let mut header = vec!["durability".to_string(), "threads".to_string(), "keys/txn".to_string()];
    let mut align = vec!["---", "---:", "---:"];
    for engine in &config.engines {
        header.push(format!("{engine} txn/s"));
        header.push(format!("{engine} keys/s"));
        align.extend(["---:", "---:"]);
    }
    if has_redb {
        for engine in &kuras {
            header.push(format!("{engine}/redb"));
            align.push("---:");
        }
    }
    let mut table = vec![format!("| {} |", header.join(" | ")), format!("| {} |", align.join(" | "))];
    for &durability in &config.durability {
        for &keys_per_txn in &config.keys_per_txn {
            for &threads in &config.threads {
                let mut runs: Vec<Vec<f64>> = vec![Vec::new(); config.engines.len()];
                for round in 0..config.repeat {
                    for (slot, &engine) in config.engines.iter().enumerate() {
                        let seed =
                            (round as u64 + 1) * 1_000_003 + threads as u64 * 101 + keys_per_txn as u64;
                        let result = run_one(config, engine, durability, threads, keys_per_txn, seed)?;
                        eprintln!(
                            "{} threads={} keys_per_txn={} {}: {} txn/s",
                            durability.name(),
                            threads,
                            keys_per_txn,
                            engine,
                            rate(result.commits_per_sec)
                        );
                        runs[slot].push(result.commits_per_sec);
                    }
                }
                let medians: Vec<f64> = runs.iter_mut().map(|r| median(r)).collect();
                let mut row =
                    vec![durability.name().to_string(), threads.to_string(), keys_per_txn.to_string()];
                for m in &medians {
                    row.push(rate(*m));
                    row.push(rate(m * keys_per_txn as f64));
                }
                if has_redb {
                    let redb = medians[redb_slot.unwrap_or(0)];
                    for engine in &kuras {
                        let slot = config.engines.iter().position(|e| e == engine).unwrap_or(0);
                        row.push(format!("{:.2}", medians[slot] / redb));
                    }
                }
                table.push(format!("| {} |", row.join(" | ")));
            }
        }
    }
    println!(
        "Medians of {} runs of {} s each; {}-byte values, keys drawn from 0..{}.\n",
        config.repeat, config.seconds, config.value_size, config.key_range
    );
    for line in table {
        println!("{line}");
    }
    Ok(())
}

/// Runs `kura-peers txn` with the arguments after `txn`.
pub fn main(args: &[String]) -> ExitCode {
    let config = match parse_args(args) {
        Ok(config) => config,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("kura-peers txn: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kura-peers txn: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn flags_are_parsed_and_bad_ones_named() {
        let config =
            parse_args(&args("--threads 2,8 --durability os --engines kura-hash,kura-tree --seconds 0.5"))
                .unwrap();
        assert_eq!(config.threads, [2, 8]);
        assert_eq!(config.durability, [Durability::Os]);
        assert_eq!(config.engines, [EngineName::KuraHash, EngineName::KuraTree]);
        assert_eq!(config.seconds, 0.5);
        for (bad, named) in [
            ("--threads 0", "--threads"),
            ("--durability fast", "unknown durability"),
            ("--engines nosuch", "unknown engine"),
            ("--seconds -1", "--seconds"),
            ("--repeat", "needs a value"),
            ("--color red", "unknown flag"),
        ] {
            let message = parse_args(&args(bad)).err().unwrap();
            assert!(message.contains(named), "{bad}: {message}");
        }
    }

    #[test]
    fn medians_and_rates_read_as_the_table_shows_them() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(rate(1234567.4), "1,234,567");
        assert_eq!(rate(999.0), "999");
    }

    #[test]
    fn every_engine_commits_and_closes() {
        let dir = std::env::temp_dir().join(format!("kura-peers-test-{}", std::process::id()));
        let config = Config { seconds: 0.1, ..parse_args(&[]).unwrap() };
        let config = Config { dir: dir.clone(), ..config };
        for engine in EngineName::all() {
            for durability in [Durability::Sync, Durability::Memory] {
                let result = run_one(&config, engine, durability, 2, 3, 1).unwrap();
                assert!(result.commits_per_sec > 0.0, "{engine} {durability:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
