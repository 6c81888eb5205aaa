//! Rebuilding a hash database from its records alone, after a crash or for a
//! rebuild: the bucket array and chains of the old file are not trusted.
//!
//! A scan visits the record area from start to end. A record whose header
//! parses and whose checksum holds is a version of its key; anything else is
//! skipped one alignment unit at a time until a record parses again. Of the
//! versions of a key the one with the latest epoch wins, a live one before a
//! void one within an epoch (in a hash file in appending mode, whose records
//! are in time order, the last one), and if the winner is a removed record
//! the key stays removed.
//!
//! The nodes of a tree database are restored as of the last completed hard
//! synchronization instead, the epoch the header names (versions of later
//! epochs are left out): no version of an earlier epoch is overwritten,
//! marked void or reused before the header names the next epoch, so that
//! state is on disk whole.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::change::Change;
use super::dictionary::Dictionary;
use super::epoch_digest::{counted, record_hash, Digest};
use super::header::{self, Header, Kind};
use super::open::open_state;
use super::options::{HashOptions, RestoreMode, UpdateMode};
use super::record::{self, MAGIC_DICT, MAGIC_PAD};
use super::state::State;
use super::value::Codec;
use crate::dbm::Durability;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{temp_beside, File, OpenOptions};

/// Whether the keys a fill of [`copy_into`] puts are distinct, as in a walk
/// of a sound file's chains (each put then adds a record without walking
/// its new chain first), or may come again, the last one put standing.
#[derive(Clone, Copy)]
pub(super) enum Keys {
    Distinct,
    MayRepeat,
}

/// Writes a new database at `dest` with `options` (emptying any file there,
/// locked as `options.open` says), gives it the compression dictionary
/// `dict` (if compressed), fills it through the `put` callback that `fill`
/// is given and answers it open for writing, so that the caller may put it
/// in the place of another without letting go of its lock. The keys and
/// values `put` takes are callers', which the new file's codec encodes;
/// `keys` says whether they may repeat.
pub(super) fn copy_into(
    dest: &Path,
    options: &HashOptions,
    kind: Kind,
    dict: Option<Dictionary>,
    keys: Keys,
    fill: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()>,
) -> Result<State> {
    let mut o = options.clone();
    o.open.writable = true;
    o.open.create = true;
    o.open.truncate = true;
    // Emptied, the file gets a new header and bucket array.
    let state = open_state(dest, true, &o, kind)?;
    // An encrypted file keeps no dictionary (see `Codec::open`).
    if let Some(dict) = dict.filter(|_| state.codec.cipher.is_none()) {
        if let Err(e) = state.apply(Change::Dictionary(dict)) {
            let _ = state.close();
            return Err(e);
        }
    }
    let mut put = |key: &[u8], value: &[u8]| match keys {
        Keys::Distinct => state.put_new(key, value),
        Keys::MayRepeat => state.put_plain(key, value),
    };
    // The copy holds its new file alone: a sample it filled is trained now.
    match fill(&mut put).and_then(|()| state.train_untrained()) {
        Ok(()) => Ok(state),
        Err(e) => {
            let _ = state.close();
            Err(e)
        }
    }
}

/// Closes `built`, a database [`copy_into`] just wrote at a path nobody else
/// knows, and opens it again: the close cuts the file to its logical size,
/// giving back the room a memory-mapped file reserves ahead of its end, so
/// that a compaction leaves a compact file on the device, not only a compact
/// logical length. On failure the file is removed.
pub(super) fn reopened(built: State, options: &HashOptions, kind: Kind) -> Result<State> {
    let path = built.file.path().to_path_buf();
    let mut o = options.clone();
    o.open.writable = true;
    o.open.create = false;
    o.open.truncate = false;
    built.close().and_then(|()| open_state(&path, true, &o, kind)).inspect_err(|_| {
        let _ = std::fs::remove_file(&path);
    })
}

