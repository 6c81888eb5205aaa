//! Finding many keys' records together: the chains of a batch are walked side
//! by side, each step of every walk going to the file in one
//! [`File::read_many`](crate::file::File::read_many), so a batch of N keys
//! costs a few device latencies rather than N of them.
//!
//! A batch reads in rounds: the bucket entries not kept in memory (one
//! `read_many`), then the first record of every chain that is not empty (one
//! `read_many`, each read as long as the records batches found lately
//! (see `State::learn_size`), or a single lookup's first read if that is longer, see
//! [`State::first_read_of`]; the records longer than that are completed by
//! one more `read_many`), then the next record of every chain whose record was
//! another key's, and so on until every key is found or its chain ends.
//!
//! Each record is judged by the same steps as a single lookup's
//! ([`State::examine`], [`State::verify`]), so a batch finds what a loop of
//! [`State::find_record`] would, and a damaged record fails its key with the
//! same error. A `read_many` that fails is not attributed to one key: the
//! keys it served are looked up again one by one, each getting the error (or
//! record) its own reads give.

use std::sync::atomic::Ordering;

use super::buckets::Link;
use super::chain::Found;
use super::state::State;
use crate::error::Result;
use crate::file::ReadRequest;

/// The largest first read a batch makes of a record, whatever the records
/// it found before: a chain's records that are not the key are read this far
/// for nothing.
const MAX_GUESS: usize = 1 << 16;

/// One key's walk along its chain.
struct Walk<'k> {
    key: &'k [u8],
    bucket: u64,
    /// Where the offset of the record at `offset` is stored.
    link: Link,
    /// The record to read next; 0: the chain ended.
    offset: u64,
    steps: u64,
    /// The current record as read so far.
    buf: Vec<u8>,
    /// The answer, once known.
    done: Option<Result<Option<Found>>>,
}

/// What [`State::find_many`] found: one answer per distinct key, and for
/// each position of the caller's list the answer it takes.
pub(super) struct Finds {
    answers: Vec<Option<Result<Option<Found>>>>,
    /// For each key of the caller's list, its distinct key's index.
    of: Vec<usize>,
    /// For each distinct key, how many positions still take its answer.
    uses: Vec<usize>,
}

impl Finds {
    /// The answer for position `i` of the caller's list, taken in order: the
    /// last position of a repeated key takes the answer, earlier ones a copy
    /// (an error is returned at the first position, which ends the caller).
    pub(super) fn take(&mut self, i: usize) -> Result<Option<Found>> {
        let at = self.of[i];
        self.uses[at] -= 1;
        if self.uses[at] == 0 {
            return self.answers[at].take().unwrap_or(Ok(None));
        }
        match &self.answers[at] {
            Some(Ok(found)) => Ok(found.clone()),
            _ => self.answers[at].take().unwrap_or(Ok(None)),
        }
    }
}

impl State {
    /// Finds the records of `keys` (in `buckets`), reading their values if
    /// `value` says so, with each step of the walks batched. The caller holds
    /// every key's slot. An error here (a torn handle) ends the whole batch;
    /// a key's own error is its answer.
    pub(super) fn find_many(&self, keys: &[&[u8]], buckets: &[u64], value: bool) -> Result<Finds> {
        self.check_untorn()?;
        // Repeated keys share a bucket: sorted by bucket, a key need only be
        // compared with the keys before it in its bucket's run.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_unstable_by_key(|&i| buckets[i]);
        let mut walks: Vec<Walk<'_>> = Vec::with_capacity(keys.len());
        let mut of = vec![0; keys.len()];
        let mut uses = Vec::with_capacity(keys.len());
        let mut run = 0;
        for (n, &i) in order.iter().enumerate() {
            if n > 0 && buckets[order[n - 1]] != buckets[i] {
                run = n;
            }
            let at = match order[run..n].iter().find(|&&j| keys[j] == keys[i]) {
                Some(&j) => of[j],
                None => {
                    let bucket = buckets[i];
                    walks.push(Walk {
                        key: keys[i],
                        bucket,
                        link: Link::Bucket(bucket),
                        offset: 0,
                        steps: 0,
                        buf: Vec::new(),
                        done: None,
                    });
                    uses.push(0);
                    walks.len() - 1
                }
            };
            uses[at] += 1;
            of[i] = at;
        }
        self.read_heads(&mut walks, value);
        while walks.iter().any(|w| w.done.is_none()) {
            self.step(&mut walks, value);
        }
        Ok(Finds { answers: walks.into_iter().map(|w| w.done).collect(), of, uses })
    }

