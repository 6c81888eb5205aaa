//! `kura perf`, run as a user runs it: the built binary on a database in a
//! temporary directory, judged by its exit status and its output.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn kura(args: &[&str], path: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kura"));
    command.arg("perf").args(args);
    if let Some(path) = path {
        command.arg("--path").arg(path);
    }
    command.output().expect("the kura binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed and returns its JSON phase objects.
fn phases(args: &[&str], path: &Path) -> Vec<Value> {
    let output = kura(args, Some(path));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{args:?} failed: {}\n{stdout}", text(&output.stderr));
    stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

/// Runs a command that must fail and returns its exit code and error output.
fn failure(args: &[&str], path: Option<&Path>) -> (i32, String) {
    let output = kura(args, path);
    assert!(!output.status.success(), "{args:?} succeeded:\n{}", text(&output.stdout));
    (output.status.code().unwrap_or(-1), text(&output.stderr))
}

/// Checks the four phases of a sequence run of `records` distinct keys on a
/// hash database.
fn check_sequence(found: &[Value], records: u64, what: &str) {
    check_sequence_of("hash", found, records, what);
}

/// Checks the four phases of a sequence run of `records` distinct keys on `dbm`.
fn check_sequence_of(dbm: &str, found: &[Value], records: u64, what: &str) {
    let names: Vec<&str> = found.iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(names, ["set", "get", "iterate", "remove"], "{what}");
    for phase in found {
        assert!(phase["qps"].as_f64().unwrap() > 0.0, "{what}: {phase}");
        assert!(phase["elapsed"].as_f64().unwrap() >= 0.0, "{what}: {phase}");
        assert!(phase["mem"].is_i64(), "{what}: {phase}");
        assert!(phase["file_size"].as_u64().unwrap() > 0, "{what}: {phase}");
        assert_eq!(phase["dbm"], dbm, "{what}: {phase}");
    }
    for phase in &found[..3] {
        assert_eq!(phase["num_records"], records, "{what}: {phase}");
    }
    assert_eq!(found[3]["num_records"], 0, "{what}");
}

const SMALL: [&str; 4] = ["--dbm", "hash", "--buckets", "5000"];

#[test]
fn sequence_reports_four_phases_on_every_file_set_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkh");
    let set_ups: [&[&str]; 5] = [
        &["--file", "mmap-para"],
        &["--file", "mmap-atom"],
        &["--file", "pos-para", "--cache_buckets"],
        &["--file", "pos-para", "--cache_buckets", "--block_size", "512", "--align_pow", "9", "--padding"],
        &["--file", "pos-atom", "--block_size", "512", "--align_pow", "9", "--padding", "--pagecache"],
    ];
    for set_up in set_ups {
        let mut args = vec!["sequence", "--json", "--iter", "1000", "--threads", "2", "--size", "100"];
        args.extend(SMALL);
        args.extend(set_up);
        let found = phases(&args, &path);
        check_sequence(&found, 2000, &format!("{set_up:?}"));
        assert_eq!(found[0]["file"], set_up[1]);
        assert_eq!(found[0]["iterations"], 1000);
        assert_eq!(found[0]["threads"], 2);
        assert_eq!(found[0]["value_size"], 100);
    }
}

#[test]
fn sequence_validates_every_value_with_random_keys_and_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.tkh");
    for threads in ["1", "3"] {
        let mut args = vec!["sequence", "--json", "--iter", "1500", "--threads", threads, "--validate"];
        args.extend(["--random_key", "--random_value", "--size", "40", "--random_seed", "7"]);
        args.extend(SMALL);
        let found = phases(&args, &path);
        let records = found[0]["num_records"].as_u64().unwrap();
        // Uniform draws of n keys out of n leave about 1 - 1/e of them distinct.
        let drawn = 1500 * threads.parse::<u64>().unwrap();
        assert!(records > drawn / 2 && records < drawn, "{threads} threads: {records} of {drawn}");
        check_sequence(&found, records, threads);
    }
}

