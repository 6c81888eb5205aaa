//! Every index against a model: random adds, removes, checks, value
//! lookups and cursor walks on [`FileIndex`] (with reopens), [`MemIndex`]
//! and [`StdIndex`], checked against a `BTreeSet` of pairs. Keys and values
//! come from a small alphabet of troublesome byte strings: empty, bytes that
//! look like a pair's sizes (0x00, 0x01, 0x80, 0xff), one that is a prefix
//! of another, and a long one whose size takes two bytes.

use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use kuradb::dbm::tree::TreeOptions;
use kuradb::dbm::Access;
use kuradb::index::{FileIndex, Index, IndexCursor, MemIndex, StdIndex};
use kuradb::KeyComparator;

type Pair = (Vec<u8>, Vec<u8>);
type Model = BTreeSet<Pair>;

fn alphabet() -> Vec<Vec<u8>> {
    vec![
        b"".to_vec(),
        vec![0],
        vec![1, b'a'],
        b"a".to_vec(),
        b"a\x00".to_vec(),
        b"ab".to_vec(),
        vec![0x80, 0xff],
        vec![0x01; 3],
        vec![b'z'; 300],
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Add(usize, usize),
    Remove(usize, usize),
    Check(usize, usize),
    Values(usize, usize),
    /// Jump to (key, value or none) and walk `n` steps forward.
    Forward(usize, Option<usize>, usize),
    /// From the last pair, walk `n` steps back.
    Backward(usize),
    Clear,
    /// Close and reopen (the file index only; the others skip it).
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let n = alphabet().len();
    prop_oneof![
        8 => (0..n, 0..n).prop_map(|(k, v)| Op::Add(k, v)),
        3 => (0..n, 0..n).prop_map(|(k, v)| Op::Remove(k, v)),
        3 => (0..n, 0..n).prop_map(|(k, v)| Op::Check(k, v)),
        3 => (0..n, 0..4usize).prop_map(|(k, m)| Op::Values(k, m)),
        2 => (0..n, proptest::option::of(0..n), 0..12usize).prop_map(|(k, v, s)| Op::Forward(k, v, s)),
        1 => (0..12usize).prop_map(Op::Backward),
        1 => Just(Op::Clear),
        1 => Just(Op::Reopen),
    ]
}

/// Runs `ops` on `index` and the model; `reopen` gives a fresh handle on
/// the same pairs (or the same one, where there is no file).
fn run<I>(mut index: I, ops: &[Op], mut reopen: impl FnMut(I) -> I) -> Result<(), TestCaseError>
where
    I: Index<Key = [u8], Value = [u8]>,
{
    let a = alphabet();
    let mut model = Model::new();
    for op in ops {
        match *op {
            Op::Add(k, v) => {
                index.add(&a[k], &a[v]).unwrap();
                model.insert((a[k].clone(), a[v].clone()));
            }
            Op::Remove(k, v) => {
                let was = model.remove(&(a[k].clone(), a[v].clone()));
                prop_assert_eq!(index.remove(&a[k], &a[v]).unwrap(), was, "{:?}", op);
            }
            Op::Check(k, v) => {
                let is = model.contains(&(a[k].clone(), a[v].clone()));
                prop_assert_eq!(index.check(&a[k], &a[v]).unwrap(), is, "{:?}", op);
            }
            Op::Values(k, max) => {
                let all = model.iter().filter(|(mk, _)| *mk == a[k]).map(|(_, v)| v.clone());
                let expected: Vec<Vec<u8>> = all.take(if max == 0 { usize::MAX } else { max }).collect();
                prop_assert_eq!(index.get_values(&a[k], max).unwrap(), expected, "{:?}", op);
            }
            Op::Forward(k, v, steps) => {
                let from = (a[k].clone(), v.map_or(Vec::new(), |v| a[v].clone()));
                let expected: Vec<Pair> = model.range(from..).take(steps).cloned().collect();
                let mut cursor = index.cursor().unwrap();
                cursor.jump(&a[k], v.map(|v| a[v].as_slice())).unwrap();
                prop_assert_eq!(walk(cursor.as_mut(), steps, true), expected, "{:?}", op);
            }
            Op::Backward(steps) => {
                let expected: Vec<Pair> = model.iter().rev().take(steps).cloned().collect();
                let mut cursor = index.cursor().unwrap();
                cursor.last().unwrap();
                prop_assert_eq!(walk(cursor.as_mut(), steps, false), expected, "{:?}", op);
            }
            Op::Clear => {
                index.clear().unwrap();
                model.clear();
            }
            Op::Reopen => index = reopen(index),
        }
        prop_assert_eq!(index.count().unwrap(), model.len() as u64);
    }
    let mut cursor = index.cursor().unwrap();
    cursor.first().unwrap();
    prop_assert_eq!(walk(cursor.as_mut(), usize::MAX, true), model.into_iter().collect::<Vec<_>>());
    Ok(())
}

/// Up to `steps` pairs from the cursor's position, forward or back.
fn walk(cursor: &mut dyn IndexCursor<[u8], [u8]>, steps: usize, forward: bool) -> Vec<Pair> {
    let mut seen = Vec::new();
    while seen.len() < steps {
        let Some(pair) = cursor.get().unwrap() else { break };
        seen.push(pair);
        if forward {
            cursor.next().unwrap();
        } else {
            cursor.previous().unwrap();
        }
    }
    seen
}

fn runner() -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(48);
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

/// Small pages and few branches, so that a few dozen pairs split the tree.
fn small_tree() -> TreeOptions {
    TreeOptions::default().comparator(KeyComparator::PairLexical).max_page_size(96).max_branches(3)
}

fn open_file(path: &Path) -> FileIndex {
    FileIndex::open_with(path, Access::ReadWrite, &small_tree()).unwrap()
}

#[test]
fn file_index_follows_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let cases = std::sync::atomic::AtomicUsize::new(0);
    runner()
        .run(&prop::collection::vec(op(), 1..80), |ops| {
            let n = cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.path().join(format!("{n}.kti"));
            run(open_file(&path), &ops, |index| {
                index.close().unwrap();
                open_file(&path)
            })
        })
        .unwrap();
}

