//! The commit protocol: choosing attempts, retries, abort, pruning, and a
//! crash between any two durable steps.

use super::job::Step;
use super::*;
use crate::dbm::poly::PolyDbm;
use crate::dbm::shard::shard_of;

fn params(text: &str) -> Params {
    Params::parse(text).unwrap()
}

/// Stages shard `shard` of `job` as attempt `attempt` with the keys of
/// `keys` that belong to it, each valued `value`.
fn stage(job: &PublishJob, shard: usize, attempt: &str, keys: &[String], value: &str) {
    let db = job.stage(shard, attempt).unwrap();
    for key in keys {
        if shard_of(key.as_bytes(), job.num_shards()).unwrap() == shard {
            db.set(key.as_bytes(), value.as_bytes()).unwrap();
        }
    }
    db.close().unwrap();
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Publishes `keys` valued `value` in a job of `n` shards, one attempt each.
fn publish(dir: &Path, job_id: &str, n: usize, keys: &[String], value: &str) -> u64 {
    let job = PublishJob::new(dir, job_id, n, &params("dbm=hash,num_buckets=64")).unwrap();
    for shard in 0..n {
        stage(&job, shard, "0", keys, value);
    }
    let attempts: Vec<(usize, &str)> = (0..n).map(|s| (s, "0")).collect();
    job.commit(&attempts, &CommitOptions::default()).unwrap()
}

fn read_all(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = PolyDbm::open(dir, Access::ReadOnly, &Params::new()).unwrap();
    let mut out = Vec::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        crate::dbm::Action::Keep
    })
    .unwrap();
    db.close().unwrap();
    out.sort();
    out
}

#[test]
fn a_commit_publishes_the_chosen_attempts_and_removes_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let job = PublishJob::new(dir.path(), "job-a", 3, &params("dbm=tree")).unwrap();
    let ks = keys("k", 60);
    for shard in 0..3 {
        stage(&job, shard, "0", &ks, "first");
    }
    // Shard 1 retried: its second attempt is the one committed.
    stage(&job, 1, "1", &ks, "retried");
    let v = job.commit(&[(0, "0"), (1, "1"), (2, "0")], &CommitOptions::default()).unwrap();
    assert_eq!((v, current_version(dir.path()).unwrap()), (1, Some(1)));
    assert!(!dir.path().join(STAGING).exists(), "staging is gone");
    let db = PolyDbm::open(dir.path(), Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!((db.count().unwrap(), db.class()), (60, crate::dbm::class::DbmClass::Tree));
    for key in &ks {
        let shard = shard_of(key.as_bytes(), 3).unwrap();
        let want = if shard == 1 { "retried" } else { "first" };
        assert_eq!(db.get(key.as_bytes()).unwrap().unwrap(), want.as_bytes(), "{key}");
    }
    db.close().unwrap();
    let manifest = verify(dir.path()).unwrap();
    assert_eq!((manifest.job.as_str(), manifest.num_shards()), ("job-a", 3));
    assert_eq!(manifest.shards.iter().map(|s| s.records).sum::<u64>(), 60);
    assert_eq!(manifest.shards[2].file, "db.kt-00002-of-00003");
    let text = std::fs::read_to_string(version_dir(dir.path(), 1).join(MANIFEST)).unwrap();
    assert_eq!(Manifest::from_json(&text, Path::new("m")).unwrap(), manifest);
}

#[test]
fn duplicate_and_missing_shards_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let job = PublishJob::new(dir.path(), "j", 3, &params("dbm=hash")).unwrap();
    let ks = keys("k", 30);
    stage(&job, 0, "a", &ks, "v");
    stage(&job, 0, "b", &ks, "v");
    stage(&job, 1, "a", &ks, "v");
    let err = job.commit(&[(0, "a"), (0, "b"), (1, "a")], &CommitOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Duplication);
    assert!(err.message().contains("shard 0 is committed twice, by attempts a and b"), "{err}");
    let err = job.commit(&[(0, "a"), (1, "a")], &CommitOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.message().contains("no attempt is committed for shard 2 of 3"), "{err}");
    let err = job.commit(&[(0, "a"), (1, "a"), (2, "zz")], &CommitOptions::default()).unwrap_err();
    assert!(err.message().contains("attempt zz of shard 2 staged no file"), "{err}");
    let err = job.commit(&[(0, "a"), (1, "a"), (3, "a")], &CommitOptions::default()).unwrap_err();
    assert!(err.message().contains("shard 3 is out of range"), "{err}");
    assert_eq!(current_version(dir.path()).unwrap(), None, "nothing published");
    let options = CommitOptions { create_missing: true, ..CommitOptions::default() };
    assert_eq!(job.commit(&[(0, "b"), (1, "a")], &options).unwrap(), 1);
    let manifest = verify(dir.path()).unwrap();
    assert_eq!(manifest.shards[2].records, 0);
    let in_first_two = ks.iter().filter(|k| shard_of(k.as_bytes(), 3).unwrap() < 2).count();
    assert_eq!(read_all(dir.path()).len(), in_first_two);
}

