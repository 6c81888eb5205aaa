//! Commands on the connection: PING, ECHO, SELECT, AUTH, HELLO, RESET, QUIT, CLIENT.

use bytes::Bytes;

use super::{is, parse_int, unknown_subcommand, wrong_arity, Ctx};
use crate::reply::Reply;
use crate::state::After;

pub fn ping(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    if ctx.session.subscribed > 0 && ctx.session.protocol == 2 && args.len() <= 2 {
        // A subscribed RESP2 connection reads every frame as a message:
        // its PING is answered in that shape, as Redis does.
        let payload = args.get(1).cloned().unwrap_or_default();
        return Reply::Array(vec![Reply::bulk(&b"pong"[..]), Reply::Bulk(payload)]);
    }
    match args.len() {
        1 => Reply::Status("PONG"),
        2 => Reply::Bulk(args[1].clone()),
        _ => wrong_arity("ping"),
    }
}

pub fn echo(_: &mut Ctx, args: &[Bytes]) -> Reply {
    Reply::Bulk(args[1].clone())
}

pub fn select(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match parse_int(&args[1]) {
        None => super::not_an_integer(),
        Some(n) if n < 0 || n as usize >= ctx.server.databases.len() => {
            Reply::error("ERR DB index is out of range")
        }
        Some(n) => {
            ctx.session.db = n as usize;
            Reply::OK
        }
    }
}

/// Checks a password (the user must be `default`, the only one).
fn check_password(ctx: &mut Ctx, user: Option<&[u8]>, password: &[u8]) -> Reply {
    let Some(expected) = &ctx.server.settings.requirepass else {
        return Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your \
             configuration is correct?",
        );
    };
    let user_ok = user.is_none_or(|u| u == b"default");
    // Comparing every byte whatever the first difference keeps the time
    // from telling how much of a guess was right.
    let same = password.len() == expected.len()
        && password.iter().zip(expected.as_bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
    if user_ok && same {
        ctx.session.authenticated = true;
        Reply::OK
    } else {
        Reply::error("WRONGPASS invalid username-password pair or user is disabled.")
    }
}

pub fn auth(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    match args.len() {
        2 => check_password(ctx, None, &args[1]),
        3 => check_password(ctx, Some(&args[1]), &args[2]),
        _ => super::syntax_error(),
    }
}

pub fn hello(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let mut protocol = ctx.session.protocol;
    if let Some(version) = args.get(1) {
        match parse_int(version) {
            Some(v @ 2..=3) => protocol = v as u8,
            Some(_) => return Reply::error("NOPROTO unsupported protocol version"),
            None => return Reply::error("ERR Protocol version is not an integer or out of range"),
        }
    }
    let mut name = None;
    let mut i = 2;
    while i < args.len() {
        if is(&args[i], "AUTH") && i + 2 < args.len() {
            let reply = check_password(ctx, Some(&args[i + 1]), &args[i + 2]);
            if reply.is_error() {
                return reply;
            }
            i += 3;
        } else if is(&args[i], "SETNAME") && i + 1 < args.len() {
            name = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Reply::error(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[i])
            ));
        }
    }
    if !ctx.session.authenticated {
        return Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH \
             <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the \
             same time",
        );
    }
    if let Some(name) = name {
        if let Err(reply) = check_name(&name) {
            return reply;
        }
        ctx.session.name = Some(name);
    }
    ctx.session.protocol = protocol;
    let field = |k: &'static str, v: Reply| (Reply::bulk(k), v);
    Reply::Map(vec![
        field("server", Reply::bulk("redis")),
        field("version", Reply::bulk(super::server::REDIS_VERSION)),
        field("proto", Reply::Int(i64::from(protocol))),
        field("id", Reply::Int(ctx.session.id as i64)),
        field("mode", Reply::bulk("standalone")),
        field("role", Reply::bulk("master")),
        field("modules", Reply::Array(Vec::new())),
    ])
}

/// RESET: the connection as it was when it connected (no block, no
/// watches, no subscriptions, database 0, RESP2, no name, and
/// unauthenticated if the server wants a password).
pub fn reset(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    let session = &mut *ctx.session;
    session.multi = None;
    session.watches.clear();
    ctx.server.pubsub.leave(session.id);
    session.subscribed = 0;
    session.db = 0;
    session.protocol = 2;
    session.name = None;
    session.authenticated = ctx.server.settings.requirepass.is_none();
    Reply::Status("RESET")
}

pub fn quit(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    ctx.session.after = After::Close;
    Reply::OK
}

fn check_name(name: &[u8]) -> Result<(), Reply> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Reply::error("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    Ok(())
}

pub fn client(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let sub = &args[1];
    let arity = |n: usize, name: &str| (args.len() != n).then(|| wrong_arity(&format!("client|{name}")));
    if is(sub, "ID") {
        arity(2, "id").unwrap_or(Reply::Int(ctx.session.id as i64))
    } else if is(sub, "GETNAME") {
        arity(2, "getname").unwrap_or_else(|| ctx.session.name.clone().map_or(Reply::Nil, Reply::Bulk))
    } else if is(sub, "SETNAME") {
        if let Some(reply) = arity(3, "setname") {
            return reply;
        }
        if let Err(reply) = check_name(&args[2]) {
            return reply;
        }
        ctx.session.name = (!args[2].is_empty()).then(|| args[2].clone());
        Reply::OK
    } else if is(sub, "INFO") {
        arity(2, "info").unwrap_or_else(|| {
            let s = &ctx.session;
            let name = s.name.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            Reply::bulk(format!(
                "id={} addr={} name={} db={} resp={}\n",
                s.id, s.peer, name, s.db, s.protocol
            ))
        })
    } else {
        unknown_subcommand("client", sub)
    }
}
