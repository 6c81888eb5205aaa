//! MULTI/EXEC/DISCARD and WATCH/UNWATCH: the queue of a session's MULTI
//! block, and EXEC, which runs it in one kuradb transaction.
//!
//! After MULTI a command is checked (known, arity, AUTH, read-only, allowed
//! in a block, on the block's database) and queued; one that fails makes
//! EXEC answer EXECABORT. EXEC begins a transaction of the block's database
//! and runs the queued commands in it, each on a view of the transaction
//! as a database ([`TxDbm`]: reads see the transaction's snapshot and its
//! own writes, writes are gathered), then commits them as one unit. A
//! commit that conflicts (another client changed what the block read since
//! it began) is run again from the start, so the block has the effect of
//! running alone, with nothing of it seen before the end: the queued
//! commands are functions of the state alone. An error of one command is
//! its reply in the array; the others still apply, as in Redis.
//!
//! WATCH opens a [`Watch`] of the keys (a read view that keeps what changes
//! after it); EXEC commits only if no watched key of the block's database
//! changed since, checked under the commit lock, and answers a nil array
//! otherwise. Watched keys of another database are checked just before.

use std::cmp::Ordering;

use bytes::Bytes;
use kuradb::dbm::comparator::KeyComparator;
use kuradb::dbm::poly::PolyDbm;
use kuradb::dbm::txn::{CommitDurability, Transaction, Watch};
use kuradb::dbm::{Access, Action, Cursor, Dbm, Durability, EachProcessor, Edge, MultiProcessor, Processor};
use kuradb::{Error, ErrorKind, Result};
use parking_lot::Mutex;

use crate::commands::{self, lookup, Ctx, DB};
use crate::reply::Reply;
use crate::state::{Server, Session};

/// A watch of keys of one database.
pub type DbWatch = Watch<PolyDbm>;

/// How many times EXEC runs a block again whose commit conflicted with
/// another client's before it gives up with an error.
const RETRIES: u32 = 100;

/// Commands refused inside a block: they read or act outside the
/// transaction (SCAN's cursors, saves, a replication feed, subscriptions)
/// or hold it up (DEBUG SLEEP, SHUTDOWN). REPLICAOF is allowed, as in
/// Redis: Sentinel sends it in a block with CONFIG REWRITE and CLIENT
/// KILL, and runs nothing if the block aborts.
const NOT_IN_MULTI: &[&str] = &[
    "scan",
    "save",
    "bgsave",
    "debug",
    "shutdown",
    "kura.swap",
    "replsync",
    "subscribe",
    "psubscribe",
    "unsubscribe",
    "punsubscribe",
];

/// A session's MULTI block.
#[derive(Default)]
pub struct Multi {
    /// The commands queued, each its words.
    queued: Vec<Vec<Bytes>>,
    /// Whether a command failed to queue: EXEC then answers EXECABORT.
    failed: bool,
    /// The database the block's data commands are on, once one is queued.
    db: Option<usize>,
    /// The database selected at this point of the block (after its SELECTs).
    selected: usize,
}

/// MULTI.
pub fn multi(session: &mut Session) -> Reply {
    if session.multi.is_some() {
        return Reply::error("ERR MULTI calls can not be nested");
    }
    session.multi = Some(Multi { selected: session.db, ..Multi::default() });
    Reply::OK
}

/// DISCARD.
pub fn discard(session: &mut Session) -> Reply {
    if session.multi.take().is_none() {
        return Reply::error("ERR DISCARD without MULTI");
    }
    session.watches.clear();
    Reply::OK
}

/// WATCH key...
pub fn watch(server: &Server, session: &mut Session, keys: &[Bytes]) -> Reply {
    if session.multi.is_some() {
        return Reply::error("ERR WATCH inside MULTI is not allowed");
    }
    let keys: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let watch = server.databases[session.db].db.load().watch(&keys);
    session.watches.push((session.db, watch));
    Reply::OK
}

/// UNWATCH.
pub fn unwatch(session: &mut Session) -> Reply {
    session.watches.clear();
    Reply::OK
}