#[test]
fn abort_removes_the_staging_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    publish(dir.path(), "first", 2, &keys("a", 10), "1");
    let job = PublishJob::new(dir.path(), "second", 2, &params("dbm=hash")).unwrap();
    stage(&job, 0, "0", &keys("b", 10), "2");
    assert!(job.staging_dir().exists());
    job.abort().unwrap();
    assert!(!job.staging_dir().exists());
    job.abort().unwrap();
    assert_eq!(current_version(dir.path()).unwrap(), Some(1));
    assert_eq!(read_all(dir.path()).len(), 10);
}

#[test]
fn old_versions_beyond_keep_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    for i in 1..=4u64 {
        assert_eq!(publish(dir.path(), &format!("j{i}"), 2, &keys("k", 5), "v"), i);
    }
    assert_eq!(versions(dir.path()).unwrap(), vec![3, 4], "keep 2 by default");
    // A reader of v-4 keeps reading it after a commit prunes it.
    let reader = PolyDbm::open(dir.path(), Access::ReadOnly, &Params::new()).unwrap();
    let job = PublishJob::new(dir.path(), "j5", 1, &params("dbm=skip")).unwrap();
    stage(&job, 0, "0", &keys("k", 3), "v");
    let v = job.commit(&[(0, "0")], &CommitOptions { keep: 1, ..CommitOptions::default() }).unwrap();
    assert_eq!((v, versions(dir.path()).unwrap()), (5, vec![5]));
    assert_eq!((reader.count().unwrap(), reader.get(b"k4").unwrap()), (5, Some(b"v".to_vec())));
    reader.close().unwrap();
    let err = job.commit(&[(0, "0")], &CommitOptions { keep: 0, ..CommitOptions::default() }).unwrap_err();
    assert!(err.message().contains("keep must be at least 1"), "{err}");
}

/// A commit stopped after any durable step leaves a version whole and
/// current: the old one before the switch, the new one after it; the
/// commit run again finishes, and the next job's commit cleans up.
#[test]
fn a_commit_stopped_at_any_step_leaves_the_old_or_the_new_version() {
    for (stop, switched) in [(Step::Built, false), (Step::Installed, false), (Step::Flipped, true)] {
        let dir = tempfile::tempdir().unwrap();
        publish(dir.path(), "old", 2, &keys("old", 20), "o");
        let job = PublishJob::new(dir.path(), "new", 2, &params("dbm=hash")).unwrap();
        let ks = keys("new", 30);
        stage(&job, 0, "0", &ks, "n");
        stage(&job, 1, "0", &ks, "n");
        let mut crash = |step| {
            if step == stop {
                Err(Error::new(ErrorKind::System, "simulated crash"))
            } else {
                Ok(())
            }
        };
        let err = job.commit_with(&[(0, "0"), (1, "0")], &CommitOptions::default(), &mut crash).unwrap_err();
        assert_eq!(err.message(), "simulated crash");
        let seen = read_all(dir.path());
        let (want_len, want_prefix) = if switched { (30, "new") } else { (20, "old") };
        assert_eq!(seen.len(), want_len, "after {stop:?}");
        assert!(seen.iter().all(|(k, _)| k.starts_with(want_prefix.as_bytes())), "after {stop:?}");
        verify(dir.path()).unwrap();
        // The commit run again publishes (or finds) the new version.
        let v = job.commit(&[(0, "0"), (1, "0")], &CommitOptions::default()).unwrap();
        assert_eq!(current_version(dir.path()).unwrap(), Some(v));
        assert_eq!(read_all(dir.path()).len(), 30, "after {stop:?} and a rerun");
        assert!(!job.staging_dir().exists());
        let listed: Vec<u64> = versions(dir.path()).unwrap();
        assert_eq!(listed.len(), 2, "after {stop:?}: {listed:?}");
        assert_eq!(*listed.last().unwrap(), v);
    }
}

