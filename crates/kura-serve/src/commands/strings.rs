//! Commands on values: GET, SET and its options, GETSET, SETNX, MGET, MSET,
//! INCR/DECR and their BY forms, APPEND, STRLEN. Numbers are stored as
//! decimal text, as Redis stores them. On a database with expiry, SET,
//! GETSET and MSET replace a key's expiry time and the changes of a value
//! (INCR, APPEND, ...) keep it, as in Redis (the expiry layer's rule).

use std::borrow::Cow;

use bytes::Bytes;
use kuradb::dbm::expiry::{ExpiringAction, Expiry};
use kuradb::dbm::{Access, Action};
use kuradb::ErrorKind;

use super::{db_error, int_arg, not_an_integer, parse_int, wrong_arity, Ctx};
use crate::reply::Reply;

pub fn get(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    ctx.data().get(&args[1]).map_or_else(db_error, Reply::bulk_or_nil)
}

pub fn set(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let (key, value) = (&args[1], &args[2]);
    let o = match super::expiry::parse_options(args, 3, true) {
        Ok(o) => o,
        Err(reply) => return reply,
    };
    if !o.nx && !o.xx && !o.get && !o.keep_ttl && o.expire.is_none() {
        // A plain set replaces the record and its expiry time.
        return ctx.data().set(key, value).map_or_else(db_error, |()| Reply::OK);
    }
    if o.expire.is_some() || ctx.expiry_state().is_some() {
        return super::expiry::set_with_options(ctx, key, value, &o);
    }
    // No expiry: KEEPTTL has nothing to keep.
    let mut old = None;
    let mut stored = false;
    let outcome = ctx.data().process(key, Access::ReadWrite, &mut |current| {
        if o.get {
            old = current.map(<[u8]>::to_vec);
        }
        let exists = current.is_some();
        if (o.nx && exists) || (o.xx && !exists) {
            return Action::Keep;
        }
        stored = true;
        Action::set(value)
    });
    match outcome {
        Err(e) => db_error(e),
        Ok(()) if o.get => Reply::bulk_or_nil(old),
        Ok(()) if stored => Reply::OK,
        Ok(()) => Reply::Nil,
    }
}

pub fn getset(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let mut old = None;
    if let Ok(layer) = ctx.expiring() {
        // GETSET replaces the expiry time, as SET does.
        let outcome = layer.process_expiring(&args[1], Access::ReadWrite, &mut |current| {
            old = current.map(|(value, _)| value.to_vec());
            Some(ExpiringAction::Set(args[2].to_vec(), None))
        });
        return outcome.map_or_else(db_error, |()| Reply::bulk_or_nil(old));
    }
    let outcome = ctx.data().process(&args[1], Access::ReadWrite, &mut |current| {
        old = current.map(<[u8]>::to_vec);
        Action::set(&args[2])
    });
    outcome.map_or_else(db_error, |()| Reply::bulk_or_nil(old))
}

pub fn setnx(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match ctx.data().insert(&args[1], &args[2]) {
        Ok(()) => Reply::Int(1),
        Err(e) if e.kind() == ErrorKind::Duplication => Reply::Int(0),
        Err(e) => db_error(e),
    }
}

pub fn mget(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let keys: Vec<&[u8]> = args[1..].iter().map(|k| &k[..]).collect();
    match ctx.data().get_multi(&keys) {
        Ok(values) => Reply::Array(values.into_iter().map(Reply::bulk_or_nil).collect()),
        Err(e) => db_error(e),
    }
}

pub fn mset(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    if args.len().is_multiple_of(2) {
        return wrong_arity("mset");
    }
    let pairs: Vec<(&[u8], &[u8])> = args[1..].chunks(2).map(|p| (&p[0][..], &p[1][..])).collect();
    ctx.data().set_multi(&pairs).map_or_else(db_error, |()| Reply::OK)
}

pub fn incr(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    add(ctx, &args[1], 1)
}

pub fn decr(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    add(ctx, &args[1], -1)
}

pub fn incrby(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match int_arg(&args[2]) {
        Ok(delta) => add(ctx, &args[1], delta),
        Err(reply) => reply,
    }
}

pub fn decrby(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match int_arg(&args[2]) {
        Ok(i64::MIN) => Reply::error("ERR decrement would overflow"),
        Ok(delta) => add(ctx, &args[1], -delta),
        Err(reply) => reply,
    }
}

/// Adds `delta` to the decimal number under `key` (0 if absent).
fn add(ctx: &mut Ctx, key: &[u8], delta: i64) -> Reply {
    let mut reply = Reply::Nil;
    let outcome = ctx.data().process(key, Access::ReadWrite, &mut |current| {
        let Some(now) = current.map_or(Some(0), parse_int) else {
            reply = not_an_integer();
            return Action::Keep;
        };
        let Some(next) = now.checked_add(delta) else {
            reply = Reply::error("ERR increment or decrement would overflow");
            return Action::Keep;
        };
        reply = Reply::Int(next);
        Action::Set(Cow::Owned(next.to_string().into_bytes()))
    });
    outcome.map_or_else(db_error, |()| reply)
}

pub fn append(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let mut length = 0;
    let outcome = ctx.data().process(&args[1], Access::ReadWrite, &mut |current| {
        let joined = [current.unwrap_or_default(), &args[2]].concat();
        length = joined.len();
        Action::Set(Cow::Owned(joined))
    });
    outcome.map_or_else(db_error, |()| Reply::Int(length as i64))
}

pub fn strlen(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let mut length = 0;
    let outcome = ctx.data().process(&args[1], Access::ReadOnly, &mut |current| {
        length = current.map_or(0, <[u8]>::len);
        Action::Keep
    });
    outcome.map_or_else(db_error, |()| Reply::Int(length as i64))
}