    /// Sets each walk's first offset from its bucket: from memory with
    /// `cache_buckets`, else in one batch.
    fn read_heads(&self, walks: &mut [Walk<'_>], value: bool) {
        if self.buckets.is_some() {
            for w in walks.iter_mut() {
                match self.read_bucket(w.bucket) {
                    Ok(offset) => w.offset = offset,
                    Err(e) => w.done = Some(Err(e)),
                }
            }
            return;
        }
        let width = self.width;
        let mut arena = vec![0u8; walks.len() * width];
        let spans = walks.iter().map(|w| (self.bucket_offset(w.bucket), width));
        let read =
            ReadRequest::carve(&mut arena, spans).and_then(|mut reads| self.file.read_many(&mut reads));
        match read {
            Ok(()) => {
                for (w, bytes) in walks.iter_mut().zip(arena.chunks(width)) {
                    w.offset = self.decode_offset(bytes);
                }
            }
            Err(_) => walks.iter_mut().for_each(|w| self.alone(w, value)),
        }
    }

    /// Reads the current record of every walk not done, in one batch (and
    /// one more for the records longer than their first read), and moves
    /// each walk on: found, ended, failed, or to the next record.
    fn step(&self, walks: &mut [Walk<'_>], value: bool) {
        let size = self.file.size();
        let least = self.min_read_size.max(self.batch_guess.load(Ordering::Relaxed));
        for w in walks.iter_mut().filter(|w| w.done.is_none()) {
            if w.offset == 0 {
                w.done = Some(Ok(None));
                continue;
            }
            match self.first_read_of(w.offset, w.key.len(), value, size, least) {
                Ok(len) => {
                    w.buf.clear();
                    w.buf.resize(len, 0);
                }
                Err(e) => w.done = Some(Err(e)),
            }
        }
        let mut reads: Vec<ReadRequest<'_>> = walks
            .iter_mut()
            .filter(|w| w.done.is_none())
            .map(|w| ReadRequest::new(w.offset, &mut w.buf[..]))
            .collect();
        if reads.is_empty() {
            return;
        }
        if self.file.read_many(&mut reads).is_err() {
            drop(reads);
            walks.iter_mut().filter(|w| w.done.is_none()).for_each(|w| self.alone(w, value));
            return;
        }
        // Judged in one pass, completed in a second batch.
        let mut headers = Vec::with_capacity(walks.len());
        let mut short = Vec::new();
        for (i, w) in walks.iter_mut().enumerate().filter(|(_, w)| w.done.is_none()) {
            match self.examine(w.offset, &w.buf, Some(w.key), value, size) {
                Ok((header, end)) => {
                    if w.buf.len() < end {
                        short.push((i, w.buf.len()));
                        w.buf.resize(end, 0);
                    }
                    headers.push((i, header));
                }
                Err(e) => w.done = Some(Err(e)),
            }
        }
        if !short.is_empty() && !self.complete(walks, &short) {
            for &(i, _) in &short {
                self.alone(&mut walks[i], value);
            }
        }
        for (i, header) in headers {
            let w = &mut walks[i];
            if w.done.is_some() {
                continue;
            }
            if let Err(e) = self.verify(w.offset, &header, &w.buf) {
                w.done = Some(Err(e));
                continue;
            }
            if State::holds_key(&header, &w.buf, w.key) {
                if value {
                    self.learn_size(header.header_size + header.key_size + header.value_size);
                }
                let buf = std::mem::take(&mut w.buf);
                w.done = Some(Ok(Some(Found { link: w.link, offset: w.offset, header, buf })));
                continue;
            }
            w.link = Link::Record(w.offset);
            w.offset = header.next;
            w.steps += 1;
            if w.steps > self.count.load(Ordering::Relaxed) + 1024 {
                w.done = Some(Err(self.broken(w.offset, "a chain loops")));
            }
        }
    }

    /// Moves the guess of a record's size towards `needed` (at most
    /// [`MAX_GUESS`]): up to it at once, since a record longer than the guess
    /// costs a whole round of reads, and down by an eighth of the gap, since
    /// a guess too long costs only bytes. Threads may race on it: a lost
    /// update only delays the guess a little.
    fn learn_size(&self, needed: usize) {
        let guess = self.batch_guess.load(Ordering::Relaxed);
        let needed = needed.min(MAX_GUESS);
        let next = if needed >= guess { needed } else { guess - (guess - needed) / 8 };
        self.batch_guess.store(next, Ordering::Relaxed);
    }

    /// Reads the rest of the records `short` names (walk index, bytes read
    /// so far) in one batch; false if the batch failed.
    fn complete(&self, walks: &mut [Walk<'_>], short: &[(usize, usize)]) -> bool {
        let mut wanted = vec![false; walks.len()];
        let mut from = vec![0usize; walks.len()];
        for &(i, more) in short {
            wanted[i] = true;
            from[i] = more;
        }
        let mut reads: Vec<ReadRequest<'_>> = walks
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| wanted[*i])
            .map(|(i, w)| ReadRequest::new(w.offset + from[i] as u64, &mut w.buf[from[i]..]))
            .collect();
        self.file.read_many(&mut reads).is_ok()
    }

    /// Answers a walk whose batch failed by a lookup of its own, from its
    /// bucket on, as [`State::find_record`] makes it.
    fn alone(&self, w: &mut Walk<'_>, value: bool) {
        w.done = Some(self.find_record(w.key, w.bucket, value));
    }
}
