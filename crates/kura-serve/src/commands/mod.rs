//! The command table: each command's name, arity, flags, key positions (for
//! COMMAND) and the function that runs it, with the helpers they share.
//! One file per family: `strings` (values), `expiry` (expiry times), `keys` (the keyspace), `range`
//! (the ordered range scan), `transactions` (MULTI/EXEC/WATCH, run by
//! `crate::multi`), `connection` (the session), `pubsub` (publish/subscribe)
//! and `server` (administration).

mod connection;
mod expiry;
mod keys;
mod not_served;
pub mod pubsub;
mod range;
pub mod server;
pub use server::REDIS_VERSION;
mod strings;
mod transactions;

use std::sync::Arc;

use bytes::Bytes;
use kuradb::dbm::expiry::{ExpiringDbm, ExpiringProcessor, Expiry, ExpiryState, SweepReport};
use kuradb::dbm::{Access, Dbm};

use super::databases::{Current, Db};
use super::reply::Reply;
use super::state::{Server, Session};

/// The command changes data: refused by `--read_only`.
pub const WRITE: u8 = 1;
/// The command calls the database: it runs off the reactor threads.
pub const DB: u8 = 2;
/// The command may run before AUTH.
pub const NO_AUTH: u8 = 4;
/// The command waits (WAIT) without touching a database: it runs off the
/// reactor threads, and other clients' short calls stay on them meanwhile.
pub const WAITS: u8 = 8;

/// What a command runs with.
pub struct Ctx<'a> {
    /// The shared state.
    pub server: &'a Server,
    /// The connection's state.
    pub session: &'a mut Session,
    /// Inside EXEC, the transaction the queued commands run in, as a
    /// database; `None` otherwise.
    pub tx: Option<&'a dyn Dbm>,
}

impl<'a> Ctx<'a> {
    /// A context outside any transaction.
    pub fn new(server: &'a Server, session: &'a mut Session) -> Ctx<'a> {
        Ctx { server, session, tx: None }
    }

    /// The selected database, or inside EXEC the transaction, as stored
    /// (values with their expiry tags, for a database with expiry). A
    /// command takes it once and keeps it to its end, so that it reads one
    /// version of a published directory.
    pub fn db(&self) -> DbRef<'a> {
        match self.tx {
            Some(tx) => DbRef::Tx(tx),
            None => DbRef::Served(self.server.databases[self.session.db].db.load()),
        }
    }
}

/// What [`Ctx::db`] answers: the transaction, or the database taken.
pub enum DbRef<'a> {
    /// Inside EXEC, the transaction.
    Tx(&'a dyn Dbm),
    /// The selected database as taken for this command.
    Served(Current<'a, Db>),
}

impl<'a> std::ops::Deref for DbRef<'a> {
    type Target = dyn Dbm + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            DbRef::Tx(tx) => *tx,
            DbRef::Served(db) => &***db,
        }
    }
}

impl<'a> Ctx<'a> {
    /// The expiry layer's state of the selected database, while it has expiry.
    pub fn expiry_state(&self) -> Option<&Arc<ExpiryState>> {
        self.server.databases[self.session.db].expiry.state()
    }

    /// What commands read and write: [`Ctx::db`] through the expiry layer
    /// when the database has expiry, as it is otherwise.
    pub fn data(&self) -> View<'a> {
        match self.layer() {
            Some(layer) => View::Layered(layer),
            None => View::Plain(self.db()),
        }
    }

    /// The expiry layer over [`Ctx::db`], or the error expiry commands
    /// answer on a database without expiry.
    pub fn expiring(&self) -> Result<Layer<'a>, Reply> {
        self.layer().ok_or_else(|| Reply::error(self.server.databases[self.session.db].expiry.off_error()))
    }

    fn layer(&self) -> Option<Layer<'a>> {
        let state = Arc::clone(self.expiry_state()?);
        Some(match self.tx {
            Some(tx) => Layer::Tx(ExpiringDbm::with_state(tx, state)),
            // A handle of its own, held to the command's end (one version).
            None => Layer::Served(ExpiringDbm::with_state(
                self.server.databases[self.session.db].db.load_full(),
                state,
            )),
        })
    }
}

/// The expiry layer over what [`Ctx::db`] answers.
pub enum Layer<'a> {
    /// Inside EXEC, over the transaction.
    Tx(ExpiringDbm<&'a dyn Dbm>),
    /// Over the selected database.
    Served(ExpiringDbm<Arc<Db>>),
}

impl<'a> std::ops::Deref for Layer<'a> {
    type Target = dyn Dbm + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            Layer::Tx(db) => db,
            Layer::Served(db) => db,
        }
    }
}

