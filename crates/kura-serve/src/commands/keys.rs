//! Commands on the keyspace: DEL (and UNLINK), EXISTS, TYPE, KEYS, SCAN,
//! DBSIZE, FLUSHDB. Every value is a string, so TYPE answers `string` or
//! `none`.

use bytes::Bytes;
use kuradb::dbm::{Access, Action};

use super::{db_error, is, syntax_error, Ctx};
use crate::expiry::key_count;
use crate::pattern::KeyPattern;
use crate::reply::Reply;

fn key_list(args: &[Bytes]) -> Vec<&[u8]> {
    args[1..].iter().map(|k| &k[..]).collect()
}

pub fn del(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    ctx.data().remove_multi(&key_list(args)).map_or_else(db_error, |n| Reply::Int(n as i64))
}

pub fn exists(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match ctx.data().contains_multi(&key_list(args)) {
        Ok(found) => Reply::Int(found.iter().filter(|&&f| f).count() as i64),
        Err(e) => db_error(e),
    }
}

pub fn type_of(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match ctx.data().contains(&args[1]) {
        Ok(true) => Reply::Status("string"),
        Ok(false) => Reply::Status("none"),
        Err(e) => db_error(e),
    }
}

pub fn keys(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let pattern = match KeyPattern::new(&args[1]) {
        Ok(p) => p,
        Err(e) => return Reply::Error(e),
    };
    let mut found = Vec::new();
    let outcome = ctx.data().process_each(Access::ReadOnly, &mut |key, _| {
        if pattern.matches(key) {
            found.push(Reply::bulk(Bytes::copy_from_slice(key)));
        }
        Action::Keep
    });
    outcome.map_or_else(db_error, |()| Reply::Array(found))
}

/// SCAN's default amount of work, as Redis's.
const DEFAULT_COUNT: usize = 10;

pub fn scan(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let Some(cursor) = std::str::from_utf8(&args[1]).ok().and_then(|s| s.parse::<u64>().ok()) else {
        return Reply::error("ERR invalid cursor");
    };
    let mut pattern = KeyPattern::new(b"*").expect("* is a pattern");
    let mut count = DEFAULT_COUNT;
    let mut strings_only = true;
    let mut i = 2;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else { return syntax_error() };
        if is(&args[i], "MATCH") {
            pattern = match KeyPattern::new(value) {
                Ok(p) => p,
                Err(e) => return Reply::Error(e),
            };
        } else if is(&args[i], "COUNT") {
            match super::parse_int(value) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => return syntax_error(),
                None => return super::not_an_integer(),
            }
        } else if is(&args[i], "TYPE") {
            // Every value is a string: another type matches no key.
            strings_only = is(value, "string");
        } else {
            return syntax_error();
        }
        i += 2;
    }
    let index = ctx.session.db;
    let database = &ctx.server.databases[index];
    match ctx.server.cursors.step(index, database, cursor, &pattern, count) {
        Ok((next, keys)) => {
            let keys = if strings_only { keys.into_iter().map(Reply::Bulk).collect() } else { Vec::new() };
            Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(keys)])
        }
        Err(e) => Reply::Error(e),
    }
}

pub fn dbsize(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    key_count(&*ctx.db(), ctx.expiry_state().is_some()).map_or_else(db_error, |n| Reply::Int(n as i64))
}

pub fn flushdb(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    // ASYNC and SYNC differ in when the memory is freed; here clearing is
    // done when the reply is sent either way.
    match args.get(1) {
        None => {}
        Some(mode) if args.len() == 2 && (is(mode, "ASYNC") || is(mode, "SYNC")) => {}
        Some(_) => return syntax_error(),
    }
    ctx.data().clear().map_or_else(db_error, |()| Reply::OK)
}
