//! The server's life: open the databases, listen, accept connections until
//! SIGTERM, SIGINT or SHUTDOWN, then let the connections finish what they
//! run, and synchronize and close the databases.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use kuradb::dbm::poly::PolyDbm;
use kuradb::{Error, ErrorKind, Result};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::databases::{self, Database};
use super::expiry;
use super::listener::{Accepted, Detached, Listener};
use super::reactors::{self, Reactors};
use super::replication::{self, Replication};
use super::state::{Server, Settings};

/// How long connections get to finish at shutdown before they are cut.
const DRAIN: Duration = Duration::from_secs(10);
/// How long a client gets to finish its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// What `run` needs besides the settings.
pub struct Plan {
    /// The database specs, in SELECT order.
    pub specs: Vec<String>,
    /// The settings.
    pub settings: Settings,
    /// The TLS acceptor, if connections use TLS.
    pub tls: Option<TlsAcceptor>,
    /// The reactor's threads.
    pub threads: usize,
    /// Where to write the process id, once listening.
    pub pid_file: Option<std::path::PathBuf>,
    /// The update logs' directory and file size (`--ulog`), if any.
    pub ulog: Option<(std::path::PathBuf, u64)>,
    /// The master to follow (`--replicaof`), if any.
    pub replicaof: Option<replication::Target>,
    /// How a replica reaches its master (`--masterauth`, `--replica_tls…`).
    pub replica_link: replication::LinkSecurity,
    /// The process the server runs in.
    pub host: Host,
}

/// The process a server runs in, which decides how it says where it listens
/// and what stops it.
pub enum Host {
    /// `kura serve`: the address goes to stdout, SIGTERM and SIGINT stop it.
    Process,
    /// A program that embeds the server: the signals stay the program's.
    Embedded {
        /// Receives the address once listening.
        listening: std::sync::mpsc::Sender<String>,
        /// Stops the server when sent to or dropped.
        stop: oneshot::Receiver<()>,
    },
}

/// Opens every database of the plan; on a failure, closes those opened.
fn open_databases(plan: &Plan) -> Result<Vec<Database<PolyDbm>>> {
    let mut opened: Vec<Database<PolyDbm>> = Vec::new();
    for spec in &plan.specs {
        match databases::open(spec, plan.settings.read_only) {
            Ok(db) => opened.push(db),
            Err(e) => {
                let _ = databases::close_all(opened);
                return Err(e);
            }
        }
    }
    Ok(opened)
}

/// Serves until shut down; the databases are closed when this returns.
pub fn run(mut plan: Plan) -> Result<()> {
    // The address is taken first: one that cannot be had fails before any
    // database file is opened, let alone created. Connections that come
    // while the databases open wait to be accepted (a spec with wait=true
    // may make that long: docs/serve.md).
    let runtime = reactors::runtime()?;
    let listener = runtime.block_on(Listener::bind(&plan.settings.address))?;
    plan.settings.port = listener.port();
    plan.settings.local_address = listener.local_address();
    let attached = open_databases(&plan).and_then(|opened| match &plan.ulog {
        Some((dir, size)) => replication::attach_logs(opened, Some(dir), *size),
        None => replication::attach_logs(opened, None, 0),
    });
    let attached = attached.and_then(|(opened, logs)| {
        databases::transactional(opened, plan.settings.read_only).map(|opened| (opened, logs))
    });
    let (opened, logs) = match attached {
        Ok(attached) => attached,
        Err(e) => {
            listener.remove_socket();
            return Err(e);
        }
    };
    let state_paths =
        opened.iter().map(|d| kuradb::dbm::Dbm::path(&**d.db.load()).map(|p| p.to_path_buf())).collect();
    let replica = plan.replicaof.is_some();
    let replication = Replication::new(logs, state_paths, plan.replicaof).with_security(plan.replica_link);
    let poll = Some(Duration::from_millis(plan.settings.published_poll_ms)).filter(|p| !p.is_zero());
    let server = Arc::new(Server::new(opened, plan.settings).with_replication(replication));
    let sweeper = expiry::turn_on_for_new(&server, replica)
        .and_then(|()| expiry::Sweeper::start(&server, server.settings.expiry_sweep_rate));
    let sweeper = match sweeper {
        Ok(sweeper) => sweeper,
        Err(e) => {
            listener.remove_socket();
            return Err(e);
        }
    };
    let watcher = match crate::published::spawn(&server, poll) {
        Ok(watcher) => watcher,
        Err(e) => {
            listener.remove_socket();
            sweeper.stop();
            if let Ok(server) = Arc::try_unwrap(server) {
                let _ = databases::close_all(server.databases);
            }
            return Err(e);
        }
    };
    // The caller's thread is reactor 0: it accepts, runs the replication
    // links, and serves its share of the connections.
    let mut reactors = Reactors::start(&runtime, plan.threads)?;
    runtime.block_on(async { replication::spawn_followers(&server) });
    let served = runtime.block_on(listen_and_serve(
        Arc::clone(&server),
        listener,
        plan.tls,
        plan.pid_file.as_deref(),
        plan.host,
        &mut reactors,
    ));
    // Commands still running off the reactors finish before the databases close.
    reactors.stop();
    runtime.shutdown_timeout(Duration::from_secs(60));
    server.published.stop();
    if let Some(watcher) = watcher {
        let _ = watcher.join();
    }
    if let Some(path) = &plan.pid_file {
        let _ = std::fs::remove_file(path);
    }
    server.saves.wait();
    server.cursors.clear();
    sweeper.stop();
    expiry::keep_high_water(&server);
    let closed = match Arc::try_unwrap(server) {
        Ok(server) => databases::close_all(server.databases),
        Err(server) => {
            for d in &server.databases {
                let _ = kuradb::dbm::Dbm::synchronize(&**d.db.load(), kuradb::dbm::Durability::Hard);
            }
            Err(Error::new(
                ErrorKind::Infeasible,
                "a command was still running at shutdown; databases synchronized, not closed",
            ))
        }
    };
    log::info!("kura serve stopped");
    served.and(closed)
}

