//! Update-log files: rotation, readers that wait, replay that can be
//! repeated, a torn end cut off at reopen, and point-in-time restore of an
//! appending hash file.

use kuradb::ulog::NewestFile;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kuradb::dbm::hash::{HashDbm, HashOptions, UpdateMode};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::ulog::{
    apply_update_logs, find_files, read_file_meta, remove_old_files, ApplyFilter, LoggedDbm, MessageQueue,
    MessageQueueReader, MqUpdateLogger,
};
use kuradb::{Action, ErrorKind, StdTreeDbm, TinyDbm};
use rand::{Rng, SeedableRng};

fn records(db: &dyn Dbm) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        out.insert(k.to_vec(), v.to_vec());
        Action::Keep
    })
    .unwrap();
    out
}

#[test]
fn files_rotate_at_the_size_limit_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("q");
    let queue = MessageQueue::open(&prefix, 200).unwrap();
    for i in 0..50u64 {
        queue.write(Some(1000 + i), format!("message {i}").as_bytes()).unwrap();
    }
    // A timestamp earlier than the last is raised to it: the files stay in time order.
    assert_eq!(queue.write(Some(5), b"late").unwrap(), 1049);
    queue.synchronize(Durability::Soft).unwrap();
    let files = find_files(&prefix).unwrap();
    assert!(files.len() >= 5, "{files:?}");
    for (i, (id, path)) in files.iter().enumerate() {
        assert_eq!(*id, i as u64);
        let meta = read_file_meta(path).unwrap();
        assert_eq!((meta.file_id, meta.file_size), (*id, std::fs::metadata(path).unwrap().len()));
        // A file is closed once it reaches the limit: it holds at most one record past it.
        assert!(meta.file_size < 200 + 32, "{meta:?}");
    }
    let mut reader = MessageQueueReader::new(&prefix, 1040);
    let mut read = Vec::new();
    while let Some((t, m)) = reader.read(Duration::ZERO).unwrap() {
        read.push((t, String::from_utf8(m).unwrap()));
    }
    let mut expected: Vec<(u64, String)> = (40..50).map(|i| (1000 + i, format!("message {i}"))).collect();
    expected.push((1049, "late".into()));
    assert_eq!(read, expected);
    // Old files go, the newest stays if asked.
    let removed = remove_old_files(&prefix, u64::MAX, NewestFile::Keep).unwrap();
    assert_eq!(removed.len(), files.len() - 1);
    assert_eq!(find_files(&prefix).unwrap().len(), 1);
}

#[test]
fn a_waiting_reader_is_woken_by_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let queue = Arc::new(MessageQueue::open(dir.path().join("q"), 1 << 20).unwrap());
    // One reader woken by the writer of its process, one that polls the files.
    let mut woken = queue.reader(0);
    let mut polling = MessageQueueReader::new(dir.path().join("q"), 0);
    assert_eq!(woken.read(Duration::from_millis(20)).unwrap(), None);
    let writer = {
        let queue = queue.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            queue.write(Some(7), b"news").unwrap();
        })
    };
    let start = Instant::now();
    assert_eq!(woken.read(Duration::from_secs(30)).unwrap(), Some((7, b"news".to_vec())));
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(polling.read(Duration::from_secs(30)).unwrap(), Some((7, b"news".to_vec())));
    writer.join().unwrap();
}

#[test]
fn applying_a_log_twice_gives_what_applying_it_once_gives() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("ulog");
    let queue = Arc::new(MessageQueue::open(&prefix, 4096).unwrap());
    let db = LoggedDbm::new(TinyDbm::new(&Default::default()), Arc::new(MqUpdateLogger::new(queue, 0, 0)));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(20);
    for i in 0..2000 {
        let key = format!("{}", rng.gen_range(0..100));
        match rng.gen_range(0..10) {
            0..=5 => db.set(key.as_bytes(), format!("{i}").as_bytes()).unwrap(),
            6 => db.append(key.as_bytes(), b"+", b"").unwrap(),
            7..=8 => drop(db.remove(key.as_bytes()).unwrap()),
            _ if i % 500 == 9 => db.clear().unwrap(),
            _ => {}
        }
    }
    db.synchronize(Durability::Soft).unwrap();
    assert!(find_files(&prefix).unwrap().len() > 1);
    let once = StdTreeDbm::new(&Default::default());
    let report = apply_update_logs(&once, &prefix, &ApplyFilter::default()).unwrap();
    assert!(report.applied > 1000 && report.skipped == 0, "{report:?}");
    assert_eq!(records(&once), records(&db));
    // Again, over the result, and over a database holding other records.
    apply_update_logs(&once, &prefix, &ApplyFilter::default()).unwrap();
    assert_eq!(records(&once), records(&db));
    // Entries of another server are left out.
    let other = ApplyFilter { server_id: Some(1), ..Default::default() };
    let report = apply_update_logs(&once, &prefix, &other).unwrap();
    assert_eq!(report.applied, 0);
}

