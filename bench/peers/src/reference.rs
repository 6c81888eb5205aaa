//! The reference's columns in a build without its C library (see
//! `build.rs`; with it they are stores, `stores/tkrzw.rs`): Tkrzw's own
//! benchmark program, run on the seeds' workload (its `sequence
//! --random_key`: keys of 8 digits drawn at random, each set, got,
//! iterated and removed), its reported times taken as they are. It runs no
//! other row of the table.

use std::collections::BTreeMap;
use std::process::Command;

use crate::engine::BoxError;
use crate::table::{row_ids, Config, Figure};

/// The program, as the `libtkrzw` packages install it.
pub const PROGRAM: &str = "tkrzw_dbm_perf";

/// Whether the program is on the `PATH`.
pub fn available() -> bool {
    Command::new(PROGRAM).output().is_ok()
}

/// Runs the reference's hash (`hash`) or tree database once.
pub fn run(config: &Config, hash: bool) -> Result<BTreeMap<String, Figure>, BoxError> {
    let dir = config.dir.join(format!("kura-peers-tkrzw-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(if hash { "bench.tkh" } else { "bench.tkt" });
    let output = Command::new(PROGRAM)
        .args(["sequence", "--random_key", "--dbm", if hash { "hash" } else { "tree" }])
        .args(["--iter", &config.seed_records.to_string(), "--size", &config.value_size.to_string()])
        .arg("--path")
        .arg(&path)
        .output();
    std::fs::remove_dir_all(&dir)?;
    let output = output?;
    if !output.status.success() {
        return Err(format!(
            "{PROGRAM} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    parse(&String::from_utf8_lossy(&output.stdout))
}

/// Reads the program's report into the table's rows.
fn parse(text: &str) -> Result<BTreeMap<String, Figure>, BoxError> {
    let field = |line: &str, name: &str| -> Option<f64> {
        line.split_whitespace().find_map(|word| word.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    };
    let mut figures = BTreeMap::new();
    let mut peak: f64 = 0.0;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let row = match line.split(':').next() {
            Some("Setting done") => "seeds_set",
            Some("Getting done") => "seeds_get",
            Some("Iterating done") => "seeds_iterate",
            Some("Removing done") => "seeds_remove",
            _ => continue,
        };
        let seconds = field(line, "elapsed_time").ok_or_else(|| format!("no elapsed_time in {line:?}"))?;
        figures.insert(row.to_string(), Figure::Value(seconds * 1000.0));
        peak = peak.max(field(line, "mem").unwrap_or(0.0));
        if row == "seeds_iterate" {
            if let Some(size) = lines.next().and_then(|next| field(next, "file_size")) {
                figures.insert("seeds_size".to_string(), Figure::Value(size));
            }
        }
    }
    for row in ["seeds_set", "seeds_get", "seeds_iterate", "seeds_remove"] {
        if !figures.contains_key(row) {
            return Err(format!("{PROGRAM} reported no time for {row}").into());
        }
    }
    // `mem` is the growth of `VmRSS` since the program began, which it
    // reads in kB from `/proc/self/status` and prints with `k` taken as a
    // decimal thousand: back to bytes here. It reports no peak over a whole
    // run, so that row stays not applicable.
    if peak > 0.0 {
        figures.insert("seeds_memory".to_string(), Figure::Value(peak / 1000.0 * 1024.0));
    }
    for id in row_ids() {
        figures
            .entry(id.to_string())
            .or_insert_with(|| Figure::NotApplicable(format!("{PROGRAM} runs the seeds' rows only")));
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_read_and_the_other_rows_marked() {
        let text = "Setting done: elapsed_time=0.5 num_records=3 qps=6 mem=4000000\n  file_size=100 x=1\n\
                    Getting done: elapsed_time=0.25 num_records=3 qps=12 mem=5000000\n\
                    Iterating done: elapsed_time=0.125 num_records=3 qps=24 mem=4000000\n  file_size=2048 eff=1\n\
                    Removing done: elapsed_time=1 num_records=0 qps=3 mem=4500000\n";
        let figures = parse(text).unwrap();
        assert_eq!(figures["seeds_set"], Figure::Value(500.0));
        assert_eq!(figures["seeds_get"], Figure::Value(250.0));
        assert_eq!(figures["seeds_size"], Figure::Value(2048.0));
        assert_eq!(figures["seeds_memory"], Figure::Value(5_120_000.0));
        assert!(matches!(figures["peak_memory"], Figure::NotApplicable(_)));
        assert!(matches!(figures["bulk_load"], Figure::NotApplicable(_)));
        assert!(parse("Setting done: elapsed_time=1\n").is_err());
    }
}
