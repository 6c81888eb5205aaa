//! Reading records and walking the chains: finding a key's record, listing a
//! bucket's keys, visiting every record.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use super::buckets::{bucket_of, Link};
use super::record::{self, MAX_HEADER};
use super::state::State;
use crate::error::Result;

/// The largest first read of a record made on the stack.
const FIRST_READ_ON_STACK: usize = 512;
/// Keys whose buckets [`State::prefetch`] asks for before reading any:
/// more than a pipeline's usual batch, few enough for the stack.
const PREFETCH_CHUNK: usize = 32;
/// Bytes of a record prefetched besides its key: the header before it and
/// the start of the value after it (a 100-byte value whole).
const RECORD_PREFETCH: usize = MAX_HEADER + 100;

/// A record found in a chain.
#[derive(Clone)]
pub(super) struct Found {
    /// Where the offset of the record is stored.
    pub(super) link: Link,
    pub(super) offset: u64,
    pub(super) header: record::Header,
    /// The record as read from its start, holding the value unless it was
    /// found without it (then [`Found::value`] must not be called).
    pub(super) buf: Vec<u8>,
}

/// A key met in a chain: as stored, and as the caller knows it where the
/// two differ (sealed keys).
pub(super) struct ChainKey {
    pub(super) stored: Vec<u8>,
    opened: Option<Vec<u8>>,
}

/// A record met in a chain: its key, and its value if it was read.
pub(super) struct ChainRecord {
    pub(super) key: ChainKey,
    pub(super) value: Option<Vec<u8>>,
}

impl ChainKey {
    /// The key as the caller knows it.
    pub(super) fn plain(&self) -> &[u8] {
        self.opened.as_deref().unwrap_or(&self.stored)
    }

    /// The key as the caller knows it, owned.
    pub(super) fn into_plain(self) -> Vec<u8> {
        self.opened.unwrap_or(self.stored)
    }
}

impl Found {
    /// The value, as a caller sees it, decoded by `state`'s codec.
    #[inline(always)]
    pub(super) fn value<'a>(&'a self, state: &State) -> Result<Cow<'a, [u8]>> {
        state.decode(self.offset, &self.header, &self.buf)
    }
}

/// How many buckets ahead of a walk in bucket order the walker asks for a
/// chain's first record: far enough for the record to arrive from memory
/// while the buckets between are walked.
pub(super) const PREFETCH_AHEAD: u64 = 8;

impl State {
    /// Reads the record at `offset`: its header and key and, if `value` says
    /// so, its value too (if `key` is given, only when the record is `key`'s).
    /// With a record checksum mode, every record read is read whole and
    /// verified, another key's on the way too: a damaged key must not make
    /// its record read as absent.
    ///
    /// The steps are [`State::first_read`], [`State::examine`] and
    /// [`State::verify`], which a batch (`batch.rs`) takes for many records
    /// at once, so that both paths judge a record alike.
    #[inline]
    pub(super) fn read_record(
        &self,
        offset: u64,
        key: Option<&[u8]>,
        value: bool,
    ) -> Result<(record::Header, Vec<u8>)> {
        self.read_record_upto(offset, key, if value { usize::MAX } else { 0 })
    }

    /// Like [`State::read_record`], reading the value only if it is stored
    /// in at most `value_limit` bytes.
    #[inline(always)]
    fn read_record_upto(
        &self,
        offset: u64,
        key: Option<&[u8]>,
        value_limit: usize,
    ) -> Result<(record::Header, Vec<u8>)> {
        let size = self.file.size();
        let first = self.first_read(offset, key.map_or(0, <[u8]>::len), value_limit > 0, size)?;
        let examine = |buf: &[u8]| {
            let (header, end) = self.examine(offset, buf, key, false, size)?;
            // 0: another key's record, of which no more is read.
            let whole = header.header_size + header.key_size + header.value_size;
            let end = if end > 0 && header.value_size <= value_limit { end.max(whole) } else { end };
            Ok::<_, crate::Error>((header, end))
        };
        if first > FIRST_READ_ON_STACK {
            let mut buf = vec![0u8; first];
            self.file.read(offset, &mut buf)?;
            let (header, end) = examine(&buf)?;
            if buf.len() < end {
                let more = buf.len();
                buf.resize(end, 0);
                self.file.read(offset + more as u64, &mut buf[more..])?;
            }
            self.verify(offset, &header, &buf)?;
            return Ok((header, buf));
        }
        // Most first reads are small: read onto the stack, then allocate once
        // for what the caller needs, rather than growing a heap buffer (a
        // realloc per lookup) and allocating for records of other keys.
        let mut head = [0u8; FIRST_READ_ON_STACK];
        let head = &mut head[..first];
        self.file.read(offset, head)?;
        let (header, end) = examine(head)?;
        let mut buf = Vec::with_capacity(end);
        buf.extend_from_slice(&head[..end.min(first)]);
        if first < end {
            buf.resize(end, 0);
            self.file.read(offset + first as u64, &mut buf[first..])?;
        }
        self.verify(offset, &header, &buf)?;
        Ok((header, buf))
    }

