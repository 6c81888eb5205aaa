//! The commit log: each commit's changes, written before the database is
//! touched, so that a crash at any point leaves every commit whole or absent.
//!
//! Each record holds one commit's final changes (a value to set or a key to
//! remove for every key it wrote, appends and increments already worked
//! out), so replaying a record is idempotent and replaying the log in order
//! over the database's last checkpoint gives the state the commits made.
//! A checkpoint (a hard synchronization of the database) empties the log by
//! moving it to a new generation: each record's checksum covers the
//! generation the header names, so records of earlier ones no longer read,
//! and the file keeps its blocks. The log is grown by writing zeros ahead of
//! the records, so that a commit's sync has only data to make durable, not
//! the file system's record of newly allocated blocks, which costs a journal
//! commit each time. Committers that ask for the device share one sync:
//! whoever finds none running starts one covering everything written so
//! far, and the others wait for it (group commit). The format is in
//! docs/format.md.

use std::fmt;
use std::str::FromStr;

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, ErrorKind, Result};
use crate::file::{Durability, File};

/// How durable a commit is when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CommitDurability {
    /// Applied and atomic; its log record stays in the process until a
    /// later commit, a checkpoint or a full buffer writes it, so a crash may
    /// lose the commit (whole). On a database whose restore keeps records
    /// written since its last hard synchronization (the hash classes), the
    /// record is written to the OS at once instead, as [`CommitDurability::Os`]
    /// does: that restore could otherwise keep a part of a lost commit.
    Memory,
    /// Its log record is written to the operating system: it survives the
    /// process's crash, not a power cut.
    #[default]
    Os,
    /// Its log record is on the device: it survives a power cut.
    /// Concurrent committers share one device sync.
    Sync,
}

impl CommitDurability {
    /// The name the bindings and parameters use: `none`, `os` or `sync`.
    pub fn name(self) -> &'static str {
        match self {
            CommitDurability::Memory => "none",
            CommitDurability::Os => "os",
            CommitDurability::Sync => "sync",
        }
    }
}

impl fmt::Display for CommitDurability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CommitDurability {
    type Err = Error;

    /// Reads `none` (or `memory`), `os` or `sync`.
    fn from_str(s: &str) -> Result<CommitDurability> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "memory" => Ok(CommitDurability::Memory),
            "os" => Ok(CommitDurability::Os),
            "sync" | "device" => Ok(CommitDurability::Sync),
            _ => Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("unknown durability {s:?}: expected \"none\", \"os\" or \"sync\""),
            )),
        }
    }
}

/// One final change of a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    Set(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
}

/// A commit read back from the log: its sequence number and changes.
pub(super) type LoggedCommit = (u64, Vec<Change>);

impl Change {
    pub fn key(&self) -> &[u8] {
        match self {
            Change::Set(k, _) | Change::Remove(k) => k,
        }
    }

    /// The value the key is left with (`None`: removed).
    pub fn value(&self) -> Option<&[u8]> {
        match self {
            Change::Set(_, v) => Some(v),
            Change::Remove(_) => None,
        }
    }

    /// What a processor returns to make the change.
    pub fn action(&self) -> crate::dbm::Action<'_> {
        match self {
            Change::Set(_, v) => crate::dbm::Action::set(v),
            Change::Remove(_) => crate::dbm::Action::Remove,
        }
    }
}

/// The first bytes of a commit log.
const MAGIC: &[u8; 8] = b"KURATXL\n";
/// The format version the header carries.
const VERSION: u32 = 1;
/// The header: magic, version, generation.
pub(super) const HEADER_SIZE: u64 = 16;
/// The least the log grows by when records reach the end of its zeros.
const GROWTH: u64 = 1 << 20;
/// A record's frame: body length and its CRC-32.
const FRAME: usize = 8;
/// The most a memory-only commit's records wait in the process for.
const BUFFER_LIMIT: usize = 1 << 20;

struct Written {
    /// Bytes of records handed to the OS.
    end: u64,
    /// Bytes of the file that exist (records or zeros written ahead).
    prepared: u64,
    /// The generation records are written in.
    generation: u32,
    /// Records of memory-only commits not yet written.
    buffer: Vec<u8>,
}

struct Synced {
    /// Bytes the device holds.
    upto: u64,
    /// Whether a committer is syncing now.
    running: bool,
    /// An error of the last sync, answered to everyone who waited on it.
    failed: Option<(ErrorKind, String)>,
}

/// An open commit log.
pub(super) struct CommitLog {
    file: Box<dyn File>,
    written: Mutex<Written>,
    synced: Mutex<Synced>,
    done: Condvar,
    /// Whether memory-only commits may wait in the process (see
    /// [`CommitDurability::Memory`]).
    buffers_memory: bool,
}

