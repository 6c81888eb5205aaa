//! kuradb errors as Ruby exceptions: `Kuradb::Error` and one subclass per
//! [`kuradb::ErrorKind`], defined in `kuradb.rb` and looked up here by name
//! when one is raised (errors are rare, so the lookup costs nothing that
//! matters).

use magnus::prelude::*;
use magnus::{Error, ExceptionClass, RModule, Ruby};

use kuradb::ErrorKind;
use kuradb_binding::status::StatusCode;

/// The name of the `Kuradb` exception class of `kind`.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::Duplication => "DuplicationError",
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        // The Ruby classes predate the read-only kind (and test-unit's
        // assert_raise matches classes exactly): its status_code tells it.
        ErrorKind::Infeasible | ErrorKind::ReadOnly => "InfeasibleError",
        ErrorKind::BrokenData => "BrokenDataError",
        ErrorKind::WouldBlock => "WouldBlockError",
        ErrorKind::System => "SystemError",
        ErrorKind::NotImplemented => "UnsupportedError",
        ErrorKind::Canceled => "CanceledError",
        ErrorKind::Conflict => "ConflictError",
        _ => "Error",
    }
}

/// The Ruby exception of a kuradb error: the class of its kind, with the
/// whole message (kind, operation, file and OS error), and in
/// `status_code` the reference's status code the binding core gives it.
pub fn to_rb(ruby: &Ruby, err: kuradb::Error) -> Error {
    let class = ruby
        .class_object()
        .const_get::<_, RModule>("Kuradb")
        .and_then(|m| m.const_get::<_, ExceptionClass>(class_name(err.kind())));
    match class {
        Ok(class) => {
            let code = StatusCode::of(&err).number();
            match class.new_instance((err.to_string(),)) {
                Ok(exception) => {
                    // Only a frozen exception would refuse it; its class still tells the kind.
                    let _: Result<magnus::Value, _> =
                        exception.funcall("instance_variable_set", ("@status_code", code));
                    Error::from(exception)
                }
                Err(e) => e,
            }
        }
        // Only if kuradb.rb was bypassed: still an exception, never a crash.
        Err(_) => Error::new(ruby.exception_runtime_error(), err.to_string()),
    }
}

/// The error of any use of a closed database or cursor.
pub fn not_open() -> kuradb::Error {
    kuradb::Error::new(ErrorKind::Infeasible, "the database is not open")
}

/// A TypeError naming what was wrong.
pub fn type_error(ruby: &Ruby, message: String) -> Error {
    Error::new(ruby.exception_type_error(), message)
}