/// Puts `built`, a database just written beside `path`, in the place of the
/// file there, which the caller still holds open and locked: the new file is
/// durable, and locked by this process, before it takes the name, so no other
/// process can take the lock of the file at `path` in between, nor keep
/// working on the old one (an opener waiting for the old file's lock finds
/// the path renamed when it gets it, and tries the new one). The caller
/// closes the old file after; it has no name then, so nothing needs writing
/// to it and a failure there loses nothing. On failure the new file
/// is removed and the old one stays the database's.
pub(super) fn replace(path: &Path, built: State) -> Result<State> {
    let mut built = built;
    let temp = built.file.path().to_path_buf();
    match built.synchronize(Durability::Hard).and_then(|_| built.file.rename(path)) {
        Ok(()) => {
            // Until the directory is durable, a power cut could give the
            // name back to the old file, and lose what is written from now on.
            if let Err(e) = crate::sys::sync_parent_dir(path) {
                log::warn!(
                    "{}: the directory of the replaced file was not made durable: {e}",
                    path.display()
                );
            }
            Ok(built)
        }
        Err(e) => {
            let _ = built.close();
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// The latest version of a key seen so far.
struct Version {
    epoch: u32,
    offset: u64,
    live: bool,
}

/// Scans `src` and writes its surviving records into a new database at
/// `dest`, closed cleanly. Answers the number of records kept.
pub(super) fn restore(src: &Path, dest: &Path, options: &HashOptions, kind: Kind) -> Result<u64> {
    restore_until(src, dest, options, kind, None)
}

/// [`restore`] of the state the file held when it ended at `end_offset`
/// (if given: a hash file in appending mode only, whose records are its
/// history in file order); records that end past it are left out.
pub(super) fn restore_until(
    src: &Path,
    dest: &Path,
    options: &HashOptions,
    kind: Kind,
    end_offset: Option<u64>,
) -> Result<u64> {
    let (state, kept) = restore_open(src, dest, options, Some(kind), end_offset)?;
    state.close()?;
    log::info!("{} restored into {}: {kept} records kept", src.display(), dest.display());
    Ok(kept)
}

/// [`restore`], answering the new database open for writing; a file of
/// another kind than `kind` (if given) is refused.
fn restore_open(
    src: &Path,
    dest: &Path,
    options: &HashOptions,
    kind: Option<Kind>,
    end_offset: Option<u64>,
) -> Result<(State, u64)> {
    let file = options.file.open(src, &OpenOptions::reader().without_lock())?;
    let mut head = vec![0u8; header::SIZE.min(file.size() as usize)];
    file.read(0, &mut head)?;
    let header = Header::decode(&head, file.size(), src)?;
    if let Some(kind) = kind.filter(|&k| k != header.kind) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{} holds {}, not {}: restore it as one", src.display(), header.kind.name(), kind.name()),
        ));
    }
    if end_offset.is_some() && !(header.appending && header.kind == Kind::Hash) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is not a hash database in appending mode, which alone keeps the history a restore \
                 to an end offset needs",
                src.display()
            ),
        ));
    }
    let synced = options.restore == RestoreMode::Synchronized;
    if synced && header.kind == Kind::Hash && !header.appending {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is a hash database updated in place, which keeps no whole synchronized state: \
                 restore it without restore_mode sync",
                src.display()
            ),
        ));
    }
    // The key is checked before the scan: a wrong one fails at once.
    let codec = Codec::open(&header, options.cipher_key.as_ref(), None, src)?;
    let (versions, dict_at) = scan(file.as_ref(), &header, end_offset, synced)?;
    // The file's values are read with its own dictionary, which the new
    // file keeps: a damaged one is an error naming it, since without it no
    // value written with it can be read.
    let mut carried = None;
    if let (Some(c), Some(at)) = (&codec.compression, dict_at) {
        let (h, buf) = read_at(file.as_ref(), at, &header)?;
        let dict = Dictionary::from_record(&header, at, &h, &buf, src)?;
        carried = Some(dict.duplicate());
        c.set_dictionary(dict);
    }
    let mut o = options.clone();
    o.num_buckets = header.num_buckets.max(versions.len() as u64 * 2 + 1);
    o.offset_width = header.width;
    o.align_pow = header.align_pow;
    o.update_mode = if header.appending { UpdateMode::Appending } else { UpdateMode::InPlace };
    o.record_crc_mode = header.record_crc;
    o.record_comp_mode = header.record_comp;
    let mut kept = 0u64;
    let state = copy_into(dest, &o, header.kind, carried, Keys::MayRepeat, |put| {
        for (key, version) in &versions {
            if !version.live {
                continue;
            }
            let (h, buf) = read_at(file.as_ref(), version.offset, &header)?;
            // A key or value that fails authentication was changed on
            // purpose (its checksum holds): refused, as a read of it is, not
            // dropped.
            let in_src = |e: Error| Error::new(e.kind(), format!("{}: {}", src.display(), e.message()));
            let key = codec.open_key(version.offset, key).map_err(in_src)?;
            let value = codec.decode(version.offset, &h, &buf).map_err(in_src)?;
            put(&key, &value)?;
            kept += 1;
        }
        Ok(())
    })?;
    Ok((state, kept))
}

