//! A short write (half the data stored, then ENOSPC) at any write of a hash
//! database, after which the same handle goes on working as long as it
//! lets it: no read ever returns a value never written (a record torn in
//! place is refused, not read half old and half new), every synchronization
//! that returned holds after a restore (records written after the fault
//! stay where chains and the restore's scan find them), and after a close
//! or a power cut the database reopens with every synchronized record.
//!
//! The fault sweep stops at the first error; this goes on past it, which is
//! where a misplaced or torn record does its harm.

mod common;

use common::hash::{self as h, Model};
use common::power_cut::{self as cut, Controls};
use common::sweep::Expect;
use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::file::{FaultKind, FileSpec};

fn key(k: usize) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

/// A value no other step writes, of one of many lengths, so that records
/// of every size are torn, overwritten in place, moved and reused. Every
/// third ends in zeros: its record, half written into new space (which
/// reads as zeros), may be whole and pass its checksum, though the write
/// failed and no chain reaches it.
fn value(k: usize, step: usize) -> Vec<u8> {
    let mut v = format!("{k}:{step}:").into_bytes();
    let fill = if step.is_multiple_of(3) { 0 } else { b'a' + (step % 26) as u8 };
    v.resize((step * 37) % 90, fill);
    v
}

/// The steps after the fault is armed: sets over 14 keys (the first 10
/// exist), removals, a hard synchronization every 9th.
fn after_arming(db: &HashDbm, expect: &mut Expect) {
    for step in 0..40 {
        let k = (step * 5) % 14;
        let result = match step % 9 {
            8 => db.synchronize(Durability::Hard).map(|()| expect.synchronized(true, false)),
            5 => {
                expect.attempt(&key(k), None);
                db.remove(&key(k)).map(|_| expect.done(&key(k), None))
            }
            _ => {
                let v = value(k, step + 100);
                expect.attempt(&key(k), Some(&v));
                db.set(&key(k), &v).map(|()| expect.done(&key(k), Some(&v)))
            }
        };
        // A failed call is the fault's or a refusal after it; either way the
        // handle is asked again at the next step.
        let _ = result;
    }
}

/// Reads every key the handle may hold: each read answers an error or a
/// value the key may hold, never another.
fn reads_are_never_torn(db: &HashDbm, expect: &Expect) -> Result<(), String> {
    let mut found = Model::new();
    for k in 0..14 {
        match db.get(&key(k)) {
            Ok(Some(v)) => {
                found.insert(key(k), v);
            }
            Ok(None) => {}
            Err(_) => return Ok(()),
        }
    }
    expect.check_values(&found).map_err(|e| format!("a read before closing: {e}"))
}

/// One short write at the `n`-th write after the first synchronized records.
fn case(spec: &FileSpec, mode: UpdateMode, cached: bool, n: u64, then_cut: bool) -> Result<bool, String> {
    let dir = common::sweep::scratch();
    let path = dir.path().join("short.kh");
    let controls = Controls::default();
    let options = HashOptions::default()
        .file(spec.clone())
        .num_buckets(7)
        .update_mode(mode)
        .align_pow(4)
        .cache_buckets(cached)
        .wrap_file(Some(controls.wrapper()));
    let db = HashDbm::open(&path, Access::ReadWrite, &options).map_err(|e| format!("open: {e}"))?;
    let mut expect = Expect::new();
    for k in 0..10 {
        let v = value(k, k);
        db.set(&key(k), &v).map_err(|e| format!("set before the fault: {e}"))?;
        expect.done(&key(k), Some(&v));
    }
    db.synchronize(Durability::Hard).map_err(|e| format!("synchronize before the fault: {e}"))?;
    expect.synchronized(true, false);
    let control = controls.last();
    control.fail_nth_write(n, FaultKind::ShortWrite);
    after_arming(&db, &mut expect);
    let fired = control.fired() > 0;
    reads_are_never_torn(&db, &expect)?;
    if then_cut {
        control.power_cut().map_err(|e| format!("power cut: {e}"))?;
    }
    let _ = db.close();
    let db = HashDbm::open(&path, Access::ReadWrite, &options.wrap_file(None))
        .map_err(|e| format!("reopen: {e}"))?;
    let found = h::records(&db)?;
    expect.check_values(&found).map_err(|e| format!("after reopening: {e}"))?;
    db.set(b"after", b"the fault").map_err(|e| format!("a set after reopening: {e}"))?;
    db.close().map_err(|e| format!("close after reopening: {e}"))?;
    Ok(fired)
}

fn check(mode: UpdateMode) {
    let mut failures = Vec::new();
    let mut fired = 0;
    for spec in cut::specs() {
        for cached in [false, true] {
            for then_cut in [false, true] {
                for n in 1..=90 {
                    match case(&spec, mode, cached, n, then_cut) {
                        Ok(hit) => fired += usize::from(hit),
                        Err(e) => failures.push(format!(
                            "[{spec}, cache_buckets {cached}] short write {n}, then cut {then_cut}: {e}"
                        )),
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures, the first:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    assert!(fired > 600, "only {fired} faults fired: the workload writes less than it should");
}

#[test]
fn in_place_survives_a_short_write_and_goes_on() {
    check(UpdateMode::InPlace);
}

#[test]
fn appending_survives_a_short_write_and_goes_on() {
    check(UpdateMode::Appending);
}

/// A write into new space that failed part-way yet left a whole record (the
/// half not stored was zeros, as the new space reads) never comes back: a
/// restore after a later synchronization finds the key's value that
/// synchronization made durable, not the failed one at a higher offset.
#[test]
fn a_failed_write_that_left_a_whole_record_never_comes_back() {
    for spec in cut::specs() {
        let dir = common::sweep::scratch();
        let path = dir.path().join("whole.kh");
        let controls = Controls::default();
        let options = HashOptions::default()
            .file(spec.clone())
            .num_buckets(7)
            .align_pow(4)
            .wrap_file(Some(controls.wrapper()));
        let db = HashDbm::open(&path, Access::ReadWrite, &options).expect("open");
        db.set(b"key", b"first").expect("set");
        let control = controls.last();
        // The reservation of new space is the first write, the record the second.
        control.fail_nth_write(2, FaultKind::ShortWrite);
        let mut failed = b"failed".to_vec();
        failed.resize(300, 0);
        assert!(db.set(b"key", &failed).is_err(), "[{spec}] the short write answered Ok");
        // In place, below the failed record, in the same epoch.
        db.set(b"key", b"third").expect("set after the fault");
        db.synchronize(Durability::Hard).expect("hard synchronization");
        control.power_cut().expect("power cut");
        drop(db);
        let db = HashDbm::open(&path, Access::ReadWrite, &options.wrap_file(None)).expect("reopen");
        assert_eq!(db.get(b"key").expect("get").as_deref(), Some(&b"third"[..]), "[{spec}]");
        db.close().expect("close");
    }
}
