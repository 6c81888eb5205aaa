//! Where the server listens: a TCP address (`host:port`) or a Unix socket
//! (`unix:PATH`), and the connections it accepts there.

use std::path::PathBuf;

use kuradb::{Error, ErrorKind, Result};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// A bound listener.
pub enum Listener {
    /// A TCP socket.
    Tcp(TcpListener),
    /// A Unix socket, and its path (removed when the server stops).
    Unix(UnixListener, PathBuf),
}

/// An accepted connection and its peer's address, for logs, registered
/// with the reactor of the runtime that holds it.
pub enum Accepted {
    /// Over TCP.
    Tcp(TcpStream, String),
    /// Over the Unix socket.
    Unix(UnixStream, String),
}

/// An accepted connection taken off its reactor, to be handed to another
/// runtime's ([`Accepted::detach`], [`Detached::attach`]).
pub enum Detached {
    /// Over TCP.
    Tcp(std::net::TcpStream, String),
    /// Over the Unix socket.
    Unix(std::os::unix::net::UnixStream, String),
}

impl Accepted {
    /// Takes the connection off the reactor that accepted it.
    pub fn detach(self) -> std::io::Result<Detached> {
        Ok(match self {
            Accepted::Tcp(stream, peer) => Detached::Tcp(stream.into_std()?, peer),
            Accepted::Unix(stream, peer) => Detached::Unix(stream.into_std()?, peer),
        })
    }
}

impl Detached {
    /// Registers the connection with the reactor of the runtime this runs
    /// on (it must run within one).
    pub fn attach(self) -> std::io::Result<Accepted> {
        Ok(match self {
            Detached::Tcp(stream, peer) => Accepted::Tcp(TcpStream::from_std(stream)?, peer),
            Detached::Unix(stream, peer) => Accepted::Unix(UnixStream::from_std(stream)?, peer),
        })
    }

    /// The peer's address, for logs.
    pub fn peer(&self) -> &str {
        match self {
            Detached::Tcp(_, peer) | Detached::Unix(_, peer) => peer,
        }
    }
}

impl Listener {
    /// Binds `address`. A Unix socket file left by a server that did not
    /// stop cleanly is replaced; any other file there is an error.
    pub async fn bind(address: &str) -> Result<Listener> {
        if let Some(path) = address.strip_prefix("unix:") {
            let path = PathBuf::from(path);
            if let Ok(meta) = std::fs::symlink_metadata(&path) {
                use std::os::unix::fs::FileTypeExt;
                if !meta.file_type().is_socket() {
                    return Err(Error::new(
                        ErrorKind::Duplication,
                        format!("--address {address}: {} exists and is not a socket", path.display()),
                    ));
                }
                // A socket some server still listens on is in use, not left over.
                if std::os::unix::net::UnixStream::connect(&path).is_ok() {
                    return Err(Error::new(
                        ErrorKind::Duplication,
                        format!("--address {address}: a server is listening on {} already", path.display()),
                    ));
                }
                std::fs::remove_file(&path).map_err(|e| Error::io("removing the old socket", &path, e))?;
            }
            let listener = UnixListener::bind(&path).map_err(|e| Error::io("listening on", &path, e))?;
            return Ok(Listener::Unix(listener, path));
        }
        TcpListener::bind(address).await.map(Listener::Tcp).map_err(|e| {
            Error::new(ErrorKind::System, format!("--address {address}: cannot listen there: {e}"))
        })
    }

    /// The TCP port bound (the one chosen for `:0`); 0 for a Unix socket.
    pub fn port(&self) -> u16 {
        match self {
            Listener::Tcp(l) => l.local_addr().map_or(0, |a| a.port()),
            Listener::Unix(..) => 0,
        }
    }

    /// The address bound, as a client would name it (the port chosen for `:0`).
    pub fn local_address(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map_or_else(|e| format!("?({e})"), |a| a.to_string()),
            Listener::Unix(_, path) => format!("unix:{}", path.display()),
        }
    }

    /// The next connection.
    pub async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(l) => {
                let (stream, peer) = l.accept().await?;
                // Replies go out as soon as they are written, not batched by Nagle.
                let _ = stream.set_nodelay(true);
                Ok(Accepted::Tcp(stream, peer.to_string()))
            }
            Listener::Unix(l, path) => {
                let (stream, _) = l.accept().await?;
                Ok(Accepted::Unix(stream, format!("unix:{}", path.display())))
            }
        }
    }

    /// Removes the socket file of a Unix listener.
    pub fn remove_socket(&self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}