/// The state of a reader of `path`, a file not closed cleanly, which `origin`
/// holds open and locked: the database a restore makes of it, built into a
/// temporary file that is opened and at once removed (its space is freed at
/// close). The temporary file goes beside the database, or where the
/// directory cannot take it (a reader without write permission), into the
/// system's temporary directory.
pub(super) fn open_restored_view(
    path: &Path,
    options: &HashOptions,
    kind: Kind,
    origin: Box<dyn File>,
) -> Result<State> {
    static VIEWS: AtomicU64 = AtomicU64::new(0);
    let unique = format!("view-{}-{}", std::process::id(), VIEWS.fetch_add(1, Ordering::Relaxed));
    let beside = temp_beside(path, &unique);
    let mut o = options.clone();
    o.open = OpenOptions::reader();
    let build = |temp: &Path| -> Result<State> {
        let result = restore(path, temp, &o, kind).and_then(|_| open_state(temp, false, &o, kind));
        let _ = std::fs::remove_file(temp);
        result
    };
    // Where the directory refuses a new file, the system's temporary one.
    let temp = match std::fs::File::create(&beside) {
        Ok(_) => beside,
        Err(_) => std::env::temp_dir().join(beside.file_name().unwrap_or_default()),
    };
    log::info!(
        "{} was not closed cleanly: this reader sees it as a restore makes it (a writer's open restores it)",
        path.display()
    );
    let built = build(&temp);
    let mut state = built.map_err(|e| {
        Error::new(
            e.kind(),
            format!(
                "{} was not closed cleanly, and a reader sees it as restored, which failed: {e}",
                path.display()
            ),
        )
    })?;
    state.origin = Some(origin);
    state.healthy.store(false, Ordering::Release);
    Ok(state)
}

/// Restores the database at `path`, which `origin` holds open and locked for
/// writing, through a temporary file that then replaces it (see [`replace`]),
/// and answers the restored database open for writing.
pub(super) fn restore_in_place(path: &Path, options: &HashOptions, origin: Box<dyn File>) -> Result<State> {
    let temp = temp_beside(path, "restore");
    let mut o = options.clone();
    // Nobody else knows the temporary file: its lock is free, or something
    // is wrong that waiting would not mend.
    o.open.lock_wait = crate::file::LockWait::Fail;
    let restored = match restore_open(path, &temp, &o, None, None) {
        Ok((state, _)) => state,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
    };
    let restored = replace(path, restored)?;
    let mut origin = origin;
    let _ = origin.close();
    Ok(restored)
}

