//! `kura file-perf`, run as a user runs it: the built binary on a file in a
//! temporary directory, judged by its exit status, its output and the file left.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const KINDS: [&str; 4] = ["mmap-para", "mmap-atom", "pos-para", "pos-atom"];

fn kura(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura"))
        .arg("file-perf")
        .args(args)
        .arg(path)
        .output()
        .expect("the kura binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs a command that must succeed and returns its JSON phase objects.
fn phases(args: &[&str], path: &Path) -> Vec<Value> {
    let output = kura(args, path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{args:?} failed: {}\n{stdout}", stderr(&output));
    stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// Checks the write and read phases of a sequence run and returns the write phase's file size.
fn check_sequence_phases(phases: &[Value], iter: u64, threads: u64) -> u64 {
    let names: Vec<&str> = phases.iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(names, ["write", "read"]);
    for phase in phases {
        assert!(phase["qps"].as_f64().unwrap() > 0.0, "{phase}");
        assert!(phase["elapsed"].as_f64().unwrap() >= 0.0, "{phase}");
        assert_eq!(phase["iterations"], iter, "{phase}");
        assert_eq!(phase["threads"], threads, "{phase}");
    }
    assert_eq!(phases[0]["file_size"], phases[1]["file_size"]);
    phases[0]["file_size"].as_u64().unwrap()
}

#[test]
fn sequence_writes_and_reads_every_record_on_every_file_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seq.dat");
    for kind in KINDS {
        let found = phases(&["sequence", "--file", kind, "--iter", "500", "--threads", "2", "--json"], &path);
        assert_eq!(check_sequence_phases(&found, 500, 2), 500 * 2 * 100, "{kind}");
        assert_eq!(file_len(&path), 500 * 2 * 100, "{kind}");
        assert_eq!(found[0]["file"], kind);
    }
}

#[test]
fn sequence_at_random_offsets_stays_within_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.dat");
    for kind in KINDS {
        let args = ["sequence", "--file", kind, "--iter", "400", "--threads", "2", "--random", "--json"];
        let size = check_sequence_phases(&phases(&args, &path), 400, 2);
        assert!(size <= 400 * 2 * 100 && size.is_multiple_of(100), "{kind}: {size}");
        assert_eq!(file_len(&path), size, "{kind}");
    }
}

#[test]
fn sequence_by_appending_fills_the_file_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("append.dat");
    for kind in KINDS {
        let args = ["sequence", "--file", kind, "--iter", "300", "--threads", "3", "--append", "--json"];
        assert_eq!(check_sequence_phases(&phases(&args, &path), 300, 3), 300 * 3 * 100, "{kind}");
    }
    // Records too short to carry their id are still checked for being written.
    let args =
        ["sequence", "--file", "pos-para", "--iter", "300", "--threads", "3", "--size", "3", "--append"];
    assert!(kura(&args, &path).status.success());
}

#[test]
fn text_report_follows_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.dat");
    let output = kura(&["sequence", "--iter", "100", "--size", "10"], &path);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    let header = format!("Writing: path={} num_iterations=100 record_size=10 num_threads=1", path.display());
    assert_eq!(lines[0], header);
    assert_eq!(lines[1], format!("{} (00000005)", ".".repeat(5)));
    assert_eq!(lines.iter().filter(|l| l.starts_with('.')).count(), 40);
    let done: Vec<&&str> = lines.iter().filter(|l| l.contains(" done: ")).collect();
    assert_eq!(done.len(), 2);
    assert!(done[0].starts_with("Writing done: elapsed_time=") && done[0].contains(" file_size=1000 qps="));
    assert!(done[1].starts_with("Reading done: elapsed_time="));
    assert!(!stdout.contains('{'), "no JSON without --json");
}

#[test]
fn block_io_with_page_cache_and_head_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("block.dat");
    let options = ["--block_size", "512", "--pagecache", "--head_buffer", "4096"];
    for kind in ["pos-para", "pos-atom"] {
        for order in [None, Some("--random"), Some("--append")] {
            let mut args = vec!["sequence", "--file", kind, "--iter", "500", "--threads", "2", "--json"];
            args.extend(options);
            args.extend(order);
            let size = check_sequence_phases(&phases(&args, &path), 500, 2);
            if order != Some("--random") {
                assert_eq!(size, 500 * 2 * 100, "{kind} {order:?}");
            }
        }
    }
}

#[test]
fn padding_rounds_the_file_up_to_whole_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("padded.dat");
    for kind in ["pos-para", "pos-atom"] {
        for order in [None, Some("--append")] {
            let mut args = vec![
                "sequence",
                "--file",
                kind,
                "--iter",
                "7",
                "--threads",
                "3",
                "--json",
                "--block_size",
                "512",
            ];
            args.push("--padding");
            args.extend(order);
            let size = check_sequence_phases(&phases(&args, &path), 7, 3);
            assert_eq!(size, 2560, "{kind} {order:?}: 2100 bytes of records padded to 5 blocks");
            assert_eq!(file_len(&path), 2560, "{kind} {order:?}");
        }
    }
    // A file already a multiple of the block size gets no padding.
    let args = ["sequence", "--file", "pos-para", "--iter", "512", "--block_size", "512", "--padding"];
    assert!(kura(&args, &path).status.success());
    assert_eq!(file_len(&path), 51200);
}

