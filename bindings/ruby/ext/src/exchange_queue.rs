//! `Kuradb::DBM`'s natives for the reference's extra record methods: a
//! block over several records at once (`_process_multi`) or over the first
//! one (`_process_first`), a compare-and-exchange that answers the old value
//! and knows the reference's `ANY_DATA`, `_rekey`, and the queue pair
//! `_pop_first` / `_push_last`. `kuradb.rb` and `tkrzw/dbm.rb` wrap them.

use std::time::Duration;

use magnus::block::Proc;
use magnus::prelude::*;
use magnus::{method, Error, RArray, RClass, RString, Ruby};

use kuradb::dbm::exchange::{Desired, Expected};
use kuradb::dbm::{Access, Action, Dbm};
use kuradb_binding::handle::Db;

use crate::convert::{byte_list, bytes, opt_bytes, pair_refs, BytePairs};
use crate::database::Database;

/// Calls `block` with each key and its value (or nil), every record locked
/// before the first call, and does what each call returns (see
/// `Database::process`); the first exception leaves the remaining records
/// as they are and is raised once the locks are released.
fn process_multi(
    ruby: &Ruby,
    rb_self: &Database,
    keys: RArray,
    writable: bool,
    block: Proc,
) -> Result<(), Error> {
    let keys = byte_list(keys)?;
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    rb_self.with_block(ruby, &block, |db, visit| {
        db.process_multi(
            &refs,
            if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
            &mut |_, key, value| visit(key, value),
        )
    })
}

/// Calls `block` with the first record's key and value, as `process` does;
/// answers false (without calling it) if the database is empty.
fn process_first(ruby: &Ruby, rb_self: &Database, writable: bool, block: Proc) -> Result<bool, Error> {
    rb_self.with_block(ruby, &block, |db, visit| {
        db.process_first(
            if writable { kuradb::dbm::Access::ReadWrite } else { kuradb::dbm::Access::ReadOnly },
            &mut |key, value| visit(key, Some(value)),
        )
    })
}

/// `[done, old value or nil]`. `expected_any` stands for the reference's
/// `ANY_DATA` as the expectation (any existing value), `desired_any` as the
/// desired value (leave the record as it is); each overrides its value.
fn compare_exchange_and_get(
    ruby: &Ruby,
    rb_self: &Database,
    key: RString,
    expected: Option<RString>,
    expected_any: bool,
    desired: Option<RString>,
    desired_any: bool,
) -> Result<(bool, Option<RString>), Error> {
    let (key, expected, desired) = (bytes(key), opt_bytes(expected), opt_bytes(desired));
    let (done, old) = rb_self.with(ruby, |db| {
        let expected = if expected_any { Expected::Any } else { Expected::from(expected.as_deref()) };
        let desired = if desired_any { Desired::Keep } else { Desired::from(desired.as_deref()) };
        db.compare_exchange_and_get(&key, expected, desired)
    })?;
    Ok((done, rb_self.opt_out(ruby, old)?))
}

fn rekey(
    ruby: &Ruby,
    rb_self: &Database,
    old_key: RString,
    new_key: RString,
    overwrite: bool,
    copying: bool,
) -> Result<(), Error> {
    let (old_key, new_key) = (bytes(old_key), bytes(new_key));
    rb_self.with(ruby, |db| {
        db.rekey(
            &old_key,
            &new_key,
            if copying { kuradb::dbm::Rekey::Copy } else { kuradb::dbm::Rekey::Move },
            if overwrite { kuradb::dbm::OnDuplicate::Replace } else { kuradb::dbm::OnDuplicate::Fail },
        )
    })
}

/// `compare_exchange_multi` where `any[i]` marks the i-th expected value as
/// the reference's `ANY_DATA` (the record exists, with any value).
pub(crate) fn exchange_multi(
    db: &Db,
    expected: &BytePairs,
    any: &[bool],
    desired: &BytePairs,
) -> kuradb::Result<bool> {
    if !any.contains(&true) {
        return db.compare_exchange_multi(&pair_refs(expected), &pair_refs(desired));
    }
    let keys: Vec<&[u8]> = expected.iter().chain(desired).map(|p| p.0.as_slice()).collect();
    let mut matched = true;
    db.process_multi(&keys, Access::ReadWrite, &mut |i, _, value| {
        if let Some((_, wanted)) = expected.get(i) {
            let expectation =
                if any.get(i) == Some(&true) { Expected::Any } else { Expected::from(wanted.as_deref()) };
            matched &= expectation.holds(value);
            return Action::Keep;
        }
        match &desired[i - expected.len()].1 {
            _ if !matched => Action::Keep,
            Some(v) => Action::set(v),
            None => Action::Remove,
        }
    })?;
    Ok(matched)
}

/// How long a pop waits: nil, zero or less, or NaN is not at all; a wait
/// too long for a `Duration` is for ever.
pub(crate) fn retry_wait(seconds: Option<f64>) -> Option<Duration> {
    let seconds = seconds.filter(|s| *s > 0.0)?;
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// `[key, value]` of the first record, removed, or nil if there is none
/// (after waiting up to `retry_wait` seconds for a push).
fn pop_first(
    ruby: &Ruby,
    rb_self: &Database,
    wait: Option<f64>,
) -> Result<Option<(RString, RString)>, Error> {
    let wait = retry_wait(wait);
    // A waiting pop releases the VM lock even if the database is not
    // `concurrent`: the push it waits for comes from another Ruby thread.
    let release = wait.is_some() || rb_self.is_concurrent();
    let record = rb_self.with_released(ruby, release, |db| db.pop_first(wait))?;
    record.map(|(k, v)| Ok((rb_self.out(ruby, &k)?, rb_self.out(ruby, &v)?))).transpose()
}

/// Stores `value` under a key made from the time `wtime` (nil: now) and
/// answers the key.
fn push_last(ruby: &Ruby, rb_self: &Database, value: RString, wtime: Option<f64>) -> Result<RString, Error> {
    let value = bytes(value);
    let key = rb_self.with(ruby, |db| db.push_last(&value, wtime))?;
    rb_self.out(ruby, &key)
}

/// Defines the natives above on `Kuradb::DBM`.
pub fn define(class: RClass) -> Result<(), Error> {
    class.define_method("_process_multi", method!(process_multi, 3))?;
    class.define_method("_process_first", method!(process_first, 2))?;
    class.define_method("_compare_exchange_and_get", method!(compare_exchange_and_get, 5))?;
    class.define_method("_rekey", method!(rekey, 4))?;
    class.define_method("_pop_first", method!(pop_first, 1))?;
    class.define_method("_push_last", method!(push_last, 2))?;
    Ok(())
}
