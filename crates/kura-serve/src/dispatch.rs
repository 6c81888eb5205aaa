//! Running a batch of requests (what one read of a connection brought):
//! each is looked up, checked (arity, AUTH, `--read_only`), run and
//! counted, and its reply encoded in the session's protocol.
//!
//! A GET on a fast database (see `execution`) writes the value into the
//! output from within the database's call, with no copy of its own. On
//! other databases, a run of consecutive GETs is read with one
//! `get_multi`, which locks and finds the keys together (with one round of
//! device reads where the database batches them); on a memory-mapped file
//! it costs twice a lone GET's instructions per key, so fast databases do
//! without it.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kuradb::dbm::expiry::{stored_value, ExpiringDbm, ExpiryState, EXPIRY_MARKER};
use kuradb::dbm::poly::PolyDbm;

use super::databases::Db;
use kuradb::dbm::{Access, Action, Dbm};

use super::commands::{self, arity_fits, lookup, Command, Ctx, NO_AUTH, WRITE};
use super::reply::Reply;
use super::request::Batch;
use super::state::{After, Server, Session};

/// GET's index in the command table (its first entry).
const GET: usize = 0;

/// Runs `batch` in order, appending the replies to `out`; stops early when
/// a command ends the connection.
pub fn run_batch(server: &Server, session: &mut Session, batch: &Batch, out: &mut BytesMut) {
    // One clock reading per command: a command's time runs from the end of
    // the one before it (or the batch's start) to the end of its own, so it
    // covers its lookup and the encoding of its reply too.
    let mut mark = Instant::now();
    let mut i = 0;
    // The keys of the commands before this index were prefetched (or need
    // not be: a lone command gains nothing from it).
    let mut prefetched = if batch.len() < 2 { batch.len() } else { 0 };
    while i < batch.len() {
        if i >= prefetched {
            prefetched = match server.databases.get(session.db) {
                Some(database) if database.fast && session.authenticated => {
                    prefetch(database.db.load().inner(), batch, i)
                }
                _ => i + 1,
            };
        }
        let args = batch.get(i);
        if session.multi.is_some() {
            if let Some(reply) = crate::multi::queue(server, session, args) {
                reply.encode(session.protocol, out);
                mark = Instant::now();
                i += 1;
                continue;
            }
        }
        if is_plain_get(args) && session.authenticated && session.multi.is_none() && session.subscribed == 0 {
            let database = &server.databases[session.db];
            if database.fast {
                let failed =
                    get_into(&database.db.load(), database.expiry.state(), session.protocol, &args[1], out);
                mark = record(server, GET, mark, failed);
                i += 1;
                continue;
            }
            let gets = (i..batch.len()).take_while(|&j| is_plain_get(batch.get(j))).count();
            if gets >= 2 {
                run_gets(server, session, batch, i..i + gets, out);
                mark = Instant::now();
                i += gets;
                continue;
            }
        }
        let Some((index, command)) = lookup(&args[0]) else {
            server.stats.unknown_commands.fetch_add(1, Relaxed);
            commands::unknown_command(args).encode(session.protocol, out);
            i += 1;
            continue;
        };
        if let Some(refusal) = refusal(server, session, command, args.len()) {
            server.stats.reject(index);
            refusal.encode(session.protocol, out);
            i += 1;
            continue;
        }
        let reply = (command.run)(&mut Ctx::new(server, session), args);
        session.client.ran(index);
        if session.after == After::Shutdown {
            return;
        }
        if command.flags & WRITE != 0 || command.name == "exec" {
            crate::replication::commands::note_write(server, session, command.name == "exec");
        }
        let failed = reply.is_error();
        reply.encode(session.protocol, out);
        mark = record(server, index, mark, failed);
        if session.after == After::Close {
            return;
        }
        i += 1;
    }
}

/// Counts a call of command `index` that began at `since`; the time it ended.
fn record(server: &Server, index: usize, since: Instant, failed: bool) -> Instant {
    let now = Instant::now();
    server.stats.record(index, now - since, failed);
    now
}

/// Keys [`prefetch`] hints at once: a pipeline of 16 commands' worth, few
/// enough that the first are still cached when their commands run.
const PREFETCH_KEYS: usize = 32;

/// Hints the database that the commands of `batch` from `start` on will
/// look their keys up (see `Dbm::prefetch`), up to [`PREFETCH_KEYS`] keys,
/// so that their cache misses overlap though each command runs alone;
/// answers the index of the first command not covered.
fn prefetch(db: &PolyDbm, batch: &Batch, start: usize) -> usize {
    let mut keys: Vec<&[u8]> = Vec::with_capacity(PREFETCH_KEYS);
    let mut end = start;
    while end < batch.len() && keys.len() < PREFETCH_KEYS {
        push_keys(batch.get(end), &mut keys);
        end += 1;
    }
    if keys.len() >= 2 {
        db.prefetch(&keys);
    }
    end
}

/// Appends the keys of the command `args` (by its key positions, as
/// COMMAND reports them) to `keys`; nothing for an unknown command or a
/// wrong arity.
fn push_keys<'b>(args: &'b [Bytes], keys: &mut Vec<&'b [u8]>) {
    if is_plain_get(args) {
        keys.push(&args[1]);
        return;
    }
    let Some((_, command)) = lookup(&args[0]) else { return };
    let (first, last, step) = command.keys;
    if first <= 0 || !arity_fits(command, args.len()) {
        return;
    }
    let last = if last < 0 { args.len() as i32 + last } else { last };
    let mut at = first;
    while at <= last && (at as usize) < args.len() {
        keys.push(&args[at as usize]);
        at += step.max(1);
    }
}

