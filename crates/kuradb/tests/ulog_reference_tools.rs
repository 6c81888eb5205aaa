//! Update logs of entries of 8 MiB and more read across implementations:
//! kuradb's by the reference's `tkrzw_ulog_util read`, and the reference's
//! (written by its Python module with `ulog_prefix`) by kuradb. The
//! reference sums a record's checksum in 8 MiB batches, so these sizes are
//! where a difference would show. Each test is skipped, saying so, where the
//! reference's tool or module is not installed.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use kuradb::dbm::{Dbm, Durability};
use kuradb::ulog::{
    apply_update_logs, ApplyFilter, LoggedDbm, MessageQueue, MessageQueueReader, MqUpdateLogger, UpdateEntry,
    UpdateOp,
};
use kuradb::TinyDbm;

/// A value of `len` printable bytes (so `read --escape` prints it as is), no
/// run of them alike.
fn big_value(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| b'a' + ((i * 7 + usize::from(seed)) % 26) as u8).collect()
}

fn python_with_tkrzw() -> Option<&'static str> {
    let python = "/usr/bin/python3";
    let found = Command::new(python).args(["-c", "import tkrzw"]).output().ok()?;
    found.status.success().then_some(python)
}

#[test]
fn the_reference_reads_entries_of_8_mib_and_more_that_kuradb_wrote() {
    if Command::new("tkrzw_ulog_util").arg("listfiles").output().is_err() {
        eprintln!("skipped: tkrzw_ulog_util (Debian tkrzw-utils) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let queue = Arc::new(MessageQueue::open(&prefix, 1 << 30).unwrap());
    let db = LoggedDbm::new(TinyDbm::new(&Default::default()), Arc::new(MqUpdateLogger::new(queue, 2, 5)));
    // 9 MiB, and a value whose record, without its checksum, is 2^23 bytes
    // (an entry of 13 bytes before the value, a fixed part of 11).
    let values = [big_value(9 << 20, 0), big_value((8 << 20) - 11 - 13, 3)];
    db.set(b"nine", &values[0]).unwrap();
    db.set(b"eight", &values[1]).unwrap();
    db.set(b"small", b"v").unwrap();
    // The reference checks the metadata's size against the last file's.
    db.synchronize(Durability::Soft).unwrap();
    let out = Command::new("tkrzw_ulog_util")
        .args(["read", "--escape", "--items", "100"])
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(out.status.success(), "tkrzw_ulog_util read failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').skip(1).collect()).collect();
    assert_eq!(lines.len(), 3, "{}", &text[..text.len().min(500)]);
    for (fields, (key, value)) in
        lines.iter().zip([("nine", &values[0][..]), ("eight", &values[1]), ("small", b"v")])
    {
        assert_eq!(&fields[..4], ["2", "5", "SET", key]);
        assert!(fields[4].as_bytes() == value, "the value of {key} differs ({} bytes read)", fields[4].len());
    }
}

#[test]
fn kuradb_reads_entries_of_8_mib_and_more_that_the_reference_wrote() {
    let Some(python) = python_with_tkrzw() else {
        eprintln!("skipped: /usr/bin/python3 has no tkrzw module (Debian python3-tkrzw)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    // A 20 MiB value of ff bytes (the largest byte sums), one whose record
    // (without its checksum) is 2^23 + 1 bytes, and a small one.
    let script = r#"
import sys, tkrzw
db = tkrzw.DBM()
db.Open(sys.argv[1], True, truncate=True, ulog_prefix=sys.argv[2], ulog_server_id=4).OrDie()
db.Set(b"k", b"\xff" * (20 << 20)).OrDie()
db.Set(b"k2", b"\xfe" * (8388598 - 10)).OrDie()
db.Remove(b"k").OrDie()
db.Set(b"small", b"v").OrDie()
db.Close().OrDie()
"#;
    let out = Command::new(python)
        .args(["-c", script])
        .arg(dir.path().join("casket.tkh"))
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(out.status.success(), "the reference's writer failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut reader = MessageQueueReader::new(&prefix, 0);
    let mut ops = Vec::new();
    while let Some((_, message)) = reader.read(Duration::ZERO).unwrap() {
        let entry = UpdateEntry::decode(&message).unwrap();
        assert_eq!((entry.server_id, entry.dbm_index), (4, 0));
        ops.push(entry.op);
    }
    let set = |k: &[u8], v: Vec<u8>| UpdateOp::Set { key: k.to_vec(), value: v };
    assert!(
        ops == [
            set(b"k", vec![0xff; 20 << 20]),
            set(b"k2", vec![0xfe; 8388598 - 10]),
            UpdateOp::Remove { key: b"k".to_vec() },
            set(b"small", b"v".to_vec()),
        ],
        "the entries read differ from those written ({} read)",
        ops.len()
    );
    let replica = TinyDbm::new(&Default::default());
    let report = apply_update_logs(&replica, Path::new(&prefix), &ApplyFilter::default()).unwrap();
    assert_eq!(report.applied, 4);
    assert_eq!(replica.get(b"k2").unwrap().map(|v| v.len()), Some(8388598 - 10));
    assert_eq!(replica.get(b"k").unwrap(), None);
}
