//! A message queue in files, in the reference's format: [`MessageQueue`]
//! writes, [`MessageQueueReader`] reads; `format.rs` holds the bytes,
//! `files.rs` the naming, listing and pruning of the files, `scan.rs` the
//! reading of one record.

mod files;
mod format;
mod reader;
mod scan;
mod writer;

pub use files::{file_path, find_files, read_file_meta, remove_old_files, NewestFile};
pub(crate) use format::record_buffer;
pub use format::FileMeta;
pub use reader::MessageQueueReader;
pub use writer::MessageQueue;
