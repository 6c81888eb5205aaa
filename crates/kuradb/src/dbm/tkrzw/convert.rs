//! Converting a file of the reference into a kuradb database.

use std::path::Path;

use super::ReferenceDbm;
use crate::dbm::class::DbmClass;
use crate::dbm::poly::{Params, PolyDbm};
use crate::dbm::{Access, Dbm, Durability};
use crate::error::Result;

impl ReferenceDbm {
    /// The class a conversion of this file into `dest` writes: `dbm=` in
    /// `params` if given, else the class `dest`'s extension names, else the
    /// class matching the file's.
    pub fn conversion_class(&self, dest: &Path, params: &Params) -> Result<DbmClass> {
        match params.get("dbm") {
            Some(name) => DbmClass::from_name(name),
            None => Ok(DbmClass::from_extension(dest).unwrap_or_else(|| self.class())),
        }
    }

    /// Writes every record of this file into a new kuradb database at
    /// `dest` (of [`ReferenceDbm::conversion_class`], tuned by `params`),
    /// calling `progress` with the number of records written so far now
    /// and then; answers the number of records the new database holds. A
    /// tree's key order goes with it when the new class takes one and
    /// `params` do not name another.
    pub fn convert(&self, dest: &Path, params: &Params, progress: &mut dyn FnMut(u64)) -> Result<u64> {
        let class = self.conversion_class(dest, params)?;
        let mut params = params.clone();
        if let Some(order) = self.key_order() {
            if class.takes("key_comparator") && params.get("key_comparator").is_none() {
                params.insert("key_comparator", order.name())?;
            }
        }
        let out = PolyDbm::open_class(class, Some(dest), Access::ReadWrite, &params.without("dbm"))?;
        let mut written = 0u64;
        let mut failure = None;
        let copied = self.process_each(Access::ReadOnly, &mut |key, value| {
            if failure.is_none() {
                match out.set(key, value) {
                    Ok(()) => {
                        written += 1;
                        if written.is_multiple_of(4096) {
                            progress(written);
                        }
                    }
                    Err(e) => failure = Some(e),
                }
            }
            crate::dbm::Action::Keep
        });
        // A skip database counts what it has merged, at synchronization.
        let result = copied
            .and(failure.map_or(Ok(()), Err))
            .and_then(|()| out.synchronize(Durability::Soft))
            .and_then(|()| out.count());
        progress(written);
        let closed = out.close();
        let count = result?;
        closed?;
        Ok(count)
    }
}
