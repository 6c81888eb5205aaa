//! A Redis-protocol server of kuradb databases (RESP2, and RESP3 after
//! `HELLO 3`), so Redis clients, `redis-cli`, `redis-benchmark` and proxies
//! such as twemproxy (nutcracker) work with kuradb unchanged.
//!
//! Two ways in: [`run`] with [`ServeArgs`] is `kura serve` (the `kura` binary
//! calls it), and [`Server`] runs one inside another program:
//!
//! ```no_run
//! let server = kura_serve::Server::builder(["#dbm=baby"]).address("127.0.0.1:0").start()?;
//! println!("serving on {}", server.address());
//! server.stop()?;
//! # Ok::<(), kuradb::Error>(())
//! ```
//!
//! One file per concept: `clients` (CLIENT LIST and KILL's registry),
//! `config_file` (`--config_file`, which CONFIG REWRITE writes), `databases` (opening `PATH#params` specs),
//! `listener` and `tls` (where and how clients connect), `server` (the
//! accept loop and shutdown), `reactors` (the threads connections run on),
//! `connection` (one client's loop), `request` (frames to arguments, with
//! the size guard), `dispatch` (checks, batches, counting), `commands`
//! (the table and the commands by family), `scan` (SCAN's cursors),
//! `pattern` (key globs), `pubsub` (channels and their subscribers), `reply` (RESP encoding), `state` (server and
//! session), `stats` and `info` (INFO), `logging`, `replication`
//! (REPLICAOF, the update-log feeds and the replica's links), `published`
//! (a published directory's new versions swapped in live).
//! docs/serve.md is the user's guide.

#![forbid(unsafe_code)]

mod clients;
mod commands;
mod config_file;
mod connection;
mod databases;
mod dispatch;
mod execution;
mod expiry;
mod info;
mod listener;
mod logging;
mod multi;
mod pattern;
mod published;
mod pubsub;
mod reactors;
mod replication;
mod reply;
mod request;
mod scan;
mod server;
mod state;
mod stats;
mod tls;

use std::path::PathBuf;
use std::thread::JoinHandle;

use clap::Args;
use kuradb::{Error, ErrorKind, Result};
use tokio::sync::oneshot;

