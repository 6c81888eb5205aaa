//! A power cut leaves a hash database exactly as its last hard synchronization
//! made it: the fault-injecting file undoes everything written since, and the
//! restore at the next open must find every synchronized record with its
//! synchronized value, and nothing else.

mod common;

use std::collections::BTreeMap;

use common::power_cut::{self as cut, Controls};
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::FileSpec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[derive(Clone, Debug)]
enum Op {
    Set(u8, usize),
    Remove(u8),
    HardSync,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..24, 0usize..300).prop_map(|(k, n)| Op::Set(k, n)),
        2 => (0u8..24).prop_map(Op::Remove),
        1 => Just(Op::HardSync),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

fn value(k: u8, n: usize, step: usize) -> Vec<u8> {
    let mut v = format!("{k}:{step}:").into_bytes();
    v.resize(n.max(v.len()), b'a' + (step % 26) as u8);
    v
}

/// Runs `ops`, cuts the power, reopens and compares with the last synchronized state.
fn check(spec: &FileSpec, mode: UpdateMode, buckets: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cut.kh");
    let controls = Controls::default();
    let options = HashOptions::default()
        .file(spec.clone())
        .num_buckets(buckets)
        .update_mode(mode)
        .align_pow(4)
        .wrap_file(Some(controls.wrapper()));
    let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("open");
    let mut live: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut synced = live.clone();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Set(k, n) => {
                let v = value(k, n, step);
                db.set(&key(k), &v).expect("set");
                live.insert(key(k), v);
            }
            Op::Remove(k) => {
                db.remove(&key(k)).expect("remove");
                live.remove(&key(k));
            }
            Op::HardSync => {
                db.synchronize(Durability::Hard).expect("hard sync");
                synced = live.clone();
            }
        }
    }
    controls.last().power_cut().expect("power cut");
    drop(db);
    let plain = options.wrap_file(None);
    let db = HashDbm::open(&path, Access::ReadWrite, &plain).expect("reopen after the power cut");
    let mut found = BTreeMap::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        found.insert(k.to_vec(), v.to_vec());
        kuradb::dbm::Action::Keep
    })
    .expect("walk");
    prop_assert_eq!(&found, &synced, "[{}] {:?} after {} ops", spec, mode, ops.len());
    prop_assert_eq!(db.count().expect("count"), synced.len() as u64);
    db.set(b"after", b"works").expect("the restored database takes writes");
    Ok(())
}

/// Every synchronized record survives a power cut with its value, and nothing
/// written after the last hard synchronization does.
#[test]
fn a_power_cut_keeps_exactly_the_synchronized_state() {
    for spec in cut::specs() {
        for mode in [UpdateMode::InPlace, UpdateMode::Appending] {
            for buckets in [1u64, 7, 1021] {
                let mut runner = TestRunner::new(Config { cases: 16, ..Config::default() });
                let result = runner
                    .run(&proptest::collection::vec(op(), 1..80), |ops| check(&spec, mode, buckets, &ops));
                if let Err(e) = result {
                    panic!("[{spec}] {mode:?} with {buckets} buckets: {e}");
                }
            }
        }
    }
}

/// A hard synchronization that failed after its device sync (at a void mark
/// of a version its records replaced) made those records durable all the
/// same: a later set must not rewrite one in place. Were it rewritten, a
/// write torn inside (part of its sectors on the device, which the record's
/// checksum refuses) would leave neither it nor the version it replaced,
/// whose void mark may be on the device too.
#[test]
fn a_record_a_failed_synchronization_made_durable_is_not_rewritten_in_place() {
    use kuradb::dbm::hash::RecordCrcMode;
    use kuradb::file::{FaultKind, FileKind};
    let keys: Vec<Vec<u8>> = (0..8).map(|i| format!("key{i}").into_bytes()).collect();
    let mut failed_after_its_sync = 0;
    for k in 0.. {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.kh");
        let controls = Controls::default();
        let options = HashOptions::default()
            .file(FileSpec::new(FileKind::PositionalParallel))
            .num_buckets(7)
            .update_mode(UpdateMode::InPlace)
            .record_crc_mode(RecordCrcMode::Crc32)
            .wrap_file(Some(controls.wrapper()));
        let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("open");
        // Every version is five bytes, so that a rewrite fits in place.
        for key in &keys {
            db.set(key, b"first").expect("set");
        }
        db.synchronize(Durability::Hard).expect("hard sync");
        for key in &keys {
            db.set(key, b"secnd").expect("set");
        }
        // A removal of a key replaced in this epoch orders the
        // synchronization: the older versions' marks go after its device sync.
        db.remove(&keys[0]).expect("remove");
        let control = controls.last();
        control.fail_nth_operation(k + 1, FaultKind::Io);
        let syncs = control.hard_syncs();
        let failed = db.synchronize(Durability::Hard).is_err();
        control.heal();
        if !failed {
            break;
        }
        failed_after_its_sync += u32::from(control.hard_syncs() > syncs);
        if keys[1..].iter().try_for_each(|key| db.set(key, b"third")).is_err() {
            // The failed synchronization left the file refusing writes.
            continue;
        }
        // The power goes after the OS wrote every change back, and each
        // write since the last complete sync is torn inside.
        control.power_cut_after_writeback();
        drop(db);
        let mut bytes = std::fs::read(&path).expect("read");
        let mut torn = 0;
        for at in 0..bytes.len().saturating_sub(4) {
            if &bytes[at..at + 5] == b"third" {
                bytes[at + 4] = b'X';
                torn += 1;
            }
        }
        std::fs::write(&path, &bytes).expect("write");
        let plain = options.clone().wrap_file(None);
        let db = HashDbm::open(&path, Access::ReadWrite, &plain)
            .unwrap_or_else(|e| panic!("fault at operation {k} of the sync: reopen: {e}"));
        for key in &keys[1..] {
            let value = db.get(key).unwrap_or_else(|e| panic!("fault at operation {k}: get: {e}"));
            assert!(
                matches!(value.as_deref(), Some(b"first" | b"secnd")),
                "fault at operation {k} ({torn} rewrites torn): {} holds {:?}",
                String::from_utf8_lossy(key),
                value.map(|v| String::from_utf8_lossy(&v).into_owned())
            );
        }
    }
    assert!(failed_after_its_sync > 0, "no synchronization failed after its device sync");
}
