//! `kura util check`: a published directory's current version read whole
//! against its manifest.

use std::path::PathBuf;

use clap::Args;
use kuradb::dbm::published;
use kuradb::{Error, ErrorKind, Result};

use crate::out::print_line;

/// Arguments of `kura util check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The published directory (the one holding CURRENT).
    dir: PathBuf,
}

/// Checks every shard file of the current version: its size, the checksum
/// of its bytes and its record count, as the manifest gives them.
pub fn check(args: &CheckArgs) -> Result<()> {
    if !published::is_published(&args.dir) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{} is not a published directory (it has no {}); `kura util inspect --validate` checks a \
                 database's records",
                args.dir.display(),
                published::CURRENT
            ),
        ));
    }
    let manifest = published::verify(&args.dir)?;
    let records: u64 = manifest.shards.iter().map(|s| s.records).sum();
    print_line(format_args!(
        "v-{}: {} shards of class {}, {records} records: every file matches the manifest",
        manifest.version,
        manifest.num_shards(),
        manifest.class.name()
    ))
}
