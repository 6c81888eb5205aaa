//! Administration: INFO, COMMAND, CONFIG GET, SAVE, BGSAVE, LASTSAVE,
//! DEBUG SLEEP, SHUTDOWN, KURA.SWAP.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuradb::dbm::{Dbm, Durability};

use super::{db_error, is, unknown_subcommand, Command, Ctx, COMMANDS, DB, NO_AUTH, WRITE};
use crate::pattern::KeyPattern;
use crate::reply::Reply;
use crate::state::After;

/// The Redis version kura serve answers to (HELLO, INFO): the one whose
/// commands and replies it follows, so clients pick the right dialect.
pub const REDIS_VERSION: &str = "7.0.0";

pub fn info(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let sections: Vec<String> =
        args[1..].iter().map(|a| String::from_utf8_lossy(a).to_ascii_lowercase()).collect();
    Reply::bulk(crate::info::text(ctx.server, &sections))
}

fn command_entry(c: &Command) -> Reply {
    let mut flags = Vec::new();
    flags.push(Reply::Status(if c.flags & WRITE != 0 { "write" } else { "readonly" }));
    if c.flags & DB == 0 {
        flags.push(Reply::Status("fast"));
    }
    if c.flags & NO_AUTH != 0 {
        flags.push(Reply::Status("no_auth"));
    }
    Reply::Array(vec![
        Reply::bulk(c.name),
        Reply::Int(i64::from(c.arity)),
        Reply::Array(flags),
        Reply::Int(i64::from(c.keys.0)),
        Reply::Int(i64::from(c.keys.1)),
        Reply::Int(i64::from(c.keys.2)),
    ])
}

pub fn command(_: &mut Ctx, args: &[Bytes]) -> Reply {
    let Some(sub) = args.get(1) else {
        return Reply::Array(COMMANDS.iter().map(command_entry).collect());
    };
    if is(sub, "COUNT") {
        Reply::Int(COMMANDS.len() as i64)
    } else if is(sub, "LIST") {
        Reply::Array(COMMANDS.iter().map(|c| Reply::bulk(c.name)).collect())
    } else if is(sub, "INFO") {
        Reply::Array(
            args[2..]
                .iter()
                .map(|name| super::lookup(name).map_or(Reply::Nil, |(_, c)| command_entry(c)))
                .collect(),
        )
    } else if is(sub, "DOCS") {
        // redis-cli asks for the docs to show hints; there are none to give.
        Reply::Map(Vec::new())
    } else {
        unknown_subcommand("command", sub)
    }
}

pub fn config(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    if is(&args[1], "SET") {
        return config_set(ctx, args);
    }
    if is(&args[1], "REWRITE") {
        if args.len() != 2 {
            return super::wrong_arity("config|rewrite");
        }
        let Some(path) = &ctx.server.settings.config_file else {
            // What Redis answers when it was started without a configuration file.
            return Reply::error("ERR The server is running without a config file");
        };
        let settings = crate::config_file::FileSettings {
            replicaof: ctx.server.replication.target(),
            replica_priority: Some(ctx.server.replica_priority.load(Relaxed)),
        };
        return match crate::config_file::save(path, &settings) {
            Ok(()) => Reply::OK,
            Err(e) => Reply::error(format!("ERR Rewriting config file: {e}")),
        };
    }
    if !is(&args[1], "GET") {
        return unknown_subcommand("config", &args[1]);
    }
    if args.len() < 3 {
        return super::wrong_arity("config|get");
    }
    let s = &ctx.server.settings;
    // The settings a client may ask about, with their Redis names.
    let settings = [
        ("databases", ctx.server.databases.len().to_string()),
        ("maxclients", s.max_clients.to_string()),
        ("proto-max-bulk-len", s.max_request_size.to_string()),
        ("client-query-buffer-limit", s.max_request_size.to_string()),
        ("save", String::new()),
        ("appendonly", "no".to_string()),
        ("replica-priority", ctx.server.replica_priority.load(Relaxed).to_string()),
        ("slave-priority", ctx.server.replica_priority.load(Relaxed).to_string()),
        ("replica-read-only", "yes".to_string()),
        ("slave-read-only", "yes".to_string()),
    ];
    let mut out = Vec::new();
    for pattern in &args[2..] {
        let pattern = match KeyPattern::new(&pattern.to_ascii_lowercase()) {
            Ok(p) => p,
            Err(e) => return Reply::Error(e),
        };
        for (name, value) in &settings {
            if pattern.matches(name.as_bytes())
                && !out.iter().any(|(k, _): &(Reply, Reply)| k == &Reply::bulk(*name))
            {
                out.push((Reply::bulk(*name), Reply::bulk(value.clone())));
            }
        }
    }
    Reply::Map(out)
}

