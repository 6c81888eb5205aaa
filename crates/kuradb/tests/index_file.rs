//! FileIndex as a file: its pairs survive a reopen, threads add to it
//! together, numeric pair orders keep a key's values together, and files
//! or parameters that are no index's are refused by name.

use std::sync::Arc;

use kuradb::dbm::tree::{TreeDbm, TreeOptions};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::index::{FileIndex, Index, MemIndex, StdIndex};
use kuradb::{ErrorKind, KeyComparator, Params};

#[test]
fn pairs_survive_a_reopen_and_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("city.kti");
    let index =
        FileIndex::open(&path, Access::ReadWrite, &Params::parse("max_page_size=128").unwrap()).unwrap();
    for i in 0..500u32 {
        index.add(format!("k{}", i % 7).as_bytes(), format!("{i:05}").as_bytes()).unwrap();
    }
    index.remove(b"k3", b"00003").unwrap();
    index.synchronize(Durability::Soft).unwrap();
    index.close().unwrap();

    let index = FileIndex::open(&path, Access::ReadWrite, &Params::new()).unwrap();
    assert_eq!(index.comparator(), KeyComparator::PairLexical);
    assert_eq!(index.count().unwrap(), 499);
    let values = index.get_values(b"k3", 0).unwrap();
    assert_eq!(values.len(), 70, "71 added, 00003 removed");
    assert_eq!(values[0], b"00010");
    index.rebuild().unwrap();
    assert_eq!(index.get_values(b"k3", 2).unwrap(), [b"00010".to_vec(), b"00017".to_vec()]);
    assert!(index.is_writable());
    index.close().unwrap();

    let reader = FileIndex::open(&path, Access::ReadOnly, &Params::new()).unwrap();
    assert!(!reader.is_writable());
    assert!(reader.check(b"k0", b"00000").unwrap());
    assert!(reader.add(b"k0", b"x").is_err());
}

#[test]
fn threads_add_together_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file =
        Arc::new(FileIndex::open(dir.path().join("t.kti"), Access::ReadWrite, &Params::new()).unwrap());
    let mem = Arc::new(MemIndex::new().unwrap());
    let typed = Arc::new(StdIndex::<u32, u32>::new());
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let (file, mem, typed) = (Arc::clone(&file), Arc::clone(&mem), Arc::clone(&typed));
            std::thread::spawn(move || {
                for i in 0..2000u32 {
                    let (key, value) = (format!("{}", i % 50), format!("{t}-{i}"));
                    file.add(key.as_bytes(), value.as_bytes()).unwrap();
                    mem.add(key.as_bytes(), value.as_bytes()).unwrap();
                    typed.add(&(i % 50), &(t * 10_000 + i)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(file.count().unwrap(), 8000);
    assert_eq!(mem.count().unwrap(), 8000);
    assert_eq!(typed.count().unwrap(), 8000);
    assert_eq!(file.get_values(b"7", 0).unwrap().len(), 160);
    assert_eq!(mem.get_values(b"7", 0).unwrap(), file.get_values(b"7", 0).unwrap());
    assert_eq!(typed.get_values(&7, 0).unwrap().len(), 160);
}

#[test]
fn numeric_pair_orders_keep_keys_equal_as_numbers_apart() {
    let dir = tempfile::tempdir().unwrap();
    let params = Params::parse("key_comparator=PairDecimalKeyComparator").unwrap();
    let index = FileIndex::open(dir.path().join("n.kti"), Access::ReadWrite, &params).unwrap();
    for (k, v) in [("10", "a"), ("9", "b"), ("01", "c"), ("1", "d"), ("1", "a"), ("-3", "e")] {
        index.add(k.as_bytes(), v.as_bytes()).unwrap();
    }
    assert_eq!(index.get_values(b"1", 0).unwrap(), [b"a".to_vec(), b"d".to_vec()]);
    assert_eq!(index.get_values(b"01", 0).unwrap(), [b"c".to_vec()]);
    let mut cursor = index.cursor().unwrap();
    cursor.first().unwrap();
    let mut keys = Vec::new();
    while let Some((k, _)) = cursor.get().unwrap() {
        keys.push(String::from_utf8(k).unwrap());
        cursor.next().unwrap();
    }
    assert_eq!(keys, ["-3", "01", "1", "1", "9", "10"]);
}

#[test]
fn what_is_no_index_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.kt");
    TreeDbm::open(&plain, Access::ReadWrite, &TreeOptions::default()).unwrap().close().unwrap();
    let err = FileIndex::open(&plain, Access::ReadWrite, &Params::new()).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("not an index") && err.to_string().contains("lexical"), "{err}");

    let params = Params::parse("key_comparator=DecimalKeyComparator").unwrap();
    let err = FileIndex::open(dir.path().join("x.kti"), Access::ReadWrite, &params).err().unwrap();
    assert!(err.to_string().contains("pair comparator"), "{err}");
    let err =
        FileIndex::open(dir.path().join("y.kti"), Access::ReadWrite, &Params::parse("bogus=1").unwrap())
            .err()
            .unwrap();
    assert!(err.to_string().contains("bogus"), "{err}");
    assert!(MemIndex::with_comparator(KeyComparator::Real).is_err());

    // A record that is no pair, written into an index's file by other means.
    let path = dir.path().join("z.kti");
    FileIndex::open(&path, Access::ReadWrite, &Params::new()).unwrap().close().unwrap();
    let options = TreeOptions::default().comparator(KeyComparator::PairLexical);
    let tree = TreeDbm::open(&path, Access::ReadWrite, &options).unwrap();
    tree.set(b"\x05ab", b"").unwrap();
    tree.close().unwrap();
    let index = FileIndex::open(&path, Access::ReadWrite, &Params::new()).unwrap();
    let err = index.get_values(b"", 0).err().unwrap();
    assert_eq!(err.kind(), ErrorKind::BrokenData);
    assert!(err.to_string().contains("not a (key, value) pair"), "{err}");
}
