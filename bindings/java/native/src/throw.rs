//! Turning kuradb errors into Java exceptions, and the macro every native
//! method is written with.

use jni::errors::Error as JniError;
use jni::objects::JValue;
use jni::{jni_sig, jni_str, Env};
use kuradb::ErrorKind;
use kuradb_binding::status::StatusCode;

/// The result of a native method's body: `Err` means a Java exception is
/// pending (or, for JNI failures, will be thrown by the error policy).
pub type JResult<T> = Result<T, JniError>;

/// The name of `kind` as `io.kuradb.KuraException.Kind` spells it.
fn kind_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "NOT_FOUND",
        ErrorKind::Duplication => "DUPLICATION",
        ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
        // Java's kinds predate the read-only kind; its status code tells it.
        ErrorKind::Infeasible | ErrorKind::ReadOnly => "INFEASIBLE",
        ErrorKind::BrokenData => "BROKEN_DATA",
        ErrorKind::WouldBlock => "WOULD_BLOCK",
        ErrorKind::System => "SYSTEM",
        ErrorKind::NotImplemented => "NOT_IMPLEMENTED",
        ErrorKind::Canceled => "CANCELED",
        ErrorKind::Conflict => "CONFLICT",
        _ => "UNKNOWN",
    }
}

/// Throws `err` as an `io.kuradb.KuraException` and answers the error that
/// says an exception is pending, for `?` to carry out of the native method.
pub fn throw(env: &mut Env<'_>, err: &kuradb::Error) -> JniError {
    let made = (|| -> JResult<()> {
        let kind = env.new_string(kind_name(err.kind()))?;
        let status = StatusCode::of(err).number();
        let message = env.new_string(err.message())?;
        let text = env.new_string(err.to_string())?;
        let exception = env.new_object(
            jni_str!("io/kuradb/KuraException"),
            jni_sig!("(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;I)V"),
            &[JValue::Object(&kind), JValue::Object(&message), JValue::Object(&text), JValue::Int(status)],
        )?;
        let exception = jni::objects::JThrowable::cast_local(env, exception)?;
        env.throw(exception)
    })();
    match made {
        // `throw` answers JavaException once the exception is pending.
        Err(e) => e,
        Ok(()) => JniError::JavaException,
    }
}

/// `result`'s value, or its error thrown as a Java exception.
pub fn check<T>(env: &mut Env<'_>, result: kuradb::Result<T>) -> JResult<T> {
    result.map_err(|e| throw(env, &e))
}

/// Throws a `KuraException` of kind `kind` with `message`.
pub fn fail<T>(env: &mut Env<'_>, kind: ErrorKind, message: &str) -> JResult<T> {
    Err(throw(env, &kuradb::Error::new(kind, message)))
}

/// Defines a static native method of `io.kuradb.Native`: the body runs with
/// `$env` bound to the JNI environment, inside `with_env` (which catches
/// panics); an `Err` leaves its exception pending, or throws a
/// `RuntimeException` for a JNI failure or a panic, and Java sees the
/// return type's default value only with an exception thrown.
macro_rules! native {
    ($(#[$doc:meta])* fn $name:ident($env:ident $(, $arg:ident: $ty:ty)*) -> $ret:ty $body:block) => {
        $(#[$doc])*
        // SAFETY: the symbol is the JNI name of exactly one native method
        // of `io.kuradb.Native`, whose Java declaration has this signature.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case)]
        pub extern "system" fn $name<'l>(
            mut unowned: jni::EnvUnowned<'l>,
            _class: jni::objects::JClass<'l>,
            $($arg: $ty),*
        ) -> $ret {
            unowned
                .with_env(|$env: &mut jni::Env<'l>| -> $crate::throw::JResult<$ret> { $body })
                .resolve::<jni::errors::ThrowRuntimeExAndDefault>()
        }
    };
}
pub(crate) use native;
