//! What every target checks of a database it opened: reads that end, and,
//! where the database was just written by kuradb itself (a restore, a
//! rebuild), exact consistency.

use std::collections::BTreeMap;

use kuradb::dbm::{Access, Action, Dbm};
use kuradb::{Error, KeyComparator, Result};

/// A key and its value.
pub type Record = (Vec<u8>, Vec<u8>);

/// A database the targets opened, with the order of its keys.
pub struct Opened {
    /// The database.
    pub db: Box<dyn Dbm>,
    /// The order a cursor must follow; `None` for unordered classes.
    pub order: Option<KeyComparator>,
    /// Whether a key may have several records (a skip database's).
    pub repeats: bool,
}

/// Panics unless `err` is a clear error: one that says something.
pub fn clear(err: &Error, doing: &str) {
    assert!(!err.to_string().trim().is_empty(), "{doing} failed with an empty error message: {err:?}");
}

/// Every record, by a cursor from the first. More than `limit` records
/// (more than the bytes that could hold them) means the cursor loops, which
/// is a hang: it panics.
pub fn walk(db: &dyn Dbm, limit: usize) -> Result<Vec<Record>> {
    let mut cursor = db.iter()?;
    cursor.first()?;
    let mut out = Vec::new();
    while let Some(record) = cursor.get()? {
        out.push(record);
        assert!(out.len() <= limit, "a cursor went past {limit} records: it loops");
        cursor.next()?;
    }
    Ok(out)
}

/// Every record, by a cursor from the last back to the first (ordered
/// databases only), with the same bound as [`walk`].
pub fn walk_back(db: &dyn Dbm, limit: usize) -> Result<Vec<Record>> {
    let mut cursor = db.iter()?;
    cursor.last()?;
    let mut out = Vec::new();
    while let Some(record) = cursor.get()? {
        out.push(record);
        assert!(out.len() <= limit, "a backward cursor went past {limit} records: it loops");
        cursor.previous()?;
    }
    out.reverse();
    Ok(out)
}

/// Every record, by `process_each`, with the same bound as [`walk`].
pub fn each(db: &dyn Dbm, limit: usize) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        assert!(out.len() <= limit, "process_each went past {limit} records: it loops");
        Action::Keep
    })?;
    Ok(out)
}

/// Everything a reader may do with a database of unknown health: walk it
/// every way, count it, look every listed key up, inspect it. Errors are
/// fine if clear; only panics, hangs and huge allocations are failures.
/// Answers the forward walk, if it succeeded.
pub fn read_everything(opened: &Opened, limit: usize) -> Option<Vec<Record>> {
    let db = opened.db.as_ref();
    let listed = walk(db, limit).map_err(|e| clear(&e, "a walk")).ok();
    if let Err(e) = each(db, limit) {
        clear(&e, "process_each");
    }
    if opened.order.is_some() {
        if let Err(e) = walk_back(db, limit) {
            clear(&e, "a backward walk");
        }
    }
    for (key, _) in listed.iter().flatten().take(1000) {
        if let Err(e) = db.get(key) {
            clear(&e, "a get");
        }
        let mut cursor = match db.iter() {
            Ok(cursor) => cursor,
            Err(e) => return listed.inspect(|_| clear(&e, "making a cursor")),
        };
        if let Err(e) = cursor.jump(key).and_then(|_| cursor.get()) {
            clear(&e, "a jump");
        }
    }
    // The batched lookup (after a prefetch hint, which must take any
    // bytes) answers what the lone lookups answer, where both answer.
    let keys: Vec<&[u8]> = listed.iter().flatten().take(64).map(|(key, _)| key.as_slice()).collect();
    db.prefetch(&keys);
    match db.get_multi(&keys) {
        Ok(values) => {
            for (key, value) in keys.iter().zip(&values) {
                if let Ok(single) = db.get(key) {
                    assert_eq!(&single, value, "get_multi and get of {key:?} disagree");
                }
            }
        }
        Err(e) => clear(&e, "a get_multi"),
    }
    for result in [db.count().map(drop), db.inspect().map(drop), db.should_be_rebuilt().map(drop)] {
        if let Err(e) = result {
            clear(&e, "count, inspect or should_be_rebuilt");
        }
    }
    let _ = db.is_healthy();
    listed
}

/// Panics unless the database holds exactly `records` and answers for them
/// consistently: keys unique (unless the class lets them repeat) and in the
/// database's order, the count right, every key's value one the walk showed.
/// For a database kuradb itself just wrote (restored or rebuilt), whatever
/// its source held.
pub fn assert_consistent(opened: &Opened, records: &[Record], what: &str) {
    let db = opened.db.as_ref();
    let mut values: BTreeMap<&[u8], Vec<&[u8]>> = BTreeMap::new();
    for (key, value) in records {
        values.entry(key).or_default().push(value);
    }
    if !opened.repeats {
        assert_eq!(values.len(), records.len(), "{what}: a walk shows a key twice");
    }
    if let Some(order) = opened.order {
        for pair in records.windows(2) {
            let ordering = order.compare(&pair[0].0, &pair[1].0);
            assert!(
                ordering.is_lt() || (opened.repeats && ordering.is_eq()),
                "{what}: a walk shows {:?} before {:?}, out of {} order",
                pair[0].0,
                pair[1].0,
                order.name()
            );
        }
    }
    let count = db.count().unwrap_or_else(|e| panic!("{what}: count: {e}"));
    assert_eq!(count, records.len() as u64, "{what}: the count is not the number of records walked");
    for (key, values) in values {
        let got = db.get(key).unwrap_or_else(|e| panic!("{what}: get {key:?}: {e}"));
        assert!(
            got.as_deref().is_some_and(|got| values.contains(&got)),
            "{what}: get {key:?} answers {got:?}, which the walk did not show"
        );
    }
}
