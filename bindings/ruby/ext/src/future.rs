//! `Kuradb::Future`: the pending result of one operation of an AsyncDBM
//! (`Tkrzw::Future` wraps it).
//!
//! `wait` and `get` wait with Ruby's VM lock released, so every other Ruby
//! thread runs meanwhile, however long the operation takes (a `pop_first`
//! waiting for a push, an operation waiting for a record lock). The binding
//! core's [`BlockingFuture`] wakes the waiting threads through a [`Bell`]
//! (its `Waker`) and keeps the outcome, so `get` answers the same every
//! time. An
//! interrupt of a waiting thread (`Thread#raise`, `Thread#kill`, Ctrl-C)
//! rings the bell too and ends that thread's wait at once: it touches only
//! Rust data, so it is safe from any thread. Ruby then raises in the
//! waiting thread; the operation itself runs on, and the future can still
//! be waited for and read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use magnus::encoding::Index;
use magnus::prelude::*;
use magnus::{method, Error, IntoValue, RModule, Ruby, Value};
use parking_lot::{Condvar, Mutex};

use kuradb::dbm::async_dbm::DbmFuture;
use kuradb_binding::future::BlockingFuture;

use crate::convert::string;
use crate::error::to_rb;
use crate::nogvl::without_gvl_until_interrupted;

/// What an operation answers, converted to Ruby by `Future#get`.
pub enum Reply {
    Nil,
    Bool(bool),
    Int(i64),
    Count(u64),
    Value(Option<Vec<u8>>),
    Records(Vec<(Vec<u8>, Vec<u8>)>),
    /// One record as `[key, value]`, or nil.
    Record(Option<(Vec<u8>, Vec<u8>)>),
    Keys(Vec<Vec<u8>>),
}

/// Rung when the operation completes and when a waiting thread is
/// interrupted; the waiting threads of one future sleep on it.
#[derive(Default)]
struct Bell {
    rings: Mutex<u64>,
    rung: Condvar,
}

impl Bell {
    fn ring(&self) {
        *self.rings.lock() += 1;
        self.rung.notify_all();
    }
}

impl Wake for Bell {
    fn wake(self: Arc<Self>) {
        self.ring();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ring();
    }
}

/// How a wait without the VM lock ended.
enum Waited {
    Done,
    TimedOut,
    Interrupted,
}

/// The pending result of one operation of an AsyncDBM.
#[magnus::wrap(class = "Kuradb::Future", free_immediately, size)]
pub struct Future {
    outcome: BlockingFuture<Reply>,
    bell: Arc<Bell>,
    /// The bell as the core's future wakes it (one waker for every waiter:
    /// the core keeps only the last one it was polled with).
    waker: Waker,
    encoding: Option<Index>,
}

impl Future {
    /// The future of a queued operation.
    pub fn pending(future: DbmFuture<Reply>, encoding: Option<Index>) -> Future {
        Future::of(BlockingFuture::new(future, std::convert::identity), encoding)
    }

    /// The future of an operation that failed before it was queued.
    pub fn failed(error: kuradb::Error, encoding: Option<Index>) -> Future {
        Future::of(BlockingFuture::failed(error), encoding)
    }

    fn of(outcome: BlockingFuture<Reply>, encoding: Option<Index>) -> Future {
        let bell = Arc::new(Bell::default());
        let waker = Waker::from(Arc::clone(&bell));
        Future { outcome, bell, waker, encoding }
    }

    /// Whether the operation is done. Never blocks: the core's lock is held
    /// only for the poll.
    fn is_done(&self) -> bool {
        self.outcome.poll_ready(&self.waker)
    }

    /// Sleeps on the bell until the operation is done, `deadline` passes or
    /// `stop` is set (by an interrupt); runs without the VM lock.
    fn wait_for(&self, deadline: Option<Instant>, stop: &AtomicBool) -> Waited {
        loop {
            // Read before the poll: a completion after it changes the count.
            let seen = *self.bell.rings.lock();
            if self.is_done() {
                return Waited::Done;
            }
            let mut rings = self.bell.rings.lock();
            while *rings == seen {
                if stop.load(Ordering::SeqCst) {
                    return Waited::Interrupted;
                }
                let timed_out = match deadline {
                    Some(deadline) => self.bell.rung.wait_until(&mut rings, deadline).timed_out(),
                    None => {
                        self.bell.rung.wait(&mut rings);
                        false
                    }
                };
                if timed_out {
                    drop(rings);
                    return if self.is_done() { Waited::Done } else { Waited::TimedOut };
                }
            }
        }
    }

