//! `kura util`, run as a user runs it: the built binary on databases in a
//! temporary directory, judged by its exit status, its output and what the
//! database holds afterwards.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::{Access, Dbm};

const CLASSES: [&str; 3] = ["hash", "tree", "skip"];
/// The file classes and the on-memory ones, whose files are flat files.
const ALL_CLASSES: [&str; 8] = ["hash", "tree", "skip", "tiny", "baby", "cache", "stdhash", "stdtree"];

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed and returns its stdout.
fn ok(args: &[&str]) -> String {
    let output = kura(args);
    assert!(output.status.success(), "{args:?} failed: {}", text(&output.stderr));
    text(&output.stdout)
}

/// Runs a command that must fail and returns its exit code and stderr.
fn fails(args: &[&str]) -> (i32, String) {
    let output = kura(args);
    assert!(!output.status.success(), "{args:?} succeeded: {}", text(&output.stdout));
    (output.status.code().unwrap_or(-1), text(&output.stderr))
}

/// Asserts that a command fails with exit status 1 and a `kura: ` message
/// holding `expected`.
fn fails_with(args: &[&str], expected: &str) {
    let (code, stderr) = fails(args);
    assert_eq!(code, 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("kura: ") && stderr.contains(expected), "{args:?}: {stderr:?}");
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn db_path(dir: &Path, name: &str, class: &str) -> PathBuf {
    dir.join(format!("{name}.{class}"))
}

#[test]
fn every_subcommand_on_every_class() {
    let dir = tempfile::tempdir().unwrap();
    for class in CLASSES {
        let db = db_path(dir.path(), "casket", class);
        let db = path_str(&db);
        ok(&["create", db]);
        fails_with(&["create", db], "exists; give --truncate");
        ok(&["set", db, "japan", "tokyo"]);
        ok(&["set", db, "france", "paris"]);
        ok(&["set", "--no_overwrite", db, "china", "beijing"]);
        fails_with(&["set", "--no_overwrite", db, "china", "shanghai"], "duplication");
        assert_eq!(ok(&["get", db, "japan"]), "tokyo\n");
        assert_eq!(ok(&["get", "--hex", db, "6a6170616e"]), "746f6b796f\n");
        assert_eq!(ok(&["get", "--base64", db, "amFwYW4="]), "dG9reW8=\n");
        ok(&["set", "--append=/", db, "france", "lyon"]);
        ok(&["set", "--append", "", db, "france", "!"]);
        assert_eq!(ok(&["get", db, "france"]), "paris/lyon!\n", "{class}");
        assert_eq!(ok(&["set", "--incr", "5", db, "hits"]), "5\n");
        assert_eq!(ok(&["set", "--incr=-7", db, "hits"]), "-2\n");
        assert_eq!(ok(&["set", "--incr", "1", "--initial", "100", db, "other"]), "101\n");
        ok(&["remove", db, "other"]);
        fails_with(&["remove", db, "other"], "no record of key \"other\"");
        fails_with(&["get", db, "other"], "not found: no record of key \"other\"");

        let listed = ok(&["list", db]);
        let mut lines: Vec<&str> = listed.lines().collect();
        if class == "hash" {
            lines.sort();
        }
        let hits = "hits\t\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe";
        assert_eq!(lines, ["china\tbeijing", "france\tparis/lyon!", hits, "japan\ttokyo"], "{class}");
        assert_eq!(ok(&["list", "--items", "2", db]).lines().count(), 2);
        assert!(ok(&["list", "--keys", db]).lines().any(|l| l == "japan"));
        let json = ok(&["list", "--json", db]);
        let objects: Vec<serde_json::Value> =
            json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(objects.iter().any(|o| o["key"] == "japan" && o["value"] == "tokyo"), "{json}");
        assert!(objects.iter().any(|o| o["key"] == "hits" && o["value_hex"] == "fffffffffffffffe"), "{json}");
        if class == "hash" {
            fails_with(&["list", "--jump", "d", db], "need an ordered database");
        } else {
            assert_eq!(ok(&["list", "--keys", "--jump", "d", "--upper", "japan", db]), "france\nhits\n");
            let inclusive =
                ok(&["list", "--keys", "--jump", "d", "--upper", "japan", "--upper_inclusive", db]);
            assert_eq!(inclusive, "france\nhits\njapan\n");
            assert_eq!(ok(&["list", "--keys", "--jump", "g", db]), "hits\njapan\n");
        }

        let inspect = ok(&["inspect", db]);
        assert!(inspect.contains(&format!("dbm: {class}\n")) && inspect.contains("count: 4\n"), "{inspect}");
        assert!(inspect.contains("healthy: true\n") && inspect.contains("should_be_rebuilt: "), "{inspect}");
        assert_eq!(ok(&["inspect", db, "count"]), "4\n");
        let json: serde_json::Value = serde_json::from_str(&ok(&["inspect", "--json", db])).unwrap();
        assert_eq!(json["dbm"], class);

        let tsv = dir.path().join(format!("{class}.tsv"));
        ok(&["export", "--tsv", "--escape", db, path_str(&tsv)]);
        let copy = db_path(dir.path(), "copy", class);
        ok(&["import", "--tsv", "--escape", path_str(&copy), path_str(&tsv)]);
        assert_eq!(ok(&["get", path_str(&copy), "france"]), "paris/lyon!\n");

        ok(&["rebuild", db]);
        let backup = db_path(dir.path(), "backup", class);
        ok(&["backup", db, path_str(&backup)]);
        assert_eq!(ok(&["inspect", path_str(&backup), "count"]), "4\n");
        fails_with(&["backup", db, path_str(&backup)], "exists");

        let restored = db_path(dir.path(), "restored", class);
        let out = ok(&["restore", db, path_str(&restored)]);
        assert_eq!(out, format!("4 records restored into {}\n", path_str(&restored)));
        assert_eq!(ok(&["get", path_str(&restored), "japan"]), "tokyo\n");

        let other = db_path(dir.path(), "other", class);
        ok(&["set", path_str(&other), "japan", "kyoto"]);
        ok(&["set", path_str(&other), "italy", "rome"]);
        let merged = db_path(dir.path(), "merged", class);
        ok(&["merge", path_str(&merged), db, path_str(&other)]);
        assert_eq!(ok(&["get", path_str(&merged), "italy"]), "rome\n");
        if class != "skip" {
            // A skip database keeps every record of a repeated key.
            assert_eq!(ok(&["inspect", path_str(&merged), "count"]), "5\n");
            assert_eq!(ok(&["get", path_str(&merged), "japan"]), "kyoto\n");
            let kept = db_path(dir.path(), "kept", class);
            ok(&["merge", "--no_overwrite", path_str(&kept), db, path_str(&other)]);
            assert_eq!(ok(&["get", path_str(&kept), "japan"]), "tokyo\n");
        }

        ok(&["clear", db]);
        assert_eq!(ok(&["inspect", db, "count"]), "0\n");
        assert_eq!(ok(&["list", db]), "");
        ok(&["create", "--truncate", path_str(&copy)]);
        assert_eq!(ok(&["inspect", path_str(&copy), "count"]), "0\n");
    }
}

#[test]
fn classes_come_from_flags_headers_and_params() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.dat");
    let plain = path_str(&plain);
    fails_with(&["create", plain], "cannot tell which database");
    ok(&["create", "--dbm", "tree", "--file", "pos-para", "--params", "max_page_size=1000", plain]);
    ok(&["set", plain, "k", "v"]);
    assert_eq!(ok(&["inspect", plain, "dbm"]), "tree\n");
    assert_eq!(ok(&["inspect", plain, "max_page_size"]), "1000\n");
    fails_with(&["get", "--dbm", "hash", plain, "k"], "holds a tree database, not a hash one");
    fails_with(&["get", "--file", "pos-atom", "--params", "file=pos-para", plain, "k"], "given twice");
    let hash = db_path(dir.path(), "tuned", "hash");
    ok(&["create", "--params", "num_buckets=123", path_str(&hash)]);
    assert_eq!(ok(&["inspect", path_str(&hash), "num_buckets"]), "123\n");
    ok(&["rebuild", "--file", "pos-atom", "--params", "num_buckets=777", path_str(&hash)]);
    assert_eq!(ok(&["inspect", path_str(&hash), "num_buckets"]), "777\n");
    // A tree's page sizes change at a rebuild (issue 23), within their bounds.
    fails_with(&["rebuild", "--params", "max_page_size=9", plain], "max_page_size must be from 64");
}

