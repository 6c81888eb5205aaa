//! Running a batch of requests (what one read of a connection brought):
//! each is looked up, checked (arity, AUTH, `--read_only`), run and
//! counted, and its reply encoded in the session's protocol. A run of
//! consecutive GETs is read with one `get_multi`, which locks and finds
//! the keys together.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kuradb::dbm::Dbm;

use super::commands::{self, arity_fits, lookup, Ctx, NO_AUTH, WRITE};
use super::reply::Reply;
use super::state::{After, Server, Session};

/// Runs `batch` in order, appending the replies to `out`; stops early when
/// a command ends the connection.
pub fn run_batch(server: &Server, session: &mut Session, batch: &[Vec<Bytes>], out: &mut BytesMut) {
    let mut i = 0;
    while i < batch.len() {
        let gets = batch[i..].iter().take_while(|args| is_plain_get(args)).count();
        if gets >= 2 && session.authenticated {
            run_gets(server, session, &batch[i..i + gets], out);
            i += gets;
            continue;
        }
        let reply = run_one(server, session, &batch[i]);
        if session.after == After::Shutdown {
            return;
        }
        reply.encode(session.protocol, out);
        if session.after == After::Close {
            return;
        }
        i += 1;
    }
}

fn is_plain_get(args: &[Bytes]) -> bool {
    args.len() == 2 && args[0].eq_ignore_ascii_case(b"get")
}

/// GETs read together; each is still counted as one call.
fn run_gets(server: &Server, session: &Session, batch: &[Vec<Bytes>], out: &mut BytesMut) {
    let start = Instant::now();
    let keys: Vec<&[u8]> = batch.iter().map(|args| &args[1][..]).collect();
    let db = &server.databases[session.db].db;
    let replies = match db.get_multi(&keys) {
        Ok(values) => values.into_iter().map(Reply::bulk_or_nil).collect(),
        Err(e) => vec![commands::db_error(e); keys.len()],
    };
    let (index, _) = lookup(b"get").expect("GET is a command");
    let each = start.elapsed() / keys.len() as u32;
    for reply in replies {
        server.stats.record(index, each, reply.is_error());
        reply.encode(session.protocol, out);
    }
}

/// Runs one request.
pub fn run_one(server: &Server, session: &mut Session, args: &[Bytes]) -> Reply {
    let Some((index, command)) = lookup(&args[0]) else {
        server.stats.unknown_commands.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return commands::unknown_command(args);
    };
    let refusal = if !arity_fits(command, args.len()) {
        Some(commands::wrong_arity(command.name))
    } else if !session.authenticated && command.flags & NO_AUTH == 0 {
        Some(Reply::error("NOAUTH Authentication required."))
    } else if server.settings.read_only && command.flags & WRITE != 0 {
        Some(Reply::error("READONLY You can't write against a read only server (kura serve --read_only)."))
    } else if command.flags & WRITE != 0 && server.replication.is_replica() {
        Some(Reply::error("READONLY You can't write against a read only replica."))
    } else {
        None
    };
    if let Some(reply) = refusal {
        server.stats.commands[index].rejected.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return reply;
    }
    let start = Instant::now();
    let reply = (command.run)(&mut Ctx { server, session }, args);
    server.stats.record(index, start.elapsed(), reply.is_error());
    reply
}
