//! kuradb: a `PolyDbm` used as a plain DBM (sets, then a hard
//! synchronization for durability), wrapped in a `TransactionalDbm` only
//! for the transactional rows.

use std::path::Path;

use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::txn::{CommitDurability, TransactionOptions, TransactionalDbm};
use kuradb::dbm::{Access, Dbm, Durability};
use kuradb::Params;

use crate::engine::BoxError;
use crate::store::{Pair, Reader, Store};

/// The tree's parameters: a node cache that holds the benchmark's tree, as
/// a user who reads ranges of it would size it, on positional I/O, since the
/// cache already keeps the nodes the map would (see `StoreName::settings`).
pub const TREE_PARAMS: &str = "file=pos-para,max_cached_pages=40000";

/// A kuradb database of the class its file name's extension names, open
/// either plainly or under `TransactionalDbm`.
pub struct Kura {
    plain: Option<PolyDbm>,
    txn: Option<TransactionalDbm<PolyDbm>>,
}

impl Kura {
    /// Makes a fresh database at `path` with the parameters in `params`
    /// (a parameter string; empty for the class's defaults).
    pub fn open(path: &Path, params: &str) -> Result<Kura, BoxError> {
        let params = Params::parse(params)?;
        let plain = PolyDbm::open(path, Access::ReadWrite, &params)?;
        Ok(Kura { plain: Some(plain), txn: None })
    }

    fn db(&self) -> &dyn Dbm {
        match (&self.plain, &self.txn) {
            (Some(plain), _) => plain,
            (None, Some(txn)) => txn,
            (None, None) => unreachable!("a Kura always holds one database"),
        }
    }

    /// The plain database, taken back from the transactional wrapper if it
    /// is open (open all along, as a user would keep it).
    fn plain(&mut self) -> Result<&PolyDbm, BoxError> {
        if let Some(txn) = self.txn.take() {
            self.plain = Some(txn.into_inner()?);
        }
        Ok(self.plain.as_ref().expect("the plain database is open"))
    }
}

impl Store for Kura {
    fn write(&mut self, pairs: &mut dyn Iterator<Item = Pair>, durable: bool) -> Result<(), BoxError> {
        let db = self.plain()?;
        for (key, value) in pairs {
            db.set(&key, &value)?;
        }
        if durable {
            db.synchronize(Durability::Hard)?;
        }
        Ok(())
    }

    fn remove(&mut self, keys: &mut dyn Iterator<Item = Vec<u8>>, durable: bool) -> Result<(), BoxError> {
        let db = self.plain()?;
        for key in keys {
            db.remove(&key)?;
        }
        if durable {
            db.synchronize(Durability::Hard)?;
        }
        Ok(())
    }

    fn write_transactional(&mut self, pairs: &mut dyn Iterator<Item = Pair>) -> Option<Result<(), BoxError>> {
        Some((|| {
            if self.txn.is_none() {
                let plain = self.plain.take().expect("the plain database is open");
                let options = TransactionOptions::for_poly(&plain)?;
                self.txn = Some(TransactionalDbm::open(plain, options)?);
            }
            let txn = self.txn.as_ref().expect("the transactional database is open");
            let mut batch = txn.batch(CommitDurability::Sync);
            for (key, value) in pairs {
                batch.set(&key, &value);
            }
            batch.commit()?;
            Ok(())
        })())
    }

    fn end_transactional(&mut self) -> Result<(), BoxError> {
        self.plain()?;
        Ok(())
    }

    fn write_out(&self) -> Result<(), BoxError> {
        Ok(self.db().synchronize(Durability::Soft)?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>, BoxError> {
        Ok(Box::new(KuraReader(self.db())))
    }

    fn len(&self) -> Result<u64, BoxError> {
        Ok(self.db().count()?)
    }

    fn iterate(&self) -> Result<u64, BoxError> {
        let mut cursor = self.db().iter()?;
        cursor.first()?;
        let mut count = 0;
        while cursor.read(&mut |_, _| count += 1)? {
            cursor.next()?;
        }
        Ok(count)
    }

    fn compact(&mut self) -> Result<bool, BoxError> {
        self.plain()?.rebuild()?;
        Ok(true)
    }

    fn close(mut self: Box<Self>) -> Result<(), BoxError> {
        if let Some(txn) = self.txn.take() {
            txn.close()?;
        }
        if let Some(plain) = self.plain.take() {
            plain.close()?;
        }
        Ok(())
    }
}

struct KuraReader<'a>(&'a dyn Dbm);

impl Reader for KuraReader<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>, BoxError> {
        Ok(self.0.get(key)?.map(|value| value.len()))
    }

    fn range(&mut self, start: &[u8], count: usize) -> Result<Option<usize>, BoxError> {
        if !self.0.is_ordered() {
            return Ok(None);
        }
        let mut cursor = self.0.iter()?;
        cursor.jump(start)?;
        let mut bytes = 0;
        for i in 0..count {
            // No step past the last record asked for.
            if i > 0 {
                cursor.next()?;
            }
            if !cursor.read(&mut |key, value| bytes += key.len() + value.len())? {
                break;
            }
        }
        Ok(Some(bytes))
    }
}