fn is_plain_get(args: &[Bytes]) -> bool {
    args.len() == 2 && args[0].eq_ignore_ascii_case(b"get")
}

/// Encodes the value of `key` (or nil) into `out`; whether it failed. On a
/// database with expiry (`expiry`), the stored value is taken apart in
/// place and an expired one is nil, as the expiry layer would answer.
fn get_into(db: &Db, expiry: Option<&Arc<ExpiryState>>, version: u8, key: &[u8], out: &mut BytesMut) -> bool {
    let start = out.len();
    let mut found = false;
    let now = expiry.map(|state| state.now_ms());
    // The expiry layer's own record is no key of the user's.
    let hidden = expiry.is_some() && key == EXPIRY_MARKER;
    let mut broken = None;
    let outcome = db.process(key, Access::ReadOnly, &mut |stored| {
        let value = match (stored, now) {
            (None, _) => None,
            _ if hidden => None,
            (Some(value), None) => Some(value),
            (Some(stored), Some(now)) => match stored_value(stored) {
                Ok((at, value)) => at.is_none_or(|at| at > now).then_some(value),
                Err(e) => {
                    broken = Some(e);
                    None
                }
            },
        };
        if let Some(value) = value {
            Reply::encode_bulk(value, version, out);
            found = true;
        }
        Action::Keep
    });
    let outcome = outcome.and_then(|()| broken.map_or(Ok(()), Err));
    match outcome {
        Ok(()) => {
            if !found {
                Reply::Nil.encode(version, out);
            }
            false
        }
        Err(e) => {
            // One reply per request: the error replaces a value encoded
            // before the call failed.
            out.truncate(start);
            commands::db_error(e).encode(version, out);
            true
        }
    }
}

/// The GETs `gets` of `batch` read together; each is still counted as one call.
fn run_gets(server: &Server, session: &Session, batch: &Batch, gets: Range<usize>, out: &mut BytesMut) {
    let start = Instant::now();
    let keys: Vec<&[u8]> = gets.map(|j| &batch.get(j)[1][..]).collect();
    let database = &server.databases[session.db];
    // One version for the run, as for one MGET.
    let current = database.db.load();
    let db: &dyn Dbm = &**current;
    let layered = database.expiry.state().map(|state| ExpiringDbm::with_state(db, Arc::clone(state)));
    let db: &dyn Dbm = match &layered {
        Some(layer) => layer,
        None => db,
    };
    let replies = match db.get_multi(&keys) {
        Ok(values) => values.into_iter().map(Reply::bulk_or_nil).collect(),
        Err(e) => vec![commands::db_error(e); keys.len()],
    };
    let each = start.elapsed() / keys.len() as u32;
    for reply in replies {
        server.stats.record(GET, each, reply.is_error());
        reply.encode(session.protocol, out);
    }
}

/// The reply refusing a request of `args` words for `command`, if it may not run.
pub(crate) fn refusal(server: &Server, session: &Session, command: &Command, args: usize) -> Option<Reply> {
    if !arity_fits(command, args) {
        Some(commands::wrong_arity(command.name))
    } else if !session.authenticated && command.flags & NO_AUTH == 0 {
        Some(Reply::error("NOAUTH Authentication required."))
    } else if session.subscribed > 0
        && session.protocol == 2
        && !commands::pubsub::ALLOWED_SUBSCRIBED.contains(&command.name)
    {
        Some(commands::pubsub::refused_while_subscribed(command.name))
    } else if server.settings.read_only && command.flags & WRITE != 0 {
        Some(Reply::error("READONLY You can't write against a read only server (kura serve --read_only)."))
    } else if command.flags & WRITE != 0 && server.replication.is_replica() {
        Some(Reply::error("READONLY You can't write against a read only replica."))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_is_where_the_fast_path_counts_it() {
        assert_eq!(lookup(b"GET").map(|(index, _)| index), Some(GET));
    }

    #[test]
    fn the_keys_prefetched_are_those_commands_name() {
        let keys_of = |words: &[&str]| {
            let args: Vec<Bytes> = words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
            let mut keys = Vec::new();
            push_keys(&args, &mut keys);
            keys.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect::<Vec<_>>()
        };
        assert_eq!(keys_of(&["get", "a"]), ["a"]);
        assert_eq!(keys_of(&["SET", "a", "1", "EX", "10"]), ["a"]);
        assert_eq!(keys_of(&["mset", "a", "1", "b", "2"]), ["a", "b"]);
        assert_eq!(keys_of(&["DEL", "a", "b", "c"]), ["a", "b", "c"]);
        assert_eq!(keys_of(&["mget", "a", "b"]), ["a", "b"]);
        assert_eq!(keys_of(&["incrby", "n", "5"]), ["n"]);
        // No keys: commands without any, unknown ones, wrong arities.
        assert!(keys_of(&["ping"]).is_empty());
        assert!(keys_of(&["select", "1"]).is_empty());
        assert!(keys_of(&["frobnicate", "a"]).is_empty());
        assert!(keys_of(&["get", "a", "b"]).is_empty());
        assert!(keys_of(&["incrby", "n"]).is_empty());
    }
}
