//! Calling a Java record processor (`io.kuradb.Native.Callback`) from inside
//! a database operation.

use std::borrow::Cow;

use jni::objects::{JByteArray, JObject, JValue};
use jni::{jni_sig, jni_str, Env};
use kuradb::dbm::Action;

use crate::throw::JResult;

/// A Java callback with the marker array that means "remove the record".
pub struct Callback<'a, 'l> {
    /// The `io.kuradb.Native.Callback` object.
    pub target: &'a JObject<'l>,
    /// The array whose identity means [`Action::Remove`] when returned.
    pub remove: &'a JObject<'l>,
    /// The first error (a pending Java exception): later records are kept
    /// without calling Java again, and the operation throws it when it ends.
    pub failure: Option<jni::errors::Error>,
}

impl<'a, 'l> Callback<'a, 'l> {
    /// A callback not yet failed.
    pub fn new(target: &'a JObject<'l>, remove: &'a JObject<'l>) -> Self {
        Callback { target, remove, failure: None }
    }

    /// Shows Java the record (`index` in the caller's list, key, value) and
    /// answers what it decided: `null` keeps the record, the remove marker
    /// removes it, any other array is the new value.
    pub fn call(
        &mut self,
        env: &mut Env<'_>,
        index: usize,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Action<'static> {
        if self.failure.is_some() {
            return Action::Keep;
        }
        let (target, remove) = (self.target, self.remove);
        let index = i32::try_from(index).unwrap_or(i32::MAX);
        let outcome = env.with_local_frame(4, |env| -> JResult<Action<'static>> {
            let key = env.byte_array_from_slice(key)?;
            let value = match value {
                Some(v) => env.byte_array_from_slice(v)?,
                None => JByteArray::default(),
            };
            let answer = env
                .call_method(
                    target,
                    jni_str!("call"),
                    jni_sig!("(I[B[B)[B"),
                    &[JValue::Int(index), JValue::Object(&key), JValue::Object(&value)],
                )?
                .l()?;
            if answer.is_null() {
                return Ok(Action::Keep);
            }
            if env.is_same_object(&answer, remove)? {
                return Ok(Action::Remove);
            }
            let answer = JByteArray::cast_local(env, answer)?;
            Ok(Action::Set(Cow::Owned(env.convert_byte_array(&answer)?)))
        });
        outcome.unwrap_or_else(|e| {
            self.failure = Some(e);
            Action::Keep
        })
    }

    /// The operation's outcome: its own error first, else the callback's.
    pub fn finish<T>(self, result: JResult<T>) -> JResult<T> {
        match self.failure {
            Some(e) => Err(e),
            None => result,
        }
    }
}
