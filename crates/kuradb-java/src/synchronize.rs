//! Synchronizing with the reference's parameters, for `DBM.synchronize` and
//! `AsyncDBM.synchronize`.

use jni::objects::{JObjectArray, JString};
use jni::sys::{jboolean, jlong};
use kuradb::dbm::any::AnyDbm;
use kuradb::dbm::Dbm;
use kuradb::{DbmClass, ErrorKind, Params};

use crate::convert::params;
use crate::handle::{object, Database};
use crate::throw::{check, native};

/// Synchronizes `db` as the reference's `Synchronize(hard, params)` does.
/// Only a skip database uses the parameters: `merge` (paths of other
/// databases, separated by colons) adds every record of those databases,
/// and `reducer` reduces the records of one key (by a rebuild with that
/// reducer), before the file is written. Other databases ignore both, as
/// the reference's do; any other parameter is refused, naming it.
pub fn synchronize_with(db: &AnyDbm, hard: bool, params: &Params) -> kuradb::Result<()> {
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
    if db.class() != DbmClass::Skip {
        return db.synchronize(hard);
    }
    for path in merge.into_iter().flat_map(|m| m.split(':')).filter(|p| !p.is_empty()) {
        let source = AnyDbm::open(path, false, &Params::new())?;
        let exported = source.export(db);
        source.close()?;
        exported?;
    }
    if let Some(reducer) = reducer {
        let mut only = Params::new();
        only.insert("reducer", reducer)?;
        db.rebuild_with(&only)?;
    }
    db.synchronize(hard)
}

native! {
    /// Synchronizes with the reference's parameters (see [`synchronize_with`]).
    fn Java_io_kuradb_Native_synchronizeWith(env, handle: jlong, hard: jboolean, pairs: JObjectArray<'l, JString<'l>>) -> () {
        let params = params(env, &pairs)?;
        object::<Database>(env, handle)?.with(env, |env, db| check(env, synchronize_with(db, hard, &params)))
    }
}