async fn listen_and_serve(
    server: Arc<Server>,
    listener: Listener,
    tls: Option<TlsAcceptor>,
    pid_file: Option<&std::path::Path>,
    host: Host,
    reactors: &mut Reactors,
) -> Result<()> {
    if let Some(path) = pid_file {
        std::fs::write(path, format!("{}\n", std::process::id()))
            .map_err(|e| Error::io("writing the pid file", path, e))?;
    }
    let address = listener.local_address();
    log::info!(
        "kura serve {} ready: {} database(s) on {address}",
        env!("CARGO_PKG_VERSION"),
        server.databases.len()
    );
    match host {
        Host::Process => {
            // The first line of stdout names the address, so a script that
            // asked for port 0 learns which port it got.
            println!("listening on {address}");
            let _ = std::io::Write::flush(&mut std::io::stdout());
            tokio::spawn(watch_signals(Arc::clone(&server)));
        }
        Host::Embedded { listening, stop } => {
            let _ = listening.send(address.clone());
            let server = Arc::clone(&server);
            tokio::spawn(async move {
                // A dropped sender stops the server too: its owner is gone.
                let _ = stop.await;
                server.begin_shutdown();
            });
        }
    }
    let mut shutdown = server.shutdown_signal();
    let mut tasks = JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            accepted = listener.accept() => match accepted {
                // Registered anew with the reactor it is dealt to.
                Ok(conn) => match conn.detach() {
                    Ok(conn) => {
                        tasks.spawn_on(handle(Arc::clone(&server), conn, tls.clone()), reactors.next());
                    }
                    Err(e) => log::warn!("accepting a connection: {e}"),
                },
                Err(e) => {
                    // Out of file descriptors, typically: wait for some to free.
                    log::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = shutdown.changed() => break,
        }
    }
    listener.remove_socket();
    drop(listener);
    log::info!("shutting down: {} connection(s) to finish", tasks.len());
    if tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await.is_err() {
        log::warn!("{} connection(s) still busy after {DRAIN:?}: cut", tasks.len());
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    Ok(())
}

async fn watch_signals(server: Arc<Server>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        log::error!("cannot watch SIGTERM and SIGINT; stop the server with SHUTDOWN");
        return;
    };
    // SIGHUP checks the published directories served for a new version.
    let mut hup = match signal(SignalKind::hangup()) {
        Ok(hup) => Some(hup),
        Err(e) => {
            log::warn!(
                "cannot watch SIGHUP ({e}); published directories are checked by polling and KURA.SWAP"
            );
            None
        }
    };
    loop {
        tokio::select! {
            _ = term.recv() => {
                log::info!("SIGTERM: shutting down");
                break;
            }
            _ = int.recv() => {
                log::info!("SIGINT: shutting down");
                break;
            }
            Some(()) = async { hup.as_mut()?.recv().await } => {
                log::info!("SIGHUP: checking the published directories for a new version");
                server.published.request();
            }
        }
    }
    server.begin_shutdown();
}

/// Counts a connection while it lives.
struct Connected(Arc<Server>);

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.connected.fetch_sub(1, Relaxed);
    }
}

async fn handle(server: Arc<Server>, conn: Detached, tls: Option<TlsAcceptor>) {
    server.stats.connections_received.fetch_add(1, Relaxed);
    let peer = conn.peer().to_owned();
    let conn = match conn.attach() {
        Ok(conn) => conn,
        Err(e) => {
            log::warn!("client {peer}: cannot watch the connection: {e}");
            return;
        }
    };
    let count = server.connected.fetch_add(1, Relaxed) + 1;
    let _connected = Connected(Arc::clone(&server));
    match conn {
        Accepted::Tcp(stream, peer) => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
            start(server, stream, (peer, fd), tls, count).await
        }
        Accepted::Unix(stream, peer) => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
            start(server, stream, (peer, fd), tls, count).await
        }
    }
}

/// A client's address and its connection's file descriptor.
type Peer = (String, i32);

async fn start<S>(server: Arc<Server>, stream: S, peer: Peer, tls: Option<TlsAcceptor>, count: usize)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    match tls {
        None => admit(server, stream, peer, count).await,
        Some(tls) => match tokio::time::timeout(HANDSHAKE, tls.accept(stream)).await {
            Ok(Ok(stream)) => admit(server, stream, peer, count).await,
            Ok(Err(e)) => log::info!("client {}: TLS handshake failed: {e}", peer.0),
            Err(_) => log::info!("client {}: TLS handshake not done in {HANDSHAKE:?}", peer.0),
        },
    }
}

async fn admit<S>(server: Arc<Server>, mut stream: S, (peer, fd): Peer, count: usize)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    if count > server.settings.max_clients {
        server.stats.rejected_connections.fetch_add(1, Relaxed);
        log::warn!("client {peer} refused: --max_clients {} reached", server.settings.max_clients);
        let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
        let _ = stream.shutdown().await;
        return;
    }
    super::connection::serve(server, stream, peer, fd).await;
}
