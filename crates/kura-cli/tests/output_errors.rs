//! Output to a closed pipe or a full device, from every subcommand of `kura`:
//! a closed pipe ends a command quietly (status 141, or 0 if it had written
//! everything before the reader left), a full device is one line on stderr
//! and status 1 — never a panic.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

fn kura() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kura"))
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A hash database of `n` records, from a TSV import.
fn database(dir: &Path, n: usize) -> std::path::PathBuf {
    let tsv = dir.join("in.tsv");
    let lines: String = (0..n).map(|i| format!("key{i:08}\tvalue{i:08}\n")).collect();
    std::fs::write(&tsv, lines).unwrap();
    let db = dir.join("casket.kh");
    let out = kura().args(["util", "import", "--tsv", s(&db), s(&tsv)]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    db
}

/// Runs `args` with stdout a pipe whose reader takes one line and closes it.
fn closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let mut child = kura().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_closed_pipe_ends_every_subcommand_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // Far more than a pipe holds, so the writer meets the closed pipe.
    let db = database(dir.path(), 40_000);
    let ulog = dir.path().join("log");
    let mut cases: Vec<Vec<String>> = vec![
        vec!["util".into(), "list".into(), "--items".into(), "all".into(), s(&db).into()],
        vec!["util".into(), "export".into(), "--tsv".into(), s(&db).into(), "-".into()],
        vec!["util".into(), "search".into(), s(&db).into(), "key".into()],
        vec![
            "perf".into(),
            "sequence".into(),
            "--iter".into(),
            "200000".into(),
            "--dbm".into(),
            "stdhash".into(),
        ],
        vec![
            "file-perf".into(),
            "sequence".into(),
            "--iter".into(),
            "50000".into(),
            s(&dir.path().join("perf.dat")).into(),
        ],
    ];
    // An update log of many entries, for `ulog read`.
    let out = kura()
        .args(["perf", "sequence", "--iter", "20000", "--dbm", "stdhash", "--ulog", s(&ulog)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    cases.push(vec!["ulog".into(), "read".into(), "--items".into(), "1000000".into(), s(&ulog).into()]);
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stderr) = closed_pipe(&args);
        assert!(matches!(code, Some(0 | 141)), "{args:?}: status {code:?}, stderr {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn a_full_device_is_one_line_and_status_1() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), 100);
    let file = dir.path().join("perf.dat");
    let db = s(&db);
    let cases: &[&[&str]] = &[
        &["util", "list", db],
        &["util", "inspect", db],
        &["util", "inspect", "--json", db],
        &["util", "get", db, "key00000001"],
        &["util", "search", db, "key"],
        &["util", "export", db, "-"],
        &["util", "export", "--tsv", db, "/dev/full"],
        &["perf", "sequence", "--iter", "100", "--dbm", "stdhash"],
        &["perf", "sequence", "--iter", "100", "--dbm", "stdhash", "--json"],
        &["file-perf", "sequence", "--iter", "100", s(&file)],
    ];
    for args in cases {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = kura().args(*args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        // With --json the text for people goes to stderr too; the error is
        // still the one line that starts with "kura: ", and the last.
        let lines = if args.contains(&"--json") { 1 } else { stderr.lines().count() };
        assert_eq!(lines, 1, "{args:?}: {stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(last.starts_with("kura: ") && last.contains("No space left on device"), "{args:?}: {stderr}");
        assert_eq!(stderr.matches("kura: ").count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn perf_json_prints_only_json_on_stdout() {
    for args in [
        &["perf", "sequence", "--iter", "3000", "--dbm", "stdhash", "--json"][..],
        &["perf", "index", "--iter", "3000", "--type", "mem", "--json"],
        &["file-perf", "sequence", "--iter", "3000", "--json", "perf.dat"],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = kura().args(args).current_dir(dir.path()).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.is_empty(), "{args:?}");
        for line in stdout.lines() {
            let object: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert!(object["qps"].is_number() && object["phase"].is_string(), "{line}");
        }
        // The reference's text lines are still there, on stderr.
        assert!(String::from_utf8_lossy(&out.stderr).contains("done: elapsed_time="), "{args:?}");
    }
}