#[test]
fn read_only_checks_a_file_written_earlier() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("split.dat");
    let written = phases(&["sequence", "--iter", "600", "--threads", "2", "--write_only", "--json"], &path);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["phase"], "write");
    // Record content depends only on the record, so another thread count reads it as well.
    let read = phases(&["sequence", "--iter", "400", "--threads", "3", "--read_only", "--json"], &path);
    assert_eq!(read.len(), 1);
    assert_eq!(read[0]["phase"], "read");
    assert_eq!(read[0]["file_size"], 120_000);

    // Random offsets replay from the seed, so a write-only run and a read-only run agree.
    let random = ["sequence", "--iter", "500", "--random", "--random_seed", "7"];
    assert!(kura(&[&random[..], &["--write_only"]].concat(), &path).status.success());
    assert!(kura(&[&random[..], &["--read_only", "--file", "pos-atom"]].concat(), &path).status.success());
}

#[test]
fn a_corrupt_record_fails_the_read_phase_naming_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.dat");
    assert!(kura(&["sequence", "--iter", "100", "--write_only"], &path).status.success());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4250] ^= 0xff;
    bytes[7777] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let output = kura(&["sequence", "--iter", "100", "--read_only", "--file", "pos-para"], &path);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with("kura: "), "{err}");
    assert!(err.contains("record 42 at offset 4200"), "{err}");
    assert!(err.contains("and 1 more"), "{err}");
}

#[test]
fn wicked_keeps_every_file_kind_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wicked.dat");
    for kind in KINDS {
        let found = phases(&["wicked", "--file", kind, "--iter", "3000", "--threads", "3", "--json"], &path);
        assert_eq!(found.len(), 1, "{kind}");
        assert_eq!(found[0]["phase"], "wicked");
        assert!(found[0]["qps"].as_f64().unwrap() > 0.0);
        // The slot area alone is iter × threads records; appends and expansions add to it.
        let size = found[0]["file_size"].as_u64().unwrap();
        assert!(size > 3000 * 3 * 100 && size.is_multiple_of(100), "{kind}: {size}");
        assert_eq!(file_len(&path), size, "{kind}");
    }
}

#[test]
fn wicked_with_block_io_options() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wicked-block.dat");
    for kind in ["pos-para", "pos-atom"] {
        let args = ["wicked", "--file", kind, "--iter", "2000", "--threads", "3", "--size", "77"];
        let options = ["--block_size", "512", "--pagecache", "--head_buffer", "4096", "--padding"];
        let output = kura(&[&args[..], &options[..]].concat(), &path);
        assert!(output.status.success(), "{kind}: {}", stderr(&output));
        assert!(file_len(&path).is_multiple_of(512), "{kind}");
    }
}

#[test]
fn an_unknown_file_kind_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let output = kura(&["sequence", "--file", "bogus-file"], &dir.path().join("x.dat"));
    assert!(!output.status.success());
    assert!(stderr(&output).contains("bogus-file"), "{}", stderr(&output));
}

#[test]
fn direct_io_without_a_block_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("direct.dat");
    let output = kura(&["sequence", "--file", "pos-para", "--direct_io"], &path);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("direct I/O") && err.contains("block_size"), "{err}");
    assert!(!path.exists(), "nothing is created for a refused configuration");
}

#[test]
fn read_only_on_a_missing_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.dat");
    let output = kura(&["sequence", "--read_only"], &path);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains(&path.display().to_string()), "{err}");
}

#[test]
fn bad_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flags.dat");
    for args in [
        &["sequence", "--write_only", "--read_only"][..],
        &["sequence", "--iter", "0"],
        &["sequence", "--threads", "x"],
        &["wicked", "--random"],
    ] {
        let output = kura(args, &path);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
    }
    // A negative seed asks the OS for one, as in the reference.
    assert!(kura(&["sequence", "--iter", "50", "--random", "--random_seed", "-1"], &path).status.success());
}

#[test]
fn batched_reads_check_every_record_and_find_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.dat");
    for order in [&[][..], &["--random"][..], &["--append"][..]] {
        for kind in ["pos-para", "mmap-para"] {
            let args =
                [
                    &[
                        "sequence",
                        "--file",
                        kind,
                        "--iter",
                        "300",
                        "--threads",
                        "2",
                        "--batch",
                        "7",
                        "--json",
                    ][..],
                    order,
                ]
                .concat();
            let found = phases(&args, &path);
            check_sequence_phases(&found, 300, 2);
            assert_eq!(found[1]["batch"], 7, "{args:?}");
        }
    }
    assert!(kura(&["sequence", "--iter", "100", "--write_only"], &path).status.success());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4250] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let output =
        kura(&["sequence", "--iter", "100", "--read_only", "--file", "pos-para", "--batch", "16"], &path);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("record 42 at offset 4200"), "{}", stderr(&output));
    let output = kura(&["sequence", "--batch", "0"], &path);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--batch"), "{}", stderr(&output));
}