    /// How many bytes a first read of the record at `offset` takes, for a
    /// key of `key_len` bytes (0: any key) in a file of `size` bytes; an
    /// error if `offset` lies outside the records.
    #[inline(always)]
    pub(super) fn first_read(&self, offset: u64, key_len: usize, value: bool, size: u64) -> Result<usize> {
        self.first_read_of(offset, key_len, value, size, self.min_read_size)
    }

    /// Like [`State::first_read`], reading at least `least` bytes (and the
    /// key) when a value is wanted.
    #[inline(always)]
    pub(super) fn first_read_of(
        &self,
        offset: u64,
        key_len: usize,
        value: bool,
        size: u64,
        least: usize,
    ) -> Result<usize> {
        if offset < self.records_start || offset >= size {
            return Err(self.broken(offset, "a chain points outside the records"));
        }
        // A value is most often wanted with its header, so read enough for
        // both; without it, just what the header and key take. With block I/O
        // the whole block is read anyway: take all of it. Through a page
        // cache, each block more is one more to load and evict, so a first
        // read stops at the first block, unless the least read size is a
        // block or more: then the records are that large (tree nodes), and a
        // read that stopped short would cost a second call.
        let value = value || self.record_crc.is_on();
        let least = if value { least } else { MAX_HEADER };
        let block = self.file.block_size();
        let needed = offset + (MAX_HEADER + key_len) as u64;
        let wanted = offset + (least + key_len) as u64;
        let wanted = match self.cached_blocks {
            true if (least as u64) < block => needed.max((offset / block + 1) * block),
            _ => wanted,
        };
        Ok(((wanted.div_ceil(block) * block).min(size) - offset) as usize)
    }

    /// Judges the first read `buf` of the record at `offset`: its header, and
    /// how many bytes from the record's start must be read before it can be
    /// verified and its key (and value) used. That is no more than `buf`
    /// holds when the record is plainly another key's.
    #[inline(always)]
    pub(super) fn examine(
        &self,
        offset: u64,
        buf: &[u8],
        key: Option<&[u8]>,
        value: bool,
        size: u64,
    ) -> Result<(record::Header, usize)> {
        let header =
            record::parse_header(buf, self.width, self.align_pow).map_err(|why| self.broken(offset, why))?;
        if offset + header.size > size {
            return Err(self.broken(offset, "the record runs past the end of the file"));
        }
        let verify = self.record_crc.is_on();
        let key_end = header.header_size + header.key_size;
        if let Some(key) = key.filter(|_| !verify) {
            if key.len() != header.key_size
                || (buf.len() >= key_end && &buf[header.header_size..key_end] != key)
            {
                return Ok((header, 0));
            }
        }
        let end = if value || verify { key_end + header.value_size } else { key_end };
        Ok((header, end))
    }

    /// Checks the checksum of the record at `offset`, read whole into `buf`,
    /// if the database verifies every record read.
    #[inline(always)]
    pub(super) fn verify(&self, offset: u64, header: &record::Header, buf: &[u8]) -> Result<()> {
        if self.record_crc.is_on() && !record::crc_matches(header, buf, self.width, self.coverage) {
            let why = format!("its checksum does not match (record_crc_mode {})", self.record_crc);
            return Err(self.broken(offset, &why));
        }
        Ok(())
    }

