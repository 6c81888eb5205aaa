//! The reference's `Synchronize(hard, params)`, one behaviour for the three
//! compatible layers.

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::{Access, Dbm};
use kuradb::{DbmClass, ErrorKind, Params};

use crate::handle::Db;

/// Synchronizes `db` as the reference's `Synchronize(hard, params)` does.
///
/// As the reference documents it, only a skip database uses the
/// parameters: `merge` (paths of other databases, separated by colons)
/// adds every record of those databases, and `reducer` reduces the records
/// of one key (by a rebuild with that reducer), before the file is written.
/// Other databases ignore both. Any other parameter is refused, naming it.
pub fn synchronize_with(db: &Db, hard: bool, params: &Params) -> kuradb::Result<()> {
    let (mut reducer, mut merge) = (None, None);
    for (name, value) in params.iter() {
        match name {
            "reducer" => reducer = Some(value),
            "merge" => merge = Some(value),
            _ => {
                return Err(kuradb::Error::new(
                    ErrorKind::InvalidArgument,
                    format!("synchronize takes the parameters merge and reducer (for a SkipDBM), not {name}"),
                ))
            }
        }
    }
    if db.inner().class() != DbmClass::Skip {
        return db.synchronize(if hard {
            kuradb::dbm::Durability::Hard
        } else {
            kuradb::dbm::Durability::Soft
        });
    }
    for path in merge.into_iter().flat_map(|m| m.split(':')).filter(|p| !p.is_empty()) {
        let source = PolyDbm::open(path, Access::ReadOnly, &Params::new())?;
        let exported = source.export(db);
        source.close()?;
        exported?;
    }
    if let Some(reducer) = reducer {
        let mut only = Params::new();
        only.insert("reducer", reducer)?;
        db.inner().rebuild_with(&only)?;
    }
    db.synchronize(if hard { kuradb::dbm::Durability::Hard } else { kuradb::dbm::Durability::Soft })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::transactional;

    fn open(path: &std::path::Path) -> Db {
        transactional(PolyDbm::open(path, Access::ReadWrite, &Params::new()).unwrap(), Access::ReadWrite)
            .unwrap()
    }

    #[test]
    fn a_skip_database_merges_and_reduces_and_others_ignore_the_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.tks"), dir.path().join("b.tks"));
        let other = PolyDbm::open(&b, Access::ReadWrite, &Params::new()).unwrap();
        other.set(b"k", b"from b").unwrap();
        other.set(b"only b", b"1").unwrap();
        other.close().unwrap();
        let db = open(&a);
        db.set(b"k", b"from a").unwrap();
        let params: Params =
            [("merge", b.to_str().unwrap()), ("reducer", "ReduceToFirst")].into_iter().collect();
        synchronize_with(&db, false, &params).unwrap();
        assert_eq!(db.count().unwrap(), 2);
        assert_eq!(db.get(b"only b").unwrap().as_deref(), Some(&b"1"[..]));
        let bad: Params = [("speed", "fast")].into_iter().collect();
        assert_eq!(synchronize_with(&db, false, &bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
        db.close().unwrap();
        let hash = open(&dir.path().join("h.tkh"));
        synchronize_with(&hash, true, &params).unwrap();
        assert_eq!(hash.count().unwrap(), 0);
        hash.close().unwrap();
    }
}
