//! The values records had before recent commits, kept while a read view may
//! need them.
//!
//! A commit that changes a record while any view is open (a snapshot, a
//! transaction, or a read that must not see a commit half applied) first
//! stores here what the record held before it, tagged with the commit's
//! sequence number, and only then changes the database. A view at sequence
//! `at` reads the database and then looks here: the oldest entry of the key
//! newer than `at` holds the value the view must see; without one the
//! database's value is it. Reading the database first and this store second
//! is what makes the pair consistent: a change the view saw in the database
//! had its entry stored before it was made.

use std::collections::{BTreeMap, HashMap};

/// What a key held before one commit changed it.
#[derive(Clone, Debug)]
pub(super) struct Version {
    /// The commit that changed the key.
    pub seq: u64,
    /// The value before it; `None` if the key was absent.
    pub before: Option<Vec<u8>>,
}

/// An answer of [`Versions::value_at`].
pub(super) enum AtView<'a> {
    /// No commit after the view changed the key: the database's value is right.
    Current,
    /// The value the view sees (`None`: absent).
    Before(Option<&'a [u8]>),
}

/// The stored versions and the open views that need them.
#[derive(Default)]
pub(super) struct Versions {
    by_key: HashMap<Vec<u8>, Vec<Version>>,
    /// Bytes held by keys and values here, against the memory cap.
    bytes: usize,
    /// The sequence numbers views are open at, with how many at each.
    readers: BTreeMap<u64, usize>,
    /// Views at a sequence below this have lost versions they needed.
    expired_below: u64,
    /// The newest sequence any version here carries.
    newest: u64,
    /// For each (attached index, index key) whose pairs a recent commit
    /// changed, the newest such commit: what a transaction that read the
    /// index key checks at its commit.
    index_keys: HashMap<(u64, Vec<u8>), u64>,
}

/// The bookkeeping bytes counted per stored version besides its key and value.
pub(super) const VERSION_OVERHEAD: usize = 48;

impl Versions {
    /// Registers a view at `at`.
    pub fn open_view(&mut self, at: u64) {
        *self.readers.entry(at).or_insert(0) += 1;
    }

    /// Unregisters a view at `at` and drops what no open view needs;
    /// `visible` is the newest commit wholly applied.
    pub fn close_view(&mut self, at: u64, visible: u64) {
        if let Some(n) = self.readers.get_mut(&at) {
            *n -= 1;
            if *n == 0 {
                self.readers.remove(&at);
            }
        }
        self.collect(visible);
    }

    /// Whether any view is open.
    pub fn has_views(&self) -> bool {
        !self.readers.is_empty()
    }

    /// Whether a view at `at` has lost versions it needs to the memory cap.
    pub fn is_expired(&self, at: u64) -> bool {
        at < self.expired_below
    }

    /// The number of bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The newest sequence recorded.
    pub fn newest(&self) -> u64 {
        self.newest
    }

    /// Stores what `key` held before commit `seq`, unless an entry of that
    /// commit is there already (a commit that changes a key twice keeps the
    /// value from before its first change). `visible` is the newest commit
    /// wholly applied.
    ///
    /// The key's newest entry so far is dropped when no view needs it: only
    /// a view at a commit from the entry before it (or any older, for the
    /// first) up to the one it tags reads it, and none can open there any
    /// more once that commit is applied. So a view held open while a key is
    /// rewritten many times keeps about one old value of it, not one a write.
    pub fn record(&mut self, key: &[u8], seq: u64, before: Option<&[u8]>, visible: u64) {
        let list = match self.by_key.get_mut(key) {
            Some(list) => list,
            None => {
                self.bytes += key.len();
                self.by_key.entry(key.to_vec()).or_default()
            }
        };
        if list.last().is_some_and(|v| v.seq == seq) {
            return;
        }
        if let Some(last) = list.last() {
            let from = list.len().checked_sub(2).map_or(0, |i| list[i].seq);
            let needed = last.seq > visible || self.readers.range(from..last.seq).next().is_some();
            if !needed {
                self.bytes -= VERSION_OVERHEAD + last.before.as_ref().map_or(0, Vec::len);
                list.pop();
            }
        }
        self.bytes += VERSION_OVERHEAD + before.map_or(0, <[u8]>::len);
        list.push(Version { seq, before: before.map(<[u8]>::to_vec) });
        self.newest = self.newest.max(seq);
    }