/// The version a commit installed but stopped before switching to is never
/// current, and a later commit by another job replaces it.
#[test]
fn a_later_job_removes_what_a_stopped_commit_left() {
    let dir = tempfile::tempdir().unwrap();
    publish(dir.path(), "old", 2, &keys("old", 5), "o");
    let job = PublishJob::new(dir.path(), "stopped", 2, &params("dbm=hash")).unwrap();
    stage(&job, 0, "0", &keys("x", 5), "x");
    stage(&job, 1, "0", &keys("x", 5), "x");
    let mut crash =
        |step| if step == Step::Installed { Err(Error::new(ErrorKind::System, "crash")) } else { Ok(()) };
    job.commit_with(&[(0, "0"), (1, "0")], &CommitOptions::default(), &mut crash).unwrap_err();
    assert_eq!(versions(dir.path()).unwrap(), vec![1, 2]);
    assert_eq!(current_version(dir.path()).unwrap(), Some(1));
    let v = publish(dir.path(), "later", 2, &keys("new", 5), "n");
    assert_eq!(v, 2, "the unfinished v-2 is replaced");
    assert_eq!(versions(dir.path()).unwrap(), vec![1, 2]);
    assert_eq!(current_manifest(dir.path()).unwrap().job, "later");
    job.abort().unwrap();
    assert!(!dir.path().join(STAGING).exists());
}

#[test]
fn an_appending_job_adds_to_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    publish(dir.path(), "base", 3, &keys("a", 30), "base");
    let job = PublishJob::appending(dir.path(), "more").unwrap();
    assert_eq!(job.num_shards(), 3);
    let more: Vec<String> = keys("a", 10).into_iter().chain(keys("b", 10)).collect();
    // Shard 2 gets no attempt: created from the current version's shard.
    stage(&job, 0, "0", &more, "new");
    stage(&job, 1, "0", &more, "new");
    let options = CommitOptions { create_missing: true, ..CommitOptions::default() };
    assert_eq!(job.commit(&[(0, "0"), (1, "0")], &options).unwrap(), 2);
    let seen = read_all(dir.path());
    let added = keys("b", 10).iter().filter(|k| shard_of(k.as_bytes(), 3).unwrap() < 2).count();
    assert_eq!(seen.len(), 30 + added);
    for (k, v) in &seen {
        let k = std::str::from_utf8(k).unwrap();
        let changed = more.iter().any(|m| m == k) && shard_of(k.as_bytes(), 3).unwrap() < 2;
        assert_eq!(v.as_slice(), if changed { &b"new"[..] } else { &b"base"[..] }, "{k}");
    }
    // An append staged from a version no longer current is refused.
    let stale = PublishJob::appending(dir.path(), "stale").unwrap();
    stage(&stale, 0, "0", &keys("c", 3), "c");
    publish(dir.path(), "replace", 3, &keys("z", 3), "z");
    let err = stale.commit(&[(0, "0")], &options).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.message().contains("appended to v-2, but v-3 is current"), "{err}");
}

#[test]
fn a_published_directory_opens_read_only_and_checks_its_files() {
    let dir = tempfile::tempdir().unwrap();
    publish(dir.path(), "j", 2, &keys("k", 20), "v");
    let err = PolyDbm::open(dir.path(), Access::ReadWrite, &Params::new()).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::ReadOnly);
    assert!(err.message().contains("is a published directory: its versions are immutable"), "{err}");
    let err = PolyDbm::open(dir.path(), Access::ReadOnly, &params("num_shards=3")).err().unwrap();
    assert!(err.message().contains("holds num_shards=2, not 3"), "{err}");
    let db = PolyDbm::open(dir.path(), Access::ReadOnly, &params("dbm=hash,file=pos-para")).unwrap();
    assert!(db.is_sharded());
    db.close().unwrap();
    // A byte changed in place: the same size, so only verify finds it.
    let manifest = current_manifest(dir.path()).unwrap();
    let file = version_dir(dir.path(), 1).join(&manifest.shards[0].file);
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&file, &bytes).unwrap();
    let err = verify(dir.path()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.message().contains("has checksum"), "{err}");
    // A truncated shard fails the open's size check.
    std::fs::write(&file, &bytes[..last]).unwrap();
    let err = PolyDbm::open(dir.path(), Access::ReadOnly, &Params::new()).err().unwrap();
    assert!(err.message().contains(&format!("has {last} bytes, the manifest says {}", last + 1)), "{err}");
    std::fs::write(dir.path().join(CURRENT), "v-x\n").unwrap();
    let err = PolyDbm::open(dir.path(), Access::ReadOnly, &Params::new()).err().unwrap();
    assert!(err.message().contains("not a version directory"), "{err}");
}