/// Reads the whole record at `offset` of `file`, whose header is `header`,
/// checking its checksum.
pub(super) fn read_at(file: &dyn File, offset: u64, header: &Header) -> Result<(record::Header, Vec<u8>)> {
    let (width, align_pow) = (header.width as usize, u32::from(header.align_pow));
    let avail = file.size().saturating_sub(offset);
    let mut buf = vec![0u8; (record::MAX_HEADER as u64).min(avail) as usize];
    file.read(offset, &mut buf)?;
    let h = record::parse_header(&buf, width, align_pow).map_err(|why| {
        Error::new(ErrorKind::BrokenData, format!("the record at offset {offset} is broken: {why}"))
    })?;
    if h.size > avail || h.size == 0 {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!("the record at offset {offset} runs past the end"),
        ));
    }
    let body = (h.header_size + h.key_size + h.value_size).max(buf.len());
    buf.resize(body, 0);
    file.read(offset, &mut buf)?;
    if !record::crc_matches(&h, &buf, width, header.coverage) {
        return Err(Error::new(
            ErrorKind::BrokenData,
            format!("the record at offset {offset} fails its checksum"),
        ));
    }
    Ok((h, buf))
}

/// A window of the file read in large pieces, so a scan makes one read per
/// megabyte rather than one per record (or, over garbage, per alignment unit).
struct Window<'a> {
    file: &'a dyn File,
    start: u64,
    buf: Vec<u8>,
}

impl Window<'_> {
    const SIZE: u64 = 1 << 20;

    /// The bytes from `offset`, at least `len` of them unless the file ends first.
    fn at(&mut self, offset: u64, len: usize) -> Result<&[u8]> {
        let end = self.file.size();
        let want_end = (offset + len as u64).min(end);
        if offset < self.start || want_end > self.start + self.buf.len() as u64 {
            let n = (end - offset).min(Self::SIZE.max(len as u64)) as usize;
            self.buf.resize(n, 0);
            self.file.read(offset, &mut self.buf)?;
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.buf[from..])
    }
}

/// The latest version of each key.
type Versions = HashMap<Vec<u8>, Version>;

/// The latest version of every key in the records of `file` that end by
/// `end_offset` (all if `None`), of the epochs up to the last completed hard
/// synchronization if `synced` (a tree's always are), and the offset of the
/// last dictionary record (a file has one at most, but a clear writes it
/// anew).
fn scan(
    file: &dyn File,
    header: &Header,
    end_offset: Option<u64>,
    synced: bool,
) -> Result<(Versions, Option<u64>)> {
    let align = 1u64 << header.align_pow;
    let end = end_offset.map_or(file.size(), |e| e.min(file.size()));
    // Going back to an end offset, the file is read as its history: a hash
    // file in appending mode appends every version and every removal, in
    // time order, and reuses no space. Of what ends by the offset, the last
    // record of a key wins. A void record with no value is a removal; one
    // with a value is a version that a later hard synchronization marked
    // void because it was replaced: at the offset, it was the value.
    // A hash file in appending mode goes back to its last synchronization
    // as it goes back to an end offset: its records of later epochs are a
    // suffix of the file, left out.
    let history = end_offset.is_some() || (synced && header.kind == Kind::Hash);
    let in_time_order = header.appending && header.kind == Kind::Hash;
    let mut versions: HashMap<Vec<u8>, Version> = HashMap::new();
    // A tree's nodes are consistent only as of a completed hard
    // synchronization: later versions are left out.
    let last_epoch = if header.kind == Kind::TreeNodes {
        last_whole_epoch(file, header, end)?
    } else if synced {
        header.synced_epoch
    } else {
        u32::MAX
    };
    let mut dict_at = None;
    each_record(file, header, end, |offset, h, buf| {
        let magic = buf[0];
        if magic == MAGIC_DICT {
            dict_at = Some(offset);
            return;
        }
        let key = &buf[h.header_size..h.header_size + h.key_size];
        if history {
            if magic != MAGIC_PAD && offset + h.size.max(align) <= end && h.epoch <= last_epoch {
                let live = h.live || h.value_size > 0;
                versions.insert(key.to_vec(), Version { epoch: h.epoch, offset, live });
            }
        } else if magic != MAGIC_PAD && h.epoch <= last_epoch {
            // In place, space is reused, so offsets say nothing of time: within
            // an epoch a live version beats a void one, since a completed hard
            // synchronization leaves every replaced version marked void, so of
            // a synchronized state only the current version looks live. A hash
            // file in appending mode reuses nothing: its records are in time
            // order, and the last one of a key is its state, a removal record
            // (void) included, synchronized hard or not.
            let newer = versions.get(key).is_none_or(|v| {
                if in_time_order {
                    (h.epoch, offset) >= (v.epoch, v.offset)
                } else {
                    (h.epoch, h.live, offset) >= (v.epoch, v.live, v.offset)
                }
            });
            if newer {
                versions.insert(key.to_vec(), Version { epoch: h.epoch, offset, live: h.live });
            }
        }
    })?;
    Ok((versions, dict_at))
}

