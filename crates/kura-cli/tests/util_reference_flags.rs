//! The reference's `tkrzw_dbm_util` flags that `kura util` takes where kuradb
//! decides more than the reference says (reference_script.rs compares what
//! both tools print): each refusal names its flag, `inspect --validate`
//! finds a damaged record, `--alloc_init` reaches the file, `--sync_hard`
//! and `--ulog` do what they say.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = kura(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The stderr of a command that must fail, with nothing on stdout.
fn fails(args: &[&str]) -> String {
    let out = kura(args);
    assert!(!out.status.success(), "{args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    assert!(out.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn tree_of(dir: &Path, name: &str, count: usize) -> String {
    let db = dir.join(name);
    ok(&["create", s(&db)]);
    let tsv = dir.join(format!("{name}.tsv"));
    std::fs::write(&tsv, (0..count).map(|i| format!("k{i:03}\tvalue {i:03}\n")).collect::<String>()).unwrap();
    ok(&["import", "--tsv", s(&db), s(&tsv)]);
    s(&db).to_string()
}

#[test]
fn list_prints_ten_records_unless_told_and_moves_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree_of(dir.path(), "list.tkt", 25);
    let keys = |args: &[&str]| -> Vec<String> {
        ok(&[&["list", "--keys"], args, &[db.as_str()]].concat()).lines().map(str::to_string).collect()
    };
    assert_eq!(keys(&[]).len(), 10);
    assert_eq!(keys(&["--items", "all"]).len(), 25);
    assert_eq!(keys(&["--items", "0"]).len(), 0);
    assert_eq!(
        keys(&["--move", "jumpupper", "--jump_key", "k010", "--items", "3"]),
        ["k011", "k010", "k009"]
    );
    assert_eq!(keys(&["--move", "jumplowerinc", "--jump_key", "k010", "--items", "2"]), ["k010", "k011"]);
    // --jump alone still jumps; with --upper, a forward listing stops there.
    assert_eq!(keys(&["--jump", "k020", "--upper", "k022"]), ["k020", "k021"]);
    let err = fails(&["list", "--items", "-1", &db]);
    assert!(err.contains("not a count of 0 or more, nor `all`"), "{err}");
    let err = fails(&["list", "--move", "last", &db]);
    assert!(err.contains("--move") && err.contains("jumpupperinc"), "{err}");
    let err = fails(&["list", "--move", "jumpupper", "--upper", "k1", &db]);
    assert!(err.contains("--upper bounds a listing that goes forwards"), "{err}");
    let hash = dir.path().join("list.tkh");
    ok(&["set", s(&hash), "k", "v"]);
    let err = fails(&["list", "--move", "jumplower", s(&hash)]);
    assert!(err.contains("need an ordered database"), "{err}");
}

#[test]
fn multi_commands_take_several_keys_and_refuse_a_lone_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("multi.tkh");
    let db = s(&db);
    ok(&["set", "--multi", db, "a", "1", "b", "2"]);
    assert_eq!(
        ok(&["get", "--multi", "--json", db, "b", "zz", "a"]),
        "{\"key\":\"b\",\"value\":\"2\"}\n{\"key\":\"a\",\"value\":\"1\"}\n"
    );
    // Atomic, unlike the reference's: a key that exists keeps every other out.
    let err = fails(&["set", "--multi", "--no_overwrite", db, "c", "3", "a", "9"]);
    assert!(err.contains("record \"a\" exists"), "{err}");
    assert_eq!(ok(&["get", "--multi", db, "a", "c"]), "a\t1\n");
    let err = fails(&["set", "--multi", db, "c", "3", "d"]);
    assert!(err.contains("the last key has no value"), "{err}");
    let err = fails(&["get", db, "a", "b"]);
    assert!(err.contains("--multi"), "{err}");
    ok(&["remove", "--multi", db, "a", "nothing"]);
    assert_eq!(ok(&["get", "--multi", db, "a", "b"]), "b\t2\n");
}

#[test]
fn sync_hard_writes_and_is_refused_by_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sync.tkh");
    let db = s(&db);
    ok(&["set", "--sync_hard", db, "k", "v"]);
    ok(&["rebuild", "--sync_hard", db]);
    assert_eq!(ok(&["get", db, "k"]), "v\n");
    let err = fails(&["get", "--sync_hard", db, "k"]);
    assert!(err.contains("--sync_hard: this command only reads"), "{err}");
}