#[test]
fn bad_input_fails_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = db_path(dir.path(), "missing", "hash");
    let missing = path_str(&missing);
    for command in ["get", "remove"] {
        fails_with(&[command, missing, "k"], "no database file");
    }
    for command in ["list", "inspect", "clear", "rebuild"] {
        fails_with(&[command, missing], "no database file");
    }
    fails_with(&["export", missing, "out.tsv"], "no database file");
    fails_with(&["restore", missing, "new.hash"], "no database file");
    assert!(!Path::new(missing).exists(), "a failed command created the file");

    let db = db_path(dir.path(), "casket", "hash");
    let db = path_str(&db);
    ok(&["set", db, "k", "v"]);
    fails_with(&["get", "--params", "num_buckets=lots", db, "k"], "num_buckets must be a number");
    fails_with(&["get", "--params", "colour=blue", db, "k"], "unknown parameter colour for a hash database");
    fails_with(&["get", "--params", "padding", db, "k"], "has no value");
    fails_with(&["get", "--dbm", "btree", db, "k"], "unknown database class");
    fails_with(&["get", "--file", "floppy", db, "k"], "floppy");
    fails_with(&["get", "--hex", db, "xyz"], "the key is not valid hex");
    fails_with(&["set", db, "k"], "needs a VALUE");
    // With a VALUE, the reference's --incr INITIAL KEY DELTA (issue 23).
    fails_with(&["set", "--incr", "1", db, "k", "v"], "the DELTA \"v\" is not a whole number");
    fails_with(&["set", "--incr", "1", db, "k"], "not an 8-byte number");
    fails_with(&["inspect", db, "no_such_attribute"], "has no attribute");
    for args in
        [&["get", "--frobnicate", db, "k"][..], &["set", "--incr", "many", db, "k"], &["list"], &["fly"]]
    {
        let (code, stderr) = fails(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("error:"), "{stderr}");
    }
    let (_, stderr) = fails(&["set", "--no_overwrite", "--incr", "1", db, "k"]);
    assert!(stderr.contains("cannot be used with"), "{stderr}");

    let junk = db_path(dir.path(), "junk", "tree");
    std::fs::write(&junk, b"this is not a database, just some text").unwrap();
    fails_with(&["get", path_str(&junk), "k"], "not a kuradb database");
    fails_with(&["restore", path_str(&junk), path_str(&dir.path().join("r.tree"))], "not a kuradb database");
    let reference = db_path(dir.path(), "old", "tkh");
    std::fs::write(&reference, b"TkrzwHDB\n\x01\x02\x03\x04\x05\x06\x07").unwrap();
    // A file of the reference is read (see tests/reference.rs); a truncated
    // one is an error naming the problem.
    fails_with(&["list", path_str(&reference)], "(a HashDBM file of the reference): its header is cut short");
    fails_with(&["convert", path_str(&reference), path_str(&dir.path().join("new.kh"))], "cut short");

    let tsv = dir.path().join("bad.tsv");
    std::fs::write(&tsv, "a\t1\nb 2\n").unwrap();
    fails_with(&["import", "--tsv", db, path_str(&tsv)], "bad.tsv line 2: no tab between key and value");
    std::fs::write(&tsv, "a\t1\nb\t\\q\n").unwrap();
    fails_with(
        &["import", "--tsv", "--escape", db, path_str(&tsv)],
        "line 2: the value has an unknown escape \\q",
    );
    fails_with(&["import", "--flat", db, path_str(&tsv)], "damaged at byte 0");
    fails_with(&["import", db, path_str(&tsv)], "damaged at byte 0");
    fails_with(&["import", "--tsv", db, path_str(&dir.path().join("none.tsv"))], "none.tsv");
    let restored = db_path(dir.path(), "restored", "hash");
    std::fs::write(&restored, b"").unwrap();
    fails_with(&["restore", db, path_str(&restored)], "exists; restore writes a new file");
}

