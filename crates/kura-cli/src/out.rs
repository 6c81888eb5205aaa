//! Standard output of every `kura` subcommand, and what happens when writing
//! it fails.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe is an `EPIPE` error
//! rather than the signal that ends a C tool; `println!` would panic on it.
//! Every subcommand writes through this module instead:
//!
//! - **A closed pipe** (`kura util list X | head -1`): the command stops at
//!   once, prints nothing, and exits with status 141 (128 + SIGPIPE), the
//!   status a shell reports for `cat` or the reference's tools killed by the
//!   signal, so `set -o pipefail` scripts see the same thing either way. A
//!   command whose whole output fits in the pipe before the reader closes it
//!   never sees the error and exits 0, as those tools do.
//! - **Any other write error** (`> /dev/full`, a vanished disk): one line on
//!   stderr, `kura: system: writing of standard output: No space left on
//!   device (os error 28)`, and exit status 1.
//!
//! Commands that return a [`Result`] turn a write error into an error with
//! [`write_failed`] and let `main` decide by [`exit_status`]; the benchmarks,
//! whose printing returns nothing, call [`say`], which ends the process on
//! such an error (a benchmark whose report cannot be read is not worth
//! finishing, and the reference's tools die there too).
//!
//! With `--json`, the benchmarks print their JSON objects with [`json_line`]
//! and everything meant for people (headers, progress dots, the reference's
//! text lines) through [`say`] to stderr, so stdout holds nothing but JSON.

use std::fmt;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use kuradb::{Error, Result};

/// The exit status of a command whose reader closed the pipe.
pub const BROKEN_PIPE_STATUS: u8 = 141;

/// Whether text for people goes to stderr (set by `--json`).
static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Sends the text for people of [`say`] to stderr from now on, keeping stdout
/// for JSON only.
pub fn keep_stdout_for_json() {
    TEXT_TO_STDERR.store(true, Ordering::Relaxed);
}

/// A buffered writer of stdout for a command's output; map its errors with
/// [`write_failed`].
pub fn stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock())
}

/// Writes `bytes` to stdout and flushes them.
pub fn print_bytes(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(write_failed)
}

/// Writes one line to stdout and flushes it.
pub fn print_line(line: fmt::Arguments<'_>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(line).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).map_err(write_failed)
}

/// A write error of stdout as a kuradb error (whose OS error [`exit_status`] reads).
pub fn write_failed(e: std::io::Error) -> Error {
    Error::io("writing", Path::new("standard output"), e)
}

/// Whether `err` is a write to a pipe whose reader has gone.
pub fn is_broken_pipe(err: &Error) -> bool {
    err.raw_os_error() == Some(libc::EPIPE)
}

/// The exit status of a command that failed with `err`, after printing the
/// one line that says why (nothing for a closed pipe).
pub fn exit_status(err: &Error) -> u8 {
    if is_broken_pipe(err) {
        return BROKEN_PIPE_STATUS;
    }
    eprintln!("kura: {err}");
    1
}

/// Writes one line of text for people: to stdout, or to stderr once
/// [`keep_stdout_for_json`] was called. A write error ends the process as
/// [`exit_status`] says.
pub fn say(line: fmt::Arguments<'_>) {
    let written = if TEXT_TO_STDERR.load(Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        err.write_fmt(line).and_then(|()| err.write_all(b"\n"))
    } else {
        let mut out = std::io::stdout().lock();
        out.write_fmt(line).and_then(|()| out.write_all(b"\n"))
    };
    written.map_err(write_failed).unwrap_or_else(|e| die(&e));
}

/// Writes `bytes` of text for people where [`say`] writes, and flushes them
/// (the benchmarks' progress dots).
pub fn say_bytes(bytes: &[u8]) {
    let written = if TEXT_TO_STDERR.load(Ordering::Relaxed) {
        std::io::stderr().lock().write_all(bytes)
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).and_then(|()| out.flush())
    };
    written.map_err(write_failed).unwrap_or_else(|e| die(&e));
}

/// Writes one JSON line to stdout; a write error ends the process as
/// [`exit_status`] says.
pub fn json_line(line: fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    out.write_fmt(line)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(write_failed)
        .unwrap_or_else(|e| die(&e));
}

/// Flushes stdout at the end of a command.
pub fn flush() -> Result<()> {
    std::io::stdout().lock().flush().map_err(write_failed)
}

fn die(err: &Error) -> ! {
    std::process::exit(i32::from(exit_status(err)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_told_from_other_write_errors() {
        let pipe = write_failed(std::io::Error::from_raw_os_error(libc::EPIPE));
        let full = write_failed(std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(is_broken_pipe(&pipe));
        assert!(!is_broken_pipe(&full));
        assert_eq!(exit_status(&pipe), BROKEN_PIPE_STATUS);
        assert!(full.to_string().contains("writing of standard output"), "{full}");
    }
}
