//! Transactions over an update-logged database: a commit reaches the log
//! as one unit (one entry, or one part per shard of a shard set), which
//! applying makes whole or not at all; plain writes keep the reference's
//! entries byte for byte.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use kuradb::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
use kuradb::dbm::{Access, Dbm};
use kuradb::ulog::{apply_update_logs, find_files, ApplyFilter, MessageQueueReader, UpdateEntry, UpdateOp};
use kuradb::{Params, PolyDbm, StdTreeDbm};

/// Every record of the log at `prefix`: its timestamp and message.
fn messages(prefix: &Path) -> Vec<(u64, Vec<u8>)> {
    let mut reader = MessageQueueReader::new(prefix, 0);
    let mut out = Vec::new();
    while let Some(record) = reader.read(Duration::ZERO).unwrap() {
        out.push(record);
    }
    out
}

fn open(dir: &Path, name: &str, extra: &str) -> TransactionalDbm<PolyDbm> {
    let prefix = dir.join("ulog");
    let params = Params::parse(&format!("ulog_prefix={},ulog_server_id=3{extra}", prefix.display())).unwrap();
    let poly = PolyDbm::open(dir.join(name), Access::ReadWrite, &params).unwrap();
    let options = TransactionOptions::for_poly(&poly).unwrap();
    TransactionalDbm::open(poly, options).unwrap()
}

fn records(db: &dyn Dbm) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut cursor = db.iter().unwrap();
    cursor.first().unwrap();
    while let Some((k, v)) = cursor.get().unwrap() {
        out.insert(k, v);
        cursor.next().unwrap();
    }
    out
}

fn commit_three(db: &TransactionalDbm<PolyDbm>) {
    db.run(CommitDurability::Os, 0, |tx| {
        tx.set(b"alice", b"70");
        tx.set(b"bob", b"30");
        tx.remove(b"carol")?;
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_three_key_commit_is_one_unit_in_the_log_and_plain_sets_keep_the_reference_bytes() {
    for class in ["hash", "tree"] {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("ulog");
        let db = open(dir.path(), "casket", &format!(",dbm={class}"));
        db.set(b"k", b"v").unwrap();
        db.set(b"carol", b"100").unwrap();
        commit_three(&db);
        db.close().unwrap();

        let log = messages(&prefix);
        assert_eq!(log.len(), 3, "{class}: two plain sets and one unit");
        // The reference's own set entry, byte for byte, as before units
        // existed: `a1`, server id 3, index 0, sizes, key, value.
        assert_eq!(log[0].1, b"\xa1\x03\x00\x01\x01kv");
        let unit = UpdateEntry::decode(&log[2].1).unwrap();
        assert_eq!(unit.server_id, 3);
        let changes = vec![
            (b"alice".to_vec(), Some(b"70".to_vec())),
            (b"bob".to_vec(), Some(b"30".to_vec())),
            (b"carol".to_vec(), None),
        ];
        let UpdateOp::Unit { part: 0, parts: 1, changes: logged, .. } = unit.op else {
            panic!("{:?}", unit.op)
        };
        let mut logged = logged;
        logged.sort();
        assert_eq!(logged, changes, "{class}");

        let fresh = StdTreeDbm::new(&Default::default());
        let report = apply_update_logs(&fresh, &prefix, &ApplyFilter::default()).unwrap();
        assert_eq!((report.applied, report.incomplete_units), (3, 0));
        let want: BTreeMap<Vec<u8>, Vec<u8>> = [(&b"alice"[..], &b"70"[..]), (b"bob", b"30"), (b"k", b"v")]
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(records(&fresh), want, "{class}");
    }
}

#[test]
fn a_commit_of_one_change_keeps_the_reference_entry() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), "casket.tkh", "");
    db.run(CommitDurability::Memory, 0, |tx| {
        tx.set(b"only", b"1");
        Ok(())
    })
    .unwrap();
    db.close().unwrap();
    let log = messages(&dir.path().join("ulog"));
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].1, b"\xa1\x03\x00\x04\x01only1");
}

#[test]
fn a_commit_spanning_shards_is_one_part_per_shard_applied_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let db = open(dir.path(), "casket.tkt", ",num_shards=4");
    let keys: Vec<String> = (0..12).map(|i| format!("key{i}")).collect();
    db.run(CommitDurability::Os, 0, |tx| {
        for key in &keys {
            tx.set(key.as_bytes(), b"1");
        }
        Ok(())
    })
    .unwrap();
    db.close().unwrap();

    let log = messages(&prefix);
    let parts: Vec<UpdateEntry> = log.iter().map(|(_, m)| UpdateEntry::decode(m).unwrap()).collect();
    assert!(parts.len() > 1, "twelve keys fall in more than one of four shards");
    let mut indexes = Vec::new();
    let mut ids = Vec::new();
    let mut total = 0;
    for (i, entry) in parts.iter().enumerate() {
        let UpdateOp::Unit { id, part, parts: count, changes } = &entry.op else { panic!("{entry:?}") };
        assert_eq!((*part as usize, *count as usize), (i, parts.len()));
        ids.push(*id);
        indexes.push(entry.dbm_index);
        total += changes.len();
    }
    assert_eq!(total, keys.len());
    ids.dedup();
    assert_eq!(ids.len(), 1, "the parts share one id");
    assert!(ids[0] != 0);
    let mut distinct = indexes.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), indexes.len(), "each part is marked with its own shard's index");

    let whole = StdTreeDbm::new(&Default::default());
    let report = apply_update_logs(&whole, &prefix, &ApplyFilter::default()).unwrap();
    assert_eq!((report.applied as usize, report.incomplete_units), (parts.len(), 0));
    assert_eq!(whole.count().unwrap(), keys.len() as u64);

    // Without its last part (the writer crashed before writing it), none of the unit applies.
    let (_, file) = find_files(&prefix).unwrap().pop().unwrap();
    let length = std::fs::metadata(&file).unwrap().len();
    let last = 12 + log.last().unwrap().1.len() as u64;
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(length - last).unwrap();
    let cut = StdTreeDbm::new(&Default::default());
    let report = apply_update_logs(&cut, &prefix, &ApplyFilter::default()).unwrap();
    assert_eq!((report.applied, report.incomplete_units), (0, 1));
    assert_eq!(cut.count().unwrap(), 0);
}
