//! The lookups of a batch, run in lockstep so that their device reads go
//! out together.
//!
//! Each read of a lookup depends on the one before (a skip pointer names
//! the next record to read), so a batch cannot gather its reads up front.
//! Instead every [`Lookup`] is a seek stopped where its [`Window`] lacks
//! bytes: a round steps each unfinished lookup as far as the bytes it holds
//! take it, gathers what each wants next, reads all of that with one
//! [`File::read_many`](crate::file::File::read_many), and goes again. A
//! batch thus costs about as many rounds as one lookup costs reads (the
//! levels below the cached ones, plus level 0 and the value), not that
//! times the number of keys.
//!
//! A lookup goes the way [`Snapshot::seek`] goes, read for read, and
//! parses records with the same code, so it finds the same record and
//! fails with the same error; the file of a snapshot never changes, so
//! when its bytes arrive does not matter.

use super::format::{self, Fill, Record, Window};
use super::search::{Below, Position, Snapshot, Start, FIRST};
use crate::error::Result;
use crate::file::ReadRequest;

/// What a lookup reads next.
#[derive(Clone, Copy, Debug)]
enum Stage {
    /// The record at `at`, for its pointer of this level.
    Pointer(u8),
    /// The record at this offset, `at`'s pointer of the level, to see
    /// whether the key is past it.
    Target(u8, u64),
    /// The record at `at`, at level 0, for where the next one starts.
    Zero,
    /// The record at this offset, the one after `at`.
    After(u64),
    /// The record at `at`, the first whose key is not below the key, with
    /// its value.
    Value,
}

impl Stage {
    /// Where the walk goes on once `level`'s pointers lead no further.
    fn below(level: u8) -> Stage {
        if level > 1 {
            Stage::Pointer(level - 1)
        } else {
            Stage::Zero
        }
    }
}

/// One lookup of a batch: the first record of `key`, found by a seek that
/// stops wherever its window lacks bytes.
pub(super) struct Lookup<'k> {
    key: &'k [u8],
    at: Position,
    stage: Stage,
    /// Set when the lookup is over: the record found, held in the lookup's
    /// window, or why it failed.
    outcome: Option<Result<Option<Record>>>,
}

/// A fill that reads nothing: it notes the bytes a lookup wants, for the
/// round's batch.
struct Wanted(Option<(u64, usize)>);

impl Fill for Wanted {
    fn fill(&mut self, _window: &mut Window, offset: u64, len: usize) -> Result<bool> {
        self.0 = Some((offset, len));
        Ok(false)
    }
}

