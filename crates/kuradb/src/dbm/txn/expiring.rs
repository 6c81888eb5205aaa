//! Expiry under transactions: the calls of [`Expiry`] on a
//! [`TransactionalDbm`] over a [`PolyDbm`] opened with expiry, each a plain
//! write of the wrapper, so open views keep what it replaces and attached
//! indexes follow it.

use super::TransactionalDbm;
use crate::dbm::expiry::{Clock, ExpiringAction, ExpiringProcessor, Expiry, SweepReport, SystemClock};
use crate::dbm::poly::PolyDbm;
use crate::dbm::Access;
use crate::error::{Error, ErrorKind, Result};

fn without_expiry() -> Error {
    Error::new(
        ErrorKind::Infeasible,
        "the database has no expiry: expiry is turned on when a new database is made (the parameter \
         expiry=true)",
    )
}

impl Expiry for TransactionalDbm<PolyDbm> {
    fn now_ms(&self) -> u64 {
        match self.inner.expiring() {
            Some(layer) => layer.now_ms(),
            None => SystemClock.now_ms(),
        }
    }

    /// Fails with [`ErrorKind::Infeasible`] for a database without expiry.
    fn process_expiring(&self, key: &[u8], access: Access, f: &mut ExpiringProcessor<'_>) -> Result<()> {
        let layer = self.inner.expiring().ok_or_else(without_expiry)?;
        if !access.is_writable() {
            // The layer reads the database itself.
            self.catch_up_reads();
            return layer.process_expiring(key, access, f);
        }
        self.write_through(|inner, record| {
            let layer = inner.expiring().ok_or_else(without_expiry)?;
            layer.process_expiring(key, Access::ReadWrite, &mut |live| {
                let action = f(live);
                if action.is_some() {
                    record(key, live.map(|(value, _)| value));
                }
                action
            })
        })
    }

    /// Each removal is a plain write of the wrapper, as
    /// [`process_expiring`](Expiry::process_expiring)'s are.
    fn sweep(&self, max_records: usize) -> Result<SweepReport> {
        let layer = self.inner.expiring().ok_or_else(without_expiry)?;
        layer.sweep_with(max_records, &mut |key, _| {
            let mut removed = false;
            self.process_expiring(key, Access::ReadWrite, &mut |live| {
                // Gone for reads (expired) but maybe still stored: removing it
                // removes nothing a read could see.
                removed = live.is_none();
                removed.then_some(ExpiringAction::Remove)
            })?;
            Ok(removed)
        })
    }
}