/// Arguments of `kura serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The databases, as PATH#name=value,... (PolyDbm parameters; `#dbm=baby`
    /// alone is an on-memory database). The first is SELECT 0, the next 1, ….
    #[arg(value_name = "DATABASE", required = true)]
    databases: Vec<String>,

    /// Where to listen: HOST:PORT, or unix:PATH for a Unix socket.
    #[arg(long = "address", default_value = "127.0.0.1:6380")]
    address: String,

    /// Threads of the network reactor (database calls run on a separate pool);
    /// by default one per CPU but one, and at least one.
    #[arg(long = "threads")]
    threads: Option<usize>,

    /// The password clients must give with AUTH (or HELLO … AUTH) first.
    #[arg(long = "requirepass", value_name = "PASSWORD")]
    requirepass: Option<String>,

    /// A PEM certificate chain: connections use TLS (needs --tls_key).
    #[arg(long = "tls_cert", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls_cert.
    #[arg(long = "tls_key", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// A PEM CA certificate: clients must show a certificate it signed.
    #[arg(long = "tls_ca", value_name = "FILE", requires = "tls_cert")]
    tls_ca: Option<PathBuf>,

    /// Opens the databases read-only; writes answer READONLY.
    #[arg(long = "read_only")]
    read_only: bool,

    /// The most connections at once; more are answered an error and closed.
    #[arg(long = "max_clients", default_value_t = 10000)]
    max_clients: usize,

    /// The most bytes one request (and one value in it) may take; a client
    /// announcing more is disconnected before it is read.
    #[arg(long = "max_request_size", default_value_t = 512 << 20)]
    max_request_size: u64,

    /// Writes the process id here once listening (removed at exit).
    #[arg(long = "pid_file", value_name = "FILE")]
    pid_file: Option<PathBuf>,

    /// Writes the log here instead of stderr.
    #[arg(long = "log_file", value_name = "FILE")]
    log_file: Option<PathBuf>,

    /// The least level logged: off, error, warn, info, debug or trace.
    #[arg(long = "log_level", default_value = "info")]
    log_level: String,

    /// Logs every change of database N into update-log files DIR/dbN.*, from
    /// which replicas follow this server.
    #[arg(long = "ulog", value_name = "DIR")]
    ulog: Option<PathBuf>,

    /// The size at which an update-log file is closed and the next begun.
    #[arg(long = "ulog_max_file_size", value_name = "BYTES", default_value_t = kuradb::ulog::DEFAULT_MAX_FILE_SIZE, requires = "ulog")]
    ulog_max_file_size: u64,

    /// Starts as a read-only replica of the server at HOST:PORT (see REPLICAOF).
    #[arg(long = "replicaof", value_name = "HOST:PORT")]
    replicaof: Option<String>,

    /// The password a replica gives its master (the master's --requirepass),
    /// with --replicaof or REPLICAOF.
    #[arg(long = "masterauth", value_name = "PASSWORD")]
    masterauth: Option<String>,

    /// A replica connects to its master over TLS (needs --replica_tls_ca).
    #[arg(long = "replica_tls", requires = "replica_tls_ca")]
    replica_tls: bool,

    /// The PEM CA certificate that signed the master's certificate.
    #[arg(long = "replica_tls_ca", value_name = "FILE", requires = "replica_tls")]
    replica_tls_ca: Option<PathBuf>,

    /// A PEM certificate chain the replica shows its master (for a master
    /// started with --tls_ca); needs --replica_tls_key.
    #[arg(long = "replica_tls_cert", value_name = "FILE", requires_all = ["replica_tls", "replica_tls_key"])]
    replica_tls_cert: Option<PathBuf>,

    /// The PEM private key of --replica_tls_cert.
    #[arg(long = "replica_tls_key", value_name = "FILE", requires = "replica_tls_cert")]
    replica_tls_key: Option<PathBuf>,

    /// The name the master's certificate must carry, when it is not the host
    /// the replica connects to (say, an IP address and a certificate that
    /// names only a DNS name).
    #[arg(long = "replica_tls_name", value_name = "NAME", requires = "replica_tls")]
    replica_tls_name: Option<String>,

    /// The expiry sweeper's bound: the most records it looks at per second
    /// in each database with expiry (a master's; see docs/serve.md, "Expiry").
    #[arg(long = "expiry_sweep_rate", value_name = "RECORDS", default_value_t = expiry::DEFAULT_SWEEP_RATE)]
    expiry_sweep_rate: usize,

    /// A file of the settings CONFIG REWRITE keeps (replicaof HOST PORT,
    /// replica-priority N), read at start (--replicaof, if given, wins) and
    /// written by CONFIG REWRITE; created by the first one.
    #[arg(long = "config_file", value_name = "FILE")]
    config_file: Option<PathBuf>,

    /// How often a published directory's CURRENT is read for a new version
    /// to serve, in milliseconds; 0 reads it only on SIGHUP or KURA.SWAP.
    #[arg(long = "published_poll_ms", value_name = "MS", default_value_t = 1000)]
    published_poll_ms: u64,
}