    /// Whether `key` is the key of the record read into `buf`.
    #[inline(always)]
    pub(super) fn holds_key(header: &record::Header, buf: &[u8], key: &[u8]) -> bool {
        let key_end = header.header_size + header.key_size;
        header.key_size == key.len() && buf.len() >= key_end && &buf[header.header_size..key_end] == key
    }

    /// Walks `key`'s chain.
    pub(super) fn find(&self, key: &[u8], bucket: u64) -> Result<Option<Found>> {
        self.find_record(key, bucket, true)
    }

    /// Starts loading into the CPU's cache the buckets of `keys`, then the
    /// first record of each chain (see [`Dbm::prefetch`](crate::dbm::Dbm::prefetch)):
    /// every bucket is asked for before any is read, and every record before
    /// any is looked up, so their cache misses overlap. Stops at the first
    /// step the file does not serve from memory (a positional file's reads
    /// are system calls, which a hint does not make cheaper). Reads buckets
    /// without their slots' locks: a value being changed meanwhile only
    /// makes the hint miss.
    pub(super) fn prefetch(&self, keys: &[&[u8]]) {
        // Sealing a key costs a cipher call, more than the hint saves.
        if keys.len() < 2 || self.codec.seals_keys() {
            return;
        }
        let mut buckets = [0u64; PREFETCH_CHUNK];
        for chunk in keys.chunks(PREFETCH_CHUNK) {
            let buckets = &mut buckets[..chunk.len()];
            for (bucket, key) in buckets.iter_mut().zip(chunk) {
                *bucket = bucket_of(key, self.num_buckets);
            }
            if !self.prefetch_chains(chunk, buckets) {
                return;
            }
        }
    }

    /// The two steps of [`State::prefetch`] for the stored keys `stored`
    /// of `buckets`; false if the file did not take a hint (the caller
    /// stops giving them).
    pub(super) fn prefetch_chains(&self, stored: &[&[u8]], buckets: &[u64]) -> bool {
        for &bucket in buckets {
            match &self.buckets {
                Some(cached) => crate::sys::prefetch(cached[bucket as usize * self.width].as_ptr()),
                None if self.file.prefetch(self.bucket_offset(bucket), self.width) => {}
                None => return false,
            }
        }
        for (&bucket, key) in buckets.iter().zip(stored) {
            if !self.prefetch_first_record(bucket, RECORD_PREFETCH + key.len()) {
                return false;
            }
        }
        true
    }

    /// Asks the file for the first `len` bytes of the first record of
    /// `bucket`'s chain, if it has one; false if the bucket could not be
    /// read or the file did not take the hint.
    fn prefetch_first_record(&self, bucket: u64, len: usize) -> bool {
        match self.read_bucket(bucket) {
            Ok(0) => true,
            Ok(offset) => self.file.prefetch(offset, len),
            Err(_) => false,
        }
    }

    /// Starts loading into the CPU's cache the first record of `bucket`'s
    /// chain, for a walk of the buckets in order that reaches it soon: the
    /// bucket array is read in order, which the CPU foresees, but the
    /// records lie anywhere in the file. The caller need not hold the
    /// bucket's slot: a value changed meanwhile only makes the hint miss.
    pub(super) fn prefetch_head(&self, bucket: u64) {
        if bucket >= self.num_buckets {
            return;
        }
        // A file that takes no hints (positional I/O) would pay a system
        // call for the bucket and gain nothing.
        if self.buckets.is_none() && !self.file.prefetch(self.bucket_offset(bucket), self.width) {
            return;
        }
        // The key's length is not known yet: the header and what follows
        // it, which holds a short key and its value.
        self.prefetch_first_record(bucket, RECORD_PREFETCH);
    }

    /// Walks `key`'s chain, reading the value of the record found if `value` says so.
    pub(super) fn find_record(&self, key: &[u8], bucket: u64, value: bool) -> Result<Option<Found>> {
        self.check_untorn()?;
        let mut link = Link::Bucket(bucket);
        let mut offset = self.read_bucket(bucket)?;
        let mut steps = 0u64;
        while offset != 0 {
            let (header, buf) = self.read_record(offset, Some(key), value)?;
            if State::holds_key(&header, &buf, key) {
                return Ok(Some(Found { link, offset, header, buf }));
            }
            link = Link::Record(offset);
            offset = header.next;
            steps += 1;
            if steps > self.count.load(Ordering::Relaxed) + 1024 {
                return Err(self.broken(offset, "a chain loops"));
            }
        }
        Ok(None)
    }

