//! `kura util` on a published directory: it reads the current version as
//! one database, refuses to write it, and `check` reads every byte against
//! the manifest.

use std::path::Path;
use std::process::{Command, Output};

use kuradb::dbm::poly::Params;
use kuradb::dbm::published::{CommitOptions, PublishJob};
use kuradb::dbm::shard::shard_of;

fn kura(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kura")).arg("util").args(args).output().expect("the kura binary runs")
}

fn ok(args: &[&str]) -> String {
    let output = kura(args);
    assert!(output.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn fails_with(args: &[&str], expected: &str) {
    let output = kura(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains(expected), "{args:?}: {stderr}");
}

/// Publishes `k0`..`k{n-1}` valued `v0`.. in three tree shards.
fn publish(dir: &Path, n: usize) {
    let job = PublishJob::new(dir, "cli", 3, &Params::parse("dbm=tree").unwrap()).unwrap();
    for shard in 0..3 {
        let db = job.stage(shard, "0").unwrap();
        for i in 0..n {
            let key = format!("k{i}");
            if shard_of(key.as_bytes(), 3).unwrap() == shard {
                kuradb::Dbm::set(&db, key.as_bytes(), format!("v{i}").as_bytes()).unwrap();
            }
        }
        db.close().unwrap();
    }
    job.commit(&[(0, "0"), (1, "0"), (2, "0")], &CommitOptions::default()).unwrap();
}

#[test]
fn util_reads_a_published_directory_and_check_verifies_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pub");
    publish(&dir, 25);
    let d = dir.to_str().unwrap();
    assert_eq!(ok(&["get", d, "k7"]), "v7\n");
    let listed = ok(&["list", "--items", "100", d]);
    assert_eq!(listed.lines().count(), 25);
    assert!(listed.starts_with("k0\tv0\n"), "a tree set lists in key order: {listed}");
    let inspected = ok(&["inspect", d]);
    assert!(inspected.contains("count: 25") && inspected.contains("num_shards: 3"), "{inspected}");
    assert_eq!(
        ok(&["check", d]),
        "v-1: 3 shards of class tree, 25 records: every file matches the manifest\n"
    );
    fails_with(&["set", d, "k", "v"], "is a published directory: its versions are immutable");
    fails_with(&["check", tmp.path().to_str().unwrap()], "is not a published directory");
    // A flipped byte: the same size, so only check finds it.
    let shard = dir.join("v-1/db.kt-00001-of-00003");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&shard, &bytes).unwrap();
    fails_with(&["check", d], "db.kt-00001-of-00003 has checksum");
}
