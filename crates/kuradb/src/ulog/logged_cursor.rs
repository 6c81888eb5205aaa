//! The cursor of a [`LoggedDbm`]: the wrapped database's cursor, whose
//! changes are logged like every other.

use super::logged::{refused, LoggedDbm};
use crate::dbm::ordered_cursor::past_end;
use crate::dbm::Cursor;
use crate::error::Result;

/// Moves and reads as the wrapped cursor does; a `set` or `remove` takes the
/// lock of the record's key, checks that the cursor is still there (another
/// thread may have removed the record and so moved it), logs, and then lets
/// the wrapped cursor make the change its own way.
pub(super) struct LoggedCursor<'a> {
    owner: &'a LoggedDbm,
    inner: Box<dyn Cursor + 'a>,
}

impl<'a> LoggedCursor<'a> {
    pub(super) fn new(owner: &'a LoggedDbm, inner: Box<dyn Cursor + 'a>) -> LoggedCursor<'a> {
        LoggedCursor { owner, inner }
    }

    /// Runs `change` on the record at the position with its key's lock
    /// held, once `log` has logged it.
    fn change(
        &mut self,
        log: &dyn Fn(&[u8]) -> Result<()>,
        change: &mut dyn FnMut(&mut dyn Cursor) -> Result<()>,
    ) -> Result<()> {
        loop {
            let Some((key, _)) = self.inner.get()? else { return Err(past_end()) };
            let _stripe = self.owner.lock_key(&key);
            if self.inner.get()?.map(|(k, _)| k).as_deref() != Some(key.as_slice()) {
                continue;
            }
            log(&key).map_err(refused)?;
            return change(self.inner.as_mut());
        }
    }
}

impl Cursor for LoggedCursor<'_> {
    crate::dbm::forward_cursor_moves!(inner);

    fn set(&mut self, value: &[u8]) -> Result<()> {
        let logger = self.owner.logger().clone();
        self.change(&|key| logger.write_set(key, value), &mut |c| c.set(value))
    }
    fn remove(&mut self) -> Result<()> {
        let logger = self.owner.logger().clone();
        self.change(&|key| logger.write_remove(key), &mut |c| c.remove())
    }
}