    /// The keys of a bucket's chain, in chain order. Sealed keys are opened
    /// (and so authenticated) before anything else is judged of them.
    pub(super) fn chain_keys(&self, bucket: u64) -> Result<Vec<ChainKey>> {
        Ok(self.chain_records(bucket, 0)?.into_iter().map(|r| r.key).collect())
    }

    /// The records of a bucket's chain, in chain order: each key, and its
    /// value as a caller sees it if stored in at most `value_limit` bytes
    /// (0: no values), so that a walk that keeps the small ones reads each
    /// record once and a large one only when asked for.
    pub(super) fn chain_records(&self, bucket: u64, value_limit: usize) -> Result<Vec<ChainRecord>> {
        self.check_untorn()?;
        let mut records = Vec::new();
        let mut offset = self.read_bucket(bucket)?;
        let plain = self.codec.compression.is_none() && self.codec.cipher.is_none();
        while offset != 0 {
            let (header, mut buf) = self.read_record_upto(offset, None, value_limit)?;
            let key_end = header.header_size + header.key_size;
            let key = &buf[header.header_size..key_end];
            let opened = match self.codec.seals_keys() {
                true => Some(self.open_key(offset, key)?.into_owned()),
                false => None,
            };
            self.check_bucket(key, bucket, offset)?;
            let key = ChainKey { stored: key.to_vec(), opened };
            let next = header.next;
            let value_end = key_end + header.value_size;
            let value = match value_limit > 0 && buf.len() >= value_end {
                // A plain value is the tail of the buffer it was read into:
                // that buffer, cut to it, is kept rather than a copy.
                true if plain => {
                    buf.truncate(value_end);
                    buf.drain(..key_end);
                    Some(buf)
                }
                true => Some(self.decode(offset, &header, &buf)?.into_owned()),
                false => None,
            };
            records.push(ChainRecord { key, value });
            offset = next;
            if records.len() as u64 > self.count.load(Ordering::Relaxed) + 1024 {
                return Err(self.broken(offset, "a chain loops"));
            }
        }
        Ok(records)
    }

    /// Calls `f` with every live record's key and value as a caller knows
    /// them, walking the buckets in order. The caller keeps other writers out.
    pub(super) fn for_each(&self, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        self.check_untorn()?;
        for bucket in 0..self.num_buckets {
            // The chains' records lie anywhere in the file: each is a miss
            // unless asked for ahead.
            self.prefetch_head(bucket + PREFETCH_AHEAD);
            self.for_each_in(bucket, &mut f)?;
        }
        Ok(())
    }

    /// Calls `f` with every live record of `bucket`'s chain, as
    /// [`State::for_each`] does. The caller holds the bucket's slot.
    pub(super) fn for_each_in(
        &self,
        bucket: u64,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.check_untorn()?;
        let mut offset = self.read_bucket(bucket)?;
        let mut steps = 0u64;
        while offset != 0 {
            let (header, buf) = self.read_record(offset, None, true)?;
            let key = &buf[header.header_size..header.header_size + header.key_size];
            let plain = self.open_key(offset, key)?;
            self.check_bucket(key, bucket, offset)?;
            f(&plain, &self.decode(offset, &header, &buf)?)?;
            offset = header.next;
            steps += 1;
            if steps > self.count.load(Ordering::Relaxed) + 1024 {
                return Err(self.broken(offset, "a chain loops"));
            }
        }
        Ok(())
    }

    /// An error unless `key`, met at `offset` in `bucket`'s chain, belongs
    /// to that bucket: in a damaged file a chain may reach another's record,
    /// which a walk would show twice, or a rebuild bring back after a
    /// lookup removed it.
    fn check_bucket(&self, key: &[u8], bucket: u64, offset: u64) -> Result<()> {
        if bucket_of(key, self.num_buckets) == bucket {
            return Ok(());
        }
        Err(self.broken(offset, "its key belongs to another bucket's chain"))
    }
}