impl CommitLog {
    /// Takes `file` as the log, reading the commits it holds (in order; a
    /// torn record at the end and what follows it are left out) and writing
    /// a header if it is empty.
    pub fn open(file: Box<dyn File>, buffers_memory: bool) -> Result<(CommitLog, Vec<LoggedCommit>)> {
        let size = file.size();
        let mut commits = Vec::new();
        let mut generation = 0;
        if size == 0 {
            if file.is_writable() {
                file.write(0, &header(generation))?;
            }
        } else {
            let mut data = vec![0u8; size as usize];
            file.read(0, &mut data)?;
            generation = check_header(&data, file.path())?;
            commits = decode_records(&data[HEADER_SIZE as usize..], generation);
        }
        // The owner replays what was read and then resets the log, which
        // moves it to the next generation.
        let end = file.size();
        let log = CommitLog {
            file,
            written: Mutex::new(Written { end, prepared: end, generation, buffer: Vec::new() }),
            synced: Mutex::new(Synced { upto: end, running: false, failed: None }),
            done: Condvar::new(),
            buffers_memory,
        };
        Ok((log, commits))
    }

    /// The log's path.
    pub fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    /// Adds a commit's record. The caller holds the commit lock, so records
    /// go in commit order. Answers the end of the record in the file, for
    /// [`CommitLog::sync_through`] (0 when the record waits in the buffer).
    pub fn add(&self, seq: u64, changes: &[Change], durability: CommitDurability) -> Result<u64> {
        let mut written = self.written.lock();
        let start = written.buffer.len();
        let generation = written.generation;
        encode_record(&mut written.buffer, generation, seq, changes);
        if durability == CommitDurability::Memory
            && self.buffers_memory
            && written.buffer.len() < BUFFER_LIMIT
        {
            return Ok(0);
        }
        if let Err(e) = self.write_buffer(&mut written) {
            // This commit will not be applied: its record must not be
            // written later with the others'.
            written.buffer.truncate(start);
            return Err(e);
        }
        Ok(written.end)
    }

    fn write_buffer(&self, written: &mut Written) -> Result<()> {
        if written.buffer.is_empty() {
            return Ok(());
        }
        let at = written.end;
        let needed = at + written.buffer.len() as u64;
        if needed > written.prepared {
            let target = needed.max(written.prepared + GROWTH.max(written.prepared));
            self.write_zeros(written.prepared, target)?;
            written.prepared = target;
        }
        // A failed write leaves at most a torn record, which ends the log
        // when read; the next record is written over it.
        self.file.write(at, &written.buffer)?;
        written.end = at + written.buffer.len() as u64;
        written.buffer.clear();
        Ok(())
    }

    fn write_zeros(&self, from: u64, to: u64) -> Result<()> {
        let zeros = vec![0u8; GROWTH as usize];
        let mut at = from;
        while at < to {
            let n = (to - at).min(GROWTH);
            self.file.write(at, &zeros[..n as usize])?;
            at += n;
        }
        Ok(())
    }

    /// Writes the buffered records to the OS.
    pub fn flush(&self) -> Result<()> {
        let mut written = self.written.lock();
        self.write_buffer(&mut written)
    }

    /// Waits until the device holds the log up to `end`, syncing it unless
    /// another committer's sync running now or next covers it.
    pub fn sync_through(&self, end: u64) -> Result<()> {
        let mut synced = self.synced.lock();
        loop {
            if synced.upto >= end {
                return Ok(());
            }
            if !synced.running {
                break;
            }
            self.done.wait(&mut synced);
            if let Some((kind, message)) = &synced.failed {
                if synced.upto < end {
                    return Err(Error::new(*kind, format!("the commit log's sync failed: {message}")));
                }
            }
        }
        synced.running = true;
        synced.failed = None;
        drop(synced);
        // Everything written by now is covered, whoever wrote it.
        let target = self.written.lock().end;
        let result = self.file.synchronize(Durability::Hard);
        let mut synced = self.synced.lock();
        synced.running = false;
        match &result {
            Ok(()) => synced.upto = synced.upto.max(target),
            Err(e) => synced.failed = Some((e.kind(), e.to_string())),
        }
        self.done.notify_all();
        result
    }

    /// Empties the log after a checkpoint made every commit in it durable in
    /// the database. The caller holds the commit lock.
    pub fn reset(&self) -> Result<()> {
        let mut written = self.written.lock();
        written.buffer.clear();
        let generation = written.generation.wrapping_add(1);
        self.file.write(0, &header(generation))?;
        self.file.synchronize(Durability::Hard)?;
        written.generation = generation;
        written.end = HEADER_SIZE;
        let mut synced = self.synced.lock();
        synced.upto = HEADER_SIZE;
        Ok(())
    }