/// CONFIG SET name value …: only `replica-priority` (or its old name
/// `slave-priority`), which Sentinel reads; the other settings are flags.
fn config_set(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return super::wrong_arity("config|set");
    }
    let mut priority = None;
    for pair in args[2..].chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
        if name == "replica-priority" || name == "slave-priority" {
            match super::parse_int(&pair[1]).filter(|n| (0..=i64::from(i32::MAX)).contains(n)) {
                Some(n) => priority = Some(n),
                None => {
                    return Reply::error(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be between \
                         0 and 2147483647 inclusive"
                    ))
                }
            }
        } else {
            return Reply::error(format!(
                "ERR CONFIG SET of '{name}' is not supported by kura serve: restart it with other flags \
                 (replica-priority is the one it sets)"
            ));
        }
    }
    if let Some(n) = priority {
        ctx.server.replica_priority.store(n, Relaxed);
    }
    Reply::OK
}

pub fn save(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    let outcome = ctx.server.databases.iter().try_for_each(|d| d.db.load().synchronize(Durability::Hard));
    ctx.server.saves.done(outcome.is_ok());
    outcome.map_or_else(db_error, |()| Reply::OK)
}

pub fn bgsave(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    if args.len() > 2 || args.get(1).is_some_and(|a| !is(a, "SCHEDULE")) {
        return super::syntax_error();
    }
    let saves = &ctx.server.saves;
    let mut background = saves.background.lock();
    if background.as_ref().is_some_and(|h| !h.is_finished()) {
        return Reply::error("ERR Background save already in progress");
    }
    let databases: Vec<_> = ctx.server.databases.iter().map(|d| (d.db.load_full(), d.spec.clone())).collect();
    let status = Arc::clone(saves);
    let gate = ctx.server.gate.clone();
    *background = Some(std::thread::spawn(move || {
        // Synchronizing locks each database for long: short calls must not
        // wait for it in place.
        let _long = gate.long();
        let mut ok = true;
        for (db, spec) in databases {
            if let Err(e) = db.synchronize(Durability::Hard) {
                log::error!("BGSAVE of {spec}: {e}");
                ok = false;
            }
        }
        status.done(ok);
        log::info!("background save {}", if ok { "done" } else { "failed" });
    }));
    Reply::Status("Background saving started")
}

/// `KURA.SWAP`: checks every published directory served for a new version
/// now, as SIGHUP does, and answers once done: OK when each serves the
/// version its `CURRENT` names, else an error saying why not.
pub fn kura_swap(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    if ctx.server.databases.iter().all(|d| d.published.is_none()) {
        return Reply::error("ERR KURA.SWAP: no published directory is served");
    }
    let errors = crate::published::check_all(ctx.server, true);
    if errors.is_empty() {
        Reply::OK
    } else {
        Reply::error(format!("ERR KURA.SWAP: {}", errors.join("; ")))
    }
}

pub fn lastsave(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    Reply::Int(ctx.server.saves.last.load(Relaxed) as i64)
}

/// `DEBUG SLEEP seconds`: a call that takes that long. Redis's blocks its
/// whole server; this one runs as every long call does, on the blocking
/// pool, and holds up its own connection alone: it shows, and the tests
/// check, that a long call does not stall the other clients.
pub fn debug(_: &mut Ctx, args: &[Bytes]) -> Reply {
    if !is(&args[1], "SLEEP") {
        return unknown_subcommand("debug", &args[1]);
    }
    if args.len() != 3 {
        return super::wrong_arity("debug|sleep");
    }
    let seconds = std::str::from_utf8(&args[2]).ok().and_then(|s| s.parse::<f64>().ok());
    let Some(pause) = seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()) else {
        return Reply::error("ERR value is not a valid float");
    };
    std::thread::sleep(pause);
    Reply::OK
}

pub fn shutdown(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    // Closing a kuradb database writes it back whatever the flag: NOSAVE
    // cannot leave a database unclosed, so every form shuts down the same.
    for arg in &args[1..] {
        if is(arg, "ABORT") {
            return Reply::error("ERR No shutdown in progress.");
        }
        if !["NOSAVE", "SAVE", "NOW", "FORCE"].iter().any(|w| is(arg, w)) {
            return super::syntax_error();
        }
    }
    log::info!("SHUTDOWN from client {} ({})", ctx.session.id, ctx.session.peer);
    ctx.session.after = After::Shutdown;
    ctx.server.begin_shutdown();
    Reply::OK
}
