//! Commands on expiry times, as Redis 7 answers them: SET's options (parsed
//! here for SET and GETEX), GETEX, SETEX, PSETEX, EXPIRE, PEXPIRE,
//! EXPIREAT, PEXPIREAT (with NX, XX, GT, LT), TTL, PTTL, EXPIRETIME,
//! PEXPIRETIME, PERSIST. Times are milliseconds since the Unix epoch; the
//! database's expiry layer keeps them (see `crate::expiry`).

use bytes::Bytes;
use kuradb::dbm::expiry::{ExpiringAction, Expiry};
use kuradb::dbm::Access;

use super::{db_error, is, not_an_integer, parse_int, syntax_error, Ctx};
use crate::reply::Reply;

/// How an expiry time is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Given {
    /// `EX`: seconds from now.
    Seconds,
    /// `PX`: milliseconds from now.
    Millis,
    /// `EXAT`: a Unix time in seconds.
    UnixSeconds,
    /// `PXAT`: a Unix time in milliseconds.
    UnixMillis,
}

/// The options of SET (from its fourth word) or GETEX (from its third).
#[derive(Default)]
pub struct Options {
    /// `NX`: only if absent.
    pub nx: bool,
    /// `XX`: only if present.
    pub xx: bool,
    /// `GET`: answer the old value.
    pub get: bool,
    /// `KEEPTTL`: keep the expiry time.
    pub keep_ttl: bool,
    /// `PERSIST` (GETEX): drop the expiry time.
    pub persist: bool,
    /// The expiry time given, and how.
    pub expire: Option<(Given, Bytes)>,
}

/// Parses the options of SET (`set`) or GETEX from `args[from..]` as
/// Redis's `parseExtendedStringArgumentsOrReply` does: an option that
/// clashes with one before it is a syntax error.
pub fn parse_options(args: &[Bytes], from: usize, set: bool) -> Result<Options, Reply> {
    let mut o = Options::default();
    let mut i = from;
    while i < args.len() {
        let arg = &args[i];
        let next = args.get(i + 1);
        let timed = |o: &Options, given: Given| o.expire.as_ref().is_none_or(|(g, _)| *g == given);
        let free = !o.keep_ttl && !o.persist;
        if set && is(arg, "NX") && !o.xx {
            o.nx = true;
        } else if set && is(arg, "XX") && !o.nx {
            o.xx = true;
        } else if set && is(arg, "GET") {
            o.get = true;
        } else if set && is(arg, "KEEPTTL") && !o.persist && o.expire.is_none() {
            o.keep_ttl = true;
        } else if !set && is(arg, "PERSIST") && !o.keep_ttl && o.expire.is_none() {
            o.persist = true;
        } else if let Some(given) = [
            ("EX", Given::Seconds),
            ("PX", Given::Millis),
            ("EXAT", Given::UnixSeconds),
            ("PXAT", Given::UnixMillis),
        ]
        .iter()
        .find(|(word, _)| is(arg, word))
        .map(|(_, given)| *given)
        .filter(|&given| free && timed(&o, given) && next.is_some())
        {
            o.expire = Some((given, next.expect("checked").clone()));
            i += 1;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    Ok(o)
}

/// `ERR invalid expire time in '<command>' command`.
fn invalid_time(command: &str) -> Reply {
    Reply::error(format!("ERR invalid expire time in '{command}' command"))
}

/// The expiry time (milliseconds since the epoch) `text` gives for SET,
/// SETEX, PSETEX and GETEX, checked as Redis's
/// `getExpireMillisecondsOrReply` checks it: a positive integer, with no
/// overflow once made absolute.
pub fn expiry_time(given: Given, text: &[u8], now: u64, command: &str) -> Result<u64, Reply> {
    let n = parse_int(text).ok_or_else(not_an_integer)?;
    let seconds = matches!(given, Given::Seconds | Given::UnixSeconds);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid_time(command));
    }
    let ms = if seconds { n * 1000 } else { n };
    let at = match given {
        Given::Seconds | Given::Millis => ms.checked_add(now as i64),
        Given::UnixSeconds | Given::UnixMillis => Some(ms),
    };
    at.map(|at| at as u64).ok_or_else(|| invalid_time(command))
}