/// Calls `f` with every record of `file` that ends by `end` whose header
/// parses and whose checksum holds (offset, header, its bytes), skipping
/// anything else one alignment unit at a time.
fn each_record(
    file: &dyn File,
    header: &Header,
    end: u64,
    mut f: impl FnMut(u64, &record::Header, &[u8]),
) -> Result<()> {
    let align = 1u64 << header.align_pow;
    let width = header.width as usize;
    let mut window = Window { file, start: 0, buf: Vec::new() };
    let mut offset = header.records_start;
    while offset < end {
        let head = window.at(offset, record::MAX_HEADER)?;
        let Ok(h) = record::parse_header(head, width, u32::from(header.align_pow)) else {
            offset += align;
            continue;
        };
        let body = h.header_size + h.key_size + h.value_size;
        if h.size == 0 || h.size > end - offset {
            offset += align;
            continue;
        }
        let buf = window.at(offset, body)?;
        if buf.len() < body || !record::crc_matches(&h, &buf[..body], width, header.coverage) {
            offset += align;
            continue;
        }
        f(offset, &h, &buf[..body]);
        offset += h.size.max(align);
    }
    Ok(())
}

/// The epoch a tree's node store is restored to: the one its header names
/// synchronized, or, in a file with epoch digests, the later one the header
/// names pending if every record of it is there as its digest says (see
/// `epoch_digest.rs`), or if a record of the epoch after it is there. The
/// pending epoch is the synchronized one's next, but in a copy made before
/// copies named their epoch right: its writer skipped one, of which the
/// file has no record. A record of the epoch after the pending one is
/// proof: a writer starts an epoch only once the device sync of the one
/// before has returned, so that one is whole whatever its digest says.
/// Going back past it then would be wrong, not merely cautious: the space
/// of the versions it replaced goes back to the pool once that sync has
/// returned, and the later records may have reused it. A digest that
/// disagrees there means the writer miscounted; the restore says so.
fn last_whole_epoch(file: &dyn File, header: &Header, end: u64) -> Result<u32> {
    let synced = header.synced_epoch;
    let Some((pending, digest)) = header.pending.filter(|&(p, _)| p > synced) else {
        return Ok(synced);
    };
    let next = pending.wrapping_add(1);
    let mut found = Digest::default();
    let mut next_begun = false;
    each_record(file, header, end, |offset, h, buf| {
        if buf[0] == MAGIC_PAD {
            return;
        }
        next_begun |= h.epoch == next;
        if h.epoch == pending && buf[0] != MAGIC_DICT && counted(h.live, h.value_size) {
            let key = &buf[h.header_size..h.header_size + h.key_size];
            found.add(record_hash(offset, key, &buf[h.header_size + h.key_size..]));
        }
    })?;
    if found == digest {
        return Ok(pending);
    }
    if next_begun {
        log::warn!(
            "{}: epoch {pending} was synchronized (records of epoch {next} follow it), but its records \
             disagree with the digest its header gives ({} records found, {} counted); restored to it",
            file.path().display(),
            found.count,
            digest.count
        );
        return Ok(pending);
    }
    Ok(synced)
}
