//! The reference's `File` as the compatible layers hold it.

use kuradb::ErrorKind;
use kuradb::File;

/// Fails with [`ErrorKind::ReadOnly`] (the reference's precondition error)
/// if `file` was opened for reading: called before a write, append or
/// truncate, so the status does not depend on the file layer's message.
pub fn check_writable(file: &dyn File) -> kuradb::Result<()> {
    if file.is_writable() {
        return Ok(());
    }
    Err(kuradb::Error::new(
        ErrorKind::ReadOnly,
        format!("{} is open for reading only", file.path().display()),
    ))
}