#[test]
fn a_locked_file_fails_at_once_unless_asked_to_wait() {
    let dir = tempfile::tempdir().unwrap();
    for class in CLASSES {
        let path = db_path(dir.path(), "locked", class);
        ok(&["set", path_str(&path), "k", "v"]);
        let holder = PolyDbm::open(&path, Access::ReadWrite, &Params::new()).unwrap();
        let started = Instant::now();
        for args in [
            &["get", path_str(&path), "k"][..],
            &["set", path_str(&path), "k", "w"],
            &["list", path_str(&path)],
        ] {
            fails_with(args, "is locked by another process");
        }
        // The holder is named, and the advice is in this tool's flags.
        let (_, stderr) = fails(&["get", path_str(&path), "k"]);
        let holder_pid = format!("pid {}", std::process::id());
        assert!(stderr.contains(&holder_pid) || !cfg!(target_os = "linux"), "{class}: {stderr}");
        assert!(stderr.contains("give --wait") && !stderr.contains("wait=true"), "{class}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(10), "{class}: a command waited for the lock");
        let waiter = Command::new(env!("CARGO_BIN_EXE_kura"))
            .args(["util", "get", "--wait", path_str(&path), "k"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        holder.close().unwrap();
        let output = waiter.wait_with_output().unwrap();
        assert!(output.status.success(), "{class}: --wait failed");
        assert_eq!(text(&output.stdout), "v\n");
    }
}

/// Records no text format could hold without escaping: every byte value,
/// tabs, line ends, backslashes, invalid UTF-8, empty keys and values.
fn awkward_records() -> Vec<(Vec<u8>, Vec<u8>)> {
    let all: Vec<u8> = (0..=255).collect();
    let mut records: Vec<(Vec<u8>, Vec<u8>)> = (0..=255u8).map(|b| (vec![b, b'k'], vec![b])).collect();
    records.push((b"".to_vec(), b"empty key".to_vec()));
    records.push((b"empty value".to_vec(), b"".to_vec()));
    records.push((all.clone(), all.iter().rev().copied().collect()));
    records.push((b"a\tb\nc\r\n\\".to_vec(), b"\\x41\\\t\n".to_vec()));
    records.push(("東京\u{7f}".as_bytes().to_vec(), b"\xe6\x9d\xff\x00".to_vec()));
    records
}

/// Every record of the database at `path`, read with the library, sorted.
fn contents(path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = PolyDbm::open(path, Access::ReadOnly, &Params::new()).unwrap();
    let mut records = Vec::new();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    while let Some(record) = cursor.get().unwrap() {
        records.push(record);
        cursor.next().unwrap();
    }
    drop(cursor);
    db.close().unwrap();
    records.sort();
    records
}

/// Asserts that two record lists are equal, showing the first difference
/// rather than every record.
fn same_records(found: &[(Vec<u8>, Vec<u8>)], expected: &[(Vec<u8>, Vec<u8>)], what: &str) {
    let first_difference = found.iter().zip(expected).position(|(a, b)| a != b);
    assert!(
        found.len() == expected.len() && first_difference.is_none(),
        "{what}: {} records, {} expected; first difference at {first_difference:?}",
        found.len(),
        expected.len()
    );
}

#[test]
fn export_and_import_round_trip_every_byte_in_every_class() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = awkward_records();
    expected.sort();
    for class in ALL_CLASSES {
        let source = db_path(dir.path(), "source", class);
        {
            let db = PolyDbm::open(&source, Access::ReadWrite, &Params::new()).unwrap();
            for (key, value) in &expected {
                db.set(key, value).unwrap();
            }
            db.close().unwrap();
        }
        same_records(&contents(&source), &expected, class);
        for (f, format) in
            [&["--tsv", "--escape"][..], &["--hex"], &["--base64"], &["--flat"], &[]].into_iter().enumerate()
        {
            let what = format!("{class} {format:?}");
            let exported = dir.path().join(format!("{class}-{f}.out"));
            let exported = path_str(&exported);
            ok(&[&["export"], format, &[path_str(&source), exported]].concat());
            if f == 0 {
                let tsv = std::fs::read(exported).unwrap();
                assert!(std::str::from_utf8(&tsv).is_ok(), "{what}: escaped TSV is UTF-8");
                assert_eq!(tsv.iter().filter(|&&b| b == b'\n').count(), expected.len(), "{what}");
                assert!(tsv.split(|&b| b == b'\n').all(|l| l.iter().filter(|&&b| b == b'\t').count() < 2));
            }
            for target_class in ALL_CLASSES {
                let target = dir.path().join(format!("target-{class}-{f}.{target_class}"));
                ok(&[&["import"], format, &[path_str(&target), exported]].concat());
                same_records(&contents(&target), &expected, &format!("{what} into {target_class}"));
                let again = dir.path().join(format!("again-{class}-{f}-{target_class}.out"));
                ok(&[&["export"], format, &[path_str(&target), path_str(&again)]].concat());
                if class == target_class {
                    // The same class lists records in the same order: the same bytes.
                    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(exported).unwrap(), "{what}");
                }
            }
        }
        // list prints what the TSV export holds, in the same order.
        let exported = std::fs::read(dir.path().join(format!("{class}-0.out"))).unwrap();
        assert_eq!(ok(&["list", "--items", "all", path_str(&source)]).into_bytes(), exported, "{class}");
        let key = "a\tb\nc\r\n\\";
        assert_eq!(ok(&["get", path_str(&source), key]).into_bytes(), b"\\x41\\\t\n\n", "{class}");
    }
}

#[test]
fn a_tsv_export_of_the_reference_imports() {
    let dir = tempfile::tempdir().unwrap();
    // As `tkrzw_dbm_util export --tsv --escape` writes them.
    let tsv = dir.path().join("reference.tsv");
    std::fs::write(&tsv, b"a\\tb\tx\\x01y\\\\z\r\nnul\t\\0\\a\\b\\v\\f\\x7F\n").unwrap();
    let db = db_path(dir.path(), "from-reference", "tree");
    ok(&["import", "--tsv", "--escape", path_str(&db), path_str(&tsv)]);
    let expected = vec![
        (b"a\tb".to_vec(), b"x\x01y\\z".to_vec()),
        (b"nul".to_vec(), b"\0\x07\x08\x0b\x0c\x7f".to_vec()),
    ];
    assert_eq!(contents(&db), expected);
    let stdin_db = db_path(dir.path(), "stdin", "hash");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["util", "import", "--tsv", path_str(&stdin_db), "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"k\tv\n").unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    assert_eq!(ok(&["export", "--tsv", path_str(&stdin_db), "-"]), "k\tv\n");
}

/// Writes a TSV of `n` records, keys in order, and answers them.
fn big_tsv(path: &Path, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let records: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (format!("key{i:08}").into_bytes(), format!("value{i}-{}", "x".repeat(i % 97)).into_bytes()))
        .collect();
    let mut out = Vec::new();
    for (k, v) in &records {
        out.extend_from_slice(k);
        out.push(b'\t');
        out.extend_from_slice(v);
        out.push(b'\n');
    }
    std::fs::write(path, out).unwrap();
    records
}

#[test]
fn restore_recovers_an_import_killed_mid_write() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("big.tsv");
    let records = big_tsv(&tsv, 300_000);
    const SYNC_EVERY: usize = 2000;
    for class in CLASSES {
        let db = db_path(dir.path(), "killed", class);
        // The import reads standard input, which stays open: it cannot end
        // before it is killed, however fast it runs.
        let mut child = Command::new(env!("CARGO_BIN_EXE_kura"))
            .args(["util", "import", "--tsv", "--sync_every", &SYNC_EVERY.to_string(), path_str(&db), "-"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let text = std::fs::read(&tsv).unwrap();
        let half = text.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(records.len() / 2).unwrap().0 + 1;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&text[..half]).unwrap();
        // Time to take in what the pipe still holds and synchronize it.
        std::thread::sleep(Duration::from_millis(500));
        assert!(child.try_wait().unwrap().is_none(), "{class}: the import ended on its own");
        child.kill().unwrap();
        child.wait().unwrap();
        drop(stdin);

        let restored = db_path(dir.path(), "restored", class);
        let out = ok(&["restore", path_str(&db), path_str(&restored)]);
        let found = contents(&restored);
        assert!(out.starts_with(&format!("{} records restored", found.len())), "{class}: {out}");
        assert!(!found.is_empty(), "{class}: nothing restored");
        // Records are imported in key order, so what a crash keeps is the
        // first records of the file, each with its own value.
        same_records(&found, &records[..found.len().min(records.len())], &format!("{class}: a prefix"));
        if class != "hash" {
            // These restore to a synchronization point.
            assert_eq!(found.len() % SYNC_EVERY, 0, "{class}: {} records", found.len());
        }
        assert_eq!(ok(&["inspect", path_str(&restored), "healthy"]), "true\n");
    }
}

#[test]
fn shard_sets_work_through_every_command_and_a_missing_shard_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("casket.tkt");
    let set_str = path_str(&set);
    ok(&["create", "--params", "num_shards=3,key_comparator=decimal", set_str]);
    for shard in 0..3 {
        assert!(dir.path().join(format!("casket.tkt-{shard:05}-of-00003")).exists());
    }
    for n in [10, 9, 100, 42] {
        ok(&["set", set_str, &n.to_string(), &format!("v{n}")]);
    }
    assert_eq!(ok(&["get", set_str, "42"]), "v42\n");
    // The shards' records merge in the decimal order across the set.
    assert_eq!(ok(&["list", "--keys", set_str]), "9\n10\n42\n100\n");
    let tsv = dir.path().join("all.tsv");
    ok(&["export", "--tsv", set_str, path_str(&tsv)]);
    let copy = dir.path().join("copy.tkh");
    ok(&["import", "--tsv", path_str(&copy), path_str(&tsv)]);
    assert_eq!(ok(&["get", path_str(&copy), "100"]), "v100\n");
    std::fs::remove_file(dir.path().join("casket.tkt-00001-of-00003")).unwrap();
    let (code, stderr) = fails(&["get", set_str, "42"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("incomplete") && stderr.contains("casket.tkt-00001-of-00003"), "{stderr}");
}

/// `record_crc_mode` given to create is kept in the file and shown by
/// inspect; rebuild changes it; a flipped byte in a stored value makes get
/// fail naming the file, the offset and the checksum; restore skips that
/// record (for a tree, its page) and keeps the mode. `kura perf --record_crc`
/// reaches the file too.
#[test]
fn record_checksums_are_kept_shown_checked_and_skipped_by_restore() {
    let dir = tempfile::tempdir().unwrap();
    for class in ["hash", "tree"] {
        let db = db_path(dir.path(), "crc", class);
        let db = path_str(&db);
        let tuning =
            if class == "tree" { "record_crc_mode=16,max_page_size=200" } else { "record_crc_mode=16" };
        ok(&["create", "--params", tuning, db]);
        assert_eq!(ok(&["inspect", db, "record_crc_mode"]), "crc-16\n", "{class}");
        let tsv = dir.path().join(format!("{class}.tsv"));
        let lines: String =
            (0..60).map(|i| format!("k{i:04}\t<value {i:04} {}>\n", "~".repeat(i % 9))).collect();
        std::fs::write(&tsv, lines).unwrap();
        ok(&["import", "--tsv", db, path_str(&tsv)]);
        ok(&["rebuild", "--params", "record_crc_mode=32", db]);
        assert_eq!(ok(&["inspect", db, "record_crc_mode"]), "crc-32\n", "{class}");
        // A reopen given another mode keeps the file's.
        assert_eq!(ok(&["inspect", "--params", "record_crc_mode=none", db, "record_crc_mode"]), "crc-32\n");

        let victim = format!("<value 0042 {}>", "~".repeat(42 % 9));
        let mut bytes = std::fs::read(db).unwrap();
        let at = bytes
            .windows(victim.len())
            .position(|w| w == victim.as_bytes())
            .expect("the value is in the file");
        bytes[at + 5] ^= 0x01;
        std::fs::write(db, &bytes).unwrap();
        let (code, stderr) = fails(&["get", db, "k0042"]);
        assert_eq!(code, 1, "{class}: {stderr}");
        assert!(
            stderr.contains(db) && stderr.contains("offset") && stderr.contains("checksum"),
            "{class}: {stderr}"
        );
        assert_eq!(ok(&["get", db, "k0001"]), format!("<value 0001 {}>\n", "~"), "{class}");

        let restored = db_path(dir.path(), "crc-restored", class);
        let out = ok(&["restore", db, path_str(&restored)]);
        let found = contents(&restored);
        assert!(out.starts_with(&format!("{} records restored", found.len())), "{class}: {out}");
        assert!(found.len() < 60 && found.len() > 40, "{class}: {} records restored", found.len());
        assert!(!found.iter().any(|(k, _)| k == b"k0042"), "{class}: the damaged record was restored");
        assert_eq!(ok(&["inspect", path_str(&restored), "record_crc_mode"]), "crc-32\n", "{class}");
    }
    let perf = dir.path().join("perf.kh");
    let output = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["perf", "sequence", "--iter", "100", "--record_crc", "8", "--path", path_str(&perf)])
        .output()
        .unwrap();
    assert!(output.status.success(), "kura perf: {}", text(&output.stderr));
    assert_eq!(ok(&["inspect", path_str(&perf), "record_crc_mode"]), "crc-8\n");
}

