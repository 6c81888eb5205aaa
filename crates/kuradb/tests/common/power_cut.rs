//! What the power-cut tests share: the file specs they cut the power on, and
//! fault-injecting files for a database whose controls the test keeps to cut
//! the power with.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kuradb::dbm::tree::TreeOptions;
use kuradb::file::FileWrapper;
use kuradb::file::{FaultControl, FaultFile, FileKind, FileSpec};

/// The specs a power cut is tested on: memory mapping, plain positional
/// calls, and atomic block I/O through a small page cache.
pub fn specs() -> Vec<FileSpec> {
    let mut block = FileSpec::new(FileKind::PositionalAtomic);
    block.block_size = 512;
    block.pagecache = true;
    block.page_cache_capacity = Some(4);
    vec![FileSpec::new(FileKind::MmapParallel), FileSpec::new(FileKind::PositionalParallel), block]
}

/// The path a file was opened at, and the control of its fault injection.
type Opened = (PathBuf, Arc<FaultControl>);

/// The fault controls of every file a database opened through
/// [`Controls::wrapper`], with its path, in the order opened.
#[derive(Clone, Default)]
pub struct Controls(Arc<Mutex<Vec<Opened>>>);

impl Controls {
    /// A file wrapper for the database's options that opens every file as a
    /// [`FaultFile`] and keeps its control here.
    pub fn wrapper(&self) -> FileWrapper {
        let seen = self.clone();
        FileWrapper(Arc::new(move |inner| {
            let path = inner.path().to_path_buf();
            let file = FaultFile::new(inner);
            seen.0.lock().expect("controls").push((path, file.control()));
            Box::new(file)
        }))
    }

    /// The control of the file opened last.
    pub fn last(&self) -> Arc<FaultControl> {
        self.0.lock().expect("controls").last().map(|(_, c)| c.clone()).expect("a file was opened")
    }

    /// The control of the file opened last of those named `path` now: the
    /// one a database at `path` has open, even after a rebuild opened others
    /// beside it (the rebuilt file, opened under a temporary name, is renamed
    /// over the database and stays open).
    pub fn last_at(&self, path: &Path) -> Arc<FaultControl> {
        self.0
            .lock()
            .expect("controls")
            .iter()
            .rev()
            .find(|(_, c)| c.path().file_name() == path.file_name())
            .map(|(_, c)| c.clone())
            .expect("a file was opened")
    }
}

/// `options` without their file wrapper, to reopen after the cut as a new
/// process would.
pub fn plain_tree(mut options: TreeOptions) -> TreeOptions {
    options.hash.wrap_file = None;
    options
}
