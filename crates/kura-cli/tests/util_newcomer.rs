//! What a newcomer meets in `kura util`: an import that fails names the
//! line and imports nothing (or skips and counts with --skip_bad); --json
//! prints typed values, one object a result; inspect prints each figure
//! once; a backup past a writer's lock explains the alternative; the same
//! condition reads the same from every command.

use kuradb::dbm::Access;
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
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 bad line of"), "{out:?}");
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
    let err = kuradb::dbm::hash::HashDbm::open(&theirs, Access::ReadOnly, &options)
        .err()
        .expect("refused")
        .to_string();
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

/// The names in `dir` other than `keep`: what an export left behind.
fn leftovers(dir: &Path, keep: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn a_failed_export_leaves_nothing_at_its_destination() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kt");
    for key in ["a", "b", "c"] {
        ok(&["set", s(&db), key, "plain"]);
    }
    // A value with a tab stops a raw TSV export at its record.
    ok(&["set", s(&db), "d", "tab\there"]);
    let out = dir.path().join("backup.tsv");
    let err = fails(&["export", "--tsv", s(&db), s(&out)]);
    assert!(err.contains("--escape"), "{err}");
    assert!(!out.exists(), "a failed export left {}", out.display());
    assert_eq!(leftovers(dir.path(), &["casket.kt"]), Vec::<String>::new());
    // A file already at the destination stays as it was.
    std::fs::write(&out, "the old backup\n").unwrap();
    fails(&["export", "--tsv", s(&db), s(&out)]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the old backup\n");
    assert_eq!(leftovers(dir.path(), &["casket.kt", "backup.tsv"]), Vec::<String>::new());
    // Escaped and flat exports succeed and replace it whole.
    ok(&["export", "--tsv", "--escape", s(&db), s(&out)]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a\tplain\nb\tplain\nc\tplain\nd\ttab\\there\n");
    let flat = dir.path().join("backup.flat");
    ok(&["export", s(&db), s(&flat)]);
    let copy = dir.path().join("copy.kt");
    ok(&["import", s(&copy), s(&flat)]);
    assert_eq!(ok(&["list", "--escape", s(&copy)]), ok(&["list", "--escape", s(&db)]));
    assert_eq!(
        leftovers(dir.path(), &["casket.kt", "backup.tsv", "backup.flat", "copy.kt"]),
        Vec::<String>::new()
    );
}

/// On a file system too small for the export, the write fails, the error
/// says so, and nothing is left at the destination. Needs a small tmpfs,
/// which only root can mount: elsewhere the test says so and passes.
#[test]
fn a_full_disk_leaves_nothing_at_the_destination() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs", s(&small)])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|st| st.success());
    if !mounted {
        eprintln!("skipped: cannot mount a small tmpfs here (needs root)");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&small);
    let db = dir.path().join("casket.kh");
    let tsv = dir.path().join("data.tsv");
    let mut lines = String::new();
    for i in 0..2000 {
        lines.push_str(&format!("key{i}\t{}\n", "v".repeat(100)));
    }
    std::fs::write(&tsv, lines).unwrap();
    ok(&["import", "--tsv", s(&db), s(&tsv)]);
    let out = small.join("backup.tsv");
    let err = fails(&["export", "--tsv", s(&db), s(&out)]);
    assert!(err.contains("backup.tsv"), "{err}");
    assert!(!out.exists());
    assert_eq!(leftovers(&small, &[]), Vec::<String>::new());
}

#[test]
fn a_plain_tsv_import_of_an_escaped_export_is_refused_with_the_flag_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kt");
    // Every byte value, in keys and values.
    let mut hex_lines = String::new();
    for b in 0..=255u8 {
        hex_lines.push_str(&format!("{b:02x}6b\t{b:02x}\n"));
    }
    hex_lines.push_str("\t5c745c6e5c785a\n");
    let hex = dir.path().join("all.hex.tsv");
    std::fs::write(&hex, hex_lines).unwrap();
    ok(&["import", "--tsv", "--hex", s(&db), s(&hex)]);
    let escaped = dir.path().join("escaped.tsv");
    ok(&["export", "--tsv", "--escape", s(&db), s(&escaped)]);
    let copy = dir.path().join("copy.kt");
    let err = fails(&["import", "--tsv", s(&copy), s(&escaped)]);
    assert!(err.contains("escaped.tsv line") && err.contains("give --escape"), "{err}");
    // --skip_bad does not take the wrong flag for bad lines.
    let err = fails(&["import", "--tsv", "--skip_bad", s(&copy), s(&escaped)]);
    assert!(err.contains("give --escape"), "{err}");
    assert!(!copy.exists() || ok(&["list", s(&copy)]).is_empty(), "a refused import wrote records");
    // With the flag, every byte comes back.
    ok(&["import", "--tsv", "--escape", s(&copy), s(&escaped)]);
    let all = |db: &Path| ok(&["list", "--hex", "--items", "all", s(db)]);
    assert_eq!(all(&copy), all(&db));
    assert_eq!(all(&copy).lines().count(), 257);
    // Hex and base64 exports are told too, and come back whole with their flag.
    for flag in ["--hex", "--base64"] {
        let encoded = dir.path().join(format!("encoded{flag}.tsv"));
        ok(&["export", "--tsv", flag, s(&db), s(&encoded)]);
        let again = dir.path().join(format!("again{flag}.kt"));
        let err = fails(&["import", "--tsv", s(&again), s(&encoded)]);
        assert!(err.contains(&format!("give {flag}")), "{err}");
        ok(&["import", "--tsv", flag, s(&again), s(&encoded)]);
        assert_eq!(all(&again), all(&db), "{flag}");
    }
    // --raw keeps backslashes as they are, escapes or not.
    let raw = dir.path().join("raw.tsv");
    std::fs::write(&raw, "path\tC:\\temp\\new\n").unwrap();
    fails(&["import", "--tsv", s(&copy), s(&raw)]);
    ok(&["import", "--tsv", "--raw", s(&copy), s(&raw)]);
    assert_eq!(ok(&["get", s(&copy), "path"]), "C:\\temp\\new\n");
}