/// Inside a block, queues `args` (or refuses it) and answers the reply; `None`
/// for the commands that run at once even there (EXEC, DISCARD, MULTI,
/// WATCH, QUIT) and outside a block.
pub fn queue(server: &Server, session: &mut Session, args: &[Bytes]) -> Option<Reply> {
    session.multi.as_ref()?;
    let refused = match lookup(&args[0]) {
        None => Err(commands::unknown_command(args)),
        Some((_, command)) => {
            if ["exec", "discard", "multi", "watch", "quit"].contains(&command.name) {
                return None;
            }
            match crate::dispatch::refusal(server, session, command, args.len()) {
                Some(refusal) => Err(refusal),
                None if NOT_IN_MULTI.contains(&command.name) => {
                    Err(Reply::error("ERR Command not allowed inside a transaction"))
                }
                None => Ok(command),
            }
        }
    };
    let multi = session.multi.as_mut().expect("in a block");
    let command = match refused {
        Ok(command) => command,
        Err(reply) => {
            multi.failed = true;
            return Some(reply);
        }
    };
    if command.name == "select" {
        // A bad number fails when EXEC runs it, as in Redis, and selects nothing.
        if let Some(n) =
            commands::parse_int(&args[1]).filter(|&n| n >= 0 && (n as usize) < server.databases.len())
        {
            multi.selected = n as usize;
        }
    } else if command.flags & DB != 0 && command.name != "info" {
        match multi.db {
            None => multi.db = Some(multi.selected),
            Some(db) if db != multi.selected => {
                multi.failed = true;
                return Some(Reply::error(format!(
                    "ERR kura serve runs a MULTI block on one database: this command is on database {}, the \
                     block's earlier ones on database {db} (run the other database's commands in their own block)",
                    multi.selected
                )));
            }
            Some(_) => {}
        }
    }
    multi.queued.push(args.to_vec());
    Some(Reply::Status("QUEUED"))
}

/// EXEC: runs the block in one transaction; see the [module](self).
pub fn exec(ctx: &mut Ctx) -> Reply {
    let Some(multi) = ctx.session.multi.take() else {
        return Reply::error("ERR EXEC without MULTI");
    };
    // EXEC unwatches whatever it answers; the watches live until it is done.
    let watches = std::mem::take(&mut ctx.session.watches);
    if multi.failed {
        return Reply::error("EXECABORT Transaction discarded because of previous errors.");
    }
    let server = ctx.server;
    let index = multi.db.unwrap_or(ctx.session.db);
    // A watch of a version no longer served saw its keys change: the
    // version in place of it is another database.
    let replaced =
        |db: usize, w: &DbWatch| !std::sync::Arc::ptr_eq(w.database(), &server.databases[db].db.load());
    let mut elsewhere = watches.iter().filter(|(db, _)| *db != index);
    if elsewhere.any(|(db, w)| replaced(*db, w) || w.changed().unwrap_or(true)) {
        return Reply::NilArray;
    }
    let here: Vec<&DbWatch> = watches.iter().filter(|(db, _)| *db == index).map(|(_, w)| w).collect();
    let database = &server.databases[index];
    // The block reads one version of a published directory, taken once.
    let db = database.db.load();
    if here.iter().any(|w| !std::sync::Arc::ptr_eq(w.database(), &db)) {
        return Reply::NilArray;
    }
    let first_db = ctx.session.db;
    let mut attempt = 0;
    loop {
        ctx.session.db = first_db;
        let mut tx = db.begin(CommitDurability::Memory);
        let replies: Vec<Reply> = {
            let view = TxDbm { tx: Mutex::new(&mut tx), ordered: database.ordered, order: database.order };
            multi
                .queued
                .iter()
                .map(|args| {
                    let (_, command) = lookup(&args[0]).expect("checked when queued");
                    (command.run)(&mut Ctx { server, session: ctx.session, tx: Some(&view) }, args)
                })
                .collect()
        };
        match tx.commit_unless_changed(&here) {
            Ok(true) => return Reply::Array(replies),
            Ok(false) => {
                ctx.session.db = first_db;
                return Reply::NilArray;
            }
            Err(e) if e.kind() == ErrorKind::Conflict && attempt < RETRIES => attempt += 1,
            Err(e) => {
                ctx.session.db = first_db;
                return Reply::error(format!("ERR EXEC applied nothing: {e}"));
            }
        }
    }
}

/// A transaction seen as a database, for the queued commands: reads see
/// the transaction's snapshot and its own writes, writes are the
/// transaction's.
struct TxDbm<'t, 'db> {
    tx: Mutex<&'t mut Transaction<'db, PolyDbm>>,
    ordered: bool,
    order: KeyComparator,
}

fn read_only_change() -> Error {
    Error::new(ErrorKind::InvalidArgument, "a read-only call answered a change")
}

fn apply(tx: &mut Transaction<'_, PolyDbm>, key: &[u8], access: Access, action: Action<'_>) -> Result<()> {
    match action {
        Action::Keep => Ok(()),
        _ if !access.is_writable() => Err(read_only_change()),
        Action::Set(value) => {
            tx.set(key, &value);
            Ok(())
        }
        Action::Remove => tx.remove(key).map(|_| ()),
    }
}

