//! The reference's status codes, and the one mapping from kuradb's error
//! kinds to them, so that the three compatible layers answer one code for
//! one error.

use kuradb::ErrorKind;

/// A status code of the reference, with its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StatusCode {
    /// Success.
    Success = 0,
    /// An error whose cause is unknown.
    UnknownError = 1,
    /// An error of the operating system.
    SystemError = 2,
    /// A feature that is not implemented.
    NotImplementedError = 3,
    /// A precondition is not met (a write to a database opened for reading).
    PreconditionError = 4,
    /// A given argument is invalid.
    InvalidArgumentError = 5,
    /// The operation was canceled.
    CanceledError = 6,
    /// A specific resource is not found.
    NotFoundError = 7,
    /// The operation is not permitted.
    PermissionError = 8,
    /// The operation is infeasible.
    InfeasibleError = 9,
    /// A specific resource is duplicated.
    DuplicationError = 10,
    /// Internal data are broken.
    BrokenDataError = 11,
    /// A network error.
    NetworkError = 12,
    /// An error of the application's logic.
    ApplicationError = 13,
}

impl StatusCode {
    /// Every code, in the order of their numbers.
    pub const ALL: [StatusCode; 14] = [
        StatusCode::Success,
        StatusCode::UnknownError,
        StatusCode::SystemError,
        StatusCode::NotImplementedError,
        StatusCode::PreconditionError,
        StatusCode::InvalidArgumentError,
        StatusCode::CanceledError,
        StatusCode::NotFoundError,
        StatusCode::PermissionError,
        StatusCode::InfeasibleError,
        StatusCode::DuplicationError,
        StatusCode::BrokenDataError,
        StatusCode::NetworkError,
        StatusCode::ApplicationError,
    ];

    /// The code of an error kind. A lock held elsewhere is the reference's
    /// infeasible error (it has no code of its own for it), and so is a
    /// transaction's conflict (the reference has no transactions): a commit
    /// that cannot be done in the database's current state, which a
    /// program handling the reference's codes already treats as "try again
    /// or give up", not as broken data or a bad argument.
    pub fn of_kind(kind: ErrorKind) -> StatusCode {
        match kind {
            ErrorKind::NotFound => StatusCode::NotFoundError,
            ErrorKind::Duplication => StatusCode::DuplicationError,
            ErrorKind::InvalidArgument => StatusCode::InvalidArgumentError,
            ErrorKind::Infeasible | ErrorKind::WouldBlock | ErrorKind::Conflict => {
                StatusCode::InfeasibleError
            }
            ErrorKind::ReadOnly => StatusCode::PreconditionError,
            ErrorKind::BrokenData => StatusCode::BrokenDataError,
            ErrorKind::System => StatusCode::SystemError,
            ErrorKind::NotImplemented => StatusCode::NotImplementedError,
            ErrorKind::Canceled => StatusCode::CanceledError,
            _ => StatusCode::UnknownError,
        }
    }

    /// The code of an error.
    pub fn of(err: &kuradb::Error) -> StatusCode {
        StatusCode::of_kind(err.kind())
    }

    /// The reference's number of the code.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// The code of a number, if it is one.
    pub fn from_number(number: i64) -> Option<StatusCode> {
        usize::try_from(number).ok().and_then(|n| StatusCode::ALL.get(n).copied())
    }

    /// The code's name as the reference spells it (`"NOT_FOUND_ERROR"`).
    pub fn name(self) -> &'static str {
        match self {
            StatusCode::Success => "SUCCESS",
            StatusCode::UnknownError => "UNKNOWN_ERROR",
            StatusCode::SystemError => "SYSTEM_ERROR",
            StatusCode::NotImplementedError => "NOT_IMPLEMENTED_ERROR",
            StatusCode::PreconditionError => "PRECONDITION_ERROR",
            StatusCode::InvalidArgumentError => "INVALID_ARGUMENT_ERROR",
            StatusCode::CanceledError => "CANCELED_ERROR",
            StatusCode::NotFoundError => "NOT_FOUND_ERROR",
            StatusCode::PermissionError => "PERMISSION_ERROR",
            StatusCode::InfeasibleError => "INFEASIBLE_ERROR",
            StatusCode::DuplicationError => "DUPLICATION_ERROR",
            StatusCode::BrokenDataError => "BROKEN_DATA_ERROR",
            StatusCode::NetworkError => "NETWORK_ERROR",
            StatusCode::ApplicationError => "APPLICATION_ERROR",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuradb::dbm::Access;

    #[test]
    fn numbers_are_the_references_and_round_trip() {
        for (n, code) in StatusCode::ALL.iter().enumerate() {
            assert_eq!(code.number() as usize, n);
            assert_eq!(StatusCode::from_number(n as i64), Some(*code));
        }
        assert_eq!(StatusCode::from_number(14), None);
        assert_eq!(StatusCode::from_number(-1), None);
        assert_eq!(StatusCode::PreconditionError.name(), "PRECONDITION_ERROR");
    }

    #[test]
    fn a_write_to_a_reader_is_a_precondition_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.tkh");
        let params = kuradb::Params::new();
        let db = kuradb::dbm::poly::PolyDbm::open(&path, Access::ReadWrite, &params).unwrap();
        db.close().unwrap();
        let reader = kuradb::dbm::poly::PolyDbm::open(&path, Access::ReadOnly, &params).unwrap();
        let err = kuradb::dbm::Dbm::set(&reader, b"k", b"v").unwrap_err();
        assert_eq!(StatusCode::of(&err), StatusCode::PreconditionError, "{err}");
        assert_eq!(StatusCode::of_kind(ErrorKind::WouldBlock), StatusCode::InfeasibleError);
        assert_eq!(StatusCode::of_kind(ErrorKind::Conflict), StatusCode::InfeasibleError);
    }
}
