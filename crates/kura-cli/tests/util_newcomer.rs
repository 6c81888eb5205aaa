//! What a newcomer meets in `kura util`: an import that fails names the
//! line and imports nothing (or skips and counts with --skip_bad); --json
//! prints typed values, one object a result; inspect prints each figure
//! once; a backup past a writer's lock explains the alternative; the same
//! condition reads the same from every command.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = kura(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = kura(args);
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_bad_line_names_itself_and_imports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("data.tsv");
    std::fs::write(&tsv, "a\t1\nb\t2\nno tab here\nc\t3\n").unwrap();
    let db = dir.path().join("casket.kt");
    ok(&["set", s(&db), "kept", "yes"]);
    let err = fails(&["import", "--tsv", s(&db), s(&tsv)]);
    assert!(err.contains("data.tsv line 3: no tab between key and value"), "{err}");
    // Nothing of the failing file, not even the lines before the bad one.
    assert_eq!(ok(&["list", s(&db)]), "kept\tyes\n");
    // The same from standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["util", "import", "--tsv", s(&db), "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"a\t1\nb 2\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input line 2"));
    assert_eq!(ok(&["list", s(&db)]), "kept\tyes\n");
    // --skip_bad imports the rest and counts what it skipped.
    let out = kura(&["import", "--tsv", "--skip_bad", s(&db), s(&tsv)]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 bad lines of"), "{out:?}");
    assert_eq!(ok(&["list", "--keys", s(&db)]), "a\nb\nc\nkept\n");
    // A damaged flat record file is refused whole too, with the byte.
    let flat = dir.path().join("data.flat");
    ok(&["export", s(&db), s(&flat)]);
    let mut bytes = std::fs::read(&flat).unwrap();
    bytes.truncate(bytes.len() - 2);
    std::fs::write(&flat, bytes).unwrap();
    let fresh = dir.path().join("fresh.kh");
    let err = fails(&["import", s(&fresh), s(&flat)]);
    assert!(err.contains("data.flat: the flat record file is damaged at byte"), "{err}");
    assert!(!fresh.exists() || ok(&["inspect", s(&fresh), "count"]) == "0\n");
}

#[test]
fn json_is_typed_and_one_object_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kh");
    let db = s(&db);
    let set: serde_json::Value = serde_json::from_str(&ok(&["set", "--json", db, "k", "v"])).unwrap();
    assert_eq!(set, serde_json::json!({"key": "k", "value": "v"}));
    let set: serde_json::Value =
        serde_json::from_str(&ok(&["set", "--json", "--append", "+", db, "k", "w"])).unwrap();
    assert_eq!(set["value"], "v+w");
    let incr: serde_json::Value =
        serde_json::from_str(&ok(&["set", "--json", "--incr", "7", db, "n"])).unwrap();
    assert_eq!(incr, serde_json::json!({"key": "n", "value": 7}));
    let got: serde_json::Value = serde_json::from_str(&ok(&["get", "--json", db, "k"])).unwrap();
    assert_eq!(got, serde_json::json!({"key": "k", "value": "v+w"}));
    ok(&["set", "--hex", db, "6b6579", "ff00"]);
    let got = ok(&["get", "--json", db, "key"]);
    assert_eq!(got, "{\"key\":\"key\",\"value_hex\":\"ff00\"}\n");

    let text = ok(&["inspect", "--json", db]);
    assert_eq!(text.lines().count(), 1, "{text}");
    let figures: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(figures["count"], 3);
    assert!(figures["file_size"].is_u64() && figures["num_buckets"].is_u64(), "{figures}");
    assert_eq!(figures["healthy"], true);
    assert_eq!(figures["ordered"], false);
    assert!(figures["path"].is_string() && figures["update_mode"].is_string(), "{figures}");
    assert_eq!(ok(&["inspect", "--json", db, "count"]), "3\n");
    // Each figure once, in the text too.
    let text = ok(&["inspect", db]);
    let names: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(names.len(), unique.len(), "{text}");
    assert!(!names.contains(&"num_records") && !names.contains(&"file_path"), "{text}");
    // The reference's name of the count still answers.
    assert_eq!(ok(&["inspect", db, "num_records"]), "3\n");
}