impl Dbm for TxDbm<'_, '_> {
    fn process<'a>(&self, key: &[u8], access: Access, f: &mut Processor<'a>) -> Result<()> {
        let mut tx = self.tx.lock();
        let value = tx.get(key)?;
        let action = f(value.as_deref());
        apply(&mut tx, key, access, action)
    }
    fn process_multi<'a>(&self, keys: &[&[u8]], access: Access, f: &mut MultiProcessor<'a>) -> Result<()> {
        let mut tx = self.tx.lock();
        for (i, key) in keys.iter().enumerate() {
            let value = tx.get(key)?;
            let action = f(i, key, value.as_deref());
            apply(&mut tx, key, access, action)?;
        }
        Ok(())
    }
    fn process_each<'a>(&self, access: Access, f: &mut EachProcessor<'a>) -> Result<()> {
        let mut tx = self.tx.lock();
        for (key, value) in tx.items()? {
            let action = f(&key, &value);
            apply(&mut tx, &key, access, action)?;
        }
        Ok(())
    }
    fn count(&self) -> Result<u64> {
        Ok(self.tx.lock().items()?.len() as u64)
    }
    fn file_size(&self) -> Result<u64> {
        Ok(0)
    }
    fn path(&self) -> Option<&std::path::Path> {
        None
    }
    fn clear(&self) -> Result<()> {
        let mut tx = self.tx.lock();
        for (key, _) in tx.items()? {
            tx.remove(&key)?;
        }
        Ok(())
    }
    fn rebuild(&self) -> Result<()> {
        Ok(())
    }
    fn should_be_rebuilt(&self) -> Result<bool> {
        Ok(false)
    }
    fn synchronize(&self, _: Durability) -> Result<()> {
        Ok(())
    }
    fn copy_file_data(&self, _: &std::path::Path, _: Durability) -> Result<()> {
        Err(Error::new(ErrorKind::Infeasible, "a transaction has no file to copy"))
    }
    fn inspect(&self) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    fn is_healthy(&self) -> bool {
        true
    }
    fn is_ordered(&self) -> bool {
        self.ordered
    }
    fn iter(&self) -> Result<Box<dyn Cursor + '_>> {
        let items = self.tx.lock().items()?;
        Ok(Box::new(ItemsCursor { items, at: 0, order: self.order }))
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// A cursor over the records a transaction sees, in the database's order
/// (for an ordered database; any order otherwise). It only reads.
struct ItemsCursor {
    items: Vec<(Vec<u8>, Vec<u8>)>,
    /// The record it is on; `items.len()` when on none.
    at: usize,
    order: KeyComparator,
}

impl ItemsCursor {
    /// The first record whose key is above `key` (or at it, inclusive).
    fn upper(&self, key: &[u8], edge: Edge) -> usize {
        self.items.partition_point(|(k, _)| match self.order.compare(k, key) {
            Ordering::Less => true,
            Ordering::Equal => matches!(edge, Edge::Exclusive),
            Ordering::Greater => false,
        })
    }
}

impl Cursor for ItemsCursor {
    fn first(&mut self) -> Result<()> {
        self.at = 0;
        Ok(())
    }
    fn jump(&mut self, key: &[u8]) -> Result<()> {
        self.at = self.upper(key, Edge::Inclusive);
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.at = (self.at + 1).min(self.items.len());
        Ok(())
    }
    fn get(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.items.get(self.at).cloned())
    }
    fn set(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::new(ErrorKind::Infeasible, "a cursor inside EXEC only reads"))
    }
    fn remove(&mut self) -> Result<()> {
        Err(Error::new(ErrorKind::Infeasible, "a cursor inside EXEC only reads"))
    }
    fn last(&mut self) -> Result<()> {
        self.at = if self.items.is_empty() { 0 } else { self.items.len() - 1 };
        Ok(())
    }
    fn jump_lower(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        // The last record below `key` (or at it, inclusive).
        let flipped = if matches!(edge, Edge::Inclusive) { Edge::Exclusive } else { Edge::Inclusive };
        let end = self.upper(key, flipped);
        self.at = if end == 0 { self.items.len() } else { end - 1 };
        Ok(())
    }
    fn jump_upper(&mut self, key: &[u8], edge: Edge) -> Result<()> {
        self.at = self.upper(key, edge);
        Ok(())
    }
    fn previous(&mut self) -> Result<()> {
        self.at = if self.at == 0 || self.at >= self.items.len() { self.items.len() } else { self.at - 1 };
        Ok(())
    }
}
