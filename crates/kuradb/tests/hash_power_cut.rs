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