/// Runs `kura serve`: logs to stderr or `--log_file`, serves until SIGTERM,
/// SIGINT or SHUTDOWN, and closes the databases before returning.
pub fn run(args: &ServeArgs) -> Result<()> {
    logging::start(&args.log_level, args.log_file.as_deref())?;
    check_limits(args.max_request_size, args.max_clients, args.threads)?;
    if args.expiry_sweep_rate == 0 {
        return Err(Error::new(ErrorKind::InvalidArgument, "--expiry_sweep_rate must be at least 1"));
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::acceptor(cert, key, args.tls_ca.as_deref())?),
        _ => None,
    };
    let from_file = args.config_file.as_deref().map(config_file::load).transpose()?.unwrap_or_default();
    let replicaof = match args.replicaof.as_deref() {
        Some(text) => Some(replication::Target::parse(text)?),
        None => from_file.replicaof,
    };
    if args.read_only && (replicaof.is_some() || args.ulog.is_some()) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "--read_only opens the databases read-only: a replica must write them, and --ulog logs writes",
        ));
    }
    let replica_link = replication::LinkSecurity {
        masterauth: args.masterauth.clone(),
        tls: match &args.replica_tls_ca {
            Some(ca) if args.replica_tls => {
                let identity = args.replica_tls_cert.as_deref().zip(args.replica_tls_key.as_deref());
                let connector = tls::connector(ca, identity)?;
                Some(replication::LinkTls::new(connector, args.replica_tls_name.as_deref())?)
            }
            _ => None,
        },
    };
    let threads = args
        .threads
        .unwrap_or_else(|| default_reactors(std::thread::available_parallelism().map_or(2, |n| n.get())));
    let settings = state::Settings {
        requirepass: args.requirepass.clone(),
        read_only: args.read_only,
        max_clients: args.max_clients,
        max_request_size: args.max_request_size,
        address: args.address.clone(),
        tls: tls.is_some(),
        port: 0,
        local_address: String::new(),
        config_file: args.config_file.clone(),
        replica_priority: from_file.replica_priority.unwrap_or(100),
        published_poll_ms: args.published_poll_ms,
        expiry_sweep_rate: args.expiry_sweep_rate,
    };
    server::run(server::Plan {
        specs: args.databases.clone(),
        settings,
        tls,
        threads,
        pid_file: args.pid_file.clone(),
        ulog: args.ulog.clone().map(|dir| (dir, args.ulog_max_file_size)),
        replicaof,
        replica_link,
        host: server::Host::Process,
    })
}

fn check_limits(max_request_size: u64, max_clients: usize, threads: Option<usize>) -> Result<()> {
    if max_request_size < 1024 {
        return Err(Error::new(ErrorKind::InvalidArgument, "--max_request_size must be at least 1024 bytes"));
    }
    if max_clients == 0 || threads == Some(0) {
        return Err(Error::new(ErrorKind::InvalidArgument, "--max_clients and --threads must be at least 1"));
    }
    Ok(())
}

/// A server running inside the calling program, on threads of its own.
///
/// It leaves the program's signals and stdout alone and logs through the
/// `log` facade to whatever logger the program set up. [`Server::stop`] (or
/// dropping it) lets the connections finish, then synchronizes and closes
/// the databases.
pub struct Server {
    address: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Server {
    /// A server of `databases`, given as `kura serve` takes them
    /// (`PATH#name=value,...`; `#dbm=baby` is an on-memory database), the
    /// first SELECT 0. It listens on 127.0.0.1:6380 unless told otherwise.
    pub fn builder<I, S>(databases: I) -> ServerBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServerBuilder {
            specs: databases.into_iter().map(Into::into).collect(),
            settings: state::Settings {
                requirepass: None,
                read_only: false,
                max_clients: 10000,
                max_request_size: 512 << 20,
                address: "127.0.0.1:6380".to_string(),
                tls: false,
                port: 0,
                local_address: String::new(),
                config_file: None,
                replica_priority: 100,
                published_poll_ms: 1000,
                expiry_sweep_rate: expiry::DEFAULT_SWEEP_RATE,
            },
            threads: 1,
        }
    }

    /// Where it listens: `HOST:PORT` with the port it got, or `unix:PATH`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Stops the server and waits until its databases are closed; the
    /// error of serving or of closing them, if any.
    pub fn stop(mut self) -> Result<()> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<()> {
        drop(self.stop.take());
        match self.thread.take().map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(served)) => served,
            Some(Err(_)) => Err(Error::new(ErrorKind::System, "the server's thread panicked")),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Err(e) = self.shut_down() {
            log::error!("stopping the embedded server: {e}");
        }
    }
}