impl<'k> Lookup<'k> {
    /// A lookup of `key` in `snapshot`, started from its cache of the upper
    /// levels (which costs no read).
    pub(super) fn new(snapshot: &Snapshot, key: &'k [u8]) -> Lookup<'k> {
        let (at, stage) = match snapshot.start(Below { key, or_equal: false }) {
            Start::NoRecords => {
                return Lookup { key, at: FIRST, stage: Stage::Value, outcome: Some(Ok(None)) }
            }
            Start::First => (FIRST, Stage::Value),
            Start::Walk(at) => (at, snapshot.walked_levels().max().map_or(Stage::Zero, Stage::Pointer)),
        };
        Lookup { key, at, stage, outcome: None }
    }

    /// The key's first record, held in the lookup's window, or `None`; or
    /// the error that ended the lookup (taken: asked again, the lookup
    /// must not be). Only after [`Snapshot::run`].
    pub(super) fn found(&mut self) -> Result<Option<Record>> {
        match self.outcome.take() {
            Some(Ok(found)) => {
                self.outcome = Some(Ok(found));
                Ok(found)
            }
            Some(Err(e)) => Err(e),
            None => unreachable!("a lookup asked for its record before its batch ran"),
        }
    }

    fn finish(&mut self, outcome: Result<Option<Record>>) {
        self.outcome = Some(outcome);
    }

    /// Goes as far as `window`'s bytes take the lookup: answers the bytes
    /// it wants next, or `None` once it is over.
    fn step(&mut self, snapshot: &Snapshot, window: &mut Window) -> Option<(u64, usize)> {
        if self.outcome.is_some() {
            return None;
        }
        let mut wanted = Wanted(None);
        match self.walk(snapshot, window, &mut wanted) {
            Ok(Some(found)) => self.finish(Ok(found)),
            Ok(None) => return wanted.0,
            Err(e) => self.finish(Err(e)),
        }
        None
    }

    /// [`Snapshot::seek`] and the value read after it, one stage after
    /// another: `Ok(None)` where `window` lacks the bytes of the next read
    /// (`wanted` names them), else what the lookup found.
    fn walk(
        &mut self,
        snapshot: &Snapshot,
        window: &mut Window,
        wanted: &mut Wanted,
    ) -> Result<Option<Option<Record>>> {
        let end = snapshot.header.records_end;
        let width = snapshot.width();
        let key = self.key;
        loop {
            match self.stage {
                Stage::Pointer(level) => {
                    let Some(record) = window.record_with(end, self.at.offset, width, false, wanted)? else {
                        return Ok(None);
                    };
                    let next = window.pointer(&record, level, width, end)?;
                    if next == 0 {
                        self.stage = Stage::below(level);
                        continue;
                    }
                    let stride = format::stride(snapshot.step(), level);
                    if self.at.index.saturating_add(stride) >= snapshot.header.count {
                        return Err(snapshot.broken("a skip pointer leads past the last record"));
                    }
                    self.stage = Stage::Target(level, next);
                }
                Stage::Target(level, next) => {
                    let Some(target) = window.record_with(end, next, width, false, wanted)? else {
                        return Ok(None);
                    };
                    if window.key(&target) >= key {
                        self.stage = Stage::below(level);
                        continue;
                    }
                    let stride = format::stride(snapshot.step(), level);
                    self.at = Position { index: self.at.index + stride, offset: next };
                    self.stage = Stage::Pointer(level);
                }
                Stage::Zero => {
                    let Some(record) = window.record_with(end, self.at.offset, width, false, wanted)? else {
                        return Ok(None);
                    };
                    if record.end() >= end {
                        return Ok(Some(None));
                    }
                    self.stage = Stage::After(record.end());
                }
                Stage::After(next) => {
                    let Some(record) = window.record_with(end, next, width, false, wanted)? else {
                        return Ok(None);
                    };
                    self.at = Position { index: self.at.index + 1, offset: next };
                    if window.key(&record) >= key {
                        self.stage = Stage::Value;
                        continue;
                    }
                    if record.end() >= end {
                        return Ok(Some(None));
                    }
                    self.stage = Stage::After(record.end());
                }
                Stage::Value => {
                    let Some(record) = window.record_with(end, self.at.offset, width, true, wanted)? else {
                        return Ok(None);
                    };
                    return Ok(Some((window.key(&record) == key).then_some(record)));
                }
            }
        }
    }
}

/// Bytes a lookup wants in a round.
struct Want {
    lookup: usize,
    offset: u64,
    len: usize,
    /// Another want of the same bytes, read for both.
    same_as: Option<usize>,
}

impl Snapshot {
    /// Runs `lookups` to their end in lockstep rounds, `windows[i]` holding
    /// the bytes of `lookups[i]` (and, after, the record it found).
    pub(super) fn run(&self, lookups: &mut [Lookup<'_>], windows: &mut [Window]) {
        debug_assert_eq!(lookups.len(), windows.len(), "a window per lookup");
        for window in windows.iter_mut() {
            window.reset();
            window.set_chunk(self.span());
        }
        let mut wants = Vec::with_capacity(lookups.len());
        loop {
            wants.clear();
            for (i, (lookup, window)) in lookups.iter_mut().zip(windows.iter_mut()).enumerate() {
                if let Some((offset, len)) = lookup.step(self, window) {
                    wants.push(Want { lookup: i, offset, len, same_as: None });
                }
            }
            if wants.is_empty() {
                return;
            }
            self.read_round(&mut wants, lookups, windows);
        }
    }

    /// Reads what a round's lookups want, with one batch; a lookup whose
    /// read fails is over, with the error its read gives alone.
    fn read_round(&self, wants: &mut [Want], lookups: &mut [Lookup<'_>], windows: &mut [Window]) {
        // Lookups near each other in key order want the same span at the
        // same moment (the first levels below the cache, above all): one
        // read serves them all.
        let mut order: Vec<usize> = (0..wants.len()).collect();
        order.sort_unstable_by_key(|&j| (wants[j].offset, wants[j].len));
        for pair in order.windows(2) {
            let (lead, next) = (pair[0], pair[1]);
            if (wants[lead].offset, wants[lead].len) == (wants[next].offset, wants[next].len) {
                wants[next].same_as = Some(wants[lead].same_as.unwrap_or(lead));
            }
        }
        let mut requests = Vec::with_capacity(wants.len());
        let mut leads = wants.iter().filter(|w| w.same_as.is_none()).peekable();
        for (i, window) in windows.iter_mut().enumerate() {
            if let Some(want) = leads.next_if(|w| w.lookup == i) {
                requests.push(ReadRequest::new(want.offset, window.hold(want.offset, want.len)));
            }
        }
        let batch = self.file.read_many(&mut requests);
        drop(requests);
        if batch.is_err() {
            // The batch's error names one read; each lookup gets its own.
            for want in wants.iter().filter(|w| w.same_as.is_none()) {
                self.read_alone(want, &mut lookups[want.lookup], &mut windows[want.lookup]);
            }
        }
        for want in wants.iter() {
            let Some(lead) = want.same_as else { continue };
            let source = wants[lead].lookup;
            if lookups[source].outcome.is_some() {
                // Its read failed: this one's may not.
                self.read_alone(want, &mut lookups[want.lookup], &mut windows[want.lookup]);
                continue;
            }
            let (from, to) = pair_mut(windows, source, want.lookup);
            to.hold(want.offset, want.len).copy_from_slice(from.held().1);
        }
    }

    fn read_alone(&self, want: &Want, lookup: &mut Lookup<'_>, window: &mut Window) {
        if let Err(e) = self.file.read(want.offset, window.hold(want.offset, want.len)) {
            window.forget();
            lookup.finish(Err(e));
        }
    }
}

/// `items[from]` to read and `items[to]` to write (two different items).
fn pair_mut<T>(items: &mut [T], from: usize, to: usize) -> (&T, &mut T) {
    debug_assert_ne!(from, to, "a want shares its read with itself");
    if from < to {
        let (head, tail) = items.split_at_mut(to);
        (&head[from], &mut tail[0])
    } else {
        let (head, tail) = items.split_at_mut(from);
        (&tail[0], &mut head[to])
    }
}
