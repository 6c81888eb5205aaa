//! The segmented LRU both caches keep: two recency lists over slot numbers
//! (and a third, bounded one for entries read ahead that nothing has used
//! yet), every operation O(1).

/// No slot: the end of a list.
pub(crate) const NIL: u32 = u32::MAX;

/// The list a slot is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Entries used once (or only by scans): the first to go.
    Probation = 0,
    /// Entries used again by a lookup, up to the protected share.
    Protected = 1,
    /// Entries read ahead of any use (the page cache's neighbours of a
    /// missed block), up to their own cap: the first to go once at it, so
    /// read-ahead never takes more of the cache than that cap.
    Ahead = 2,
}

#[derive(Clone, Copy)]
struct Link {
    /// Toward the most recently used end.
    newer: u32,
    /// Toward the least recently used end.
    older: u32,
    segment: Option<Segment>,
}

const UNLINKED: Link = Link { newer: NIL, older: NIL, segment: None };

/// The order of a cache's slots: which to keep and which to evict. The
/// cache owns the slots and their contents; this owns only their order.
pub(crate) struct Segments {
    links: Vec<Link>,
    /// Most recently used slot of each segment.
    newest: [u32; 3],
    /// Least recently used slot of each segment.
    oldest: [u32; 3],
    len: [usize; 3],
    /// The most slots the protected segment holds; a promotion past it
    /// moves the protected segment's oldest back to probation.
    protected_cap: usize,
    /// The most slots the read-ahead segment holds.
    ahead_cap: usize,
}

impl Segments {
    /// Lists for up to `slots` slots (more may be added), at most
    /// `protected_cap` of them protected.
    pub(crate) fn new(slots: usize, protected_cap: usize) -> Segments {
        Segments {
            links: Vec::with_capacity(slots),
            newest: [NIL; 3],
            oldest: [NIL; 3],
            len: [0; 3],
            protected_cap,
            ahead_cap: 0,
        }
    }

    /// Lets up to `cap` slots hold entries read ahead ([`Segments::insert_ahead`]).
    pub(crate) fn with_ahead_cap(mut self, cap: usize) -> Segments {
        self.ahead_cap = cap;
        self
    }

    /// The protected share of a cache of `capacity` slots at `percent`.
    pub(crate) fn protected_share(capacity: usize, percent: u8) -> usize {
        capacity * usize::from(percent.min(100)) / 100
    }

    /// Slots on any list.
    pub(crate) fn len(&self) -> usize {
        self.len.iter().sum()
    }

    /// Slots on `segment`.
    pub(crate) fn len_of(&self, segment: Segment) -> usize {
        self.len[segment as usize]
    }

    /// The list `slot` is on, if any.
    pub(crate) fn segment(&self, slot: u32) -> Option<Segment> {
        self.links.get(slot as usize).and_then(|l| l.segment)
    }

    /// Puts a new entry's `slot` (on no list) on probation, as its newest.
    pub(crate) fn insert(&mut self, slot: u32) {
        if self.links.len() <= slot as usize {
            self.links.resize(slot as usize + 1, UNLINKED);
        }
        debug_assert!(self.links[slot as usize].segment.is_none());
        self.push_newest(slot, Segment::Probation);
    }

    /// Whether the read-ahead segment is at its cap: a new entry read ahead
    /// must take the slot of [`Segments::oldest_ahead`], or not come in.
    pub(crate) fn ahead_full(&self) -> bool {
        self.len[Segment::Ahead as usize] >= self.ahead_cap
    }

    /// The oldest entry read ahead; `NIL` if there is none.
    pub(crate) fn oldest_ahead(&self) -> u32 {
        self.oldest[Segment::Ahead as usize]
    }

    /// Puts a new entry's `slot` (on no list), read ahead of any use, on
    /// the read-ahead segment as its newest. The caller keeps the segment
    /// within its cap ([`Segments::ahead_full`]).
    pub(crate) fn insert_ahead(&mut self, slot: u32) {
        if self.links.len() <= slot as usize {
            self.links.resize(slot as usize + 1, UNLINKED);
        }
        debug_assert!(self.links[slot as usize].segment.is_none());
        debug_assert!(!self.ahead_full());
        self.push_newest(slot, Segment::Ahead);
    }

    /// Records a use of `slot`'s entry. A lookup's use promotes a
    /// probationary entry (demoting the oldest protected one if the
    /// protected segment is then over its share) and makes a protected one
    /// the newest; a scan's use changes nothing. The first use of an entry
    /// read ahead, a lookup's or a scan's, puts it on probation as its
    /// newest, as if the use had read it.
    pub(crate) fn touch(&mut self, slot: u32, scan: bool) {
        if self.segment(slot) == Some(Segment::Ahead) {
            self.unlink(slot);
            self.push_newest(slot, Segment::Probation);
            return;
        }
        if scan {
            return;
        }
        let Some(segment) = self.segment(slot) else { return };
        self.unlink(slot);
        self.push_newest(slot, Segment::Protected);
        if segment == Segment::Probation && self.len[Segment::Protected as usize] > self.protected_cap {
            let demoted = self.oldest[Segment::Protected as usize];
            self.unlink(demoted);
            self.push_newest(demoted, Segment::Probation);
        }
    }

    /// Takes `slot` off its list (its entry is gone).
    pub(crate) fn remove(&mut self, slot: u32) {
        if self.segment(slot).is_some() {
            self.unlink(slot);
        }
    }