    /// Waits until the operation is done or `timeout` seconds pass (nil,
    /// negative or NaN: no limit; too long for a `Duration`: no limit
    /// either), with the VM lock released; answers whether it is done.
    fn wait(ruby: &Ruby, rb_self: &Self, timeout: Option<f64>) -> Result<bool, Error> {
        if rb_self.is_done() {
            return Ok(true);
        }
        let limit = timeout.filter(|t| *t >= 0.0).and_then(|t| Duration::try_from_secs_f64(t).ok());
        let deadline = limit.and_then(|limit| Instant::now().checked_add(limit));
        loop {
            let stop = AtomicBool::new(false);
            let interrupt = || {
                stop.store(true, Ordering::SeqCst);
                rb_self.bell.ring();
            };
            match without_gvl_until_interrupted(|| rb_self.wait_for(deadline, &stop), &interrupt) {
                Some(Waited::Done) => return Ok(true),
                Some(Waited::TimedOut) => return Ok(false),
                // Ruby raises here for Thread#raise, #kill or a signal;
                // for anything else (Thread#wakeup) the wait goes on.
                Some(Waited::Interrupted) | None => ruby.thread_check_ints()?,
            }
        }
    }

    /// The operation's result (waiting for it); its error is raised.
    fn get(ruby: &Ruby, rb_self: &Self) -> Result<Value, Error> {
        Future::wait(ruby, rb_self, None)?;
        let shown = rb_self.outcome.with_outcome(|outcome| Future::value_of(ruby, rb_self.encoding, outcome));
        // The outcome is kept once done, and `wait` answered only when done.
        shown.unwrap_or_else(|| {
            Err(to_rb(ruby, kuradb::Error::new(kuradb::ErrorKind::Canceled, "the future has no outcome")))
        })
    }

    /// An outcome as Ruby shows it: the reply's value, or its error raised.
    fn value_of(
        ruby: &Ruby,
        encoding: Option<Index>,
        outcome: &kuradb::Result<Reply>,
    ) -> Result<Value, Error> {
        let reply = match outcome {
            Ok(reply) => reply,
            Err(e) => return Err(to_rb(ruby, kuradb::Error::new(e.kind(), e.message().to_string()))),
        };
        let out = |data: &[u8]| string(ruby, encoding, data);
        Ok(match reply {
            Reply::Nil => ruby.qnil().as_value(),
            Reply::Bool(b) => b.into_value_with(ruby),
            Reply::Int(n) => n.into_value_with(ruby),
            Reply::Count(n) => n.into_value_with(ruby),
            Reply::Value(v) => v.as_deref().map(out).transpose()?.into_value_with(ruby),
            Reply::Records(records) => {
                let hash = ruby.hash_new();
                for (k, v) in records {
                    hash.aset(out(k)?, out(v)?)?;
                }
                hash.as_value()
            }
            Reply::Record(record) => match record {
                Some((k, v)) => {
                    ruby.ary_new_from_values(&[out(k)?.as_value(), out(v)?.as_value()]).as_value()
                }
                None => ruby.qnil().as_value(),
            },
            Reply::Keys(keys) => {
                let list = ruby.ary_new_capa(keys.len());
                for k in keys {
                    list.push(out(k)?)?;
                }
                list.as_value()
            }
        })
    }
}

/// Defines `Kuradb::Future` (made by `Kuradb::AsyncDBM`'s operations).
pub fn define(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let future = module.define_class("Future", ruby.class_object())?;
    future.undef_default_alloc_func();
    future.define_method("_wait", method!(Future::wait, 1))?;
    future.define_method("get", method!(Future::get, 0))?;
    Ok(())
}