#[test]
fn phases_run_one_at_a_time_on_the_same_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("split.tkh");
    let base =
        ["--json", "--iter", "800", "--threads", "2", "--validate", "--random_key", "--random_seed", "3"];
    let mut records = None;
    for (flag, name) in [
        ("--set_only", "set"),
        ("--get_only", "get"),
        ("--iter_only", "iterate"),
        ("--remove_only", "remove"),
    ] {
        let mut args = vec!["sequence", flag];
        args.extend(base);
        args.extend(SMALL);
        let found = phases(&args, &path);
        assert_eq!(found.len(), 1, "{flag}");
        assert_eq!(found[0]["phase"], name);
        let count = found[0]["num_records"].as_u64().unwrap();
        if name == "remove" {
            assert_eq!(count, 0);
        } else {
            assert_eq!(*records.get_or_insert(count), count, "{flag}");
        }
    }
    // Reading with other flags than the writer's finds the difference.
    let mut args = vec!["sequence", "--get_only", "--iter", "800", "--threads", "2", "--random_key"];
    args.extend(["--random_seed", "4"]);
    args.extend(SMALL);
    let (code, stderr) = failure(&args, Some(&path));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("missing"), "{stderr}");
}

#[test]
fn text_report_follows_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.tkh");
    let mut args = vec!["sequence", "--iter", "100"];
    args.extend(SMALL);
    let output = kura(&args, Some(&path));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "Setting: impl=hash num_iterations=100 value_size=8 num_threads=1");
    assert_eq!(lines[1], format!("{} (00000005)", ".".repeat(5)));
    assert!(lines[21].starts_with("Synchronizing: ... done (elapsed="), "{stdout}");
    assert!(lines[22].starts_with("Setting done: elapsed_time="), "{stdout}");
    assert!(lines[22].contains(" num_records=100 qps=") && lines[22].contains(" mem="), "{stdout}");
    assert!(lines[23].starts_with("  file_size="), "{stdout}");
    for title in ["Getting", "Iterating", "Removing"] {
        assert!(
            lines.contains(&&*format!("{title}: impl=hash num_iterations=100 value_size=8 num_threads=1"))
        );
        let done = lines.iter().find(|l| l.starts_with(&format!("{title} done: "))).unwrap();
        let fields: Vec<&str> = done.split(' ').skip(2).map(|f| f.split('=').next().unwrap()).collect();
        assert_eq!(fields, ["elapsed_time", "num_records", "qps", "mem"], "{done}");
    }
    assert!(!stdout.contains('{'), "no JSON without --json");
}

#[test]
fn parallel_mixes_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parallel.tkh");
    let mut args = vec!["parallel", "--json", "--iter", "3000", "--threads", "4", "--validate"];
    args.extend(["--random_key", "--random_value", "--size", "50", "--keys", "500", "--rebuild"]);
    args.extend(SMALL);
    let found = phases(&args, &path);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["phase"], "parallel");
    assert!(found[0]["num_records"].as_u64().unwrap() <= 500);
    // Sequential keys with a pause between operations.
    let args =
        ["parallel", "--iter", "50", "--threads", "2", "--sleep", "0.0001", "--validate", "--dbm", "hash"];
    assert!(kura(&args, Some(&path)).status.success());
}