#[test]
fn backup_past_a_writer_explains_and_waits_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kh");
    ok(&["set", s(&db), "k", "v"]);
    // A streaming import holds the database open as a writer until its
    // standard input closes. --wait: a backup below may hold the file for
    // a moment when the import opens it, and the writer must wait rather
    // than give up.
    let mut writer = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["util", "import", "--wait", "--tsv", "--sync_every", "1", s(&db), "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = writer.stdin.take().unwrap();
    stdin.write_all(b"w\t1\n").unwrap();
    stdin.flush().unwrap();
    let copy = dir.path().join("copy.kh");
    let started = std::time::Instant::now();
    let err = loop {
        let out = kura(&["backup", s(&db), s(&copy)]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if err.contains("held open by a writer") || started.elapsed().as_secs() > 20 {
            break err;
        }
        // The writer has not opened the file yet: the copy was taken.
        let _ = std::fs::remove_file(&copy);
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(err.contains("copy_file_data") && err.contains("--wait"), "{err}");
    assert!(!copy.exists());
    let waiting = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["util", "backup", "--wait", s(&db), s(&copy)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    drop(stdin);
    assert!(writer.wait().unwrap().success());
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ok(&["list", "--keys", s(&copy)]).lines().count(), 2);
}

#[test]
fn the_same_condition_reads_the_same_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let folder = s(dir.path());
    let expected = format!("{folder} is a directory, not a file");
    let db = dir.path().join("casket.kh");
    ok(&["set", s(&db), "k", "v"]);
    for args in [
        &["get", folder, "k"][..],
        &["list", folder],
        &["inspect", folder],
        &["import", "--tsv", s(&db), folder],
        &["export", s(&db), folder],
        &["convert", folder, "new.kh"],
    ] {
        let err = fails(args);
        assert!(err.contains(&expected), "{args:?}: {err}");
    }
}

#[test]
fn a_hash_file_of_the_reference_names_the_commands_that_read_it() {
    if Command::new("tkrzw_dbm_util").arg("--version").output().is_err() {
        eprintln!("tkrzw_dbm_util is not installed (Debian: apt-get install tkrzw-utils): skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("old.tkh");
    let made = Command::new("tkrzw_dbm_util").args(["set", s(&theirs), "k", "v"]).output().unwrap();
    if !made.status.success() {
        Command::new("tkrzw_dbm_util").args(["create", s(&theirs)]).output().unwrap();
        Command::new("tkrzw_dbm_util").args(["set", s(&theirs), "k", "v"]).output().unwrap();
    }
    // Read by its header, with no flag.
    assert_eq!(ok(&["get", s(&theirs), "k"]), "v\n");
    // Opened as a kuradb hash database: the hint names kura's commands.
    let options = kuradb::dbm::hash::HashOptions::default();
    let err = kuradb::dbm::hash::HashDbm::open(&theirs, false, &options).err().expect("refused").to_string();
    assert!(err.contains("kura util convert") && !err.contains("export it to TSV"), "{err}");
}

#[test]
fn rebuild_takes_every_class_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("casket.kt");
    let tree = s(&tree);
    ok(&["create", "--max_page_size", "1000", "--comparator", "dec", tree]);
    for n in [10, 9, 300] {
        ok(&["set", tree, &n.to_string(), "v"]);
    }
    ok(&["rebuild", "--max_page_size", "2000", "--max_branches", "64", tree]);
    assert_eq!(ok(&["inspect", tree, "max_page_size"]), "2000\n");
    assert_eq!(ok(&["inspect", tree, "max_branches"]), "64\n");
    assert_eq!(ok(&["list", "--keys", tree]), "9\n10\n300\n");
    let err = fails(&["rebuild", "--max_page_size", "10", tree]);
    assert!(err.contains("max_page_size must be from 64"), "{err}");
    let hash = dir.path().join("casket.kh");
    let hash = s(&hash);
    ok(&["create", "--buckets", "1000", hash]);
    ok(&["rebuild", "--buckets", "5000", hash]);
    assert_eq!(ok(&["inspect", hash, "num_buckets"]), "5000\n");
    let err = fails(&["rebuild", "--max_page_size", "2000", hash]);
    assert!(err.contains("max_page_size"), "{err}");
}