#[test]
fn mem_index_follows_the_model() {
    runner()
        .run(&prop::collection::vec(op(), 1..80), |ops| run(MemIndex::new().unwrap(), &ops, |same| same))
        .unwrap();
}

/// StdIndex of byte vectors: the trait's methods take `Vec<u8>`, so this
/// adapter gives it the byte-slice face the shared run expects.
struct StdBytes(StdIndex<Vec<u8>, Vec<u8>>);

impl Index for StdBytes {
    type Key = [u8];
    type Value = [u8];

    fn add(&self, key: &[u8], value: &[u8]) -> kuradb::Result<()> {
        self.0.add(&key.to_vec(), &value.to_vec())
    }
    fn remove(&self, key: &[u8], value: &[u8]) -> kuradb::Result<bool> {
        self.0.remove(&key.to_vec(), &value.to_vec())
    }
    fn check(&self, key: &[u8], value: &[u8]) -> kuradb::Result<bool> {
        self.0.check(&key.to_vec(), &value.to_vec())
    }
    fn get_values(&self, key: &[u8], max: usize) -> kuradb::Result<Vec<Vec<u8>>> {
        self.0.get_values(&key.to_vec(), max)
    }
    fn count(&self) -> kuradb::Result<u64> {
        self.0.count()
    }
    fn clear(&self) -> kuradb::Result<()> {
        self.0.clear()
    }
    fn cursor(&self) -> kuradb::Result<Box<dyn IndexCursor<[u8], [u8]> + '_>> {
        Ok(Box::new(StdBytesCursor(self.0.cursor()?)))
    }
}

struct StdBytesCursor<'a>(Box<dyn IndexCursor<Vec<u8>, Vec<u8>> + 'a>);

impl IndexCursor<[u8], [u8]> for StdBytesCursor<'_> {
    fn first(&mut self) -> kuradb::Result<()> {
        self.0.first()
    }
    fn last(&mut self) -> kuradb::Result<()> {
        self.0.last()
    }
    fn jump(&mut self, key: &[u8], value: Option<&[u8]>) -> kuradb::Result<()> {
        self.0.jump(&key.to_vec(), value.map(<[u8]>::to_vec).as_ref())
    }
    fn next(&mut self) -> kuradb::Result<()> {
        self.0.next()
    }
    fn previous(&mut self) -> kuradb::Result<()> {
        self.0.previous()
    }
    fn get(&mut self) -> kuradb::Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.0.get()
    }
}

#[test]
fn std_index_follows_the_model() {
    runner()
        .run(&prop::collection::vec(op(), 1..80), |ops| run(StdBytes(StdIndex::new()), &ops, |same| same))
        .unwrap();
}
