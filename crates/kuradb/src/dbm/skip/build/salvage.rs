//! What can be read of a damaged file.

use super::READ_CHUNK;
use crate::dbm::skip::format::{Window, HEADER_SIZE};
use crate::error::Result;
use crate::file::File;

/// Reads the records of a damaged file from the start for as long as they
/// parse and stay in order, giving each to `f`; answers how many it gave.
pub(crate) fn salvage(
    file: &dyn File,
    end: u64,
    width: u8,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    let mut window = Window::new(READ_CHUNK);
    let mut at = HEADER_SIZE;
    let mut last: Option<Vec<u8>> = None;
    let mut count = 0;
    while at < end {
        let Ok(record) = window.record(file, end, at, usize::from(width), true) else { break };
        let key = window.key(&record);
        if last.as_deref().is_some_and(|last| key < last) {
            break;
        }
        f(key, window.value(&record))?;
        last = Some(key.to_vec());
        count += 1;
        at = record.end();
    }
    Ok(count)
}
