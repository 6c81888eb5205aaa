//! Every input the fuzz targets (`fuzz/`, run by `scripts/fuzz`) crashed on
//! once, and their kept corpus, replayed through the same target bodies
//! (`tests/fuzzing/`) on stable: each must end in a clear error or a
//! consistent database, never a panic, a hang or a huge allocation.
//!
//! Crash inputs live in `tests/data/fuzz/TARGET/`, named for what they
//! caught; the corpus in `fuzz/corpus/TARGET/`.

mod fuzzing;

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("a directory entry").path()).collect();
    files.sort();
    files
}

/// Replays every input under `root/TARGET/` for each target; answers how many.
fn replay(root: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
    let mut replayed = 0;
    for target in fuzzing::TARGETS {
        for input in inputs(&root.join(target)) {
            let data = std::fs::read(&input).expect("read a fuzz input");
            let started = std::time::Instant::now();
            fuzzing::run(target, &data);
            eprintln!("replayed {} in {:?}", input.display(), started.elapsed());
            replayed += 1;
        }
    }
    replayed
}

/// Every input a fuzz target once crashed on now ends in a clear error or
/// a consistent database.
#[test]
fn crashes_found_by_fuzzing_stay_fixed() {
    replay("tests/data/fuzz");
}

/// The kept corpus (the inputs that reach every path the fuzzers found)
/// runs clean: a change that breaks any of them fails here, without a
/// fuzzer.
#[test]
fn the_kept_fuzz_corpus_runs_clean() {
    assert!(replay("fuzz/corpus") > 0, "the kept corpus is missing");
}
