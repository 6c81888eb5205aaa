//! `kura ulog` and the reference's `tkrzw_ulog_util` on each other's files:
//! what kuradb logs the reference reads and prints the same, and what the
//! reference writes kuradb reads and applies; relative timestamps;
//! `kura util restore --end_offset`; `kura perf --ulog`. Where Debian's
//! tkrzw-utils is missing, the comparisons print a message and are skipped.

use std::path::Path;
use std::process::{Command, Output};

use kuradb::dbm::poly::{Params, PolyDbm};
use kuradb::dbm::{Access, Dbm, Durability};

fn run(program: &str, args: &[&str]) -> Output {
    let out = Command::new(program).args(args).output().expect("the program runs");
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn kura(args: &[&str]) -> Vec<u8> {
    run(env!("CARGO_BIN_EXE_kura"), args).stdout
}

fn have_tool() -> bool {
    let found = Command::new("tkrzw_ulog_util").output().is_ok();
    if !found {
        eprintln!("tkrzw_ulog_util is not installed (Debian: apt-get install tkrzw-utils): skipping");
    }
    found
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every line of `out` with its fourth column (an age, which moves) left out.
fn without_age(out: &[u8]) -> Vec<Vec<String>> {
    let text = String::from_utf8_lossy(out);
    text.lines()
        .map(|l| l.split('\t').enumerate().filter(|(i, _)| *i != 3).map(|(_, c)| c.to_string()).collect())
        .collect()
}

#[test]
fn the_reference_reads_what_kuradb_logs() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let params =
        format!("ulog_prefix={},ulog_max_file_size=300,ulog_server_id=4,ulog_dbm_index=9", prefix.display());
    let db =
        PolyDbm::open(dir.path().join("a.tkh"), Access::ReadWrite, &Params::parse(&params).unwrap()).unwrap();
    for i in 0..40 {
        db.set(format!("key{i}").as_bytes(), format!("value{i}").as_bytes()).unwrap();
    }
    db.set(b"tab\tkey\x01", b"tab\tvalue\\\n\x00\x7f\xff").unwrap();
    db.append(b"key1", b"+", b"").unwrap();
    db.remove(b"key2").unwrap();
    db.clear().unwrap();
    db.close().unwrap();
    let ours = kura(&["ulog", "read", "--items", "1000", s(&prefix)]);
    let lines: Vec<&[u8]> = ours.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 44);
    assert!(lines[0].ends_with(b"\t4\t9\tSET\tkey0\tvalue0"));
    assert!(lines[41].ends_with(b"\tSET\tkey1\tvalue1+"));
    assert!(lines[42].ends_with(b"\tREMOVE\tkey2"));
    assert!(lines[43].ends_with(b"\tCLEAR"));
    let files = kura(&["ulog", "listfiles", s(&prefix)]);
    assert!(without_age(&files).len() > 3, "{}", String::from_utf8_lossy(&files));
    if !have_tool() {
        return;
    }
    for flags in [&[][..], &["--escape"], &["--server_id", "4", "--dbm_index", "9"], &["--server_id", "3"]] {
        let mut args = vec!["read", "--items", "1000"];
        args.extend_from_slice(flags);
        args.push(s(&prefix));
        let theirs = run("tkrzw_ulog_util", &args).stdout;
        let mut ours_args = vec!["ulog"];
        ours_args.extend_from_slice(&args);
        assert_eq!(String::from_utf8_lossy(&kura(&ours_args)), String::from_utf8_lossy(&theirs), "{flags:?}");
    }
    let theirs = run("tkrzw_ulog_util", &["listfiles", s(&prefix)]).stdout;
    assert_eq!(without_age(&files), without_age(&theirs));
}

#[test]
fn kuradb_reads_and_applies_what_the_reference_writes() {
    if !have_tool() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let p = s(&prefix);
    let write = |args: &[&str]| run("tkrzw_ulog_util", args);
    for i in 0..30 {
        let (key, value) = (format!("k{}", i % 12), format!("v{i}"));
        write(&["writeset", "--max_file_size", "200", "--server_id", &(i % 2).to_string(), p, &key, &value]);
        if i % 5 == 4 {
            write(&["writeremove", "--max_file_size", "200", p, &format!("k{}", i % 7)]);
        }
        if i == 10 {
            write(&["writeclear", "--max_file_size", "200", p]);
        }
    }
    let theirs = run("tkrzw_ulog_util", &["read", "--items", "1000", p]).stdout;
    assert_eq!(
        String::from_utf8_lossy(&kura(&["ulog", "read", "--items", "1000", p])),
        String::from_utf8_lossy(&theirs)
    );
    assert!(kuradb::ulog::find_files(&prefix).unwrap().len() > 3);
    // Applied twice, the database is what the log says, once.
    let db = dir.path().join("replica.tkh");
    let said = String::from_utf8(kura(&["ulog", "apply", p, s(&db)])).unwrap();
    assert!(said.starts_with("37 entries applied, 0 "), "{said}");
    kura(&["ulog", "apply", p, s(&db)]);
    let mut expected = std::collections::BTreeMap::new();
    for line in String::from_utf8(theirs).unwrap().lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields[3] {
            "SET" => drop(expected.insert(fields[4].to_string(), fields[5].to_string())),
            "REMOVE" => drop(expected.remove(fields[4])),
            _ => expected.clear(),
        }
    }
    let replica = PolyDbm::open(&db, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!(replica.count().unwrap(), expected.len() as u64);
    for (key, value) in &expected {
        assert_eq!(replica.get(key.as_bytes()).unwrap().as_deref(), Some(value.as_bytes()));
    }
    drop(replica);
    let said = String::from_utf8(kura(&["ulog", "apply", "--server_id", "1", p, s(&db)])).unwrap();
    assert!(said.starts_with("15 entries applied, 22 "), "{said}");
}