#[test]
fn wicked_matches_its_model_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wicked.tkh");
    let runs: [&[&str]; 4] = [
        &["--threads", "1"],
        &["--threads", "4", "--iterator", "--sync"],
        &["--threads", "4", "--iterator", "--clear", "--rebuild", "--sync"],
        &[
            "--threads",
            "3",
            "--iterator",
            "--rebuild",
            "--append",
            "--record_crc",
            "32",
            "--file",
            "pos-para",
        ],
    ];
    for extra in runs {
        let mut args = vec!["wicked", "--json", "--iter", "3000", "--size", "20", "--validate"];
        args.extend(SMALL);
        args.extend(extra);
        let output = kura(&args, Some(&path));
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{extra:?}: {}\n{stdout}", text(&output.stderr));
        // With --json the text for people is on stderr, stdout only JSON.
        let report = text(&output.stderr);
        assert!(report.contains("Validated after reopening: "), "{extra:?}: {report}");
        assert!(stdout.lines().all(|l| l.starts_with('{')), "{extra:?}: {stdout}");
        let found: Value =
            serde_json::from_str(stdout.lines().find(|l| l.starts_with('{')).unwrap()).unwrap();
        assert_eq!(found["phase"], "wicked");
    }
    // Without --validate every thread draws from every key.
    let mut args = vec!["wicked", "--iter", "2000", "--threads", "4", "--iterator", "--clear", "--rebuild"];
    args.extend(SMALL);
    assert!(kura(&args, Some(&path)).status.success());
}

#[test]
fn wicked_runs_for_the_seconds_asked_and_tallies_what_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timed.tkh");
    let mut args = vec!["wicked", "--seconds", "1.5", "--iter", "50", "--threads", "3", "--validate"];
    args.extend(["--iterator", "--rebuild", "--clear", "--sync"]);
    args.extend(SMALL);
    let started = std::time::Instant::now();
    let output = kura(&args, Some(&path));
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}", text(&output.stderr));
    assert!(started.elapsed().as_secs_f64() >= 1.5, "stopped before its --seconds");
    assert!(stdout.contains("Validated after reopening: "), "{stdout}");
    let tally = stdout.lines().find(|l| l.starts_with("Tally: ")).unwrap_or_else(|| panic!("{stdout}"));
    let figure = |name: &str| -> u64 {
        let prefix = format!("{name}=");
        let field = tally.split(' ').find_map(|f| f.strip_prefix(prefix.as_str()));
        field.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} in {tally}"))
    };
    // More than one pass of 50 operations on each of 3 threads, with about
    // two of each rare operation per thread and pass.
    assert!(figure("operations") > 3 * 50, "{tally}");
    assert!(figure("rebuilds") > 0 && figure("clears") > 0 && figure("synchronizations") > 0, "{tally}");
    let (code, message) = failure(&["wicked", "--seconds", "0"], Some(&path));
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("positive number of seconds"), "{message}");
}

#[test]
fn locking_and_closing_flags_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flags.tkh");
    let mut args = vec!["sequence", "--iter", "200", "--no_wait", "--no_lock", "--sync_hard", "--validate"];
    args.extend(["--offset_width", "4", "--fbp_cap", "10", "--min_read_size", "64", "--alloc_init", "4096"]);
    args.extend(["--alloc_inc", "1.5", "--verbose", "--record_crc", "-1"]);
    args.extend(SMALL);
    let output = kura(&args, Some(&path));
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("  offset_width=4"), "--verbose shows the database's figures");
    // auto picks hash for .tkh, as the reference.
    assert!(kura(&["sequence", "--iter", "100"], Some(&path)).status.success());
}