impl Expiry for Layer<'_> {
    fn now_ms(&self) -> u64 {
        match self {
            Layer::Tx(db) => db.now_ms(),
            Layer::Served(db) => db.now_ms(),
        }
    }

    fn process_expiring(
        &self,
        key: &[u8],
        access: Access,
        f: &mut ExpiringProcessor<'_>,
    ) -> kuradb::Result<()> {
        match self {
            Layer::Tx(db) => db.process_expiring(key, access, f),
            Layer::Served(db) => db.process_expiring(key, access, f),
        }
    }

    fn sweep(&self, max_records: usize) -> kuradb::Result<SweepReport> {
        match self {
            Layer::Tx(db) => Expiry::sweep(db, max_records),
            Layer::Served(db) => Expiry::sweep(db, max_records),
        }
    }
}

/// A database as commands see it: see [`Ctx::data`].
pub enum View<'a> {
    /// A database without expiry.
    Plain(DbRef<'a>),
    /// A database with expiry, under the layer.
    Layered(Layer<'a>),
}

impl<'a> std::ops::Deref for View<'a> {
    type Target = dyn Dbm + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            View::Plain(db) => &**db,
            View::Layered(db) => &**db,
        }
    }
}

/// One command of the table.
pub struct Command {
    /// Its name in lower case.
    pub name: &'static str,
    /// Redis's convention: N exactly N words (the name included), -N at least N.
    pub arity: i32,
    /// [`WRITE`], [`DB`], [`NO_AUTH`], [`WAITS`].
    pub flags: u8,
    /// The first key's, last key's (-1: the last word) positions and the step, for COMMAND.
    pub keys: (i32, i32, i32),
    /// Runs it on the words of the request (the name first).
    pub run: fn(&mut Ctx, &[Bytes]) -> Reply,
}

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u8,
    keys: (i32, i32, i32),
    run: fn(&mut Ctx, &[Bytes]) -> Reply,
) -> Command {
    Command { name, arity, flags, keys, run }
}

const NONE: (i32, i32, i32) = (0, 0, 0);
const ONE: (i32, i32, i32) = (1, 1, 1);
const ALL: (i32, i32, i32) = (1, -1, 1);

/// Every command served, the most frequent first (lookups scan in order).
pub static COMMANDS: &[Command] = &[
    cmd("get", 2, DB, ONE, strings::get),
    cmd("set", -3, WRITE | DB, ONE, strings::set),
    cmd("mget", -2, DB, ALL, strings::mget),
    cmd("mset", -3, WRITE | DB, (1, -1, 2), strings::mset),
    cmd("del", -2, WRITE | DB, ALL, keys::del),
    cmd("unlink", -2, WRITE | DB, ALL, keys::del),
    cmd("exists", -2, DB, ALL, keys::exists),
    cmd("incr", 2, WRITE | DB, ONE, strings::incr),
    cmd("incrby", 3, WRITE | DB, ONE, strings::incrby),
    cmd("decr", 2, WRITE | DB, ONE, strings::decr),
    cmd("decrby", 3, WRITE | DB, ONE, strings::decrby),
    cmd("getset", 3, WRITE | DB, ONE, strings::getset),
    cmd("setnx", 3, WRITE | DB, ONE, strings::setnx),
    cmd("append", 3, WRITE | DB, ONE, strings::append),
    cmd("strlen", 2, DB, ONE, strings::strlen),
    cmd("ttl", 2, DB, ONE, expiry::ttl),
    cmd("pttl", 2, DB, ONE, expiry::pttl),
    cmd("expire", -3, WRITE | DB, ONE, expiry::expire),
    cmd("pexpire", -3, WRITE | DB, ONE, expiry::pexpire),
    cmd("expireat", -3, WRITE | DB, ONE, expiry::expireat),
    cmd("pexpireat", -3, WRITE | DB, ONE, expiry::pexpireat),
    cmd("setex", 4, WRITE | DB, ONE, expiry::setex),
    cmd("psetex", 4, WRITE | DB, ONE, expiry::psetex),
    cmd("getex", -2, WRITE | DB, ONE, expiry::getex),
    cmd("persist", 2, WRITE | DB, ONE, expiry::persist),
    cmd("expiretime", 2, DB, ONE, expiry::expiretime),
    cmd("pexpiretime", 2, DB, ONE, expiry::pexpiretime),
    cmd("type", 2, DB, ONE, keys::type_of),
    cmd("scan", -2, DB, NONE, keys::scan),
    cmd("keys", 2, DB, NONE, keys::keys),
    cmd("range", -3, DB, NONE, range::range),
    cmd("dbsize", 1, DB, NONE, keys::dbsize),
    cmd("flushdb", -1, WRITE | DB, NONE, keys::flushdb),
    cmd("multi", 1, 0, NONE, transactions::multi),
    cmd("exec", 1, DB, NONE, transactions::exec),
    cmd("discard", 1, 0, NONE, transactions::discard),
    cmd("watch", -2, DB, ALL, transactions::watch),
    cmd("unwatch", 1, 0, NONE, transactions::unwatch),
    cmd("ping", -1, 0, NONE, connection::ping),
    cmd("echo", 2, 0, NONE, connection::echo),
    cmd("select", 2, 0, NONE, connection::select),
    cmd("auth", -2, NO_AUTH, NONE, connection::auth),
    cmd("hello", -1, NO_AUTH, NONE, connection::hello),
    cmd("quit", -1, NO_AUTH, NONE, connection::quit),
    cmd("client", -2, 0, NONE, connection::client),
    cmd("info", -1, DB, NONE, server::info),
    cmd("command", -1, 0, NONE, server::command),
    cmd("config", -2, 0, NONE, server::config),
    cmd("save", 1, DB, NONE, server::save),
    cmd("bgsave", -1, 0, NONE, server::bgsave),
    cmd("lastsave", 1, 0, NONE, server::lastsave),
    cmd("debug", -2, DB, NONE, server::debug),
    cmd("shutdown", -1, DB, NONE, server::shutdown),
    cmd("kura.swap", 1, DB, NONE, server::kura_swap),
    cmd("replicaof", 3, DB, NONE, crate::replication::commands::replicaof),
    cmd("slaveof", 3, DB, NONE, crate::replication::commands::replicaof),
    cmd("replsync", -3, DB, NONE, crate::replication::commands::replsync),
    cmd("replconf", -2, 0, NONE, crate::replication::commands::replconf),
    cmd("role", 1, 0, NONE, crate::replication::commands::role),
    cmd("wait", 3, WAITS, NONE, crate::replication::commands::wait),
    cmd("subscribe", -2, 0, NONE, pubsub::subscribe),
    cmd("psubscribe", -2, 0, NONE, pubsub::psubscribe),
    cmd("unsubscribe", -1, 0, NONE, pubsub::unsubscribe),
    cmd("punsubscribe", -1, 0, NONE, pubsub::punsubscribe),
    cmd("publish", 3, 0, NONE, pubsub::publish),
    cmd("pubsub", -2, 0, NONE, pubsub::pubsub),
    cmd("reset", 1, NO_AUTH, NONE, connection::reset),
];

