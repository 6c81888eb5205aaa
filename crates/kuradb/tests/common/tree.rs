//! What the tree database tests share: tiny tunings that make splits, merges
//! and evictions constant, the model's order under a comparator, and a full
//! consistency check of a tree against a model (count, gets, range scan,
//! cursor walks both ways, process_each).

use std::cmp::Ordering;
use std::ops::Bound;

use kuradb::dbm::tree::{KeyComparator, TreeDbm, TreeOptions};
use kuradb::dbm::Dbm;
use kuradb::file::FileSpec;

pub use super::conformance::read::{diff, each, walk_backward, walk_forward};
use super::hash::{self as h, show, show_opt, Model};

/// A record as the tree hands it out.
pub type Record = (Vec<u8>, Vec<u8>);

/// Options with tiny pages, few branches and a small node cache on `file`.
pub fn options(
    file: &FileSpec,
    cmp: KeyComparator,
    max_page_size: usize,
    max_branches: usize,
    max_cached_pages: usize,
    num_buckets: u64,
) -> TreeOptions {
    TreeOptions::default()
        .hash(h::options(file).num_buckets(num_buckets))
        .max_page_size(max_page_size)
        .max_branches(max_branches)
        .max_cached_pages(max_cached_pages)
        .comparator(cmp)
}

/// The model's records in `cmp`'s order.
pub fn sorted(model: &Model, cmp: KeyComparator) -> Vec<Record> {
    let mut all: Vec<Record> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    all.sort_by(|a, b| cmp.compare(&a.0, &b.0));
    all
}

/// Whether `key` lies within `(lo, hi)` in `cmp`'s order.
pub fn in_bounds(cmp: KeyComparator, key: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(b) => cmp.compare(key, b) != Ordering::Less,
        Bound::Excluded(b) => cmp.compare(key, b) == Ordering::Greater,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => cmp.compare(key, b) != Ordering::Greater,
        Bound::Excluded(b) => cmp.compare(key, b) == Ordering::Less,
        Bound::Unbounded => true,
    };
    above && below
}

/// Every record by a full range scan.
pub fn scan(db: &TreeDbm) -> Result<Vec<Record>, String> {
    db.range::<&[u8]>(..)
        .map_err(|e| format!("range: {e}"))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("scan: {e}"))
}

/// Checks that records are strictly increasing in `cmp`'s order.
pub fn check_sorted(what: &str, records: &[Record], cmp: KeyComparator) -> Result<(), String> {
    for w in records.windows(2) {
        if cmp.compare(&w[0].0, &w[1].0) != Ordering::Less {
            return Err(format!("{what}: {} comes before {}", show(&w[0].0), show(&w[1].0)));
        }
    }
    Ok(())
}

/// Checks that `db` holds exactly `model` in `cmp`'s order, by every way of
/// reading it.
pub fn compare(db: &TreeDbm, model: &Model, cmp: KeyComparator) -> Result<(), String> {
    let expected = sorted(model, cmp);
    let count = db.count().map_err(|e| format!("count: {e}"))?;
    if count != model.len() as u64 {
        return Err(format!("count is {count}, expected {}", model.len()));
    }
    diff("range scan", &scan(db)?, &expected)?;
    diff("forward cursor walk", &walk_forward(db)?, &expected)?;
    diff("backward cursor walk", &walk_backward(db)?, &expected)?;
    diff("process_each", &each(db)?, &expected)?;
    for (k, v) in &expected {
        let got = db.get(k).map_err(|e| format!("get {}: {e}", show(k)))?;
        if got.as_deref() != Some(v.as_slice()) {
            return Err(format!("get {} is {}, expected {}", show(k), show_opt(got.as_deref()), show(v)));
        }
    }
    if !db.is_healthy() {
        return Err("the database says it is not healthy".into());
    }
    Ok(())
}

/// Checks that `db` is consistent with itself: every way of reading it gives
/// the same records, strictly sorted, as many as it counts.
pub fn self_consistent(db: &TreeDbm, cmp: KeyComparator) -> Result<Vec<Record>, String> {
    let all = scan(db)?;
    check_sorted("range scan", &all, cmp)?;
    let count = db.count().map_err(|e| format!("count: {e}"))?;
    if count != all.len() as u64 {
        return Err(format!("count is {count}, the scan found {}", all.len()));
    }
    diff("forward cursor walk", &walk_forward(db)?, &all)?;
    diff("backward cursor walk", &walk_backward(db)?, &all)?;
    diff("process_each", &each(db)?, &all)?;
    Ok(all)
}
