//! A hook on every file a database opens, for tests: a [`FileWrapper`]
//! wraps each file (in a [`FaultFile`](super::FaultFile), say) and may keep
//! a handle to it.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::{File, FileSpec, OpenOptions};
use crate::error::Result;

/// A function every file a database opens passes through, so a test can
/// wrap it (in a [`FaultFile`](crate::file::FaultFile), say) and keep a
/// handle to it. Not part of any file's format; applies to the files of the
/// database itself, its rebuilds and restores.
#[doc(hidden)]
#[derive(Clone)]
pub struct FileWrapper(pub Arc<WrapFn>);

/// The function inside a [`FileWrapper`].
#[doc(hidden)]
pub type WrapFn = dyn Fn(Box<dyn File>) -> Box<dyn File> + Send + Sync;

impl fmt::Debug for FileWrapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FileWrapper(..)")
    }
}

/// Opens `path` as `spec` says, passing the file through `wrapper` if one is given.
pub(crate) fn open_wrapped(
    spec: &FileSpec,
    wrapper: Option<&FileWrapper>,
    path: &Path,
    open: &OpenOptions,
) -> Result<Box<dyn File>> {
    let file = spec.open(path, open)?;
    Ok(match wrapper {
        Some(wrap) => (wrap.0)(file),
        None => file,
    })
}