fn expired(at: Option<u64>, now: u64) -> bool {
    at.is_some_and(|at| at <= now)
}

/// SET with options on a database with expiry.
pub fn set_with_options(ctx: &Ctx, key: &[u8], value: &[u8], o: &Options) -> Reply {
    let layer = match ctx.expiring() {
        Ok(layer) => layer,
        Err(reply) => return reply,
    };
    let now = layer.now_ms();
    let expiry = match &o.expire {
        Some((given, text)) => match expiry_time(*given, text, now, "set") {
            Ok(at) => Some(at),
            Err(reply) => return reply,
        },
        None => None,
    };
    let (mut old, mut stored) = (None, false);
    let outcome = layer.process_expiring(key, Access::ReadWrite, &mut |record| {
        if o.get {
            old = record.map(|(value, _)| value.to_vec());
        }
        let exists = record.is_some();
        if (o.nx && exists) || (o.xx && !exists) {
            return None;
        }
        stored = true;
        let at = if o.keep_ttl { record.and_then(|(_, at)| at) } else { expiry };
        // A time already past (EXAT, PXAT) leaves the key gone, as in Redis.
        Some(if expired(at, now) { ExpiringAction::Remove } else { ExpiringAction::Set(value.to_vec(), at) })
    });
    match outcome {
        Err(e) => db_error(e),
        Ok(()) if o.get => Reply::bulk_or_nil(old),
        Ok(()) if stored => Reply::OK,
        Ok(()) => Reply::Nil,
    }
}

pub fn getex(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let o = match parse_options(args, 2, false) {
        Ok(o) => o,
        Err(reply) => return reply,
    };
    let layer = match ctx.expiring() {
        Ok(layer) => layer,
        Err(reply) => return reply,
    };
    let now = layer.now_ms();
    let access = if o.expire.is_some() || o.persist { Access::ReadWrite } else { Access::ReadOnly };
    let mut reply = Reply::Nil;
    let outcome = layer.process_expiring(&args[1], access, &mut |record| {
        let (value, _) = record?;
        // The time is checked once the key is found, as Redis checks it.
        let at = match &o.expire {
            Some((given, text)) => match expiry_time(*given, text, now, "getex") {
                Ok(at) => Some(at),
                Err(error) => {
                    reply = error;
                    return None;
                }
            },
            None => None,
        };
        reply = Reply::bulk(Bytes::copy_from_slice(value));
        match at {
            Some(at) if at <= now => Some(ExpiringAction::Remove),
            Some(at) => Some(ExpiringAction::Expiry(Some(at))),
            None if o.persist => Some(ExpiringAction::Expiry(None)),
            None => None,
        }
    });
    outcome.map_or_else(db_error, |()| reply)
}

fn set_for(ctx: &mut Ctx, args: &[Bytes], given: Given, command: &str) -> Reply {
    let layer = match ctx.expiring() {
        Ok(layer) => layer,
        Err(reply) => return reply,
    };
    match expiry_time(given, &args[2], layer.now_ms(), command) {
        Ok(at) => layer.set_expiring(&args[1], &args[3], Some(at)).map_or_else(db_error, |()| Reply::OK),
        Err(reply) => reply,
    }
}

pub fn setex(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    set_for(ctx, args, Given::Seconds, "setex")
}

pub fn psetex(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    set_for(ctx, args, Given::Millis, "psetex")
}

/// EXPIRE's conditions.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

