//! `kura serve`: serves databases over the Redis protocol (RESP2, and RESP3
//! after `HELLO 3`), so Redis clients, `redis-cli`, `redis-benchmark` and
//! proxies such as twemproxy (nutcracker) work with kuradb unchanged.
//!
//! One file per concept: `databases` (opening `PATH#params` specs),
//! `listener` and `tls` (where and how clients connect), `server` (the
//! accept loop and shutdown), `reactors` (the threads connections run on),
//! `connection` (one client's loop), `request` (frames to arguments, with
//! the size guard), `dispatch` (checks, batches, counting), `commands`
//! (the table and the commands by family), `scan` (SCAN's cursors),
//! `pattern` (key globs), `reply` (RESP encoding), `state` (server and
//! session), `stats` and `info` (INFO), `logging`, `replication`
//! (REPLICAOF, the update-log feeds and the replica's links).
//! docs/serve.md is the user's guide.

mod commands;
mod connection;
mod databases;
mod dispatch;
mod execution;
mod info;
mod listener;
mod logging;
mod pattern;
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

use clap::Args;
use kuradb::{Error, ErrorKind, Result};

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
}

/// Runs `kura serve`.
pub fn run(args: &ServeArgs) -> Result<()> {
    logging::start(&args.log_level, args.log_file.as_deref())?;
    if args.max_request_size < 1024 {
        return Err(Error::new(ErrorKind::InvalidArgument, "--max_request_size must be at least 1024 bytes"));
    }
    if args.max_clients == 0 || args.threads == Some(0) {
        return Err(Error::new(ErrorKind::InvalidArgument, "--max_clients and --threads must be at least 1"));
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::acceptor(cert, key, args.tls_ca.as_deref())?),
        _ => None,
    };
    let replicaof = args.replicaof.as_deref().map(replication::Target::parse).transpose()?;
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
    })
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