/// A writer that stays open (a streaming import from a pipe) holds the file
/// at the size --alloc_init reserves, far beyond what its records take.
#[test]
fn alloc_init_reserves_the_space_a_writer_opens_with() {
    let dir = tempfile::tempdir().unwrap();
    let reserved = |alloc: Option<&str>, name: &str| -> u64 {
        let db = dir.path().join(name);
        let mut args = vec!["util", "import", "--tsv", "--sync_every", "1"];
        if let Some(alloc) = alloc {
            args.extend(["--alloc_init", alloc]);
        }
        args.extend([s(&db), "-"]);
        let mut child = Command::new(env!("CARGO_BIN_EXE_kura"))
            .args(&args)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"k\tv\n").unwrap();
        stdin.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut size = 0;
        while Instant::now() < deadline {
            size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
            if size > 0 && child.try_wait().unwrap().is_none() {
                // The record is synchronized: the file is open at its reserved size.
                std::thread::sleep(Duration::from_millis(200));
                size = std::fs::metadata(&db).unwrap().len();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut lines = BufReader::new(&out.stderr[..]).lines();
        assert!(lines.next().is_none(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        size
    };
    const RESERVED: u64 = 64 << 20;
    let with = reserved(Some(&RESERVED.to_string()), "alloc.tkh");
    let without = reserved(None, "plain.tkh");
    assert!(with >= RESERVED, "{with} bytes with --alloc_init {RESERVED}");
    assert!(without < RESERVED, "{without} bytes without --alloc_init");
    let inc = dir.path().join("inc.tkh");
    let err = fails(&["create", "--alloc_inc", "0.5", s(&inc)]);
    assert!(
        err.contains("--alloc_inc: the factor the reserved space grows by must be at least 1.0, not 0.5"),
        "{err}"
    );
    assert!(!inc.exists(), "a refused create leaves no file");
}

/// A create that the file system refuses (a reservation beyond its largest
/// file) fails naming the cause and leaves none of the files it made, while
/// one that was there before survives a failed `--truncate`.
#[test]
fn a_failed_create_leaves_no_file_behind() {
    const TOO_LARGE: &str = "100000000000000000";
    let dir = tempfile::tempdir().unwrap();
    for (name, params) in [("big.tkh", None), ("big.tkt", None), ("shards.tkh", Some("num_shards=3"))] {
        let db = dir.path().join(name);
        let mut args = vec!["create", "--alloc_init", TOO_LARGE];
        if let Some(params) = params {
            args.extend(["--params", params]);
        }
        args.push(s(&db));
        let err = fails(&args);
        assert!(err.contains("File too large") || err.contains("No space"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "{name}: left {left:?}");
    }
    let kept = dir.path().join("kept.tkh");
    ok(&["set", s(&kept), "k", "v"]);
    fails(&["create", "--truncate", "--alloc_init", TOO_LARGE, s(&kept)]);
    assert!(kept.exists(), "a file that was there before is not removed");
}

/// `--sync_hard` reaches the device: counted by strace, a set with it makes
/// more synchronizing system calls than one without (skipped where strace is
/// missing or may not trace).
#[test]
fn sync_hard_makes_the_writer_synchronize() {
    let probe = Command::new("strace").args(["-qq", "-e", "trace=none", "true"]).output();
    if !matches!(&probe, Ok(out) if out.status.success()) {
        eprintln!("skipped: strace is missing or cannot trace here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hard.tkh");
    ok(&["create", s(&db)]);
    let sync_calls = |extra: &[&str]| -> usize {
        let log = dir.path().join("strace.log");
        let mut args = vec![
            "-f",
            "-qq",
            "-o",
            s(&log),
            "-e",
            "trace=fsync,fdatasync,msync,sync_file_range,syncfs,sync",
            env!("CARGO_BIN_EXE_kura"),
            "util",
            "set",
        ];
        args.extend(extra);
        args.extend([s(&db), "k", "v"]);
        let out = Command::new("strace").args(&args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let calls = std::fs::read_to_string(&log).unwrap().lines().filter(|l| l.contains('(')).count();
        std::fs::remove_file(&log).unwrap();
        calls
    };
    let plain = sync_calls(&[]);
    let hard = sync_calls(&["--sync_hard"]);
    assert!(hard > plain, "{hard} synchronizing calls with --sync_hard, {plain} without");
}

#[test]
fn inspect_validate_reads_every_record_and_finds_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("check.tkh");
    let db = s(&db);
    ok(&["create", "--record_crc", "32", db]);
    let tsv = dir.path().join("check.tsv");
    std::fs::write(&tsv, (0..50).map(|i| format!("k{i:02}\t<value {i:02}>\n")).collect::<String>()).unwrap();
    ok(&["import", "--tsv", db, s(&tsv)]);
    assert_eq!(ok(&["inspect", "--validate", db, "validated_records"]), "50\n");
    assert!(!ok(&["inspect", db]).contains("validated_records"));
    let mut bytes = std::fs::read(db).unwrap();
    let at = bytes.windows(10).position(|w| w == b"<value 42>").unwrap();
    bytes[at + 3] ^= 1;
    std::fs::write(db, &bytes).unwrap();
    let err = fails(&["inspect", "--validate", db]);
    assert!(err.contains("validation failed after") && err.contains("checksum"), "{err}");
}

#[test]
fn ulog_export_and_import_go_through_update_log_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree_of(dir.path(), "src.tkt", 5);
    let prefix = dir.path().join("log");
    ok(&["export", "--ulog", "5000", "--ulog_ids", "3", "1", &db, s(&prefix)]);
    let read = Command::new(env!("CARGO_BIN_EXE_kura")).args(["ulog", "read", s(&prefix)]).output().unwrap();
    let read = String::from_utf8(read.stdout).unwrap();
    assert!(read.lines().count() == 5 && read.contains("5000\t3\t1\tSET\tk000\tvalue 000"), "{read}");
    let copy = dir.path().join("copy.tkh");
    ok(&["import", "--ulog", "5000", s(&copy), s(&prefix)]);
    assert_eq!(ok(&["get", s(&copy), "k004"]), "value 004\n");
    // From a later time, and from another server, nothing.
    for (i, args) in [["--ulog", "5001", "--ulog_ids", "3", "1"], ["--ulog", "0", "--ulog_ids", "4", "1"]]
        .iter()
        .enumerate()
    {
        let none = dir.path().join(format!("none{i}.tkh"));
        ok(&[&["import"], &args[..], &[s(&none), s(&prefix)]].concat());
        assert_eq!(ok(&["inspect", s(&none), "count"]), "0\n");
    }
    let err = fails(&["export", "--ulog", "1", "--tsv", &db, s(&prefix)]);
    assert!(err.contains("--tsv does not apply to update log files"), "{err}");
    let err = fails(&["import", "--ulog", "1", s(&copy), s(&dir.path().join("nolog"))]);
    assert!(err.contains("no update log files"), "{err}");
    // A damaged entry (the last one's operation byte) changes nothing.
    let file = dir.path().join("log.0000000000");
    let mut bytes = std::fs::read(&file).unwrap();
    let last =
        bytes.windows(3).rposition(|w| w == b"\xa1\x03\x01").expect("a SET entry of server 3, index 1");
    bytes[last] = 0xee;
    std::fs::write(&file, &bytes).unwrap();
    let fresh = dir.path().join("fresh.tkh");
    fails(&["import", "--ulog", "0", s(&fresh), s(&prefix)]);
    assert!(std::fs::metadata(&fresh).map_or(true, |_| ok(&["inspect", s(&fresh), "count"]) == "0\n"));
}

#[test]
fn restore_auto_restores_in_place_and_refuses_what_kuradb_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let db = tree_of(dir.path(), "auto.tkt", 7);
    let out = ok(&["restore", "--auto", "default-ns", &db]);
    assert!(out.starts_with("7 records in"), "{out}");
    let err = fails(&["restore", "--auto", "sync", &db]);
    assert!(err.contains("--auto sync: kuradb has no restore to the last synchronized state"), "{err}");
    let new = dir.path().join("new.tkt");
    let err = fails(&["restore", "--auto", "default", &db, s(&new)]);
    assert!(err.contains("leave NEW_FILE out"), "{err}");
    let err = fails(&["restore", &db]);
    assert!(err.contains("restore needs NEW_FILE"), "{err}");
    let out = ok(&["restore", "--class", "TreeDBM", "--sync_hard", &db, s(&new)]);
    assert!(out.starts_with("7 records restored"), "{out}");
    let err = fails(&["restore", "--class", "tree", "--dbm", "tree", &db, s(&dir.path().join("x.tkt"))]);
    assert!(err.contains("--class"), "{err}");
}

#[test]
fn the_append_tuning_flag_sets_the_update_mode() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mode.tkh");
    let db = s(&db);
    ok(&["create", "--append", db]);
    assert_eq!(ok(&["inspect", db, "update_mode"]), "appending\n");
    ok(&["rebuild", "--in_place", db]);
    assert_eq!(ok(&["inspect", db, "update_mode"]), "in-place\n");
    ok(&["rebuild", "--append", db]);
    assert_eq!(ok(&["inspect", db, "update_mode"]), "appending\n");
    let err =
        fails(&["create", "--append", "--params", "update_mode=in_place", s(&dir.path().join("b.tkh"))]);
    assert!(err.contains("--append"), "{err}");
}

/// The I/O error messages read "DOING of PATH", never "of of" (a message
/// once did, for a directory given where a database file was wanted).
#[test]
fn io_errors_name_the_path_once() {
    let dir = tempfile::tempdir().unwrap();
    let err = kuradb::dbm::poly::DbmClass::of_file(dir.path()).unwrap_err();
    let message = err.to_string();
    assert!(message.contains(&format!("reading the header of {}", dir.path().display())), "{message}");
    assert!(!message.contains("of of"), "{message}");
    let err = kuradb::dbm::tkrzw::ReferenceFormat::of_file(dir.path()).unwrap_err().to_string();
    assert!(err.contains(&format!("reading the header of {}", dir.path().display())), "{err}");
    assert!(!err.contains("of of"), "{err}");
    let full = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["util", "export", "--tsv", &tree_of(dir.path(), "full.tkt", 3), "/dev/full"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&full.stderr);
    assert!(err.contains("writing of /dev/full:") && !err.contains("of of"), "{err}");
}
