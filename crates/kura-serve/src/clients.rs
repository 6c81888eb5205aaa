//! The connected clients, for CLIENT LIST, CLIENT INFO and CLIENT KILL:
//! each connection registers what those show of it (its addresses, name,
//! database, last command, age and idle time), and a CLIENT KILL from
//! another connection reaches it through its entry.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::commands::COMMANDS;

/// What the server knows of one connection.
pub struct Client {
    /// CLIENT ID.
    pub id: u64,
    /// The peer's address (`ip:port`, or the socket path).
    pub addr: String,
    /// The address of the server's side.
    pub laddr: String,
    /// The connection's file descriptor, -1 if unknown.
    pub fd: i32,
    created: Instant,
    /// Milliseconds from `created` to the end of its last command.
    last: AtomicU64,
    /// The selected database.
    pub db: AtomicUsize,
    /// One more than the index of its last command in the table; 0 before any.
    cmd: AtomicUsize,
    /// Whether it is in a MULTI block.
    pub multi: AtomicBool,
    /// Whether the connection is a replication feed.
    pub replica: AtomicBool,
    /// The protocol version.
    pub resp: AtomicUsize,
    name: Mutex<Option<Bytes>>,
    killed: AtomicBool,
    kill: Notify,
}

impl Client {
    /// Notes the end of a command: its index in the table.
    pub fn ran(&self, index: usize) {
        self.cmd.store(index + 1, Relaxed);
    }

    /// Notes that the client was just served.
    pub fn touch(&self) {
        self.last.store(self.created.elapsed().as_millis() as u64, Relaxed);
    }

    /// Sets the name CLIENT GETNAME answers.
    pub fn set_name(&self, name: Option<Bytes>) {
        *self.name.lock() = name;
    }

    /// Closes the connection once its current batch is answered.
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        self.kill.notify_one();
    }

    /// Seconds since it connected.
    pub fn age_secs(&self) -> u64 {
        self.created.elapsed().as_secs()
    }

    /// Whether CLIENT KILL named it.
    pub fn killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// Ready once CLIENT KILL names it (a kill made before the wait counts).
    pub async fn kill_requested(&self) {
        self.kill.notified().await;
    }

    /// Its kind for CLIENT KILL TYPE: `replica`, `pubsub` or `normal`.
    pub fn kind(&self, subscriptions: usize) -> &'static str {
        if self.replica.load(Relaxed) {
            "replica"
        } else if subscriptions > 0 {
            "pubsub"
        } else {
            "normal"
        }
    }

    /// Its line of CLIENT LIST, in Redis's format (the fields of memory and
    /// buffers Redis shows are left out, as kura serve does not count them
    /// per client).
    pub fn line(&self, channels: usize, patterns: usize) -> String {
        let now = self.created.elapsed();
        let idle = now.as_millis() as u64 - self.last.load(Relaxed).min(now.as_millis() as u64);
        let mut flags = String::new();
        if self.replica.load(Relaxed) {
            flags.push('S');
        }
        if channels + patterns > 0 {
            flags.push('P');
        }
        if self.multi.load(Relaxed) {
            flags.push('x');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let name = self.name.lock().as_deref().map(String::from_utf8_lossy).unwrap_or_default().into_owned();
        let cmd = match self.cmd.load(Relaxed) {
            0 => "NULL",
            n => COMMANDS.get(n - 1).map_or("NULL", |c| c.name),
        };
        let mut line = String::new();
        let _ = write!(
            line,
            "id={} addr={} laddr={} fd={} name={name} age={} idle={} flags={flags} db={} sub={channels} \
             psub={patterns} ssub=0 multi={} cmd={cmd} user=default redir=-1 resp={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            now.as_secs(),
            idle / 1000,
            self.db.load(Relaxed),
            if self.multi.load(Relaxed) { 0 } else { -1 },
            self.resp.load(Relaxed),
        );
        line
    }
}

/// Every connected client, by id.
#[derive(Default)]
pub struct Clients(Mutex<BTreeMap<u64, Arc<Client>>>);

impl Clients {
    /// Registers a new connection.
    pub fn add(&self, id: u64, addr: String, laddr: String, fd: i32) -> Arc<Client> {
        let client = Arc::new(Client {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            last: AtomicU64::new(0),
            db: AtomicUsize::new(0),
            cmd: AtomicUsize::new(0),
            multi: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            resp: AtomicUsize::new(2),
            name: Mutex::new(None),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        });
        self.0.lock().insert(id, Arc::clone(&client));
        client
    }

    /// Forgets a connection that ended.
    pub fn remove(&self, id: u64) {
        self.0.lock().remove(&id);
    }

    /// Every client, by id.
    pub fn all(&self) -> Vec<Arc<Client>> {
        self.0.lock().values().cloned().collect()
    }
}
