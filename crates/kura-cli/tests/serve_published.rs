//! `kura serve` on a published directory: with `--read_only` it serves the
//! current version; without, it refuses to start, naming the flag; a broken
//! `CURRENT` is refused at start.

mod serve_support;

use std::path::Path;
use std::process::Command;

use kuradb::dbm::poly::Params;
use kuradb::dbm::published::{CommitOptions, PublishJob};
use kuradb::dbm::shard::shard_of;
use serve_support::{error_text, Server};

/// Publishes `k0`..`k{n-1}` valued `{tag}-{i}` in two hash shards.
fn publish(dir: &Path, job: &str, n: usize, tag: &str) -> u64 {
    let job = PublishJob::new(dir, job, 2, &Params::parse("dbm=hash").unwrap()).unwrap();
    for shard in 0..2 {
        let db = job.stage(shard, "0").unwrap();
        for i in 0..n {
            let key = format!("k{i}");
            if shard_of(key.as_bytes(), 2).unwrap() == shard {
                kuradb::Dbm::set(&db, key.as_bytes(), format!("{tag}-{i}").as_bytes()).unwrap();
            }
        }
        db.close().unwrap();
    }
    job.commit(&[(0, "0"), (1, "0")], &CommitOptions::default()).unwrap()
}

#[test]
fn serves_the_current_version_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pub");
    assert_eq!(publish(&dir, "one", 20, "one"), 1);
    let d = dir.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["serve", "--address", "127.0.0.1:0", d])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("serve it with --read_only"), "{stderr}");
    let server = Server::start(&[d, "--read_only"]);
    let mut con = server.client();
    let value: Option<String> = redis::cmd("GET").arg("k7").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("one-7"));
    let values: Vec<Option<String>> = redis::cmd("MGET").arg(&["k0", "k19", "nope"]).query(&mut con).unwrap();
    assert_eq!(values, [Some("one-0".to_string()), Some("one-19".to_string()), None]);
    let count: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(count, 20);
    let refused = redis::cmd("SET").arg("k7").arg("x").query::<()>(&mut con).unwrap_err();
    assert!(error_text(&refused).contains("READONLY"), "{}", error_text(&refused));
    let value: Option<String> = redis::cmd("GET").arg("k7").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("one-7"));
}

#[test]
fn a_directory_without_a_current_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pub");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("CURRENT"), "nonsense\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kura"))
        .args(["serve", "--read_only", "--address", "127.0.0.1:0", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CURRENT") && stderr.contains("broken"), "{stderr}");
}