#[test]
fn bad_input_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.tkh");
    let cases: [(&[&str], Option<&Path>, i32, &str); 16] = [
        (&["sequence", "--dbm", "poly"], Some(&path), 2, "unknown DBM implementation \"poly\""),
        (
            &["sequence", "--dbm", "skip", "--buckets", "9"],
            Some(&path),
            1,
            "--buckets is a flag of the hash and tree",
        ),
        (
            &["sequence", "--dbm", "hash", "--step_unit", "4"],
            Some(&path),
            1,
            "--step_unit is a flag of the skip",
        ),
        (&["sequence", "--dbm", "skip", "--reducer", "third"], Some(&path), 2, "unknown reducer \"third\""),
        (&["wicked", "--dbm", "skip", "--validate"], Some(&path), 1, "validate it with `kura perf sequence"),
        (
            &["parallel", "--dbm", "tiny", "--align_pow", "3"],
            None,
            1,
            "--align_pow is not a flag of the tiny database",
        ),
        (&["sequence", "--dbm", "hash"], None, 1, "give the file's --path"),
        (&["sequence"], None, 1, "give --dbm hash"),
        (&["sequence"], Some(&dir.path().join("x.dat")), 1, "cannot tell the database"),
        (&["sequence", "--dbm", "hash", "--iter", "0"], Some(&path), 2, "--iter"),
        (&["sequence", "--dbm", "hash", "--size", "abc"], Some(&path), 2, "--size"),
        (&["sequence", "--dbm", "hash", "--record_crc", "7"], Some(&path), 2, "--record_crc"),
        (&["sequence", "--dbm", "hash", "--file", "stdio"], Some(&path), 2, "unknown file implementation"),
        (&["sequence", "--dbm", "hash", "--direct_io"], Some(&path), 1, "direct I/O"),
        (&["parallel", "--dbm", "hash", "--sleep", "-1"], Some(&path), 2, "seconds"),
        (&["wicked", "--dbm", "hash", "--random_key"], Some(&path), 2, "--random_key"),
    ];
    for (args, path, code, message) in cases {
        let (found_code, stderr) = failure(args, path);
        assert_eq!(found_code, code, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    // Reading a database that does not exist names it.
    let missing = dir.path().join("missing.tkh");
    let (code, stderr) = failure(&["sequence", "--dbm", "hash", "--get_only"], Some(&missing));
    assert_eq!(code, 1);
    assert!(stderr.contains("missing.tkh"), "{stderr}");
}

const TREE_SMALL: [&str; 6] = ["--dbm", "tree", "--buckets", "1000", "--max_page_size", "512"];

#[test]
fn tree_sequence_validates_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tkt");
    for threads in ["1", "3"] {
        let mut args = vec!["sequence", "--json", "--iter", "1500", "--threads", threads, "--validate"];
        args.extend(["--random_key", "--random_value", "--size", "40", "--random_seed", "7"]);
        args.extend(TREE_SMALL);
        let found = phases(&args, &path);
        let records = found[0]["num_records"].as_u64().unwrap();
        let drawn = 1500 * threads.parse::<u64>().unwrap();
        assert!(records > drawn / 2 && records < drawn, "{threads} threads: {records} of {drawn}");
        check_sequence_of("tree", &found, records, threads);
    }
    // Sequential keys, every phase's count exact; auto picks tree for .tkt.
    let found = phases(&["sequence", "--json", "--iter", "1000", "--threads", "2", "--validate"], &path);
    check_sequence_of("tree", &found, 2000, "auto");
}

#[test]
fn skip_sequence_validates_duplicates_and_reducers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("casket.tks");
    let base = ["sequence", "--json", "--iter", "1500", "--random_key", "--size", "30", "--validate"];
    let small =
        ["--step_unit", "3", "--max_level", "4", "--sort_mem_size", "4096", "--max_cached_records", "10"];
    for threads in ["1", "3"] {
        // Every set adds a record: the count is the number of sets.
        let mut args = [base.as_slice(), &small, &["--threads", threads]].concat();
        let found = phases(&args, &path);
        check_sequence_of("skip", &found, 1500 * threads.parse::<u64>().unwrap(), threads);
        // With a reducer, one record a key.
        args.extend(["--reducer", "last", "--file", "pos-para", "--block_size", "512", "--padding"]);
        let found = phases(&args, &path);
        let records = found[0]["num_records"].as_u64().unwrap();
        assert!(records < 1500 * threads.parse::<u64>().unwrap(), "{threads} threads: {records}");
        check_sequence_of("skip", &found, records, threads);
    }
}

