//! Merging sorted sources (the old file, spilled runs, the memory run) in
//! key order, into a [`Builder`] or into one sort file.

use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::run::MemoryRun;
use super::sort_file::{read_exact, read_varint, write_item};
use super::{Builder, READ_CHUNK};
use crate::dbm::skip::format::{Header, Window, HEADER_SIZE};
use crate::dbm::skip::reducer::{Group, Reducer};
use crate::error::{Error, Result};
use crate::file::File;

/// One sorted source of the merge, positioned on its current item.
enum Source<'a> {
    Old { file: &'a dyn File, header: &'a Header, window: Window, next: u64 },
    Spill { path: PathBuf, reader: BufReader<fs::File> },
    Memory { run: &'a MemoryRun, next: usize },
}

/// A source with its current item: the key and, for a record, the value.
struct Cursor<'a> {
    source: Source<'a>,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    done: bool,
}

impl Cursor<'_> {
    fn advance(&mut self) -> Result<()> {
        match &mut self.source {
            Source::Old { file, header, window, next } => {
                if *next >= header.records_end {
                    self.done = true;
                    return Ok(());
                }
                let record =
                    window.record(*file, header.records_end, *next, usize::from(header.width), true)?;
                self.key.clear();
                self.key.extend_from_slice(window.key(&record));
                let value = self.value.get_or_insert_with(Vec::new);
                value.clear();
                value.extend_from_slice(window.value(&record));
                *next = record.end();
            }
            Source::Spill { path, reader } => {
                let mut kind = [0u8; 1];
                match reader.read(&mut kind) {
                    Ok(0) => {
                        self.done = true;
                        return Ok(());
                    }
                    Ok(_) => {}
                    Err(e) => return Err(Error::io("reading a sort file", path, e)),
                }
                let key_len = read_varint(reader, path)?;
                let value_len = read_varint(reader, path)?;
                read_exact(reader, path, &mut self.key, key_len)?;
                if kind[0] == 1 {
                    read_exact(reader, path, self.value.get_or_insert_with(Vec::new), value_len)?;
                } else {
                    self.value = None;
                }
            }
            Source::Memory { run, next } => {
                let Some(op) = run.ops.get(*next) else {
                    self.done = true;
                    return Ok(());
                };
                *next += 1;
                self.key.clear();
                self.key.extend_from_slice(run.key(op));
                match run.value(op) {
                    Some(v) => {
                        let value = self.value.get_or_insert_with(Vec::new);
                        value.clear();
                        value.extend_from_slice(v);
                    }
                    None => self.value = None,
                }
            }
        }
        Ok(())
    }
}

/// Updates waiting for the next synchronization: spilled runs, oldest first,
/// then the memory run.
pub(crate) enum Run {
    Spill(PathBuf),
    Memory(MemoryRun),
}

/// The old file a merge starts from.
pub(crate) struct OldFile<'a> {
    pub file: &'a dyn File,
    pub header: &'a Header,
}

/// Merges the old file's records with `runs` (each sorted; later runs are
/// later updates) into `out`, applying removals and `reducer` key by key.
pub(crate) fn merge(
    old: Option<OldFile<'_>>,
    runs: &[Run],
    reducer: &Reducer,
    out: &mut Builder,
) -> Result<()> {
    let mut cursors = Vec::with_capacity(runs.len() + 1);
    if let Some(old) = old {
        let source = Source::Old {
            file: old.file,
            header: old.header,
            window: Window::new(READ_CHUNK),
            next: HEADER_SIZE,
        };
        cursors.push(Cursor { source, key: Vec::new(), value: None, done: false });
    }
    for run in runs {
        let source = match run {
            Run::Spill(path) => {
                let file = fs::File::open(path).map_err(|e| Error::io("opening a sort file", path, e))?;
                Source::Spill { path: path.clone(), reader: BufReader::with_capacity(1 << 18, file) }
            }
            Run::Memory(run) => Source::Memory { run, next: 0 },
        };
        cursors.push(Cursor { source, key: Vec::new(), value: None, done: false });
    }
    for cursor in &mut cursors {
        cursor.advance()?;
    }
    let mut group = Group::default();
    merge_sorted(&mut cursors, |key, item| match item {
        Item::Record(value) => {
            group.push(value);
            Ok(())
        }
        Item::Removal => {
            group.clear();
            Ok(())
        }
        Item::End => {
            reducer.reduce(key, &group, out)?;
            group.clear();
            Ok(())
        }
    })
}

/// What [`merge_sorted`] shows of a key.
enum Item<'a> {
    Record(&'a [u8]),
    Removal,
    /// Every item of the key was shown.
    End,
}

/// Shows the items of `cursors` in key order, each key's from the oldest
/// source to the newest, then the key's end.
fn merge_sorted(cursors: &mut [Cursor<'_>], mut f: impl FnMut(&[u8], Item<'_>) -> Result<()>) -> Result<()> {
    let mut key = Vec::new();
    while let Some(least) = cursors.iter().filter(|c| !c.done).map(|c| &c.key).min() {
        key.clear();
        key.extend_from_slice(least);
        for cursor in cursors.iter_mut() {
            while !cursor.done && cursor.key == key {
                match &cursor.value {
                    Some(value) => f(&key, Item::Record(value))?,
                    None => f(&key, Item::Removal)?,
                }
                cursor.advance()?;
            }
        }
        f(&key, Item::End)?;
    }
    Ok(())
}

/// Merges the oldest spilled runs into one, keeping their order, so that a
/// merge never holds more than a few files open.
pub(crate) fn combine_spills(paths: &[PathBuf], dest: &Path) -> Result<()> {
    let mut cursors = Vec::with_capacity(paths.len());
    for path in paths {
        let file = fs::File::open(path).map_err(|e| Error::io("opening a sort file", path, e))?;
        let source = Source::Spill { path: path.clone(), reader: BufReader::with_capacity(1 << 16, file) };
        let mut cursor = Cursor { source, key: Vec::new(), value: None, done: false };
        cursor.advance()?;
        cursors.push(cursor);
    }
    let file = fs::File::create(dest).map_err(|e| Error::io("creation of a sort file", dest, e))?;
    let mut out = BufWriter::with_capacity(1 << 18, file);
    let mut head = Vec::with_capacity(32);
    merge_sorted(&mut cursors, |key, item| {
        let value = match item {
            Item::End => return Ok(()),
            Item::Record(value) => Some(value),
            Item::Removal => None,
        };
        write_item(&mut out, &mut head, key, value, dest)
    })?;
    out.flush().map_err(|e| Error::io("writing a sort file", dest, e))
}
