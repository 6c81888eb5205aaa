//! `kura serve` on a published directory: with `--read_only` it serves the
//! current version; without, it refuses to start, naming the flag; a broken
//! `CURRENT` is refused at start. A new version is swapped in live (by
//! polling, SIGHUP or KURA.SWAP): each command reads one version, a broken
//! version leaves the old one served, and a replaced version's files are
//! closed.

mod serve_support;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// INFO's `field` (of the published section), as text.
fn info_field(con: &mut redis::Connection, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg("published").query(con).unwrap();
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .to_string()
}

/// Waits until INFO says `version` is served.
fn wait_for_version(con: &mut redis::Connection, version: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(con, "published_version") != version.to_string() {
        assert!(Instant::now() < deadline, "v-{version} not served within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The shard files of versions other than `version` the server has open.
fn files_of_other_versions(pid: u32, dir: &Path, version: u64) -> Vec<String> {
    let ours = format!("{}/v-{version}/", dir.display());
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|target| target.display().to_string())
        .filter(|target| target.starts_with(&dir.display().to_string()) && !target.starts_with(&ours))
        .filter(|target| target.contains("/v-"))
        .collect()
}

const KEYS: usize = 200;

/// Clients read every key with MGET while versions come: every reply is
/// whole and of one version, the versions only go forward, and a replaced
/// version's files are closed.
#[test]
fn new_versions_are_swapped_in_while_clients_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pub");
    assert_eq!(publish(&dir, "v1", KEYS, "v1"), 1);
    let server = Server::start(&[dir.to_str().unwrap(), "--read_only", "--published_poll_ms", "20"]);
    let mut con = server.client();
    assert_eq!(info_field(&mut con, "published_version"), "1");
    let stop = Arc::new(AtomicBool::new(false));
    let keys: Vec<String> = (0..KEYS).map(|i| format!("k{i}")).collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (stop, keys, mut con) = (Arc::clone(&stop), keys.clone(), server.client());
            std::thread::spawn(move || {
                let (mut last, mut replies) = (1u64, 0u64);
                while !stop.load(Relaxed) {
                    let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(&mut con).unwrap();
                    let tags: Vec<&str> = values
                        .iter()
                        .map(|v| {
                            v.as_deref().expect("every key is in every version").split('-').next().unwrap()
                        })
                        .collect();
                    assert!(tags.iter().all(|t| *t == tags[0]), "one MGET saw versions {tags:?}");
                    let version: u64 = tags[0][1..].parse().unwrap();
                    assert!(version >= last, "v-{version} after v-{last}");
                    for (i, value) in values.iter().enumerate() {
                        assert_eq!(value.as_deref(), Some(format!("v{version}-{i}").as_str()));
                    }
                    last = version;
                    replies += 1;
                }
                (last, replies)
            })
        })
        .collect();
    for version in 2..=5u64 {
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(publish(&dir, &format!("v{version}"), KEYS, &format!("v{version}")), version);
        wait_for_version(&mut con, version);
        let value: Option<String> = redis::cmd("GET").arg("k7").query(&mut con).unwrap();
        assert_eq!(value, Some(format!("v{version}-7")));
    }
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Relaxed);
    for reader in readers {
        let (last, replies) = reader.join().expect("a reader failed");
        assert_eq!(last, 5);
        assert!(replies > 10, "only {replies} MGETs");
    }
    assert_eq!(info_field(&mut con, "published_swaps"), "4");
    assert_eq!(info_field(&mut con, "published_swap_error"), "");
    // The open files are seen: v-5's are other than v-4's.
    assert!(!files_of_other_versions(server.child.id(), &dir, 4).is_empty());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let open = files_of_other_versions(server.child.id(), &dir, 5);
        if open.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "replaced versions still open: {open:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With polling off, a new version waits for SIGHUP or KURA.SWAP; a broken
/// one is not served, INFO and KURA.SWAP say why, and once mended it is
/// served on the next request.
#[test]
fn a_broken_version_leaves_the_old_one_served() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pub");
    publish(&dir, "v1", 20, "v1");
    let server = Server::start(&[dir.to_str().unwrap(), "--read_only", "--published_poll_ms", "0"]);
    let mut con = server.client();
    publish(&dir, "v2", 20, "v2");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(info_field(&mut con, "published_version"), "1", "no polling");
    let hup = Command::new("kill").args(["-HUP", &server.child.id().to_string()]).status().unwrap();
    assert!(hup.success());
    wait_for_version(&mut con, 2);
    let value: Option<String> = redis::cmd("GET").arg("k3").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("v2-3"));
    // v-3 with a shard file cut short.
    assert_eq!(publish(&dir, "v3", 20, "v3"), 3);
    let manifest = kuradb::dbm::published::current_manifest(&dir).unwrap();
    let file = dir.join("v-3").join(&manifest.shards[1].file);
    let whole = std::fs::read(&file).unwrap();
    std::fs::write(&file, &whole[..whole.len() - 1]).unwrap();
    let refused = redis::cmd("KURA.SWAP").query::<()>(&mut con).unwrap_err();
    let text = error_text(&refused);
    assert!(text.contains("v-3 not served, v-2 still is") && text.contains("bytes"), "{text}");
    let error = info_field(&mut con, "published_swap_error");
    assert!(error.contains("v-3 not served"), "{error}");
    assert_eq!(info_field(&mut con, "published_version"), "2");
    let value: Option<String> = redis::cmd("GET").arg("k3").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("v2-3"));
    // Mended: the next KURA.SWAP tries it again.
    std::fs::write(&file, &whole).unwrap();
    let done: String = redis::cmd("KURA.SWAP").query(&mut con).unwrap();
    assert_eq!(done, "OK");
    assert_eq!(info_field(&mut con, "published_version"), "3");
    assert_eq!(info_field(&mut con, "published_swap_error"), "");
    let value: Option<String> = redis::cmd("GET").arg("k3").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("v3-3"));
}

#[test]
fn kura_swap_without_a_published_directory_says_so() {
    let server = Server::start(&["#dbm=baby"]);
    let mut con = server.client();
    let refused = redis::cmd("KURA.SWAP").query::<()>(&mut con).unwrap_err();
    assert!(error_text(&refused).contains("no published directory is served"), "{}", error_text(&refused));
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    assert!(!info.contains("published_version"), "{info}");
}