/// Settings of a [`Server`] before it starts.
#[derive(Debug)]
pub struct ServerBuilder {
    specs: Vec<String>,
    settings: state::Settings,
    threads: usize,
}

impl ServerBuilder {
    /// Where to listen: `HOST:PORT` (port 0 picks a free one) or `unix:PATH`.
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.settings.address = address.into();
        self
    }

    /// Threads of the network reactor (database calls run on a separate
    /// pool); one unless told.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// The password clients must give with AUTH first.
    pub fn requirepass(mut self, password: impl Into<String>) -> Self {
        self.settings.requirepass = Some(password.into());
        self
    }

    /// Opens the databases read-only; writes answer READONLY.
    pub fn read_only(mut self) -> Self {
        self.settings.read_only = true;
        self
    }

    /// The most connections at once.
    pub fn max_clients(mut self, max_clients: usize) -> Self {
        self.settings.max_clients = max_clients;
        self
    }

    /// How often a published directory's `CURRENT` is read for a new
    /// version to serve, in milliseconds (1000 unless told); 0: only on
    /// `KURA.SWAP`.
    pub fn published_poll_ms(mut self, ms: u64) -> Self {
        self.settings.published_poll_ms = ms;
        self
    }

    /// The most bytes one request may take (at least 1024).
    pub fn max_request_size(mut self, bytes: u64) -> Self {
        self.settings.max_request_size = bytes;
        self
    }

    /// The expiry sweeper's bound: the most records it looks at per second
    /// in each database with expiry (at least 1).
    pub fn expiry_sweep_rate(mut self, records_per_second: usize) -> Self {
        self.settings.expiry_sweep_rate = records_per_second;
        self
    }

    /// Opens the databases and starts listening; returns once clients can
    /// connect, or with the error that kept the server from starting.
    pub fn start(self) -> Result<Server> {
        check_limits(self.settings.max_request_size, self.settings.max_clients, Some(self.threads))?;
        if self.settings.expiry_sweep_rate == 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "the expiry sweep rate must be at least 1"));
        }
        let (listening_tx, listening) = std::sync::mpsc::channel();
        let (stop, stop_rx) = oneshot::channel();
        let plan = server::Plan {
            specs: self.specs,
            settings: self.settings,
            tls: None,
            threads: self.threads,
            pid_file: None,
            ulog: None,
            replicaof: None,
            replica_link: replication::LinkSecurity::default(),
            host: server::Host::Embedded { listening: listening_tx, stop: stop_rx },
        };
        let thread = std::thread::Builder::new()
            .name("kura-serve".to_string())
            .spawn(move || server::run(plan))
            .map_err(|e| Error::new(ErrorKind::System, format!("starting the server's thread: {e}")))?;
        let mut server = Server { address: String::new(), stop: Some(stop), thread: Some(thread) };
        match listening.recv() {
            Ok(address) => {
                server.address = address;
                Ok(server)
            }
            // The thread ended before listening: its error says why.
            Err(_) => Err(server
                .shut_down()
                .err()
                .unwrap_or_else(|| Error::new(ErrorKind::System, "the server stopped before it listened"))),
        }
    }
}

/// The reactor threads of a server on `cpus` CPUs unless `--threads` says:
/// one per CPU but one, as redis-server's own advice for its I/O threads
/// leaves a core to the kernel's network processing and to the rest of the
/// machine. On a 2-core machine one reactor led a reactor per CPU one
/// request at a time and tied pipelined (bench/results/2026-11-29-serve.md,
/// "How many reactor threads").
fn default_reactors(cpus: usize) -> usize {
    cpus.saturating_sub(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::default_reactors;

    #[test]
    fn reactors_leave_a_cpu_but_are_never_none() {
        assert_eq!(default_reactors(0), 1);
        assert_eq!(default_reactors(1), 1);
        assert_eq!(default_reactors(2), 1);
        assert_eq!(default_reactors(16), 15);
    }
}