    /// The bytes the log holds, buffered ones included.
    pub fn len(&self) -> u64 {
        let written = self.written.lock();
        written.end + written.buffer.len() as u64
    }

    /// Closes the log's file.
    pub fn close(mut self) -> Result<()> {
        self.file.close()
    }
}

fn header(generation: u32) -> [u8; HEADER_SIZE as usize] {
    let mut header = [0u8; HEADER_SIZE as usize];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&generation.to_le_bytes());
    header
}

/// Checks the header and answers the generation it names.
fn check_header(data: &[u8], path: &std::path::Path) -> Result<u32> {
    let broken = |what: &str| {
        Error::new(ErrorKind::BrokenData, format!("{}: not a kuradb commit log: {what}", path.display()))
    };
    if data.len() < HEADER_SIZE as usize || &data[..8] != MAGIC {
        return Err(broken("its first bytes are not the commit log's magic"));
    }
    let version = u32::from_le_bytes(data[8..12].try_into().expect("four bytes"));
    if version != VERSION {
        return Err(broken(&format!("format version {version}, this build reads {VERSION}")));
    }
    Ok(u32::from_le_bytes(data[12..16].try_into().expect("four bytes")))
}

/// A record's checksum: of its generation and its body.
fn checksum(generation: u32, body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&generation.to_le_bytes());
    hasher.update(body);
    hasher.finalize()
}

fn encode_record(out: &mut Vec<u8>, generation: u32, seq: u64, changes: &[Change]) {
    let start = out.len();
    out.extend_from_slice(&[0u8; FRAME]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(changes.len() as u32).to_le_bytes());
    for change in changes {
        match change {
            Change::Set(key, value) => {
                out.push(1);
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.extend_from_slice(&(value.len() as u32).to_le_bytes());
                out.extend_from_slice(value);
            }
            Change::Remove(key) => {
                out.push(0);
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
            }
        }
    }
    let body_len = (out.len() - start - FRAME) as u32;
    let crc = checksum(generation, &out[start + FRAME..]);
    out[start..start + 4].copy_from_slice(&body_len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Reads the records of `generation` after the header, stopping at the
/// first that is torn (short, or failing its checksum), of another
/// generation, or does not parse.
fn decode_records(mut data: &[u8], generation: u32) -> Vec<LoggedCommit> {
    let mut commits = Vec::new();
    while data.len() >= FRAME {
        let len = u32::from_le_bytes(data[..4].try_into().expect("four bytes")) as usize;
        let crc = u32::from_le_bytes(data[4..8].try_into().expect("four bytes"));
        let Some(body) = data.get(FRAME..FRAME + len) else { break };
        if len < 12 || checksum(generation, body) != crc {
            break;
        }
        let Some(commit) = decode_body(body) else { break };
        commits.push(commit);
        data = &data[FRAME + len..];
    }
    commits
}

fn decode_body(body: &[u8]) -> Option<LoggedCommit> {
    let mut r = Reader(body);
    let seq = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
    let count = u32::from_le_bytes(r.take(4)?.try_into().ok()?);
    let mut changes = Vec::new();
    for _ in 0..count {
        let tag = r.take(1)?[0];
        let key = r.sized()?.to_vec();
        changes.push(match tag {
            0 => Change::Remove(key),
            1 => Change::Set(key, r.sized()?.to_vec()),
            _ => return None,
        });
    }
    r.0.is_empty().then_some((seq, changes))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn sized(&mut self) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_tail_is_left_out() {
        let commits = vec![
            (1, vec![Change::Set(b"a".to_vec(), b"1".to_vec()), Change::Remove(b"b".to_vec())]),
            (2, vec![Change::Set(b"".to_vec(), b"".to_vec())]),
        ];
        let mut data = Vec::new();
        for (seq, changes) in &commits {
            encode_record(&mut data, 7, *seq, changes);
        }
        assert_eq!(decode_records(&data, 7), commits);
        assert_eq!(decode_records(&data, 8), vec![], "records of an earlier generation do not read");
        for cut in 0..data.len() {
            let got = decode_records(&data[..cut], 7);
            assert!(got.len() < 2 && got.iter().zip(&commits).all(|(a, b)| a == b), "cut at {cut}");
        }
        let mut flipped = data.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(decode_records(&flipped, 7), commits[..1]);
        // The zeros written ahead of the records are no record.
        data.extend_from_slice(&[0; 64]);
        assert_eq!(decode_records(&data, 7), commits);
    }

    #[test]
    fn durability_names_parse_and_unknown_ones_are_refused() {
        for d in [CommitDurability::Memory, CommitDurability::Os, CommitDurability::Sync] {
            assert_eq!(d.name().parse::<CommitDurability>().unwrap(), d);
        }
        let e = "fsync".parse::<CommitDurability>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("fsync"), "{e}");
    }
}