    /// Notes that commit `seq` changed the pairs under `index_key` of the
    /// index numbered `index`.
    pub fn record_index_key(&mut self, index: u64, index_key: &[u8], seq: u64) {
        match self.index_keys.get_mut(&(index, index_key.to_vec())) {
            Some(newest) => *newest = (*newest).max(seq),
            None => {
                self.bytes += VERSION_OVERHEAD + index_key.len();
                self.index_keys.insert((index, index_key.to_vec()), seq);
            }
        }
        self.newest = self.newest.max(seq);
    }

    /// Whether a commit after `at` changed the pairs under `index_key` of
    /// the index numbered `index`.
    pub fn index_key_changed_since(&self, index: u64, index_key: &[u8], at: u64) -> bool {
        self.index_keys.get(&(index, index_key.to_vec())).is_some_and(|&seq| seq > at)
    }

    /// What a view at `at` sees of `key`, given that it read the database
    /// before asking.
    pub fn value_at(&self, key: &[u8], at: u64) -> AtView<'_> {
        match self.by_key.get(key).and_then(|list| list.iter().find(|v| v.seq > at)) {
            Some(v) => AtView::Before(v.before.as_deref()),
            None => AtView::Current,
        }
    }

    /// Whether any commit after `at` changed `key`.
    pub fn changed_since(&self, key: &[u8], at: u64) -> bool {
        self.by_key.get(key).is_some_and(|list| list.last().is_some_and(|v| v.seq > at))
    }

    /// Every key a commit after `at` changed, with the value a view at `at`
    /// sees of it (the first version after `at`) and the commit that first
    /// changed it.
    pub fn changed_keys_since(&self, at: u64) -> impl Iterator<Item = (&[u8], &Version)> + '_ {
        self.by_key
            .iter()
            .filter_map(move |(key, list)| list.iter().find(|v| v.seq > at).map(|v| (key.as_slice(), v)))
    }

    /// Drops the versions no open view needs: those at or below the oldest
    /// view's sequence, and with no view open all but those of commits still
    /// being applied (after `visible`), which reads that do not register
    /// still need.
    pub fn collect(&mut self, visible: u64) {
        let oldest = self.readers.keys().next().copied().unwrap_or(visible).min(visible);
        if self.newest <= oldest {
            self.by_key.clear();
            self.index_keys.clear();
            self.bytes = 0;
            return;
        }
        self.index_keys.retain(|_, seq| *seq > oldest);
        let mut bytes = self.index_keys.keys().map(|(_, k)| VERSION_OVERHEAD + k.len()).sum();
        self.by_key.retain(|key, list| {
            list.retain(|v| v.seq > oldest);
            if list.is_empty() {
                return false;
            }
            bytes += key.len()
                + list
                    .iter()
                    .map(|v| VERSION_OVERHEAD + v.before.as_ref().map_or(0, Vec::len))
                    .sum::<usize>();
            true
        });
        self.bytes = bytes;
    }

    /// Past `cap` bytes, expires the oldest views one sequence at a time
    /// until what the rest need fits (or none is left), so memory stays
    /// bounded; an expired view fails on its next read.
    pub fn enforce_cap(&mut self, cap: usize, visible: u64) {
        while self.bytes > cap {
            let Some(&oldest) = self.readers.keys().next() else {
                return;
            };
            if oldest >= visible {
                // A view of the newest state needs only what commits being
                // applied now keep, which they drop when done.
                return;
            }
            self.readers.remove(&oldest);
            self.expired_below = self.expired_below.max(oldest + 1);
            self.collect(visible);
        }
    }
}