#[test]
fn list_says_on_stderr_when_more_records_follow_its_items() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kt");
    let tsv = dir.path().join("data.tsv");
    std::fs::write(&tsv, (0..12).map(|i| format!("k{i:02}\tv\n")).collect::<String>()).unwrap();
    ok(&["import", "--tsv", s(&db), s(&tsv)]);
    let out = kura(&["list", s(&db)]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10);
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("listed 10 records, and more follow") && note.contains("--items all"), "{note}");
    for (items, noted) in [("11", true), ("12", false), ("all", false)] {
        let out = kura(&["list", "--items", items, s(&db)]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).contains("more follow"),
            noted,
            "--items {items}: {out:?}"
        );
    }
    // A bound that ends the listing at the tenth record leaves nothing more to say.
    let out = kura(&["list", "--jump", "k00", "--upper", "k10", s(&db)]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("more follow"), "{out:?}");
}

#[test]
fn rebuild_says_what_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kh");
    ok(&["set", s(&db), "one", "1"]);
    ok(&["set", s(&db), "two", "2"]);
    let out = kura(&["rebuild", "--params", "num_buckets=101", s(&db)]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(said.contains("rebuilt") && said.contains("2 records"), "{said}");
    assert!(said.contains(&format!("{size} after")), "{said}");
}

#[test]
fn messages_name_flags_as_this_tool_spells_them() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = dir.path().join("data.xyz");
    let err = fails(&["set", s(&unknown), "k", "v"]);
    assert!(err.contains("give --dbm CLASS") && !err.contains("dbm=CLASS"), "{err}");
    assert!(!unknown.exists(), "a refused set created {}", unknown.display());
}

/// An export replaces a regular file (keeping its mode), follows a link to
/// the file it names (keeping the link), and writes a device as it is.
#[test]
fn an_export_replaces_files_and_not_what_is_no_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kt");
    ok(&["set", s(&db), "k", "v"]);
    let target = dir.path().join("target.tsv");
    std::fs::write(&target, "old\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link.tsv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(&["export", "--tsv", s(&db), s(&link)]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "k\tv\n");
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
    ok(&["export", "--tsv", s(&db), "/dev/null"]);
    assert!(!std::fs::metadata("/dev/null").unwrap().is_file(), "/dev/null was replaced");
    assert_eq!(leftovers(dir.path(), &["casket.kt", "target.tsv", "link.tsv"]), Vec::<String>::new());
}

#[test]
fn an_export_onto_the_database_itself_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("casket.kh");
    ok(&["set", s(&db), "k", "v"]);
    let link = dir.path().join("link.kh");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    for dest in [&db, &link] {
        let err = fails(&["export", s(&db), s(dest)]);
        assert!(err.contains("is the database itself"), "{err}");
    }
    assert_eq!(ok(&["get", s(&db), "k"]), "v\n");
}
