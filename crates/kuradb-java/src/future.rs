//! The future behind a `tkrzw.Future`: the core's [`DbmFuture`] of an
//! `AsyncDBM` task, and its natives. What a task answers is an [`Outcome`],
//! handed to Java as a `byte[][]` that the Java `Future` turns into the
//! reference's result type.

use std::time::Duration;

use jni::objects::{JByteArray, JObjectArray};
use jni::sys::{jboolean, jdouble, jlong};
use jni::Env;
use kuradb::DbmFuture;
use parking_lot::Mutex;

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

/// A task's future whose result becomes an [`Outcome`] when collected.
trait Pending: Send {
    /// Waits at most `timeout`; answers whether the task has run.
    fn wait_timeout(&self, timeout: Duration) -> bool;
    /// Waits for the task and answers its outcome.
    fn wait(self: Box<Self>) -> kuradb::Result<Outcome>;
}

/// A core future and how its result reads as an [`Outcome`].
struct Mapped<T> {
    future: DbmFuture<T>,
    map: fn(T) -> Outcome,
}

impl<T: Send> Pending for Mapped<T> {
    fn wait_timeout(&self, timeout: Duration) -> bool {
        self.future.wait_timeout(timeout)
    }

    fn wait(self: Box<Self>) -> kuradb::Result<Outcome> {
        self.future.wait().map(self.map)
    }
}

/// A pending (or collected) task's future.
pub struct FutureHandle {
    future: Mutex<Option<Box<dyn Pending>>>,
}

impl FutureHandle {
    /// A new handle for `future`, whose result `map` turns into an [`Outcome`].
    pub fn into_handle<T: Send + 'static>(future: DbmFuture<T>, map: fn(T) -> Outcome) -> jlong {
        let pending: Box<dyn Pending> = Box::new(Mapped { future, map });
        Box::into_raw(Box::new(FutureHandle { future: Mutex::new(Some(pending)) })) as jlong
    }
}

native! {
    /// Waits at most `timeout` seconds (negative: without limit) for the
    /// task; answers whether it has run (a collected future has).
    fn Java_io_kuradb_Native_futureAwait(env, handle: jlong, timeout: jdouble) -> jboolean {
        let handle: &FutureHandle = object(env, handle)?;
        let guard = handle.future.lock();
        let Some(future) = guard.as_ref() else { return Ok(true) };
        let limit = if timeout < 0.0 { Duration::MAX } else { Duration::try_from_secs_f64(timeout).unwrap_or(Duration::MAX) };
        Ok(future.wait_timeout(limit))
    }
}

native! {
    /// Waits for the task and answers its outcome, or throws its error. The
    /// future is collected: a second call throws INFEASIBLE.
    fn Java_io_kuradb_Native_futureGet(env, handle: jlong) -> JObjectArray<'l, JByteArray<'l>> {
        let handle: &FutureHandle = object(env, handle)?;
        let taken = handle.future.lock().take();
        let Some(future) = taken else {
            return crate::throw::fail(env, kuradb::ErrorKind::Infeasible, "the future's result was collected already");
        };
        let outcome = check(env, future.wait())?;
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
