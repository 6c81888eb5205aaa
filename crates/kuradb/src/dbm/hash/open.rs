//! Opening a hash database: checking the options, creating a new file,
//! reading the header of an existing one (restoring a file not closed
//! cleanly first) and building the state from it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};

use parking_lot::{Mutex, RwLock};

use super::cipher::Cipher;
use super::dictionary::Dictionary;
use super::free_pool::FreePool;
use super::header::{self, Header, Kind};
use super::options::{HashOptions, RestoreMode, UpdateMode};
use super::record::{Coverage, MAX_HEADER};
use super::restore;
use super::state::{next_serial, State, SLOT_LOCKS};
use super::value::Codec;
use crate::dbm::Durability;
use crate::error::{Error, ErrorKind, Result};
use crate::file::File;

pub(super) fn check_options(o: &HashOptions) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if !(3..=8).contains(&o.offset_width) {
        return bad(format!("offset_width must be 3 to 8, not {}", o.offset_width));
    }
    if o.align_pow > 16 {
        return bad(format!("align_pow must be at most 16, not {}", o.align_pow));
    }
    if o.num_buckets == 0 || o.num_buckets > 1 << 40 {
        return bad(format!("num_buckets must be 1 to 2^40, not {}", o.num_buckets));
    }
    o.file.validate()
}

pub(super) fn open_state(path: &Path, writable: bool, o: &HashOptions, kind: Kind) -> Result<State> {
    let mut open = o.open.clone();
    open.writable = writable;
    let file = o.open_file(path, &open)?;
    let mut made = None;
    if file.size() == 0 {
        if !writable {
            return Err(Error::new(
                ErrorKind::BrokenData,
                format!("{} is empty: not a database", path.display()),
            ));
        }
        made = create(file.as_ref(), o, kind)?;
    }
    let mut head = vec![0u8; header::SIZE.min(file.size() as usize)];
    file.read(0, &mut head)?;
    let header = Header::decode(&head, file.size(), path)?;
    if header.kind != kind {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{} holds {}, not {}: open it as one", path.display(), header.kind.name(), kind.name()),
        ));
    }
    // Every record kuradb writes fills whole alignment units, so a file's
    // records end aligned; a file that ends elsewhere was cut or damaged,
    // and a writer would append its next record where no chain can address
    // it: a writer restores it first, as a crashed file. A reader reads it
    // as it is, and a record the cut reached is a broken-data error.
    if o.restore == RestoreMode::Synchronized && kind == Kind::Hash && !header.appending {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is a hash database updated in place: restore_mode sync cannot be kept for it, since \
                 updating in place overwrites and voids the versions of its last synchronized state; \
                 create it with update_mode=appending, or use a tree database, whose restore always \
                 goes back to its last hard synchronization",
                path.display()
            ),
        ));
    }
    let align = 1u64 << header.align_pow;
    let cut = file.size() < header.records_start || (file.size() - header.records_start) % align != 0;
    if header.open_for_writing && !writable && !open.no_lock {
        // A reader sees what the next writer's restore will make of the
        // file, never the half-written chains the crash left.
        return restore::open_restored_view(path, o, kind, file);
    }
    if (header.open_for_writing || cut) && writable {
        let why = if header.open_for_writing {
            "was not closed cleanly".to_string()
        } else {
            format!("ends at offset {}, inside a record (cut or damaged)", file.size())
        };
        match o.restore {
            RestoreMode::Refuse => {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!("{} {why}: restore it first", path.display()),
                ));
            }
            // The file is left as it is; the handle holds its lock.
            RestoreMode::ReadOnly => {
                log::warn!("{} {why}: opening it for reading only, as restore_mode says", path.display());
                return restore::open_restored_view(path, o, kind, file);
            }
            // The file stays locked until the restored one, locked too,
            // has taken its place.
            RestoreMode::Automatic | RestoreMode::Synchronized => {
                log::warn!("{} {why}: restoring it before opening it for writing", path.display());
                let restored = restore::restore_in_place(path, o, file)?;
                log::info!(
                    "{} restored: {} records kept",
                    path.display(),
                    restored.count.load(std::sync::atomic::Ordering::Acquire)
                );
                return Ok(restored);
            }
        }
    }
    let codec = Codec::open(&header, o.cipher_key.as_ref(), made, path)?;
    if let Some(c) = &codec.compression {
        if header.dict_offset != 0 {
            // A file that takes no dictionary pointing at one is damaged.
            let dict = load_dictionary(file.as_ref(), &header, path)?;
            if !c.set_dictionary(dict) {
                return Err(Error::new(
                    ErrorKind::BrokenData,
                    format!(
                        "{} is broken: its header points at a compression dictionary, which a file of \
                         format version {} in mode {} cannot have",
                        path.display(),
                        if header.presets { 3 } else { 2 },
                        c.mode
                    ),
                ));
            }
        }
    }
    let state = State {
        origin: None,
        writable,
        appending: header.appending,
        width: header.width as usize,
        align_pow: u32::from(header.align_pow),
        num_buckets: header.num_buckets,
        records_start: header.records_start,
        epoch: AtomicU32::new(header.epoch.wrapping_add(1)),
        synced_epoch: AtomicU32::new(header.synced_epoch),
        kind,
        count: AtomicU64::new(header.count),
        data_size: AtomicU64::new(header.data_size),
        slots: (0..SLOT_LOCKS).map(|_| RwLock::new(())).collect(),
        slot_versions: (0..SLOT_LOCKS).map(|_| AtomicU64::new(0)).collect(),
        serial: next_serial(),
        buckets: None,
        buckets_dirty: AtomicBool::new(false),
        free: Mutex::new(FreePool::new(o.fbp_cap, u32::from(header.align_pow))),
        healthy: AtomicBool::new(!header.open_for_writing),
        torn: AtomicBool::new(false),
        record_crc: header.record_crc,
        coverage: header.coverage,
        codec,
        min_read_size: o.min_read_size.max(MAX_HEADER),
        padding: o.file.padding,
        cached_blocks: o.file.pagecache,
        batch_guess: AtomicUsize::new(0),
        dict_offset: AtomicU64::new(header.dict_offset),
        untrained: Default::default(),
        epoch_records: header.digests.then(Default::default),
        auto_grow: false,
        growth: Default::default(),
        file,
    };
    let mut state = if o.cache_buckets { state.with_cached_buckets()? } else { state };
    state.auto_grow = State::may_grow(o, kind, writable, header.appending) && state.copies_keep_format();
    if writable {
        // Marked open and made durable before any record changes, so a crash
        // from here on is always detected at the next open.
        state.write_header(true)?;
        state.file.synchronize(Durability::Hard)?;
    }
    Ok(state)
}