#[test]
fn tree_flags_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let runs: [&[&str]; 4] = [
        &["--max_page_size", "200", "--max_branches", "3", "--max_cached_pages", "2"],
        &["--key_comparator", "decimal", "--max_page_size", "-1", "--max_branches", "-1"],
        &["--key_comparator", "RealNumberKeyComparator", "--append", "--record_crc", "32", "--fbp_cap", "10"],
        &[
            "--key_comparator",
            "lexical_reverse",
            "--file",
            "pos-atom",
            "--block_size",
            "512",
            "--align_pow",
            "9",
            "--padding",
            "--pagecache",
            "--cache_buckets",
            "--buckets",
            "500",
            "--offset_width",
            "4",
            "--min_read_size",
            "64",
        ],
    ];
    for (i, extra) in runs.iter().enumerate() {
        let path = dir.path().join(format!("flags-{i}.tree"));
        let mut args = vec!["sequence", "--json", "--iter", "600", "--threads", "2", "--validate"];
        args.extend(["--random_key", "--verbose"]);
        args.extend(*extra);
        let output = kura(&args, Some(&path));
        // With --json the text for people (the --verbose figures) is on stderr.
        let stdout = text(&output.stderr);
        assert!(output.status.success(), "{extra:?}: {}\n{stdout}", text(&output.stderr));
        let comparator =
            extra.iter().position(|f| *f == "--key_comparator").map(|i| extra[i + 1].to_ascii_lowercase());
        let expected = match comparator.as_deref() {
            Some("decimal") => "decimal",
            Some("realnumberkeycomparator") => "real",
            Some("lexical_reverse") => "lexical_reverse",
            _ => "lexical",
        };
        assert!(stdout.contains(&format!("  key_comparator={expected}\n")), "{extra:?}: {stdout}");
        if i == 0 {
            assert!(
                stdout.contains("  max_page_size=200\n") && stdout.contains("  max_branches=3\n"),
                "{stdout}"
            );
        }
        if extra.contains(&"--buckets") {
            assert!(stdout.contains("  store_num_buckets=500\n"), "{stdout}");
        } else {
            // Absent, the node store's buckets are the tree's default, not the hash's.
            assert!(stdout.contains("  store_num_buckets=131101\n"), "{extra:?}: {stdout}");
        }
    }
    for workload in [
        &["parallel", "--iter", "2000", "--threads", "4", "--validate", "--random_key", "--keys", "300"][..],
        &["parallel", "--iter", "1000", "--threads", "2", "--validate", "--rebuild"][..],
        &["wicked", "--iter", "2000", "--threads", "4", "--iterator", "--clear", "--rebuild", "--validate"][..],
        &["wicked", "--iter", "2000", "--threads", "3", "--iterator", "--rebuild", "--validate", "--append"]
            [..],
    ] {
        let path = dir.path().join("mixed.tkt");
        let mut args = workload.to_vec();
        args.extend(TREE_SMALL);
        args.extend(["--max_branches", "4", "--key_comparator", "hex"]);
        let output = kura(&args, Some(&path));
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{workload:?}: {}\n{stdout}", text(&output.stderr));
        if workload[0] == "wicked" {
            assert!(stdout.contains("Validated after reopening: "), "{workload:?}: {stdout}");
        }
    }
}

