//! Reading a whole database every way the trait offers, and comparing what
//! each way finds with the model.

use kuradb::dbm::{Access, Action, Dbm};

use super::{Model, Record};
use crate::common::hash::{show, show_opt};

/// A walk that finds more records than this never ends.
const TOO_MANY: usize = 1_000_000;

/// Every record a read-only `process_each` visits, in its order.
pub fn each(db: &dyn Dbm) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    db.process_each(Access::ReadOnly, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        Action::Keep
    })
    .map_err(|e| format!("process_each: {e}"))?;
    Ok(out)
}

/// Every record a cursor visits from the first on.
pub fn walk_forward(db: &dyn Dbm) -> Result<Vec<Record>, String> {
    let mut c = db.iter().map_err(|e| format!("iter: {e}"))?;
    c.first().map_err(|e| format!("cursor first: {e}"))?;
    let mut out = Vec::new();
    while let Some(r) = c.get().map_err(|e| format!("cursor get: {e}"))? {
        out.push(r);
        c.next().map_err(|e| format!("cursor next: {e}"))?;
        if out.len() > TOO_MANY {
            return Err("the forward walk does not end".into());
        }
    }
    Ok(out)
}

/// Every record a cursor visits from the last back, in forward order.
pub fn walk_backward(db: &dyn Dbm) -> Result<Vec<Record>, String> {
    let mut c = db.iter().map_err(|e| format!("iter: {e}"))?;
    c.last().map_err(|e| format!("cursor last: {e}"))?;
    let mut out = Vec::new();
    while let Some(r) = c.get().map_err(|e| format!("cursor get: {e}"))? {
        out.push(r);
        c.previous().map_err(|e| format!("cursor previous: {e}"))?;
        if out.len() > TOO_MANY {
            return Err("the backward walk does not end".into());
        }
    }
    out.reverse();
    Ok(out)
}

/// Describes the first difference of two record lists.
pub fn diff(what: &str, actual: &[Record], expected: &[Record]) -> Result<(), String> {
    if let Some(i) = actual.iter().zip(expected).position(|(a, e)| a != e) {
        return Err(format!(
            "{what}: record {i} is {} = {}, expected {} = {} ({} vs {} records)",
            show(&actual[i].0),
            show(&actual[i].1),
            show(&expected[i].0),
            show(&expected[i].1),
            actual.len(),
            expected.len()
        ));
    }
    if actual.len() != expected.len() {
        let extra = actual.get(expected.len()).or(expected.get(actual.len())).map(|r| show(&r.0));
        return Err(format!(
            "{what}: {} records, expected {} (first unmatched key {})",
            actual.len(),
            expected.len(),
            extra.unwrap_or_default()
        ));
    }
    Ok(())
}

/// Like [`diff`], in whatever order the records came.
pub fn diff_unordered(what: &str, actual: &[Record], expected: &[Record]) -> Result<(), String> {
    let sorted = |records: &[Record]| {
        let mut all = records.to_vec();
        all.sort();
        all
    };
    diff(&format!("{what} (sorted)"), &sorted(actual), &sorted(expected))
}

/// Checks that `db` holds exactly what `model` says readers see, by every
/// way of reading it: the count, each key's get and contains, a read-only
/// process_each, a cursor walk forward and (ordered) backward, all visiting
/// each record once, in order where the class keeps one; and that the
/// database says it is healthy.
pub fn compare(db: &dyn Dbm, model: &Model) -> Result<(), String> {
    let caps = *model.caps();
    let expected = model.flat();
    let count = db.count().map_err(|e| format!("count: {e}"))?;
    if count != expected.len() as u64 {
        return Err(format!("count is {count}, expected {}", expected.len()));
    }
    for key in model.records.keys() {
        let got = db.get(key).map_err(|e| format!("get {}: {e}", show(key)))?;
        if got.as_deref() != model.get(key) {
            return Err(format!(
                "get {} is {}, expected {}",
                show(key),
                show_opt(got.as_deref()),
                show_opt(model.get(key))
            ));
        }
        if !db.contains(key).map_err(|e| format!("contains {}: {e}", show(key)))? {
            return Err(format!("contains {} answered false", show(key)));
        }
    }
    let in_order = caps.order.is_some();
    let visited = each(db)?;
    if in_order && caps.each_in_order {
        diff("process_each", &visited, &expected)?;
    } else {
        diff_unordered("process_each", &visited, &expected)?;
    }
    let forward = walk_forward(db)?;
    if in_order {
        diff("forward cursor walk", &forward, &expected)?;
        diff("backward cursor walk", &walk_backward(db)?, &expected)?;
    } else {
        diff_unordered("cursor walk", &forward, &expected)?;
    }
    if db.is_ordered() != in_order {
        return Err(format!("is_ordered answers {}", db.is_ordered()));
    }
    if !db.is_healthy() {
        return Err("the database says it is not healthy".into());
    }
    Ok(())
}