/// Writes the header and an empty bucket array of a new database; answers
/// the cipher derived for it if `o` gives a key.
pub(super) fn create(file: &dyn File, o: &HashOptions, kind: Kind) -> Result<Option<Cipher>> {
    // A hash database's keys are sealed; a tree's node store's keys are
    // page numbers, and its pages (the tree's keys among them) are sealed
    // whole as values.
    o.record_comp_mode.check_built()?;
    let cipher = match o.cipher_key.as_ref().filter(|k| !k.is_empty()) {
        Some(key) => Some(Cipher::create(key, kind == Kind::Hash)?),
        None => None,
    };
    let align = 1u64 << o.align_pow;
    let unit = align.max(file.block_size());
    let table_end = header::SIZE as u64 + o.num_buckets * u64::from(o.offset_width);
    let records_start = table_end.div_ceil(unit) * unit;
    let header = Header {
        appending: o.update_mode == UpdateMode::Appending,
        width: o.offset_width,
        align_pow: o.align_pow,
        open_for_writing: false,
        num_buckets: o.num_buckets,
        count: 0,
        data_size: 0,
        epoch: 0,
        synced_epoch: 0,
        kind,
        records_start,
        record_crc: o.record_crc_mode,
        record_comp: o.record_comp_mode,
        dict_offset: 0,
        sealing: cipher.as_ref().map(|c| *c.sealing()),
        presets: Header::may_have_presets(o.record_comp_mode, cipher.is_some()),
        digests: kind == Kind::TreeNodes,
        pending: None,
        coverage: Coverage::CURRENT,
    };
    let written = file.truncate(records_start).and_then(|()| file.write(0, &header.encode()));
    if written.is_err() {
        // Half a creation opens as nothing: an empty file is a new database
        // to the next writer, while zeros without a header are refused.
        let _ = file.truncate(0);
    }
    written.map(|()| cipher)
}

/// Reads the compression dictionary the header points at; a damaged one is
/// an error naming it and its offset.
fn load_dictionary(file: &dyn File, header: &Header, path: &Path) -> Result<Dictionary> {
    let offset = header.dict_offset;
    let (h, buf) = restore::read_at(file, offset, header).map_err(|e| {
        Error::new(
            e.kind(),
            format!("the compression dictionary at offset {offset} of {} is broken: {e}", path.display()),
        )
    })?;
    Dictionary::from_record(header, offset, &h, &buf, path)
}
