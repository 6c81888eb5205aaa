//! Commands on the connection: PING, ECHO, SELECT, AUTH, HELLO, RESET, QUIT, CLIENT.

use bytes::Bytes;

use std::sync::atomic::Ordering::Relaxed;

use super::{is, parse_int, unknown_subcommand, wrong_arity, Ctx};
use crate::clients::Client;
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
        ctx.session.client.set_name(Some(name.clone()));
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
        field("role", Reply::bulk(if ctx.server.replication.is_replica() { "replica" } else { "master" })),
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
    session.client.set_name(None);
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
        ctx.session.client.set_name(ctx.session.name.clone());
        Reply::OK
    } else if is(sub, "SETINFO") {
        // Redis 7.2's; what a client says of its library is not kept.
        if args.len() != 4 {
            return wrong_arity("client|setinfo");
        }
        if is(&args[2], "LIB-NAME") || is(&args[2], "LIB-VER") {
            Reply::OK
        } else {
            Reply::error(format!("ERR Unrecognized option '{}'", String::from_utf8_lossy(&args[2])))
        }
    } else if is(sub, "INFO") {
        arity(2, "info").unwrap_or_else(|| Reply::bulk(format!("{}\n", line(ctx, &ctx.session.client))))
    } else if is(sub, "LIST") {
        list(ctx, args)
    } else if is(sub, "KILL") {
        kill(ctx, args)
    } else {
        unknown_subcommand("client", sub)
    }
}

/// A client's CLIENT LIST line; this connection's own with its state now.
fn line(ctx: &Ctx, client: &Client) -> String {
    if client.id == ctx.session.id {
        client.db.store(ctx.session.db, Relaxed);
        client.multi.store(ctx.session.multi.is_some(), Relaxed);
        client.resp.store(usize::from(ctx.session.protocol), Relaxed);
    }
    let (channels, patterns) = ctx.server.pubsub.counts(client.id);
    client.line(channels, patterns)
}

/// The kind CLIENT LIST TYPE and CLIENT KILL TYPE name, Redis's names
/// (`slave` is `replica`); `master` names none of kura serve's clients (a
/// replica's links to its master are not among them).
fn client_type(word: &[u8]) -> Option<&'static str> {
    ["normal", "replica", "pubsub", "master"]
        .into_iter()
        .find(|t| is(word, t))
        .or_else(|| is(word, "slave").then_some("replica"))
}

/// CLIENT LIST [TYPE type] [ID id …].
fn list(ctx: &Ctx, args: &[Bytes]) -> Reply {
    let mut kind = None;
    let mut ids: Option<Vec<u64>> = None;
    let mut i = 2;
    while i < args.len() {
        if is(&args[i], "TYPE") && i + 1 < args.len() {
            match client_type(&args[i + 1]) {
                Some(t) => kind = Some(t),
                None => {
                    return Reply::error(format!(
                        "ERR Unknown client type '{}'",
                        String::from_utf8_lossy(&args[i + 1])
                    ))
                }
            }
            i += 2;
        } else if is(&args[i], "ID") && i + 1 < args.len() {
            let mut wanted = Vec::new();
            for arg in &args[i + 1..] {
                match parse_int(arg) {
                    Some(id) if id > 0 => wanted.push(id as u64),
                    _ => return Reply::error("ERR Invalid client ID"),
                }
            }
            ids = Some(wanted);
            i = args.len();
        } else {
            return super::syntax_error();
        }
    }
    let mut text = String::new();
    for client in ctx.server.clients.all() {
        let (channels, patterns) = ctx.server.pubsub.counts(client.id);
        if kind.is_some_and(|k| k != client.kind(channels + patterns)) {
            continue;
        }
        if ids.as_ref().is_some_and(|ids| !ids.contains(&client.id)) {
            continue;
        }
        text.push_str(&line(ctx, &client));
        text.push('\n');
    }
    Reply::bulk(text)
}

/// CLIENT KILL ip:port (answers OK or an error), or CLIENT KILL with
/// filters (ID, ADDR, LADDR, TYPE, USER, SKIPME, MAXAGE; answers how many
/// were killed).
fn kill(ctx: &Ctx, args: &[Bytes]) -> Reply {
    let clients = ctx.server.clients.all();
    if args.len() == 3 {
        let addr = &args[2][..];
        return match clients.iter().find(|c| c.addr.as_bytes() == addr) {
            Some(client) => {
                client.kill();
                Reply::OK
            }
            None => Reply::error("ERR No such client"),
        };
    }
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return super::syntax_error();
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut kind = None;
    let mut skipme = true;
    let mut max_age = None;
    let mut user_matches = true;
    for pair in args[2..].chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        if is(option, "ID") {
            match parse_int(value) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => return Reply::error("ERR client-id should be greater than 0"),
            }
        } else if is(option, "ADDR") {
            addr = Some(value.clone());
        } else if is(option, "LADDR") {
            laddr = Some(value.clone());
        } else if is(option, "TYPE") {
            match client_type(value) {
                Some(t) => kind = Some(t),
                None => {
                    return Reply::error(format!(
                        "ERR Unknown client type '{}'",
                        String::from_utf8_lossy(value)
                    ))
                }
            }
        } else if is(option, "USER") {
            // The only user is `default`; another names no client.
            user_matches = &value[..] == b"default";
        } else if is(option, "SKIPME") {
            skipme = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return super::syntax_error();
            };
        } else if is(option, "MAXAGE") {
            match parse_int(value) {
                Some(n) if n >= 0 => max_age = Some(n as u64),
                _ => return super::not_an_integer(),
            }
        } else {
            return super::syntax_error();
        }
    }
    let mut killed = 0;
    for client in clients.iter().filter(|_| user_matches) {
        let (channels, patterns) = ctx.server.pubsub.counts(client.id);
        let matches = id.is_none_or(|id| id == client.id)
            && addr.as_ref().is_none_or(|a| a[..] == *client.addr.as_bytes())
            && laddr.as_ref().is_none_or(|a| a[..] == *client.laddr.as_bytes())
            && kind.is_none_or(|k| k == client.kind(channels + patterns))
            && max_age.is_none_or(|age| client.age_secs() >= age)
            && !(skipme && client.id == ctx.session.id);
        if matches {
            client.kill();
            killed += 1;
        }
    }
    Reply::Int(killed)
}
