//! Logs: lines with a time and a level, to stderr or `--log_file`, from
//! `--log_level` up.

use std::path::Path;
use std::str::FromStr;

use kuradb::{Error, ErrorKind, Result};

/// Starts logging at `level` (error, warn, info, debug, trace or off).
pub fn start(level: &str, file: Option<&Path>) -> Result<()> {
    let filter = log::LevelFilter::from_str(level).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("--log_level {level:?}: give one of off, error, warn, info, debug, trace"),
        )
    })?;
    let mut builder = env_logger::Builder::new();
    builder.filter_level(filter).format_timestamp_millis().format_target(false);
    if let Some(path) = file {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io("opening the log file", path, e))?;
        builder.target(env_logger::Target::Pipe(Box::new(file)));
    }
    // A second start in one process (tests) keeps the first logger.
    let _ = builder.try_init();
    Ok(())
}
