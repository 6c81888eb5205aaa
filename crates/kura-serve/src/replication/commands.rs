//! REPLICAOF (and its old name SLAVEOF), which makes the server a replica
//! or a master again, and REPLSYNC, which a replica sends its master to
//! turn its connection into a feed (see `frames` for the exchange).

use bytes::Bytes;

use super::plan::{self, Start};
use super::{FeedPlan, Target};
use crate::commands::{is, Ctx};
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
    ctx.session.feed = Some(FeedPlan { db, start });
    // Nothing after REPLSYNC is run: the connection is the feed's now.
    ctx.session.after = After::Close;
    reply
}