/// EXPIRE and its kin, as Redis's `expireGenericCommand`: the options
/// first, then the time (negative times allowed: the key goes), then the
/// key and the conditions.
fn expire_generic(ctx: &mut Ctx, args: &[Bytes], given: Given, command: &str) -> Reply {
    let mut c = Conditions::default();
    for arg in &args[3..] {
        if is(arg, "NX") {
            c.nx = true;
        } else if is(arg, "XX") {
            c.xx = true;
        } else if is(arg, "GT") {
            c.gt = true;
        } else if is(arg, "LT") {
            c.lt = true;
        } else {
            return Reply::error(format!("ERR Unsupported option {}", String::from_utf8_lossy(arg)));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if c.gt && c.lt {
        return Reply::error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_int(&args[2]) else { return not_an_integer() };
    let layer = match ctx.expiring() {
        Ok(layer) => layer,
        Err(reply) => return reply,
    };
    if matches!(given, Given::Seconds | Given::UnixSeconds) {
        match when.checked_mul(1000) {
            Some(ms) => when = ms,
            None => return invalid_time(command),
        }
    }
    if matches!(given, Given::Seconds | Given::Millis) {
        match when.checked_add(layer.now_ms() as i64) {
            Some(at) => when = at,
            None => return invalid_time(command),
        }
    }
    let target = when.max(0) as u64;
    let mut applied = false;
    let present = layer.update_expiry(&args[1], |current| {
        let refused = (c.nx && current.is_some())
            || (c.xx && current.is_none())
            || (c.gt && current.is_none_or(|at| target <= at))
            || (c.lt && current.is_some_and(|at| target >= at));
        applied = !refused;
        applied.then_some(Some(target))
    });
    match present {
        Ok(present) => Reply::Int(i64::from(present && applied)),
        Err(e) => db_error(e),
    }
}

pub fn expire(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, Given::Seconds, "expire")
}

pub fn pexpire(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, Given::Millis, "pexpire")
}

pub fn expireat(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, Given::UnixSeconds, "expireat")
}

pub fn pexpireat(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, Given::UnixMillis, "pexpireat")
}

/// TTL and its kin: -2 for a key absent, -1 for one without an expiry
/// time, else the time left (`absolute`: the time itself), in milliseconds
/// or in seconds rounded to the nearest, as Redis rounds them.
fn ttl_generic(ctx: &mut Ctx, args: &[Bytes], millis: bool, absolute: bool) -> Reply {
    let layer = match ctx.expiring() {
        Ok(layer) => layer,
        Err(reply) => return reply,
    };
    let now = layer.now_ms();
    let mut found = None;
    let outcome = layer.process_expiring(&args[1], Access::ReadOnly, &mut |record| {
        found = record.map(|(_, at)| at);
        None
    });
    if let Err(e) = outcome {
        return db_error(e);
    }
    let n = match found {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let ms = if absolute { at } else { at.saturating_sub(now) } as i64;
            if millis {
                ms
            } else {
                ms.saturating_add(500) / 1000
            }
        }
    };
    Reply::Int(n)
}

pub fn ttl(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, false, false)
}

pub fn pttl(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, true, false)
}

pub fn expiretime(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, false, true)
}

pub fn pexpiretime(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, true, true)
}

pub fn persist(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match ctx.expiring() {
        Ok(layer) => layer.persist(&args[1]).map_or_else(db_error, |had| Reply::Int(i64::from(had))),
        Err(reply) => reply,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Bytes> {
        text.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn set_options_clash_as_in_redis() {
        let ok = |text: &str| parse_options(&words(text), 3, true).is_ok();
        assert!(ok("SET k v NX GET EX 10"));
        assert!(ok("SET k v EX 10 EX 20"));
        assert!(ok("SET k v KEEPTTL XX"));
        assert!(!ok("SET k v NX XX"));
        assert!(!ok("SET k v EX 10 PX 10"));
        assert!(!ok("SET k v KEEPTTL EX 10"));
        assert!(!ok("SET k v EX"));
        assert!(!ok("SET k v PERSIST"));
        let getex = |text: &str| parse_options(&words(text), 2, false).is_ok();
        assert!(getex("GETEX k PERSIST"));
        assert!(!getex("GETEX k PERSIST EX 1"));
        assert!(!getex("GETEX k NX"));
    }

    #[test]
    fn expiry_times_are_checked_as_in_redis() {
        let now = 1_000;
        assert_eq!(expiry_time(Given::Seconds, b"10", now, "set").ok(), Some(11_000));
        assert_eq!(expiry_time(Given::UnixMillis, b"5", now, "set").ok(), Some(5));
        let bad = Reply::error("ERR invalid expire time in 'set' command");
        for (given, text) in [
            (Given::Seconds, &b"0"[..]),
            (Given::Millis, b"-1"),
            (Given::Seconds, b"9223372036854775807"),
            (Given::Millis, b"9223372036854775807"),
        ] {
            assert_eq!(expiry_time(given, text, now, "set").err(), Some(bad.clone()), "{text:?}");
        }
        assert_eq!(expiry_time(Given::Seconds, b"x", now, "set").err(), Some(not_an_integer()));
    }
}
