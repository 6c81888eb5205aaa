//! The future behind a `tkrzw.Future`: the core's [`DbmFuture`] of an
//! `AsyncDBM` task, and its natives. What a task answers is an [`Outcome`],
//! handed to Java as a `byte[][]` that the Java `Future` turns into the
//! reference's result type.

use jni::objects::{JByteArray, JObjectArray};
use jni::sys::{jboolean, jdouble, jlong};
use jni::Env;
use kuradb::DbmFuture;
use kuradb_binding::future::{timeout_of, BlockingFuture};

use crate::convert::new_byte_arrays;
use crate::handle::{free, object};
use crate::throw::{check, native, JResult};

/// What an `AsyncDBM` task answers.
pub enum Outcome {
    /// Nothing: `{}`.
    Done,
    /// A value or none: `{value}` (a null element for none).
    Value(Option<Vec<u8>>),
    /// Several values or none, in the order of the keys asked for.
    Values(Vec<Option<Vec<u8>>>),
    /// Keys found by a search.
    Keys(Vec<Vec<u8>>),
    /// A number: `{its 8 bytes, big-endian}`.
    Number(i64),
    /// Whether something held: `{{}}` for true, `{null}` for false.
    Flag(bool),
}

impl Outcome {
    /// The outcome as the `byte[][]` the Java `Future` decodes.
    fn to_java<'l>(&self, env: &mut Env<'l>) -> JResult<JObjectArray<'l, JByteArray<'l>>> {
        match self {
            Outcome::Done => new_byte_arrays(env, std::iter::empty()),
            Outcome::Value(v) => new_byte_arrays(env, std::iter::once(v.as_deref())),
            Outcome::Values(vs) => new_byte_arrays(env, vs.iter().map(Option::as_deref)),
            Outcome::Keys(ks) => new_byte_arrays(env, ks.iter().map(|k| Some(k.as_slice()))),
            Outcome::Number(n) => new_byte_arrays(env, std::iter::once(Some(&n.to_be_bytes()[..]))),
            Outcome::Flag(b) => new_byte_arrays(env, std::iter::once(b.then_some(&[][..]))),
        }
    }
}

/// A pending (or collected) task's future: the binding core's.
pub struct FutureHandle {
    future: BlockingFuture<Outcome>,
}

impl FutureHandle {
    /// A new handle for `future`, whose result `map` turns into an [`Outcome`].
    pub fn into_handle<T: Send + 'static>(future: DbmFuture<T>, map: fn(T) -> Outcome) -> jlong {
        Box::into_raw(Box::new(FutureHandle { future: BlockingFuture::new(future, map) })) as jlong
    }
}

native! {
    /// Waits at most `timeout` seconds (negative: without limit) for the
    /// task; answers whether it has run (a collected future has).
    fn Java_io_kuradb_Native_futureAwait(env, handle: jlong, timeout: jdouble) -> jboolean {
        let handle: &FutureHandle = object(env, handle)?;
        Ok(handle.future.wait_for(timeout_of(timeout)))
    }
}

native! {
    /// Waits for the task and answers its outcome, or throws its error. The
    /// future is collected: a second call throws INFEASIBLE.
    fn Java_io_kuradb_Native_futureGet(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        let handle: &FutureHandle = object(env, handle)?;
        let outcome = check(env, handle.future.collect())?;
        outcome.to_java(env)
    }
}

native! {
    /// Frees the handle's memory (a pending task still runs); the Cleaner calls it once.
    fn Java_io_kuradb_Native_futureFree(_env, handle: jlong) -> () {
        free::<FutureHandle>(handle);
        Ok(())
    }
}
