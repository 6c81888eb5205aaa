//! Runs Rust code with Ruby's global VM lock (the GVL) released, so that
//! other Ruby threads run meanwhile (`concurrent: true`, docs/ruby.md).
//!
//! This is the binding's only `unsafe` code. Its safety rests on one rule
//! that the types enforce: the code run without the lock is `Send`, and
//! every Ruby object (magnus' `Value`, `RString`, `Ruby`, …) is not, so the
//! code cannot hold, read or make a Ruby object. The caller copies what it
//! needs out of Ruby objects first and makes Ruby objects from the answer
//! afterwards, with the lock held again.
//!
//! [`without_gvl_until_interrupted`] is the form for a wait that may last
//! (a future's): Ruby may end it from another thread when this one is
//! interrupted, through an unblocking function that only touches `Sync`
//! Rust data.
//!
//! The call uses `rb_thread_call_without_gvl2`, the form that never raises:
//! if the thread has an interrupt pending (`Thread#raise`, `Thread#kill`,
//! a signal), Ruby does not run the code at all, and [`without_gvl`] then
//! runs it with the lock held; the interrupt is handled at the next point
//! where Ruby checks for them. So no Ruby exception (a `longjmp`) ever
//! crosses the Rust frames here. A panic of the code is caught on the far
//! side and resumed on this one, once the lock is held again.

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::thread::Result as Outcome;

/// The code to run and, once run, what it answered or how it panicked.
struct Call<F, R> {
    f: Option<F>,
    outcome: Option<Outcome<R>>,
}

/// Runs the [`Call`] that `data` points to; Ruby calls it without the lock.
#[allow(unsafe_code)]
unsafe extern "C" fn run<F: FnOnce() -> R, R>(data: *mut c_void) -> *mut c_void {
    // SAFETY: `data` is the `&mut Call<F, R>` that `without_gvl` passed to
    // Ruby, which calls this once, on the same thread, before
    // `rb_thread_call_without_gvl2` returns; nothing else uses the `Call`
    // meanwhile. No Ruby object is touched: `F` is `Send` (see the module doc).
    let call = unsafe { &mut *data.cast::<Call<F, R>>() };
    if let Some(f) = call.f.take() {
        // A panic must not unwind into Ruby's C frames: it is kept and
        // resumed by `without_gvl`.
        call.outcome = Some(panic::catch_unwind(AssertUnwindSafe(f)));
    }
    std::ptr::null_mut()
}

/// Runs `f` with the VM lock released if `release`, else as it is (the
/// `concurrent` open parameter, or a call that may wait long).
pub fn released_if<R: Send>(release: bool, f: impl FnOnce() -> R + Send) -> R {
    if release {
        without_gvl(f)
    } else {
        f()
    }
}

/// Runs `f` with the VM lock released and answers what it answers. `f` and
/// its answer are `Send`, so neither holds a Ruby object (module doc).
#[allow(unsafe_code)]
pub fn without_gvl<F, R>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let mut call = Call { f: Some(f), outcome: None };
    let data = (&mut call as *mut Call<F, R>).cast::<c_void>();
    // SAFETY: this thread holds the VM lock (it runs a Ruby method), as the
    // call requires. `run::<F, R>` matches the type `data` points to, and
    // `call` outlives the call, which runs `run` at most once before
    // returning. No unblocking function is given: a call is not cut short
    // (a database operation always ends), so Ruby has nothing to call
    // back from another thread. The `2` form never raises (module doc).
    unsafe {
        rb_sys::rb_thread_call_without_gvl2(Some(run::<F, R>), data, None, std::ptr::null_mut());
    }
    match call.outcome {
        Some(Ok(answer)) => answer,
        Some(Err(panic)) => panic::resume_unwind(panic),
        // Ruby skipped the call for a pending interrupt: run it here, with
        // the lock, rather than fail an operation the program asked for.
        None => match call.f.take() {
            Some(f) => f(),
            None => unreachable!("the call ran but left no outcome"),
        },
    }
}

/// Calls the unblocking function that `data` points to; Ruby calls it from
/// another thread (the one that interrupts this one) while [`run`] runs.
#[allow(unsafe_code)]
unsafe extern "C" fn unblock<U: Fn() + Sync>(data: *mut c_void) {
    // SAFETY: `data` is the `&U` that `without_gvl_until_interrupted`
    // passed to Ruby, which calls this only while the call it was given
    // for is under way (Ruby sets and clears it under the thread's
    // interrupt lock), so the `U` is alive; `U: Sync` makes calling it from
    // another thread, while `run` runs, sound. It touches no Ruby object.
    let unblock = unsafe { &*data.cast::<U>() };
    // Not a panic into Ruby's C frames: the wait just goes on uncut.
    let _ = panic::catch_unwind(AssertUnwindSafe(unblock));
}

/// Runs `f` with the VM lock released, like [`without_gvl`], for a wait
/// that may last: if this thread is interrupted meanwhile (`Thread#raise`,
/// `Thread#kill`, a signal such as Ctrl-C), Ruby calls `unblock` from
/// another thread, which must make `f` return soon. Answers `None` if Ruby
/// did not run `f` because an interrupt was pending already. Either way the
/// caller then lets Ruby take the interrupt (`Ruby::thread_check_ints`,
/// which raises if it should) and waits again if it did not raise.
#[allow(unsafe_code)]
pub fn without_gvl_until_interrupted<F, R, U>(f: F, unblock: &U) -> Option<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
    U: Fn() + Sync,
{
    let mut call = Call { f: Some(f), outcome: None };
    let data = (&mut call as *mut Call<F, R>).cast::<c_void>();
    let unblock_data = (unblock as *const U).cast_mut().cast::<c_void>();
    // SAFETY: as in `without_gvl`; besides, `unblock::<U>` matches the type
    // `unblock_data` points to, and `unblock` outlives the call, after
    // which Ruby no longer calls it.
    unsafe {
        rb_sys::rb_thread_call_without_gvl2(Some(run::<F, R>), data, Some(self::unblock::<U>), unblock_data);
    }
    match call.outcome {
        Some(Ok(answer)) => Some(answer),
        Some(Err(panic)) => panic::resume_unwind(panic),
        None => None,
    }
}