#[test]
fn a_torn_end_is_cut_at_reopen_and_damage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("q");
    let queue = MessageQueue::open(&prefix, 1 << 20).unwrap();
    queue.write(Some(1), b"one").unwrap();
    drop(queue);
    let path = find_files(&prefix).unwrap()[0].1.clone();
    let mut bytes = std::fs::read(&path).unwrap();
    let whole = bytes.len();
    // A record cut short by a crash.
    bytes.extend_from_slice(b"\xff\0\0\0\0\0\x02\0\0\0\x09tw");
    std::fs::write(&path, &bytes).unwrap();
    let mut reader = MessageQueueReader::new(&prefix, 0);
    assert_eq!(reader.read(Duration::ZERO).unwrap(), Some((1, b"one".to_vec())));
    assert_eq!(reader.read(Duration::ZERO).unwrap(), None);
    let queue = MessageQueue::open(&prefix, 1 << 20).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, whole);
    queue.write(Some(3), b"three").unwrap();
    assert_eq!(reader.read(Duration::ZERO).unwrap(), Some((3, b"three".to_vec())));
    drop(queue);
    // A byte of a message changed: its checksum fails, and the error says where.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[32 + 11] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = MessageQueueReader::new(&prefix, 0).read(Duration::ZERO).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.message().contains("offset 32 fails its checksum"), "{err}");
    assert!(MessageQueue::open(&prefix, 1 << 20).is_err());
}

#[test]
fn an_appending_hash_file_restores_to_any_past_end_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.tkh");
    let options = HashOptions::default().update_mode(UpdateMode::Appending).num_buckets(7);
    let db = HashDbm::open(&path, Access::ReadWrite, &options).unwrap();
    let mut model = BTreeMap::new();
    let mut moments = vec![(db.file_size().unwrap(), model.clone())];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(6);
    for i in 0..300 {
        let key = format!("k{}", rng.gen_range(0..30)).into_bytes();
        if rng.gen_range(0..4) == 0 {
            db.remove(&key).unwrap();
            model.remove(&key);
        } else {
            let value = format!("v{i}").into_bytes();
            db.set(&key, &value).unwrap();
            model.insert(key, value);
        }
        if i % 7 == 0 {
            // Hard synchronizations too: they must not rewrite the history.
            db.synchronize(if i % 14 == 0 { Durability::Hard } else { Durability::Soft }).unwrap();
            moments.push((db.file_size().unwrap(), model.clone()));
        }
    }
    db.close().unwrap();
    for (n, (end, state)) in moments.iter().enumerate() {
        let dest = dir.path().join(format!("at-{n}.tkh"));
        let kept = HashDbm::restore_to_offset(&path, &dest, &options, *end).unwrap();
        let restored = HashDbm::open(&dest, Access::ReadOnly, &options).unwrap();
        assert_eq!((kept, records(&restored)), (state.len() as u64, state.clone()), "at offset {end}");
    }
    // The plain restore takes everything.
    HashDbm::restore(&path, dir.path().join("all.tkh"), &options).unwrap();
    let all = HashDbm::open(dir.path().join("all.tkh"), Access::ReadOnly, &options).unwrap();
    assert_eq!(records(&all), model);
    // A file updated in place keeps no history to go back in.
    let in_place = dir.path().join("b.tkh");
    HashDbm::open(&in_place, Access::ReadWrite, &HashOptions::default()).unwrap().close().unwrap();
    let err = HashDbm::restore_to_offset(&in_place, dir.path().join("c.tkh"), &options, 100).unwrap_err();
    assert!(err.message().contains("not a hash database in appending mode"), "{err}");
}
