//! What every connection shares (the server) and what each has of its own
//! (the session).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::futures::Notified;
use tokio::sync::{watch, Notify};

use super::clients::{Client, Clients};
use super::databases::Database;
use super::execution::Gate;
use super::pubsub::PubSub;
use super::replication::{FeedPlan, Replication};
use super::scan::ScanCursors;
use super::stats::Stats;

/// The settings commands consult.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The password AUTH must give, if any.
    pub requirepass: Option<String>,
    /// Whether writes are refused.
    pub read_only: bool,
    /// The most connections at once.
    pub max_clients: usize,
    /// The most bytes one request may take.
    pub max_request_size: u64,
    /// The address served, as given.
    pub address: String,
    /// Whether connections use TLS.
    pub tls: bool,
    /// The TCP port listened on (the one the system chose for port 0);
    /// 0 on a Unix socket. Set once bound.
    pub port: u16,
    /// The address bound, as clients name it (CLIENT LIST's `laddr`). Set once bound.
    pub local_address: String,
    /// Where CONFIG REWRITE writes (`--config_file`), if anywhere.
    pub config_file: Option<std::path::PathBuf>,
    /// The replica priority at start.
    pub replica_priority: i64,
    /// How often a published directory's `CURRENT` is read for a new
    /// version, in milliseconds; 0: only on SIGHUP or `KURA.SWAP`.
    pub published_poll_ms: u64,
    /// The expiry sweeper's bound: records looked at per second per database.
    pub expiry_sweep_rate: usize,
}

/// The state every connection shares.
pub struct Server {
    /// The databases, numbered as SELECT numbers them.
    pub databases: Vec<Database>,
    /// The settings.
    pub settings: Settings,
    /// The counters INFO shows.
    pub stats: Stats,
    /// The positions of SCANs in progress.
    pub cursors: ScanCursors,
    /// Connections open now.
    pub connected: AtomicUsize,
    /// The id the next connection gets.
    next_client_id: AtomicU64,
    /// When the server started.
    pub started: Instant,
    /// Set to true to shut down.
    shutdown: watch::Sender<bool>,
    /// True once shutdown has begun: what a connection checks between
    /// requests (a plain load, where the watch above takes a lock).
    stopping: AtomicBool,
    /// Wakes the connections waiting for input when shutdown begins.
    stop: Notify,
    /// SAVE's and BGSAVE's state.
    pub saves: Arc<Saves>,
    /// Master or replica: the logs fed, the link followed.
    pub replication: Replication,
    /// Keeps short calls in place from waiting behind long ones.
    pub gate: Gate,
    /// Who listens to which channel.
    pub pubsub: PubSub,
    /// The connected clients.
    pub clients: Clients,
    /// 40 hexadecimal digits drawn at start: INFO's `run_id`, by which
    /// Sentinel tells a restarted server from one that ran on.
    pub run_id: String,
    /// INFO's `slave_priority` (`CONFIG SET replica-priority`): Sentinel
    /// promotes the replica of the lowest, never one of 0.
    pub replica_priority: AtomicI64,
    /// Wakes the watcher of the published directories served.
    pub published: crate::published::Watcher,
}

/// What SAVE and BGSAVE did last, and the background save running.
pub struct Saves {
    /// The background save running or last run.
    pub background: Mutex<Option<JoinHandle<()>>>,
    /// Whether the last save succeeded.
    pub ok: AtomicBool,
    /// When the last successful save finished, in seconds since the epoch.
    pub last: AtomicU64,
}

impl Saves {
    /// Notes a finished save.
    pub fn done(&self, ok: bool) {
        self.ok.store(ok, Relaxed);
        if ok {
            self.last.store(unix_time(), Relaxed);
        }
    }

    /// Waits for the background save, if one runs.
    pub fn wait(&self) {
        let handle = self.background.lock().take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Server {
    /// A server of `databases` with `settings`.
    pub fn new(databases: Vec<Database>, settings: Settings) -> Server {
        let replica_priority = AtomicI64::new(settings.replica_priority);
        Server {
            databases,
            settings,
            stats: Stats::new(),
            cursors: ScanCursors::new(),
            connected: AtomicUsize::new(0),
            next_client_id: AtomicU64::new(1),
            started: Instant::now(),
            shutdown: watch::channel(false).0,
            stopping: AtomicBool::new(false),
            stop: Notify::new(),
            saves: Arc::new(Saves {
                background: Mutex::new(None),
                ok: AtomicBool::new(true),
                last: AtomicU64::new(unix_time()),
            }),
            replication: Replication::default(),
            gate: Gate::default(),
            pubsub: PubSub::default(),
            clients: Clients::default(),
            run_id: (0..20).map(|_| format!("{:02x}", rand::random::<u8>())).collect(),
            replica_priority,
            published: crate::published::Watcher::default(),
        }
    }

    /// The server with `replication` as its replication state.
    pub fn with_replication(self, replication: Replication) -> Server {
        Server { replication, ..self }
    }

    /// A new client id.
    pub fn client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Relaxed)
    }