#[test]
fn set_with_a_ttl_and_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_path(dir.path(), "sessions", "tree");
    let db = path_str(&db);
    ok(&["create", "--params", "expiry=true", db]);
    ok(&["set", "--ttl", "100", db, "session", "alice"]);
    ok(&["set", db, "config", "kept"]);
    let left: f64 = ok(&["ttl", db, "session"]).trim().parse().unwrap();
    assert!(left > 90.0 && left <= 100.0, "{left}");
    assert_eq!(ok(&["ttl", db, "config"]), "none\n");
    assert_eq!(ok(&["get", db, "session"]), "alice\n");
    let json: serde_json::Value = serde_json::from_str(&ok(&["ttl", "--json", db, "config"])).unwrap();
    assert_eq!(json["ttl"], serde_json::Value::Null);
    assert_eq!(json["key"], "config");
    let json: serde_json::Value = serde_json::from_str(&ok(&["ttl", "--json", db, "session"])).unwrap();
    assert!(json["expiry"].as_u64().unwrap() > 1_000_000_000_000);
    fails_with(&["set", "--ttl", "5", "--no_overwrite", db, "session", "bob"], "exists");
    ok(&["set", "--ttl", "0.05", db, "brief", "x"]);
    std::thread::sleep(Duration::from_millis(100));
    fails_with(&["get", db, "brief"], "no record");
    fails_with(&["ttl", db, "brief"], "no record");
    for (bad, named) in [("-1", "-1"), ("soon", "soon"), ("inf", "inf"), ("1e300", "too long")] {
        let (code, stderr) = fails(&["set", "--ttl", bad, db, "k", "v"]);
        assert!(code == 2 && stderr.contains("--ttl") && stderr.contains(named), "{bad}: {stderr}");
    }
    let (code, stderr) = fails(&["set", "--ttl", "5", "--append", "", db, "k", "v"]);
    assert!(code == 2 && stderr.contains("--append"), "{stderr}");
    // The database keeps its expiry and a plain set takes a record's away.
    ok(&["set", db, "session", "carol"]);
    assert_eq!(ok(&["ttl", db, "session"]), "none\n");
    let list = ok(&["list", db]);
    assert_eq!(list, "config\tkept\nsession\tcarol\n");
}

