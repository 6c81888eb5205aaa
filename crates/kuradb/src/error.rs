//! The one error type of kuradb.
//!
//! Every fallible operation returns [`Result<T>`]. An [`Error`] carries a
//! [`ErrorKind`] a program can branch on, a message naming the operation and the
//! file it concerned, and, for failures of the operating system, the
//! [`std::io::Error`] behind it (reachable through [`std::error::Error::source`]).
//! A missing key is not an error: lookups answer `Ok(None)`.

use std::fmt;
use std::io;
use std::path::Path;

/// What went wrong, in the categories a caller can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A record, file or other named thing does not exist.
    NotFound,
    /// A record or file already exists and was not to be overwritten.
    Duplication,
    /// An argument or parameter is malformed or out of range.
    InvalidArgument,
    /// The operation cannot be done in the object's current state (for example a
    /// closed database, or a read past a file's end).
    Infeasible,
    /// A write to a database opened for reading only: the reference's
    /// precondition error, told apart from [`ErrorKind::Infeasible`] so that a
    /// binding reports it without reading the message.
    ReadOnly,
    /// Stored data is inconsistent: a corrupt or truncated file.
    BrokenData,
    /// The resource is locked by someone else and the caller asked not to wait.
    WouldBlock,
    /// The operating system refused an operation; the source is the OS error.
    System,
    /// The feature is not supported on this platform or filesystem.
    NotImplemented,
    /// A user callback asked to stop, or failed.
    Canceled,
    /// A transaction read something another commit changed before it
    /// committed (or its snapshot grew too old): nothing was applied, and
    /// running it again may succeed.
    Conflict,
}

impl ErrorKind {
    /// A short lowercase name, as printed at the start of an error message.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::Duplication => "duplication",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Infeasible => "infeasible",
            ErrorKind::ReadOnly => "read-only",
            ErrorKind::BrokenData => "broken data",
            ErrorKind::WouldBlock => "locked",
            ErrorKind::System => "system error",
            ErrorKind::NotImplemented => "not implemented",
            ErrorKind::Canceled => "canceled",
            ErrorKind::Conflict => "conflict",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error of kuradb: a kind, a message and, for OS failures, the OS error.
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<io::Error>,
}

/// The result type of every fallible kuradb operation.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with a message that should name the operation and its object.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), source: None }
    }

    /// The error of a build without the Cargo feature `feature`, which `what`
    /// (say, "the record compression mode zstd") needs:
    /// [`ErrorKind::NotImplemented`], naming both.
    pub(crate) fn needs_feature(what: impl fmt::Display, feature: &str) -> Error {
        Error::new(
            ErrorKind::NotImplemented,
            format!("{what} needs kuradb built with the Cargo feature `{feature}`"),
        )
    }

    /// An error from the operating system while doing `what` (for example
    /// "write at offset 4096") on the file at `path`.
    ///
    /// The kind follows the OS error: a missing file is [`ErrorKind::NotFound`], a
    /// lock held elsewhere [`ErrorKind::WouldBlock`], a refused flag
    /// [`ErrorKind::NotImplemented`] only where the caller says so; anything else is
    /// [`ErrorKind::System`].
    pub fn io(what: impl fmt::Display, path: &Path, err: io::Error) -> Error {
        let kind = match err.kind() {
            io::ErrorKind::NotFound => ErrorKind::NotFound,
            io::ErrorKind::AlreadyExists => ErrorKind::Duplication,
            io::ErrorKind::WouldBlock => ErrorKind::WouldBlock,
            _ => ErrorKind::System,
        };
        Error { kind, message: format!("{what} of {}", path.display()), source: Some(err) }
    }

    /// The same error with a different kind (keeping message and source).
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }

    /// What went wrong, as a category.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without the kind: the operation and its object.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The OS error number, where the error came from the operating system.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.source.as_ref().and_then(io::Error::raw_os_error)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_name_the_operation_the_file_and_the_cause() {
        let err = Error::io(
            "write at offset 4096",
            Path::new("/data/casket.kh"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(err.kind(), ErrorKind::System);
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
        let text = err.to_string();
        assert!(text.starts_with("system error: write at offset 4096 of /data/casket.kh: "), "{text}");
        assert!(text.contains("No space left on device"), "{text}");
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn os_error_kinds_map_to_ours() {
        let p = Path::new("x");
        let nf = Error::io("open", p, io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(nf.kind(), ErrorKind::NotFound);
        let wb = Error::io("lock", p, io::Error::from(io::ErrorKind::WouldBlock));
        assert_eq!(wb.kind(), ErrorKind::WouldBlock);
        assert!(wb.to_string().starts_with("locked: lock of x"));
    }
}
