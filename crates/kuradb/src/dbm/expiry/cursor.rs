//! The cursor of a database with expiry: the wrapped database's, stepping
//! over the marker and the expired records, and decoding values.

use super::{decode, encode, is_expired, EXPIRY_MARKER};
use crate::dbm::{Cursor, Edge};
use crate::error::Result;

pub(super) struct ExpiringCursor<'a> {
    inner: Box<dyn Cursor + 'a>,
    /// The time the cursor was made: records expiring later are shown.
    now: u64,
}

/// Which way to step over records a reader must not see.
#[derive(Clone, Copy)]
enum Toward {
    Next,
    Previous,
}

impl<'a> ExpiringCursor<'a> {
    pub fn new(inner: Box<dyn Cursor + 'a>, now: u64) -> ExpiringCursor<'a> {
        ExpiringCursor { inner, now }
    }

    /// Moves past the marker and expired records.
    fn settle(&mut self, toward: Toward) -> Result<()> {
        while let Some((key, stored)) = self.inner.get()? {
            let hidden = key == EXPIRY_MARKER || is_expired(decode(&stored)?.0, self.now);
            if !hidden {
                return Ok(());
            }
            match toward {
                Toward::Next => self.inner.next()?,
                Toward::Previous => self.inner.previous()?,
            }
        }
        Ok(())
    }
}

impl Cursor for ExpiringCursor<'_> {
    fn first(&mut self) -> Result<()> {
        self.inner.first()?;
        self.settle(Toward::Next)
    }

    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.inner.jump(key)?;
        self.settle(Toward::Next)
    }

    fn next(&mut self) -> Result<()> {
        self.inner.next()?;
        self.settle(Toward::Next)
    }

    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.settle(Toward::Next)?;
        match self.inner.get()? {
            None => Ok(None),
            Some((key, stored)) => Ok(Some((key, decode(&stored)?.1.to_vec()))),
        }
    }

    /// Replaces the value, keeping the record's expiry.
    fn set(&mut self, value: &[u8]) -> Result<()> {
        self.settle(Toward::Next)?;
        let expiry = match self.inner.get()? {
            Some((_, stored)) => decode(&stored)?.0,
            None => None,
        };
        self.inner.set(&encode(value, expiry))
    }

    fn remove(&mut self) -> Result<()> {
        self.settle(Toward::Next)?;
        self.inner.remove()?;
        self.settle(Toward::Next)
    }

    fn last(&mut self) -> Result<()> {
        self.inner.last()?;
        self.settle(Toward::Previous)
    }

    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.inner.jump_lower(key, edge)?;
        self.settle(Toward::Previous)
    }

    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.inner.jump_upper(key, edge)?;
        self.settle(Toward::Next)
    }

    fn previous(&mut self) -> Result<()> {
        self.inner.previous()?;
        self.settle(Toward::Previous)
    }
}