#[test]
fn a_ttl_needs_a_database_with_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_path(dir.path(), "plain", "hash");
    let db = path_str(&db);
    ok(&["set", db, "k", "v"]);
    fails_with(&["set", "--ttl", "5", db, "k", "v"], "expiry=true");
    fails_with(&["ttl", db, "k"], "expiry=true");
    assert_eq!(ok(&["get", db, "k"]), "v\n");
    fails_with(&["set", "--params", "expiry=true", db, "k2", "v"], "expiry");
}

#[test]
fn export_and_import_keep_expiry_times() {
    let dir = tempfile::tempdir().unwrap();
    let src = db_path(dir.path(), "src", "tree");
    let src = path_str(&src);
    ok(&["create", "--params", "expiry=true", src]);
    ok(&["set", "--ttl", "1000", src, "a", "1"]);
    ok(&["set", src, "b", "2"]);
    ok(&["set", "--ttl", "0.05", src, "gone", "3"]);
    std::thread::sleep(Duration::from_millis(100));
    let tsv = dir.path().join("out.tsv");
    let tsv = path_str(&tsv);
    ok(&["export", "--tsv", "--expiry", src, tsv]);
    let text = std::fs::read_to_string(tsv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let fields: Vec<&str> = lines[0].split('\t').collect();
    assert_eq!(&fields[..2], ["a", "1"]);
    assert!(fields[2].parse::<u64>().unwrap() > 1_000_000_000_000);
    assert_eq!(lines[1], "b\t2\t");
    // Without --expiry, the export is plain key TAB value.
    ok(&["export", "--tsv", src, tsv]);
    assert_eq!(std::fs::read_to_string(tsv).unwrap(), "a\t1\nb\t2\n");
    ok(&["export", "--tsv", "--expiry", src, tsv]);

    let dest = db_path(dir.path(), "dest", "hash");
    let dest = path_str(&dest);
    ok(&["import", "--tsv", "--expiry", "--params", "expiry=true", dest, tsv]);
    let left: f64 = ok(&["ttl", dest, "a"]).trim().parse().unwrap();
    assert!(left > 900.0, "{left}");
    assert_eq!(ok(&["ttl", dest, "b"]), "none\n");

    // A database without expiry refuses records with expiry times, importing nothing.
    let plain = db_path(dir.path(), "plain", "hash");
    let plain = path_str(&plain);
    fails_with(&["import", "--tsv", "--expiry", plain, tsv], "has no expiry");
    assert_eq!(ok(&["list", plain]), "");
    fails_with(&["import", "--expiry", plain, tsv], "--tsv");
    fails_with(&["export", "--expiry", src, tsv], "--tsv");
    fails_with(&["export", "--tsv", "--expiry", plain, tsv], "no expiry");
    // An expiry field that is no time, and a line without one.
    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, "k\tv\tsoon\n").unwrap();
    fails_with(&["import", "--tsv", "--expiry", dest, path_str(&bad)], "\"soon\"");
    std::fs::write(&bad, "k\tv\n").unwrap();
    fails_with(&["import", "--tsv", "--expiry", dest, path_str(&bad)], "no expiry field");
    // Records without expiry times import into a database without expiry.
    std::fs::write(&bad, "k\tv\t\n").unwrap();
    ok(&["import", "--tsv", "--expiry", plain, path_str(&bad)]);
    assert_eq!(ok(&["get", plain, "k"]), "v\n");
}