#[test]
fn bad_job_arguments_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (PublishJob::new(dir.path(), "j", 2, &params("num_buckets=9")).unwrap_err(), "give dbm="),
        (PublishJob::new(dir.path(), "../x", 2, &params("dbm=hash")).unwrap_err(), "job id \"../x\""),
        (PublishJob::new(dir.path(), "j", 0, &params("dbm=hash")).unwrap_err(), "from 1 to"),
        (PublishJob::new(dir.path(), "j", 2, &params("dbm=hash,num_shards=2")).unwrap_err(), "num_shards"),
        (PublishJob::new(dir.path(), "j", 2, &params("dbm=hash,ulog_prefix=/x")).unwrap_err(), "ulog_prefix"),
        (PublishJob::new(dir.path(), "j", 2, &params("dbm=hash,max_level=3")).unwrap_err(), "max_level"),
    ];
    for (err, text) in cases {
        assert!(err.message().contains(text), "{err} should say {text}");
    }
    let job = PublishJob::new(dir.path(), "j", 2, &params("dbm=hash")).unwrap();
    assert!(job.stage(0, "a/b").err().unwrap().message().contains("attempt id"));
    assert!(job.stage(2, "a").err().unwrap().message().contains("shard 2 is out of range"));
    assert!(PublishJob::appending(dir.path(), "j").unwrap_err().message().contains("has no CURRENT"));
}

/// Commits of several jobs at once take turns: each makes a whole version
/// of its own, numbered one after the other.
#[test]
fn concurrent_commits_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    let jobs: Vec<PublishJob> = (0..4)
        .map(|i| {
            let job = PublishJob::new(dir.path(), &format!("j{i}"), 2, &params("dbm=hash")).unwrap();
            stage(&job, 0, "0", &keys(&format!("j{i}-"), 10), "v");
            stage(&job, 1, "0", &keys(&format!("j{i}-"), 10), "v");
            job
        })
        .collect();
    let mut made: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                scope.spawn(|| {
                    job.commit(&[(0, "0"), (1, "0")], &CommitOptions { keep: 4, create_missing: false })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
    });
    made.sort_unstable();
    assert_eq!(made, vec![1, 2, 3, 4]);
    assert_eq!(versions(dir.path()).unwrap(), vec![1, 2, 3, 4]);
    let current = current_manifest(dir.path()).unwrap();
    let seen = read_all(dir.path());
    assert_eq!(seen.len(), 10);
    assert!(seen.iter().all(|(k, _)| k.starts_with(format!("{}-", current.job).as_bytes())));
    for v in 1..=4 {
        assert!(Manifest::read(&version_dir(dir.path(), v).join(MANIFEST)).is_ok(), "v-{v} is whole");
    }
}

#[test]
fn a_version_opens_by_number_whichever_is_current() {
    let dir = tempfile::tempdir().unwrap();
    publish(dir.path(), "j1", 2, &keys("k", 4), "one");
    publish(dir.path(), "j2", 2, &keys("k", 6), "two");
    let old = open_version(dir.path(), 1, Access::ReadOnly, &Params::new()).unwrap();
    assert_eq!((old.count().unwrap(), old.get(b"k0").unwrap()), (4, Some(b"one".to_vec())));
    old.close().unwrap();
    let err = open_version(dir.path(), 1, Access::ReadWrite, &Params::new()).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::ReadOnly);
    let err = open_version(dir.path(), 9, Access::ReadOnly, &Params::new()).err().unwrap();
    assert!(err.message().contains("v-9"), "{err}");
}