    /// The slot to evict first: the oldest on probation, else the oldest
    /// read ahead, else the oldest protected; `NIL` if all are empty.
    pub(crate) fn victim(&self) -> u32 {
        [Segment::Probation, Segment::Ahead, Segment::Protected]
            .into_iter()
            .map(|s| self.oldest[s as usize])
            .find(|&slot| slot != NIL)
            .unwrap_or(NIL)
    }

    /// The slot to evict after `slot` if `slot`'s entry cannot go: the next
    /// newer on its list, then the next list's oldest (in the order of
    /// [`Segments::victim`]); `NIL` at the end.
    pub(crate) fn next_victim(&self, slot: u32) -> u32 {
        let link = self.links[slot as usize];
        let next_list = |after: Segment| match after {
            Segment::Probation => [Segment::Ahead, Segment::Protected].as_slice(),
            Segment::Ahead => [Segment::Protected].as_slice(),
            Segment::Protected => [].as_slice(),
        };
        match (link.newer, link.segment) {
            (NIL, Some(segment)) => {
                next_list(segment).iter().map(|&s| self.oldest[s as usize]).find(|&s| s != NIL).unwrap_or(NIL)
            }
            (newer, _) => newer,
        }
    }

    fn push_newest(&mut self, slot: u32, segment: Segment) {
        let s = segment as usize;
        let old_newest = self.newest[s];
        self.links[slot as usize] = Link { newer: NIL, older: old_newest, segment: Some(segment) };
        if old_newest == NIL {
            self.oldest[s] = slot;
        } else {
            self.links[old_newest as usize].newer = slot;
        }
        self.newest[s] = slot;
        self.len[s] += 1;
    }

    fn unlink(&mut self, slot: u32) {
        let Link { newer, older, segment } = self.links[slot as usize];
        let s = segment.expect("a linked slot") as usize;
        if newer == NIL {
            self.newest[s] = older;
        } else {
            self.links[newer as usize].older = older;
        }
        if older == NIL {
            self.oldest[s] = newer;
        } else {
            self.links[older as usize].newer = newer;
        }
        self.links[slot as usize] = UNLINKED;
        self.len[s] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots of `segment`, oldest first.
    fn order(s: &Segments, segment: Segment) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = s.oldest[segment as usize];
        while at != NIL {
            out.push(at);
            at = s.links[at as usize].newer;
        }
        assert_eq!(out.len(), s.len_of(segment));
        out
    }

    #[test]
    fn a_second_lookup_promotes_and_the_share_demotes_the_oldest() {
        let mut s = Segments::new(4, 2);
        (0..4).for_each(|i| s.insert(i));
        assert_eq!(order(&s, Segment::Probation), [0, 1, 2, 3]);
        s.touch(1, false);
        s.touch(2, false);
        assert_eq!(order(&s, Segment::Protected), [1, 2]);
        s.touch(0, false);
        // 1, the oldest protected, went back to probation as its newest.
        assert_eq!(order(&s, Segment::Protected), [2, 0]);
        assert_eq!(order(&s, Segment::Probation), [3, 1]);
        assert_eq!(s.victim(), 3);
        assert_eq!(s.next_victim(3), 1);
        assert_eq!(s.next_victim(1), 2);
    }

    #[test]
    fn scans_reorder_nothing() {
        let mut s = Segments::new(3, 2);
        (0..3).for_each(|i| s.insert(i));
        s.touch(0, true);
        s.touch(1, false);
        s.touch(1, true);
        assert_eq!(order(&s, Segment::Probation), [0, 2]);
        assert_eq!(order(&s, Segment::Protected), [1]);
    }

    #[test]
    fn a_protected_share_of_zero_is_plain_lru() {
        let mut s = Segments::new(3, 0);
        (0..3).for_each(|i| s.insert(i));
        s.touch(0, false);
        assert_eq!(order(&s, Segment::Probation), [1, 2, 0]);
        assert_eq!(s.len_of(Segment::Protected), 0);
        s.remove(1);
        assert_eq!(order(&s, Segment::Probation), [2, 0]);
        assert_eq!((s.victim(), s.len()), (2, 2));
    }

    #[test]
    fn entries_read_ahead_go_first_once_at_their_cap_and_a_use_puts_them_on_probation() {
        let mut s = Segments::new(6, 4).with_ahead_cap(2);
        s.insert(0);
        s.touch(0, false);
        s.insert(1);
        assert!(!s.ahead_full());
        s.insert_ahead(2);
        s.insert_ahead(3);
        assert!(s.ahead_full());
        assert_eq!(s.oldest_ahead(), 2);
        assert_eq!(order(&s, Segment::Ahead), [2, 3]);
        // Evicted after probation, before the protected.
        assert_eq!(s.victim(), 1);
        assert_eq!(s.next_victim(1), 2);
        assert_eq!(s.next_victim(3), 0);
        // A scan's use too: the entry has been read.
        s.touch(2, true);
        assert_eq!(order(&s, Segment::Probation), [1, 2]);
        assert_eq!(order(&s, Segment::Ahead), [3]);
        assert!(!s.ahead_full());
        // A second use by a lookup promotes it as any probationary entry.
        s.touch(2, false);
        assert_eq!(order(&s, Segment::Protected), [0, 2]);
        s.remove(1);
        assert_eq!(s.victim(), 3);
        assert_eq!(s.len(), 3);
    }
}
