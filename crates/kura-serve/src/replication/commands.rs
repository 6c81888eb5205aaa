//! REPLICAOF (and its old name SLAVEOF), which makes the server a replica
//! or a master again, REPLCONF and REPLSYNC, which a replica sends its
//! master to say who it is and turn its connection into a feed (see
//! `frames` for the exchange), ROLE, and WAIT.

use bytes::Bytes;

use super::plan::{self, Start};
use super::{FeedPlan, Target};
use std::time::{Duration, Instant};

use crate::commands::{is, parse_int, Ctx};
use crate::reply::Reply;
use crate::state::After;

/// `REPLICAOF host port` follows that master; `REPLICAOF NO ONE` stops.
pub fn replicaof(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let replication = &ctx.server.replication;
    if is(&args[1], "NO") && is(&args[2], "ONE") {
        if let Some(target) = replication.target() {
            log::info!("REPLICAOF NO ONE: no longer a replica of {target}; writes are taken");
        }
        replication.set_target(None);
        return Reply::OK;
    }
    if ctx.server.settings.read_only {
        return Reply::error("ERR a --read_only server cannot be a replica: its databases are not writable");
    }
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    let port = match std::str::from_utf8(&args[2]).ok().and_then(|p| p.parse::<u16>().ok()) {
        Some(port) if port > 0 => port,
        _ => return Reply::error("ERR Invalid master port"),
    };
    let target = Target { host, port };
    if replication.target().as_ref() == Some(&target) {
        return Reply::Status("OK Already connected to specified master");
    }
    log::info!("REPLICAOF {target}: following it; client writes are refused");
    replication.set_target(Some(target));
    Reply::OK
}

/// `REPLSYNC db FULL` or `REPLSYNC db TIMESTAMP SKIP`: answers where the
/// feed starts, then the connection carries the feed.
pub fn replsync(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let number = |arg: &Bytes| std::str::from_utf8(arg).ok().and_then(|t| t.parse::<u64>().ok());
    let Some(db) = number(&args[1]).map(|n| n as usize).filter(|n| *n < ctx.server.databases.len()) else {
        return Reply::error("ERR DB index is out of range");
    };
    let position = match args {
        [_, _, full] if is(full, "FULL") => None,
        [_, _, timestamp, skip] => match (number(timestamp), number(skip)) {
            (Some(t), Some(s)) => Some((t, s)),
            _ => return Reply::error("ERR REPLSYNC takes a timestamp and a count of entries"),
        },
        _ => return Reply::error("ERR syntax error: REPLSYNC db FULL, or REPLSYNC db TIMESTAMP SKIP"),
    };
    let Some(queue) = ctx.server.replication.log(db) else {
        return Reply::error("ERR this server keeps no update log to replicate (start it with --ulog DIR)");
    };
    let start = match plan::start(queue, position) {
        Ok(start) => start,
        Err(e) => return Reply::error(format!("ERR reading the update log: {e}")),
    };
    let reply = match &start {
        Start::Continue { timestamp, .. } => super::frames::handshake(false, *timestamp),
        Start::Full { timestamp, reason } => {
            log::warn!("replica {}: full resync of database {db}: {reason}", ctx.session.peer);
            super::frames::handshake(true, *timestamp)
        }
    };
    ctx.session.feed = Some(FeedPlan { db, start, listening_port: ctx.session.listening_port });
    // Nothing after REPLSYNC is run: the connection is the feed's now.
    ctx.session.after = After::Close;
    reply
}

/// `REPLCONF option value …`: `listening-port` is kept (the master lists
/// the replica by it); Redis's other options (`ip-address`, `capa`, …) are
/// answered OK and change nothing. `ACK` is answered nothing, as in Redis
/// (a feed reads its replica's acknowledgements itself).
pub fn replconf(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    if args.len() == 3 && is(&args[1], "ACK") {
        return Reply::Many(Vec::new());
    }
    if args.len().is_multiple_of(2) {
        return crate::commands::syntax_error();
    }
    for pair in args[1..].chunks(2) {
        if is(&pair[0], "listening-port") {
            match std::str::from_utf8(&pair[1]).ok().and_then(|p| p.parse::<u16>().ok()) {
                Some(port) if port > 0 => ctx.session.listening_port = Some(port),
                _ => return Reply::error("ERR Invalid listening-port"),
            }
        }
    }
    Reply::OK
}

/// ROLE: `[master, offset, [[ip, port, offset], …]]` or `[slave, host,
/// port, state, offset]`, as Redis answers it, with the offsets of
/// `Replication::offset`.
pub fn role(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    let replication = &ctx.server.replication;
    let offset = replication.offset() as i64;
    match replication.target() {
        None => {
            let replicas = replication
                .replicas()
                .into_iter()
                .map(|r| {
                    Reply::Array(vec![
                        Reply::bulk(r.ip),
                        Reply::bulk(r.port.to_string()),
                        Reply::bulk(r.offset.to_string()),
                    ])
                })
                .collect();
            Reply::Array(vec![Reply::bulk(&b"master"[..]), Reply::Int(offset), Reply::Array(replicas)])
        }
        Some(target) => {
            let links: Vec<_> = replication.links.iter().map(|l| l.snapshot()).collect();
            let state = if links.iter().all(|l| l.state == "up") {
                "connected"
            } else if links.iter().any(|l| l.state == "sync") {
                "sync"
            } else {
                "connecting"
            };
            Reply::Array(vec![
                Reply::bulk(&b"slave"[..]),
                Reply::bulk(target.host),
                Reply::Int(i64::from(target.port)),
                Reply::bulk(state),
                Reply::Int(offset),
            ])
        }
    }
}

/// `WAIT numreplicas timeout`: how many replicas have acknowledged every
/// write this connection made so far, once `numreplicas` have or after
/// `timeout` milliseconds (0: no limit).
pub fn wait(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let (Some(wanted), Some(timeout)) = (parse_int(&args[1]), parse_int(&args[2])) else {
        return crate::commands::not_an_integer();
    };
    if timeout < 0 {
        return Reply::error("ERR timeout is negative");
    }
    let replication = &ctx.server.replication;
    if replication.is_replica() {
        return Reply::error(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica \
             is configured to be writable (which is not the default) writes to replicas are just local and are \
             not propagated.",
        );
    }
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
    let server = ctx.server;
    let wanted = usize::try_from(wanted).unwrap_or(0);
    Reply::Int(replication.wait_acks(&ctx.session.written, wanted, deadline, || server.stopping()) as i64)
}

/// Notes, after a write of `session` (on its database, or with `all`, an
/// EXEC, on every database), the log's newest time: WAIT waits for it.
pub fn note_write(server: &crate::state::Server, session: &mut crate::state::Session, all: bool) {
    let dbs = if all { 0..server.databases.len() } else { session.db..session.db + 1 };
    for db in dbs {
        let Some(queue) = server.replication.log(db) else { continue };
        let time = queue.timestamp();
        match session.written.iter_mut().find(|(d, _)| *d == db) {
            Some(mark) => mark.1 = mark.1.max(time),
            None => session.written.push((db, time)),
        }
    }
}