#[test]
fn timestamps_take_relative_forms() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let p = s(&prefix);
    kura(&["ulog", "writeset", "--timestamp", "-2h", p, "old", "1"]);
    kura(&["ulog", "writeset", p, "new", "2"]);
    let read = String::from_utf8(kura(&["ulog", "read", "--timestamp", "-1h", p])).unwrap();
    assert!(read.contains("\tSET\tnew\t2") && !read.contains("old"), "{read}");
    assert_eq!(String::from_utf8(kura(&["ulog", "read", "--items", "1", p])).unwrap().lines().count(), 1);
    // Every file's latest entry is older than a day from now; the newest stays.
    kura(&["ulog", "writeclear", "--max_file_size", "1", p]);
    kura(&["ulog", "removeoldfiles", "--timestamp", "+1D", "--exclude_latest", p]);
    assert_eq!(kuradb::ulog::find_files(&prefix).unwrap().len(), 1);
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["ulog", "read", "--timestamp", "-7w", p])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("timestamp \"-7w\""));
}

#[test]
fn util_restore_goes_back_to_an_end_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tkh");
    let db =
        PolyDbm::open(&path, Access::ReadWrite, &Params::parse("update_mode=appending").unwrap()).unwrap();
    db.set(b"k", b"first").unwrap();
    db.set(b"gone", b"later").unwrap();
    db.synchronize(Durability::Soft).unwrap();
    let then = db.file_size().unwrap();
    db.set(b"k", b"second").unwrap();
    db.remove(b"gone").unwrap();
    db.close().unwrap();
    let old = dir.path().join("old.tkh");
    kura(&["util", "restore", "--end_offset", &then.to_string(), s(&path), s(&old)]);
    let restored = PolyDbm::open(&old, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!(restored.get(b"k").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(restored.get(b"gone").unwrap().as_deref(), Some(&b"later"[..]));
}

#[test]
fn perf_logs_every_update_with_ulog() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let path = dir.path().join("perf.tkh");
    kura(&["perf", "sequence", "--dbm", "hash", "--path", s(&path), "--iter", "500", "--ulog", s(&prefix)]);
    let read = kura(&["ulog", "read", "--items", "100000", s(&prefix)]);
    let text = String::from_utf8(read).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains("\tSET\t")).count(), 500);
    assert_eq!(text.lines().filter(|l| l.contains("\tREMOVE\t")).count(), 500);
}

/// The log of a database with expiry carries the expiry times: `kura ulog
/// apply` and `kura util import --ulog` replay it into a database that keeps
/// them (made with expiry by the log itself); `kura util export --ulog`
/// writes them; a database of plain records refuses such a log, naming why.
#[test]
fn logs_of_a_database_with_expiry_keep_the_expiry_times() {
    use kuradb::dbm::expiry::Expiry;
    let far = 4_102_444_800_000;
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let params = format!("expiry=true,ulog_prefix={}", prefix.display());
    let db =
        PolyDbm::open(dir.path().join("a.tkh"), Access::ReadWrite, &Params::parse(&params).unwrap()).unwrap();
    db.expiring().unwrap().set_expiring(b"later", b"1", Some(far)).unwrap();
    db.set(b"never", b"2").unwrap();
    db.close().unwrap();
    let check = |path: &Path| {
        let db = PolyDbm::open(path, Access::ReadOnly, &Params::new()).unwrap();
        let layer = db.expiring().expect("a database with expiry");
        assert_eq!(layer.get_expiring(b"later").unwrap(), Some((b"1".to_vec(), Some(far))));
        assert_eq!(layer.get_expiring(b"never").unwrap(), Some((b"2".to_vec(), None)));
        assert_eq!(db.count().unwrap(), 2);
    };
    let applied = dir.path().join("applied.tkt");
    kura(&["ulog", "apply", s(&prefix), s(&applied)]);
    check(&applied);
    let imported = dir.path().join("imported.tkh");
    kura(&["util", "import", "--ulog", "0", s(&imported), s(&prefix)]);
    check(&imported);
    let exported = dir.path().join("exported");
    kura(&["util", "export", "--ulog", "0", s(&imported), s(&exported)]);
    let again = dir.path().join("again.tkh");
    kura(&["util", "import", "--ulog", "0", s(&again), s(&exported)]);
    check(&again);
    let plain = dir.path().join("plain.tkh");
    kura(&["util", "set", s(&plain), "k", "v"]);
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["util", "import", "--ulog", "0", s(&plain), s(&prefix)])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("the log of a database with expiry"), "{said}");
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["ulog", "apply", s(&prefix), s(&plain)])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("the log of a database with expiry"), "{said}");
}