/// The command `name` names (in any case) and its index in [`COMMANDS`].
pub fn lookup(name: &[u8]) -> Option<(usize, &'static Command)> {
    COMMANDS.iter().enumerate().find(|(_, c)| c.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Whether `args` (the name included) fit `command`'s arity.
pub fn arity_fits(command: &Command, args: usize) -> bool {
    let arity = command.arity;
    if arity >= 0 {
        args == arity as usize
    } else {
        args >= arity.unsigned_abs() as usize
    }
}

/// Redis's text for a wrong number of arguments.
pub fn wrong_arity(name: &str) -> Reply {
    Reply::error(format!("ERR wrong number of arguments for '{name}' command"))
}

/// The reply to a command not in [`COMMANDS`]: for one kura serve
/// deliberately does not serve, an error that says so and where to read
/// why; else Redis's text for an unknown command, its name and its first
/// arguments.
pub fn unknown_command(args: &[Bytes]) -> Reply {
    if let Some(refusal) = not_served::refusal(&args[0]) {
        return Reply::error(refusal);
    }
    let mut shown = String::new();
    for arg in &args[1..] {
        if shown.len() >= 128 {
            break;
        }
        let text = String::from_utf8_lossy(arg);
        let room = 128 - shown.len();
        let cut: String = text.chars().take(room).collect();
        shown.push_str(&format!("'{cut}' "));
    }
    let name: String = String::from_utf8_lossy(&args[0]).chars().take(128).collect();
    Reply::error(format!("ERR unknown command '{name}', with args beginning with: {shown}"))
}

/// Redis's text for an unknown subcommand of `command`.
pub fn unknown_subcommand(command: &str, sub: &[u8]) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        command.to_ascii_uppercase()
    ))
}

/// `ERR syntax error`.
pub fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

/// `ERR value is not an integer or out of range`.
pub fn not_an_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

/// A database error as a reply.
pub fn db_error(e: kuradb::Error) -> Reply {
    Reply::error(format!("ERR {e}"))
}

/// An integer written as Redis writes one: decimal, no sign but `-`, no
/// leading zeros, within i64.
pub fn parse_int(text: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(text).ok()?;
    let n: i64 = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

/// An integer argument, or the reply Redis gives for a bad one.
pub fn int_arg(text: &[u8]) -> Result<i64, Reply> {
    parse_int(text).ok_or_else(not_an_integer)
}

/// Whether `arg` is `word`, in any case.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_must_be_canonical() {
        assert_eq!(parse_int(b"-12"), Some(-12));
        assert_eq!(parse_int(b"0"), Some(0));
        for bad in [&b"+1"[..], b"01", b" 1", b"1.0", b"", b"9223372036854775808", b"-0"] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn error_texts_are_redis_own() {
        let args: Vec<Bytes> = ["FOO", "a", "b"].into_iter().map(Bytes::from).collect();
        assert_eq!(
            unknown_command(&args),
            Reply::error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
        );
        assert_eq!(wrong_arity("get"), Reply::error("ERR wrong number of arguments for 'get' command"));
        assert!(lookup(b"GeT").is_some() && lookup(b"nope").is_none());
    }
}