#[test]
fn tree_flags_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("bad.tkt");
    let hash = dir.path().join("bad.tkh");
    let cases: [(&[&str], &Path, i32, &str); 8] = [
        (
            &["sequence", "--dbm", "tree", "--key_comparator", "alphabetical"],
            &tree,
            2,
            "unknown key comparator \"alphabetical\": use one of lexical, decimal",
        ),
        (&["wicked", "--key_comparator", "numeric"], &tree, 2, "--key_comparator"),
        (&["sequence", "--dbm", "tree", "--max_branches", "2"], &tree, 1, "max_branches must be at least 3"),
        (&["sequence", "--dbm", "tree", "--max_page_size", "x"], &tree, 2, "--max_page_size"),
        (
            &["sequence", "--dbm", "hash", "--max_page_size", "4096"],
            &hash,
            1,
            "--max_page_size is a flag of the tree database, not of the hash database",
        ),
        (
            &["parallel", "--dbm", "hash", "--max_branches", "8"],
            &hash,
            1,
            "--max_branches is a flag of the tree",
        ),
        (&["wicked", "--max_cached_pages", "8"], &hash, 1, "--max_cached_pages is a flag of the tree"),
        (&["sequence", "--key_comparator", "decimal"], &hash, 1, "--key_comparator is a flag of the tree"),
    ];
    for (args, path, code, message) in cases {
        let (found_code, stderr) = failure(args, Some(path));
        assert_eq!(found_code, code, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(!hash.exists(), "a refused flag creates no file");
}

const MEMORY_DBMS: [&str; 5] = ["tiny", "baby", "cache", "stdhash", "stdtree"];

/// The JSON phase objects of a run that must succeed, with no --path.
fn phases_in_memory(args: &[&str]) -> Vec<Value> {
    let output = kura(args, None);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{args:?} failed: {}\n{stdout}", text(&output.stderr));
    stdout.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn memory_databases_run_and_validate_every_workload() {
    let dir = tempfile::tempdir().unwrap();
    for dbm in MEMORY_DBMS {
        let args = ["sequence", "--json", "--iter", "1000", "--threads", "2", "--validate", "--dbm", dbm];
        // Without a path the database lives in memory between the phases.
        check_sequence_of(dbm, &phases_in_memory(&args), 2000, &format!("{dbm} in memory"));
        // With one, each phase reads the flat file and the writing ones write it.
        let path = dir.path().join(format!("{dbm}.flat"));
        check_sequence_of(dbm, &phases(&args, &path), 2000, &format!("{dbm} with a flat file"));
        let mut random = args.to_vec();
        random.extend(["--random_key", "--random_value", "--size", "30"]);
        let found = phases_in_memory(&random);
        assert_eq!(found.len(), 4, "{dbm}");
        for mode in ["parallel", "wicked"] {
            let found = phases_in_memory(&[
                mode,
                "--json",
                "--iter",
                "2000",
                "--threads",
                "3",
                "--validate",
                "--dbm",
                dbm,
            ]);
            assert_eq!(found.len(), 1, "{dbm} {mode}");
        }
    }
}

/// `mixed` reports a set, a get and a mixed phase; the gets' hit rates are
/// their own (counted by the getter threads), and the scanners walk.
#[test]
fn mixed_reports_the_gets_hit_rates_with_and_without_scanners() {
    let dir = tempfile::tempdir().unwrap();
    for dbm in ["hash", "tree", "skip"] {
        let path = dir.path().join(format!("mixed.{dbm}"));
        let args = [
            "mixed",
            "--dbm",
            dbm,
            "--file",
            "pos-para",
            "--block_size",
            "512",
            "--pagecache",
            "--page_cache_capacity",
            "64",
            "--iter",
            "2000",
            "--threads",
            "2",
            "--hot",
            "50",
            "--json",
        ];
        let found = phases(&args, &path);
        let names: Vec<&str> = found.iter().map(|p| p["phase"].as_str().unwrap()).collect();
        assert_eq!(names, ["set", "get", "mixed"], "{dbm}");
        for phase in &found[1..] {
            let accesses = phase["page_hits"].as_u64().unwrap() + phase["page_misses"].as_u64().unwrap();
            let loads = phase["node_hits"].as_u64().unwrap() + phase["node_misses"].as_u64().unwrap();
            // A tree's gets may be served by its node cache alone.
            assert!(accesses > 0 || (dbm == "tree" && loads > 0), "{dbm}: {phase}");
            assert!(phase["qps"].as_f64().unwrap() > 0.0, "{dbm}: {phase}");
        }
        assert_eq!(found[1]["scanners"], 0, "{dbm}");
        assert_eq!(found[2]["scanners"], 1, "{dbm}");
        assert!(found[2]["scanned"].as_u64().unwrap() > 0, "{dbm}: {}", found[2]);
    }
    let (code, err) =
        failure(&["mixed", "--dbm", "hash", "--iter", "10", "--hot", "11"], Some(&dir.path().join("x.kh")));
    assert_eq!(code, 1);
    assert!(err.contains("--hot 11 is more than the 10 records"), "{err}");
}

#[test]
fn batched_gets_find_every_record_and_miss_what_is_not_there() {
    let dir = tempfile::tempdir().unwrap();
    for (dbm, name) in [("hash", "b.tkh"), ("tree", "b.tkt"), ("skip", "b.tks")] {
        let path = dir.path().join(name);
        for validate in [false, true] {
            // 1000 keys per thread in batches of 7: the last batch is short.
            let mut args = vec!["sequence", "--json", "--iter", "1000", "--threads", "2", "--batch", "7"];
            args.extend(["--random_key", "--random_seed", "5", "--size", "30", "--dbm", dbm]);
            if validate {
                args.push("--validate");
            }
            let found = phases(&args, &path);
            let records = found[0]["num_records"].as_u64().unwrap();
            check_sequence_of(dbm, &found, records, &format!("{dbm} validate={validate}"));
        }
        // Keys drawn with another seed are mostly not there: the batched get phase must say so.
        let set =
            ["sequence", "--set_only", "--iter", "500", "--random_key", "--random_seed", "5", "--dbm", dbm];
        phases(&set, &path);
        let get = [
            "sequence",
            "--get_only",
            "--iter",
            "500",
            "--random_key",
            "--random_seed",
            "6",
            "--batch",
            "16",
        ];
        let mut args = get.to_vec();
        args.extend(["--dbm", dbm]);
        let (_, stderr) = failure(&args, Some(&path));
        assert!(stderr.contains("missing"), "{dbm}: {stderr}");
    }
    let (_, stderr) = failure(&["sequence", "--batch", "0"], None);
    assert!(stderr.contains("--batch"), "{stderr}");
}

#[test]
fn txn_snapshot_reports_the_old_values_it_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.kh");
    let run = |extra: &[&str]| {
        let mut args = vec!["txn", "--dbm", "hash", "--iter", "2000", "--threads", "2", "--size", "10"];
        args.extend(["--keys", "500", "--prefill", "--json"]);
        args.extend(extra);
        let found = phases(&args, &path);
        assert_eq!(found.len(), 1, "{found:?}");
        found.into_iter().next().unwrap()
    };
    let held = run(&["--snapshot"]);
    assert_eq!(held["snapshot_held"], true, "{held}");
    assert_eq!(held["num_records"], 500, "{held}");
    let keys = held["snapshot_keys"].as_u64().unwrap();
    assert!(keys > 400 && keys <= 500, "{held}");
    // Each key changed since the snapshot: its 8 digits and its 10-byte prefilled value.
    assert_eq!(held["snapshot_needs"].as_u64().unwrap(), keys * 18, "{held}");
    // Four thousand commits, each keeping the value it replaced.
    let kept = held["version_bytes"].as_u64().unwrap();
    assert!(kept >= 4000 * 10, "{held}");
    assert!(held["peak_mem"].as_u64().unwrap() > 0 || !cfg!(target_os = "linux"), "{held}");

    // Without a view open nothing is kept, and no snapshot figures are printed.
    let plain = run(&[]);
    assert_eq!(plain["version_bytes"], 0, "{plain}");
    assert!(plain.get("snapshot_keys").is_none(), "{plain}");

    // A cap below what the snapshot needs expires it, and says so.
    let capped = run(&["--snapshot", "--max_version_bytes", "1000"]);
    assert_eq!(capped["snapshot_held"], false, "{capped}");
    assert!(capped["version_bytes"].as_u64().unwrap() <= 1000, "{capped}");

    // Without --prefill the snapshot saw no record: it needs only the keys.
    let found = phases(
        &["txn", "--dbm", "hash", "--iter", "300", "--size", "10", "--keys", "50", "--snapshot", "--json"],
        &path,
    );
    assert_eq!(found[0]["snapshot_held"], true, "{}", found[0]);
    assert_eq!(found[0]["snapshot_needs"].as_u64().unwrap(), found[0]["snapshot_keys"].as_u64().unwrap() * 8);

    let (code, stderr) =
        failure(&["txn", "--dbm", "hash", "--keys", "99999999999", "--snapshot"], Some(&path));
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--snapshot tracks at most"), "{stderr}");
}

#[test]
fn report_every_prints_intervals_and_the_worst_operation_of_each_phase() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("intervals.tkh");
    // 100 operations a thread in intervals of 40: the last one is short.
    let mut args = vec!["sequence", "--json", "--iter", "100", "--threads", "2", "--report_every", "40"];
    args.extend(SMALL);
    let output = kura(&args, Some(&path));
    assert!(output.status.success(), "{}", text(&output.stderr));
    let found: Vec<Value> =
        text(&output.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    check_sequence(&found, 200, "--report_every");
    for phase in &found {
        let intervals = phase["intervals"].as_array().unwrap();
        let ops: Vec<u64> = intervals.iter().map(|i| i["ops"].as_u64().unwrap()).collect();
        assert_eq!(ops, [40, 80, 100], "{phase}");
        let worst = phase["max_latency"].as_f64().unwrap();
        assert!(worst > 0.0, "{phase}");
        for interval in intervals {
            assert!(interval["interval_qps"].as_f64().unwrap() > 0.0, "{interval}");
            assert!(interval["qps"].as_f64().unwrap() > 0.0, "{interval}");
            assert!(interval["elapsed"].as_f64().unwrap() > 0.0, "{interval}");
            // Thread 0's intervals: none of its operations outlasts the phase's worst.
            assert!(interval["max_latency"].as_f64().unwrap() <= worst, "{phase}");
        }
        assert!((1..=100).contains(&phase["max_latency_op"].as_u64().unwrap()), "{phase}");
        assert!(phase["max_latency_thread"].as_u64().unwrap() < 2, "{phase}");
        let (over_1ms, over_10ms) =
            (phase["ops_over_1ms"].as_u64().unwrap(), phase["ops_over_10ms"].as_u64().unwrap());
        assert!(over_10ms <= over_1ms && over_1ms <= 200, "{phase}");
        // Only an operation longer than a millisecond counts.
        assert_eq!(over_1ms == 0, worst <= 0.001, "{phase}");
    }
    // The text, on stderr with --json: thread 0's lines instead of the dots,
    // and the worst operation under each phase's report line.
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "Setting: impl=hash num_iterations=100 value_size=8 num_threads=2");
    for (line, ops) in lines[1..4].iter().zip([40, 80, 100]) {
        let fields: Vec<&str> = line.split_whitespace().map(|f| f.split('=').next().unwrap()).collect();
        assert_eq!(fields, ["ops", "elapsed_time", "interval_qps", "qps", "max_latency"], "{stderr}");
        assert!(line.starts_with(&format!("  ops={ops} elapsed_time=")), "{stderr}");
    }
    assert_eq!(lines.iter().filter(|l| l.starts_with("  ops=")).count(), 12, "{stderr}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("  max_latency=")).count(), 4, "{stderr}");
    assert!(!stderr.contains(". ("), "no progress dots with --report_every: {stderr}");

    // Without the flag, nothing is timed.
    let mut args = vec!["sequence", "--json", "--iter", "100"];
    args.extend(SMALL);
    for phase in phases(&args, &dir.path().join("plain.tkh")) {
        assert!(phase.get("intervals").is_none() && phase.get("max_latency").is_none(), "{phase}");
    }
    let (_, stderr) = failure(&["sequence", "--report_every", "many"], None);
    assert!(stderr.contains("--report_every"), "{stderr}");
}