    /// Asks every connection and the listener to stop.
    pub fn begin_shutdown(&self) {
        // The flag first: a connection woken below, or checking on its own,
        // must find it set.
        self.stopping.store(true, SeqCst);
        self.shutdown.send_replace(true);
        self.stop.notify_waiters();
    }

    /// Whether shutdown has begun.
    pub fn stopping(&self) -> bool {
        self.stopping.load(SeqCst)
    }

    /// The future a connection waits on besides its input, with
    /// [`Server::poll_stop`]: made once per connection.
    pub fn stop_notified(&self) -> Notified<'_> {
        self.stop.notified()
    }

    /// Ready once shutdown has begun. `notified` (from
    /// [`Server::stop_notified`]) is polled only the first time, which
    /// registers the task's waker; after that the flag is checked alone.
    /// Polling the notification again on every wait for input took a lock
    /// shared by all connections once per request.
    pub fn poll_stop(
        &self,
        cx: &mut Context<'_>,
        notified: Pin<&mut Notified<'_>>,
        armed: &mut bool,
    ) -> Poll<()> {
        if self.stopping() {
            return Poll::Ready(());
        }
        if !*armed {
            *armed = true;
            // A notification made before `notify_waiters` is woken by it
            // even if not yet polled, so no shutdown is missed.
            return notified.poll(cx);
        }
        Poll::Pending
    }

    /// A receiver that sees `true` once shutdown has begun.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}

/// Seconds since the epoch.
pub fn unix_time() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What happens to a connection after the replies being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// It goes on.
    Continue,
    /// It closes (QUIT).
    Close,
    /// It closes without a reply, and the server shuts down (SHUTDOWN).
    Shutdown,
}

/// One connection's state.
pub struct Session {
    /// The client id (CLIENT ID).
    pub id: u64,
    /// What CLIENT LIST and CLIENT KILL see of it.
    pub client: Arc<Client>,
    /// The peer's address, for logs.
    pub peer: String,
    /// The selected database.
    pub db: usize,
    /// Whether AUTH succeeded (or no password is required).
    pub authenticated: bool,
    /// The port a replica said it serves clients on (REPLCONF listening-port).
    pub listening_port: Option<u16>,
    /// For each database this connection wrote to (and that keeps a log),
    /// the log's newest time after its last write: what WAIT waits for.
    pub written: Vec<(usize, u64)>,
    /// The protocol version: 2, or 3 after `HELLO 3`.
    pub protocol: u8,
    /// The name CLIENT SETNAME gave.
    pub name: Option<Bytes>,
    /// What to do once the replies are written.
    pub after: After,
    /// Set by REPLSYNC: the connection becomes a replication feed.
    pub feed: Option<FeedPlan>,
    /// The commands queued since MULTI, until EXEC or DISCARD.
    pub multi: Option<crate::multi::Multi>,
    /// The keys WATCHed, by database number, until EXEC, DISCARD or UNWATCH.
    pub watches: Vec<(usize, crate::multi::DbWatch)>,
    /// Where PUBLISH puts messages for this client, once it subscribed.
    pub mailbox: Option<crate::pubsub::Mailbox>,
    /// The other end of `mailbox`, until the connection takes it.
    pub inbox: Option<crate::pubsub::Inbox>,
    /// The channels and patterns subscribed to: a RESP2 connection with
    /// any takes only the subscription commands.
    pub subscribed: usize,
}

impl Session {
    /// The state of a new connection from `peer` on file descriptor `fd`,
    /// registered among the server's clients (until `Server::clients`
    /// forgets it).
    pub fn new(server: &Server, peer: String, fd: i32) -> Session {
        let id = server.client_id();
        let client = server.clients.add(id, peer.clone(), server.settings.local_address.clone(), fd);
        Session {
            id,
            client,
            peer,
            db: 0,
            authenticated: server.settings.requirepass.is_none(),
            listening_port: None,
            written: Vec::new(),
            protocol: 2,
            name: None,
            after: After::Continue,
            feed: None,
            multi: None,
            watches: Vec::new(),
            mailbox: None,
            inbox: None,
            subscribed: 0,
        }
    }
}
